"""P V dispatcher (issue 12): a stream of contraction units in, array beats
out, with the V reuse detector in front (docs/DESIGN.md, "P V on the
array"; the rule is :mod:`kaleido.golden.pv`'s)."""

from types import SimpleNamespace

from amaranth import Cat, Module, Mux, Signal, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..config import SMALL_P, KaleidoConfig
from ._common import as_config
from .detector import ReuseDetector
from .encoding import Phase, PvSelect, SlotKind, Tag
from .layouts import slot_layout

__all__ = ["PvDispatcher", "pv_unit_layout"]


def pv_unit_layout(rows: int, cols: int) -> data.StructLayout:
    """One contraction unit of a P V pass: the P operands of each PE row's
    query at the anchor (``p_a``) and follower (``p_f``) token, V of each PE
    column's channel at both, ``absent`` = an unpaired token (``p_f``,
    ``v_f`` ignored), ``last`` = the pass's last unit."""
    return data.StructLayout(
        {
            "p_a": data.ArrayLayout(signed(8), rows),
            "p_f": data.ArrayLayout(signed(8), rows),
            "v_a": data.ArrayLayout(signed(8), cols),
            "v_f": data.ArrayLayout(signed(8), cols),
            "absent": 1,
            "last": 1,
        }
    )


_SIDE = {"p_a", "p_f", "v_f", "last"}


