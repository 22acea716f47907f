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

**Small-P pairing** (``config.pv_pairs``, issue 14): a beat is *small*
when every product it asks for (a column whose select is not ``SKIP`` and
whose V is not 0) has a row operand below :data:`SMALL_P` at every row.
Two small beats share one paired beat (``kind`` DUAL_LO): each PE
multiplier takes V in its 9-bit port and a 4-bit P in its 5-bit port
(:meth:`kaleido.golden.pe.PEModel.step_pv_pair`). The dispatcher holds at
most one small beat back (``pend``) and takes one unit a cycle, so the
pairing is greedy (:func:`pair_pass`); the products, and O, are the same.

PARTIAL followers are not reused: sharing the high nibble would save a
nibble multiply but no beat (see docs/DESIGN.md), so V's effective values
are :func:`v_effective` (FULL followers take their anchor's value, every
other token keeps its own).
"""

from __future__ import annotations

import numpy as np

from ..checks import as_int8, check_grid, check_split, check_thresholds
from ..config import SMALL_P, KaleidoConfig
from ..encoding import PvSelect, Reuse
from ..loopnest import PvPass, pv_passes
from .array import Beat, run_beats
from .reuse import classify, effective

__all__ = [
    "SMALL_P",
    "v_effective",
    "check_p",
    "unit_full",
    "pv_pass_beats",
    "pv_pass_beat_count",
    "pv_accumulate",
    "pair_pass",
]


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


def pair_pass(units: list[tuple[np.ndarray, np.ndarray, list[tuple[np.ndarray, np.ndarray, bool]]]]) -> list[tuple]:
    """Small-P pairing of one pass, as the RTL's ``PvDispatcher`` issues it.
    ``units``: per unit its rows ``(r0, r1)`` and its one or two halves
    ``(k, sel, small)``. Returns the beats in issue order, each
    ``("one", rows, half)`` or ``("pair", rows_a, half_a, rows_b, half_b)``.

    One unit a cycle, one beat a cycle, at most one small half held back
    (``pend``): a one-half unit pairs a small half with ``pend``; a unit
    whose halves are both small pairs them; a unit with one small and one
    big half pairs the small one with ``pend`` (then the big one), or with
    no ``pend`` issues the big one and holds the small one. At the pass's
    last unit a held half that nothing pairs with is issued alone first.
    A held half keeps its rows' low nibbles only (as the RTL's register)."""
    beats: list[tuple] = []
    pend = None
    for u, (r0, r1, halves) in enumerate(units):
        last = u == len(units) - 1
        rows = (r0, r1)
        smalls = [h[2] for h in halves]
        pairs_pend = (len(halves) == 1 and smalls[0]) or (len(halves) == 2 and smalls[0] != smalls[1])
        if last and pend is not None and not pairs_pend:
            beats.append(("one", *pend))
            pend = None
        if len(halves) == 1:
            if smalls[0] and pend is not None:
                beats.append(("pair", *pend, rows, halves[0]))
                pend = None
            else:
                beats.append(("one", rows, halves[0]))
        elif all(smalls):
            beats.append(("pair", rows, halves[0], rows, halves[1]))
        elif any(smalls):
            small, big = (halves[0], halves[1]) if smalls[0] else (halves[1], halves[0])
            if pend is not None:
                beats += [("pair", *pend, rows, small), ("one", rows, big)]
                pend = None
            elif not last:
                beats.append(("one", rows, big))
                pend = ((r0 & 0xF, r1 & 0xF), small)  # the RTL holds the nibbles only
            else:
                beats += [("one", rows, h) for h in halves]
        else:
            beats += [("one", rows, h) for h in halves]
    return beats


def _small(r0: np.ndarray, r1: np.ndarray, k: np.ndarray, sel: np.ndarray) -> bool:
    """Every product of the half (a column selecting an operand, V not 0)
    has a row operand below :data:`SMALL_P` at every row."""
    r0, r1 = r0.astype(np.int64)[:, None], r1.astype(np.int64)[:, None]
    x = np.select([sel == PvSelect.R0, sel == PvSelect.R1, sel == PvSelect.SUM], [r0, r1, r0 + r1], 0)
    return bool((np.where(k[None, :] != 0, x, 0) < SMALL_P).all())


def _pair_beat(rows_a, half_a, rows_b, half_b, last: int) -> Beat:
    """A paired beat: half ``a`` in the low nibbles and ``k``/``k0``, half
    ``b`` in the high nibbles and ``kb``/``k1``."""

    def nibbles(lo, hi):
        return ((lo.astype(np.int64) & 0xF) | ((hi.astype(np.int64) & 0xF) << 4)).astype(np.uint8).view(np.int8)

    (a0, a1), (b0, b1) = rows_a, rows_b
    zr = np.zeros(len(a0), np.uint8)
    k, sel = half_a[0], half_a[1]
    return Beat(1, 1, 3, last, nibbles(a0, b0), nibbles(a1, b1), zr, zr, k, sel, half_b[1], 1, half_b[0])


def pv_pass_beats(P: np.ndarray, V: np.ndarray, ps: PvPass, config: KaleidoConfig, F: int) -> list[Beat]:
    """The array beats of one P V pass (what the RTL's ``PvDispatcher``
    issues): ``array_rows`` x ``array_cols`` with zero padding; with
    ``config.pv_pairs`` small beats paired (:func:`pair_pass`)."""
    R, C = config.array_rows, config.array_cols
    full = unit_full(V, ps.units, ps.channels, F)
    nq, nc = len(ps.queries), len(ps.channels)
    beats: list[Beat] = []
    zr, zc = np.zeros(R, np.uint8), np.zeros(C, np.uint8)
    paired_units = []
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
        if config.pv_pairs:
            paired_units.append((r0, r1, [(k.view(np.uint8), sel, _small(r0, r1, k, sel)) for k, sel in steps]))
            continue
        for s, (k, sel) in enumerate(steps):
            is_last = int(last and s == len(steps) - 1)
            beats.append(Beat(1, 0, 3, is_last, r0, r1, zr, zr, k.view(np.uint8), sel, zc, 1))
    if config.pv_pairs:
        issued = pair_pass(paired_units)
        for i, b in enumerate(issued):
            is_last = int(i == len(issued) - 1)
            if b[0] == "pair":
                _, rows_a, half_a, rows_b, half_b = b
                beats.append(_pair_beat(rows_a, half_a, rows_b, half_b, is_last))
            else:
                (r0, r1), (k, sel, _) = b[1], b[2]
                beats.append(Beat(1, 0, 3, is_last, r0, r1, zr, zr, k, sel, zc, 1))
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
