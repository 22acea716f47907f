"""P-side reuse and the P V op bound of small-P halves (kaleido.explore.row_delta,
issue 14): delta-coded rows give P V exactly, the half-beat count equals a
per-product count written out the plain way, never exceeds what the built
greedy pairing issues, and the explorer's ceiling picks what holds the
floor."""

from __future__ import annotations

import math
import os
import types

import numpy as np
import pytest

from kaleido import KaleidoConfig
from kaleido.bench.report import ceiling
from kaleido.config import SMALL_P
from kaleido.encoding import Reuse
from kaleido.explore import (
    CALIBRATION,
    WorkloadSpec,
    calibrated_ceiling,
    fixed_ceiling,
    fmt_thresholds,
    read_bounds_csv,
    stacked_ceiling,
    window_bounds,
    write_bounds,
)
from kaleido.explore import main as explore_main
from kaleido.explore.row_delta import delta_accumulate, delta_rows, pv_half_beats, window_p, window_pv_bounds
from kaleido.golden.windows import window_anchors, window_bound, window_classes
from kaleido.loopnest import group_slices
from kaleido.model import pv_pair_block_beats

SEEDS = (1, 2, 3)


def _random(seed: int, grid=(4, 4, 6), d: int = 8, p_max: int = 60):
    rng = np.random.default_rng(seed)
    n = int(np.prod(grid))
    P = rng.integers(0, p_max, size=(n, n))
    V = rng.integers(-4, 5, size=(n, d)).astype(np.int8)  # small values: many FULL followers
    return P, V


def _halves_by_product(rows, V, grid, split, w, F) -> int:
    """Every product of P V, one at a time: a key FULL at a channel adds its
    row operand to its window anchor's product; each product left costs 2
    halves if its operand is big and its V not 0, else 1."""
    N, d = V.shape
    cls = window_classes(V, grid, split, w, (F, F))
    total = 0
    for sl, axis in group_slices(split):
        anchor = window_anchors(grid, axis, w)
        for c in range(sl.start, sl.stop):
            for i in range(rows.shape[0]):
                ops: dict[int, int] = {}
                for j in range(N):
                    t = int(anchor[j]) if cls[j, c] == Reuse.FULL else j
                    ops[t] = ops.get(t, 0) + int(rows[i, j])
                for t, x in ops.items():
                    big = not -SMALL_P <= x < SMALL_P and V[t, c] != 0
                    total += 2 if big else 1
    return total


@pytest.mark.parametrize("seed", SEEDS)
def test_delta_rows_give_p_v_exactly(seed):
    P, V = _random(seed)
    for axis in (0, 1, 2):
        for w in (2, 3):
            D = delta_rows(P, (4, 4, 6), axis, w)
            assert (delta_accumulate(D, V, (4, 4, 6), axis, w) == P @ V.astype(np.int64)).all(), (
                f"seed {seed} axis {axis} w {w}"
            )
            anchor = window_anchors((4, 4, 6), axis, w)
            assert (D[anchor == np.arange(len(anchor))] == P[anchor == np.arange(len(anchor))]).all()


@pytest.mark.parametrize("seed", SEEDS)
def test_half_beats_equal_a_per_product_count(seed):
    grid, split = (2, 4, 4), (4, 2, 2)
    P, V = _random(seed, grid)
    for w in (2, 4):
        for F in (5, 7, 9):
            for rows in (P, delta_rows(P, grid, 0)):
                got = pv_half_beats(rows, V, grid, split, w, F)
                assert got["halves"] == _halves_by_product(rows, V, grid, split, w, F), f"seed {seed} w {w} F {F}"
                assert got["dense_halves"] == 2 * P.size * V.shape[1]


