"""Golden reuse attention, quality metrics, the skip baselines of paper
fig. 9 and the windowed classifier of paper eq. 5 (spec sec. 3-4)."""

from __future__ import annotations

import dataclasses
import numbers

import numpy as np

from ..checks import as_int8, check_grid, check_qk, check_scales, check_split, check_thresholds
from ..encoding import ABSENT, Reuse
from ..loopnest import group_slices
from .ops import t1_cost, t2_cost, t3_cost
from .reuse import effective, exact_matmul, follower_classes

__all__ = [
    "AttentionResult",
    "metrics",
    "softmax_attention",
    "reuse_attention",
    "skip_products",
    "skip_baselines",
    "oracle_product_costs",
    "windowed_classify",
    "windowed_effective",
]


def metrics(out: np.ndarray, ref: np.ndarray) -> dict:
    """MSE, PSNR (peak = max |ref|), cosine similarity and max abs error."""
    out = np.asarray(out, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if out.shape != ref.shape:
        raise ValueError(f"output and reference shapes differ: {out.shape!r} vs {ref.shape!r}")
    diff = out - ref
    mse = float(np.mean(diff * diff))
    peak = float(np.max(np.abs(ref)))
    psnr = float("inf") if mse == 0 else float(10 * np.log10(peak * peak / mse))
    denom = float(np.linalg.norm(out) * np.linalg.norm(ref))
    cosine = 1.0 if denom == 0 else float(np.sum(out * ref) / denom)
    return {"mse": mse, "psnr": psnr, "cosine": cosine, "max_abs": float(np.max(np.abs(diff)))}


def softmax_attention(logits: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Row softmax of float ``logits`` times ``values`` (float64)."""
    logits = logits - logits.max(axis=1, keepdims=True)
    p = np.exp(logits)
    p /= p.sum(axis=1, keepdims=True)
    return p @ values


def _int8_attention(S, V, scales):
    qs, ks, vs = scales
    d = V.shape[1]
    return softmax_attention(S.astype(np.float64) * (qs * ks / np.sqrt(d)), V.astype(np.float64) * vs)


@dataclasses.dataclass(frozen=True)
class AttentionResult:
    """Outputs of :func:`reuse_attention` (all float64 ``(N, d)``).

    Members
    -------
    output : reuse attention (reuse on Q, K and V)
    int8_reference : int8 attention without reuse
    float_reference : float attention without quantisation, or None when no
        float tensors were given
    metrics : ``{"vs_int8": {...}, "vs_float": {...}}`` from :func:`metrics`
    """

    output: np.ndarray
    int8_reference: np.ndarray
    float_reference: np.ndarray | None
    metrics: dict


def reuse_attention(Q, K, V, grid, split, F=5, P=3, *, scales, reference=None) -> AttentionResult:
    """Float attention output with channel-wise reuse on Q (row side), K and
    V (column side), and its two references.

    ``scales`` are the per-tensor quantisation scales ``(q, k, v)``;
    ``reference`` optionally gives the float ``(Q, K, V)`` before
    quantisation for the float reference.
    """
    grid, split = check_qk(Q, K, grid, split)
    as_int8("V", V)
    if V.shape != Q.shape:
        raise ValueError(f"V must have the shape of Q, {Q.shape!r}, not {V.shape!r}")
    F, P = check_thresholds(F, P)
    scales = check_scales(scales)
    Qe = effective(Q, grid, split, F, P, side="row")
    Ke = effective(K, grid, split, F, P, side="column")
    Ve = effective(V, grid, split, F, P, side="column")
    out = _int8_attention(exact_matmul(Qe, Ke.T), Ve, scales)
    ref8 = _int8_attention(exact_matmul(Q, K.T), V, scales)
    result = {"vs_int8": metrics(out, ref8)}
    ref_f = None
    if reference is not None:
        Qf, Kf, Vf = (np.asarray(x, dtype=np.float64) for x in reference)
        if not (Qf.shape == Kf.shape == Vf.shape == Q.shape):
            raise ValueError(
                f"reference tensors must all have shape {Q.shape!r}, not {Qf.shape!r}, {Kf.shape!r}, {Vf.shape!r}"
            )
        ref_f = softmax_attention(Qf @ Kf.T / np.sqrt(Q.shape[1]), Vf)
        result["vs_float"] = metrics(out, ref_f)
        result["int8_vs_float"] = metrics(ref8, ref_f)
    return AttentionResult(out, ref8, ref_f, result)


# ---------------------------------------------------------------------------
# Per-product oracle costs and the two skip baselines of paper fig. 9
# ---------------------------------------------------------------------------

#: oracle cost in nibble multiplies of one token product, by (row role, column role)
_PRODUCT_COST = np.zeros((4, 4), dtype=np.int64)
for _q in (0, 1, 2):
    for _k in (0, 1, 2):
        _PRODUCT_COST[_q, _k] = t3_cost("oracle", Reuse(_q), Reuse(_k))
    _PRODUCT_COST[_q, ABSENT] = t2_cost(Reuse(_q))
    _PRODUCT_COST[ABSENT, _q] = t1_cost(Reuse(_q))
_PRODUCT_COST[ABSENT, ABSENT] = 2


def _row_chunks(n, d, budget=1 << 22):
    step = max(1, budget // max(1, n * d))
    for i0 in range(0, n, step):
        yield slice(i0, min(n, i0 + step))


def oracle_product_costs(Q, K, grid, split, F=5, P=3):
    """Yield ``(rows, cost)`` chunks: the oracle's nibble-multiply cost of
    every token product ``(i, j, c)``, int64 ``(rows, N, d)``. Their sum is
    ``op_counts(...)["oracle"]``."""
    grid, split = check_qk(Q, K, grid, split)
    rq, rk = follower_classes(Q, grid, split, F, P), follower_classes(K, grid, split, F, P)
    n, d = Q.shape
    for rows in _row_chunks(n, d):
        yield rows, _PRODUCT_COST[rq[rows, None, :], rk[None, :, :]]


def skip_products(Q, K, order_key, budget):
    """Scores with ``budget`` products skipped: those of smallest key, ties
    broken by flat (i, j, c) order. ``order_key`` yields int64 key chunks."""
    n, d = Q.shape
    chunks = list(order_key())
    top = max(int(key.max()) for _, key in chunks) + 1
    hist = np.zeros(top, dtype=np.int64)
    for _, key in chunks:
        hist += np.bincount(key.ravel(), minlength=top)
    cum = np.cumsum(hist)
    t = int(np.searchsorted(cum, budget, side="left"))  # first key value whose cumsum reaches budget
    below = int(cum[t - 1]) if t > 0 else 0
    ties_left = budget - below
    S = exact_matmul(Q, K.T)
    for rows, key in chunks:
        prod = Q[rows, None, :].astype(np.int32) * K[None, :, :].astype(np.int32)
        skip = key < t
        tie = key == t
        if ties_left > 0 and tie.any():
            rank = np.cumsum(tie.ravel()).reshape(tie.shape)
            take = tie & (rank <= ties_left)
            ties_left -= int(take.sum())
            skip |= take
        S[rows] -= np.where(skip, prod, 0).sum(axis=2)
    return S


def skip_baselines(Q, K, V, grid, split, F=5, P=3, *, scales) -> dict:
    """Paper fig. 9: reuse against two skip baselines at the oracle's saved
    nibble-multiply ratio on ``Q K^T``.

    * ``skip_lowest``: skip the products of lowest magnitude;
    * ``skip_reused``: skip the products the reuse would reuse (oracle cost
      0 first, then the cost-1 ones of lowest magnitude);
    * ``reuse``: reuse on Q and K (V exact, like the baselines).

    Every product skipped saves its two nibble multiplies; the count skipped
    equals the oracle's saved nibble multiplies / 2. Returns the saved ratio
    and, per method, metrics against int8 attention without reuse. Memory is
    bounded (row chunks); time grows as ``N^2 d``, so use it on small heads.
    """
    grid, split = check_qk(Q, K, grid, split)
    as_int8("V", V)
    F, P = check_thresholds(F, P)
    scales = check_scales(scales)
    n, d = Q.shape
    cost_chunks = list(oracle_product_costs(Q, K, grid, split, F, P))
    oracle = sum(int(c.sum()) for _, c in cost_chunks)
    dense = 2 * n * n * d
    budget = (dense - oracle + 1) // 2

    def magnitude():
        for rows, _ in cost_chunks:
            yield rows, np.abs(Q[rows, None, :].astype(np.int64) * K[None, :, :])

    def reused_first():  # cost 0 -> key 0; cost 1 -> 1 + |p|; cost 2 -> never reached first
        for rows, cost in cost_chunks:
            mag = np.abs(Q[rows, None, :].astype(np.int64) * K[None, :, :])
            yield rows, np.where(cost == 0, 0, np.where(cost == 1, 1 + mag, (1 << 15) + mag))

    ref = _int8_attention(exact_matmul(Q, K.T), V, scales)
    outs = {
        "reuse": _int8_attention(
            exact_matmul(effective(Q, grid, split, F, P, side="row"), effective(K, grid, split, F, P).T), V, scales
        ),
        "skip_lowest": _int8_attention(skip_products(Q, K, magnitude, budget), V, scales),
        "skip_reused": _int8_attention(skip_products(Q, K, reused_first, budget), V, scales),
    }
    return {
        "saved_ratio": 1 - oracle / dense,
        "skipped_products": budget,
        **{name: metrics(out, ref) for name, out in outs.items()},
    }


# ---------------------------------------------------------------------------
# Windowed classifier (paper eq. 5), a golden-model option
# ---------------------------------------------------------------------------


def windowed_classify(Z, grid, split, *, w=2, theta1=2.0, theta2=8.0):
    """Eq. 5 classifier: along each group's direction, tokens form windows
    of ``w`` (starting at coordinates divisible by ``w``; the last may be
    shorter); a window's first token is its anchor; every follower in it
    gets FULL if the window's population standard deviation at that channel
    is below ``theta1``, PARTIAL if below ``theta2``, else NONE (thresholds
    in int8 units). Returns uint8 ``(N, d)`` with ABSENT for anchors, and
    int64 ``(N,)`` per group of each token's anchor index, as a tuple
    ``(cls, anchor_of)`` where ``anchor_of`` has shape ``(3, N)``."""
    as_int8("Z", Z)
    n, d = Z.shape
    grid = check_grid(grid, n)
    split = check_split(split, d)
    if not isinstance(w, numbers.Integral) or isinstance(w, bool) or w < 2:
        raise ValueError(f"window size w must be an integer >= 2, not {w!r}")
    if not (isinstance(theta1, numbers.Real) and isinstance(theta2, numbers.Real) and 0 <= theta1 < theta2):
        raise ValueError(f"thresholds must satisfy 0 <= theta1 < theta2, not {theta1!r}, {theta2!r}")
    cls = np.full((n, d), ABSENT, dtype=np.uint8)
    anchor_of = np.zeros((3, n), dtype=np.int64)
    idx = np.arange(n).reshape(grid)
    for g, (sl, axis) in enumerate(group_slices(split)):
        coord = np.moveaxis(np.indices(grid), 0, -1)[..., axis].ravel()
        stride = int(np.prod(grid[axis + 1 :]))
        anchor = idx.ravel() - (coord % w) * stride
        anchor_of[g] = anchor
        # window std per (anchor, channel): group tokens by anchor
        zs = Z[:, sl].astype(np.float64)
        count = np.bincount(anchor, minlength=n).astype(np.float64)
        mean = np.stack([np.bincount(anchor, zs[:, c], minlength=n) for c in range(zs.shape[1])], 1)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean /= count[:, None]
            sq = (
                np.stack(
                    [np.bincount(anchor, (zs[:, c] - mean[anchor, c]) ** 2, minlength=n) for c in range(zs.shape[1])], 1
                )
                / count[:, None]
            )
        std = np.sqrt(sq[anchor])
        c_g = np.where(std < theta1, Reuse.FULL, np.where(std < theta2, Reuse.PARTIAL, Reuse.NONE))
        follower = coord % w != 0
        cls[follower, sl] = c_g[follower]
    return cls, anchor_of


def windowed_effective(Z, grid, split, *, w=2, theta1=2.0, theta2=8.0, side="column"):
    """Effective operands under :func:`windowed_classify`, by the same
    column-side (or row-side) rule as :func:`effective`."""
    from .reuse import effective_values

    cls, anchor_of = windowed_classify(Z, grid, split, w=w, theta1=theta1, theta2=theta2)
    out = Z.copy()
    for g, (sl, _) in enumerate(group_slices(check_split(split, Z.shape[1]))):
        f = np.nonzero(cls[:, sl.start] != ABSENT)[0]
        a = anchor_of[g][f]
        out[f, sl] = effective_values(Z[a, sl], Z[f, sl], cls[f, sl], side)
    return out
