"""The Q K^T tile engine's front end (issue 13, docs/CORE.md "The tile
feeder"): a query box and a key box loaded from the memory model through
the read port and streamed into the engine built for the tile shape.

- The feeder's words equal the engine's input words of the golden padded
  boxes (``golden.core.pad_box``), and its last word comes exactly in the
  cycle ``kaleido.model.tile_feed_cycles`` says.
- With the engine: the S tile equals ``grouped_scores`` of the padded
  boxes bit for bit, its real part equals the head's own scores (tile-local
  reuse with padding), and the engine's ``cycles`` equal ``engine_cycles``
  of the padded boxes.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from amaranth.sim import Simulator

from kaleido.config import CoreConfig, KaleidoConfig
from kaleido.golden.core import box_mask, memory_image, pad_box
from kaleido.golden.grouped import grouped_scores
from kaleido.loopnest import tile_boxes
from kaleido.model import engine_cycles, tile_feed_cycles
from kaleido.tb.core_benches import TileQKBench
from kaleido.tb.engine_io import decode_scores, engine_words
from kaleido.tb.kit import unpack_rows
from kaleido.tb.passes import make_workload

SEED = int(os.environ.get("KALEIDO_SEED", "1"))


def head(grid, config: KaleidoConfig, seed: int):
    w = make_workload("video", grid, config.split, seed)
    return w.q, w.k


def command(qb, kb, grid, n_tokens: int, bpr: int, with_v: bool = False) -> dict:
    """The feeder's command for boxes ``qb``, ``kb`` with Q at beat 0, K
    right after it and V after K."""
    T, H, W = grid

    def box(b):
        t0, y0, x0 = b.origin
        t, y, x = b.shape
        return {"origin": (t0 * H + y0) * W + x0, "t": t, "y": y, "x": x}

    return {
        "q": box(qb),
        "k": box(kb),
        "q_base": 0,
        "k_base": n_tokens * bpr,
        "v_base": 2 * n_tokens * bpr,
        "with_v": int(with_v),
        "plane": H * W,
        "row": W,
    }


def run_feeder(Q, K, grid, config, core, pairs, *, engine: bool, V=None, limit: int = 400_000):
    """Each (query box, key box) of ``pairs`` through the bench; returns per
    pair the words (or the engine's scores and ``cycles``), the cycle of
    the last ``qk`` word counted from the command's acceptance, and (with
    ``V``, loaded too) the ``v_tile`` buffer's words."""
    bpr = config.d // core.port_bytes
    image = memory_image(np.concatenate([Q, K] + ([] if V is None else [V])), core.port_bytes)
    dut = TileQKBench(image, config, core, engine=engine)
    out: list = []

    async def bench(ctx):
        feeder = dut.feeder
        ctx.set(dut.s.ready if engine else dut.qk.ready, 1)
        for qb, kb in pairs:
            ctx.set(dut.cmd.payload, command(qb, kb, grid, len(Q), bpr, V is not None))
            ctx.set(dut.cmd.valid, 1)
            while not ctx.get(dut.cmd.ready):
                await ctx.tick()
            await ctx.tick()
            ctx.set(dut.cmd.valid, 0)
            cycle, words, last_word, scores = 0, [], None, []
            n_words = 2 * core.tile_tokens * len(config.batches)
            while True:
                cycle += 1
                assert cycle < limit, f"seed {SEED}: no end after {limit} cycles"
                if ctx.get(feeder.qk.valid) and ctx.get(feeder.qk.ready):
                    words.append(ctx.get(feeder.qk.payload.as_value()))
                    if len(words) == n_words:
                        last_word = cycle
                if engine and ctx.get(dut.s.valid):
                    scores.append(ctx.get(dut.s.payload.value.as_unsigned()))
                    if ctx.get(dut.s.payload.last):
                        await ctx.tick()
                        break
                await ctx.tick()
                if not engine and last_word is not None:
                    break
            cycles = ctx.get(dut.engine.cycles) if engine else None
            v_words = []
            if V is not None:
                for a in range(core.tile_tokens):
                    ctx.set(feeder.v_addr, a)
                    await ctx.tick()
                    v_words.append(ctx.get(feeder.v_data))
            out.append((words, last_word, scores, cycles, v_words))

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return out


#: (grid, tile, split, batch, port bytes, latency): full tiles, clipped
#: boxes on every axis, a grid smaller than the tile, beats of a whole row
FEED_CASES = [
    ((2, 4, 8), (2, 4, 4), (4, 2, 2), 4, 4, 3),
    ((3, 3, 5), (2, 2, 4), (3, 5, 4), 4, 4, 5),
    ((1, 2, 3), (2, 2, 4), (2, 3, 3), 2, 8, 1),
    ((2, 4, 12), (2, 4, 8), (16, 56, 56), 16, 16, 32),  # the default configuration
]


