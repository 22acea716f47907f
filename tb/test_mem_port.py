"""The attention core's memory port (issue 13): the ``TileLoader`` moves
token rows of a golden memory image (``golden.core.memory_image``) from the
``MemoryModel`` into a granule-written buffer ``Memory``; the buffer's rows
must equal the operand's rows bit for bit, and ``done`` must come exactly
``kaleido.model.load_cycles`` cycles after each command. The same bench
(``tb/core_benches.py``) runs in the Amaranth simulator and, emitted with
its memory preloaded, on Icarus and Verilator, where the testbench only
waits for ``done`` on a GPI clock (``tb/cocotb_mem_port.py``)."""

from __future__ import annotations

import os

import numpy as np
import pytest
from amaranth.sim import Simulator

from kaleido.golden.core import beats_per_row, memory_image
from kaleido.hdl.mem_port import MemoryModel, TileLoader
from kaleido.model import load_cycles
from kaleido.tb.core_benches import LOADER_BENCH, LoaderBench, emit_loader_bench
from kaleido.tb.kit import unpack_rows
from kaleido.tb.runner import SIMULATORS, run_cocotb

SEED = int(os.environ.get("KALEIDO_SEED", "1"))


def run_loads(X, port_bytes, words, latency, commands):
    """Each ``(row, count, offset)`` command loads ``count`` rows of ``X``
    from row ``row``; returns the buffer's rows and each load's cycles from
    acceptance to ``done``."""
    beats = beats_per_row(X.shape[1], port_bytes)
    dut = LoaderBench(memory_image(X, port_bytes), port_bytes, beats, words, latency)
    cycles: list[int] = []

    async def bench(ctx):
        cmd = dut.cmd
        for row, count, offset in commands:
            ctx.set(cmd.payload, {"base": row * beats, "count": count, "offset": offset})
            ctx.set(cmd.valid, 1)
            while not ctx.get(cmd.ready):
                await ctx.tick()
            await ctx.tick()
            ctx.set(cmd.valid, 0)
            n = 0
            while True:
                n += 1
                if ctx.get(dut.loader.done):
                    break
                await ctx.tick()
                assert n < 100_000, "the loader never signalled done"
            cycles.append(n)
            await ctx.tick()
        rows = [ctx.get(dut.buffer.data[i]) for i in range(words)]
        ctx.set(cmd.valid, 0)
        out.append(rows)

    out: list = []
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return unpack_rows(out[0], X.shape[1]), cycles


CASES = {
    "default": (16, 128, 32),
    "latency1": (16, 32, 1),
    "one-beat-rows": (8, 8, 5),
    "narrow": (4, 16, 3),
}
TOKENS, WORDS = 24, 8
COMMANDS = [(0, 8, 0), (11, 3, 5), (20, 4, 0), (13, 1, 7)]


def case(name: str):
    """``(X, port_bytes, latency, expected rows, expected cycles)``."""
    port_bytes, d, latency = CASES[name]
    X = np.random.default_rng(SEED).integers(-128, 128, size=(TOKENS, d), dtype=np.int8)
    expected = np.zeros((WORDS, d), dtype=np.int8)
    for row, count, offset in COMMANDS:
        expected[offset : offset + count] = X[row : row + count]
    beats = beats_per_row(d, port_bytes)
    return X, port_bytes, latency, expected, [load_cycles(count * beats, latency) for _, count, _ in COMMANDS]


@pytest.mark.parametrize("name", list(CASES))
def test_loads_are_bit_exact_and_timed_by_the_model(name):
    X, port_bytes, latency, expected, expected_cycles = case(name)
    rows, cycles = run_loads(X, port_bytes, WORDS, latency, COMMANDS)
    assert np.array_equal(rows, expected), f"seed {SEED}: buffer rows differ from the operand's"
    assert cycles == expected_cycles, f"seed {SEED}"


