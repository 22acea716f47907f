"""Golden-side inputs and expected outputs of the softmax unit and the
output scaler (:mod:`kaleido.hdl.softmax`), and the softmax unit's bench
(one input stream, two output streams, a constant), for the
reference-vs-RTL harness (:mod:`kaleido.tb.blocks`) and
``tb/test_softmax_rtl.py``.

Rows are random in length (a single token, lengths that are not a multiple
of the lanes, a long one), in spread (rows whose exponentials all but
underflow to 0, rows where none do, all-equal rows, the score range's
extremes) and in constant (one per case, log-uniform over 1 .. 2^24 - 1);
the unused lanes of a short beat carry random values the unit must ignore.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from kaleido.config import CoreConfig, KaleidoConfig, SoftmaxFormat
from kaleido.golden.core import tile_softmax
from kaleido.golden.softmax import fixed_attention, fixed_softmax, head_constant
from kaleido.hdl.softmax import (
    default_acc_width,
    p_beat_layout,
    recip_layout,
    scaler_in_layout,
    scaler_out_layout,
    score_beat_layout,
    tile_p_layout,
    tile_recip_layout,
    tile_score_layout,
)
from kaleido.tb.benches import STREAM_DRAIN
from kaleido.tb.driver import Packer
from kaleido.tb.kit import Backend, StreamSink, StreamSource, run

__all__ = [
    "random_scale",
    "random_rows",
    "row_beats",
    "softmax_words",
    "softmax_case",
    "scaler_case",
    "SoftmaxRun",
    "softmax_run",
    "softmax_bench",
    "random_query_tile",
    "tile_softmax_words",
    "tile_softmax_case",
]


def random_scale(rng: np.random.Generator, fmt: SoftmaxFormat) -> float:
    """A logit scale whose constant is log-uniform over 1 .. 2^constant_bits - 1
    (a fifth of the time at either end)."""
    unit = math.log2(math.e) * (1 << fmt.exp_frac_bits)
    lo, hi = 0.75 / unit, ((1 << fmt.constant_bits) - 1.5) / unit
    x = rng.random()
    if x < 0.1:
        return lo
    if x < 0.2:
        return hi
    return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def random_rows(rng: np.random.Generator, n_rows: int, lanes: int, width: int, constant: int) -> list[np.ndarray]:
    """``n_rows`` integer score rows in ``signed(width)``: the first four
    are a single token, an all-equal row, the range's extremes and a long
    row; then random lengths with a spread of 0.5 to 10^6 in base-2
    exponent units (so some rows underflow almost entirely)."""
    lo, hi = -(1 << (width - 1)), (1 << (width - 1)) - 1
    rows: list[np.ndarray] = []
    for i in range(n_rows):
        n = int(rng.integers(1, 4 * lanes + 4))
        if i == 0:
            n = 1
        elif i == 3:
            n = 16 * lanes + int(rng.integers(1, lanes + 1))
        if i == 1:
            rows.append(np.full(n, int(rng.integers(lo, hi + 1)), np.int64))
            continue
        if i == 2:
            row = rng.choice([lo, hi, lo + 1, hi - 1], n).astype(np.int64)
            row[int(rng.integers(n))] = lo
            rows.append(row)
            continue
        span = float(rng.choice([0.5, 4.0, 20.0, 40.0, 1e6]))
        spread = int(min(max(span * (1 << 20) / constant, 1), hi - lo))
        base = int(rng.integers(lo, hi - spread + 1))
        rows.append(rng.integers(base, base + spread + 1, n).astype(np.int64))
    return rows


def row_beats(
    row: Sequence[int] | np.ndarray, lanes: int, rng: np.random.Generator, fill: int
) -> list[tuple[list[int], int, int]]:
    """``(values, count, last)`` beats of a row, unused lanes random in
    ``[-fill, fill)``."""
    beats = []
    for start in range(0, len(row), lanes):
        part = [int(x) for x in row[start : start + lanes]]
        count = len(part)
        part += [int(x) for x in rng.integers(-fill, fill, lanes - count)]
        beats.append((part, count, int(start + lanes >= len(row))))
    return beats


def softmax_words(
    rows: Sequence[np.ndarray], scale: float, fmt: SoftmaxFormat, lanes: int, width: int, rng: np.random.Generator
) -> tuple[dict, dict]:
    """Inputs ``{"constant", "words"}`` (each row twice) and expected
    outputs ``{"p": words, "r": words}`` of :class:`~kaleido.hdl.softmax.SoftmaxUnit`
    for score rows, from :func:`~kaleido.golden.softmax.fixed_softmax`."""
    pack_s, pack_p = Packer(score_beat_layout(width, lanes)), Packer(p_beat_layout(fmt, lanes))
    pack_r = Packer(recip_layout(fmt))
    words, p_words, r_words = [], [], []
    for row in rows:
        sm = fixed_softmax(np.asarray(row, np.int64)[None, :], scale, fmt)
        beats = row_beats(row, lanes, rng, 1 << (width - 1))
        for _ in range(2):
            for values, count, last in beats:
                words.append(
                    pack_s({("count",): count, ("last",): last, **{("values", i): v for i, v in enumerate(values)}})
                )
        p = [int(x) for x in sm.p[0]]
        for start in range(0, len(p), lanes):
            part = p[start : start + lanes]
            vals = {("values", i): v for i, v in enumerate(part + [0] * (lanes - len(part)))}
            p_words.append(pack_p({("count",): len(part), ("last",): int(start + lanes >= len(p)), **vals}))
        r_words.append(pack_r({("r",): int(sm.r[0]), ("z",): int(sm.z[0])}))
    return {"constant": head_constant(scale, fmt), "words": words}, {"p": p_words, "r": r_words}


def softmax_case(cfg: KaleidoConfig, rng: np.random.Generator, n_rows: int = 10, source: str = "random"):
    """``(inputs, expected)`` of the softmax unit (default format, lanes
    ``cfg.array_cols``): ``n_rows`` rows of :func:`random_rows`, one
    random constant."""
    fmt, lanes, width = SoftmaxFormat(), cfg.array_cols, cfg.buffer_width()
    scale = random_scale(rng, fmt)
    rows = random_rows(rng, n_rows, lanes, width, head_constant(scale, fmt))
    return softmax_words(rows, scale, fmt, lanes, width, rng)


def scaler_case(cfg: KaleidoConfig, rng: np.random.Generator, n_rows: int = 12, source: str = "random"):
    """``(in_words, expected_out_words)`` of the output scaler (default
    format and accumulator width): rows of ``P V`` sums and reciprocals from
    :func:`fixed_softmax` of random score rows and int8 ``V`` of ``d``
    channels (``d`` random, often not a multiple of the lanes), ``O`` from
    :func:`fixed_attention`; the first rows are the extremes (every ``V``
    -128, every ``V`` 127, a row of 32768 equal scores)."""
    fmt, lanes = SoftmaxFormat(), cfg.array_cols
    acc_width = default_acc_width(fmt)
    d = int(rng.integers(1, 3 * lanes + 2))
    pack_in, pack_out = Packer(scaler_in_layout(fmt, lanes, acc_width)), Packer(scaler_out_layout(fmt, lanes))
    ins, outs = [], []
    for i in range(n_rows):
        scale = random_scale(rng, fmt)
        n = 32768 if i == 2 else int(rng.integers(1, 40))
        S = np.zeros((1, n), np.int64) if i < 3 else rng.integers(-5000, 5000, (1, n))
        if i < 3:
            V = np.full((n, d), -128 if i in (0, 2) else 127, np.int8)
        else:
            V = rng.integers(-128, 128, (n, d)).astype(np.int8)
        sm = fixed_softmax(S, scale, fmt)
        acc = (sm.p @ V.astype(np.int64))[0]
        O = fixed_attention(sm, V)[0]
        r = int(sm.r[0])
        for (values, count, last), start in zip(row_beats(acc, lanes, rng, 1 << 20), range(0, d, lanes), strict=True):
            vals = {("acc", k): v for k, v in enumerate(values)}
            ins.append(pack_in({("r",): r, ("count",): count, ("last",): last, **vals}))
            part = [int(x) for x in O[start : start + lanes]]
            ovals = {("values", k): v for k, v in enumerate(part + [0] * (lanes - count))}
            outs.append(pack_out({("count",): count, ("last",): last, **ovals}))
    return ins, outs


@dataclasses.dataclass
class SoftmaxRun:
    """Outputs of the softmax unit and its timing: the counted cycles of
    the first transfer on ``s`` and of the last transfer on ``p`` or ``r``."""

    p: list[int]
    r: list[int]
    first_in: int | None
    last_out: int | None

    @property
    def cycles(self) -> int:
        """Cycles from the first input transfer to the last output transfer,
        both counted: ``last_out - first_in + 1``."""
        assert self.first_in is not None and self.last_out is not None
        return self.last_out - self.first_in + 1


async def softmax_run(be: Backend, inputs: dict, *, in_stall="none", out_stall="none", seed=0) -> SoftmaxRun:
    """The words of ``inputs`` into ``s`` (``constant`` set first), ``p`` and
    ``r`` taken with ``out_stall`` (independent seeds)."""
    be.set("constant", inputs["constant"])
    src = StreamSource("s", inputs["words"], stall=in_stall, seed=seed)
    p_sink = StreamSink("p", stall=out_stall, seed=seed + 1)
    r_sink = StreamSink("r", stall=out_stall, seed=seed + 2)
    await run(be, sources=[src], sinks=[p_sink, r_sink], drain=STREAM_DRAIN)
    outs = p_sink.cycles + r_sink.cycles
    return SoftmaxRun(
        p_sink.words, r_sink.words, src.accepted[0] if src.accepted else None, max(outs) if outs else None
    )


async def softmax_bench(be: Backend, inputs: Any, *, in_stall="none", out_stall="none", seed=0) -> dict:
    """:func:`softmax_run`'s outputs, JSON-shaped like the expected ones."""
    res = await softmax_run(be, inputs, in_stall=in_stall, out_stall=out_stall, seed=seed)
    return {"p": res.p, "r": res.r}


