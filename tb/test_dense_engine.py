"""The dense Q K^T tile engine (``kaleido.hdl.dense_engine.DenseEngine``) in
the Amaranth simulator: ``S`` bit-exact against the exact integer product
(the golden model with reuse off) and ``cycles`` equal to
:func:`kaleido.model.dense_engine_cycles`."""

from __future__ import annotations

import numpy as np
import pytest

from kaleido import KaleidoConfig
from kaleido.golden.core import pad_box
from kaleido.golden.grouped import grouped_scores
from kaleido.hdl.dense_engine import DenseEngine, check_dense_engine
from kaleido.loopnest import dense_pass_beats, tile_boxes
from kaleido.model import dense_engine_cycles
from kaleido.tb.benches import engine_bench
from kaleido.tb.engine_io import decode_scores, engine_words
from kaleido.tb.kit import simulate

#: the golden model's thresholds with reuse off (F = P = 9: never)
REUSE_OFF = ((9, 9),) * 3


def simulate_dense_engine(cfg, grid, heads, *, in_stall="none", out_stall="none", seed=0):
    """Heads ``[(Q, K), ...]`` back to back through one ``DenseEngine``
    built for ``grid``; returns ``[(S, compute, total, held), ...]``."""
    dut = DenseEngine(cfg, grid)
    held = [0]

    def count_held(be, cycle):
        held[0] += be.get("accumulator.hold")

    async def bench(be):
        out = []
        for k, (Q, K) in enumerate(heads):
            held[0] = 0
            res = await engine_bench(
                be,
                engine_words(Q, K, cfg),
                dut.s_width,
                in_stall=in_stall,
                out_stall=out_stall,
                seed=seed + 2 * k,
                each_cycle=count_held,
            )
            out.append((decode_scores(res.values, dut.n_tokens, dut.s_width), res.compute, res.total, held[0]))
        return out

    return simulate(dut, bench)


def random_head(rng, n, d):
    return rng.integers(-128, 128, (n, d), dtype=np.int8), rng.integers(-128, 128, (n, d), dtype=np.int8)


def check_head(cfg, grid, Q, K, S, compute, total, held, seed, *, stalls=False):
    ref = Q.astype(np.int64) @ K.T.astype(np.int64)
    assert np.array_equal(ref, grouped_scores(Q, K, grid, cfg.split, REUSE_OFF))  # golden, reuse off
    assert np.array_equal(S, ref), f"seed {seed}: {(S != ref).sum()} scores differ"
    t = dense_engine_cycles(len(Q), cfg)
    assert compute == t.compute, f"seed {seed}: RTL {compute} compute cycles, model {t.compute}"
    assert held == t.held, f"seed {seed}: RTL held the array {held} cycles, model {t.held}"
    if not stalls:
        assert total == t.total, f"seed {seed}: RTL {total} cycles in all, model {t.total}"


#: (grid, split, batch, S banks, FIFO depth, input and output stalls)
CASES = [
    # short batches (2 and 3 channels): every pass padded with bubbles
    ((2, 2, 4), (2, 3, 3), 4, 16, 16, "none", "none"),
    # N = 9: the last row and column blocks are partial; groups not a multiple of the batch
    ((1, 3, 3), (5, 3, 4), 4, 16, 16, "random", "random"),
    # the Wan split (44/42/42: batches of 16, 16, 12, 16, 16, 10, ...), d = 128
    ((2, 2, 4), (44, 42, 42), 16, 16, 16, "none", "none"),
    # one and two S banks: the FIFOs fill and the buffer holds the array
    ((2, 2, 2), (3, 2, 3), 4, 1, 16, "none", "none"),
    ((1, 2, 5), (8, 4, 4), 8, 2, 16, "none", "random"),
]


