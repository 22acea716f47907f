"""Golden model: PE decode, matcher, one array pass and the loop nest."""

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kaleido import KaleidoConfig
from kaleido.golden import (
    ABSENT,
    Need,
    PEModel,
    Phase,
    Reuse,
    SlotKind,
    array_pass,
    channel_needs,
    classify,
    match,
    reuse_scores,
    scores_by_passes,
)
from kaleido.golden.reuse import lead_eq
from kaleido.tb.strategies import heads

ALL = np.arange(-128, 128, dtype=np.int8)


def test_full8_product_exhaustive():
    a, b = (x.ravel() for x in np.meshgrid(ALL, ALL, indexing="ij"))
    mul_a, mul_b = PEModel.products(SlotKind.FULL8, a, a, b)
    assert (mul_a + mul_b == a.astype(np.int64) * b).all()
    assert (mul_a == a.astype(np.int64) * (b.view(np.uint8) & 0xF)).all()


def test_dual_lo_products_exhaustive():
    a, b = (x.ravel() for x in np.meshgrid(ALL, ALL, indexing="ij"))
    r1 = np.roll(a, 7)
    mul_a, mul_b = PEModel.products(SlotKind.DUAL_LO, a, r1, b)
    bu = b.view(np.uint8).astype(np.int64)
    assert (mul_a == a * (bu & 0xF)).all()
    assert (mul_b == r1.astype(np.int64) * (bu >> 4)).all()  # unsigned nibble, no shift


def _follower_with_class(rng, anchor, cls, F, P):
    """A random int8 follower whose class against ``anchor`` is ``cls``."""
    cand = ALL[classify(np.full(256, anchor, np.int8), ALL, F, P) == cls]
    return cand[rng.integers(len(cand))] if len(cand) else None


@pytest.mark.parametrize("accumulators", [3, 4])
@pytest.mark.parametrize("q, k", list(itertools.product([0, 1, 2], [0, 1, 2])))
def test_nine_combinations_every_tile(q, k, accumulators, seed):
    """One PE, one pair group: every channel has the same (q, k); all four
    tiles equal sum_c A_eff * B_eff."""
    rng = np.random.default_rng(seed)
    n, F, P = 16, 5, 3
    A = np.zeros((1, 2, n), np.int8)
    B = np.zeros((1, 2, n), np.int8)
    for c in range(n):
        while True:
            a, b = rng.integers(-128, 128, 2).astype(np.int8)
            fa, fb = _follower_with_class(rng, a, q, F, P), _follower_with_class(rng, b, k, F, P)
            if fa is not None and fb is not None:
                break
        A[0, :, c] = (a, a if q == Reuse.FULL else fa)  # row side
        col_eff = b if k == Reuse.FULL else ((b & -16) | (fb & 15)) if k == Reuse.PARTIAL else fb
        B[0, :, c] = (b, col_eff)
    qt = np.full((1, n), q, np.uint8)
    kt = np.full((1, n), k, np.uint8)
    slots = [match(channel_needs(p, qt, kt, accumulators=accumulators)) for p in Phase]
    tiles = array_pass(A, qt, B, kt, slots, accumulators=accumulators)[0, 0]
    A64, B64 = A.astype(np.int64)[0], B.astype(np.int64)[0]
    expected = [A64[0] @ B64[0], A64[0] @ B64[1], A64[1] @ B64[0], A64[1] @ B64[1]]
    assert list(tiles) == expected


def test_absent_tiles_are_zero():
    rng = np.random.default_rng(3)
    A = rng.integers(-128, 128, (2, 2, 4), dtype=np.int8)
    B = rng.integers(-128, 128, (2, 2, 4), dtype=np.int8)
    q = np.array([[ABSENT] * 4, [0, 1, 2, 0]], np.uint8)
    k = np.array([[2, 2, 1, 0], [ABSENT] * 4], np.uint8)
    slots = [[(c,) for c in range(4)]] * 4
    tiles = array_pass(A, q, B, k, slots)
    assert (tiles[0, :, 2:] == 0).all()  # unpaired row: no T2, T3
    assert (tiles[:, 1, 1] == 0).all() and (tiles[:, 1, 3] == 0).all()  # unpaired column: no T1, T3
    assert tiles[0, 0, 0] == A[0, 0].astype(np.int64) @ B[0, 0]


