"""Golden-side inputs and expected outputs of the P V tile stage
(:class:`kaleido.hdl.pv_tile.PvTile`) for ``tb/test_pv_tile.py`` and the
reference-vs-RTL harness (:mod:`kaleido.tb.blocks`).

A query tile of ``rows`` rows walks key tiles (boxes of at most the
stage's tile, odd extents allowed at the grid's edge): each key tile's V
(``random``: followers near their anchors, so every reuse class occurs;
``video``: smooth) and 7-bit P. The expected output is
:func:`kaleido.golden.core.pv_tile_accumulate`, one word per (channel
block, row) in the stage's order.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kaleido.config import KaleidoConfig, SoftmaxFormat
from kaleido.golden.core import pv_tile_accumulate
from kaleido.hdl.o_accumulator import o_acc_layout
from kaleido.hdl.pv_tile import channel_blocks, pv_tile_in_layout
from kaleido.hdl.softmax import default_acc_width
from kaleido.tb.driver import Packer

__all__ = ["pv_tile_bench", "KeyTile", "random_key_tile", "pv_tile_words", "pv_tile_case", "CASE_TILE", "CASE_ROWS"]

#: the block case's stage: key tiles of at most 2x2x4, query tiles of at most 6 rows
CASE_TILE = (2, 2, 4)
CASE_ROWS = 6

KeyTile = tuple[tuple[int, int, int], np.ndarray, np.ndarray]  # (shape, P rows x keys, V keys x d)


def random_key_tile(
    rng: np.random.Generator, shape, rows: int, d: int, source: str = "random", *, small_p: bool = False
) -> KeyTile:
    """One key tile of box ``shape``: P (``rows`` x keys, 0..127, the first
    row all 127; with ``small_p`` the other rows four values in five below
    16, for small-P pairing) and V (keys x d int8; ``random``: half the
    values near the previous token's, ``video``: a smooth ramp with small
    noise)."""
    n = int(np.prod(shape))
    if source == "video":
        base = rng.integers(-100, 100, d)
        V = np.clip(base[None, :] + rng.integers(-2, 3, (n, d)), -128, 127)
    else:
        V = rng.integers(-128, 128, (n, d))
        near = np.clip(np.roll(V, 1, axis=0) + rng.integers(-3, 4, V.shape), -128, 127)
        V = np.where(rng.random(V.shape) < 0.5, near, V)
    P = rng.integers(0, 128, (rows, n))
    if small_p:
        P = np.where(rng.random(P.shape) < 0.8, rng.integers(0, 16, P.shape), P)
    P[0] = 127
    return tuple(int(e) for e in shape), P.astype(np.int64), V.astype(np.int8)  # type: ignore[return-value]


def pv_tile_words(
    cfg: KaleidoConfig, tile, capacity: int, query_tiles: Sequence[Sequence[KeyTile]]
) -> tuple[list[int], list[int]]:
    """Input words (per query tile, per key tile: the header, V rows, P
    values) and expected output words of a stage of ``tile`` and
    ``capacity`` rows."""
    R, C = cfg.array_rows, cfg.array_cols
    blocks = channel_blocks(cfg)
    pack_i = Packer(pv_tile_in_layout(cfg.d, tile, capacity))
    pack_o = Packer(o_acc_layout(default_acc_width(SoftmaxFormat()), C, capacity, len(blocks)))
    ins: list[int] = []
    outs: list[int] = []
    for kts in query_tiles:
        rows = kts[0][1].shape[0]
        for j, (shape, P, V) in enumerate(kts):
            t, y, x = shape
            head = {("t",): t, ("y",): y, ("x",): x, ("rows",): rows}
            ins.append(pack_i({**head, ("first",): int(j == 0), ("final",): int(j == len(kts) - 1)}))
            ins += [pack_i({("v", c): int(V[k, c]) for c in range(cfg.d)}) for k in range(V.shape[0])]
            ins += [pack_i({("p",): int(P[r, k])}) for r in range(rows) for k in range(P.shape[1])]
        acc = pv_tile_accumulate(
            [P for _, P, _ in kts], [V for _, _, V in kts], [s for s, _, _ in kts], cfg.split, cfg.F
        )
        for g, (start, count, _) in enumerate(blocks):
            for rb in range(0, rows, R):
                for row in range(rb, min(rb + R, rows)):
                    vals = {("acc", c): int(acc[row, start + c]) for c in range(count)}
                    outs.append(pack_o({("count",): count, ("row",): row, ("group",): g, **vals}))
    return ins, outs


def _shape(rng: np.random.Generator, tile) -> tuple[int, int, int]:
    return tuple(int(rng.integers(1, e + 1)) for e in tile)  # type: ignore[return-value]


def pv_tile_case(cfg: KaleidoConfig, rng: np.random.Generator, n_tiles: int = 2, source: str = "random"):
    """``(in_words, expected_out_words)`` of the block case's stage
    (:data:`CASE_TILE`, :data:`CASE_ROWS`): ``n_tiles`` query tiles, the
    first of 1 row over one full key tile, the others of 1 to 6 rows over 1
    to 3 key tiles of random (partial, odd) shapes; P mostly small with
    small-P pairing (``cfg.pv_pairs``)."""
    qts = []
    for i in range(n_tiles):
        rows = 1 if i == 0 else int(rng.integers(1, CASE_ROWS + 1))
        shapes = [CASE_TILE] if i == 0 else [_shape(rng, CASE_TILE) for _ in range(int(rng.integers(1, 4)))]
        qts.append([random_key_tile(rng, s, rows, cfg.d, source, small_p=cfg.pv_pairs) for s in shapes])
    return pv_tile_words(cfg, CASE_TILE, CASE_ROWS, qts)


async def pv_tile_bench(be, words, *, in_stall="none", out_stall="none", seed=0):
    """:func:`~kaleido.tb.benches.stream_bench` with room for the last key
    tile's passes after its last input (outputs only)."""
    from kaleido.tb.benches import stream_bench

    return (await stream_bench(be, words, in_stall=in_stall, out_stall=out_stall, seed=seed, drain=3000))[0]
