"""The Q K^T array's PE: the Kaleido PE's Q K^T mode alone (issue 43, lever 1)."""

from types import SimpleNamespace

from amaranth import Const, Module, Mux, Signal, signed

from .encoding import SlotKind
from .pe import KaleidoPE

__all__ = ["QkPE"]


class QkPE(KaleidoPE):
    """:class:`~kaleido.hdl.pe.KaleidoPE` on ``Q K^T`` beats only: the same
    ports, latency, accumulators, register moves and tiles for every beat
    a :class:`~kaleido.hdl.dispatcher.PassDispatcher` sends (``ctl.pv`` =
    0), without what only ``P V`` beats use: the 9-bit row operand and its
    4:1 selects of ``r0``, ``r1`` or the pre-add ``s`` (multiplier A takes
    ``r0``, multiplier B ``r1`` in DUAL_LO, else ``r0``), the paired P V
    operands, the forwarding of ``s``, ``kb`` and ``pv``, and the P V
    enables. The core's ``Q K^T`` arrays are built of it, as its ``P V``
    arrays are of :class:`~kaleido.hdl.pv_pe.PvPE`; ``tb/test_qk_pe.py``
    checks it against :class:`KaleidoPE` beat for beat.

    Parameters
    ----------
    config : KaleidoConfig
        ``acc_width`` and ``accumulators`` are read from it (``pv_pairs``
        is a P V feature: ignored).
    """

    PV_MODE = False

    def _operands(self, m: Module) -> SimpleNamespace:
        """The forwarding of the fields a ``Q K^T`` beat uses, and the
        multipliers' operands: int8 ``r0`` (B: ``r1`` in DUAL_LO) times
        ``k``'s nibbles."""
        row, col, ctl = self.row_in, self.col_in, self.ctl_in
        m.d.sync += [
            self.row_out.r0.eq(row.r0),
            self.row_out.r1.eq(row.r1),
            self.row_out.q0.eq(row.q0),
            self.row_out.q1.eq(row.q1),
            self.col_out.k.eq(col.k),
            self.col_out.k0.eq(col.k0),
            self.col_out.k1.eq(col.k1),
            self.ctl_out.slot.eq(ctl.slot),
            self.ctl_out.kind.eq(ctl.kind),
            self.ctl_out.phase.eq(ctl.phase),
            self.ctl_out.last.eq(ctl.last),
        ]
        dual = ctl.kind == SlotKind.DUAL_LO
        a_op, b_op = Signal(signed(8), name="a_op"), Signal(signed(8), name="b_op")
        m.d.comb += [a_op.eq(row.r0), b_op.eq(Mux(dual, row.r1, row.r0))]
        nib_a, nib = self._nibbles(m, col, dual)
        return SimpleNamespace(dual=dual, pv=Const(0, 1), a_op=a_op, b_op=b_op, nib_a=nib_a, nib=nib)
