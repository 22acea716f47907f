"""Reuse on the P side of P V (issue 14 candidate): delta-coded query rows,
and the P V op bound of small-P halves.

P V with reuse on V (:mod:`kaleido.golden.pv`) reuses along the key side
only. Neighbouring queries have similar probability rows, so a follower
query ``f`` (windows of ``w`` along a grid axis,
:func:`kaleido.golden.windows.window_anchors`) can multiply the difference
of its row from its anchor's instead of its own row::

    acc[f] = (P[f] - P[a]) V + acc[a]

exactly, in integers (the P rows share one scale: each is relative to its
own row's maximum, and the normalisation by ``z`` comes after, spec
sec. 12). It changes no output, only the operands: a difference in
``-16..15`` fits the signed 5-bit port a small-P pair already uses
(:meth:`kaleido.golden.pe.PEModel.step_pv_pair`), so more beats are small.
No PE implements it (the follower's accumulator must add its anchor's
finished ``acc[a]``); this module measures what bounds it.

:func:`pv_half_beats` counts P V's products in half beats at 100 %
utilization: a product whose row operand is small (``-SMALL_P <= x <
SMALL_P``) or whose V is 0 costs one half (two share a beat), any other
two, a dense product two; V's FULL followers (windows of ``w``, the
column side) pre-add their operand into their anchor's product and cost
nothing. It is the op bound of small-P pairing, which the built greedy
rule (:func:`kaleido.golden.pv.pair_pass`) approaches from above.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from ..checks import as_int8, check_grid, check_qkv, check_scales, check_split
from ..config import SMALL_P
from ..encoding import Reuse
from ..golden.grouped import check_group_thresholds
from ..golden.reuse import exact_matmul
from ..golden.softmax import fixed_softmax
from ..golden.windows import window_anchors, window_classes, window_effective
from ..loopnest import group_slices

__all__ = ["delta_rows", "delta_accumulate", "pv_block_halves", "pv_half_beats", "window_p", "window_pv_bounds"]


def _check_rows(P, n: int | None = None) -> np.ndarray:
    P = np.asarray(P)
    if P.ndim != 2 or not np.issubdtype(P.dtype, np.integer):
        raise TypeError(f"P must be a 2-D integer array, not {P.dtype} {P.shape!r}")
    if n is not None and P.shape[0] != n:
        raise ValueError(f"P must have {n} rows (one per query token of the grid), not shape {P.shape!r}")
    return P.astype(np.int64)


def delta_rows(P, grid, axis: int = 0, w: int = 2) -> np.ndarray:
    """int64 ``(n, N)``: ``P`` with every follower query row (windows of
    ``w`` along ``axis``) replaced by its difference from its anchor's row;
    anchor rows unchanged."""
    T, H, W = check_grid(grid)
    P = _check_rows(P, T * H * W)
    if axis not in (0, 1, 2):
        raise ValueError(f"axis must be 0 (t), 1 (y) or 2 (x), not {axis!r}")
    anchor = window_anchors((T, H, W), axis, w)
    out = P.copy()
    f = anchor != np.arange(len(anchor))
    out[f] -= P[anchor[f]]
    return out


def delta_accumulate(D, V, grid, axis: int = 0, w: int = 2) -> np.ndarray:
    """int64 ``P V`` from delta-coded rows ``D`` (:func:`delta_rows`):
    anchors first, then each follower adds its anchor's finished row.
    Equal to ``P @ V`` exactly."""
    T, H, W = check_grid(grid)
    D = _check_rows(D, T * H * W)
    as_int8("V", V)
    if V.shape[0] != D.shape[1]:
        raise ValueError(f"V must have {D.shape[1]} rows (one per key), not shape {V.shape!r}")
    acc = D @ V.astype(np.int64)
    anchor = window_anchors((T, H, W), axis, w)
    f = np.nonzero(anchor != np.arange(len(anchor)))[0]
    acc[f] += acc[anchor[f]]  # an anchor is never a follower
    return acc


def pv_block_halves(rows, V, grid, split, w: int, v_full) -> np.ndarray:
    """int64 ``(n, d)``: P V's products in half beats (module doc) of each
    block of one query row and one channel, for the row operands ``rows``
    (``(n, N)``: P, or :func:`delta_rows`) and V with FULL-only reuse in
    windows of ``w`` along each group's direction (``v_full``: one FULL
    threshold or three, one per group): what a one-PE array that pairs any
    two small products of a block issues is ``ceil(halves / 2)`` beats."""
    as_int8("V", V)
    N, d = V.shape
    grid = check_grid(grid, N)
    split = check_split(split, d)
    rows = _check_rows(rows)
    if rows.shape[1] != N:
        raise ValueError(f"rows must have {N} columns (one per key), not shape {rows.shape!r}")
    if isinstance(v_full, numbers.Integral):
        v_full = (v_full,) * 3
    fs = check_group_thresholds([(int(F), int(F)) for F in v_full])
    cls = window_classes(V, grid, split, w, fs)
    if rows.size and np.abs(rows).max() * w >= 1 << 15:
        raise ValueError(f"rows must lie in -{(1 << 15) // w - 1}..{(1 << 15) // w - 1} for windows of {w}")
    rows16 = rows.astype(np.int16)
    big = ((rows16 < -SMALL_P) | (rows16 >= SMALL_P)).astype(np.float32)  # counts stay exact below 2**24
    nz = V != 0
    own = np.zeros((N, d), dtype=bool)  # products a key makes on its own: not FULL, not a host
    out = np.zeros((rows.shape[0], d), dtype=np.int64)
    for sl, axis in group_slices(split):
        anchor = window_anchors(grid, axis, w)
        for c in range(sl.start, sl.stop):
            full = cls[:, c] == Reuse.FULL  # followers that pre-add into their anchor: no product
            hosts = np.unique(anchor[full])  # anchors whose operand is a sum
            own[:, c] = ~full
            own[hosts, c] = False
            out[:, c] = int(own[:, c].sum())
            if len(hosts):
                ops = rows16[:, hosts].copy()
                for j in np.nonzero(full)[0]:  # few: one column add each
                    ops[:, np.searchsorted(hosts, anchor[j])] += rows16[:, j]
                sums_big = ((ops < -SMALL_P) | (ops >= SMALL_P)) & nz[hosts, c][None, :]
                out[:, c] += len(hosts) + sums_big.sum(axis=1)
    out += np.rint(big @ (own & nz).astype(np.float32)).astype(np.int64)  # a big own product: one half more
    return out


def pv_half_beats(rows, V, grid, split, w: int, v_full) -> dict:
    """P V's products in half beats (module doc, :func:`pv_block_halves`
    summed) for the row operands ``rows`` and V with FULL-only reuse in
    windows of ``w``. Returns ``halves``, ``dense_halves`` (two per
    product) and ``bound = dense_halves / halves``."""
    halves = int(pv_block_halves(rows, V, grid, split, w, v_full).sum())
    dense = 2 * np.asarray(rows).shape[0] * np.asarray(V).shape[0] * np.asarray(V).shape[1]
    return {"halves": halves, "dense_halves": dense, "bound": dense / halves}


def window_p(Q, K, grid, split, w: int, thresholds, *, scales) -> np.ndarray:
    """The P operand (int64 ``(n, N)``, :func:`kaleido.golden.softmax.fixed_softmax`)
    of the scores of Q and K with reuse in windows of ``w``
    (:func:`kaleido.golden.windows.window_effective`, thresholds ``(F, P)``
    or three)."""
    as_int8("Q", Q)
    as_int8("K", K)
    qs, ks, _ = check_scales(scales)
    Qe = window_effective(Q, grid, split, w, thresholds, side="row")
    Ke = window_effective(K, grid, split, w, thresholds, side="column")
    return fixed_softmax(exact_matmul(Qe, Ke.T), qs * ks / math.sqrt(Q.shape[1])).p


def window_pv_bounds(Q, K, V, grid, split, w: int, thresholds, *, scales, delta_axis: int = 0) -> dict:
    """P V's op bounds in windows of ``w`` (V's FULL threshold per group:
    each group's ``F``) on the P operand of :func:`window_p`:
    ``pv_bound_small`` with small-P halves (:func:`pv_half_beats`) and
    ``pv_bound_small_delta`` with the query rows delta-coded too (pairs
    along ``delta_axis``, :func:`delta_rows`). Neither changes the output."""
    grid, split = check_qkv(Q, K, V, grid, split)
    v_full = tuple(F for F, _ in check_group_thresholds(thresholds))
    p = window_p(Q, K, grid, split, w, thresholds, scales=scales)
    small = pv_half_beats(p, V, grid, split, w, v_full)
    delta = pv_half_beats(delta_rows(p, grid, delta_axis), V, grid, split, w, v_full)
    return {"pv_bound_small": small["bound"], "pv_bound_small_delta": delta["bound"]}