def random_query_tile(
    rng: np.random.Generator, rows: int, keys: Sequence[int], width: int, constant: int
) -> list[np.ndarray]:
    """The S tiles (``rows`` x ``keys[j]``, int64) of one query tile
    against its key tiles: a random spread of 0.5 to 10^6 base-2 exponent
    units (some rows all but underflow), a tenth of the time the score
    range's extremes."""
    lo, hi = -(1 << (width - 1)), (1 << (width - 1)) - 1
    total = int(sum(keys))
    if rng.random() < 0.1:
        full = rng.choice([lo, hi, lo + 1, hi - 1], (rows, total)).astype(np.int64)
    else:
        span = float(rng.choice([0.5, 4.0, 20.0, 40.0, 1e6]))
        spread = int(min(max(span * (1 << 20) / constant, 1), hi - lo))
        base = int(rng.integers(lo, hi - spread + 1))
        full = rng.integers(base, base + spread + 1, (rows, total)).astype(np.int64)
    return np.split(full, np.cumsum(keys)[:-1], axis=1)


def tile_softmax_words(
    tiles: Sequence[Sequence[np.ndarray]],
    constant: int,
    fmt: SoftmaxFormat,
    lanes: int,
    width: int,
    capacity: int,
    rng: np.random.Generator,
) -> tuple[dict, dict]:
    """Inputs ``{"constant", "words"}`` and expected outputs ``{"p", "r"}``
    of :class:`~kaleido.hdl.softmax.TileSoftmax` (``capacity`` rows) for
    query tiles, each a list of S tiles in key-tile order, from
    :func:`~kaleido.golden.core.tile_softmax`. The walk of a query tile:
    pass 1 (phase 0) then pass 2 (phase 1), each over the key tiles, each
    key tile row by row, one segment per row."""
    pack_s = Packer(tile_score_layout(width, lanes, capacity))
    pack_p, pack_r = Packer(tile_p_layout(fmt, lanes, capacity)), Packer(tile_recip_layout(fmt, capacity))
    words, p_words, r_words = [], [], []
    for s_tiles in tiles:
        sm = tile_softmax(s_tiles, constant, fmt)
        n_rows, last_tile = s_tiles[0].shape[0], len(s_tiles) - 1
        for phase in (0, 1):
            for j, s in enumerate(s_tiles):
                tags = {("phase",): phase, ("first",): int(j == 0), ("final",): int(j == last_tile)}
                for row in range(n_rows):
                    for values, count, last in row_beats(s[row], lanes, rng, 1 << (width - 1)):
                        vals = {("values", i): v for i, v in enumerate(values)}
                        words.append(pack_s({("count",): count, ("last",): last, ("row",): row, **tags, **vals}))
                    if not phase:
                        continue
                    p = [int(x) for x in sm.p[j][row]]
                    for start in range(0, len(p), lanes):
                        part = p[start : start + lanes]
                        vals = {("values", i): v for i, v in enumerate(part + [0] * (lanes - len(part)))}
                        last = int(start + lanes >= len(p))
                        flags = {("first",): int(j == 0), ("final",): int(j == last_tile)}
                        p_words.append(pack_p({("count",): len(part), ("last",): last, ("row",): row, **flags, **vals}))
        r_words += [pack_r({("r",): int(sm.r[i]), ("z",): int(sm.z[i]), ("row",): i}) for i in range(n_rows)]
    return {"constant": constant, "words": words}, {"p": p_words, "r": r_words}


def tile_softmax_case(cfg: KaleidoConfig, rng: np.random.Generator, n_tiles: int = 4, source: str = "random"):
    """``(inputs, expected)`` of the tiled softmax (default format, lanes
    ``cfg.array_cols``, the default capacity of ``CoreConfig().tile_tokens``
    rows): ``n_tiles`` query tiles walked back to back, the first of one
    row and the second of two (a row comes back before its write lands),
    then 1 to 6 rows; 1 to 4 key tiles each, of 1 to ``3 lanes + 3`` keys
    (partial tiles, segments of one beat), one random constant."""
    fmt, lanes, width = SoftmaxFormat(), cfg.array_cols, cfg.buffer_width()
    constant = head_constant(random_scale(rng, fmt), fmt)
    tiles = []
    for i in range(n_tiles):
        rows = (1, 2)[i] if i < 2 else int(rng.integers(1, 7))
        keys = [int(k) for k in rng.integers(1, 3 * lanes + 4, int(rng.integers(1, 5)) if i else 3)]
        tiles.append(random_query_tile(rng, rows, keys, width, constant))
    return tile_softmax_words(tiles, constant, fmt, lanes, width, CoreConfig().tile_tokens, rng)
