"""Helpers shared by the cocotb testbenches (run inside the simulator)."""

from __future__ import annotations

import os

from cocotb.clock import Clock
from cocotb.triggers import FallingEdge

from kaleido.tb.driver import BeatEncoder, TileDecoder, stall_pattern

__all__ = ["start", "reset", "seed", "ArrayDriver"]


def seed() -> int:
    return int(os.environ.get("KALEIDO_SEED", "1"))


async def start(dut, reset_cycles=2):
    """Start a 10 ns clock and hold ``rst`` for ``reset_cycles``; returns on
    a falling edge (where the testbench drives and samples)."""
    Clock(dut.clk, 10, unit="ns").start()
    dut.rst.value = 1
    for _ in range(reset_cycles):
        await FallingEdge(dut.clk)
    dut.rst.value = 0


async def reset(dut, cycles=2):
    """Pulse ``rst`` for ``cycles`` (the clock already running)."""
    dut.rst.value = 1
    for _ in range(cycles):
        await FallingEdge(dut.clk)
    dut.rst.value = 0


class ArrayDriver:
    """Drives the array's ``slots`` stream and ``hold`` and collects the
    ``tiles`` drain ports, one cycle per falling edge. Held cycles are not
    counted (the array is frozen)."""

    def __init__(self, dut, config):
        self.dut = dut
        self.cfg = config
        self.R, self.C = config.array_rows, config.array_cols
        self.decode = TileDecoder(config.acc_width)
        self.ports = {(r, c): getattr(dut, f"tiles__{r}__{c}") for r in range(self.R) for c in range(self.C)}
        self.cycle = 0
        self.drains = {pe: [] for pe in self.ports}
        self.lat = {pe: [] for pe in self.ports}
        self.last_accepts = []
        self.last_tile_cycle = None
        dut.slots__valid.value = 0
        dut.hold.value = 0

    def _sample(self):
        for pe, port in self.ports.items():
            valid, phase, value = self.decode(int(port.value))
            if valid:
                self.drains[pe].append((phase, value))
                self.lat[pe].append(self.cycle - self.last_accepts[len(self.drains[pe]) - 1])
                self.last_tile_cycle = self.cycle

    async def run(self, beats, *, in_stall="none", out_stall="none", seed=0, flush=True):
        """Stream ``beats``; with ``flush``, keep clocking until every tile is out."""
        dut = self.dut
        encode = BeatEncoder(self.R, self.C)
        words = [encode(b) for b in beats]
        bubbles, holds = stall_pattern(in_stall, seed), stall_pattern(out_stall, seed + 1)
        i = idle = 0
        while i < len(words) or (flush and idle < self.R + self.C + 1):
            hold = next(holds)
            valid = i < len(words) and not next(bubbles)
            dut.hold.value = hold
            dut.slots__valid.value = int(valid)
            if valid:
                dut.slots__payload.value = words[i]
            if not hold:
                self._sample()
                if valid:
                    if beats[i].last:
                        self.last_accepts.append(self.cycle)
                    i += 1
                    idle = 0
                elif i >= len(words):
                    idle += 1
                self.cycle += 1
            await FallingEdge(dut.clk)
        dut.slots__valid.value = 0
        dut.hold.value = 0
