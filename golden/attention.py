"""Golden reuse attention, quality metrics, the skip baselines of paper
fig. 9 and the windowed classifier of paper eq. 5 (spec sec. 3-4)."""

from __future__ import annotations

import dataclasses
import numbers

import numpy as np

from ..checks import as_int8, check_grid, check_qk, check_qkv, check_scales, check_split, check_thresholds
from ..encoding import ABSENT, Reuse
from ..loopnest import group_slices
from .ops import op_counts, t1_cost, t2_cost, t3_cost
from .reuse import effective, exact_matmul, follower_classes

__all__ = [
    "AttentionResult",
    "metrics",
    "softmax_attention",
    "reuse_attention",
    "skip_baselines",
    "skip_lowest_keys",
    "skip_reused_keys",
    "PAPER_SKIP_RATIO",
    "oracle_product_costs",
    "windowed_classify",
    "windowed_effective",
]


def _real_array(name: str, value) -> np.ndarray:
    """``value`` as a float64 array: a ``TypeError`` naming a dtype that is
    not integer or floating point (bool, complex, strings, objects), a
    ``ValueError`` naming a NaN or infinite entry and its index."""
    arr = np.asarray(value)
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be an integer or floating-point array, not dtype {arr.dtype}")
    arr = arr.astype(np.float64)
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        index = tuple(int(i) for i in np.unravel_index(bad[0], arr.shape))
        raise ValueError(f"{name} has a non-finite value {float(arr[index])} at index {index} ({bad.size} in all)")
    return arr


