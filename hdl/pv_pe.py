"""The P V array's PE: the Kaleido PE's P V mode alone (issue 43, lever 1)."""

from types import SimpleNamespace

from amaranth import Cat, Const, Module, Mux, Signal, signed

from .encoding import SlotKind
from .pe import KaleidoPE, PEPorts

__all__ = ["PvPE"]


class PvPE(PEPorts):
    """:class:`~kaleido.hdl.pe.KaleidoPE` on ``P V`` beats only: the same
    ports, latency and tiles for every beat the P V dispatcher sends
    (``ctl.pv`` = 1, phase T3, FULL8, or DUAL_LO when ``config.pv_pairs``),
    without what those beats never use: the accumulators R1..R3 (a P V
    beat adds to R0 only and its drain clears R0, so they stay 0), the
    per-register part decoders and register moves, a second operand select
    (multiplier B takes A's row operand unless the beat is paired) and the
    forwarding of the ``Q K^T`` row tags (and, unpaired, of the pairs' ``k1``
    and ``kb``). The core's P V arrays are built of it
    (:class:`~kaleido.hdl.pv_array.PvArray`); ``tb/test_pv_pe.py`` checks
    it against :class:`KaleidoPE` beat for beat.

    Parameters
    ----------
    config : KaleidoConfig
        ``acc_width`` and ``pv_pairs`` are read from it.
    """

    def elaborate(self, platform):
        m = Module()
        self._forward(m)
        w = self._operands(m)
        self._product_register(m, w)
        self._accumulator(m, w)
        return m

    def _forward(self, m: Module) -> None:
        """Operands and control east and south, the fields a P V beat uses."""
        row, col, ctl, pairs = self.row_in, self.col_in, self.ctl_in, self._config.pv_pairs
        m.d.sync += [self.row_out.r0.eq(row.r0), self.row_out.r1.eq(row.r1), self.row_out.s.eq(row.s)]
        m.d.sync += [self.col_out.k.eq(col.k), self.col_out.k0.eq(col.k0), self.ctl_out.eq(ctl)]
        if pairs:
            m.d.sync += [self.col_out.k1.eq(col.k1), self.col_out.kb.eq(col.kb)]

    def _operands(self, m: Module) -> SimpleNamespace:
        """The multipliers' operands: ``r0``, ``r1`` or ``s`` as ``k0``
        says times V's two nibbles; a paired beat's as
        :meth:`KaleidoPE._pair_operands`."""
        row, col, ctl = self.row_in, self.col_in, self.ctl_in
        op = KaleidoPE._operand(m, col.k0, row, "op")
        nib_a, nib_b = Signal(signed(5)), Signal(signed(5))
        m.d.comb += [
            nib_a.eq(Cat(col.k[0:4], Const(0, 1)).as_signed()),
            nib_b.eq(Cat(col.k[4:8], col.k[7]).as_signed()),
        ]
        if not self._config.pv_pairs:
            return SimpleNamespace(a=op, b=op, nib_a=nib_a, nib_b=nib_b, pair=Const(0, 1))
        pair = Signal()
        m.d.comb += pair.eq(ctl.kind == SlotKind.DUAL_LO)
        x_a = KaleidoPE._nibble_operand(m, col.k0, row, 0, "x_a")
        x_b = KaleidoPE._nibble_operand(m, col.k1, row, 4, "x_b")
        a, b = Signal(signed(9)), Signal(signed(9))
        na, nb = Signal(signed(5)), Signal(signed(5))
        m.d.comb += [
            a.eq(Mux(pair, col.k.as_signed(), op)),
            b.eq(Mux(pair, col.kb.as_signed(), op)),
            na.eq(Mux(pair, Cat(x_a, Const(0, 1)), nib_a)),
            nb.eq(Mux(pair, Cat(x_b, Const(0, 1)), nib_b)),
        ]
        return SimpleNamespace(a=a, b=b, nib_a=na, nib_b=nb, pair=pair)

    def _product_register(self, m: Module, w: SimpleNamespace) -> None:
        """The two products, ``slot``, ``last``, the phase and whether the beat is paired, registered."""
        ctl = self.ctl_in
        w.p_a, w.p_b = Signal(signed(14)), Signal(signed(14))
        w.en, w.last, w.pair_r = Signal(), Signal(), Signal()
        w.phase = Signal.like(ctl.phase)
        self.enables = ([w.en], [w.en])  # R0's enables, as KaleidoPE.enables, for activity probes (tb/activity.py)
        m.d.sync += [
            w.p_a.eq(w.a * w.nib_a),
            w.p_b.eq(w.b * w.nib_b),
            w.en.eq(ctl.slot),
            w.last.eq(ctl.last),
            w.phase.eq(ctl.phase),
            w.pair_r.eq(w.pair),
        ]

    def _accumulator(self, m: Module, w: SimpleNamespace) -> None:
        """R0 adds ``pA + pB`` (``pB`` shifted by 4 unless paired); ``last`` drains it and clears it."""
        W = self._config.acc_width
        p_b_sh = Signal(signed(18))
        m.d.comb += p_b_sh.eq(Mux(w.pair_r, w.p_b, w.p_b << 4))
        r0, new = Signal(signed(W), name="r0"), Signal(signed(W), name="r0_next")
        m.d.comb += new.eq(r0 + Mux(w.en, w.p_a + p_b_sh, 0))
        with m.If(w.last):
            m.d.sync += [self.tile.valid.eq(1), self.tile.phase.eq(w.phase), self.tile.value.eq(new), r0.eq(0)]
        with m.Else():
            m.d.sync += [self.tile.valid.eq(0), r0.eq(new)]
