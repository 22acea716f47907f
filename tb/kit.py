"""The testbench kit, written once for both simulators.

Stream sources and sinks, a port driver for handshake-less inputs, a tile
monitor, a hold (stall) driver and the cycle loop that runs them are
simulator-neutral: they talk to a :class:`Backend`, of which there are two,

* :class:`AmaranthBackend` (the Amaranth simulator: ``ctx.set``/``ctx.get``
  on the component's signals, ``ctx.tick``), and
* :class:`CocotbBackend` (cocotb on the emitted Verilog: the flattened
  ports ``slots__payload``, ``tiles__0__1``, ...; a falling edge per cycle).

A port is named by its dotted path in the component's signature
(``"slots.payload"``, ``"tiles.2.3"``, ``"hold"``); values are plain
unsigned integers of the port's bits (the layout packers in
:mod:`kaleido.tb.driver` give them meaning). Stall patterns are a parameter
of every source, sink and hold (:func:`stall_pattern`).

Why our own and not cocotb-bus or cocotbext-axi's stream classes: those
drive cocotb only, and the point here is one testbench for both the
Amaranth simulator (the fast inner loop) and cocotb; the kit's cocotb
backend is ten lines. The streams are Amaranth's ``lib.stream`` (valid,
ready, payload; ready may depend combinationally on valid), which neither
library models as such.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

import numpy as np

__all__ = [
    "Backend",
    "AmaranthBackend",
    "CocotbBackend",
    "stall_pattern",
    "STALLS",
    "StreamSource",
    "StreamSink",
    "PortDriver",
    "TileMonitor",
    "Hold",
    "run",
    "simulate",
    "unpack_rows",
]

#: the stall patterns every source, sink and hold accepts
STALLS = ("none", "every4", "random")


def stall_pattern(name: str, seed: int) -> Iterator[int]:
    """An endless 0/1 iterator: 1 = stall this cycle. ``none``, ``every4``
    (verilog-axis style 1,1,1,0 ready), ``random`` (30 %)."""
    if name not in STALLS:
        raise ValueError(f"stall pattern must be one of {STALLS}, not {name!r}")
    rng = np.random.default_rng(seed)
    i = 0
    while True:
        if name == "none":
            yield 0
        elif name == "every4":
            yield int(i % 4 == 3)
        else:
            yield int(rng.random() < 0.3)
        i += 1


class Backend(Protocol):
    """What the kit needs of a simulator."""

    def set(self, port: str, value: int) -> None: ...

    def get(self, port: str) -> int: ...

    async def settle(self) -> None: ...

    async def tick(self) -> None: ...


class AmaranthBackend:
    """The Amaranth simulator: ``ctx`` of an ``add_testbench`` coroutine and
    the component under test."""

    def __init__(self, ctx: Any, dut: Any):
        self._ctx, self._dut = ctx, dut
        self._values: dict[str, Any] = {}

    def _value(self, port: str) -> Any:
        if port not in self._values:
            from amaranth import Value

            obj = self._dut
            for part in port.split("."):
                obj = obj[int(part)] if part.isdigit() else getattr(obj, part)
            self._values[port] = Value.cast(obj)
        return self._values[port]

    def set(self, port: str, value: int) -> None:
        self._ctx.set(self._value(port), int(value))

    def get(self, port: str) -> int:
        return int(self._ctx.get(self._value(port).as_unsigned()))

    async def settle(self) -> None:
        await self._ctx.delay(1e-9)  # combinational ready/valid settle before sampling

    async def tick(self) -> None:
        await self._ctx.tick()


class CocotbBackend:
    """cocotb on the emitted Verilog (clock running; drive and sample on the
    falling edge)."""

    def __init__(self, dut: Any):
        self._dut = dut
        self._handles: dict[str, Any] = {}

    def _handle(self, port: str) -> Any:
        if port not in self._handles:
            self._handles[port] = getattr(self._dut, port.replace(".", "__"))
        return self._handles[port]

    def set(self, port: str, value: int) -> None:
        self._handle(port).value = int(value)

    def get(self, port: str) -> int:
        return int(self._handle(port).value)

    async def settle(self) -> None:
        from cocotb.triggers import Timer

        await Timer(1, unit="ns")

    async def tick(self) -> None:
        from cocotb.triggers import FallingEdge

        await FallingEdge(self._dut.clk)


class StreamSource:
    """Drives ``words`` into the stream ``name`` (``valid``, ``payload``,
    ``ready``), dropping ``valid`` on stalled cycles; ``accepted`` holds the
    counted cycle of each transfer. A stall may withdraw ``valid`` from a
    word not yet taken (the testbenches always did; every block accepts it):
    a stricter, hold-until-ready source is for the stream-rule proofs of
    issue 19."""

    def __init__(self, name: str, words: Sequence[int], *, stall: str = "none", seed: int = 0):
        self.name, self.words = name, list(words)
        self._stall = stall_pattern(stall, seed)
        self.sent = 0
        self.accepted: list[int] = []
        self._valid = False

    @property
    def done(self) -> bool:
        return self.sent >= len(self.words)

    def drive(self, be: Backend) -> None:
        self._valid = not self.done and not next(self._stall)
        be.set(f"{self.name}.valid", self._valid)
        if self._valid:
            be.set(f"{self.name}.payload", self.words[self.sent])

    def sample(self, be: Backend, cycle: int) -> bool:
        if self._valid and be.get(f"{self.name}.ready"):
            self.sent += 1
            self.accepted.append(cycle)
            return True
        return False

    def idle(self, be: Backend) -> None:
        be.set(f"{self.name}.valid", 0)


class StreamSink:
    """Takes words from the stream ``name``, dropping ``ready`` on stalled
    cycles; ``words`` are the payloads in order, ``cycles`` the counted
    cycle of each."""

    def __init__(self, name: str, *, stall: str = "none", seed: int = 0):
        self.name = name
        self._stall = stall_pattern(stall, seed)
        self._ready = False
        self.words: list[int] = []
        self.cycles: list[int] = []

    def drive(self, be: Backend) -> None:
        self._ready = not next(self._stall)
        be.set(f"{self.name}.ready", self._ready)

    def sample(self, be: Backend, cycle: int) -> bool:
        if self._ready and be.get(f"{self.name}.valid"):
            self.words.append(be.get(f"{self.name}.payload"))
            self.cycles.append(cycle)
            return True
        return False

    def idle(self, be: Backend) -> None:
        be.set(f"{self.name}.ready", 0)


class PortDriver:
    """Handshake-less inputs: per cycle, one value for each port (the PE's
    ``row_in``, ``col_in``, ``ctl_in``); done when every value was driven,
    after which the ports are held at 0."""

    def __init__(self, values: Sequence[dict[str, int]]):
        self.values = list(values)
        self.sent = 0
        self.accepted: list[int] = []

    @property
    def done(self) -> bool:
        return self.sent >= len(self.values)

    def drive(self, be: Backend) -> None:
        if self.done:
            self.idle(be)
        else:
            for port, value in self.values[self.sent].items():
                be.set(port, value)

    def sample(self, be: Backend, cycle: int) -> bool:
        if self.done:
            return False
        self.sent += 1
        self.accepted.append(cycle)
        return True

    def idle(self, be: Backend) -> None:
        if self.values:
            for port in self.values[0]:
                be.set(port, 0)


class TileMonitor:
    """Collects drain ports (``ports``: key -> port path) whose bits decode
    (``decode(bits) -> (valid, phase, value)``) to a valid tile: per key
    the ``(phase, value)`` drains in order and the counted cycle of each."""

    def __init__(self, ports: dict[Any, str], decode: Callable[[int], tuple[int, int, int]]):
        self.ports, self.decode = ports, decode
        self.drains: dict[Any, list[tuple[int, int]]] = {k: [] for k in ports}
        self.cycles: dict[Any, list[int]] = {k: [] for k in ports}
        self.last: int | None = None

    def sample(self, be: Backend, cycle: int) -> bool:
        seen = False
        for key, port in self.ports.items():
            valid, phase, value = self.decode(be.get(port))
            if valid:
                self.drains[key].append((phase, value))
                self.cycles[key].append(cycle)
                self.last = cycle
                seen = True
        return seen


class Hold:
    """Drives a stall input (``hold``) from a stall pattern; a held cycle is
    not counted and its drain ports are not sampled."""

    def __init__(self, port: str = "hold", *, stall: str = "none", seed: int = 0):
        self.port = port
        self._stall = stall_pattern(stall, seed)

    def drive(self, be: Backend) -> bool:
        held = bool(next(self._stall))
        be.set(self.port, held)
        return held

    def idle(self, be: Backend) -> None:
        be.set(self.port, 0)


@dataclasses.dataclass
class Run:
    """What :func:`run` measured: ``cycles`` counted (held cycles are not),
    ``total`` simulated, and the counted cycle the stop condition held."""

    cycles: int
    total: int


async def run(
    be: Backend,
    *,
    sources: Sequence[StreamSource | PortDriver] = (),
    sinks: Sequence[StreamSink] = (),
    monitors: Sequence[TileMonitor] = (),
    hold: Hold | None = None,
    drain: int = 0,
    until: Callable[[], bool] | None = None,
    each_cycle: Callable[[Backend, int], None] | None = None,
    max_cycles: int = 10_000_000,
) -> Run:
    """The cycle loop. Every cycle: drive the hold, the sources and the
    sinks; let combinational logic settle; sample every handshake (a stream
    transfers on any cycle whose valid and ready are high, held or not);
    on a cycle that is not held, sample the monitors and count it. Stops
    when ``until()`` holds, or else once every source is done and ``drain``
    counted cycles passed without a sink or monitor event. ``each_cycle``
    (e.g. an assertion monitor) runs after sampling."""
    cycle = total = quiet = 0
    while True:
        held = hold.drive(be) if hold else False
        for src in sources:
            src.drive(be)
        for sink in sinks:
            sink.drive(be)
        await be.settle()
        event = False
        for src in sources:
            src.sample(be, cycle)
        for sink in sinks:
            event |= sink.sample(be, cycle)
        if not held:
            for mon in monitors:
                event |= mon.sample(be, cycle)
        if each_cycle:
            each_cycle(be, cycle)
        if not held:
            cycle += 1
            quiet = 0 if event or not all(s.done for s in sources) else quiet + 1
        total += 1
        if total > max_cycles:
            raise AssertionError(f"no end after {max_cycles} cycles (a hang?)")
        await be.tick()
        if until is not None:
            if until():
                break
        elif all(s.done for s in sources) and quiet >= drain:
            break
    for part in (*sources, *sinks, *([hold] if hold else [])):
        part.idle(be)
    return Run(cycle, total)


def simulate(dut: Any, bench: Callable[[Backend], Any]) -> Any:
    """Run ``await bench(backend)`` on ``dut`` in the Amaranth simulator
    (10 ns clock) and return its result."""
    from amaranth.sim import Simulator

    out: dict[str, Any] = {}

    async def testbench(ctx: Any) -> None:
        out["result"] = await bench(AmaranthBackend(ctx, dut))

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()
    return out["result"]


def unpack_rows(values, d: int) -> np.ndarray:
    """Buffer rows (integers of ``8 d`` bits, byte 0 low) as int8 rows."""
    return np.array([list(int(v).to_bytes(d, "little")) for v in values], dtype=np.uint8).view(np.int8)
