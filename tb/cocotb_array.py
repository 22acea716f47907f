"""cocotb regression of the Kaleido PE array (run by tb/test_rtl.py
under Icarus and Verilator). Every check compares the RTL against the
golden model: the beat model (run_beats) and reuse_scores. Random passes
under every stall pattern: tb/test_blocks.py."""

from __future__ import annotations

import json
import os
import time

import cocotb
import numpy as np
from cocotb.triggers import FallingEdge

from kaleido.model import VARIANTS, run_model, stream_cycles
from kaleido.tb.benches import ArrayResult, array_bench, array_tile_latency
from kaleido.tb.cocotb_util import seed, start
from kaleido.tb.driver import expected_drains
from kaleido.tb.kit import CocotbBackend
from kaleido.tb.passes import coverage_pass, make_workload, random_pass, split_and_place, workload_passes
from kaleido.tb.runner import config_from_env

CFG = config_from_env()
LATENCY = array_tile_latency(CFG)


def _expect(cfg, beats):
    return expected_drains(beats, cfg.array_rows, cfg.array_cols, cfg.accumulators, cfg.acc_width)


def _check_latency(res: ArrayResult):
    for (r, c), offsets in res.latency.items():
        assert offsets == [LATENCY(r, c)] * len(offsets), f"PE ({r},{c}) drain offsets {offsets[:8]}"


async def _run(dut, beats, **kw) -> ArrayResult:
    return await array_bench(CocotbBackend(dut), CFG, beats, **kw)


@cocotb.test()
async def random_passes(dut):
    """Random passes back to back: random operands and tags (ABSENT too),
    DUAL_LO slots from the golden matcher, empty phases; drains and drain
    latency (the array's tile_latency) exact; no stall -> one beat per cycle."""
    s = seed()
    dut._log.info(f"seed {s} (set KALEIDO_SEED to reproduce)")
    rng = np.random.default_rng(s)
    await start(dut)
    beats = coverage_pass(rng, CFG) + random_pass(rng, CFG, absent_p=1.0)[0]  # every row and column unpaired
    for _ in range(40):
        beats += random_pass(rng, CFG, absent_p=0.25)[0]
    # coverage: every (q, k) tag pair, ABSENT included, meets at every PE in a slot
    for r in range(CFG.array_rows):
        for c in range(CFG.array_cols):
            seen = {(int(b.q0[r]), int(b.k0[c])) for b in beats if b.slot}
            assert len(seen) == 16, f"seed {s}: PE ({r},{c}) saw only {sorted(seen)}"
    assert any(b.kind for b in beats), "no DUAL_LO slot generated"
    res = await _run(dut, beats)
    assert res.drains == _expect(CFG, beats), f"seed {s}: drains differ"
    _check_latency(res)
    # throughput: the stream occupies exactly the cycle model's stream_cycles
    assert res.last_tile is not None and res.last_tile + 1 == stream_cycles(len(beats), CFG)


@cocotb.test()
async def workloads(dut):
    """Whole heads through the array, accumulated as the accumulation buffer
    would, equal reuse_scores: synthetic video, random and constant bounds,
    odd extents, odd channel counts per batch, unpaired rows and columns."""
    s = seed()
    await start(dut)
    cases = [
        ("video", (2, 3, 3), (5, 3, 4), "pe-m"),
        ("random", (3, 2, 3), (3, 4, 1), "pe"),
        ("constant", (2, 4, 2), (2, 2, 3), "full"),
        ("video", (1, 5, 4), (7, 1, 2), "full"),
        ("video", (2, 4, 4), (9, 4, 3), "pe-sh"),
    ]
    for kind, grid, split, variant in cases:
        cfg = CFG.replace(split=split)
        scheduler, matcher = VARIANTS[variant]
        S_expected, passes = workload_passes(cfg, grid, kind, seed=s, matcher=matcher, scheduler=scheduler)
        beats = [b for bs, _ in passes for b in bs]
        res = await _run(dut, beats)
        S = split_and_place(S_expected.shape, passes, res.drains)
        assert (S == S_expected).all(), f"seed {s}: {kind} {grid} {split} differs from reuse_scores"
        # the cycle model predicts the RTL's cycle count exactly
        w = make_workload(kind, grid, split, s)
        model = run_model(w.q, w.k, w.grid, w.split, cfg, variant=variant)
        assert res.last_tile is not None
        measured = res.last_tile + 1
        assert measured == model.cycles, f"seed {s}: {kind} {variant}: RTL {measured} cycles, model {model.cycles}"
        dut._log.info(
            f"{kind} grid {grid} split {split} {variant}: {len(passes)} passes, "
            f"{len(beats)} beats, {measured} cycles = model, exact"
        )


