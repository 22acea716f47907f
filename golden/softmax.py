"""Bit-exact fixed-point softmax and P V, as the hardware will compute them
(issue 12, spec sec. 12; the format is :class:`kaleido.config.SoftmaxFormat`).

Per row ``i`` of the integer scores ``S`` (``Q K^T`` of int8 operands):

1. ``m = max_j S[i, j]``, ``d_j = m - S[i, j] >= 0``;
2. base-2 exponent: ``t_j = d_j * C`` with ``C = round(scale * log2(e) *
   2^exp_frac_bits)`` (``scale = q_scale * k_scale / sqrt(d)``, one constant
   per head), rounded to ``lut_bits`` fractional bits: ``n_j`` (integer part)
   and ``k_j`` (fraction index);
3. ``e_j = LUT[k_j] >> n_j`` with ``LUT[k] = round(2^lut_width *
   2^(-k / 2^lut_bits))``: ``2^(-t_j)`` in ``lut_width`` fractional bits;
4. ``p_j = round(e_j * (2^p_bits - 1) / 2^lut_width)``: the P operand, an
   unsigned ``p_bits`` integer with scale ``1 / (2^p_bits - 1)`` relative to
   the row's largest probability (the normalisation is deferred);
5. ``z = sum_j p_j`` and ``r = floor(2^recip_bits / z)``: one reciprocal per
   row;
6. ``O[i, c] = round((sum_j p_j V[j, c]) * r / 2^(recip_bits - out_frac_bits))``:
   integer O with scale ``v_scale / 2^out_frac_bits``.

Normalising by the sum of the quantised ``p`` (not of the exact
exponentials) makes each row of ``p / z`` sum to one exactly, so the
quantisation of P costs no gain error. With reuse on V, ``V`` is
V with FULL-only reuse (column side): a FULL follower
token uses its anchor's value (:func:`~kaleido.golden.pv.v_effective`),
which is exactly what pre-adding ``p`` of follower and anchor computes;
PARTIAL followers keep their own V (the rule of docs/DESIGN.md).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..checks import as_int8, check_qkv, check_scales, check_thresholds
from ..config import SoftmaxFormat
from .attention import metrics, softmax_attention
from .grouped import grouped_scores
from .pv import v_effective
from .reuse import exact_matmul, reuse_scores

__all__ = [
    "exp2_table",
    "head_constant",
    "FixedSoftmax",
    "fixed_softmax",
    "fixed_attention",
    "float_softmax",
    "fixed_reuse_attention",
    "head_p",
]


def exp2_table(fmt: SoftmaxFormat) -> np.ndarray:
    """``LUT[k] = round(2^lut_width * 2^(-k / 2^lut_bits))``, int64: the
    configuration's :meth:`~kaleido.config.SoftmaxFormat.exp2_table`, the
    table the RTL's ROM holds."""
    return np.array(fmt.exp2_table(), dtype=np.int64)


def head_constant(logit_scale: float, fmt: SoftmaxFormat) -> int:
    """The per-head constant ``C = round(logit_scale * log2(e) *
    2^exp_frac_bits)`` (a register in the hardware)."""
    if not isinstance(logit_scale, (int, float, np.floating)) or not math.isfinite(logit_scale) or logit_scale <= 0:
        raise ValueError(f"logit_scale must be a finite positive number, not {logit_scale!r}")
    c = round(float(logit_scale) * math.log2(math.e) * (1 << fmt.exp_frac_bits))
    if not 1 <= c < (1 << fmt.constant_bits):
        raise ValueError(
            f"logit_scale {logit_scale!r} gives the constant {c}, outside 1..2^{fmt.constant_bits} - 1 "
            f"(exp_frac_bits {fmt.exp_frac_bits})"
        )
    return c


@dataclasses.dataclass(frozen=True)
class FixedSoftmax:
    """One head's fixed-point softmax: the P operand ``p`` (int64 ``(N, N)``,
    ``0 .. 2^p_bits - 1``), the row sums ``z`` and reciprocals ``r`` (int64
    ``(N,)``) and the per-head constant."""

    p: np.ndarray
    z: np.ndarray
    r: np.ndarray
    constant: int
    fmt: SoftmaxFormat

    @property
    def probabilities(self) -> np.ndarray:
        """float64 ``p / z``: what the hardware's softmax is, as numbers."""
        return self.p / self.z[:, None]


