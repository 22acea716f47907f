"""Golden model of the reuse-aware PE (spec sections 5-6): a grid of PEs
sharing one slot stream, as in one array pass. The decode table (which
register adds which part of a product) is :mod:`kaleido.encoding`'s."""

from __future__ import annotations

import numpy as np

from ..encoding import Part, Phase, PvSelect, SlotKind, check_accumulators, register_parts

__all__ = ["PEModel", "wrap", "pv_row_sum", "pv_pair_operand"]

# lookup table [accumulators][phase, q, k, register] -> Part
_REGS = {
    a: np.array(
        [[[[int(x) for x in register_parts(p, q, k, a)] for k in range(4)] for q in range(4)] for p in Phase],
        dtype=np.uint8,
    )
    for a in (3, 4)
}


def wrap(x: np.ndarray, width: int | None) -> np.ndarray:
    if width is None:
        return x
    m = 1 << width
    return ((x + (m >> 1)) % m) - (m >> 1)


def pv_row_sum(r0, r1, pair: bool) -> np.ndarray:
    """The row port's pre-add field ``s`` of a P V beat (the dispatcher
    sends it, ``kaleido.hdl.layouts.ROW``): ``r0 + r1``, or in a paired
    beat (small-P pairing, ``KaleidoConfig.pv_pairs``) the two 4-bit sums
    of the nibbles, low nibbles in bits 0-3 and high in 4-7: ``(r0 + r1)
    mod 16`` of each half."""
    r0 = np.asarray(r0, dtype=np.int64)
    r1 = np.asarray(r1, dtype=np.int64)
    if not pair:
        return r0 + r1
    return ((r0 + r1) & 0xF) | ((((r0 >> 4) + (r1 >> 4)) & 0xF) << 4)


def pv_pair_operand(r0, r1, sel, half: int) -> np.ndarray:
    """One half's 4-bit row operand of a paired P V beat: ``sel`` (a
    :class:`~kaleido.encoding.PvSelect`, per column) picks the half's
    nibble of ``r0``, ``r1`` or the pre-add (:func:`pv_row_sum`), or 0;
    ``half`` 0 is the low nibbles, 1 the high. Rows along axis 0, columns
    along axis 1."""
    u0 = np.asarray(r0, dtype=np.int64) & 0xFF
    u1 = np.asarray(r1, dtype=np.int64) & 0xFF
    s = pv_row_sum(u0, u1, True)
    x0, x1, xs = ((v >> (4 * half)) & 0xF for v in (u0, u1, s))
    sel = np.asarray(sel)
    return np.select([sel == PvSelect.R0, sel == PvSelect.R1, sel == PvSelect.SUM], [x0, x1, xs], 0)


class PEModel:
    """Vectorised golden PE: a ``(rows, cols)`` grid of PEs sharing the
    phase and slot stream, as in one array pass.

    ``step`` takes per-row ``r0, r1, q0, q1`` and per-column ``k, k0, k1``
    (``k`` the 8-bit column port as int8). ``end_phase`` drains R0 and
    performs the register moves of spec sec. 5.
    """

    def __init__(self, rows: int, cols: int, accumulators: int = 3, acc_width: int | None = None):
        self.accumulators = check_accumulators(accumulators)
        self.accumulators = accumulators
        self.acc_width = acc_width
        self.regs = np.zeros((accumulators, rows, cols), dtype=np.int64)

    @staticmethod
    def products(kind, r0, r1, k):
        """``(mulA, mulB_shifted)``: ``mulA = r0 * lo(k)``; ``mulB = (M1 ? r1 :
        r0) * nib``, nib signed ``k[7:4]`` shifted by 4 in FULL8, unsigned and
        unshifted in DUAL_LO."""
        kb = np.asarray(k, dtype=np.int8).view(np.uint8).astype(np.int64)
        mul_a = np.asarray(r0, dtype=np.int64) * (kb & 0xF)
        if SlotKind(kind) == SlotKind.FULL8:
            nib = np.asarray(k, dtype=np.int8).astype(np.int64) >> 4
            return mul_a, (np.asarray(r0, dtype=np.int64) * nib) << 4
        return mul_a, np.asarray(r1, dtype=np.int64) * (kb >> 4)

    def step(self, phase, kind, r0, r1, k, q0, q1, k0, k1):
        mul_a, mul_b = self.products(kind, np.asarray(r0)[:, None], np.asarray(r1)[:, None], np.asarray(k)[None, :])
        table = _REGS[self.accumulators][int(phase)]
        parts_a = table[np.asarray(q0)[:, None], np.asarray(k0)[None, :]]  # (R, C, regs)
        parts_b = (
            parts_a if SlotKind(kind) == SlotKind.FULL8 else table[np.asarray(q1)[:, None], np.asarray(k1)[None, :]]
        )
        en_a = (parts_a & Part.LO) != 0
        en_b = (parts_b & (Part.HI if SlotKind(kind) == SlotKind.FULL8 else Part.LO)) != 0
        add = np.where(en_a, mul_a[..., None], 0) + np.where(en_b, mul_b[..., None], 0)
        self.regs = wrap(self.regs + np.moveaxis(add, -1, 0), self.acc_width)

    def step_pv(self, r0, r1, k, sel):
        """A P V slot (issue 12): each PE adds ``x * k`` to R0, with ``x``
        its row's ``0, r0, r1`` or ``r0 + r1`` as its column's
        :class:`~kaleido.encoding.PvSelect` ``sel`` says."""
        r0 = np.asarray(r0, dtype=np.int64)[:, None]
        r1 = np.asarray(r1, dtype=np.int64)[:, None]
        sel = np.asarray(sel)[None, :]
        x = np.select([sel == PvSelect.R0, sel == PvSelect.R1, sel == PvSelect.SUM], [r0, r1, r0 + r1], 0)
        self.regs[0] = wrap(self.regs[0] + x * np.asarray(k, dtype=np.int64)[None, :], self.acc_width)

    def step_pv_pair(self, r0, r1, k, kb, k0, k1):
        """A paired P V slot (small-P pairing, ``KaleidoConfig.pv_pairs``):
        two small beats in one. Each PE adds ``x_a * k + x_b * kb`` to R0,
        ``x_a`` the low-nibble operand its column's ``k0`` selects and
        ``x_b`` the high-nibble one ``k1`` selects (:func:`pv_pair_operand`):
        each multiplier takes V (int8) in its 9-bit port and a 4-bit P in
        its 5-bit port."""
        r0 = np.asarray(r0)[:, None]
        r1 = np.asarray(r1)[:, None]
        x_a = pv_pair_operand(r0, r1, np.asarray(k0)[None, :], 0)
        x_b = pv_pair_operand(r0, r1, np.asarray(k1)[None, :], 1)
        add = x_a * np.asarray(k, dtype=np.int64)[None, :] + x_b * np.asarray(kb, dtype=np.int64)[None, :]
        self.regs[0] = wrap(self.regs[0] + add, self.acc_width)

    def end_phase(self, phase) -> np.ndarray:
        phase = Phase(phase)
        r = self.regs
        drained = r[0].copy()
        zero = np.zeros_like(r[0])
        if phase == Phase.T0:
            nxt = [r[1], r[3] if self.accumulators == 4 else zero, r[2]] + ([zero] if self.accumulators == 4 else [])
        elif phase == Phase.T1:
            nxt = [r[2], r[1], zero] + r[3:].tolist()
        elif phase == Phase.T2:
            nxt = [r[1], zero, r[2]] + r[3:].tolist()
        else:
            nxt = [zero] + list(r[1:])
        self.regs = np.array(nxt, dtype=np.int64)
        return drained
