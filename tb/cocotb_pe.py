"""cocotb tests of one Kaleido PE (run by tb/test_rtl.py under Icarus and
Verilator): the arithmetic exhaustively, every (phase, slot kind, tag)
combination against the golden PE model."""

from __future__ import annotations

import itertools

import cocotb
import numpy as np
from cocotb.triggers import FallingEdge

from kaleido.golden.array import run_beats
from kaleido.hdl.layouts import COL, CTL, ROW
from kaleido.tb.cocotb_util import seed, start
from kaleido.tb.driver import Packer, TileDecoder, pe_beat
from kaleido.tb.runner import config_from_env

CFG = config_from_env()
PACK_ROW, PACK_COL, PACK_CTL = Packer(ROW), Packer(COL), Packer(CTL)
DECODE = TileDecoder(CFG.acc_width)
NONE, PARTIAL, FULL = 0, 1, 2


async def _stream(dut, beats):
    """Drive one beat per cycle; return the drained tiles in order."""
    out = []
    for b in beats:
        dut.row_in.value = PACK_ROW({("r0",): b.r0[0], ("r1",): b.r1[0], ("q0",): b.q0[0], ("q1",): b.q1[0]})
        dut.col_in.value = PACK_COL({("k",): b.k[0], ("k0",): b.k0[0], ("k1",): b.k1[0]})
        dut.ctl_in.value = PACK_CTL({("slot",): b.slot, ("kind",): b.kind, ("phase",): b.phase, ("last",): b.last})
        await FallingEdge(dut.clk)
        valid, phase, value = DECODE(int(dut.tile.value))
        if valid:
            out.append((phase, value))
    dut.ctl_in.value = 0
    return out


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
async def every_tag_combination(dut):
    """Every (phase, slot kind, q0, q1, k0, k1): one slot with random
    operands, then the four phase drains starting at that phase, so every
    register's content is observed; against the golden PE model."""
    s = seed()
    rng = np.random.default_rng(s)
    await start(dut)
    beats = []
    for phase, kind, q0, q1, k0, k1 in itertools.product(range(4), range(2), *[range(4)] * 4):
        if not kind:
            q1, k1 = q0, k0  # FULL8 carries one channel
        r0, r1, k = (int(x) for x in rng.integers(-128, 128, 3))
        beats.append(pe_beat(1, kind, phase, 0, r0, r0 if not kind else r1, q0, q1, k, k0, k1))
        beats += [pe_beat(0, 0, (phase + i) % 4, 1, 0, 0, 0, 0, 0, 0, 0) for i in range(4)]
    out = await _stream(dut, beats)
    exp = [
        (int(p), int(t[0, 0]))
        for p, t in run_beats(beats, 1, 1, accumulators=CFG.accumulators, acc_width=CFG.acc_width)
    ]
    bad = [i for i, (a, b) in enumerate(zip(out, exp, strict=False)) if a != b]
    assert len(out) == len(exp) and not bad, f"seed {s}: {len(bad)} drains differ, first at {bad[:3]}"


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
