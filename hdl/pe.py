"""The reuse-aware processing element (paper fig. 13, spec sec. 5-6)."""

from types import SimpleNamespace

from amaranth import Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..config import PE_LATENCY, KaleidoConfig
from ._common import as_config
from .encoding import PvSelect, SlotKind, register_parts_decoder
from .layouts import COL, CTL, ROW, tile_layout

__all__ = ["KaleidoPE", "PEPorts"]


class PEPorts(wiring.Component):
    """A PE's ports (row, control and column in from the west and north,
    out to the east and south, the drain register ``tile``) and latency,
    shared by :class:`KaleidoPE` and :class:`~kaleido.hdl.pv_pe.PvPE`."""

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
        """Cycles from a ``last`` beat at the PE's inputs to ``tile.valid``:
        the product register, then the drain register
        (:data:`kaleido.config.PE_LATENCY`)."""
        return PE_LATENCY


class KaleidoPE(PEPorts):
    """One PE: a 2x2 pair group, three (or four) accumulators.

    Operands and control arrive from the west (row) and north (column) and
    leave east and south through registers (one cycle per hop). The PE
    multiplies, registers the products with each register's enables (the
    product register, issue 20), and the next cycle adds ``(enA ? mulA :
    0) + (enB ? mulB_shifted : 0)`` to each register (spec sec. 6); a
    ``last`` beat loads the phase's finished R0 into the drain register
    ``tile`` (``tile.valid`` pulses one cycle, :attr:`latency` = 2 cycles
    after the beat) and performs the register moves of spec sec. 5.

    P V mode (``ctl.pv``, issue 12): the row port carries ``r0 = P[i, a]``
    and ``r1 = P[i, f]`` of an anchor/follower token pair and their sum
    ``s`` (the dispatcher's pre-add, issue 20), the column port
    ``V`` and, in ``k0``, a :class:`~kaleido.encoding.PvSelect`; the PE
    adds ``x * k`` to R0 with ``x`` one of ``0, r0, r1, r0 + r1`` (the
    pre-add of a FULL V follower). The same two multipliers, with a 9-bit
    row operand; such beats are FULL8 in phase T3, so ``last`` drains R0
    and clears it, leaving R1..R3 alone.

    Paired P V mode (``config.pv_pairs``, a P V beat of kind DUAL_LO:
    small-P pairing, issue 14): two small beats in one. The row port's
    ``r0``, ``r1`` and ``s`` carry one 4-bit operand of each beat (low
    nibbles: beat A, high: beat B), the column port beat A's V in ``k``
    and select in ``k0``, beat B's in ``kb`` and ``k1``. The operands
    swap ports: each multiplier takes a V (int8) in its 9-bit port and its
    beat's selected 4-bit P in its 5-bit port, and R0 adds both products
    unshifted (:meth:`kaleido.golden.pe.PEModel.step_pv_pair`).

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

    @staticmethod
    def _nibble_operand(m: Module, sel, row, lo: int, name: str) -> Signal:
        """A paired beat's 4-bit P: bits ``lo..lo+3`` of ``r0``, ``r1`` or
        ``s`` as ``sel`` (a PvSelect) says, 0 for SKIP."""
        x = Signal(4, name=name)
        with m.Switch(sel):
            with m.Case(PvSelect.R0):
                m.d.comb += x.eq(row.r0[lo : lo + 4])
            with m.Case(PvSelect.R1):
                m.d.comb += x.eq(row.r1[lo : lo + 4])
            with m.Case(PvSelect.SUM):
                m.d.comb += x.eq(row.s[lo : lo + 4])
        return x

    @staticmethod
    def _operand(m: Module, sel, row, name: str) -> Signal:
        """A multiplier's 9-bit row operand: ``r0``, ``r1`` or ``s`` as
        ``sel`` (a PvSelect) says, 0 for SKIP."""
        op = Signal(signed(9), name=name)
        with m.Switch(sel):
            with m.Case(PvSelect.R0):
                m.d.comb += op.eq(row.r0)
            with m.Case(PvSelect.R1):
                m.d.comb += op.eq(row.r1)
            with m.Case(PvSelect.SUM):
                m.d.comb += op.eq(row.s)
        return op

    @staticmethod
    def _nibbles(m: Module, col, dual) -> tuple[Signal, Signal]:
        """The multipliers' nibble ports: A the unsigned lo(k), B the signed
        k[7:4] in FULL8, unsigned in DUAL_LO."""
        nib_a, nib = Signal(signed(5)), Signal(signed(5))
        m.d.comb += [
            nib_a.eq(Cat(col.k[0:4], Const(0, 1)).as_signed()),
            nib.eq(Mux(dual, Cat(col.k[4:8], Const(0, 1)), Cat(col.k[4:8], col.k[7])).as_signed()),
        ]
        return nib_a, nib

    #: whether the PE takes ``P V`` beats (:class:`~kaleido.hdl.qk_pe.QkPE`
    #: does not: no small-P pairs whatever the configuration)
    PV_MODE = True

    def elaborate(self, platform):
        m = Module()
        w = self._operands(m)
        if self.PV_MODE and self._config.pv_pairs:
            self._pair_operands(m, w)
        self._multipliers(m, w)
        self._product_register(m, w)
        self._accumulators(m, w)
        self._drain(m, w)
        return m

    def _operands(self, m: Module) -> SimpleNamespace:
        """The systolic forwarding and the multipliers' operands; returns the namespace the stages share."""
        row, col, ctl = self.row_in, self.col_in, self.ctl_in

        # forward operands and control (systolic)
        m.d.sync += [self.row_out.eq(row), self.col_out.eq(col), self.ctl_out.eq(ctl)]

        dual = ctl.kind == SlotKind.DUAL_LO
        pv = ctl.pv
        # Operand selects (issue 20: no adder in front of the multipliers).
        # Each multiplier's row operand is one of 0, r0, r1 or the pre-add
        # s = r0 + r1 that arrives in the row port (the dispatcher adds it
        # once per row). Multiplier A takes r0, or in P V mode what the
        # column tag k0 (a PvSelect) says; multiplier B takes r1 in DUAL_LO
        # (M1), else A's operand. The selects come from control alone, so
        # each operand is one 4:1 multiplexer after the port registers.
        sel_a = Signal(PvSelect)
        sel_b = Signal(PvSelect)
        m.d.comb += [
            sel_a.eq(Mux(pv, col.k0, PvSelect.R0)),
            sel_b.eq(Mux(dual, PvSelect.R1, sel_a)),
        ]

        a_op, b_op = self._operand(m, sel_a, row, "a_op"), self._operand(m, sel_b, row, "b_op")
        nib_a, nib = self._nibbles(m, col, dual)
        return SimpleNamespace(dual=dual, pv=pv, a_op=a_op, b_op=b_op, nib_a=nib_a, nib=nib)

    def _pair_operands(self, m: Module, w: SimpleNamespace) -> None:
        """Paired P V beats: V into the 9-bit ports, each beat's 4-bit P into the 5-bit ones."""
        row, col = self.row_in, self.col_in
        # paired P V beat: V into the 9-bit ports, each beat's 4-bit P
        # (its nibble of r0, r1 or s, as k0 / k1 select) into the 5-bit ones
        pair = w.pv & w.dual
        x_a = self._nibble_operand(m, col.k0, row, 0, "x_a")
        x_b = self._nibble_operand(m, col.k1, row, 4, "x_b")
        a_in, b_in = Signal(signed(9)), Signal(signed(9))
        nib_a_in, nib_b_in = Signal(signed(5)), Signal(signed(5))
        m.d.comb += [
            a_in.eq(Mux(pair, col.k.as_signed(), w.a_op)),
            b_in.eq(Mux(pair, col.kb.as_signed(), w.b_op)),
            nib_a_in.eq(Mux(pair, Cat(x_a, Const(0, 1)), w.nib_a)),
            nib_b_in.eq(Mux(pair, Cat(x_b, Const(0, 1)), w.nib)),
        ]
        w.a_op, w.b_op, w.nib_a, w.nib = a_in, b_in, nib_a_in, nib_b_in

    def _multipliers(self, m: Module, w: SimpleNamespace) -> None:
        """The two multipliers and the registers' part decoders (spec sec. 5's table)."""
        row, col, ctl, n_acc = self.row_in, self.col_in, self.ctl_in, self._config.accumulators
        # multiplier A: a_op * nib_a -> 14-bit signed product
        mul_a = Signal(signed(14))
        m.d.comb += mul_a.eq(w.a_op * w.nib_a)
        # multiplier B: b_op * nib
        mul_b = Signal(signed(14))
        m.d.comb += mul_b.eq(w.b_op * w.nib)

        # per register, the parts it adds (spec sec. 5's table, kaleido.encoding)
        w.parts_a = register_parts_decoder(m, "parts_a", ctl.phase, row.q0, col.k0, n_acc)
        w.parts_b = register_parts_decoder(m, "parts_b", ctl.phase, row.q1, col.k1, n_acc)
        w.mul_a, w.mul_b = mul_a, mul_b

    def _product_register(self, m: Module, w: SimpleNamespace) -> None:
        """The product register: products, each register's enables, ``last`` and the phase."""
        ctl, n_acc = self.ctl_in, self._config.accumulators
        dual, pv, parts_a, parts_b = w.dual, w.pv, w.parts_a, w.parts_b
        # Product register (issue 20): the products, each register's two
        # enables, ``last`` and the phase are registered, and the
        # accumulators add them the next cycle. The multipliers and the
        # accumulator adders are in different cycles; the tile leaves two
        # cycles after its ``last`` beat (:attr:`latency`).
        p_a = Signal(signed(14))
        p_b = Signal(signed(14))
        dual_r = Signal()
        en_a = [Signal(name=f"en_a{i}") for i in range(n_acc)]
        en_b = [Signal(name=f"en_b{i}") for i in range(n_acc)]
        self.enables = (en_a, en_b)  # the registers' enables, for activity probes (tb/activity.py)
        last = Signal()
        phase = Signal.like(ctl.phase)
        m.d.sync += [p_a.eq(w.mul_a), p_b.eq(w.mul_b), dual_r.eq(dual), last.eq(ctl.last), phase.eq(ctl.phase)]
        for i in range(n_acc):
            # P V mode: R0 adds the whole product x * k; the others add nothing
            pv_en = Const(int(i == 0), 1)
            m.d.sync += [
                en_a[i].eq(ctl.slot & Mux(pv, pv_en, parts_a[i][0])),
                en_b[i].eq(ctl.slot & Mux(pv, pv_en, Mux(dual, parts_b[i][0], parts_a[i][1]))),
            ]
        w.p_a, w.p_b, w.dual_r, w.en_a, w.en_b, w.last, w.phase = p_a, p_b, dual_r, en_a, en_b, last, phase

    def _accumulators(self, m: Module, w: SimpleNamespace) -> None:
        """The accumulators' adders: each register's next value, from its two enables."""
        W, n_acc = self._config.acc_width, self._config.accumulators
        p_a, p_b, dual_r, en_a, en_b = w.p_a, w.p_b, w.dual_r, w.en_a, w.en_b
        # M4: multiplier B's product shifted by 4 in FULL8 only
        p_b_sh = Signal(signed(18))
        m.d.comb += p_b_sh.eq(Mux(dual_r, p_b, p_b << 4))
        # one shared sum p = pA + pB'; each register adds one of {0, pA,
        # pB', p} chosen by its two enables: one adder per register
        both = Signal(signed(19))
        m.d.comb += both.eq(p_a + p_b_sh)
        regs = [Signal(signed(W), name=f"r{i}") for i in range(n_acc)]
        new = [Signal(signed(W), name=f"r{i}_next") for i in range(n_acc)]
        for i in range(n_acc):
            addend = Signal(signed(19), name=f"addend{i}")
            with m.Switch(Cat(en_a[i], en_b[i])):
                with m.Case(0b01):
                    m.d.comb += addend.eq(p_a)
                with m.Case(0b10):
                    m.d.comb += addend.eq(p_b_sh)
                with m.Case(0b11):
                    m.d.comb += addend.eq(both)
                with m.Default():
                    m.d.comb += addend.eq(0)
            m.d.comb += new[i].eq(regs[i] + addend)
        w.regs, w.new = regs, new

    def _drain(self, m: Module, w: SimpleNamespace) -> None:
        """The drain: on ``last`` R0 into ``tile`` and the register moves of spec sec. 5."""
        W, n_acc = self._config.acc_width, self._config.accumulators
        regs, new, phase = w.regs, w.new, w.phase
        with m.If(w.last):
            m.d.sync += [self.tile.valid.eq(1), self.tile.phase.eq(phase), self.tile.value.eq(new[0])]
            zero = Const(0, signed(W))
            moves = {  # next value of each register after the phase's drain
                0: [new[1], new[3] if n_acc == 4 else zero, new[2]] + ([zero] if n_acc == 4 else []),
                1: [new[2], new[1], zero] + new[3:],
                2: [new[1], zero, new[2]] + new[3:],
                3: [zero] + new[1:],
            }
            with m.Switch(phase):
                for p, nxt in moves.items():
                    with m.Case(p):
                        m.d.sync += [r.eq(v) for r, v in zip(regs, nxt, strict=True)]
        with m.Else():
            m.d.sync += [self.tile.valid.eq(0)] + [r.eq(v) for r, v in zip(regs, new, strict=True)]
