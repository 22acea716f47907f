"""Testbench top levels of the attention core's pieces (issue 13), shared
by the Amaranth-simulator tests and the cocotb runs on Icarus and
Verilator: the same component is simulated in Python or emitted."""

from __future__ import annotations

import pathlib

from amaranth import Module, Signal, unsigned
from amaranth.back import verilog
from amaranth.lib import stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from kaleido.config import CoreConfig, KaleidoConfig, SoftmaxFormat
from kaleido.hdl.core import KaleidoAttentionCore, head_layout
from kaleido.hdl.engine import KaleidoEngine, s_layout
from kaleido.hdl.mem_port import Lfsr, MemoryModel, StallingMemoryModel, TileLoader, load_command_layout
from kaleido.hdl.qk_memory import qk_layout
from kaleido.hdl.tile_feeder import TileFeeder, feed_command_layout

__all__ = [
    "LoaderBench",
    "emit_loader_bench",
    "LOADER_BENCH",
    "TileQKBench",
    "CoreBench",
    "CORE_BENCH",
    "CORE_TOP",
    "emit_core_bench",
]

#: module names of the emitted core bench and its self-clocked top level
CORE_BENCH = "core_bench"
CORE_TOP = "core_top"

#: module name of the emitted loader bench
LOADER_BENCH = "loader_bench"


class LoaderBench(wiring.Component):
    """The memory model (preloaded with ``image``) -> the tile loader -> a
    buffer of ``words`` rows of ``beats`` beats, written one granule per
    beat. Ports: the loader's ``cmd`` and ``done``; ``raddr``/``rdata`` read
    a buffer row (combinationally) for the check."""

    def __init__(self, image, port_bytes: int, beats: int, words: int, latency: int):
        self.model = MemoryModel(port_bytes, image, latency)
        self.loader = TileLoader(words, beats, port_bytes)
        self.buffer = Memory(shape=unsigned(8 * port_bytes * beats), depth=words, init=[])
        self._beats, self._port_bytes = beats, port_bytes
        super().__init__(
            {
                "cmd": In(stream.Signature(load_command_layout(words))),
                "done": Out(1),
                "raddr": In(range(words)),
                "rdata": Out(8 * port_bytes * beats),
            }
        )

    def elaborate(self, platform):
        m = Module()
        m.submodules.model, m.submodules.loader, m.submodules.buffer = self.model, self.loader, self.buffer
        wiring.connect(m, wiring.flipped(self.cmd), self.loader.cmd)
        wiring.connect(m, self.loader.q, self.model.q)
        wiring.connect(m, self.model.r, self.loader.r)
        wp = self.buffer.write_port(granularity=8 * self._port_bytes)
        w = self.loader.w
        m.d.comb += [wp.addr.eq(w.addr), wp.data.eq(w.data << (w.lane * 8 * self._port_bytes))]
        for k in range(self._beats):
            m.d.comb += wp.en[k].eq(w.en & (w.lane == k))
        rp = self.buffer.read_port(domain="comb")
        m.d.comb += [self.done.eq(self.loader.done), rp.addr.eq(self.raddr), self.rdata.eq(rp.data)]
        return m


def emit_loader_bench(bench: LoaderBench, build_dir) -> str:
    """Write ``bench`` as Verilog (module :data:`LOADER_BENCH`) into
    ``build_dir``; returns the path (unchanged files are not rewritten, so
    simulator builds stay up to date)."""
    text = verilog.convert(bench, name=LOADER_BENCH, emit_src=False)
    path = pathlib.Path(build_dir) / f"{LOADER_BENCH}.v"
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    return str(path)


class TileQKBench(wiring.Component):
    """The memory model (preloaded with ``image``) -> the tile feeder ->
    (with ``engine``) a :class:`KaleidoEngine` built for the tile shape.
    Ports: the feeder's ``cmd``; ``qk`` (the feeder's words, without an
    engine) or ``s`` (the engine's scores)."""

    def __init__(self, image, config: KaleidoConfig, core: CoreConfig, *, engine: bool = True):
        self.model = MemoryModel(core.port_bytes, image, core.mem_latency)
        self.feeder = TileFeeder(config, core)
        self.engine = KaleidoEngine(config, core.tile) if engine else None
        ports = {"cmd": In(stream.Signature(feed_command_layout(core.tile, core.max_tokens)))}
        if self.engine is not None:
            ports["s"] = Out(stream.Signature(s_layout(self.engine.s_width)))
        else:
            ports["qk"] = Out(stream.Signature(qk_layout(config.batch)))
        super().__init__(ports)

    def elaborate(self, platform):
        m = Module()
        m.submodules.model, m.submodules.feeder = self.model, self.feeder
        wiring.connect(m, wiring.flipped(self.cmd), self.feeder.cmd)
        wiring.connect(m, self.feeder.rq, self.model.q)
        wiring.connect(m, self.model.r, self.feeder.rs)
        if self.engine is None:
            wiring.connect(m, self.feeder.qk, wiring.flipped(self.qk))
        else:
            m.submodules.engine = self.engine
            wiring.connect(m, self.feeder.qk, self.engine.qk)
            wiring.connect(m, self.engine.s, wiring.flipped(self.s))
        return m


