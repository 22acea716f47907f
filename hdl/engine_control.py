"""The engine's head sequence: load, run, drain, unload; and the
``cycles`` / ``busy`` ports (docs/ENGINE.md, "Timing"). With two S sets
(``s_sets=2``, docs/CORE.md "The S tile's two sets") the unload of one head
runs beside the load and compute of the next."""

from __future__ import annotations

from amaranth import Module, Signal
from amaranth.lib import enum, wiring
from amaranth.lib.wiring import In, Out

from ..checks import check_s_sets

__all__ = ["EngineControl", "HeadState"]


class HeadState(enum.Enum):
    """Where the engine is in a head."""

    LOAD = 0  #: taking Q and K in
    RUN = 1  #: scheduling and passes
    DRAIN = 2  #: every pass taken; the array drains into the buffer
    UNLOAD = 3  #: streaming S out (one S set: nothing else runs)


class EngineControl(wiring.Component):
    """LOAD -> RUN -> DRAIN -> UNLOAD -> LOAD, one head per round; with two
    S sets, LOAD -> RUN -> DRAIN -> LOAD, each head's unload beside the
    next head's load and compute.

    Ports
    -----
    ``loaded`` (in): the head's last input word is taken (LOAD -> RUN).
    ``done`` (in): the head's last pass is taken (RUN -> DRAIN).
    ``drained`` (in): the array has drained every pass and every tile is
    in S (DRAIN -> UNLOAD; with two sets, DRAIN -> LOAD once no unload is
    under way or it ends this cycle: the head's set is handed to the unload).
    ``unloaded`` (in): the last score is taken (the unload ends; UNLOAD ->
    LOAD with one set).
    ``load``, ``run`` (out): the state is LOAD, RUN. ``unload`` (out): a
    set is being unloaded (with one set: the state is UNLOAD).
    ``write_set``, ``read_set`` (out): the S set the head in compute adds
    to, and the set being unloaded (0 with one set); the handoff swaps them.
    ``cycles`` (out): the compute cycles of the last head, the cycles
    spent in RUN and DRAIN (from the first cycle after the last input word
    to the cycle before the first output word). ``busy`` (out): not in
    LOAD, or unloading. Every transition takes effect the next cycle
    (``latency`` 1).
    """

    def __init__(self, cycles_width: int = 32, s_sets: int = 1):
        if not isinstance(cycles_width, int) or isinstance(cycles_width, bool):
            raise TypeError(f"cycles_width must be an integer, not {cycles_width!r}")
        if cycles_width < 1:
            raise ValueError(f"cycles_width must be at least 1, not {cycles_width!r}")
        self.s_sets = check_s_sets(s_sets)
        super().__init__(
            {
                "loaded": In(1),
                "done": In(1),
                "drained": In(1),
                "unloaded": In(1),
                "load": Out(1),
                "run": Out(1),
                "unload": Out(1),
                "write_set": Out(1),
                "read_set": Out(1),
                "cycles": Out(cycles_width),
                "busy": Out(1),
            }
        )

    @property
    def latency(self) -> int:
        """Cycles from an input event to the new state: 1."""
        return 1

    def elaborate(self, platform):
        m = Module()
        state = Signal(HeadState, init=HeadState.LOAD)
        reading = Signal()  # a set is being unloaded
        m.d.comb += [
            self.load.eq(state == HeadState.LOAD),
            self.run.eq(state == HeadState.RUN),
            self.unload.eq(reading),
            self.busy.eq((state != HeadState.LOAD) | reading),
        ]
        with m.If((state == HeadState.RUN) | (state == HeadState.DRAIN)):
            m.d.sync += self.cycles.eq(self.cycles + 1)
        # the unload ends on its last word; a handoff below starts the next
        with m.If(self.unloaded):
            m.d.sync += reading.eq(0)
        with m.Switch(state):
            with m.Case(HeadState.LOAD):
                with m.If(self.loaded):
                    m.d.sync += [state.eq(HeadState.RUN), self.cycles.eq(0)]
            with m.Case(HeadState.RUN):
                with m.If(self.done):
                    m.d.sync += state.eq(HeadState.DRAIN)
            with m.Case(HeadState.DRAIN):
                # the handoff: the head's set to the unload (with one set
                # there is never an unload under way here)
                with m.If(self.drained & (~reading | self.unloaded)):
                    m.d.sync += reading.eq(1)
                    if self.s_sets == 2:
                        m.d.sync += [
                            state.eq(HeadState.LOAD),
                            self.read_set.eq(self.write_set),
                            self.write_set.eq(~self.write_set),
                        ]
                    else:
                        m.d.sync += state.eq(HeadState.UNLOAD)
            with m.Case(HeadState.UNLOAD):
                with m.If(self.unloaded):
                    m.d.sync += state.eq(HeadState.LOAD)
        return m
