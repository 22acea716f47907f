"""The engine's input memories (:class:`kaleido.hdl.qk_memory.QKMemory`):
a head's ``qk`` words, under random input stalls, land where the unit reads
find them (each read returns ``Q[token, batch channels]`` or the same of
``K``, as :attr:`KaleidoConfig.batches` cuts them); ``loaded`` marks the
last word; nothing is taken while ``load`` is low; two heads in turn."""

from __future__ import annotations

import numpy as np
import pytest
from amaranth.sim import Simulator

from kaleido import KaleidoConfig
from kaleido.hdl.qk_memory import QKMemory
from kaleido.tb.engine_io import engine_words
from kaleido.tb.kit import stall_pattern
from kaleido.tb.passes import make_workload


@pytest.mark.parametrize(
    "cfg, grid",
    [
        (KaleidoConfig.one_array(split=(4, 7, 5), batch=4), (2, 4, 4)),
        (KaleidoConfig.preset("hunyuan", "one_array", batch=16), (1, 2, 3)),
    ],
    ids=["e1", "hunyuan"],
)
def test_qk_memory(cfg, grid, seed):
    rng = np.random.default_rng(seed)
    n = grid[0] * grid[1] * grid[2]
    n_batches = len(cfg.batches)
    dut = QKMemory(cfg, n, n_batches)
    assert dut.words == 2 * n * n_batches and dut.latency == 0

    async def bench(ctx):
        for h, kind in enumerate(("random", "video")):
            label = f"seed {seed} head {h}"
            w = make_workload(kind, grid, cfg.split, seed + h)
            words = engine_words(w.q, w.k, cfg)
            bubbles = stall_pattern("random", seed + h)
            ctx.set(dut.load, 0)  # not loading: nothing is taken
            ctx.set(dut.qk.valid, 1)
            ctx.set(dut.qk.payload.as_value(), words[0])
            for _ in range(3):
                assert not ctx.get(dut.qk.ready) and not ctx.get(dut.loaded)
                await ctx.tick()
            ctx.set(dut.load, 1)
            i = 0
            while i < len(words):
                valid = not next(bubbles)
                ctx.set(dut.qk.valid, valid)
                ctx.set(dut.qk.payload.as_value(), words[i])
                assert ctx.get(dut.qk.ready)
                assert ctx.get(dut.loaded) == (valid and i == len(words) - 1), f"{label}: loaded at word {i}"
                i += valid
                await ctx.tick()
            ctx.set(dut.qk.valid, 0)
            ctx.set(dut.load, 0)
            for _ in range(200):
                b = int(rng.integers(0, n_batches))
                c0, count = cfg.batches[b]
                a, f = (int(t) for t in rng.integers(0, n, 2))
                for Z, read in ((w.q, dut.q), (w.k, dut.k)):
                    ctx.set(read.batch, b)
                    ctx.set(read.anchor, a)
                    ctx.set(read.follower, f)
                    for token, port in ((a, read.anchor_values), (f, read.follower_values)):
                        got = [ctx.get(port)[c] for c in range(count)]
                        assert got == Z[token, c0 : c0 + count].tolist(), f"{label}: token {token} batch {b}"

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()


@pytest.mark.parametrize(
    "args, error, match",
    [
        ((1, 1), ValueError, r"n_tokens must be at least 2, not 1"),
        ((4, 0), ValueError, r"n_batches must be at least 1, not 0"),
        ((4, "2"), TypeError, r"n_batches must be an integer, not '2'"),
    ],
)
def test_qk_memory_rejects_bad_parameters(args, error, match):
    with pytest.raises(error, match=match):
        QKMemory(KaleidoConfig.one_array(), *args)