class CoreBench(wiring.Component):
    """The memory model (preloaded with ``image``: Q, K and V) -> the
    attention core -> an O memory of ``o_values`` values (one write a
    cycle, always ready) in ``array_cols`` banks: value ``e`` is word ``e //
    array_cols`` of bank ``e % array_cols``, so a write of up to
    ``array_cols`` consecutive values is one word in each bank it touches.
    ``stall_seed`` (the soak): the memory stalls requests and delays
    responses at random (:class:`~kaleido.hdl.mem_port.StallingMemoryModel`,
    a quarter of the cycles each) and the O memory refuses a quarter of the
    cycles' writes. ``variant``: the core's (``"kaleido"`` or ``"dense"``).
    Ports: the core's ``cmd``, ``busy`` and ``cycles``; ``raddr``/``rdata``
    read word ``raddr`` of every bank (values ``array_cols raddr ..``,
    the first in the low bits) combinationally, for the check."""

    def __init__(
        self,
        image,
        o_values: int,
        config: KaleidoConfig,
        core: CoreConfig,
        fmt: SoftmaxFormat | None = None,
        stall_seed: int | None = None,
        variant: str = "kaleido",
    ):
        fmt = fmt or SoftmaxFormat()
        self.stalls = None if stall_seed is None else Lfsr(stall_seed ^ 0x5A5A5A5A or 1)
        if stall_seed is None:
            self.model = MemoryModel(core.port_bytes, image, core.mem_latency)
        else:
            self.model = StallingMemoryModel(core.port_bytes, image, core.mem_latency, stall_seed)
        self.core = KaleidoAttentionCore(config, core, fmt, variant)
        self.width = 8 + fmt.out_frac_bits
        C = config.array_cols
        self.o_banks = [Memory(shape=unsigned(self.width), depth=-(-o_values // C), init=[]) for _ in range(C)]
        self.o_words = -(-o_values // C)
        super().__init__(
            {
                "cmd": In(stream.Signature(head_layout(core, fmt))),
                "busy": Out(1),
                "cycles": Out(32),
                "raddr": In(range(self.o_words)),
                "rdata": Out(C * self.width),
            }
        )

    def elaborate(self, platform):
        m = Module()
        m.submodules.model, m.submodules.core = self.model, self.core
        core = self.core
        wiring.connect(m, wiring.flipped(self.cmd), core.cmd)
        wiring.connect(m, core.rq, self.model.q)
        wiring.connect(m, self.model.r, core.rs)
        w = core.wq.payload
        C = len(self.o_banks)
        m.d.comb += [self.busy.eq(core.busy), self.cycles.eq(core.cycles)]
        if self.stalls is None:
            m.d.comb += core.wq.ready.eq(1)
        else:
            m.submodules.stalls = self.stalls
            m.d.comb += core.wq.ready.eq(self.stalls.bits[4:6] != 0)
        for b, bank in enumerate(self.o_banks):
            m.submodules[f"o_bank{b}"] = bank
            wp = bank.write_port()
            lane = Signal(range(C), name=f"lane{b}")
            m.d.comb += lane.eq((b + C - w.addr % C) % C)
            m.d.comb += [
                wp.addr.eq((w.addr + lane) // C),
                wp.data.eq(w.data.word_select(lane, self.width)),
                wp.en.eq(core.wq.valid & core.wq.ready & (lane < w.count)),
            ]
            rp = bank.read_port(domain="comb")
            m.d.comb += [rp.addr.eq(self.raddr), self.rdata.word_select(b, self.width).eq(rp.data)]
        return m


def emit_core_bench(bench: CoreBench, build_dir) -> str:
    """Write ``bench`` as Verilog (module :data:`CORE_BENCH`) and its
    self-clocked top level :data:`CORE_TOP` into ``build_dir``; returns the
    path (an unchanged file is not rewritten). The top level makes its own
    clock (``always #5``, an output): the simulator runs the clock itself,
    with no testbench callback on any edge (Verilator needs ``--timing``)."""
    text = verilog.convert(bench, name=CORE_BENCH, emit_src=False)
    ports = {
        "rst": ("input", 1),
        "cmd__payload": ("input", bench.cmd.payload.shape().size),
        "cmd__valid": ("input", 1),
        "cmd__ready": ("output", 1),
        "busy": ("output", 1),
        "cycles": ("output", 32),
        "raddr": ("input", len(bench.raddr)),
        "rdata": ("output", len(bench.rdata)),
    }
    decl = ",\n".join(f"  {d} [{w - 1}:0] {n}" for n, (d, w) in ports.items())
    conn = ",\n".join(f"    .{n}({n})" for n in ports)
    text += (
        f"\nmodule {CORE_TOP} (\n  output reg clk,\n{decl}\n);\n"
        "  initial clk = 1'b0;\n  always #5 clk = ~clk;\n"
        f"  {CORE_BENCH} bench (\n    .clk(clk),\n{conn}\n  );\nendmodule\n"
    )
    path = pathlib.Path(build_dir) / f"{CORE_BENCH}.v"
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    return str(path)