def metrics(out: np.ndarray, ref: np.ndarray) -> dict:
    """MSE, PSNR, cosine similarity and max abs error of ``out`` against
    ``ref`` (real arrays of one shape, at least one element; otherwise a
    ``TypeError`` or ``ValueError`` naming the bad argument).

    PSNR's peak is the reference's largest magnitude, ``max |ref|`` (a
    negative peak counts); PSNR is ``inf`` when ``out == ref`` and ``-inf``
    when the reference is all zero and ``out`` is not. Cosine is 1 when both
    are all zero and 0 when only one is (a zero vector has no direction)."""
    out, ref = _real_array("output", out), _real_array("reference", ref)
    if out.shape != ref.shape:
        raise ValueError(f"output and reference shapes differ: {out.shape!r} vs {ref.shape!r}")
    if out.size == 0:
        raise ValueError(f"output and reference are empty (shape {out.shape!r}): no metric is defined")
    diff = out - ref
    mse = float(np.mean(diff * diff))
    peak = float(np.max(np.abs(ref)))
    if mse == 0:
        psnr = float("inf")
    else:
        psnr = float(10 * np.log10(peak * peak / mse)) if peak > 0 else float("-inf")
    norms = float(np.linalg.norm(out)), float(np.linalg.norm(ref))
    if min(norms) == 0:
        cosine = 1.0 if max(norms) == 0 else 0.0
    else:
        cosine = float(np.clip(np.sum(out * ref) / (norms[0] * norms[1]), -1.0, 1.0))
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
    """Outputs of :func:`reuse_attention` (all float64 ``(N, d)``, or one
    row per query of ``rows``).

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


def reuse_attention(Q, K, V, grid, split, F=5, P=3, *, scales, reference=None, rows=None) -> AttentionResult:
    """Float attention output with channel-wise reuse on Q (row side), K and
    V (column side), and its two references.

    ``scales`` are the per-tensor quantisation scales ``(q, k, v)``;
    ``reference`` optionally gives the float ``(Q, K, V)`` before
    quantisation for the float reference. ``rows`` (query token indices)
    restricts the outputs and metrics to those queries, against every key:
    the ``N x N`` scores of a long head need not fit in memory.
    """
    grid, split = check_qkv(Q, K, V, grid, split)
    F, P = check_thresholds(F, P)
    scales = check_scales(scales)
    n = Q.shape[0]
    sel = np.arange(n) if rows is None else np.asarray(rows)
    if sel.ndim != 1 or not np.issubdtype(sel.dtype, np.integer) or not sel.size or sel.min() < 0 or sel.max() >= n:
        raise ValueError(f"rows must be query indices in 0..{n - 1}, not {rows!r}")
    Qe = effective(Q, grid, split, F, P, side="row")
    Ke = effective(K, grid, split, F, P, side="column")
    Ve = effective(V, grid, split, F, P, side="column")
    out = _int8_attention(exact_matmul(Qe[sel], Ke.T), Ve, scales)
    ref8 = _int8_attention(exact_matmul(Q[sel], K.T), V, scales)
    result = {"vs_int8": metrics(out, ref8)}
    ref_f = None
    if reference is not None:
        Qf, Kf, Vf = (np.asarray(x, dtype=np.float64) for x in reference)
        if not (Qf.shape == Kf.shape == Vf.shape == Q.shape):
            raise ValueError(
                f"reference tensors must all have shape {Q.shape!r}, not {Qf.shape!r}, {Kf.shape!r}, {Vf.shape!r}"
            )
        ref_f = softmax_attention(Qf[sel] @ Kf.T / np.sqrt(Q.shape[1]), Vf)
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


#: the paper's fig. 9 saving: 85 % of tokens skipped
PAPER_SKIP_RATIO = 0.85


def _attention_without(S, V, scales, dropped):
    """Float attention of int8 scores with the keys ``dropped`` (bool
    ``(N, N)``, per query row) given no probability mass."""
    qs, ks, vs = scales
    logits = S.astype(np.float64) * (qs * ks / np.sqrt(V.shape[1]))
    logits[dropped] = -np.inf
    return softmax_attention(logits, V.astype(np.float64) * vs)


def _drop_first(order, count):
    """bool ``(N, N)``: per row, the first ``count`` keys of ``order``."""
    dropped = np.zeros(order.shape, dtype=bool)
    np.put_along_axis(dropped, order[:, :count], True, axis=1)
    return dropped


def skip_lowest_keys(S: np.ndarray, ratio: float) -> np.ndarray:
    """Top-k sparse attention: per query row, the ``round(ratio * N)`` keys of
    lowest score (ties: lower key index first) are dropped; bool ``(N, N)``."""
    n = S.shape[1]
    order = np.argsort(S, axis=1, kind="stable")
    return _drop_first(order, min(n - 1, round(ratio * n)))


def skip_reused_keys(K, grid, split, F, P, ratio: float) -> np.ndarray:
    """The reuse's selection criterion, skipping instead of reusing: the
    ``round(ratio * N)`` key tokens the reuse would reuse most (FULL
    follower channels count two, PARTIAL one; then the key index) are
    dropped in every row; bool ``(N, N)``."""
    cls = follower_classes(K, grid, split, F, P)
    reused = 2 * (cls == Reuse.FULL).sum(axis=1) + (cls == Reuse.PARTIAL).sum(axis=1)
    n = K.shape[0]
    order = np.lexsort((np.arange(n), -reused))
    return _drop_first(np.broadcast_to(order, (n, n)), min(n - 1, round(ratio * n)))


def skip_baselines(Q, K, V, grid, split, F=5, P=3, *, scales) -> dict:
    """Paper fig. 9: reuse against two token-level skip baselines (spec sec.
    4), each at the reuse's own saved-op ratio (``"equal"``: the oracle's
    saved nibble multiplies on ``Q K^T``) and at the paper's 85 %
    (``"paper"``):

    * ``skip_lowest``: per query row, the keys of lowest score get no
      probability mass (top-k sparse attention, :func:`skip_lowest_keys`);
    * ``skip_reused``: the key tokens the reuse would reuse are skipped
      instead (:func:`skip_reused_keys`);
    * ``reuse``: reuse on Q and K (V exact, like the baselines).

    Returns ``ratios`` and, per method (and ratio), metrics of the attention
    output against int8 attention without reuse, plus the advantage of the
    reuse (baseline MSE / reuse MSE) against each baseline separately.
    """
    grid, split = check_qkv(Q, K, V, grid, split)
    F, P = check_thresholds(F, P)
    scales = check_scales(scales)
    counts = op_counts(Q, K, grid, split, F, P)
    ratios = {"equal": 1 - counts["oracle"] / counts["dense"], "paper": PAPER_SKIP_RATIO}
    S = exact_matmul(Q, K.T)
    ref = _int8_attention(S, V, scales)
    reuse = metrics(
        _int8_attention(
            exact_matmul(effective(Q, grid, split, F, P, side="row"), effective(K, grid, split, F, P).T), V, scales
        ),
        ref,
    )
    out: dict = {"ratios": ratios, "reuse": reuse, "skip_lowest": {}, "skip_reused": {}, "advantage": {}}
    for label, ratio in ratios.items():
        for name, dropped in (
            ("skip_lowest", skip_lowest_keys(S, ratio)),
            ("skip_reused", skip_reused_keys(K, grid, split, F, P, ratio)),
        ):
            out[name][label] = metrics(_attention_without(S, V, scales, dropped), ref)
        out["advantage"][label] = {
            name: out[name][label]["mse"] / reuse["mse"] if reuse["mse"] else float("inf")
            for name in ("skip_lowest", "skip_reused")
        }
    return out


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
