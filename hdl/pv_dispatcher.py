"""P V dispatcher (issue 12): a stream of contraction units in, array beats
out, with the V reuse detector in front (docs/DESIGN.md, "P V on the
array"; the rule is :mod:`kaleido.golden.pv`'s)."""

from amaranth import Module, Mux, Signal, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..config import KaleidoConfig
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
        final = single | second
        beat = self.beats.payload
        m.d.comb += [
            self.beats.valid.eq(det.o.valid),
            det.o.ready.eq(self.beats.ready & final),
            beat.ctl.slot.eq(1),
            beat.ctl.kind.eq(SlotKind.FULL8),
            beat.ctl.phase.eq(Phase.T3),
            beat.ctl.pv.eq(1),
            beat.ctl.last.eq(side.last & final),
        ]
        for r in range(R):
            m.d.comb += [beat.rows[r].r0.eq(side.p_a[r]), beat.rows[r].r1.eq(side.p_f[r]), beat.rows[r].s.eq(pre[r])]
        for c in range(C):
            first_sel = Mux(absent, PvSelect.R0, Mux(full[c], PvSelect.SUM, PvSelect.R0))
            m.d.comb += [
                beat.cols[c].k.eq(Mux(second, side.v_f[c], o.anchor[c])),
                beat.cols[c].k0.eq(Mux(second, Mux(full[c], PvSelect.SKIP, PvSelect.R1), first_sel)),
            ]
        with m.If(self.beats.valid & self.beats.ready):
            m.d.sync += second.eq(~final)
        return m
