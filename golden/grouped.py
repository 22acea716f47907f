"""Reuse with one threshold pair per channel group (issue 14): the classes,
effective operands and attention output when the t-, x- and y-channel
groups each have their own ``(F, P)``, and the output the hardware computes
(Q row side, K column side, V by the P V rule: FULL followers only).

With the same ``(F, P)`` in every group everything here equals
:mod:`kaleido.golden.reuse`; the explorer (``kaleido.explore``) uses it for
per-group and per-head thresholds.
"""

from __future__ import annotations

import numpy as np

from ..checks import as_int8, check_grid, check_group_thresholds, check_qk, check_qkv, check_scales, check_split
from ..encoding import ABSENT, Reuse
from ..loopnest import group_slices, pairs
from .attention import metrics, softmax_attention
from .ops import COSTS
from .reuse import classify, effective_values, exact_matmul

__all__ = [
    "check_group_thresholds",
    "grouped_follower_classes",
    "grouped_effective",
    "grouped_scores",
    "grouped_v_effective",
    "hw_attention",
    "int8_attention",
    "class_histograms_grouped",
    "grouped_op_counts",
]


def _classes(Z, grid, split, thresholds):
    """Per group ``(slice, anchors, followers, cls)`` under its own ``(F, P)``."""
    as_int8("Z", Z)
    grid = check_grid(grid, Z.shape[0])
    split = check_split(split, Z.shape[1])
    fp = check_group_thresholds(thresholds)
    out = []
    for (sl, axis), (F, P) in zip(group_slices(split), fp, strict=True):
        anchors, followers, _ = pairs(grid, axis)
        out.append((sl, anchors, followers, classify(Z[anchors, sl], Z[followers, sl], F, P)))
    return out


def grouped_follower_classes(Z, grid, split, thresholds) -> np.ndarray:
    """uint8 ``(N, d)``: each token's class where it is a follower, ABSENT
    elsewhere (:func:`kaleido.golden.reuse.follower_classes` with per-group
    thresholds)."""
    role = np.full(Z.shape, ABSENT, dtype=np.uint8)
    for sl, _, followers, cls in _classes(Z, grid, split, thresholds):
        role[followers, sl] = cls
    return role


def grouped_effective(Z, grid, split, thresholds, *, side: str = "column") -> np.ndarray:
    """Effective operands with per-group thresholds
    (:func:`kaleido.golden.reuse.effective`)."""
    out = np.array(Z, copy=True)
    for sl, anchors, followers, cls in _classes(Z, grid, split, thresholds):
        out[followers, sl] = effective_values(Z[anchors, sl], Z[followers, sl], cls, side)
    return out


def grouped_scores(Q, K, grid, split, thresholds):
    """Exact reuse scores with per-group thresholds, int64 ``(N, N)``: the
    engine's ``S`` (Q row side, K column side;
    :func:`kaleido.golden.reuse.reuse_scores` with one pair)."""
    grid, split = check_qk(Q, K, grid, split)
    fp = check_group_thresholds(thresholds)
    return exact_matmul(
        grouped_effective(Q, grid, split, fp, side="row"), grouped_effective(K, grid, split, fp, side="column").T
    )


def grouped_v_effective(V, grid, split, full_bits) -> np.ndarray:
    """V as the P V array computes it (:func:`kaleido.golden.pv.v_effective`)
    with one FULL threshold per group: FULL followers take their anchor's
    value, every other token keeps its own."""
    fs = [int(f) for f in full_bits] if not isinstance(full_bits, (int, np.integer)) else [int(full_bits)] * 3
    if len(fs) != 3:
        raise ValueError(f"full_bits must be one threshold or three (t, x, y), not {full_bits!r}")
    out = np.array(V, copy=True)
    for sl, anchors, followers, cls in _classes(V, grid, split, [(f, f) for f in fs]):
        out[followers, sl] = np.where(cls == Reuse.FULL, V[anchors, sl], V[followers, sl])
    return out


def _attention(S, V, scales):
    qs, ks, vs = scales
    return softmax_attention(S.astype(np.float64) * (qs * ks / np.sqrt(V.shape[1])), V.astype(np.float64) * vs)


def int8_attention(Q, K, V, *, scales) -> np.ndarray:
    """Float attention of the int8 tensors without reuse (the reference)."""
    return _attention(exact_matmul(Q, K.T), V, check_scales(scales))


def hw_attention(Q, K, V, grid, split, thresholds, v_full=None, *, scales, reference=None) -> dict:
    """The attention output the hardware computes with per-group
    ``thresholds`` on Q K^T (Q row side, K column side) and the P V rule on
    V (FULL followers at ``v_full`` bits per group, default each group's
    ``F``), as :func:`kaleido.golden.attention.metrics` against int8
    attention without reuse (``reference``: that output, if already
    computed). Keys ``output`` and ``vs_int8``."""
    grid, split = check_qkv(Q, K, V, grid, split)
    fp = check_group_thresholds(thresholds)
    scales = check_scales(scales)
    v_full = [F for F, _ in fp] if v_full is None else v_full
    Qe = grouped_effective(Q, grid, split, fp, side="row")
    Ke = grouped_effective(K, grid, split, fp, side="column")
    Ve = grouped_v_effective(V, grid, split, v_full)
    out = _attention(exact_matmul(Qe, Ke.T), Ve, scales)
    ref = int8_attention(Q, K, V, scales=scales) if reference is None else reference
    return {"output": out, "vs_int8": metrics(out, ref)}


def class_histograms_grouped(Z, grid, split, thresholds) -> np.ndarray:
    """Per channel, how many units have each class 0..3 (unpaired = 3):
    int64 ``(d, 4)`` (:func:`kaleido.golden.ops.class_histograms` with
    per-group thresholds)."""
    grid = check_grid(grid, Z.shape[0])
    hist = np.zeros((Z.shape[1], 4), dtype=np.int64)
    for (sl, _, _, cls), (_, axis) in zip(
        _classes(Z, grid, split, thresholds), group_slices(check_split(split, Z.shape[1])), strict=True
    ):
        for v in (Reuse.NONE, Reuse.PARTIAL, Reuse.FULL):
            hist[sl, v] = (cls == v).sum(axis=0)
        hist[sl, ABSENT] = len(pairs(grid, axis)[2])
    return hist


def grouped_op_counts(Q, K, grid, split, thresholds) -> dict:
    """:func:`kaleido.golden.ops.op_counts` with per-group thresholds:
    ``dense``, ``oracle``, ``hw3`` and ``hw4`` nibble multiplies."""
    grid, split = check_qk(Q, K, grid, split)
    hq = class_histograms_grouped(Q, grid, split, thresholds)
    hk = class_histograms_grouped(K, grid, split, thresholds)
    return {kind: int(np.einsum("cq,ck,qk->", hq, hk, table)) for kind, table in COSTS.items()}
