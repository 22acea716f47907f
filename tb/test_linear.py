"""Reuse for the linear layers (issue 17): the rule against eq. 5, the
array walk against ``X_eff W``, op counts against an enumeration, the cycle
model against the golden passes and the RTL, and bad input. Bits of the
RTL under stalls on three simulators: tb/test_blocks.py (blocks
``window_detector`` and ``linear``)."""

import functools
import itertools

import numpy as np
import pytest

from kaleido.config import KaleidoConfig, LinearReuse
from kaleido.encoding import ABSENT, Reuse
from kaleido.golden.linear import (
    linear_classes,
    linear_effective,
    linear_op_counts,
    linear_output,
    linear_passes,
    linear_quality,
    window_class,
)
from kaleido.golden.loopnest import accumulate_tiles
from kaleido.golden.workloads import linear_weights, video_activations
from kaleido.hdl.dispatched_array import DispatchedArray
from kaleido.loopnest import pairs
from kaleido.model import linear_cycles
from kaleido.tb.benches import dispatched_bench
from kaleido.tb.kit import simulate
from kaleido.tb.linear_cases import linear_layer, linear_pass_words

RULES = [LinearReuse(), LinearReuse("x", 1.0, 4.0), LinearReuse("y", 3.5, 3.75), LinearReuse("t", 0.0, 0.5)]


def test_window_class_is_eq5():
    """A window of two: eq. 5's population standard deviation, every int8 pair."""
    a, b = (x.astype(np.int8) for x in np.meshgrid(np.arange(-128, 128), np.arange(-128, 128)))
    std = np.std(np.stack([a, b]).astype(np.float64), axis=0)
    for rule in RULES:
        want = np.where(std < rule.theta1, Reuse.FULL, np.where(std < rule.theta2, Reuse.PARTIAL, Reuse.NONE))
        assert (window_class(a, b, rule) == want).all(), rule


@pytest.mark.parametrize("rule", RULES, ids=lambda r: f"{r.axis}{r.theta1}")
def test_array_walk_is_x_eff_w(rule, seed):
    """The golden passes, accumulated, give ``X_eff W``; FULL followers take
    the anchor's activation along the rule's axis and nothing else moves."""
    grid = (3, 4, 5)
    X, _, _ = video_activations(grid, "fast", seed % 1000, d_model=20)
    W, _, _ = linear_weights(20, 7, seed % 1000)
    cfg = KaleidoConfig.one_array(batch=8)
    Y = np.zeros((X.shape[0], 7), dtype=np.int64)
    for ps in linear_passes(X, W, grid, cfg, rule, scheduler=True):
        accumulate_tiles(Y, ps.tiles(cfg.accumulators, cfg.acc_width), ps.rows, ps.cols)
    assert (Y == linear_output(X, W, grid, rule)).all()
    eff = linear_effective(X, grid, rule)
    a, f, _ = pairs(grid, {"t": 0, "y": 1, "x": 2}[rule.axis])
    full = window_class(X[a], X[f], rule) == Reuse.FULL
    assert (eff[f] == np.where(full, X[a], X[f])).all()
    others = np.setdiff1d(np.arange(X.shape[0]), f)
    assert (eff[others] == X[others]).all()


def _enumerate_ops(X, grid, d_out, rule, kind):
    """Nibble multiplies per (activation unit, output pair, channel),
    written out from the PE's phase rules (3 accumulators, columns never
    reused): T0 2, T1 2 (or none without a second output), T2 and T3 free
    for a FULL follower, else 2 each."""
    u, cls = linear_classes(X, grid, rule)
    total = 0
    outs = [(o, o + 1 if o + 1 < d_out else -1) for o in range(0, d_out, 2)]
    for (_a, f), (_o, o2), c in itertools.product(u, outs, range(X.shape[1])):
        if kind == "dense":
            total += 2 * (1 + (f >= 0)) * (1 + (o2 >= 0))
            continue
        cost = 2 + (2 if o2 >= 0 else 0)
        if f >= 0 and cls[f, c] != Reuse.FULL:
            cost += 2 + (2 if o2 >= 0 else 0)
        total += cost
    return total


@pytest.mark.parametrize("d_out", [6, 7])
def test_op_counts_against_an_enumeration(d_out, seed):
    grid = (2, 3, 3)
    X, _, _ = video_activations(grid, "slow", seed % 1000, d_model=6)
    rule = LinearReuse("t", 2.0, 8.0)
    c = linear_op_counts(X, grid, d_out, rule)
    assert c["dense"] == _enumerate_ops(X, grid, d_out, rule, "dense") == 2 * X.shape[0] * 6 * d_out
    assert c["hw3"] == _enumerate_ops(X, grid, d_out, rule, "hw")
    assert c["oracle"] <= c["hw4"] <= c["hw3"] < c["dense"]


