"""The softmax harnesses: the softmax unit's stream rule with its divider's
invariant (:class:`SoftmaxStream`) and the tiled softmax's scoreboards
(:class:`TileSoftmaxFlow`).
"""

from __future__ import annotations

from typing import Any

from amaranth import Module, Signal
from amaranth.hdl import Assert, Cover
from amaranth.lib import wiring

from .base import (
    StreamHolds,
    StreamPorts,
)


class TileSoftmaxFlow(StreamPorts):
    """The tiled softmax: the stream rule on ``p`` and ``r`` (assumed on
    ``s``), and its scoreboards: P beats given never exceed exp beats taken
    (phase 1), the difference being at most the 6 stages of
    :attr:`~kaleido.hdl.softmax.TileSoftmax.latency`; ``r`` words given
    never exceed the final key tile's exp segments ended (at most one
    pending: one divider). Covers: an ``r`` stalled, a ``p`` stalled, a
    final segment's last beat waiting for the divider."""

    def flow(self, m: Module, dut: Any) -> None:
        s, p, r = dut.s, dut.p, dut.r
        beat = s.payload
        s_fire = s.valid & s.ready
        exp_in = s_fire & beat.phase
        ends = s_fire & beat.phase & beat.final & beat.last
        lat = dut.latency
        beats = Signal(range(lat + 2), name="p_pending")
        rows = Signal(2, name="r_pending")
        m.d.sync += [beats.eq(beats + exp_in - (p.valid & p.ready)), rows.eq(rows + ends - (r.valid & r.ready))]
        m.d.comb += [Assert(beats <= lat), Assert(beats >= p.valid), Assert(rows <= 1), Assert(rows >= r.valid)]
        m.d.comb += Cover(s.valid & beat.phase & beat.final & beat.last & ~s.ready & (rows == 1), "waits_for_divider")


class SoftmaxStream(StreamHolds):
    """The stream rule on the softmax unit's ``p`` and ``r``, by
    k-induction, strengthened by the invariant of its divider (white box):
    at most one row is on its way to ``r``, as the last beat in one of the
    four pipeline stages, as the P beat just loaded (``p_new``), as the
    divider running (``1 <= steps <= recip_width``) or as ``r`` valid, and
    the divider is ``reserved`` exactly then. So while ``r`` waits, the
    divider neither runs nor loads, and its quotient holds: the step case
    no longer starts from a divider that runs under a pending ``r``. ``p``
    needs no invariant (its register only moves when it is empty or
    taken)."""

    white_box = True

    def __init__(self, dut: wiring.Component):
        super().__init__(dut, ("p", "r"))

    def check(self, m: Module, dut: Any) -> None:
        super().check(m, dut)
        r = self.internal
        on_way = [r[f"{st}_valid"] & r[f"{st}_last"] for st in ("d", "dc", "t", "e")]
        on_way += [r["p_new"] & r["p_new_last"], r["running"], dut.r.valid]
        rows = Signal(range(len(on_way) + 1), name="rows_to_r")
        m.d.comb += [rows.eq(sum(on_way)), Assert(rows <= 1), Assert(r["reserved"] == (rows == 1))]
        with m.If(r["running"]):
            m.d.comb += [Assert(r["steps"] >= 1), Assert(r["steps"] <= dut.fmt.recip_width)]
        m.d.comb += [Cover(dut.r.valid & ~dut.r.ready, "r_stall"), Cover(dut.p.valid & ~dut.p.ready, "p_stall")]
