"""The engine's accumulation buffer
(:class:`kaleido.hdl.accumulation_buffer.AccumulationBuffer`) against the
loop nest: the golden tiles of every pass of ``iter_passes`` (drained as an
array with one-beat phases would, passes taken at random gaps) accumulate
into exactly ``S = grouped_scores``, streamed out row-major under random
output stalls; each lane's ``writes`` port names the golden ``S`` entry of
its tile; ``drained`` follows the last PE's T3 tiles; two heads through one
buffer (the first batch overwrites ``S``)."""

from __future__ import annotations

import collections

import numpy as np
import pytest
from amaranth.sim import Simulator

from kaleido import KaleidoConfig
from kaleido.golden.grouped import grouped_scores
from kaleido.golden.loopnest import iter_passes
from kaleido.hdl.accumulation_buffer import RING_DEPTH, AccumulationBuffer
from kaleido.tb.engine_io import decode_scores
from kaleido.tb.passes import make_workload

#: small heads (the buffer's 17-port N^2 memory is slow in the Amaranth simulator)
CASES = [
    ("short-batches", KaleidoConfig(split=(2, 3, 3), batch=2), (2, 2, 4)),
    ("odd", KaleidoConfig(split=(1, 3, 2), batch=4, P=4), (3, 1, 3)),
]


def tokens_value(ps):
    """The pass's tokens as the ``pass_tokens`` port takes them."""
    pair = lambda a, f: {
        "anchor": max(int(a), 0),
        "follower": max(int(f), 0),
        "anchor_present": int(a >= 0),
        "follower_present": int(f >= 0),
    }
    return {
        "rows": [pair(a, f) for a, f in ps.rows],
        "cols": [pair(a, f) for a, f in ps.cols],
        "first": int(ps.batch.index == 0),
    }


@pytest.mark.parametrize("name, cfg, grid", CASES, ids=[c[0] for c in CASES])
def test_accumulation_buffer(name, cfg, grid, seed):
    rng = np.random.default_rng(seed)
    R, C = cfg.array_rows, cfg.array_cols
    n = grid[0] * grid[1] * grid[2]
    dut = AccumulationBuffer(cfg, n)
    assert dut.latency == 0 and dut.n_tokens == n
    heads = [make_workload(kind, grid, cfg.split, seed + h) for h, kind in enumerate(("video", "random"))]
    tokens_layout = dut.pass_tokens.shape()

    async def bench(ctx):
        for h, w in enumerate(heads):
            label = f"seed {seed} head {h}"
            passes = list(iter_passes(w.q, w.k, w.grid, w.split, cfg, scheduler=True))
            # per cycle, per PE: (phase, value, golden S entry or None)
            tiles = collections.defaultdict(dict)
            cycle = k = 0
            next_take = 0
            last_t3 = -1  # cycle of the latest pass's T3 tile at the last PE
            while k < len(passes) or cycle <= last_t3:
                ps = passes[k] if k < len(passes) else None
                boundary = ps is not None and k and passes[k - 1].batch.index != ps.batch.index
                # the buffer drains a pass's tiles by the cycle after its last T3 tile
                assert ctx.get(dut.drained) == (cycle > last_t3), f"{label}: cycle {cycle}: drained"
                take = ps is not None and cycle >= next_take and (not boundary or cycle > last_t3)
                ctx.set(dut.pass_taken, take)
                if take:
                    ctx.set(dut.pass_tokens, tokens_layout.const(tokens_value(ps)))
                    values = ps.tiles(cfg.accumulators, cfg.acc_width)
                    for r in range(R):
                        for c in range(C):
                            for phase in range(4):
                                i = (ps.rows[r][0], ps.rows[r][1])[phase >> 1]
                                j = (ps.cols[c][0], ps.cols[c][1])[phase & 1]
                                entry = i * n + j if i >= 0 and j >= 0 else None
                                # one-beat phases: phase p of PE (r, c) drains r + c + p + 1 cycles after the take
                                tiles[cycle + 1 + r + c + phase][(r, c)] = (phase, int(values[r, c, phase]), entry)
                    last_t3 = cycle + 1 + (R - 1) + (C - 1) + 3
                    next_take = cycle + 5 + int(rng.integers(0, 4)) * int(rng.random() < 0.3)
                    k += 1
                now = tiles.pop(cycle, {})
                for r in range(R):
                    for c in range(C):
                        phase, value, entry = now.get((r, c), (0, 0, None))
                        tile = dut.tiles[r][c]
                        ctx.set(tile.valid, (r, c) in now)
                        ctx.set(tile.phase, phase)
                        ctx.set(tile.value, value)
                        write = dut.writes[r][c]
                        got = ctx.get(write.address) if ctx.get(write.enable) else None
                        assert got == entry, f"{label}: cycle {cycle} PE ({r}, {c}): writes {got}, golden {entry}"
                hits = [e for _, _, e in now.values() if e is not None]
                assert len(hits) == len(set(hits)), f"{label}: cycle {cycle}: two tiles for one S entry"
                cycle += 1
                await ctx.tick()
                assert cycle < 100_000
            ctx.set(dut.pass_taken, 0)
            for row in dut.tiles:
                for tile in row:
                    ctx.set(tile.valid, 0)
            assert ctx.get(dut.drained)

            # unload under random output stalls
            ctx.set(dut.unload, 1)
            values = []
            while True:
                ready = bool(rng.random() < 0.7)
                ctx.set(dut.s.ready, ready)
                assert ctx.get(dut.s.valid)
                last = ctx.get(dut.s.payload.last)
                assert ctx.get(dut.unloaded) == (ready and last)
                if ready:
                    values.append(ctx.get(dut.s.payload.value.as_unsigned()))
                    assert last == (len(values) == n * n), f"{label}: last on word {len(values)} of {n * n}"
                await ctx.tick()
                if ready and last:
                    break
            ctx.set(dut.unload, 0)
            S = decode_scores(values, n, cfg.buffer_width())
            ref = grouped_scores(w.q, w.k, w.grid, w.split, cfg.thresholds)
            assert np.array_equal(S, ref), f"{label}: {(S != ref).sum()} scores differ"

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()


def test_accumulation_buffer_rejects_bad_parameters():
    with pytest.raises(TypeError, match=r"n_tokens must be an integer, not 2.5"):
        AccumulationBuffer(KaleidoConfig(), 2.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"n_tokens must be at least 2, not 1"):
        AccumulationBuffer(KaleidoConfig(), 1)
    assert RING_DEPTH == 4
