"""Pass dispatcher: feature buffer + need derivation + :class:`Matcher` +
beat former. One array pass's operands and tags in, the array's beat
stream out (the slot stream of spec sec. 8 with the operands and tags the
array expects)."""

from amaranth import Cat, Module, Mux, Signal, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..config import KaleidoConfig
from ._common import as_config
from .encoding import Need, Tag, array_need_decoder, pe_need_decoder
from .layouts import slot_layout
from .matcher import Matcher

__all__ = ["PassDispatcher", "pass_layout"]


def pass_layout(rows: int, cols: int, batch: int) -> data.StructLayout:
    """One pass: per row unit the anchor values ``x``, the follower's
    effective values ``x1``, the follower tags ``t`` and ``present`` (0 for
    a padding unit); the same per column unit; ``count`` channels are valid
    (a short batch: the rest are SKIP)."""
    unit = data.StructLayout(
        {
            "x": data.ArrayLayout(signed(8), batch),
            "x1": data.ArrayLayout(signed(8), batch),
            "t": data.ArrayLayout(Tag, batch),
            "present": 1,
        }
    )
    return data.StructLayout(
        {"rows": data.ArrayLayout(unit, rows), "cols": data.ArrayLayout(unit, cols), "count": range(batch + 1)}
    )


class PassDispatcher(wiring.Component):
    """``passes`` in (one pass per transfer), ``beats`` out (``slot_layout``,
    ready for :class:`KaleidoArray`).

    The pass is latched into the feature buffer; for T0..T3 the need of
    every channel (SKIP if no present PE needs anything, HALF if every need
    is SKIP or p_lo, else FULL) goes to the matcher as one job; each slot
    leaving the matcher is turned into a beat by selecting the phase's
    operands (rows: anchors in T0/T1, followers in T2/T3; columns: anchors in
    T0/T2, followers in T1/T3) at ``c1`` (and ``c2``). A new pass is taken
    when the previous one's last beat leaves, so consecutive passes are
    separated by one idle beat cycle.
    """

    def __init__(self, config: KaleidoConfig | None = None):
        config = as_config(config)
        self._config = config
        R, C, B = config.array_rows, config.array_cols, config.batch
        super().__init__(
            {"passes": In(stream.Signature(pass_layout(R, C, B))), "beats": Out(stream.Signature(slot_layout(R, C)))}
        )

    def elaborate(self, platform):
        m = Module()
        cfg = self._config
        R, C, B = cfg.array_rows, cfg.array_cols, cfg.batch
        m.submodules.matcher = matcher = Matcher(cfg)
        buf = Signal(pass_layout(R, C, B))
        loaded = Signal()
        job_phase = Signal(3)  # next phase to hand to the matcher (4 = all handed out)

        # need derivation for the phase being handed out: per channel, the
        # union of the present PEs' needs, then the array-level rule (both
        # tables are kaleido.encoding's)
        needs = []
        for c in range(B):
            union = 0
            for r in range(R):
                for cc in range(C):
                    present = buf.rows[r].present & buf.cols[cc].present
                    pe = pe_need_decoder(
                        m, f"need_c{c}_r{r}_k{cc}", job_phase[:2], buf.rows[r].t[c], buf.cols[cc].t[c], cfg.accumulators
                    )
                    union = union | Mux(present, pe, 0)
            need = array_need_decoder(m, f"need_c{c}", job_phase[:2], union)
            needs.append(Mux(c >= buf.count, Need.SKIP, need))
        m.d.comb += [matcher.i.valid.eq(loaded & (job_phase < 4)), matcher.i.payload.phase.eq(job_phase[:2])]
        m.d.comb += [matcher.i.payload.need[c].eq(needs[c]) for c in range(B)]
        with m.If(matcher.i.valid & matcher.i.ready):
            m.d.sync += job_phase.eq(job_phase + 1)

        # beat former
        s = matcher.o.payload
        ph = s.phase
        row_follow = ph[1]  # T2, T3 use the row followers
        col_follow = ph[0]  # T1, T3 use the column followers
        beat = self.beats.payload
        m.d.comb += [
            beat.ctl.slot.eq(s.slot),
            beat.ctl.kind.eq(s.dual),
            beat.ctl.phase.eq(ph),
            beat.ctl.last.eq(s.last),
        ]
        for r in range(R):
            row = buf.rows[r]
            x = Mux(row_follow, row.x1.as_value(), row.x.as_value())
            xs = data.View(data.ArrayLayout(signed(8), B), x)
            m.d.comb += [
                beat.rows[r].r0.eq(xs[s.c1]),
                beat.rows[r].r1.eq(xs[s.c2]),
                beat.rows[r].q0.eq(row.t[s.c1]),
                beat.rows[r].q1.eq(row.t[s.c2]),
            ]
        for cc in range(C):
            col = buf.cols[cc]
            x = Mux(col_follow, col.x1.as_value(), col.x.as_value())
            xs = data.View(data.ArrayLayout(signed(8), B), x)
            v1, v2 = xs[s.c1], xs[s.c2]
            m.d.comb += [
                beat.cols[cc].k.eq(Mux(s.dual, Cat(v1[:4], v2[:4]), v1)),
                beat.cols[cc].k0.eq(col.t[s.c1]),
                beat.cols[cc].k1.eq(col.t[s.c2]),
            ]
        m.d.comb += [self.beats.valid.eq(matcher.o.valid), matcher.o.ready.eq(self.beats.ready)]

        pass_done = self.beats.valid & self.beats.ready & s.last & (ph == 3)
        m.d.comb += self.passes.ready.eq(~loaded | pass_done)
        with m.If(pass_done):
            m.d.sync += loaded.eq(0)
        with m.If(self.passes.valid & self.passes.ready):
            m.d.sync += [buf.eq(self.passes.payload), loaded.eq(1), job_phase.eq(0)]
        return m
