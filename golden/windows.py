"""Reuse groups longer than pairs (issue 14 candidate): windows of ``w``
tokens along each group's direction share one anchor, the window's first
token (coordinate divisible by ``w``), and every other token of the window
is classified against it with :func:`kaleido.golden.reuse.classify`. With
``w = 2`` this is the pairing of :mod:`kaleido.golden.reuse`.

Longer windows shrink the always-dense anchor x anchor products from a
quarter of ``Q K^T`` to ``1 / w^2`` but compare followers with a more
distant anchor. No PE or array implements them (a ``w x w`` group needs
``w^2`` tiles per PE), so this module measures what bounds them: the
oracle's nibble multiplies (every product reuses what its classes allow,
:data:`PRODUCT_COST`, at 100 % utilization) and the attention quality.
"""

from __future__ import annotations

import numbers

import numpy as np

from ..checks import as_int8, check_grid, check_qkv, check_scales, check_split
from ..encoding import ABSENT, Reuse
from ..loopnest import group_slices
from .attention import metrics, softmax_attention
from .grouped import check_group_thresholds, int8_attention
from .ops import t1_cost, t2_cost, t3_cost
from .reuse import classify, effective_values, exact_matmul

__all__ = ["PRODUCT_COST", "ROW_PARTIAL_COST", "window_anchors", "window_classes", "window_effective", "window_bound"]

#: the oracle's nibble multiplies of one token product ``(i, j, c)`` by the
#: row token's and the column token's role at ``c`` (a follower's class,
#: ABSENT for an anchor): 2 when both are anchors (a dense product)
PRODUCT_COST = np.zeros((4, 4), dtype=np.int64)
for _q in Reuse:
    for _k in Reuse:
        PRODUCT_COST[_q, _k] = t3_cost("oracle", _q, _k)
    PRODUCT_COST[_q, ABSENT] = t2_cost(_q)
    PRODUCT_COST[ABSENT, _q] = t1_cost(_q)
PRODUCT_COST[ABSENT, ABSENT] = 2

#: :data:`PRODUCT_COST` with partial reuse on the row side too (issue 14
#: candidate): a row follower PARTIAL at a channel shares its high nibble
#: with its anchor, so splitting the row operand leaves one 4x8 multiply
#: (``lo(a') b``) where the anchor's product holds ``16 hi(a) b``; exact when
#: ``P >= 4`` (the high nibbles agree). No PE splits its row operand.
ROW_PARTIAL_COST = PRODUCT_COST.copy()
ROW_PARTIAL_COST[Reuse.PARTIAL, ABSENT] = 1
ROW_PARTIAL_COST[Reuse.PARTIAL, Reuse.NONE] = 1


def _check_w(w) -> int:
    if not isinstance(w, numbers.Integral) or isinstance(w, bool) or w < 2:
        raise ValueError(f"window length w must be an integer >= 2, not {w!r}")
    return int(w)


def window_anchors(grid, axis: int, w: int) -> np.ndarray:
    """int64 ``(N,)``: each token's anchor along ``axis`` in windows of ``w``
    (itself for an anchor)."""
    T, H, W = check_grid(grid)
    w = _check_w(w)
    coord = np.indices((T, H, W))[axis].ravel()
    stride = int(np.prod((T, H, W)[axis + 1 :]))
    return np.arange(T * H * W, dtype=np.int64) - (coord % w) * stride


def window_classes(Z, grid, split, w: int, thresholds) -> np.ndarray:
    """uint8 ``(N, d)``: each token's class against its window's anchor at
    every channel of each group (per-group ``(F, P)``), ABSENT for anchors."""
    as_int8("Z", Z)
    grid = check_grid(grid, Z.shape[0])
    split = check_split(split, Z.shape[1])
    fp = check_group_thresholds(thresholds)
    out = np.full(Z.shape, ABSENT, dtype=np.uint8)
    for (sl, axis), (F, P) in zip(group_slices(split), fp, strict=True):
        anchor = window_anchors(grid, axis, w)
        f = np.nonzero(anchor != np.arange(len(anchor)))[0]
        out[f, sl] = classify(Z[anchor[f], sl], Z[f, sl], F, P)
    return out


def window_effective(Z, grid, split, w: int, thresholds, *, side: str = "column", full_only: bool = False):
    """Effective operands under windows of ``w`` (the rules of
    :func:`kaleido.golden.reuse.effective`; ``full_only``: only FULL
    followers reuse, as P V does with V)."""
    cls = window_classes(Z, grid, split, w, thresholds)
    out = np.array(Z, copy=True)
    for sl, axis in group_slices(check_split(split, Z.shape[1])):
        anchor = window_anchors(grid, axis, w)
        f = np.nonzero(anchor != np.arange(len(anchor)))[0]
        a, b, c = Z[anchor[f], sl], Z[f, sl], cls[f, sl]
        out[f, sl] = np.where(c == Reuse.FULL, a, b) if full_only else effective_values(a, b, c, side)
    return out


def window_bound(Q, K, V, grid, split, w: int, thresholds, *, scales, reference=None) -> dict:
    """Windows of ``w`` on Q, K (and V, FULL only): ``oracle`` and ``dense``
    nibble multiplies of ``Q K^T`` and the op bound on its speedup
    (``bound = dense / oracle``), the same with row-side partial reuse
    (``oracle_row_partial``, ``bound_row_partial``, :data:`ROW_PARTIAL_COST`;
    exact only when every ``P >= 4``); for P V (V's FULL followers pre-add their
    P into the anchor's product, :mod:`kaleido.golden.pv`) the products
    ``pv_oracle`` (anchors and non-FULL followers, per channel and query),
    ``pv_dense`` and ``pv_bound``; and the attention output's metrics
    against int8 attention (``vs_int8``)."""
    grid, split = check_qkv(Q, K, V, grid, split)
    scales = check_scales(scales)
    rq = window_classes(Q, grid, split, w, thresholds)
    rk = window_classes(K, grid, split, w, thresholds)
    hq = np.stack([(rq == v).sum(axis=0) for v in range(4)], axis=1)  # (d, 4)
    hk = np.stack([(rk == v).sum(axis=0) for v in range(4)], axis=1)
    oracle = int(np.einsum("cq,ck,qk->", hq, hk, PRODUCT_COST))
    oracle_row = int(np.einsum("cq,ck,qk->", hq, hk, ROW_PARTIAL_COST))
    dense = 2 * Q.shape[0] * K.shape[0] * Q.shape[1]
    Qe = window_effective(Q, grid, split, w, thresholds, side="row")
    Ke = window_effective(K, grid, split, w, thresholds, side="column")
    v_fp = [(F, F) for F, _ in check_group_thresholds(thresholds)]
    Ve = window_effective(V, grid, split, w, v_fp, full_only=True)
    rv = window_classes(V, grid, split, w, v_fp)
    pv_oracle = Q.shape[0] * int((rv != Reuse.FULL).sum())
    pv_dense = Q.shape[0] * V.size
    qs, ks, vs = scales
    out = softmax_attention(exact_matmul(Qe, Ke.T) * (qs * ks / np.sqrt(Q.shape[1])), Ve.astype(np.float64) * vs)
    ref = int8_attention(Q, K, V, scales=scales) if reference is None else reference
    return {
        "oracle": oracle,
        "dense": dense,
        "bound": dense / oracle,
        "oracle_row_partial": oracle_row,
        "bound_row_partial": dense / oracle_row,
        "pv_oracle": pv_oracle,
        "pv_dense": pv_dense,
        "pv_bound": pv_dense / pv_oracle,
        "vs_int8": metrics(out, ref),
    }