def test_half_beats_at_the_extremes():
    grid, split = (2, 2, 2), (2, 1, 1)
    V = np.arange(1, 33).reshape(8, 4).astype(np.int8)  # no zero; F = 9: no FULL follower
    small = np.full((8, 8), SMALL_P - 1)
    assert pv_half_beats(small, V, grid, split, 2, 9)["bound"] == 2.0
    assert pv_half_beats(-small - 1, V, grid, split, 2, 9)["bound"] == 2.0  # -16 fits the signed 5-bit port
    assert pv_half_beats(small + 1, V, grid, split, 2, 9)["bound"] == 1.0


def test_the_bound_never_beats_the_built_pairing():
    """The built greedy rule (the RTL's, :func:`kaleido.model.pv_pair_block_beats`)
    on one-PE arrays issues at least the op bound's halves / 2 beats."""
    spec = WorkloadSpec(grid=(2, 4, 8), motion="fast", seed=3)
    w = spec.load()
    p = window_p(w.q, w.k, w.grid, w.split, 2, (6, 4), scales=w.scales)
    cfg = KaleidoConfig.one_array(split=w.split, array_rows=1, array_cols=1, F=6, P=4)
    built = int(pv_pair_block_beats(w.v, p, w.grid, w.split, cfg, [6, 6, 6]).sum())
    bound = pv_half_beats(p, w.v, w.grid, w.split, 2, 6)["halves"]
    assert 2 * built >= bound
    assert 2 * built <= 1.2 * bound  # the greedy rule gets near it on one PE


def test_window_pv_bounds_on_a_head():
    w = WorkloadSpec(grid=(2, 4, 8), motion="slow", seed=1).load()
    for win in (2, 4):
        s = window_pv_bounds(w.q, w.k, w.v, w.grid, w.split, win, (6, 4), scales=w.scales)
        b = window_bound(w.q, w.k, w.v, w.grid, w.split, win, (6, 4), scales=w.scales)
        # a product costs at most a beat, so the halves bound is at least the product bound
        assert s["pv_bound_small"] >= b["pv_bound"] > 1.0
        assert s["pv_bound_small_delta"] > 1.0


def test_window_p_is_the_fixed_softmax_of_window_scores():
    w = WorkloadSpec(grid=(2, 4, 8), motion="slow", seed=1).load()
    p = window_p(w.q, w.k, w.grid, w.split, 2, (9, 9), scales=w.scales)  # no reuse: the int8 scores' P
    assert p.shape == (w.n, w.n) and p.min() >= 0 and p.max() == 127
    assert (p.max(axis=1) == 127).all()  # each row relative to its own maximum


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda P, V: delta_rows(P.astype(float), (2, 2, 2)), "P must be a 2-D integer array, not float64"),
        (lambda P, V: delta_rows(P[:4], (2, 2, 2)), r"P must have 8 rows .* not shape \(4, 8\)"),
        (lambda P, V: delta_rows(P, (2, 2, 2), 3), "axis must be 0 .* not 3"),
        (lambda P, V: delta_rows(P, (2, 2, 2), 0, 1), "window length w must be an integer >= 2, not 1"),
        (lambda P, V: pv_half_beats(P[:, :4], V, (2, 2, 2), (2, 1, 1), 2, 5), r"rows must have 8 columns .*\(8, 4\)"),
        (lambda P, V: pv_half_beats(P * 300, V, (2, 2, 2), (2, 1, 1), 4, 5), "rows must lie in -8191..8191"),
        (lambda P, V: pv_half_beats(P, V[:4], (2, 2, 2), (2, 1, 1), 2, 5), "grid"),
        (lambda P, V: delta_accumulate(P, V[:4], (2, 2, 2)), r"V must have 8 rows .* not shape \(4, 4\)"),
    ],
)
def test_bad_input_is_named(call, match):
    P = np.arange(64).reshape(8, 8) % 50
    V = np.ones((8, 4), np.int8)
    with pytest.raises((TypeError, ValueError), match=match):
        call(P, V)


