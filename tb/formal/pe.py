"""The PE's arithmetic harnesses: its exact products for every int8 operand
(:class:`PEArithmetic`, Q K^T slots; :class:`PEPvArithmetic`, P V slots,
with :func:`pv_pair_product`).
"""

from __future__ import annotations

from typing import Any

from amaranth import Cat, Const, Module, Mux, Signal, Value, signed
from amaranth.hdl import Assert, Assume
from amaranth.lib import wiring
from amaranth.lib.wiring import In

from kaleido.config import KaleidoConfig


class PEArithmetic(wiring.Component):
    """The PE from reset, one slot that ends its phase, for every int8
    operand value (SMT): a FULL8 slot in T0 drains ``r0 * k``; a DUAL_LO slot
    in T1 whose two column followers are PARTIAL drains the two channels'
    low-nibble products, ``r0 * lo(k) + r1 * hi(k)`` (``k`` carries the two
    channels' low nibbles). Inputs other than the operands are pinned."""

    def __init__(self, dual: bool):
        from kaleido.hdl.layouts import COL, ROW

        self._dual = dual
        super().__init__({"row": In(ROW), "col": In(COL)})

    def elaborate(self, platform: Any) -> Module:
        from amaranth import signed

        from kaleido.hdl.encoding import Phase, SlotKind, Tag
        from kaleido.hdl.pe import KaleidoPE

        m = Module()
        m.submodules.pe = pe = KaleidoPE(KaleidoConfig.one_array())
        first = Signal(init=1)
        m.d.sync += first.eq(0)
        # the tile leaves ``pe.latency`` cycles after the slot (issue 20: 2)
        step = Signal(range(pe.latency + 1))
        with m.If(step < pe.latency):
            m.d.sync += step.eq(step + 1)
        m.d.comb += [pe.row_in.eq(self.row), pe.col_in.eq(self.col)]
        with m.If(first):
            m.d.comb += [pe.ctl_in.slot.eq(1), pe.ctl_in.last.eq(1)]
            if self._dual:
                m.d.comb += [pe.ctl_in.kind.eq(SlotKind.DUAL_LO), pe.ctl_in.phase.eq(Phase.T1)]
                m.d.comb += [Assume(self.col.k0 == Tag.PARTIAL), Assume(self.col.k1 == Tag.PARTIAL)]
            else:
                m.d.comb += [pe.ctl_in.kind.eq(SlotKind.FULL8), pe.ctl_in.phase.eq(Phase.T0)]
        r0, r1 = Signal(signed(8)), Signal(signed(8))
        k = Signal(8)
        with m.If(first):  # the slot's operands, held
            m.d.sync += [r0.eq(self.row.r0), r1.eq(self.row.r1), k.eq(self.col.k)]
        expected = Signal(signed(20))
        if self._dual:
            m.d.comb += expected.eq(r0 * k[:4] + r1 * k[4:])
        else:
            m.d.comb += expected.eq(r0 * k.as_signed())
        with m.If(step == pe.latency):
            m.d.comb += Assert(pe.tile.valid)
            m.d.comb += Assert(pe.tile.value == expected)
        with m.Elif(~first):
            m.d.comb += Assert(~pe.tile.valid)
        return m


class PEPvArithmetic(wiring.Component):
    """The PE from reset, one P V slot that ends its phase (T3), for every
    int8 row operand pair, V value and select (SMT): it drains ``x * k``
    with ``x`` one of ``0, r0, r1, r0 + r1`` (the 9-bit pre-add).

    ``paired``: the PE with small-P pairing (``KaleidoConfig.one_array(pv_pairs=True)``)
    and one paired slot (DUAL_LO), for every row port (``r0``, ``r1``,
    ``s``), two V values and two selects: it drains :func:`pv_pair_product`
    (:meth:`kaleido.golden.pe.PEModel.step_pv_pair`).

    ``pe``: the PE class, :class:`~kaleido.hdl.pe.KaleidoPE` or the P V
    array's :class:`~kaleido.hdl.pv_pe.PvPE`."""

    def __init__(self, paired: bool = False, pe: Any = None):
        from kaleido.hdl.layouts import COL, ROW
        from kaleido.hdl.pe import KaleidoPE

        self.paired, self.pe = paired, pe or KaleidoPE
        super().__init__({"row": In(ROW), "col": In(COL)})

    def elaborate(self, platform: Any) -> Module:
        from kaleido.hdl.encoding import Phase, PvSelect, SlotKind

        m = Module()
        m.submodules.pe = pe = self.pe(KaleidoConfig.one_array(pv_pairs=self.paired))
        first = Signal(init=1)
        m.d.sync += first.eq(0)
        step = Signal(range(pe.latency + 1))
        with m.If(step < pe.latency):
            m.d.sync += step.eq(step + 1)
        m.d.comb += [pe.row_in.eq(self.row), pe.col_in.eq(self.col)]
        if not self.paired:  # the row port as the P V dispatcher drives it: s = r0 + r1
            m.d.comb += pe.row_in.s.eq(self.row.r0 + self.row.r1)
        with m.If(first):
            m.d.comb += [pe.ctl_in.slot.eq(1), pe.ctl_in.last.eq(1), pe.ctl_in.pv.eq(1), pe.ctl_in.phase.eq(Phase.T3)]
            m.d.comb += pe.ctl_in.kind.eq(SlotKind.DUAL_LO if self.paired else SlotKind.FULL8)
        row, col = Signal.like(pe.row_in), Signal.like(pe.col_in)
        with m.If(first):  # the slot's operands, held
            m.d.sync += [row.eq(pe.row_in), col.eq(pe.col_in)]
        expected = Signal(signed(20))
        if self.paired:
            m.d.comb += expected.eq(pv_pair_product(row, col))
        else:
            x = Mux(
                col.k0 == PvSelect.R0, row.r0, Mux(col.k0 == PvSelect.R1, row.r1, Mux(col.k0 == PvSelect.SUM, row.s, 0))
            )
            m.d.comb += expected.eq(x * col.k.as_signed())
        with m.If(step == pe.latency):
            m.d.comb += [Assert(pe.tile.valid), Assert(pe.tile.value == expected)]
        with m.Elif(~first):
            m.d.comb += Assert(~pe.tile.valid)
        return m


def pv_pair_product(row: Any, col: Any) -> Value:
    """What a paired P V beat (DUAL_LO) must add in a PE: the low nibble of
    the operand ``k0`` selects (``r0``, ``r1``, ``s``; 0 for SKIP) times
    ``k`` plus the high nibble of the one ``k1`` selects times ``kb``
    (:func:`kaleido.golden.pe.pv_pair_operand`)."""
    from kaleido.hdl.encoding import PvSelect

    def nibble(sel: Any, lo: int) -> Value:
        ops = [Cat(x.as_unsigned()[lo : lo + 4], Const(0, 1)).as_signed() for x in (row.r0, row.r1, row.s)]
        return Mux(sel == PvSelect.R0, ops[0], Mux(sel == PvSelect.R1, ops[1], Mux(sel == PvSelect.SUM, ops[2], 0)))

    return nibble(col.k0, 0) * col.k.as_signed() + nibble(col.k1, 4) * col.kb.as_signed()
