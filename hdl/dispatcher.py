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

    Two pass buffers: a pass is latched into the free one while the other
    pass's beats leave (a free buffer samples ``passes`` every cycle, so
    its take only sets its full flag). For T0..T3 of the pass whose jobs are next, the need
    of every channel (SKIP if no present PE needs anything, HALF if every
    need is SKIP or p_lo, else FULL) goes to the matcher as one job; each
    slot leaving the matcher is turned into a beat by selecting the phase's
    operands (rows: anchors in T0/T1, followers in T2/T3; columns: anchors
    in T0/T2, followers in T1/T3) at ``c1`` (and ``c2``) of the pass whose
    beats leave, one cycle after the matcher gives the slot (a slot
    register). ``passes.ready`` is a register (a buffer is free), so no
    path runs from the matcher's slot to the buffers' load; the next pass's
    T0 job follows the last slot of the previous pass's T3, so passes that
    arrive in time stream back to back, and a pass taken by an idle
    dispatcher has its first beat :data:`~kaleido.config.DISPATCH_LATENCY`
    (3) cycles later (take, job, slot register). ``ready_next`` (out):
    ``passes.ready`` of the next cycle, from this cycle's take and last
    beat (unless the dispatcher is frozen), so a queue can choose a
    dispatcher a cycle ahead (``ArraySet``).
    """

    def __init__(self, config: KaleidoConfig | None = None):
        config = as_config(config)
        self._config = config
        R, C, B = config.array_rows, config.array_cols, config.batch
        super().__init__(
            {
                "passes": In(stream.Signature(pass_layout(R, C, B))),
                "beats": Out(stream.Signature(slot_layout(R, C))),
                "ready_next": Out(1),
            }
        )

    def elaborate(self, platform):
        m = Module()
        cfg = self._config
        m.submodules.matcher = matcher = Matcher(cfg)
        layout = pass_layout(cfg.array_rows, cfg.array_cols, cfg.batch)
        bufs = [Signal(layout, name=f"buf{i}") for i in range(2)]
        job, out = Signal(layout), Signal(layout)  # the pass whose jobs are next, whose beats leave
        jsel = Signal()  # the buffer whose jobs are next
        job_full = self._buffers(m, bufs, jsel, job, out)
        self._jobs(m, matcher, job, job_full, jsel)
        # the slot register (DISPATCH_LATENCY): the matcher's slot, then the operand select
        slot, valid = Signal.like(matcher.o.payload, name="slot"), Signal(name="slot_valid")
        m.d.comb += [matcher.o.ready.eq(~valid | self.beats.ready), self.beats.valid.eq(valid)]
        with m.If(matcher.o.ready):
            m.d.sync += [slot.eq(matcher.o.payload), valid.eq(matcher.o.valid)]
        self._beat(m, slot, out)
        return m

    def _buffers(self, m: Module, bufs: list, jsel: Signal, job: Signal, out: Signal):
        """The two pass buffers: ``wsel`` takes the next pass, ``jsel``
        gives the matcher its jobs, ``bsel`` the beats their operands; a
        buffer is full from its pass taken to that pass's last beat.
        Returns whether ``jsel``'s buffer is full."""
        full = [Signal(name=f"full{i}") for i in range(2)]
        wsel, bsel = Signal(), Signal()
        m.d.comb += [job.eq(Mux(jsel, bufs[1], bufs[0])), out.eq(Mux(bsel, bufs[1], bufs[0]))]
        m.d.comb += self.passes.ready.eq(~Mux(wsel, full[1], full[0]))
        s = self.beats.payload.ctl
        pass_done = self.beats.valid & self.beats.ready & s.last & (s.phase == 3)
        take = self.passes.valid & self.passes.ready
        for i in range(2):
            # a free buffer samples ``passes`` every cycle (its contents are
            # unused until it is full), so no enable hangs on ``take``,
            # which comes late from the queue's choice of dispatcher
            with m.If(~full[i]):
                m.d.sync += bufs[i].eq(self.passes.payload)
            with m.If(take & (wsel == i)):
                m.d.sync += full[i].eq(1)
            with m.Elif(pass_done & (bsel == i)):
                m.d.sync += full[i].eq(0)
        with m.If(take):
            m.d.sync += wsel.eq(~wsel)
        with m.If(pass_done):
            m.d.sync += bsel.eq(~bsel)
        # next cycle's ready: the other buffer after a take, else this one;
        # either is free next cycle if its pass's last beat leaves now
        m.d.comb += self.ready_next.eq(
            Mux(
                take,
                ~Mux(wsel, full[0], full[1]) | (pass_done & (bsel == ~wsel)),
                self.passes.ready | (pass_done & (bsel == wsel)),
            )
        )
        return Mux(jsel, full[1], full[0])

    def _jobs(self, m: Module, matcher: Matcher, job: Signal, job_full, jsel: Signal) -> None:
        """Need derivation for the phase being handed out: per channel,
        the union of the present PEs' needs, then the array-level rule
        (both tables are kaleido.encoding's); after T3 the other buffer's
        jobs are next."""
        cfg = self._config
        R, C, B = cfg.array_rows, cfg.array_cols, cfg.batch
        job_phase = Signal(2)  # next phase to hand to the matcher
        for c in range(B):
            union = 0
            for r in range(R):
                for cc in range(C):
                    present = job.rows[r].present & job.cols[cc].present
                    pe = pe_need_decoder(
                        m, f"need_c{c}_r{r}_k{cc}", job_phase, job.rows[r].t[c], job.cols[cc].t[c], cfg.accumulators
                    )
                    union = union | Mux(present, pe, 0)
            need = array_need_decoder(m, f"need_c{c}", job_phase, union)
            m.d.comb += matcher.i.payload.need[c].eq(Mux(c >= job.count, Need.SKIP, need))
        m.d.comb += [matcher.i.valid.eq(job_full), matcher.i.payload.phase.eq(job_phase)]
        with m.If(matcher.i.valid & matcher.i.ready):
            m.d.sync += job_phase.eq(job_phase + 1)
            with m.If(job_phase == 3):
                m.d.sync += jsel.eq(~jsel)

    def _beat(self, m: Module, s, buf: Signal) -> None:
        """The beat of slot ``s``: its channels' operands and tags of
        ``buf``."""
        cfg = self._config
        R, C, B = cfg.array_rows, cfg.array_cols, cfg.batch
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