def _bound_row(
    head: str, group: str, w: int, fp: list, stacked: float, psnr: float, small: float = 1.0, cal: str = "-"
) -> dict:
    """A row of :func:`window_bounds` with only what the ceilings read."""
    where = {"workload": head, "set": group, "calibration": cal, "w": w, "thresholds": fp}
    return {**where, "attention_bound_stacked": stacked, "attention_bound_small": small, "psnr": psnr}


def test_stacked_ceiling_picks_what_holds_the_floor():
    rows = [
        _bound_row("a", "tuning", 2, [[6, 4]] * 3, 1.8, 43.0, 1.5),
        _bound_row("a", "tuning", 4, [[6, 4]] * 3, 2.4, 41.0, 1.7),
        _bound_row("a", "tuning", 8, [[6, 4]] * 3, 3.0, 39.9, 2.5),  # below the floor: never chosen
        _bound_row("b", "tuning", 2, [[6, 4]] * 3, 1.9, 44.0, 1.6),
        _bound_row("c", "held_out", 4, [[6, 4]] * 3, 2.1, 40.0, 1.4),
    ]
    c = stacked_ceiling(rows, 40.0)
    assert c["tuning"]["heads"]["a"]["attention_bound_stacked"] == (2.4, 4, [[6, 4]] * 3, 41.0)
    assert c["tuning"]["attention_bound_stacked"]["geomean"] == pytest.approx(math.sqrt(2.4 * 1.9))
    assert c["tuning"]["attention_bound_stacked"]["min"] == 1.9
    assert c["tuning"]["attention_bound_stacked"]["at_least_2x"] == 1
    assert c["tuning"]["attention_bound_small"]["geomean"] == pytest.approx(math.sqrt(1.7 * 1.6))
    assert c["held_out"]["attention_bound_stacked"]["at_least_2x"] == 1
    assert "vs_dense_small" not in c["tuning"]  # only when every head has it
    for r, v in zip(rows, (1.5, 1.9, 2.9, 1.6, 1.7), strict=True):
        r["attention_bound_stacked_vs_dense_small"] = v
    c = stacked_ceiling(rows, 40.0)
    assert c["tuning"]["heads"]["a"]["vs_dense_small"] == 1.9  # the chosen row's, not the largest
    assert c["tuning"]["vs_dense_small"]["geomean"] == pytest.approx(math.sqrt(1.9 * 1.6))


def test_window_bounds_rows_on_a_small_set():
    spec = WorkloadSpec(grid=(2, 4, 8), motion="fast", seed=3)
    rows = window_bounds({"tuning": (spec,)}, ws=(2,), thresholds=((6, 4),), jobs=1, calibration=False)
    (b,) = rows
    assert (b["set"], b["w"], b["thresholds"]) == ("tuning", 2, [[6, 4]] * 3)
    # every lever is at least each part: row-side partial >= the pairs, halves >= products, deltas help or not
    assert b["qk_bound_row_partial"] >= b["qk_bound"]
    assert b["attention_bound_stacked"] >= b["attention_bound_small"] * min(
        1.0, b["pv_bound_small_delta"] / b["pv_bound_small"]
    )
    assert b["attention_bound_small"] >= b["attention_bound"]
    # the dense array pairing small P too is a faster baseline
    assert b["pv_dense_bound_small"] > 1.0
    assert b["attention_bound_stacked_vs_dense_small"] < b["attention_bound_stacked"]


@pytest.fixture(scope="module")
def small_bounds():
    spec = WorkloadSpec(grid=(2, 4, 8), motion="fast", seed=3)
    fps = ((6, 4), ((7, 4), (6, 4), (6, 4)))  # uniform and per group
    return window_bounds({"tuning": (spec,), "held_out": (spec,)}, ws=(2, 4), thresholds=fps, jobs=1)


