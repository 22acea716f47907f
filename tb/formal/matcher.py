"""The reuse detector's and the matcher's harnesses: the detector against
:func:`detector_reference` (:class:`DetectorFlow`: scoreboard, response,
payload); the matcher's function (:class:`MatcherFunction`), scoreboard
(:class:`MatcherFlow`) and jobs (:class:`MatcherJobs`).
"""

from __future__ import annotations

from typing import Any

from amaranth import Array, Cat, Const, Module, Mux, Signal
from amaranth.hdl import Assert, Assume, Cover, ResetSignal
from amaranth.lib import wiring
from amaranth.lib.wiring import In

from kaleido.config import KaleidoConfig

from .base import (
    Harness,
)


class MatcherFunction(wiring.Component):
    """One job into the matcher from reset (any phase, any needs, an
    always-ready sink): every slot issues channels not issued before; a
    DUAL_LO slot merges two distinct HALF channels; nothing SKIP is issued;
    the job ends (``last``) within ``batch + 1`` cycles, having issued
    exactly the non-SKIP channels (or one empty marker when there are
    none)."""

    def __init__(self, config: KaleidoConfig):
        from kaleido.hdl.matcher import matcher_in_layout

        self._config = config
        super().__init__({"job": In(matcher_in_layout(config.batch))})

    def elaborate(self, platform: Any) -> Module:
        from kaleido.hdl.encoding import Need
        from kaleido.hdl.matcher import Matcher

        m = Module()
        B = self._config.batch
        m.submodules.matcher = dut = Matcher(self._config)
        first = Signal(init=1)
        m.d.sync += first.eq(0)
        job = Signal.like(self.job)
        with m.If(first):
            m.d.sync += job.eq(self.job)
        m.d.comb += [dut.i.valid.eq(first), dut.i.payload.eq(self.job), dut.o.ready.eq(1)]
        needed = Signal(B)
        issued = Signal(B)
        done = Signal()
        cycles = Signal(range(B + 4))
        m.d.comb += needed.eq(Cat(*[job.need[c] != Need.SKIP for c in range(B)]))
        m.d.comb += Assume(~ResetSignal())
        with m.If(~first & ~done):
            m.d.sync += cycles.eq(cycles + 1)
            m.d.comb += Assert(cycles <= B)  # bounded response
        o = dut.o.payload
        one = Signal(B)
        two = Signal(B)
        m.d.comb += [one.eq(1 << o.c1), two.eq(Mux(o.dual, 1 << o.c2, 0))]
        with m.If(dut.o.valid & ~done):
            with m.If(o.slot):
                m.d.comb += [Assert((one & issued) == 0), Assert((one & ~needed) == 0)]
                with m.If(o.dual):
                    m.d.comb += [
                        Assert(o.c1 != o.c2),
                        Assert((two & issued) == 0),
                        Assert(job.need[o.c1] == Need.HALF),
                        Assert(job.need[o.c2] == Need.HALF),
                    ]
                m.d.sync += issued.eq(issued | one | two)
            with m.Else():
                m.d.comb += [Assert(o.last), Assert(needed == 0)]
            with m.If(o.last):
                m.d.sync += done.eq(1)
                with m.If(o.slot):
                    m.d.comb += Assert((issued | one | two) == needed)
        with m.If(done):
            m.d.comb += Assert(~dut.o.valid)
        return m


def detector_reference(pair: Any, batch: int) -> tuple[Signal, list[Any]]:
    """What the detector must send for ``pair`` (``detector_in_layout``),
    from spec sec. 3 as a reference expression: per lane below ``count``,
    FULL when the top ``pair.full`` bits of anchor and follower agree, else
    PARTIAL when the top ``pair.partial`` do (a threshold of 0 always
    agrees, 9 or more never does), else NONE (ABSENT for an absent follower); the
    row operand is the anchor on FULL, else the follower; the column
    operand is the anchor on FULL, the follower's low nibble under the
    anchor's high one on PARTIAL, else the follower; a lane's string bit is
    1 unless it is FULL. Lanes past ``count``: NONE, zeros, bit 0.
    Returns the signal and the statements that drive it."""
    from kaleido.hdl.detector import detector_out_layout
    from kaleido.hdl.encoding import Tag

    out = Signal(detector_out_layout(batch), name="expected")
    stmts = []
    for c in range(batch):
        a, f = pair.anchor[c].as_unsigned(), pair.follower[c].as_unsigned()
        agree = Array([Const(1)] + [a[8 - n :] == f[8 - n :] for n in range(1, 9)] + [Const(0)] * 7)
        same_top = [agree[pair.full], agree[pair.partial]]
        lane, absent = c < pair.count, pair.absent
        cls = Mux(absent, Tag.ABSENT, Mux(same_top[0], Tag.FULL, Mux(same_top[1], Tag.PARTIAL, Tag.NONE)))
        col = Mux(same_top[0], a, Mux(same_top[1], Cat(f[:4], a[4:]), f))
        row = Mux(same_top[0], a, f)
        stmts += [
            out.anchor[c].eq(Mux(lane, a, 0)),
            out.cls[c].eq(Mux(lane, cls, Tag.NONE)),
            out.row_eff[c].eq(Mux(lane & ~absent, row, 0)),
            out.col_eff[c].eq(Mux(lane & ~absent, col, 0)),
            out.string[c].eq(lane & (absent | ~same_top[0])),
        ]
    return out, stmts


