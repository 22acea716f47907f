"""P V on the array with reuse on V (issue 12; the rule and its op formulas
are in docs/DESIGN.md, "P V on the array").

The rule, chosen by cycles: per pass (``array_rows`` queries by
``array_cols`` channels of one group, :func:`kaleido.loopnest.pv_passes`)
and per unit (an anchor/follower token pair ``(a, f)`` of the group, or an
unpaired token ``a``), with ``p = P[i, a]``, ``p' = P[i, f]``:

* unpaired: one beat, every PE adds ``p V[a, c]`` (select ``R0``);
* a pair whose follower is FULL at every channel of the pass: one beat,
  every PE adds ``(p + p') V[a, c]`` (``SUM``, the pre-add);
* any other pair: two beats. First ``V[a, c]`` with ``SUM`` at the FULL
  channels and ``R0`` elsewhere, then ``V[f, c]`` with ``SKIP`` at the FULL
  channels and ``R1`` elsewhere.

PARTIAL followers are not reused: sharing the high nibble would save a
nibble multiply but no beat (see docs/DESIGN.md), so V's effective values
are :func:`v_effective` (FULL followers take their anchor's value, every
other token keeps its own).
"""

from __future__ import annotations

import numpy as np

from ..checks import as_int8, check_grid, check_split, check_thresholds
from ..config import KaleidoConfig
from ..encoding import PvSelect, Reuse
from ..loopnest import PvPass, pv_passes
from .array import Beat, run_beats
from .reuse import classify, effective

__all__ = ["v_effective", "check_p", "unit_full", "pv_pass_beats", "pv_pass_beat_count", "pv_accumulate"]


def v_effective(V: np.ndarray, grid, split, F: int = 5) -> np.ndarray:
    """V as P V with reuse computes it: a FULL follower (threshold ``F``)
    takes its anchor's value, every other token keeps its own."""
    F, _ = check_thresholds(F, 1)
    return effective(V, grid, split, F, F, side="column")


def check_p(P: np.ndarray, n_keys: int | None = None) -> np.ndarray:
    """The P operand: a 2-D integer array in ``0..127`` (a 7-bit P, the
    PE's signed 8-bit row operand); returned as int64."""
    P = np.asarray(P)
    if P.ndim != 2 or not np.issubdtype(P.dtype, np.integer):
        raise TypeError(f"P must be a 2-D integer array, not {P.dtype} {P.shape!r}")
    if n_keys is not None and P.shape[1] != n_keys:
        raise ValueError(f"P must have {n_keys} columns (one per key), not shape {P.shape!r}")
    if P.size and (P.min() < 0 or P.max() > 127):
        raise ValueError(f"P must lie in 0..127 (p_bits <= 7), not {int(P.min())}..{int(P.max())}")
    return P.astype(np.int64)


def unit_full(V: np.ndarray, units: np.ndarray, channels: np.ndarray, F: int) -> np.ndarray:
    """bool ``(U, n)``: each unit's follower is FULL at each channel
    (False for an unpaired unit)."""
    paired = units[:, 1] >= 0
    a = V[units[:, 0]][:, channels]
    f = V[np.maximum(units[:, 1], 0)][:, channels]
    return (classify(a, f, F, F) == Reuse.FULL) & paired[:, None]


def pv_pass_beat_count(full: np.ndarray, paired: np.ndarray) -> int:
    """Beats of one pass: one per unpaired unit and per pair FULL at every
    channel of the pass, two per other pair."""
    single = ~paired | full.all(axis=1)
    return int(len(paired) * 2 - single.sum())


def pv_pass_beats(P: np.ndarray, V: np.ndarray, ps: PvPass, config: KaleidoConfig, F: int) -> list[Beat]:
    """The array beats of one P V pass (what the RTL's ``PvDispatcher``
    issues): ``array_rows`` x ``array_cols`` with zero padding."""
    R, C = config.array_rows, config.array_cols
    full = unit_full(V, ps.units, ps.channels, F)
    nq, nc = len(ps.queries), len(ps.channels)
    beats: list[Beat] = []
    zr, zc = np.zeros(R, np.uint8), np.zeros(C, np.uint8)
    for u, (a, f) in enumerate(ps.units):
        last = u == len(ps.units) - 1
        r0 = np.zeros(R, np.int8)
        r1 = np.zeros(R, np.int8)
        r0[:nq] = P[ps.queries, a]
        if f >= 0:
            r1[:nq] = P[ps.queries, f]
        ka = np.zeros(C, np.int8)
        ka[:nc] = V[a, ps.channels]
        fu = np.ones(C, bool)  # padding columns hold zeros: FULL
        fu[:nc] = full[u]
        if f < 0:
            steps = [(ka, np.full(C, PvSelect.R0, np.uint8))]
        elif fu.all():
            steps = [(ka, np.full(C, PvSelect.SUM, np.uint8))]
        else:
            kf = np.zeros(C, np.int8)
            kf[:nc] = V[f, ps.channels]
            steps = [
                (ka, np.where(fu, PvSelect.SUM, PvSelect.R0).astype(np.uint8)),
                (kf, np.where(fu, PvSelect.SKIP, PvSelect.R1).astype(np.uint8)),
            ]
        for s, (k, sel) in enumerate(steps):
            is_last = int(last and s == len(steps) - 1)
            beats.append(Beat(1, 0, 3, is_last, r0, r1, zr, zr, k.view(np.uint8), sel, zc, 1))
    return beats


def pv_accumulate(P: np.ndarray, V: np.ndarray, config: KaleidoConfig, grid, split=None, F: int = 5) -> np.ndarray:
    """int64 ``(n_queries, d)``: ``sum_j P[i, j] V_eff[j, c]`` as the array
    computes it, pass by pass through the golden PE grid, partial sums
    added per (query, channel) block. Equals ``P @ v_effective(V)``."""
    as_int8("V", V)
    grid = check_grid(grid, V.shape[0])
    split = check_split(config.split if split is None else split, V.shape[1])
    P = check_p(P, V.shape[0])
    F, _ = check_thresholds(F, 1)
    out = np.zeros((P.shape[0], V.shape[1]), dtype=np.int64)
    R, C = config.array_rows, config.array_cols
    for ps in pv_passes(config, grid, split, P.shape[0]):
        beats = pv_pass_beats(P, V, ps, config, F)
        (_, tile), *rest = run_beats(beats, R, C, accumulators=config.accumulators, acc_width=config.acc_width)
        assert not rest
        out[np.ix_(ps.queries, ps.channels)] += tile[: len(ps.queries), : len(ps.channels)]
    return out
