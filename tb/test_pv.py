"""P V with reuse on V (issue 12): the rule (golden), its op counts, the
cycle model against the RTL, and bad input. The RTL's bits against the
golden beats, under stalls on every simulator, are in test_blocks.py
(block ``pv``)."""

import functools
import itertools

import numpy as np
import pytest

from kaleido.config import KaleidoConfig
from kaleido.encoding import PvSelect, Reuse
from kaleido.golden.pv import check_p, pv_accumulate, pv_pass_beats, v_effective
from kaleido.golden.reuse import classify, effective
from kaleido.hdl.pv_array import PvArray
from kaleido.loopnest import group_slices, pv_passes, units
from kaleido.model import pv_cycles
from kaleido.tb.benches import pv_bench
from kaleido.tb.driver import expected_drains
from kaleido.tb.kit import simulate
from kaleido.tb.pv_cases import pv_head, pv_words

SMALL = KaleidoConfig.one_array(batch=4, split=(5, 3, 4))
GRIDS = [(2, 3, 4), (1, 5, 3), (3, 2, 2)]


def _enumerate(P, V, grid, split, F):
    """O and the hardware's nibble multiplies, element by element in
    Python integers, from the rule as docs/DESIGN.md states it (written
    again, independently of the vectorised golden model)."""
    n, d = V.shape
    out = [[0] * d for _ in range(P.shape[0])]
    ops = 0
    for sl, axis in group_slices(split):
        for a, f in units(grid, axis):
            for c in range(sl.start, sl.stop):
                va = int(V[a, c])
                full = f >= 0 and int(classify(V[a : a + 1, c], V[f : f + 1, c], F, F)[0]) == Reuse.FULL
                for i in range(P.shape[0]):
                    pa = int(P[i, a])
                    if f < 0:
                        out[i][c] += pa * va
                        ops += 2
                    elif full:
                        out[i][c] += (pa + int(P[i, f])) * va
                        ops += 2
                    else:
                        out[i][c] += pa * va + int(P[i, f]) * int(V[f, c])
                        ops += 4
    return np.array(out, dtype=np.int64), ops


@pytest.mark.parametrize("grid", GRIDS)
@pytest.mark.parametrize("kind", ["video", "random"])
def test_array_dataflow_is_the_rule(grid, kind, seed):
    """Pass by pass through the golden PE grid == P @ V_eff == the
    per-element enumeration; the beats' multiplies == the model's ``hw``."""
    P, V = pv_head(kind, grid, SMALL.split, seed)
    acc = pv_accumulate(P, V, SMALL, grid, F=SMALL.F)
    enum, ops = _enumerate(P, V, grid, SMALL.split, SMALL.F)
    assert (acc == enum).all()
    assert (acc == P @ v_effective(V, grid, SMALL.split, SMALL.F).astype(np.int64)).all()
    beats = [b for ps in pv_passes(SMALL, grid) for b in pv_pass_beats(P, V, ps, SMALL, SMALL.F)]
    # every real (query, channel) PE with a select other than SKIP does one 8x8 product (2 nibble multiplies)
    multiplies = 0
    for ps in pv_passes(SMALL, grid):
        for b in pv_pass_beats(P, V, ps, SMALL, SMALL.F):
            multiplies += 2 * len(ps.queries) * int((b.k0[: len(ps.channels)] != PvSelect.SKIP).sum())
    timing = pv_cycles(V, grid, SMALL.split, SMALL)
    assert timing.ops["hw"] == ops == multiplies
    assert timing.beats == len(beats)
    assert timing.ops["dense"] == 2 * P.shape[0] * V.shape[0] * V.shape[1]
    assert timing.ops["hw"] <= timing.ops["dense"] and timing.ops["oracle"] <= timing.ops["hw"]