class DetectorFlow(Harness):
    """The detector, no assumption on either side. ``scoreboard``: inputs
    taken minus outputs taken is 0 or 1 and equals ``o.valid`` (no pair is
    lost or duplicated, and an output is pending exactly when one pair is in
    the register). ``response``: a pair taken is offered the next cycle
    (latency 1), and a ready sink never stalls the source (so with an
    always-ready sink every pair leaves one cycle after it arrives).
    ``payload``: a tracked transfer; the harness picks any pair taken (a
    free choice, ``track``), remembers it and counts the outputs still
    ahead of it; the output that leaves in its place carries
    :func:`detector_reference` of that pair (so no pair's result is lost,
    duplicated, reordered or mixed with another's, whichever is picked).
    Covers: every class on the output, a stall, back-to-back transfers."""

    choices = ("track",)

    def __init__(
        self,
        dut: wiring.Component,
        scoreboard: bool = True,
        response: bool = True,
        payload: bool = False,
        config: KaleidoConfig | None = None,
    ):
        self._scoreboard, self._response, self._payload = scoreboard, response, payload
        self._cfg = config or KaleidoConfig.one_array()
        super().__init__(dut)

    def check(self, m: Module, dut: Any) -> None:
        from kaleido.hdl.encoding import Tag

        i_fire, o_fire = dut.i.valid & dut.i.ready, dut.o.valid & dut.o.ready
        if self._scoreboard:
            occupancy = Signal(2)
            m.d.sync += occupancy.eq(occupancy + i_fire - o_fire)
            m.d.comb += Assert(occupancy == dut.o.valid)
        if self._response:
            took = Signal()
            m.d.sync += took.eq(i_fire)
            with m.If(took):
                m.d.comb += Assert(dut.o.valid)
            with m.If(dut.o.ready):
                m.d.comb += Assert(dut.i.ready)
        if self._payload:
            cfg = self._cfg
            pair = Signal.like(dut.i.payload, name="tracked")
            tracking, ahead = Signal(name="tracking"), Signal(2, name="ahead")
            expected, stmts = detector_reference(pair, cfg.batch)
            m.d.comb += stmts
            pending = Signal(2, name="pending")  # outputs taken or not, in order: the register's
            m.d.sync += pending.eq(pending + i_fire - o_fire)
            m.d.comb += Assert(pending == dut.o.valid)
            with m.If(tracking):  # the tracked pair and those ahead of it are pending
                m.d.comb += Assert(ahead < pending)
                with m.If(ahead == 0):
                    m.d.comb += [Assert(dut.o.valid), Assert(dut.o.payload.as_value() == expected.as_value())]
                    with m.If(o_fire):
                        m.d.sync += tracking.eq(0)
                with m.Elif(o_fire):
                    m.d.sync += ahead.eq(ahead - 1)
            with m.Elif(i_fire & self.track):
                m.d.sync += [tracking.eq(1), pair.eq(dut.i.payload), ahead.eq(pending - o_fire)]
            m.d.comb += Assert(ahead <= 1)
        cls = dut.o.payload.cls[0]
        m.d.comb += [
            Cover(o_fire & (cls == tag), f"class_{tag.name}") for tag in (Tag.FULL, Tag.PARTIAL, Tag.NONE, Tag.ABSENT)
        ]
        m.d.comb += [Cover(dut.o.valid & ~dut.o.ready & dut.i.valid, "stall"), Cover(i_fire & o_fire, "back_to_back")]