def fixed_softmax(S: np.ndarray, logit_scale: float, fmt: SoftmaxFormat | None = None) -> FixedSoftmax:
    """The fixed-point softmax of integer scores ``S`` (``(N, N)``) whose
    real logits are ``S * logit_scale``."""
    fmt = fmt or SoftmaxFormat()
    S = np.asarray(S)
    if S.ndim != 2 or not np.issubdtype(S.dtype, np.integer):
        raise TypeError(f"S must be a 2-D integer array, not {S.dtype} {S.shape!r}")
    c = head_constant(logit_scale, fmt)
    d = S.max(axis=1, keepdims=True).astype(np.int64) - S.astype(np.int64)
    shift = fmt.exp_frac_bits - fmt.lut_bits
    t = (d * c + (1 << (shift - 1))) >> shift  # exponent, lut_bits fractional bits, rounded
    n, k = t >> fmt.lut_bits, t & ((1 << fmt.lut_bits) - 1)
    e = np.where(n <= fmt.lut_width, exp2_table(fmt)[k] >> np.minimum(n, 63), 0)
    p = (e * fmt.p_max + (1 << (fmt.lut_width - 1))) >> fmt.lut_width
    z = p.sum(axis=1)
    r = (1 << fmt.recip_bits) // z  # z >= p_max: the row's maximum has d = 0
    return FixedSoftmax(p, z, r, c, fmt)


def fixed_attention(sm: FixedSoftmax, V: np.ndarray) -> np.ndarray:
    """Integer ``O`` (int64 ``(N, d)``, scale ``v_scale / 2^out_frac_bits``)
    of a fixed-point softmax and int8 ``V`` (effective V for reuse)."""
    as_int8("V", V)
    if V.shape[0] != sm.p.shape[1]:
        raise ValueError(f"V must have {sm.p.shape[1]} rows (one per key), not shape {V.shape!r}")
    fmt = sm.fmt
    acc = sm.p @ V.astype(np.int64)  # |acc| <= N * p_max * 128
    shift = fmt.recip_bits - fmt.out_frac_bits
    return (acc * sm.r[:, None] + (1 << (shift - 1))) >> shift


def float_softmax(logits: np.ndarray) -> np.ndarray:
    """Row softmax in float64 (the reference)."""
    x = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(x)
    return e / e.sum(axis=1, keepdims=True)


def fixed_reuse_attention(
    Q, K, V, grid, split, F: int = 5, P: int = 3, *, scales, fmt: SoftmaxFormat | None = None, reference=None
) -> dict:
    """Whole attention as the hardware computes it: reuse scores (reuse on
    Q and K), the fixed-point softmax, P V with reuse on V. Returns the
    integer ``output`` (scale ``v_scale / 2^out_frac_bits``), its float
    value ``real``, and metrics against float attention over the exact int8
    scores and V without reuse (``vs_int8``) and, with ``reference`` (the
    float Q, K, V before quantisation), against float attention
    (``vs_float``)."""
    fmt = fmt or SoftmaxFormat()
    grid, split = check_qkv(Q, K, V, grid, split)
    F, P = check_thresholds(F, P)
    qs, ks, vs = check_scales(scales)
    logit_scale = qs * ks / math.sqrt(Q.shape[1])
    sm = fixed_softmax(reuse_scores(Q, K, grid, split, F, P), logit_scale, fmt)
    out = fixed_attention(sm, v_effective(V, grid, split, F))
    real = out * (vs / (1 << fmt.out_frac_bits))
    ref8 = softmax_attention(exact_matmul(Q, K.T) * logit_scale, V.astype(np.float64) * vs)
    result = {"output": out, "real": real, "vs_int8": metrics(real, ref8)}
    if reference is not None:
        Qf, Kf, Vf = (np.asarray(x, dtype=np.float64) for x in reference)
        result["vs_float"] = metrics(real, softmax_attention(Qf @ Kf.T / math.sqrt(Q.shape[1]), Vf))
    return result


def head_p(Q, K, grid, split, thresholds, *, scales, fmt: SoftmaxFormat | None = None) -> np.ndarray:
    """A head's P operand as the whole-attention array computes it: the
    fixed-point softmax (:func:`fixed_softmax`) of the reuse scores with
    per-group ``thresholds`` (:func:`kaleido.golden.grouped.grouped_scores`),
    int64 ``(N, N)`` in ``0 .. 2^p_bits - 1``. What small-P pairing
    (``KaleidoConfig.pv_pairs``) inspects; the tiled core computes its P
    per tile (:func:`kaleido.golden.core.query_tile_p`)."""
    qs, ks, _ = check_scales(scales)
    S = grouped_scores(Q, K, grid, split, thresholds)
    return fixed_softmax(S, qs * ks / math.sqrt(Q.shape[1]), fmt or SoftmaxFormat()).p
