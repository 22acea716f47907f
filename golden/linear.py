"""Reuse for the linear layers (issue 17; paper sec. 4 "Other Operations",
eq. 5, fig. 20; docs/LINEAR.md).

``Y = X W`` for activations ``X`` (int8 ``(N, d_in)``, tokens on the latent
grid) and weights ``W`` (int8 ``(d_in, d_out)``). Weights carry no
spatio-temporal correlation, so reuse is one-sided, on the activations:
along one grid axis, tokens form windows of ``w = 2`` (an anchor at the
even coordinate, its follower at the next); the follower's class at channel
``c`` comes from the window's standard deviation (eq. 5), which for two
values is ``|a - b| / 2``: FULL below ``theta1``, PARTIAL below ``theta2``,
else NONE. A FULL follower's activation is its anchor's (row-side rule:
PARTIAL is no reuse on the row side), so ``Y[f, :]`` shares the anchor's
products at that channel.

On the array this is ``Q K^T`` with ``Q = X`` and ``K = W^T``: the row
units are the activation pairs, the column units pairs of output features
(``(o, o + 1)``, tag NONE: no reuse; an odd ``d_out`` leaves the last one
unpaired), the contraction is over ``d_in`` in batches of ``batch``
channels. Passes, needs, slots and tiles are the ``Q K^T`` machinery's.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterator

import numpy as np

from ..checks import as_int8, check_grid
from ..config import AXES, LFSR_SEED, KaleidoConfig, LinearReuse
from ..encoding import ABSENT, Reuse
from ..loopnest import Batch, chunks, pairs, unit_tags, units
from .attention import metrics
from .loopnest import Pass, batch_passes, unit_order
from .ops import COSTS
from .reuse import exact_matmul

__all__ = [
    "window_class",
    "window_savings",
    "linear_classes",
    "linear_effective",
    "linear_output",
    "linear_quality",
    "linear_op_counts",
    "weight_units",
    "linear_batches",
    "linear_passes",
]


def window_class(anchor, follower, rule: LinearReuse | None = None) -> np.ndarray:
    """uint8 classes of followers against their anchors (int8, same shape)
    by eq. 5 for a window of two: FULL when ``|a - b| / 2 < theta1``,
    PARTIAL when ``< theta2``, else NONE."""
    rule = rule or LinearReuse()
    diff = np.abs(np.asarray(anchor, dtype=np.int64) - np.asarray(follower, dtype=np.int64))
    full, partial = rule.limits
    return np.where(diff <= full, Reuse.FULL, np.where(diff <= partial, Reuse.PARTIAL, Reuse.NONE)).astype(np.uint8)


def window_savings(X, grid, axis: str, w: int, theta1: float) -> dict:
    """Eq. 5 with windows of ``w`` tokens along ``axis`` (the first token
    of a window its anchor, the last window possibly shorter): the share of
    (token, channel) activations a FULL follower could take from its anchor
    (``reusable``), and the layer input's error when they do
    (``effective``, int8). A measurement for choosing ``w``; the array runs
    windows of two (its PE holds a pair)."""
    as_int8("X", X)
    grid = check_grid(grid, X.shape[0])
    if not isinstance(w, numbers.Integral) or w < 2:
        raise ValueError(f"window size w must be an integer >= 2, not {w!r}")
    ax = AXES[axis]
    idx = np.arange(X.shape[0]).reshape(grid)
    coord = np.moveaxis(np.indices(grid), 0, -1)[..., ax].ravel()
    stride = int(np.prod(grid[ax + 1 :]))
    anchor = idx.ravel() - (coord % w) * stride
    xs = X.astype(np.float64)
    count = np.bincount(anchor, minlength=X.shape[0]).astype(np.float64)[:, None]
    total = np.zeros_like(xs)
    np.add.at(total, anchor, xs)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = total / count
    sq = np.zeros_like(xs)
    np.add.at(sq, anchor, (xs - mean[anchor]) ** 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        std = np.sqrt(sq / count)[anchor]
    follower = (coord % w != 0)[:, None]
    full = follower & (std < theta1)
    eff = np.where(full, X[anchor], X)
    return {"reusable": float(full.mean()), "effective": eff.astype(np.int8)}


def linear_classes(X, grid, rule: LinearReuse | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(units, cls)``: the activation units along ``rule.axis`` (int64
    ``(U, 2)``, anchor order, follower -1 when unpaired) and the per-token
    follower classes (uint8 ``(N, d_in)``, ABSENT where a token is no
    follower)."""
    rule = rule or LinearReuse()
    as_int8("X", X)
    grid = check_grid(grid, X.shape[0])
    axis = AXES[rule.axis]
    anchors, followers, _ = pairs(grid, axis)
    cls = np.full(X.shape, ABSENT, dtype=np.uint8)
    cls[followers] = window_class(X[anchors], X[followers], rule)
    return units(grid, axis), cls


