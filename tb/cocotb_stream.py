"""cocotb testbench of the dispatcher blocks (reuse detector, matcher,
scheduler; run by tb/test_rtl.py under Icarus and Verilator):
golden inputs pushed through ``i``, ``o`` collected, every stall pattern on
both sides; the output must equal the golden model's, nothing lost,
duplicated or reordered."""

from __future__ import annotations

import os

import cocotb
import numpy as np
from cocotb.triggers import FallingEdge, Timer

from kaleido.tb.cocotb_util import reset, seed, start
from kaleido.tb.dispatch_cases import detector_case, matcher_case, scheduler_case
from kaleido.tb.driver import stall_pattern
from kaleido.tb.runner import config_from_env

CFG = config_from_env()
BLOCK = os.environ["KALEIDO_BLOCK"]
PATTERNS = [("none", "none"), ("random", "none"), ("none", "random"), ("random", "random"), ("every4", "every4")]


def _cases(rng, source="random"):
    if BLOCK == "detector":
        return detector_case(CFG, rng, 300, source)
    if BLOCK == "matcher":
        return matcher_case(CFG, rng, 120, source)
    return scheduler_case(CFG, rng, 64 * 3 + 21, source)


async def _run(dut, words, in_stall, out_stall, s):
    bubbles, holds = stall_pattern(in_stall, s), stall_pattern(out_stall, s + 1)
    out, i, idle, cycles = [], 0, 0, 0
    while i < len(words) or idle < 300:
        valid = i < len(words) and not next(bubbles)
        ready = not next(holds)
        dut.i__valid.value = int(valid)
        if valid:
            dut.i__payload.value = words[i]
        dut.o__ready.value = int(ready)
        await Timer(1, unit="ns")  # combinational valid/ready settle
        if valid and int(dut.i__ready.value):
            i += 1
        if ready and int(dut.o__valid.value):
            out.append(int(dut.o__payload.value))
            idle = 0
        elif i >= len(words):
            idle += 1
        cycles += 1
        await FallingEdge(dut.clk)
    dut.i__valid.value = 0
    return out, cycles - 300


@cocotb.test()
async def stall_patterns(dut):
    s = seed()
    dut._log.info(f"{BLOCK}: seed {s} (set KALEIDO_SEED to reproduce)")
    await start(dut)
    for k, (in_stall, out_stall) in enumerate(PATTERNS):
        await reset(dut)  # the scheduler's LFSR restarts from its seed
        ins, exp = _cases(np.random.default_rng(s + k))
        out, cycles = await _run(dut, ins, in_stall, out_stall, s + k)
        assert len(out) == len(exp), f"seed {s} {in_stall}/{out_stall}: {len(out)} outputs, expected {len(exp)}"
        bad = [n for n, (a, b) in enumerate(zip(out, exp, strict=False)) if a != b]
        assert not bad, f"seed {s} {in_stall}/{out_stall}: first mismatch at output {bad[0]}"
        dut._log.info(f"{in_stall}/{out_stall}: {len(ins)} in, {len(out)} out, {cycles} cycles, exact")


@cocotb.test()
async def workload_derived(dut):
    s = seed()
    await start(dut)
    ins, exp = _cases(np.random.default_rng(s), source="workload")
    out, _ = await _run(dut, ins, "random", "random", s)
    assert out == exp, f"seed {s}: workload-derived outputs differ"
