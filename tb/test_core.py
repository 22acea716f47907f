"""The attention core (issue 13, docs/CORE.md "The core"): a head from the
memory model through ``KaleidoAttentionCore`` into an O memory; O equals
the tiled golden walk (``golden.core.core_attention`` with the
configuration's thresholds) bit for bit."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
from amaranth.sim import Simulator

from kaleido.config import CoreConfig, KaleidoConfig, SoftmaxFormat
from kaleido.golden.core import core_attention, memory_image
from kaleido.golden.softmax import head_constant
from kaleido.golden.workloads import synthetic_video
from kaleido.model import core_cycles
from kaleido.tb.core_benches import CoreBench

SEED = int(os.environ.get("KALEIDO_SEED", "1"))


def core_head(grid, split, seed: int):
    """A seeded video head (Q, K, V int8) on ``grid`` with ``split``."""
    w = synthetic_video("hunyuan", grid, "slow", seed % 1000)
    d = sum(split)
    rng = np.random.default_rng(seed)
    take = rng.choice(w.q.shape[1], size=d, replace=d > w.q.shape[1])
    return w.q[:, take], w.k[:, take], w.v[:, take], w.scales


def simulate_core(Q, K, V, grid, scales, config, core, fmt=None, limit=3_000_000):
    """One head through the core in the Amaranth simulator; returns O
    (int64 ``(N, d)``) and the core's ``cycles``."""
    fmt = fmt or SoftmaxFormat()
    n, d = Q.shape
    C = config.array_cols
    bpr = d // core.port_bytes
    image = memory_image(np.concatenate([Q, K, V]), core.port_bytes)
    dut = CoreBench(image, n * d, config, core, fmt)
    qs, ks, _ = scales
    T, H, W = grid
    cmd = {
        "t": T,
        "h": H,
        "w": W,
        "q_base": 0,
        "k_base": n * bpr,
        "v_base": 2 * n * bpr,
        "o_base": 0,
        "constant": head_constant(qs * ks / math.sqrt(d), fmt),
    }
    out: list = []

    async def bench(ctx):
        ctx.set(dut.cmd.payload, cmd)
        ctx.set(dut.cmd.valid, 1)
        await ctx.tick()
        ctx.set(dut.cmd.valid, 0)
        cycles = 0
        while ctx.get(dut.busy):
            await ctx.tick()
            cycles += 1
            assert cycles < limit, f"seed {SEED}: the core did not finish in {limit} cycles"
        width = dut.width
        vals = [ctx.get(dut.o_banks[e % C].data[e // C]) for e in range(n * d)]
        o = np.array(vals, dtype=np.int64)
        o = np.where(o >> (width - 1) & 1, o - (1 << width), o).reshape(n, d)
        out.append((o, ctx.get(dut.cycles)))

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return out[0]


@pytest.mark.parametrize(
    "grid, tile, split, batch",
    [
        ((2, 2, 4), (2, 2, 4), (4, 4, 4), 4),  # one tile: the whole head
        ((2, 4, 4), (2, 2, 4), (4, 4, 4), 4),  # two tiles
        ((3, 3, 5), (2, 2, 4), (4, 8, 4), 4),  # clipped boxes on every axis (8 boxes)
        ((2, 2, 4), (2, 2, 4), (5, 4, 7), 4),  # channel blocks across array_cols boundaries
    ],
)
def test_core_is_bit_exact(grid, tile, split, batch):
    config = KaleidoConfig(split=split, batch=batch)
    core = CoreConfig(tile=tile, port_bytes=4, mem_latency=3, max_tokens=64)
    Q, K, V, scales = core_head(grid, split, SEED)
    o, cycles = simulate_core(Q, K, V, grid, scales, config, core)
    ref, _ = core_attention(
        Q, K, V, grid, split, scales=scales, core=core, thresholds=config.thresholds, v_full=config.F
    )
    assert np.array_equal(o, ref), f"seed {SEED}: {(o != ref).sum()} of {o.size} outputs differ"
    model = core_cycles(Q, K, V, grid, config, core)
    assert cycles == model, f"seed {SEED}: the core took {cycles} cycles, the model says {model}"
