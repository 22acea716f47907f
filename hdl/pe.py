"""The reuse-aware processing element (paper fig. 13, spec sec. 5-6)."""

from amaranth import Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..config import KaleidoConfig
from ._common import as_config
from .encoding import PvSelect, SlotKind, register_parts_decoder
from .layouts import COL, CTL, ROW, tile_layout

__all__ = ["KaleidoPE"]


class KaleidoPE(wiring.Component):
    """One PE: a 2x2 pair group, three (or four) accumulators.

    Operands and control arrive from the west (row) and north (column) and
    leave east and south through registers (one cycle per hop). The PE
    adds ``(enA ? mulA : 0) + (enB ? mulB_shifted : 0)`` to each register
    (spec sec. 6); on a ``last`` beat it loads the phase's finished R0 into
    the drain register ``tile`` (``tile.valid`` pulses one cycle) and
    performs the register moves of spec sec. 5.

    P V mode (``ctl.pv``, issue 12): the row port carries ``r0 = P[i, a]``
    and ``r1 = P[i, f]`` of an anchor/follower token pair, the column port
    ``V`` and, in ``k0``, a :class:`~kaleido.encoding.PvSelect`; the PE
    adds ``x * k`` to R0 with ``x`` one of ``0, r0, r1, r0 + r1`` (the
    pre-add of a FULL V follower). The same two multipliers, with a 9-bit
    row operand; such beats are FULL8 in phase T3, so ``last`` drains R0
    and clears it, leaving R1..R3 alone.

    Parameters
    ----------
    config : KaleidoConfig
        ``acc_width`` and ``accumulators`` are read from it.

    Members
    -------
    row_in, ctl_in : In
        Row port (two int8 operands, two row tags) and control, from the west.
    col_in : In
        Column port (8 bits, two column tags), from the north.
    row_out, ctl_out, col_out : Out
        The same, registered, to the east and south neighbours.
    tile : Out
        Drain register: ``valid``, ``phase``, ``value``.
    """

    def __init__(self, config: KaleidoConfig | None = None):
        config = as_config(config)
        self._config = config
        super().__init__(
            {
                "row_in": In(ROW),
                "ctl_in": In(CTL),
                "col_in": In(COL),
                "row_out": Out(ROW),
                "ctl_out": Out(CTL),
                "col_out": Out(COL),
                "tile": Out(tile_layout(config.acc_width)),
            }
        )

    @property
    def config(self):
        return self._config

    @property
    def latency(self):
        """Cycles from a ``last`` beat at the PE's inputs to ``tile.valid``."""
        return 1

    def elaborate(self, platform):
        m = Module()
        cfg = self._config
        W, n_acc = cfg.acc_width, cfg.accumulators
        row, col, ctl = self.row_in, self.col_in, self.ctl_in

        # forward operands and control (systolic)
        m.d.sync += [self.row_out.eq(row), self.col_out.eq(col), self.ctl_out.eq(ctl)]

        dual = ctl.kind == SlotKind.DUAL_LO
        pv = ctl.pv
        # P V mode: the row operand x is r0, r1, the pre-add r0 + r1 (a FULL
        # V follower) or 0, chosen by the column tag k0 (a PvSelect); 9 bits
        x = Signal(signed(9))
        with m.Switch(col.k0):
            with m.Case(int(PvSelect.R0)):
                m.d.comb += x.eq(row.r0)
            with m.Case(int(PvSelect.R1)):
                m.d.comb += x.eq(row.r1)
            with m.Case(int(PvSelect.SUM)):
                m.d.comb += x.eq(row.r0 + row.r1)
        a_op = Signal(signed(9))
        m.d.comb += a_op.eq(Mux(pv, x, row.r0))
        # multiplier A: a_op * lo(k), unsigned nibble -> 14-bit signed product
        mul_a = Signal(signed(14))
        m.d.comb += mul_a.eq(a_op * Cat(col.k[0:4], Const(0, 1)).as_signed())
        # multiplier B: (M1 ? r1 : a_op) * nib; nib signed k[7:4] in FULL8, unsigned in DUAL_LO
        nib = Signal(signed(5))
        m.d.comb += nib.eq(Mux(dual, Cat(col.k[4:8], Const(0, 1)), Cat(col.k[4:8], col.k[7])).as_signed())
        mul_b = Signal(signed(14))
        m.d.comb += mul_b.eq(Mux(dual, row.r1, a_op) * nib)
        # M4: shift by 4 in FULL8 only
        mul_b_sh = Signal(signed(18))
        m.d.comb += mul_b_sh.eq(Mux(dual, mul_b, mul_b << 4))

        # per register, the parts it adds (spec sec. 5's table, kaleido.encoding)
        parts_a = register_parts_decoder(m, "parts_a", ctl.phase, row.q0, col.k0, n_acc)
        parts_b = register_parts_decoder(m, "parts_b", ctl.phase, row.q1, col.k1, n_acc)

        # one shared sum p = mulA + mulB'; each register adds one of
        # {0, mulA, mulB', p} chosen by its two enables: one adder per register
        both = Signal(signed(19))
        m.d.comb += both.eq(mul_a + mul_b_sh)
        regs = [Signal(signed(W), name=f"r{i}") for i in range(n_acc)]
        new = [Signal(signed(W), name=f"r{i}_next") for i in range(n_acc)]
        for i in range(n_acc):
            en_a = Signal(name=f"en_a{i}")
            en_b = Signal(name=f"en_b{i}")
            addend = Signal(signed(19), name=f"addend{i}")
            # P V mode: R0 adds the whole product x * k; the others add nothing
            pv_en = Const(int(i == 0), 1)
            m.d.comb += [
                en_a.eq(ctl.slot & Mux(pv, pv_en, parts_a[i][0])),
                en_b.eq(ctl.slot & Mux(pv, pv_en, Mux(dual, parts_b[i][0], parts_a[i][1]))),
            ]
            with m.Switch(Cat(en_a, en_b)):
                with m.Case(0b01):
                    m.d.comb += addend.eq(mul_a)
                with m.Case(0b10):
                    m.d.comb += addend.eq(mul_b_sh)
                with m.Case(0b11):
                    m.d.comb += addend.eq(both)
                with m.Default():
                    m.d.comb += addend.eq(0)
            m.d.comb += new[i].eq(regs[i] + addend)

        with m.If(ctl.last):
            m.d.sync += [self.tile.valid.eq(1), self.tile.phase.eq(ctl.phase), self.tile.value.eq(new[0])]
            zero = Const(0, signed(W))
            moves = {  # next value of each register after the phase's drain
                0: [new[1], new[3] if n_acc == 4 else zero, new[2]] + ([zero] if n_acc == 4 else []),
                1: [new[2], new[1], zero] + new[3:],
                2: [new[1], zero, new[2]] + new[3:],
                3: [zero] + new[1:],
            }
            with m.Switch(ctl.phase):
                for p, nxt in moves.items():
                    with m.Case(p):
                        m.d.sync += [r.eq(v) for r, v in zip(regs, nxt, strict=True)]
        with m.Else():
            m.d.sync += [self.tile.valid.eq(0)] + [r.eq(v) for r, v in zip(regs, new, strict=True)]
        return m