def test_v_rule_per_class():
    """Every follower class, one channel: FULL pre-adds on the anchor's V,
    PARTIAL and NONE keep the follower's own V (one beat vs two)."""
    cfg = KaleidoConfig.one_array(batch=4, split=(1, 1, 1), F=5, P=3)
    grid = (2, 2, 2)
    for va, vf in itertools.product((-128, -37, 0, 5, 100, 127), repeat=2):
        V = np.zeros((8, 3), np.int8)
        V[:, :] = va
        V[4:, 2] = vf  # y-channels pair along t: tokens 0..3 with 4..7
        P = np.arange(64).reshape(8, 8) % 128
        cls = int(classify(np.array([va], np.int8), np.array([vf], np.int8), 5, 5)[0])
        eff = v_effective(V, grid, (1, 1, 1), 5)
        assert (eff[4:, 2] == (va if cls == Reuse.FULL else vf)).all()
        assert (pv_accumulate(P, V, cfg, grid) == P @ eff.astype(np.int64)).all()
        # PARTIAL is not reused: unlike the column side of Q K^T
        if int(classify(np.array([va], np.int8), np.array([vf], np.int8), 5, 3)[0]) == Reuse.PARTIAL:
            assert (eff != effective(V, grid, (1, 1, 1), 5, 3)).any()


def test_a_wrong_rule_is_caught(seed):
    """The checks can fail: pre-adding on PARTIAL followers too (a seeded
    bug: the F threshold at P) changes O on a head where PARTIAL occurs."""
    grid = (2, 3, 4)
    P, V = pv_head("random", grid, SMALL.split, seed)
    partial_as_full = effective(V, grid, SMALL.split, SMALL.P, SMALL.P, side="column")
    assert (P @ partial_as_full.astype(np.int64) != pv_accumulate(P, V, SMALL, grid)).any()