def linear_effective(X, grid, rule: LinearReuse | None = None) -> np.ndarray:
    """Effective activations: a FULL follower takes its anchor's value,
    every other token keeps its own (the row side's rule)."""
    u, cls = linear_classes(X, grid, rule)
    out = X.copy()
    paired = u[u[:, 1] >= 0]
    a, f = paired[:, 0], paired[:, 1]
    out[f] = np.where(cls[f] == Reuse.FULL, X[a], X[f])
    return out


def _check_w(X, W) -> None:
    as_int8("W", W)
    if W.ndim != 2 or W.shape[0] != X.shape[1]:
        raise ValueError(f"W must have shape (d_in, d_out) with d_in = {X.shape[1]}, not {W.shape!r}")


def linear_output(X, W, grid, rule: LinearReuse | None = None) -> np.ndarray:
    """Integer ``Y`` (int64 ``(N, d_out)``) as the array computes it."""
    as_int8("X", X)
    _check_w(X, W)
    return exact_matmul(linear_effective(X, grid, rule), W)


def linear_quality(X, W, grid, rule: LinearReuse | None = None) -> dict:
    """Metrics (MSE, PSNR, cosine) of ``Y`` with reuse against int8 ``X W``
    without reuse."""
    as_int8("X", X)
    _check_w(X, W)
    return metrics(linear_output(X, W, grid, rule).astype(np.float64), exact_matmul(X, W).astype(np.float64))


def weight_units(d_out: int) -> np.ndarray:
    """Column units: output features in pairs ``(o, o + 1)`` (no reuse),
    the last unpaired when ``d_out`` is odd."""
    o = np.arange(0, d_out - 1, 2, dtype=np.int64)
    u = np.stack([o, o + 1], 1)
    if d_out % 2:
        u = np.concatenate([u, np.array([[d_out - 1, -1]], dtype=np.int64)])
    return u


def _histogram(cls, u, channels) -> np.ndarray:
    """Per channel, row units of each class 0..3 (ABSENT: unpaired)."""
    tags = unit_tags(u, cls, channels)
    return np.stack([(tags == v).sum(axis=0) for v in range(4)], 1).astype(np.int64)


def linear_op_counts(X, grid, d_out: int, rule: LinearReuse | None = None) -> dict:
    """Nibble multiplies of ``X W`` per pair group and channel, as
    :func:`kaleido.golden.ops.op_counts` counts ``Q K^T``, with every column
    follower NONE (ABSENT when unpaired): ``dense`` (``2 N d_in d_out``),
    ``oracle`` (every activation reuse at nibble granularity), ``hw3`` and
    ``hw4``."""
    if not isinstance(d_out, numbers.Integral) or d_out < 1:
        raise ValueError(f"d_out must be a positive integer, not {d_out!r}")
    u, cls = linear_classes(X, grid, rule)
    hq = _histogram(cls, u, np.arange(X.shape[1]))  # (d_in, 4)
    hk = np.zeros(4, dtype=np.int64)
    hk[Reuse.NONE] = d_out // 2
    hk[ABSENT] = d_out % 2
    return {kind: int(np.einsum("cq,k,qk->", hq, hk, table)) for kind, table in COSTS.items()}


def linear_batches(config: KaleidoConfig, d_in: int, grid, rule: LinearReuse) -> list[Batch]:
    """The contraction in batches of ``config.batch`` channels (one group:
    the activations have no RoPE channel groups), each with the activation
    units along the rule's axis."""
    axis = AXES[rule.axis]
    u = units(grid, axis)
    return [Batch(i, 0, axis, c.start, c.stop - c.start, u) for i, c in enumerate(chunks(int(d_in), config.batch))]


def linear_passes(
    X, W, grid, config: KaleidoConfig | None = None, rule: LinearReuse | None = None, *, scheduler=False
) -> Iterator[Pass]:
    """Every array pass of ``X W`` (as :func:`kaleido.golden.loopnest.iter_passes`
    for ``Q K^T``): per batch, ``array_rows`` activation units by
    ``array_cols`` weight-column units, the matcher's slots. ``scheduler``
    orders the activation units per batch by the Hamming-clustering
    scheduler (the weight columns are all alike)."""
    cfg = config or KaleidoConfig()
    rule = rule or LinearReuse()
    as_int8("X", X)
    _check_w(X, W)
    grid = check_grid(grid, X.shape[0])
    Xe = linear_effective(X, grid, rule)
    _, xcls = linear_classes(X, grid, rule)
    Wt = np.ascontiguousarray(W.T)
    wcls = np.full(Wt.shape, Reuse.NONE, dtype=np.uint8)
    wu = weight_units(W.shape[1])
    state = LFSR_SEED
    for batch in linear_batches(cfg, X.shape[1], grid, rule):
        u, ch = batch.units, batch.channels
        rows_u = u
        if scheduler:
            perm, state = unit_order(unit_tags(u, xcls, ch), cfg, "row", state)
            rows_u = u[perm]
        yield from batch_passes(batch, (X, Xe, xcls, rows_u), (Wt, Wt, wcls, wu), cfg)
