"""Golden model: classification, effective operands and reuse scores."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kaleido.golden import (
    ABSENT,
    Reuse,
    classify,
    effective,
    lead_eq,
    op_counts,
    pairs,
    reuse_scores,
    scores_by_passes,
    skip_baselines,
)
from kaleido.golden.reuse import follower_classes
from kaleido.tb.strategies import heads, int8_pairs, thresholds

ALL = np.arange(-128, 128, dtype=np.int8)
A_ALL, B_ALL = (x.ravel() for x in np.meshgrid(ALL, ALL, indexing="ij"))


def _bits(x):
    return format(int(np.int8(x).view(np.uint8)), "08b")


def test_lead_eq_exhaustive():
    le = lead_eq(A_ALL, B_ALL)
    ref = np.array(
        [next((i for i in range(8) if _bits(a)[i] != _bits(b)[i]), 8) for a, b in zip(A_ALL, B_ALL, strict=True)]
    )
    assert (le == ref).all()


@pytest.mark.parametrize("F, P", [(F, P) for F in range(1, 10) for P in range(1, F + 1)])
def test_classify_exhaustive(F, P):
    le = lead_eq(A_ALL, B_ALL)
    cls = classify(A_ALL, B_ALL, F, P)
    assert cls.dtype == np.uint8
    assert ((cls == Reuse.FULL) == (le >= F)).all()
    assert ((cls == Reuse.PARTIAL) == ((le >= P) & (le < F))).all()
    assert ((cls == Reuse.NONE) == (le < P)).all()


@pytest.mark.parametrize("F, P", [(5, 3), (5, 4), (3, 1), (6, 4), (9, 9), (8, 1)])
def test_error_bounds_exhaustive(F, P):
    """Spec sec. 3: FULL off by at most 2^(8-F)-1; PARTIAL exact iff lead_eq >= 4,
    else off by exactly 16 (column side); the row side never approximates a PARTIAL."""
    a, b = A_ALL.astype(np.int64), B_ALL.astype(np.int64)
    cls = classify(A_ALL, B_ALL, F, P)
    le = lead_eq(A_ALL, B_ALL)
    eff_col = _pairwise_effective(A_ALL, B_ALL, F, P, "column").astype(np.int64)
    eff_row = _pairwise_effective(A_ALL, B_ALL, F, P, "row").astype(np.int64)
    full = cls == Reuse.FULL
    part = cls == Reuse.PARTIAL
    assert (np.abs(eff_col - b)[full] <= 2 ** (8 - F) - 1).all()
    assert (eff_col[full] == a[full]).all() and (eff_row[full] == a[full]).all()
    assert (eff_col[part & (le >= 4)] == b[part & (le >= 4)]).all()
    # lead_eq = 3 (the most a P <= 3 PARTIAL can miss by): off by exactly 16;
    # below (only reachable with P < 3) a nonzero multiple of 16, at most
    # 16 * (2^(4 - lead_eq) - 1): the spec's "exactly 16" holds for P = 3.
    err = np.abs(eff_col - b)
    assert (err[part & (le == 3)] == 16).all()
    low = part & (le < 3)
    assert (err[low] % 16 == 0).all() and (err[low] > 0).all()
    assert (err[low] <= 16 * (2 ** (4 - le[low].astype(np.int64)) - 1)).all()
    assert (eff_row[~full] == b[~full]).all()
    assert (eff_col[cls == Reuse.NONE] == b[cls == Reuse.NONE]).all()


def _pairwise_effective(a, b, F, P, side):
    """effective() on a 1x1x2 grid per value pair, vectorised over pairs by
    stacking pairs as channels of one group."""
    n = a.size
    Z = np.stack([a, b]).astype(np.int8)  # tokens (anchor, follower) x channels
    split = (n, 1, 1)  # t-channels pair along x: grid (1, 1, 2); the two 1-channel groups are unpaired along y/t
    Z = np.concatenate([Z, np.zeros((2, 2), np.int8)], axis=1)
    return effective(Z, (1, 1, 2), split, F, P, side=side)[1, :n]


@given(int8_pairs, thresholds())
def test_column_partial_takes_anchor_high_nibble(pair, FP):
    a, b = pair
    F, P = FP
    eff = _pairwise_effective(a, b, F, P, "column")
    cls = classify(a, b, F, P)
    part = cls == Reuse.PARTIAL
    au, bu, eu = (x.view(np.uint8) for x in (a, b, eff))
    assert ((eu[part] >> 4) == (au[part] >> 4)).all()
    assert ((eu[part] & 0xF) == (bu[part] & 0xF)).all()
    assert (eff[cls == Reuse.FULL] == a[cls == Reuse.FULL]).all()
    row = _pairwise_effective(a, b, F, P, "row")
    assert (row[part] == b[part]).all()


@given(heads(correlated=False))
def test_reuse_off_equals_int8_matmul(head):
    Q, K, grid, split = head
    S = reuse_scores(Q, K, grid, split, F=9, P=9)
    assert S.dtype == np.int64
    assert (S == Q.astype(np.int64) @ K.astype(np.int64).T).all()


@given(heads(), thresholds())
def test_reuse_scores_is_effective_matmul(head, FP):
    Q, K, grid, split = head
    F, P = FP
    Qe = effective(Q, grid, split, F, P, side="row").astype(np.int64)
    Ke = effective(K, grid, split, F, P, side="column").astype(np.int64)
    assert (reuse_scores(Q, K, grid, split, F, P) == Qe @ Ke.T).all()


@given(heads(), thresholds())
def test_followers_full_equal_anchor_and_anchors_unchanged(head, FP):
    Q, K, grid, split = head
    F, P = FP
    cls = follower_classes(K, grid, split, F, P)
    eff = effective(K, grid, split, F, P)
    # anchors and unpaired tokens keep their values
    assert (eff[cls == ABSENT] == K[cls == ABSENT]).all()
    starts = np.cumsum((0,) + split)
    for g, axis in enumerate((2, 1, 0)):
        a, f, _ = pairs(grid, axis)
        sl = slice(starts[g], starts[g + 1])
        full = cls[f, sl] == Reuse.FULL
        assert (eff[f, sl][full] == K[a, sl][full]).all()


@given(st.tuples(st.integers(1, 6), st.integers(1, 6), st.integers(1, 6)), st.integers(0, 2))
def test_pairs_partition_tokens(grid, axis):
    a, f, u = pairs(grid, axis)
    every = np.sort(np.concatenate([a, f, u]))
    assert (every == np.arange(np.prod(grid))).all()
    coord = np.moveaxis(np.indices(grid), 0, -1).reshape(-1, 3)[:, axis]
    assert (coord[a] % 2 == 0).all() and (coord[f] == coord[a] + 1).all()
    assert (coord[u] == grid[axis] - 1).all() and (grid[axis] % 2 == 1 or len(u) == 0)
    assert (np.diff(a) > 0).all()
    # the follower is the next token on the axis: all other coordinates equal
    ca = np.moveaxis(np.indices(grid), 0, -1).reshape(-1, 3)
    other = [i for i in range(3) if i != axis]
    assert (ca[a][:, other] == ca[f][:, other]).all()


def test_directions():
    """t-channels pair along x, x-channels along y, y-channels along t."""
    grid = (2, 2, 2)
    Z = np.zeros((8, 3), np.int8)
    Z[:, :] = np.arange(8)[:, None] * 32  # every neighbour differs in the top bits
    Z[1, 0] = Z[0, 0]  # x-neighbour of token 0 equal at the t-channel
    Z[2, 1] = Z[0, 1]  # y-neighbour equal at the x-channel
    Z[4, 2] = Z[0, 2]  # t-neighbour equal at the y-channel
    cls = follower_classes(Z, grid, (1, 1, 1), 8, 8)
    assert cls[1, 0] == Reuse.FULL and cls[2, 1] == Reuse.FULL and cls[4, 2] == Reuse.FULL
    assert (cls == Reuse.FULL).sum() == 3


# --- input validation ------------------------------------------------------

Q0 = np.zeros((8, 4), np.int8)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: classify(np.zeros(3, np.int16), np.zeros(3, np.int8)), "anchor must have dtype int8, not int16"),
        (lambda: classify(np.zeros(3, np.int8), np.zeros(4, np.int8)), "same shape"),
        (lambda: classify([1, 2], np.zeros(2, np.int8)), "anchor must be a numpy int8 array, not list"),  # type: ignore[arg-type]
        (lambda: classify(np.zeros(3, np.int8), np.zeros(3, np.int8), 4, 5), "P <= F"),
        (lambda: classify(np.zeros(3, np.int8), np.zeros(3, np.int8), 10, 3), "threshold F must be in 1..9, not 10"),
        (lambda: classify(np.zeros(3, np.int8), np.zeros(3, np.int8), 5, 0), "threshold P must be in 1..9, not 0"),
        (lambda: effective(Q0.astype(np.float32), (2, 2, 2), (1, 2, 1)), "Z must have dtype int8, not float32"),
        (lambda: effective(Q0, (2, 2, 3), (1, 2, 1)), r"grid \(2, 2, 3\) holds 12 tokens, but the tensor has N = 8"),
        (lambda: effective(Q0, (2, 2, 2), (1, 2, 2)), r"split \(1, 2, 2\) sums to 5, but the head dimension d is 4"),
        (lambda: effective(Q0, (2, 2, 2), (0, 2, 2)), "at least 1"),
        (lambda: effective(Q0, (2, 2, 2), (1, 2, 1), side="left"), "side must be 'row' or 'column', not 'left'"),
        (lambda: effective(Q0, (2, 2), (1, 2, 1)), "grid must be three integers"),
        (lambda: effective(Q0[0], (2, 2, 2), (1, 2, 1)), r"Z must be 2-D, not shape \(4,\)"),
        (lambda: reuse_scores(Q0, Q0[:, :3], (2, 2, 2), (1, 2, 1)), "Q and K must have the same shape"),
        (lambda: reuse_scores(Q0, Q0.astype(np.uint8), (2, 2, 2), (1, 2, 1)), "K must have dtype int8, not uint8"),
        (lambda: reuse_scores(Q0, Q0, (2, 2, 2), (1, 2, 1), 9, 10), "threshold P must be in 1..9, not 10"),
        (lambda: pairs((2, 2, 2), 3), "axis must be 0"),
        (lambda: op_counts(Q0.astype(np.int16), Q0, (2, 2, 2), (1, 2, 1)), "Q must have dtype int8, not int16"),
        (lambda: op_counts(Q0, Q0, (2, 2, 2), (1, 2, 1), 5, 6), "P <= F"),
        (lambda: op_counts(Q0, Q0, (1, 2, 2), (1, 2, 1)), "holds 4 tokens, but the tensor has N = 8"),
        (lambda: skip_baselines(Q0, Q0, Q0, (2, 2, 2), (2, 2, 1), scales=(1, 1, 1)), "sums to 5"),
        (lambda: scores_by_passes(Q0, Q0[:4], (2, 2, 2), (1, 2, 1)), "Q and K must have the same shape"),
    ],
)
def test_wrong_input(call, message):
    with pytest.raises((TypeError, ValueError), match=message):
        call()
