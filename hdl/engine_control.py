"""The engine's head sequence: load, run, drain, unload; and the
``cycles`` / ``busy`` ports (docs/ENGINE.md, "Timing")."""

from __future__ import annotations

from amaranth import Module, Signal
from amaranth.lib import enum, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["EngineControl", "HeadState"]


class HeadState(enum.Enum):
    """Where the engine is in a head."""

    LOAD = 0  #: taking Q and K in
    RUN = 1  #: scheduling and passes
    DRAIN = 2  #: every pass taken; the array drains into the buffer
    UNLOAD = 3  #: streaming S out


class EngineControl(wiring.Component):
    """LOAD -> RUN -> DRAIN -> UNLOAD -> LOAD, one head per round.

    Ports
    -----
    ``loaded`` (in): the head's last input word is taken (LOAD -> RUN).
    ``done`` (in): the head's last pass is taken (RUN -> DRAIN).
    ``drained`` (in): the array has drained every pass (DRAIN -> UNLOAD).
    ``unloaded`` (in): the last score is taken (UNLOAD -> LOAD).
    ``load``, ``run``, ``unload`` (out): the state is LOAD, RUN, UNLOAD.
    ``cycles`` (out): the compute cycles of the last head, the cycles
    spent in RUN and DRAIN (from the first cycle after the last input word
    to the cycle before the first output word). ``busy`` (out): not in
    LOAD. Every transition takes effect the next cycle (``latency`` 1).
    """

    def __init__(self, cycles_width: int = 32):
        if not isinstance(cycles_width, int) or isinstance(cycles_width, bool):
            raise TypeError(f"cycles_width must be an integer, not {cycles_width!r}")
        if cycles_width < 1:
            raise ValueError(f"cycles_width must be at least 1, not {cycles_width!r}")
        super().__init__(
            {
                "loaded": In(1),
                "done": In(1),
                "drained": In(1),
                "unloaded": In(1),
                "load": Out(1),
                "run": Out(1),
                "unload": Out(1),
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
        m.d.comb += [
            self.load.eq(state == HeadState.LOAD),
            self.run.eq(state == HeadState.RUN),
            self.unload.eq(state == HeadState.UNLOAD),
            self.busy.eq(state != HeadState.LOAD),
        ]
        with m.If((state == HeadState.RUN) | (state == HeadState.DRAIN)):
            m.d.sync += self.cycles.eq(self.cycles + 1)
        with m.Switch(state):
            with m.Case(HeadState.LOAD):
                with m.If(self.loaded):
                    m.d.sync += [state.eq(HeadState.RUN), self.cycles.eq(0)]
            with m.Case(HeadState.RUN):
                with m.If(self.done):
                    m.d.sync += state.eq(HeadState.DRAIN)
            with m.Case(HeadState.DRAIN):
                with m.If(self.drained):
                    m.d.sync += state.eq(HeadState.UNLOAD)
            with m.Case(HeadState.UNLOAD):
                with m.If(self.unloaded):
                    m.d.sync += state.eq(HeadState.LOAD)
        return m
