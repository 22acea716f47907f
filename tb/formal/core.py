"""The attention core's top-level harness: the stream rule on its ports
(:class:`CoreStreams`).
"""

from __future__ import annotations

from typing import Any

from amaranth import Module, Signal
from amaranth.hdl import Assume

from .base import (
    StreamPorts,
)


class CoreStreams(StreamPorts):
    """The attention core's top level, black box: the stream rule on the
    read requests ``rq`` and the writes ``wq`` (proved), on ``cmd`` and the
    responses ``rs`` (assumed; a response comes only for a request taken
    and not yet answered, the memory's contract); ``rs`` always ready.
    Covers (from :class:`StreamPorts`): a stall and a transfer on each
    port, among them a write (``wq_transfer``)."""

    takes_all = ("rs",)

    def flow(self, m: Module, dut: Any) -> None:
        outstanding = Signal(16, name="ref_outstanding")
        rq_fire = dut.rq.valid & dut.rq.ready
        m.d.sync += outstanding.eq(outstanding + rq_fire - dut.rs.valid)
        m.d.comb += Assume(~dut.rs.valid | (outstanding != 0))
