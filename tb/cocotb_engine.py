"""cocotb: the integrated engine (``KaleidoEngine``) on whole heads, under
Icarus and Verilator, each head with its own per-group thresholds on the
``thresholds`` port (the build's own, or seeded random ones).
``S`` equals ``grouped_scores`` exactly; the engine's
``cycles`` port equals :func:`kaleido.model.engine_cycles` exactly (stalls
on ``qk`` and ``s`` never reach the compute), and with no stalls so does
the whole head's cycle count."""

from __future__ import annotations

import json
import os
import time

import cocotb
import numpy as np

from kaleido.golden.grouped import grouped_scores
from kaleido.hdl.engine import check_engine_input
from kaleido.model import engine_cycles
from kaleido.tb.benches import engine_bench
from kaleido.tb.cocotb_util import seed, start
from kaleido.tb.engine_io import decode_scores, engine_words, random_thresholds, threshold_word
from kaleido.tb.kit import CocotbBackend
from kaleido.tb.passes import make_workload
from kaleido.tb.runner import config_from_env, grid_from_env

CFG = config_from_env()
GRID = grid_from_env()
N = GRID[0] * GRID[1] * GRID[2]
SW = CFG.buffer_width()


def head_thresholds(s: int, n: int):
    """Head ``n``'s thresholds: the build's own (``CFG.thresholds``) for
    every third head, seeded random per-group pairs otherwise."""
    if n % 3 == 0:
        return CFG.thresholds
    return random_thresholds(np.random.default_rng([s, n]))


async def run_head(dut, w, in_stall="none", out_stall="none", s=0, thresholds=None):
    """Drive workload ``w``'s head with ``thresholds`` (default the
    build's); returns ``(S, compute_cycles, total_cycles, timing)`` with
    ``timing`` the model's :func:`engine_cycles`."""
    Q, K = w.q, w.k
    thresholds = CFG.thresholds if thresholds is None else thresholds
    check_engine_input(Q, K, w.grid, w.split, CFG, GRID)
    words = engine_words(Q, K, CFG)
    timing = engine_cycles(Q, K, w.grid, w.split, CFG.replace(group_thresholds=thresholds))
    # a hung engine fails fast: no stall pattern here stalls more than 30 %
    limit = 3 * timing.total + 1000
    res = await engine_bench(
        CocotbBackend(dut),
        words,
        SW,
        in_stall=in_stall,
        out_stall=out_stall,
        seed=s,
        limit=limit,
        thresholds=threshold_word(thresholds),
    )
    return decode_scores(res.values, N, SW), res.compute, res.total, timing


def _check(S, compute, total, timing, w, stalled, label, thresholds=None):
    thresholds = CFG.thresholds if thresholds is None else thresholds
    ref = grouped_scores(w.q, w.k, w.grid, w.split, thresholds)
    bad = np.argwhere(S != ref)
    assert not len(bad), (
        f"{label} thresholds {thresholds}: {len(bad)} scores differ, first at {tuple(bad[0])}: "
        f"RTL {S[tuple(bad[0])]}, golden {ref[tuple(bad[0])]}"
    )
    assert compute == timing.compute, f"{label}: RTL {compute} compute cycles, model {timing.compute}"
    if not stalled:
        assert total == timing.total, f"{label}: RTL {total} cycles in all, model {timing.total}"