@pytest.mark.parametrize("variant", ["pe", "pe-m", "full"])
def test_model_beats_are_the_passes(variant, seed):
    grid = (2, 4, 6)
    X, _, _ = video_activations(grid, "slow", seed % 1000, d_model=24)
    W, _, _ = linear_weights(24, 10, 0)
    cfg = KaleidoConfig.one_array(batch=8)
    model = linear_cycles(X, 10, grid, cfg, variant=variant)
    beats = 0
    for ps in linear_passes(X, W, grid, cfg, scheduler=variant == "full"):
        for phase, slots in enumerate(ps.slots):
            if variant == "pe":  # no matcher: every needed channel is a FULL8 slot
                from kaleido.golden.matcher import channel_needs

                needs = channel_needs(phase, ps.q, ps.k, rows_present=ps.rows_present, cols_present=ps.cols_present)
                slots = [n for n in needs if n]
            beats += max(1, len(slots))
    assert model.beats == beats
    assert model.dense_cycles == (48 // 4) * 3 * 24 + 7  # 48 tokens, 10 outputs in blocks of 4
    assert model.ops["dense"] == 2 * 48 * 24 * 10


@pytest.mark.parametrize("motion", ["slow", "fast"])
def test_model_equals_rtl_cycles(motion, seed):
    """``DispatchedArray`` running a layer: drains exact and its cycles the
    model's with a dispatcher (``dispatcher=True``)."""
    cfg = KaleidoConfig.one_array(batch=4)
    X, W = linear_layer(motion, seed % 1000)
    words, beats = linear_pass_words(cfg, X, W, (2, 3, 4))
    res = simulate(DispatchedArray(cfg), functools.partial(dispatched_bench, config=cfg, words=words))
    model = linear_cycles(X, W.shape[1], (2, 3, 4), cfg, variant="pe-m", dispatcher=True)
    assert res.last_tile + 1 == model.cycles
    Y = np.zeros((X.shape[0], W.shape[1]), dtype=np.int64)
    for ps in linear_passes(X, W, (2, 3, 4), cfg):
        accumulate_tiles(Y, ps.tiles(cfg.accumulators, cfg.acc_width), ps.rows, ps.cols)
    assert (Y == linear_output(X, W, (2, 3, 4))).all()


def test_a_wrong_rule_is_caught():
    """The checks can fail: reusing PARTIAL followers too (a seeded bug)
    changes Y and its quality."""
    grid = (4, 8, 8)
    X, _, _ = video_activations(grid, "slow", 0, d_model=32)
    W, _, _ = linear_weights(32, 16, 0)
    rule = LinearReuse()
    mutant = LinearReuse(rule.axis, rule.theta2 - 0.5, rule.theta2)
    assert (linear_output(X, W, grid, rule) != linear_output(X, W, grid, mutant)).any()
    assert linear_quality(X, W, grid, mutant)["psnr"] < linear_quality(X, W, grid, rule)["psnr"]
    _, cls = linear_classes(X, grid, rule)
    assert (cls == ABSENT).sum() == X.size // 2  # anchors are never followers


def test_window_savings_of_two_is_the_array_rule():
    """The golden window measurement at w = 2 is the array's rule; longer
    windows are measured, not built."""
    from kaleido.golden.linear import window_savings

    grid = (4, 6, 6)
    X, _, _ = video_activations(grid, "slow", 1, d_model=16)
    rule = LinearReuse("t", 2.0, 8.0)
    s = window_savings(X, grid, "t", 2, 2.0)
    _, cls = linear_classes(X, grid, rule)
    assert s["reusable"] == (cls == Reuse.FULL).mean()
    assert (s["effective"] == linear_effective(X, grid, rule)).all()
    assert window_savings(X, grid, "t", 4, 2.0)["reusable"] != s["reusable"]
    with pytest.raises(ValueError, match="window size w must be an integer >= 2, not 1"):
        window_savings(X, grid, "t", 1, 2.0)


def test_bad_input_is_named():
    X = np.zeros((32, 12), np.int8)
    with pytest.raises(ValueError, match="axis must be one of .*, not 'z'"):
        LinearReuse("z")
    with pytest.raises(ValueError, match="thresholds must satisfy 0 <= theta1 < theta2 <= 128, not 8.0, 2.0"):
        LinearReuse("t", 8.0, 2.0)
    with pytest.raises(ValueError, match=r"W must have shape \(d_in, d_out\) with d_in = 12, not \(11, 4\)"):
        linear_output(X, np.zeros((11, 4), np.int8), (2, 4, 4))
    with pytest.raises(TypeError, match="X"):
        linear_output(X.astype(np.float32), np.zeros((12, 4), np.int8), (2, 4, 4))
    with pytest.raises(ValueError, match="d_out must be a positive integer, not 0"):
        linear_op_counts(X, (2, 4, 4), 0)
    with pytest.raises(ValueError, match="grid"):
        linear_cycles(X, 4, (2, 4, 5))
