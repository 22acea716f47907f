"""Helpers shared by the cocotb testbenches (run inside the simulator)."""

from __future__ import annotations

import os

from cocotb.clock import Clock
from cocotb.triggers import FallingEdge

__all__ = ["start", "reset", "seed"]


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