def test_bounds_csv_round_trip_and_tables(small_bounds, tmp_path):
    paths = write_bounds(small_bounds, str(tmp_path), 40.0)
    back = read_bounds_csv(paths[1])
    # both sets hold the fast head; its slow twin is the calibration set's
    assert len(back) == len(small_bounds) == 12
    assert [b["set"] for b in back[::4]] == ["tuning", "held_out", CALIBRATION]
    assert [b["thresholds"] for b in back[:4:2]] == [[[6, 4]] * 3, [[7, 4], [6, 4], [6, 4]]]
    for a, b in zip(back, small_bounds, strict=True):
        assert a == {k: b[k] for k in a}
    md = open(paths[2]).read()
    assert "The ceiling at 40 dB" in md and "| held_out | geomean (slowest) |" in md
    bad = tmp_path / "bad.csv"
    bad.write_text("set,workload,w\ntuning,x,2\n")
    with pytest.raises(ValueError, match="lacks the bounds columns"):
        read_bounds_csv(str(bad))
    lines = open(paths[1]).read().splitlines()
    bad.write_text("\n".join([lines[0], lines[1].replace("(6,4)", "(6,4) (7,4)")]) + "\n")
    with pytest.raises(ValueError, match=r"thresholds must be \(F,P\) or three of them, not '\(6,4\) \(7,4\)'"):
        read_bounds_csv(str(bad))