@pytest.mark.rtl
@pytest.mark.parametrize("sim", SIMULATORS)
@pytest.mark.parametrize("name", ["default", "narrow"])
def test_loads_on_verilog(sim, name):
    """The emitted bench on Icarus and Verilator: the memory image is in
    the Verilog, the testbench sets each command and waits for ``done``."""
    import json

    from kaleido.config import KaleidoConfig

    X, port_bytes, latency, expected, expected_cycles = case(name)
    beats = beats_per_row(X.shape[1], port_bytes)
    bench = LoaderBench(memory_image(X, port_bytes), port_bytes, beats, WORDS, latency)
    layout = bench.loader.cmd.payload.shape()
    commands = [
        layout.const({"base": row * beats, "count": count, "offset": offset}).as_bits()
        for row, count, offset in COMMANDS
    ]
    res = run_cocotb(
        sim,
        LOADER_BENCH,
        KaleidoConfig.one_array(),
        "kaleido.tb.cocotb_mem_port",
        tag=f"_{name}_seed{SEED}",
        extra_env={"KALEIDO_LOADS": json.dumps({"commands": commands, "words": WORDS})},
        source=lambda build_dir: emit_loader_bench(bench, build_dir),
    )
    assert res["tests"] == 1 and res["failed"] == 0, res
    with open(f"{res['build_dir']}/loads.json") as f:
        out = json.load(f)
    assert np.array_equal(unpack_rows(out["rows"], X.shape[1]), expected), f"seed {SEED}: {sim} buffer rows differ"
    assert out["cycles"] == expected_cycles, f"seed {SEED}: {sim}"


def test_memory_image_is_row_major_little_endian():
    X = np.array([[1, -1, 2, -2], [3, 4, 5, 6]], dtype=np.int8)
    assert memory_image(X, 2) == [0xFF01, 0xFE02, 0x0403, 0x0605]
    assert memory_image(X, 4) == [0xFE02FF01, 0x06050403]


@pytest.mark.parametrize(
    "call,message",
    [
        (lambda: memory_image(np.zeros((2, 6), np.int8), 4), "d = 6 is not a multiple of port_bytes = 4"),
        (lambda: memory_image(np.zeros((2, 8), np.int16), 4), "X must be a 2-D int8 array"),
        (lambda: MemoryModel(4, [0], 0), "latency must be a positive integer, not 0"),
        (lambda: MemoryModel(1, [256], 1), "every beat must be an unsigned 8-bit value"),
        (lambda: TileLoader(0, 1, 4), "words must be a positive integer, not 0"),
        (lambda: load_cycles(8, 0), "mem_latency must be a positive integer, not 0"),
    ],
)
def test_bad_input_is_rejected(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@pytest.mark.parametrize("depth, latency", [(1, 1), (4, 3), (8, 2)])
def test_stalling_model_holds_exactly_depth_requests(depth, latency):
    """The stalling memory model's bound (issue 46 item 4): it takes a
    request only while the requests in flight and the responses waiting in
    its FIFO are fewer than ``depth`` (``room``). With no LFSR stalls
    (``stall=0``) and ``r`` not ready for 30 cycles, exactly ``depth``
    requests are taken (not one fewer, not one more) and ``q`` then stays
    not ready; after that each response taken (``r`` ready one cycle in 5)
    lets exactly one request in, the very next cycle. The requests
    outstanding (taken, response not yet taken) never exceed ``depth``,
    and every response is its address's beat, in order. Tightening
    ``room`` by one (``< depth - 1``) or loosening it (``<= depth``) fails
    this test."""
    from kaleido.hdl.mem_port import StallingMemoryModel

    beats = list(range(100, 140))
    dut = StallingMemoryModel(1, beats, latency, seed=1, stall=0, depth=depth)
    taken: list[int] = []  # cycles a request was taken
    given: list[int] = []  # cycles a response was taken
    data: list[int] = []

    async def bench(ctx):
        ctx.set(dut.q.valid, 1)
        for t in range(30 + 5 * 12):
            ready = t >= 30 and (t - 30) % 5 == 0
            ctx.set(dut.r.ready, ready)
            ctx.set(dut.q.payload.addr, len(taken) % len(beats))
            if ctx.get(dut.q.ready):
                taken.append(t)
            if ready and ctx.get(dut.r.valid):
                given.append(t)
                data.append(ctx.get(dut.r.payload.data))
            outstanding = sum(c <= t for c in taken) - sum(c <= t for c in given)
            assert outstanding <= depth, f"cycle {t}: {outstanding} requests outstanding, depth {depth}"
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert sum(c < 30 for c in taken) == depth, f"{taken}: not exactly {depth} requests taken under the stall"
    assert given and all(c >= 30 for c in given)
    # each response taken frees one place: one request taken the next cycle, and no other
    assert [c for c in taken if c >= 30] == [c + 1 for c in given], (taken, given)
    assert data == [beats[k % len(beats)] for k in range(len(data))]
