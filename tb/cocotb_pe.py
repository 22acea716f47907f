"""cocotb tests of one Kaleido PE (run by tb/test_rtl.py under Icarus and
Verilator): the arithmetic exhaustively, and forwarding. Every (phase, slot
kind, tag) combination against the golden PE model: tb/test_blocks.py."""

from __future__ import annotations

import itertools

import cocotb
import numpy as np
from cocotb.triggers import FallingEdge

from kaleido.encoding import Reuse
from kaleido.hdl.layouts import COL, CTL, ROW
from kaleido.tb.benches import pe_bench
from kaleido.tb.cocotb_util import seed, start
from kaleido.tb.driver import pe_beat
from kaleido.tb.kit import CocotbBackend
from kaleido.tb.runner import config_from_env

CFG = config_from_env()
NONE, PARTIAL, FULL = Reuse.NONE, Reuse.PARTIAL, Reuse.FULL


async def _stream(dut, beats):
    """One beat per cycle (:func:`pe_bench`); the drained tiles in order."""
    return await pe_bench(CocotbBackend(dut), CFG, beats)


@cocotb.test()
async def full8_exhaustive(dut):
    """Every int8 x int8 pair as a one-slot T0 phase: the tile is a * b."""
    await start(dut)
    pairs = list(itertools.product(range(-128, 128), repeat=2))
    beats = [pe_beat(1, 0, 0, 1, a, a, NONE, NONE, b, NONE, NONE) for a, b in pairs]
    out = await _stream(dut, beats)
    bad = [(a, b, v) for (a, b), (_, v) in zip(pairs, out, strict=False) if v != a * b]
    assert len(out) == len(pairs) and not bad, f"{len(bad)} wrong products, first {bad[:4]}"


@cocotb.test()
async def dual_lo_multipliers_exhaustive(dut):
    """DUAL_LO in T1: multiplier A alone (r0 * lo(k)) and multiplier B alone
    (r1 * unsigned k[7:4], no shift) over every (int8, nibble) pair."""
    await start(dut)
    rng = np.random.default_rng(seed())
    cases = list(itertools.product(range(-128, 128), range(16)))
    # k0 PARTIAL -> enA (T1 own p_lo); k1 FULL -> enB off, and vice versa
    beats_a = [
        pe_beat(
            1, 1, 1, 1, a, int(rng.integers(-128, 128)), NONE, NONE, (int(rng.integers(16)) << 4) | nib, PARTIAL, FULL
        )
        for a, nib in cases
    ]
    beats_b = [
        pe_beat(
            1, 1, 1, 1, int(rng.integers(-128, 128)), a, NONE, NONE, (nib << 4) | int(rng.integers(16)), FULL, PARTIAL
        )
        for a, nib in cases
    ]
    out_a = await _stream(dut, beats_a)
    out_b = await _stream(dut, beats_b)
    assert [v for _, v in out_a] == [a * nib for a, nib in cases]
    assert [v for _, v in out_b] == [a * nib for a, nib in cases]


@cocotb.test()
async def forwarding(dut):
    """Operands, tags and control leave east/south one cycle later, unchanged."""
    await start(dut)
    rng = np.random.default_rng(seed())
    for _ in range(200):
        row, col, ctl = (int(rng.integers(0, 1 << n)) for n in (ROW.size, COL.size, CTL.size))
        dut.row_in.value, dut.col_in.value, dut.ctl_in.value = row, col, ctl
        await FallingEdge(dut.clk)
        assert (int(dut.row_out.value), int(dut.col_out.value), int(dut.ctl_out.value)) == (row, col, ctl)