def test_the_reports_ceiling_section(small_bounds, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no build/explore here: the report reads the committed CSV
    out = tmp_path / "report"
    out.mkdir()
    rep = types.SimpleNamespace(out=str(out))
    assert "No op bounds yet" in "\n".join(ceiling(rep, None))
    write_bounds(small_bounds, str(tmp_path / "w"), 40.0)
    os.replace(tmp_path / "w" / "bounds.csv", out / "exploration_bounds.csv")
    text = "\n".join(ceiling(rep, None))
    c = stacked_ceiling(small_bounds, 40.0)["tuning"]["attention_bound_stacked"]
    assert f"| tuning | {c['geomean']:.3f}x ({c['min']:.3f}x) | {c['at_least_2x']} of 1 |" in text
    assert "the committed" in text
    f = fixed_ceiling(small_bounds, 40.0)
    assert ("Without the oracle" in text) == ("robust" in f) and ("No single window" in text) == ("robust" not in f)
    assert "As a deployed design would choose" in text
    # a fresh run in build/explore is read first, and rewrites the committed CSV readably
    os.makedirs("build/explore")
    write_bounds(small_bounds, "build/explore", 40.0)
    os.remove(out / "exploration_bounds.csv")
    assert "--bounds-only` (build/explore/bounds.json)" in "\n".join(ceiling(rep, None))
    assert read_bounds_csv(str(out / "exploration_bounds.csv")) == read_bounds_csv("build/explore/bounds.csv")


@pytest.mark.parametrize("flag", ["--quick", "--summarize", "--no-bounds"])
def test_bounds_only_runs_alone(flag, capsys):
    with pytest.raises(SystemExit) as err:
        explore_main(["--bounds-only", flag])
    assert err.value.code == 2
    assert "--bounds-only runs alone" in capsys.readouterr().err


def test_fixed_ceiling_takes_one_choice_for_every_head():
    rows = [
        _bound_row("a", "tuning", 4, [[6, 4]] * 3, 2.4, 41.0),
        _bound_row("b", "tuning", 4, [[6, 4]] * 3, 2.0, 42.0),
        _bound_row("c", "held_out", 4, [[6, 4]] * 3, 2.2, 36.0),  # (6,4) fails the floor held out
        _bound_row("a", "tuning", 4, [[7, 4]] * 3, 2.1, 48.0),
        _bound_row("b", "tuning", 4, [[7, 4]] * 3, 1.8, 49.0),
        _bound_row("c", "held_out", 4, [[7, 4]] * 3, 1.9, 45.0),
        _bound_row("a", "tuning", 8, [[5, 4]] * 3, 3.0, 39.0),  # fails on tuning: never chosen
        _bound_row("b", "tuning", 8, [[5, 4]] * 3, 3.0, 45.0),
        _bound_row("c", "held_out", 8, [[5, 4]] * 3, 3.0, 45.0),
    ]
    f = fixed_ceiling(rows, 40.0)
    assert (f["tuning"]["w"], f["tuning"]["thresholds"]) == (4, [[6, 4]] * 3)
    assert f["tuning"]["tuning"]["geomean"] == pytest.approx(math.sqrt(2.4 * 2.0))
    assert f["tuning"]["held_out"] == pytest.approx(
        {"geomean": 2.2, "min": 2.2, "at_least_2x": 1, "heads": 1, "psnr_min": 36.0, "below_floor": 1}
    )
    assert (f["robust"]["w"], f["robust"]["thresholds"]) == (4, [[7, 4]] * 3)
    assert f["robust"]["tuning"]["at_least_2x"] == 1 and f["robust"]["held_out"]["below_floor"] == 0
    assert fixed_ceiling(rows, 60.0) == {}  # nothing holds 60 dB


def test_fmt_thresholds_takes_one_pair_or_three():
    assert fmt_thresholds([[6, 4]] * 3) == fmt_thresholds([6, 4]) == fmt_thresholds((6, 4)) == "(6,4)"
    assert fmt_thresholds([(7, 4), (7, 4), (6, 4)]) == "(7,4) (7,4) (6,4)"


def test_calibrated_ceiling_chooses_on_the_other_head():
    six, seven = [[6, 4]] * 3, [[7, 4]] * 3
    rows = [
        # a and b calibrate on each other; c on c2, a head only the calibration set holds
        _bound_row("a", "tuning", 4, six, 2.4, 41.0, cal="b"),
        _bound_row("a", "tuning", 4, seven, 2.1, 48.0, cal="b"),
        _bound_row("b", "tuning", 4, six, 2.2, 41.4, cal="a"),  # below 40 + 1.5 dB: a cannot choose (6,4) on b
        _bound_row("b", "tuning", 4, seven, 1.9, 47.0, cal="a"),
        _bound_row("c", "held_out", 8, six, 2.3, 39.0, cal="c2"),
        _bound_row("c", "held_out", 8, seven, 2.0, 44.0, cal="c2"),
        _bound_row("c2", CALIBRATION, 8, six, 2.5, 42.0, cal="c"),
        _bound_row("c2", CALIBRATION, 8, seven, 2.1, 45.0, cal="c"),
        _bound_row("d", "held_out", 8, six, 2.9, 45.0, cal="nowhere"),
    ]
    c = calibrated_ceiling(rows, 40.0, 1.5)
    assert set(c) == {"tuning", "held_out"}  # the calibration heads are not a set of their own
    # a: (6,4) on b is at 41.4 dB, below 41.5, so (7,4); b: (6,4) on a is at 41.0 dB, so (7,4) too
    assert c["tuning"]["heads"] == {"a": (2.1, 4, seven, 48.0), "b": (1.9, 4, seven, 47.0)}
    assert c["tuning"]["geomean"] == pytest.approx(math.sqrt(2.1 * 1.9)) and c["tuning"]["below_floor"] == 0
    assert calibrated_ceiling(rows, 40.0, 0.5)["tuning"]["heads"]["a"] == (2.4, 4, six, 41.0)
    # c takes c2's choice, (6,4), and falls below the floor on its own head
    assert c["held_out"]["heads"] == {"c": (2.3, 8, six, 39.0)}
    assert (c["held_out"]["below_floor"], c["held_out"]["missing"]) == (1, 1)
    assert "c2" not in stacked_ceiling(rows, 40.0).get(CALIBRATION, {"heads": {}})["heads"]
    assert CALIBRATION not in stacked_ceiling(rows, 40.0)