@pytest.mark.parametrize(
    "cfg",
    [
        SMALL,
        KaleidoConfig.one_array(batch=8, split=(4, 4, 4)),
        KaleidoConfig.one_array(batch=4, split=(3, 2, 7), F=3, P=1),
    ],
    ids=["b4", "b8", "F3"],
)
@pytest.mark.parametrize("kind", ["video", "random"])
def test_model_equals_rtl_cycles(cfg, kind, seed):
    """:func:`pv_cycles` == the RTL's cycles, first transfer to last tile."""
    grid = (2, 3, 4)
    P, V = pv_head(kind, grid, cfg.split, seed)
    words, beats = pv_words(cfg, P, V, grid, cfg.split)
    res = simulate(PvArray(cfg), functools.partial(pv_bench, config=cfg, words=words))
    timing = pv_cycles(V, grid, cfg.split, cfg)
    assert timing.beats == len(beats)
    assert res.last_tile + 1 == timing.cycles
    assert timing.dense_beats == len(range(0, 24, 4)) * sum(-(-s // 4) for s in cfg.split) * 24


PAIRS = [
    KaleidoConfig.one_array(batch=4, split=(5, 3, 4), pv_pairs=True),
    KaleidoConfig.one_array(batch=8, split=(4, 4, 4), pv_pairs=True),
]


@pytest.mark.parametrize("cfg", PAIRS, ids=["b4", "b8"])
@pytest.mark.parametrize("kind", ["video", "random"])
def test_small_p_pairing_model_equals_rtl_cycles(cfg, kind, seed):
    """Small-P pairing (``pv_pairs``, issue 14): :func:`pv_cycles` with P ==
    the golden beats (:func:`pair_pass`) == the RTL's cycles, and the
    RTL's tiles are the golden beats' (so O is unchanged); on a P mostly
    below 16 the pairing saves beats, and a P with nothing small pairs
    nothing."""
    grid = (2, 3, 4)
    P, V = pv_head(kind, grid, cfg.split, seed, small_p=True)
    words, beats = pv_words(cfg, P, V, grid, cfg.split)
    res = simulate(PvArray(cfg), functools.partial(pv_bench, config=cfg, words=words))
    timing = pv_cycles(V, grid, cfg.split, cfg, P=P)
    assert timing.beats == len(beats), f"seed {seed}"
    assert res.last_tile + 1 == timing.cycles, f"seed {seed}"
    assert any(b.kind == 1 for b in beats), f"seed {seed}: nothing paired"
    R, C = cfg.array_rows, cfg.array_cols
    assert res.drains == expected_drains(beats, R, C, cfg.accumulators, cfg.acc_width), f"seed {seed}"
    plain = pv_cycles(V, grid, cfg.split, cfg.replace(pv_pairs=False))
    assert timing.beats < plain.beats, f"seed {seed}: pairing saved nothing"
    assert pv_cycles(V, grid, cfg.split, cfg, P=np.full_like(P, 16)).beats == plain.beats
    acc = pv_accumulate(P, V, cfg, grid, F=cfg.F)
    assert (acc == P @ v_effective(V, grid, cfg.split, cfg.F).astype(np.int64)).all(), f"seed {seed}"


def test_small_p_pairing_counts_follow_the_golden_rule(seed):
    """The vectorised count (:func:`pv_pair_block_beats`) equals the golden
    beat stream's length on more heads and settings than the RTL test runs,
    at the RTL's bound and a lower one."""
    from kaleido.model import pv_pair_block_beats

    for k, (kind, cfg) in enumerate(itertools.product(["video", "random"], [*PAIRS, PAIRS[0].replace(F=3, P=1)])):
        grid = (2, 3, 4)
        P, V = pv_head(kind, grid, cfg.split, seed + k, small_p=True)
        golden = sum(len(pv_pass_beats(P, V, ps, cfg, cfg.F)) for ps in pv_passes(cfg, grid, cfg.split, P.shape[0]))
        assert pv_cycles(V, grid, cfg.split, cfg, P=P).beats == golden, f"seed {seed + k} {kind}"
        # a lower bound pairs fewer beats
        low = pv_pair_block_beats(V, P, grid, cfg.split, cfg, [cfg.F] * 3, bound=4)[0].sum()
        assert golden <= low <= pv_cycles(V, grid, cfg.split, cfg.replace(pv_pairs=False)).beats


def test_bad_input_is_named():
    V = np.zeros((24, 12), np.int8)
    with pytest.raises(ValueError, match=r"P must lie in 0..127 .* not 128..128"):
        check_p(np.full((24, 24), 128))
    with pytest.raises(ValueError, match="P must lie in 0..127"):
        pv_accumulate(np.full((24, 24), -1), V, SMALL, (2, 3, 4))
    with pytest.raises(ValueError, match="P must have 24 columns"):
        pv_accumulate(np.zeros((24, 23), int), V, SMALL, (2, 3, 4))
    with pytest.raises(TypeError, match="P must be a 2-D integer array"):
        check_p(np.zeros((24, 24)))
    with pytest.raises(TypeError, match="V"):
        pv_cycles(V.astype(np.float32), (2, 3, 4), SMALL.split, SMALL)
    with pytest.raises(ValueError, match="grid"):
        pv_cycles(V, (2, 3, 5), SMALL.split, SMALL)
    pairs = SMALL.replace(pv_pairs=True)
    with pytest.raises(ValueError, match="pv_pairs needs P"):
        pv_cycles(V, (2, 3, 4), SMALL.split, pairs)
    with pytest.raises(ValueError, match="P must have 24 rows"):
        pv_cycles(V, (2, 3, 4), SMALL.split, pairs, P=np.zeros((23, 24), int))
    with pytest.raises(ValueError, match="P must lie in 0..127"):
        pv_cycles(V, (2, 3, 4), SMALL.split, pairs, P=np.full((24, 24), 200))
    with pytest.raises(TypeError, match="pv_pairs must be True or False, not 1"):
        KaleidoConfig.one_array(pv_pairs=1)