@cocotb.test()
async def heads(dut):
    """Random, constant and video heads; stalls on neither, input, output
    and both sides; consecutive heads through one engine without reset."""
    s = seed()
    dut._log.info(f"seed {s} grid {GRID} split {CFG.split} batch {CFG.batch}")
    await start(dut)
    cases = [
        ("video", "none", "none"),
        ("random", "random", "none"),
        ("constant", "none", "random"),
        ("video", "random", "random"),
        ("random", "every4", "every4"),
    ]
    picked = range(len(cases))
    if os.environ.get("KALEIDO_HEADS"):  # a subset of the cases by index, e.g. "0,3" (tb/test_engine.py HEADS)
        picked = [int(i) for i in os.environ["KALEIDO_HEADS"].split(",")]
    for n in picked:
        kind, ins, outs = cases[n]
        w = make_workload(kind, GRID, CFG.split, s + n)
        th = head_thresholds(s, n)
        S, compute, total, t = await run_head(dut, w, ins, outs, s + n, th)
        _check(S, compute, total, t, w, ins != "none" or outs != "none", f"seed {s} {kind} in={ins} out={outs}", th)
        dut._log.info(
            f"{kind:8s} in={ins:6s} out={outs:6s} thresholds {th}: compute {compute} (model {t.compute}), total {total}"
        )


@cocotb.test()
async def demo(dut):
    """``make sim``: one synthetic video head; prints the measured cycles
    against the model and the dense array."""
    s = seed()
    await start(dut)
    w = make_workload("video", GRID, CFG.split, s)
    env = os.environ.get("KALEIDO_THRESHOLDS")
    th = CFG.thresholds if not env else tuple(tuple(x) for x in json.loads(env))
    t0 = time.time()
    S, compute, total, t = await run_head(dut, w, "none", "none", s, th)
    wall = time.time() - t0
    _check(S, compute, total, t, w, False, f"demo seed {s}", th)
    lines = [
        f"Kaleido engine demo: synthetic video head, grid {GRID} ({N} tokens), split {CFG.split}, "
        f"batch {CFG.batch}, (F,P) per group {th} (run time; build {CFG.design or 'custom'}), L={CFG.lookahead}, "
        f"{CFG.accumulators} accumulators, seed {s}",
        f"  S ({N}x{N}) == grouped_scores: bit-exact ({N * N} scores)",
        f"  engine compute cycles : {compute:>9,d}  (model {t.compute:,d}: passes {t.passes:,d} + dispatcher "
        f"idle {t.stall:,d} + held by the S banks {t.held:,d} + drain {t.compute - t.passes - t.stall - t.held}; "
        f"scheduling {t.schedule:,d}, overlapped)",
        f"  dense 4x4 array cycles: {t.dense_cycles:>9,d}",
        f"  speedup over dense    : {t.speedup:9.3f}x  (array alone, scheduling hidden: {t.array_speedup:.3f}x)",
        f"  whole head incl. I/O  : {total:>9,d}  (load {t.load:,d} + compute + output {t.output:,d}); "
        f"{total / wall:,.0f} simulated cycles/s",
    ]
    for line in lines:
        dut._log.info(line)
    out = os.environ.get("KALEIDO_DEMO_OUT")
    if out:
        with open(out, "w") as f:
            f.write("\n".join(lines) + "\n")


@cocotb.test(skip=not os.environ.get("KALEIDO_SOAK_CYCLES"))
async def soak(dut):
    """``make soak``: random, constant and video heads with random stalls
    on both sides until KALEIDO_SOAK_CYCLES cycles ran; zero mismatches."""
    s = seed()
    target = int(os.environ["KALEIDO_SOAK_CYCLES"])
    await start(dut)
    cycles = heads_run = 0
    kinds = ("random", "video", "constant")
    t0 = time.time()
    while cycles < target:
        kind = kinds[heads_run % 3]
        w = make_workload(kind, GRID, CFG.split, s + heads_run)
        th = head_thresholds(s, heads_run)
        S, compute, total, t = await run_head(dut, w, "random", "random", s + heads_run, th)
        _check(S, compute, total, t, w, True, f"soak seed {s} head {heads_run} ({kind})", th)
        cycles += total
        heads_run += 1
        if heads_run % 10 == 0:
            dut._log.info(
                f"soak: {heads_run} heads, {cycles:,d}/{target:,d} cycles, {time.time() - t0:.0f} s, 0 mismatches"
            )
    dut._log.info(f"soak done: {heads_run} heads, {cycles:,d} cycles, 0 mismatches, seed {s}")
