"""Golden-side inputs and expected outputs of the O accumulators
(:class:`kaleido.hdl.o_accumulator.OAccumulator`) for the reference-vs-RTL
harness (:mod:`kaleido.tb.blocks`) and ``tb/test_o_accumulator.py``.

A query tile's P tile against each key tile (7-bit P, 1 to 30 keys: the
partial sums span the PE drain's width) times that key tile's int8 V gives
one partial beat per row, key tile and channel group; the expected output
is each row's exact ``P V`` over all its key tiles, one beat per group.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kaleido.config import CoreConfig, KaleidoConfig, SoftmaxFormat
from kaleido.hdl.o_accumulator import o_acc_layout, o_partial_layout
from kaleido.hdl.softmax import default_acc_width
from kaleido.tb.driver import Packer

__all__ = ["random_pv_tile", "o_accumulator_words", "o_accumulator_case"]


def random_pv_tile(rng: np.random.Generator, rows: int, keys: Sequence[int], channels: int):
    """``[(P, V)]`` per key tile: P ``rows x keys_j`` in ``0 .. 127`` (the
    first tile's first row all 127 and V all -128: the extremes), V int8
    ``keys_j x channels``."""
    tiles = []
    for j, k in enumerate(keys):
        P = rng.integers(0, 128, (rows, k))
        V = rng.integers(-128, 128, (k, channels))
        if j == 0:
            P[0], V[:] = 127, -128
        tiles.append((P.astype(np.int64), V.astype(np.int64)))
    return tiles


def o_accumulator_words(
    tiles: Sequence[Sequence[tuple[np.ndarray, np.ndarray]]], lanes: int, capacity: int, channels: int, in_width: int
) -> tuple[list[int], list[int]]:
    """Input words (per query tile: key tiles, rows, channel groups) and
    expected output words of an accumulator of ``capacity`` rows and
    ``channels`` channels, for query tiles of ``[(P, V)]`` key tiles."""
    groups = -(-channels // lanes)
    acc_width = default_acc_width(SoftmaxFormat())  # the accumulator's default
    pack_i = Packer(o_partial_layout(in_width, lanes, capacity, groups))
    pack_o = Packer(o_acc_layout(acc_width, lanes, capacity, groups))
    ins, outs = [], []
    for kts in tiles:
        total = sum(P @ V for P, V in kts)
        last = len(kts) - 1
        for j, (P, V) in enumerate(kts):
            part = P @ V
            assert np.abs(part).max() < 1 << (in_width - 1), "a partial sum beyond the drain's width"
            for row in range(P.shape[0]):
                for g in range(groups):
                    chans = range(g * lanes, min((g + 1) * lanes, channels))
                    vals = {("values", k): int(part[row, c]) for k, c in enumerate(chans)}
                    tags = {("row",): row, ("group",): g, ("first",): int(j == 0), ("final",): int(j == last)}
                    ins.append(pack_i({("count",): len(chans), **tags, **vals}))
                    if j == last:
                        accs = {("acc", k): int(total[row, c]) for k, c in enumerate(chans)}
                        outs.append(pack_o({("count",): len(chans), ("row",): row, ("group",): g, **accs}))
    return ins, outs


def o_accumulator_case(cfg: KaleidoConfig, rng: np.random.Generator, n_tiles: int = 3, source: str = "random"):
    """``(in_words, expected_out_words)`` of the default accumulator
    (``CoreConfig().tile_tokens`` rows, ``cfg.d`` channels): ``n_tiles``
    query tiles of 1, 2, then 1 to 3 rows, over 1 to 3 key tiles of 1 to
    30 keys."""
    tiles = []
    for i in range(n_tiles):
        rows = (1, 2)[i] if i < 2 else int(rng.integers(1, 4))
        keys = [int(k) for k in rng.integers(1, 31, int(rng.integers(1, 4)) if i else 3)]
        tiles.append(random_pv_tile(rng, rows, keys, cfg.d))
    return o_accumulator_words(tiles, cfg.array_cols, CoreConfig().tile_tokens, cfg.d, cfg.acc_width)