@pytest.mark.parametrize("grid, tile, split, batch, port, latency", FEED_CASES)
def test_feeder_words_and_cycles(grid, tile, split, batch, port, latency):
    """Every pair of boxes of a head (at most 6): the words are the padded
    boxes' engine words, the last one in the model's cycle."""
    config = KaleidoConfig.one_array(split=split, batch=batch)
    core = CoreConfig(tile=tile, port_bytes=port, mem_latency=latency)
    Q, K = head(grid, config, SEED)
    boxes = tile_boxes(grid, tile)
    rng = np.random.default_rng(SEED)
    pairs = [(boxes[rng.integers(len(boxes))], boxes[rng.integers(len(boxes))]) for _ in range(min(6, len(boxes) ** 2))]
    runs = run_feeder(Q, K, grid, config, core, pairs, engine=False)
    for (qb, kb), (words, last, _, _, _) in zip(pairs, runs, strict=True):
        want = engine_words(pad_box(Q, qb, tile), pad_box(K, kb, tile), config)
        wrong = sum(a != b for a, b in zip(words, want, strict=False))
        assert words == want, f"seed {SEED}: boxes {qb}, {kb}: {wrong} words differ of {len(want)}"
        assert last == tile_feed_cycles(qb.shape, kb.shape, config, core), f"seed {SEED}: boxes {qb}, {kb}"


@pytest.mark.parametrize(
    "grid, tile, split, batch",
    [((2, 4, 4), (2, 2, 4), (2, 3, 3), 4), ((3, 2, 3), (2, 2, 2), (3, 2, 3), 4)],
)
def test_tile_engine_scores(grid, tile, split, batch):
    """Two tile pairs through the feeder and the engine: S of the padded
    boxes bit for bit, its real part the head's, ``cycles`` the model's."""
    config = KaleidoConfig.one_array(split=split, batch=batch)
    core = CoreConfig(tile=tile, port_bytes=4, mem_latency=3)
    Q, K = head(grid, config, SEED)
    boxes = tile_boxes(grid, tile)
    pairs = [(boxes[0], boxes[-1]), (boxes[-1], boxes[len(boxes) // 2])]
    S_head = grouped_scores(Q, K, grid, split, config.thresholds)
    runs = run_feeder(Q, K, grid, config, core, pairs, engine=True)
    for (qb, kb), (_, _, scores, cycles, _) in zip(pairs, runs, strict=True):
        Qp, Kp = pad_box(Q, qb, tile), pad_box(K, kb, tile)
        S = decode_scores(scores, core.tile_tokens, config.buffer_width())
        ref = grouped_scores(Qp, Kp, tile, split, config.thresholds)
        assert np.array_equal(S, ref), f"seed {SEED}: boxes {qb}, {kb}: {(S != ref).sum()} scores differ"
        real = S[np.ix_(box_mask(qb, tile), box_mask(kb, tile))]
        assert np.array_equal(real, S_head[np.ix_(qb.tokens, kb.tokens)]), f"seed {SEED}: not the head's scores"
        assert cycles == engine_cycles(Qp, Kp, tile, split, config).compute, f"seed {SEED}: boxes {qb}, {kb}"


@pytest.mark.parametrize("grid, tile, split, batch, port, latency", FEED_CASES[1:3])
def test_feeder_loads_v(grid, tile, split, batch, port, latency):
    """``with_v``: the key box of V lands in ``v_tile`` in the tile's
    layout, the words and the cycles (V's runs added) as the model says."""
    config = KaleidoConfig.one_array(split=split, batch=batch)
    core = CoreConfig(tile=tile, port_bytes=port, mem_latency=latency)
    Q, K = head(grid, config, SEED)
    V = np.random.default_rng(SEED).integers(-128, 128, size=Q.shape, dtype=np.int8)
    boxes = tile_boxes(grid, tile)
    pairs = [(boxes[0], boxes[-1]), (boxes[-1], boxes[0])]
    for (qb, kb), (words, last, _, _, v_words) in zip(
        pairs, run_feeder(Q, K, grid, config, core, pairs, engine=False, V=V), strict=True
    ):
        assert words == engine_words(pad_box(Q, qb, tile), pad_box(K, kb, tile), config), f"seed {SEED}"
        assert last == tile_feed_cycles(qb.shape, kb.shape, config, core, with_v=True), f"seed {SEED}"
        got = unpack_rows(v_words, config.d)[box_mask(kb, tile)]
        assert np.array_equal(got, V[kb.tokens]), f"seed {SEED}: boxes {qb}, {kb}: V tile differs"


def test_feeder_rejects_a_port_wider_than_a_row():
    from kaleido.hdl.tile_feeder import TileFeeder

    with pytest.raises(ValueError, match="port_bytes"):
        TileFeeder(KaleidoConfig.one_array(split=(2, 3, 3)), CoreConfig(tile=(2, 2, 2), port_bytes=16))
