"""The attention core's memory port (issue 13): the ``TileLoader`` moves
token rows of a golden memory image (``golden.core.memory_image``) from the
``MemoryModel`` into a granule-written buffer ``Memory``; the buffer's rows
must equal the operand's rows bit for bit, and ``done`` must come exactly
``kaleido.model.load_cycles`` cycles after each command."""

from __future__ import annotations

import os

import numpy as np
import pytest
from amaranth import Module, unsigned
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.sim import Simulator

from kaleido.golden.core import beats_per_row, memory_image
from kaleido.hdl.mem_port import MemoryModel, TileLoader
from kaleido.model import load_cycles

SEED = int(os.environ.get("KALEIDO_SEED", "1"))


class LoaderBench(wiring.Component):
    """Memory model -> tile loader -> a buffer of ``words`` rows."""

    def __init__(self, image, port_bytes, beats, words, latency):
        self.model = MemoryModel(port_bytes, image, latency)
        self.loader = TileLoader(words, beats, port_bytes)
        self.buffer = Memory(shape=unsigned(8 * port_bytes * beats), depth=words, init=[])
        self._beats, self._port_bytes = beats, port_bytes
        super().__init__({})

    def elaborate(self, platform):
        m = Module()
        m.submodules.model, m.submodules.loader, m.submodules.buffer = self.model, self.loader, self.buffer
        wiring.connect(m, self.loader.q, self.model.q)
        wiring.connect(m, self.model.r, self.loader.r)
        wp = self.buffer.write_port(granularity=8 * self._port_bytes)
        w = self.loader.w
        m.d.comb += [wp.addr.eq(w.addr), wp.data.eq(w.data << (w.lane * 8 * self._port_bytes))]
        for k in range(self._beats):
            m.d.comb += wp.en[k].eq(w.en & (w.lane == k))
        return m


def run_loads(X, port_bytes, words, latency, commands):
    """Each ``(row, count, offset)`` command loads ``count`` rows of ``X``
    from row ``row``; returns the buffer's rows and each load's cycles from
    acceptance to ``done``."""
    beats = beats_per_row(X.shape[1], port_bytes)
    dut = LoaderBench(memory_image(X, port_bytes), port_bytes, beats, words, latency)
    cycles: list[int] = []

    async def bench(ctx):
        cmd = dut.loader.cmd
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
    width = 8 * X.shape[1]
    rows = np.array([list((v % (1 << width)).to_bytes(X.shape[1], "little")) for v in out[0]], dtype=np.uint8).view(
        np.int8
    )
    return rows, cycles


@pytest.mark.parametrize(
    "port_bytes,d,latency",
    [(16, 128, 32), (16, 32, 1), (8, 8, 5), (4, 16, 3)],
    ids=["default", "latency1", "one-beat-rows", "narrow"],
)
def test_loads_are_bit_exact_and_timed_by_the_model(port_bytes, d, latency):
    rng = np.random.default_rng(SEED)
    tokens, words = 24, 8
    X = rng.integers(-128, 128, size=(tokens, d), dtype=np.int8)
    commands = [(0, 8, 0), (11, 3, 5), (20, 4, 0), (13, 1, 7)]
    rows, cycles = run_loads(X, port_bytes, words, latency, commands)
    expected = np.zeros((words, d), dtype=np.int8)
    for row, count, offset in commands:
        expected[offset : offset + count] = X[row : row + count]
    beats = beats_per_row(d, port_bytes)
    assert np.array_equal(rows, expected), f"seed {SEED}: buffer rows differ from the operand's"
    assert cycles == [load_cycles(count * beats, latency) for _, count, _ in commands], f"seed {SEED}"


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