@cocotb.test()
async def reset_mid_pass(dut):
    """Reset in the middle of a pass; the pass after it is exact."""
    s = seed()
    rng = np.random.default_rng(s)
    await start(dut)
    first = random_pass(rng, CFG, n=CFG.batch)[0]
    await _run(dut, first[: len(first) // 2 + 1], flush=False)
    dut.rst.value = 1
    await FallingEdge(dut.clk)
    await FallingEdge(dut.clk)
    dut.rst.value = 0
    beats = random_pass(rng, CFG)[0] + random_pass(rng, CFG)[0]
    res = await _run(dut, beats)
    assert res.drains == _expect(CFG, beats), f"seed {s}: pass after reset differs"


@cocotb.test()
async def throughput(dut):
    """Simulation throughput (cycles/s) of the array on this simulator,
    written to perf.json in the build directory (a measurement, not a check
    of speed)."""
    rng = np.random.default_rng(seed())
    await start(dut)
    beats = []
    while len(beats) < 4000:
        beats += random_pass(rng, CFG, n=CFG.batch)[0]
    t0 = time.perf_counter()
    res = await _run(dut, beats)
    dt = time.perf_counter() - t0
    assert res.drains == _expect(CFG, beats)
    perf = {"cycles": res.cycles, "seconds": dt, "cycles_per_s": res.cycles / dt}
    with open(os.path.join(os.getcwd(), "perf.json"), "w") as f:
        json.dump(perf, f)
    dut._log.info(f"throughput: {perf['cycles_per_s']:.0f} cycles/s ({res.cycles} cycles in {dt:.2f} s)")


@cocotb.test(skip=os.environ.get("KALEIDO_SOAK_CYCLES") is None)
async def soak(dut):
    """Long random streams with random input bubbles and output holds until
    ``KALEIDO_SOAK_CYCLES`` cycles have run; zero mismatches allowed.
    Run by ``make soak`` (pytest -m soak)."""
    target = int(os.environ["KALEIDO_SOAK_CYCLES"])
    s = seed()
    rng = np.random.default_rng(s)
    await start(dut)
    cycles = chunks = 0
    t0 = time.perf_counter()
    while cycles < target:
        beats = []
        for _ in range(50):
            beats += random_pass(rng, CFG, absent_p=0.2)[0]
        pattern = ("none", "random", "every4")[chunks % 3]
        res = await _run(
            dut, beats, in_stall=pattern, out_stall=("random", "none", "every4")[chunks % 3], seed=s + chunks
        )
        assert res.drains == _expect(CFG, beats), f"seed {s}: soak chunk {chunks} ({pattern}) differs"
        cycles += res.cycles
        chunks += 1
        if chunks % 10 == 0:
            dut._log.info(
                f"soak: {cycles:,} / {target:,} cycles, {chunks} chunks, "
                f"{cycles / (time.perf_counter() - t0):.0f} cycles/s, 0 mismatches"
            )
    dut._log.info(f"soak done: {cycles:,} cycles in {chunks} chunks, 0 mismatches (seed {s})")