class PvDispatcher(wiring.Component):
    """``units`` -> V reuse detector -> one or two ``beats`` per unit.

    The V reuse detector is :class:`ReuseDetector` with one lane per PE
    column (anchor ``v_a``, follower ``v_f``, thresholds from the
    configuration; only FULL is used). P, the raw follower V and ``last``
    ride in a side register loaded with the detector's, so both leave
    together; so does each row's pre-add ``P[i, a] + P[i, f]`` (the row
    port's ``s``), added here once per row rather than in every PE. A
    unit takes one beat when it is unpaired (``R0``) or FULL at every
    column (``SUM``), else two (``SUM``/``R0`` on ``v_a``, then
    ``SKIP``/``R1`` on ``v_f``). Beats are FULL8, phase T3, ``pv = 1``;
    the unit's ``last`` rides on its final beat.

    With small-P pairing (``config.pv_pairs``, :meth:`_pairing`) two
    small halves may share a paired beat (DUAL_LO), one small half may be
    held back for a later unit, and a unit takes one to three beats (the
    pass's last unit may first issue the held half alone).

    Throughput: one beat per cycle while ``beats.ready``; latency one cycle
    (the detector's register) from a unit's transfer to its first beat.
    """

    def __init__(self, config: KaleidoConfig | None = None):
        config = as_config(config)
        self._config = config
        R, C = config.array_rows, config.array_cols
        super().__init__(
            {
                "units": In(stream.Signature(pv_unit_layout(R, C))),
                "beats": Out(stream.Signature(slot_layout(R, C))),
            }
        )

    def elaborate(self, platform):
        m = Module()
        cfg = self._config
        R, C = cfg.array_rows, cfg.array_cols
        m.submodules.detector = det = ReuseDetector(cfg.replace(batch=C))
        u = self.units.payload
        side = Signal(data.StructLayout({k: f.shape for k, f in pv_unit_layout(R, C) if k in _SIDE}))
        # the pre-add P[i, a] + P[i, f] of each row, once per row (the PEs
        # take it from the row port's ``s``: issue 20)
        pre = Signal(data.ArrayLayout(signed(9), R))
        m.d.comb += [
            det.i.valid.eq(self.units.valid),
            self.units.ready.eq(det.i.ready),
            det.i.payload.count.eq(C),
            det.i.payload.absent.eq(u.absent),
            det.i.payload.full.eq(cfg.F),  # P V's FULL threshold: the configuration's F
            det.i.payload.partial.eq(cfg.P),
        ]
        m.d.comb += [det.i.payload.anchor[c].eq(u.v_a[c]) for c in range(C)]
        m.d.comb += [det.i.payload.follower[c].eq(u.v_f[c]) for c in range(C)]
        with m.If(det.i.valid & det.i.ready):
            m.d.sync += [side.p_a.eq(u.p_a), side.p_f.eq(u.p_f), side.v_f.eq(u.v_f), side.last.eq(u.last)]
            m.d.sync += [pre[r].eq(u.p_a[r] + u.p_f[r]) for r in range(R)]

        o = det.o.payload
        full = [o.cls[c] == Tag.FULL for c in range(C)]
        absent = o.cls[0] == Tag.ABSENT
        all_full = Signal()
        m.d.comb += all_full.eq(1)
        for f in full:
            with m.If(~f):
                m.d.comb += all_full.eq(0)
        single = absent | all_full
        second = Signal()  # the second beat of a two-beat unit is next
        beat = self.beats.payload
        # the unit's two halves: the first on V[a] (SUM at FULL columns, R0
        # elsewhere; R0 everywhere when unpaired), the second on V[f]
        sel1 = [Mux(absent, PvSelect.R0, Mux(full[c], PvSelect.SUM, PvSelect.R0)) for c in range(C)]
        sel2 = [Mux(full[c], PvSelect.SKIP, PvSelect.R1) for c in range(C)]
        m.d.comb += [
            self.beats.valid.eq(det.o.valid),
            beat.ctl.slot.eq(1),
            beat.ctl.phase.eq(Phase.T3),
            beat.ctl.pv.eq(1),
        ]
        final = Signal()  # the unit's last beat: it leaves the detector
        m.d.comb += [
            det.o.ready.eq(self.beats.ready & final),
            beat.ctl.last.eq(side.last & final),
        ]
        if not cfg.pv_pairs:
            m.d.comb += [final.eq(single | second), beat.ctl.kind.eq(SlotKind.FULL8)]
            for r in range(R):
                m.d.comb += [
                    beat.rows[r].r0.eq(side.p_a[r]),
                    beat.rows[r].r1.eq(side.p_f[r]),
                    beat.rows[r].s.eq(pre[r]),
                ]
            for c in range(C):
                m.d.comb += [
                    beat.cols[c].k.eq(Mux(second, side.v_f[c], o.anchor[c])),
                    beat.cols[c].k0.eq(Mux(second, sel2[c], sel1[c])),
                ]
            with m.If(self.beats.valid & self.beats.ready):
                m.d.sync += second.eq(~final)
            return m
        self._pairing(m, det, side, pre, single, second, final, sel1, sel2)
        return m

    def _pairing(self, m: Module, det, side, pre, single, second, final, sel1, sel2) -> None:
        """Small-P pairing (``config.pv_pairs``; the rule is
        :func:`kaleido.golden.pv.pair_pass`'s): a half is *small* when each
        column that selects an operand and whose V is not 0 has that
        operand below 16 at every row. One small half may be held back
        (``pend``: its rows' nibbles, its columns' V and selects); a beat
        is one half (FULL8) or two small halves (DUAL_LO: half A's nibbles
        low, V in ``k``, select in ``k0``; half B's high, ``kb``, ``k1``)."""
        w = SimpleNamespace(det=det, side=side, pre=pre, single=single, second=second, final=final)
        w.sel1, w.sel2 = sel1, sel2
        self._small_halves(m, w)
        self._held_half(m, w)
        self._pair_choice(m, w)
        self._pair_beat(m, w)
        self._pair_step(m, w)

    def _small_halves(self, m: Module, w: SimpleNamespace) -> None:
        """Pairing: which of the unit's halves are small (``s1``, ``s2``), from its P registered with it."""
        R, C = self._config.array_rows, self._config.array_cols
        det, side = w.det, w.side
        u = self.units.payload
        o = det.o.payload
        # does some row's r0 / r1 / r0 + r1 reach 16: registered with the unit
        big_a, big_f, big_s = Signal(), Signal(), Signal()
        with m.If(det.i.valid & det.i.ready):
            m.d.sync += [
                big_a.eq(Cat(*(u.p_a[r] >= SMALL_P for r in range(R))).any()),
                big_f.eq(Cat(*(u.p_f[r] >= SMALL_P for r in range(R))).any()),
                big_s.eq(Cat(*((u.p_a[r] + u.p_f[r]) >= SMALL_P for r in range(R))).any()),
            ]

        def small(vs, sels):
            bad = []
            for v, sel in zip(vs, sels, strict=True):
                big = Mux(sel == PvSelect.R0, big_a, Mux(sel == PvSelect.R1, big_f, (sel == PvSelect.SUM) & big_s))
                bad.append((v != 0) & big)
            return ~Cat(*bad).any()

        v1 = [o.anchor[c] for c in range(C)]
        v2 = [side.v_f[c] for c in range(C)]
        # both unnamed (``$signal``) as before the split, where ``s1`` was a comprehension's cell and
        # the tracer found no name in this line
        s1, s2 = Signal(name="$signal"), Signal(name="$signal")
        m.d.comb += [s1.eq(small(v1, w.sel1)), s2.eq(small(v2, w.sel2))]
        w.v1, w.v2, w.s1, w.s2 = v1, v2, s1, s2

    def _held_half(self, m: Module, w: SimpleNamespace) -> None:
        """Pairing: the held half's registers and the unit's rows as nibbles (``cur``)."""
        R, C = self._config.array_rows, self._config.array_cols
        side = w.side
        # the held half: its rows' nibbles (and their 5-bit sum), V, selects
        nib = data.StructLayout({"r0": 4, "r1": 4, "s": 5})
        pend_valid = Signal()
        pend_rows = Signal(data.ArrayLayout(nib, R))
        pend_v = Signal(data.ArrayLayout(signed(8), C))
        pend_sel = Signal(data.ArrayLayout(PvSelect, C))
        cur = Signal(data.ArrayLayout(nib, R))
        for r in range(R):
            m.d.comb += [
                cur[r].r0.eq(side.p_a[r][0:4]),
                cur[r].r1.eq(side.p_f[r][0:4]),
                cur[r].s.eq(side.p_a[r][0:4] + side.p_f[r][0:4]),
            ]
        paired_done = Signal()  # the unit's small half went with ``pend``: its big one is next
        w.nib, w.pend_valid, w.pend_rows, w.pend_v, w.pend_sel = nib, pend_valid, pend_rows, pend_v, pend_sel
        w.cur, w.paired_done = cur, paired_done

    def _pair_choice(self, m: Module, w: SimpleNamespace) -> None:
        """Pairing: the cycle's choice, two halves or one, and which."""
        side, s1, s2, pend_valid, final = w.side, w.s1, w.s2, w.pend_valid, w.final
        two = ~w.single
        # the cycle's choice: ``pair`` (two halves) or one; ``a_pend``: the
        # (first) half is the held one; ``use_h2``: the unit's half in use
        # (alone, or the pair's second) is its second; ``final``: the unit
        # is done; ``store``: its small half is held back; ``drop``: the
        # held half is issued
        pair, a_pend, use_h2, store, drop, flush = (
            Signal(name=n) for n in ("pair", "a_pend", "use_h2", "store", "drop", "flush")
        )
        m.d.comb += flush.eq(side.last & pend_valid & ~((~two & s1) | (two & (s1 ^ s2))))
        with m.If(w.second):
            m.d.comb += [use_h2.eq(~w.paired_done | s1), final.eq(1)]
        with m.Elif(flush):
            m.d.comb += [a_pend.eq(1), drop.eq(1)]
        with m.Elif(~two):
            m.d.comb += [final.eq(1), pair.eq(s1 & pend_valid), a_pend.eq(s1 & pend_valid), drop.eq(s1 & pend_valid)]
        with m.Elif(s1 & s2):
            m.d.comb += [final.eq(1), pair.eq(1), use_h2.eq(1)]
        with m.Elif((s1 ^ s2) & pend_valid):
            m.d.comb += [pair.eq(1), a_pend.eq(1), use_h2.eq(s2), drop.eq(1)]
        with m.Elif((s1 ^ s2) & ~side.last):
            m.d.comb += [use_h2.eq(s1), store.eq(1), final.eq(1)]
        m.d.comb += self.beats.payload.ctl.kind.eq(Mux(pair, SlotKind.DUAL_LO, SlotKind.FULL8))
        w.pair, w.a_pend, w.use_h2, w.store, w.drop, w.flush = pair, a_pend, use_h2, store, drop, flush

    def _pair_beat(self, m: Module, w: SimpleNamespace) -> None:
        """Pairing: the beat's rows and columns, one half or two."""
        R, C = self._config.array_rows, self._config.array_cols
        beat, side, cur, pend_rows, pair, a_pend = self.beats.payload, w.side, w.cur, w.pend_rows, w.pair, w.a_pend
        v1, v2, sel1, sel2, use_h2 = w.v1, w.v2, w.sel1, w.sel2, w.use_h2
        # the unit's half in use
        hv = [Mux(use_h2, v2[c], v1[c]) for c in range(C)]
        hsel = [Mux(use_h2, sel2[c], sel1[c]) for c in range(C)]
        # rows and columns as Mux expressions, not If blocks: the payload
        # then stays a wire of continuous assignments in the emitted Verilog
        # (an If makes it a reg whose constant fields Icarus leaves X)
        for r in range(R):
            a = data.View(w.nib, Mux(a_pend, pend_rows[r].as_value(), cur[r].as_value()))
            p, row = pend_rows[r], beat.rows[r]
            m.d.comb += [
                row.r0.eq(Mux(pair, Cat(a.r0, cur[r].r0), Mux(a_pend, p.r0, side.p_a[r]))),
                row.r1.eq(Mux(pair, Cat(a.r1, cur[r].r1), Mux(a_pend, p.r1, side.p_f[r]))),
                row.s.eq(Mux(pair, Cat(a.s[0:4], cur[r].s[0:4]), Mux(a_pend, p.s, w.pre[r]))),
            ]
        for c in range(C):
            col = beat.cols[c]
            m.d.comb += [
                col.k.eq(Mux(a_pend, w.pend_v[c], Mux(pair, v1[c], hv[c]))),
                col.k0.eq(Mux(a_pend, w.pend_sel[c], Mux(pair, sel1[c], hsel[c]))),
                col.kb.eq(Mux(pair, hv[c], 0)),
                col.k1.eq(Mux(pair, hsel[c], 0)),
            ]

    def _pair_step(self, m: Module, w: SimpleNamespace) -> None:
        """Pairing: on a beat taken, the unit's next half and the held half's update."""
        C = self._config.array_cols
        second, final, flush, pair, s1, v1, v2 = w.second, w.final, w.flush, w.pair, w.s1, w.v1, w.v2
        sel1, sel2, pend_valid, pend_v, pend_sel = w.sel1, w.sel2, w.pend_valid, w.pend_v, w.pend_sel
        with m.If(self.beats.valid & self.beats.ready):
            m.d.sync += [second.eq(~final & ~flush), w.paired_done.eq(~final & ~flush & pair)]
            with m.If(w.drop):
                m.d.sync += pend_valid.eq(0)
            with m.If(w.store):
                # the small half: the first when s1 (the big second went out)
                m.d.sync += [pend_valid.eq(1), w.pend_rows.eq(w.cur)]
                m.d.sync += [pend_v[c].eq(Mux(s1, v1[c], v2[c])) for c in range(C)]
                m.d.sync += [pend_sel[c].eq(Mux(s1, sel1[c], sel2[c])) for c in range(C)]