def test_array_pass_rejects_bad_streams():
    A = np.zeros((1, 2, 3), np.int8)
    q = np.zeros((1, 3), np.uint8)
    k = np.full((1, 3), Reuse.FULL, np.uint8)
    ok = [[(0,), (1,), (2,)]] * 4
    with pytest.raises(ValueError, match="misses needed channels"):
        array_pass(A, q, A, k, [[(0,), (1,)]] + ok[1:])
    with pytest.raises(ValueError, match="appears twice"):
        array_pass(A, q, A, k, [[(0,), (1,), (2,), (1,)]] + ok[1:])
    with pytest.raises(ValueError, match="not both HALF"):
        array_pass(A, q, A, k, [[(0, 1), (2,)]] + ok[1:])
    with pytest.raises(ValueError, match="outside the batch"):
        array_pass(A, q, A, k, [[(0,), (1,), (2,), (5,)]] + ok[1:])
    with pytest.raises(ValueError, match="four phase streams"):
        array_pass(A, q, A, k, ok[:3])
    with pytest.raises(ValueError, match="A must be an int8 array"):
        array_pass(A.astype(np.int16), q, A, k, ok)


# --- matcher -----------------------------------------------------------------

needs_lists = st.lists(st.sampled_from(list(Need)), max_size=20)


@given(needs_lists, st.integers(0, 6))
def test_match_properties(needs, L):
    slots = match(needs, L)
    flat = [c for s in slots for c in s]
    assert sorted(flat) == [c for c, n in enumerate(needs) if n != Need.SKIP]  # each once
    heads_ = [s[0] for s in slots]
    assert heads_ == sorted(heads_)  # issued at the head's position, in channel order
    used = set()
    for s in slots:
        if len(s) == 2:
            h, p = s
            assert needs[h] == needs[p] == Need.HALF and h < p
            between = [c for c in range(h + 1, p) if needs[c] != Need.SKIP and c not in used]
            assert len(between) < L  # within the lookahead
            assert all(needs[c] != Need.HALF for c in between)  # the first HALF one
        used.update(s)
    if L == 0:
        assert all(len(s) == 1 for s in slots)


@given(needs_lists)
def test_match_unbounded_is_minimal(needs):
    halves = sum(n == Need.HALF for n in needs)
    fulls = sum(n == Need.FULL for n in needs)
    assert len(match(needs, None)) == fulls + (halves + 1) // 2


def test_match_lookahead_window():
    H, Fn = Need.HALF, Need.FULL
    assert match([H, Fn, Fn, Fn, Fn, H], 4) == [(0,), (1,), (2,), (3,), (4,), (5,)]
    assert match([H, Fn, Fn, Fn, H], 4) == [(0, 4), (1,), (2,), (3,)]
    assert match([Need.HALF, Need.SKIP, Need.HALF], 1) == [(0, 2)]  # SKIP entries do not count
    with pytest.raises(ValueError, match="needs must be SKIP, HALF or FULL"):
        match(["LO"])


# --- loop nest -----------------------------------------------------------------


@given(
    heads(max_extent=5, max_group=5),
    st.sampled_from([3, 4]),
    st.booleans(),
    st.booleans(),
    st.integers(1, 5),
    st.sampled_from([(5, 3), (5, 4), (3, 1), (9, 9)]),
)
def test_scores_by_passes_equals_reuse_scores(head, acc, matcher, scheduler, batch, FP):
    Q, K, grid, split = head
    cfg = KaleidoConfig.one_array(split=split, batch=batch, accumulators=acc, F=FP[0], P=FP[1])
    S, stats = scores_by_passes(Q, K, grid, split, cfg, matcher=matcher, scheduler=scheduler)
    assert (S == reuse_scores(Q, K, grid, split, *FP)).all()
    assert stats["passes"] > 0


@pytest.mark.parametrize("rows, cols", [(1, 1), (2, 3), (4, 4)])
def test_scores_by_passes_array_sizes(rows, cols):
    rng = np.random.default_rng(5)
    Q = rng.integers(-128, 128, (45, 6), dtype=np.int8)
    Q[1::2] = Q[::2][:22]
    cfg = KaleidoConfig.paper(split=(2, 2, 2), batch=2, array_rows=rows, array_cols=cols)  # (5, 3): reuse_scores
    S, _ = scores_by_passes(Q, Q, (5, 3, 3), (2, 2, 2), cfg)
    assert (S == reuse_scores(Q, Q, (5, 3, 3), (2, 2, 2))).all()


def test_lead_eq_used_by_decoder_is_classify():
    a = np.array([0, 0x10, -1], np.int8)
    b = np.array([1, 0x1F, 0x7F], np.int8)
    assert list(lead_eq(a, b)) == [7, 4, 0]