class MatcherFlow(Harness):
    """The matcher's scoreboard, framing and response.

    Always: jobs taken minus ``last`` slots taken is 0 or 1 and equals
    ``o.valid`` (each job gives exactly one ``last``, nothing is emitted
    between jobs); every slot carries its job's phase; a job taken is
    offered from the next cycle; a marker (``slot`` 0) is a ``last``.
    With ``always_ready`` (an always-ready sink, assumed): a job's ``last``
    leaves at the latest on the ``batch``-th cycle after the job is taken
    (one slot per needed channel, at most ``batch``, or one marker).
    Covers: a DUAL_LO slot, a marker, a FULL8 slot that ends its job, jobs
    back to back, a stalled slot, and a job that takes all ``batch``
    cycles (the bound is tight)."""

    def __init__(self, dut: wiring.Component, batch: int, always_ready: bool = False):
        self._batch, self._always_ready = batch, always_ready
        super().__init__(dut)

    def check(self, m: Module, dut: Any) -> None:
        B = self._batch
        i_fire, o_fire = dut.i.valid & dut.i.ready, dut.o.valid & dut.o.ready
        o = dut.o.payload
        if self._always_ready:
            m.d.comb += Assume(dut.o.ready)
        occupancy = Signal(2)
        m.d.sync += occupancy.eq(occupancy + i_fire - (o_fire & o.last))
        m.d.comb += Assert(occupancy == dut.o.valid)
        phase = Signal(2)
        took = Signal()
        m.d.sync += took.eq(i_fire)
        with m.If(i_fire):
            m.d.sync += phase.eq(dut.i.payload.phase)
        with m.If(took):
            m.d.comb += Assert(dut.o.valid)
        with m.If(dut.o.valid):
            m.d.comb += Assert(o.phase == phase)
            with m.If(~o.slot):
                m.d.comb += Assert(o.last)
        # cycles the current job has been offered (saturating)
        age = Signal(range(B + 1))
        with m.If(i_fire):
            m.d.sync += age.eq(0)
        with m.Elif(dut.o.valid & (age < B)):
            m.d.sync += age.eq(age + 1)
        if self._always_ready:
            with m.If(dut.o.valid):
                m.d.comb += Assert(age < B)
        m.d.comb += [
            Cover(o_fire & o.slot & o.dual, "dual_lo_slot"),
            Cover(o_fire & ~o.slot & o.last, "marker"),
            Cover(o_fire & o.slot & ~o.dual & o.last, "full8_slot_last"),
            Cover(o_fire & o.last & i_fire, "jobs_back_to_back"),
            Cover(dut.o.valid & ~dut.o.ready, "stall"),
            Cover(o_fire & o.last & (age == B - 1), "longest_job"),
        ]


class MatcherJobs(Harness):
    """The matcher's payload scoreboard, for every job in a stream of jobs
    with stalls on both sides (k-induction; white box for three registers).
    A job is in flight from its transfer to its ``last`` slot (one at a
    time), so the harness keeps each job taken (its needs) and the channels
    its slots issued so far: every slot issues channels the job needs and
    no slot issued before; a DUAL_LO slot merges two distinct HALF
    channels; a marker only ends a job that needs nothing; the ``last``
    slot completes exactly the job's channels. Invariants tying the
    harness to the matcher: ``pending`` is the job's channels not yet
    issued, ``rest`` is ``pending`` without its lowest channel, ``half`` is
    the job's HALF channels."""

    white_box = True

    def __init__(self, dut: wiring.Component, batch: int):
        self._batch = batch
        super().__init__(dut)

    def check(self, m: Module, dut: Any) -> None:
        from kaleido.hdl.encoding import Need

        B = self._batch
        r = self.internal
        i_fire, o_fire = dut.i.valid & dut.i.ready, dut.o.valid & dut.o.ready
        o = dut.o.payload
        needed, halves, issued = Signal(B, name="job_needed"), Signal(B, name="job_half"), Signal(B, name="job_issued")
        one, two = Signal(B, name="slot_c1"), Signal(B, name="slot_c2")
        m.d.comb += [one.eq(1 << o.c1), two.eq(Mux(o.dual, 1 << o.c2, 0))]
        with m.If(o_fire):
            m.d.sync += issued.eq(issued | Mux(o.slot, one | two, 0))
        with m.If(i_fire):
            need = dut.i.payload.need
            m.d.sync += [
                needed.eq(Cat(*[need[c] != Need.SKIP for c in range(B)])),
                halves.eq(Cat(*[need[c] == Need.HALF for c in range(B)])),
                issued.eq(0),
            ]
        m.d.comb += Assert((issued & ~needed) == 0)
        with m.If(dut.o.valid):
            m.d.comb += [
                Assert(r["pending"] == (needed & ~issued)),
                Assert(r["rest"] == (r["pending"] & (r["pending"] - 1))),
                Assert(r["half"] == halves),
            ]
            with m.If(o.slot):
                m.d.comb += [Assert((one & (issued | ~needed)) == 0), Assert((two & (issued | ~needed)) == 0)]
                with m.If(o.dual):
                    m.d.comb += [Assert(o.c1 != o.c2), Assert((one & halves) != 0), Assert((two & halves) != 0)]
                with m.If(o.last):
                    m.d.comb += Assert((issued | one | two) == needed)
            with m.Else():
                m.d.comb += [Assert(o.last), Assert(needed == 0)]
        m.d.comb += [
            Cover(o_fire & o.last & i_fire & o.dual, "merged_last_then_next_job"),
            Cover(o_fire & o.slot & o.dual & ~o.last, "merge_mid_job"),
        ]