@pytest.mark.parametrize("grid, split, batch, banks, depth, ins, outs", CASES)
def test_dense_engine_amaranth(grid, split, batch, banks, depth, ins, outs, seed):
    """S bit-exact and the cycles (compute, total, held) the model's."""
    cfg = KaleidoConfig.one_array(split=split, batch=batch, s_banks=banks, s_fifo_depth=depth)
    rng = np.random.default_rng(seed)
    Q, K = random_head(rng, int(np.prod(grid)), cfg.d)
    [(S, compute, total, held)] = simulate_dense_engine(cfg, grid, [(Q, K)], in_stall=ins, out_stall=outs, seed=seed)
    check_head(cfg, grid, Q, K, S, compute, total, held, seed, stalls=(ins, outs) != ("none", "none"))
    if banks < 4 and ins == "none":  # the holds show in the cycles
        assert held > 0, f"seed {seed}: {banks} bank(s) never held the array"


def test_dense_engine_padded_boxes_and_two_heads(seed):
    """Two heads through one instance: the padded tile pair of a box
    clipped on every axis (zero tokens where the tile has none, as the
    tile feeder sends them), then a full random one (nothing leaks from the
    first: banks, walk, first-batch overwrite)."""
    tile, grid = (2, 2, 4), (3, 3, 6)
    cfg = KaleidoConfig.one_array(split=(5, 3, 4), batch=4)
    rng = np.random.default_rng(seed)
    Qh, Kh = random_head(rng, int(np.prod(grid)), cfg.d)
    boxes = tile_boxes(grid, tile)
    qb, kb = boxes[-1], boxes[len(boxes) // 2]  # the corner box is clipped on every axis
    assert qb.shape != tile
    Q1, K1 = pad_box(Qh, qb, tile), pad_box(Kh, kb, tile)
    Q2, K2 = random_head(rng, int(np.prod(tile)), cfg.d)
    results = simulate_dense_engine(cfg, tile, [(Q1, K1), (Q2, K2)], seed=seed)
    for (Q, K), (S, compute, total, held) in zip([(Q1, K1), (Q2, K2)], results, strict=True):
        check_head(cfg, tile, Q, K, S, compute, total, held, seed)


@pytest.mark.parametrize("n, banks", [(2, 16), (9, 1), (16, 2), (64, 16), (64, 4), (100, 8)])
def test_dense_engine_model_methods(n, banks):
    """The model's two methods agree (Lindley's no-hold check and the
    event simulation); with no hold the compute is the beats plus the tail."""
    cfg = KaleidoConfig.one_array(s_banks=banks)
    auto, events = dense_engine_cycles(n, cfg), dense_engine_cycles(n, cfg, method="events")
    assert auto == events
    rb = -(-n // cfg.array_rows) * -(-n // cfg.array_cols)
    assert auto.beats == rb * sum(dense_pass_beats(c, cfg) for _, c in cfg.batches)
    assert auto.compute >= auto.beats + cfg.array_rows + cfg.array_cols + 1


def test_dense_pass_beats():
    cfg = KaleidoConfig.one_array()
    assert [dense_pass_beats(c, cfg) for c in (1, 2, 3, 16)] == [3, 3, 3, 16]
    assert dense_pass_beats(1, cfg.replace(array_rows=8, array_cols=8)) == 5


@pytest.mark.parametrize(
    "grid, match",
    [((1, 1, 1), "at least 2"), ((16, 16, 16), "at most 1024"), ((0, 2, 2), "grid")],
)
def test_dense_engine_rejects_bad_geometry(grid, match):
    with pytest.raises(ValueError, match=match):
        check_dense_engine(KaleidoConfig.one_array(), grid)
    with pytest.raises(ValueError, match=match):
        DenseEngine(KaleidoConfig.one_array(), grid)


def test_dense_engine_model_rejects_bad_input():
    with pytest.raises(TypeError, match="2.5"):
        dense_engine_cycles(2.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="1"):
        dense_engine_cycles(1)
    with pytest.raises(ValueError, match="'fast'"):
        dense_engine_cycles(8, method="fast")
    with pytest.raises(TypeError, match="config"):
        DenseEngine("hunyuan", (2, 2, 2))  # type: ignore[arg-type]


def test_core_model_rejects_an_unknown_variant():
    from kaleido.model import core_cycles

    Z = np.zeros((8, 48), np.int8)
    with pytest.raises(ValueError, match="'sparse'"):
        core_cycles(Z, Z, Z, (2, 2, 2), KaleidoConfig.one_array(split=(16, 16, 16)), variant="sparse")
