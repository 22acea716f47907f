"""The RTL tiled softmax (``TileSoftmax`` in hdl/softmax.py, issue 13)
beyond the reference-vs-RTL runs of tb/test_blocks.py (3 simulators, 5
stall patterns): the golden stream reference against the whole-row
softmax, other formats, lane counts and row capacities, a row that comes
back before its write lands (the row state's forwarding), the cycle model
equal to the RTL's cycles in both regimes, and bad parameters."""

import functools

import numpy as np
import pytest

from kaleido.config import CoreConfig, KaleidoConfig, SoftmaxFormat
from kaleido.golden.core import tile_softmax
from kaleido.golden.softmax import fixed_softmax, head_constant
from kaleido.hdl.softmax import TileSoftmax
from kaleido.model import TILE_SOFTMAX_LATENCY, tile_softmax_cycles
from kaleido.tb.kit import simulate
from kaleido.tb.softmax_cases import random_query_tile, random_scale, softmax_run, tile_softmax_words

CFG = KaleidoConfig.one_array()
FORMATS = [
    SoftmaxFormat(),
    SoftmaxFormat(p_bits=8, lut_bits=6),
    SoftmaxFormat(p_bits=1, lut_bits=4, lut_width=10, exp_frac_bits=12, constant_bits=16, recip_bits=20),
]


def _walk(rng, shapes, fmt, lanes):
    """Query tiles of ``(rows, keys)`` shapes with one random constant."""
    constant = head_constant(random_scale(rng, fmt), fmt)
    return [random_query_tile(rng, rows, keys, CFG.buffer_width(), constant) for rows, keys in shapes], constant


def _run(shapes, fmt, lanes, capacity, seed, stalls=("none", "none")):
    """Expected and RTL outputs (Amaranth simulator) of a walk."""
    rng = np.random.default_rng(seed)
    tiles, constant = _walk(rng, shapes, fmt, lanes)
    inputs, expected = tile_softmax_words(tiles, constant, fmt, lanes, CFG.buffer_width(), capacity, rng)
    run = functools.partial(softmax_run, inputs=inputs, in_stall=stalls[0], out_stall=stalls[1], seed=seed)
    return expected, simulate(TileSoftmax(CFG, fmt, lanes, capacity), run)


@pytest.mark.parametrize("shape", [(1, [5]), (3, [4, 9, 1]), (7, [16, 16, 16, 3])])
def test_golden_tiles_equal_the_whole_row(shape, seed):
    """The tiled golden softmax (``golden.core.tile_softmax``) equals
    ``fixed_softmax`` of the key tiles side by side: the tiling changes no
    value."""
    rng = np.random.default_rng(seed)
    fmt = FORMATS[0]
    scale = random_scale(rng, fmt)
    tiles = random_query_tile(rng, shape[0], shape[1], CFG.buffer_width(), head_constant(scale, fmt))
    got = tile_softmax(tiles, head_constant(scale, fmt), fmt)
    whole = fixed_softmax(np.concatenate(tiles, axis=1), scale, fmt)
    assert (np.concatenate(got.p, axis=1) == whole.p).all()
    assert (got.z == whole.z).all() and (got.r == whole.r).all()
    assert (got.m == np.concatenate(tiles, axis=1).max(axis=1)).all()


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("lanes", [1, 3, 4])
def test_other_formats_and_lanes_are_bit_exact(fmt, lanes, seed):
    shapes = [(3, [2 * lanes + 1, lanes, 1]), (5, [4 * lanes + 2, 3]), (1, [1, lanes + 1])]
    expected, got = _run(shapes, fmt, lanes, 5, seed, ("random", "random"))
    assert {"p": got.p, "r": got.r} == expected


@pytest.mark.parametrize("rows", [1, 2])
@pytest.mark.parametrize("stalls", [("none", "none"), ("random", "random")])
def test_a_row_back_before_its_write_lands(rows, stalls, seed):
    """A query tile of one or two rows in a memory of as many words, with
    segments of one beat over eight key tiles, then a second query tile on
    the same rows (the first key tile's initialisation). Scores rise along
    every row by a quarter of a base-2 exponent unit a key, so every
    segment raises the row's maximum and adds a nonzero sum: a write missed
    by a read changes ``m`` or ``z``. With one row, each segment comes back
    in the cycle its previous write lands (in both passes: the read misses
    it and the forwarding must supply it); with two rows, the forwarding
    must not hand a row the other row's write."""
    rng = np.random.default_rng(seed)
    fmt, lanes, width = FORMATS[0], 4, CFG.buffer_width()
    constant = 1 << 16  # one score is 1/16 of a base-2 exponent unit
    step = 4
    tiles = []
    for keys in ([1, 2, 1, 4, 1, 1, 3, 1], [4, 1, 2]):
        base = rng.integers(-(1 << 20), 1 << 20, (rows, 1))
        full = base + step * np.arange(sum(keys)) + rng.integers(0, step, (rows, sum(keys)))
        tiles.append(np.split(full.astype(np.int64), np.cumsum(keys)[:-1], axis=1))
    inputs, expected = tile_softmax_words(tiles, constant, fmt, lanes, width, rows, rng)
    assert min(min(int(x.min()) for x in tile_softmax(t, constant, fmt).p) for t in tiles) > 0
    run = functools.partial(softmax_run, inputs=inputs, in_stall=stalls[0], out_stall=stalls[1], seed=seed)
    got = simulate(TileSoftmax(CFG, fmt, lanes, rows), run)
    assert {"p": got.p, "r": got.r} == expected


@pytest.mark.parametrize(
    "shapes, lanes, fmt",
    [
        ([(1, [4])], 4, FORMATS[0]),  # one beat
        ([(6, [4, 4, 4])], 4, FORMATS[0]),  # divider-bound: b_T = 1 < D = 33
        ([(2, [1, 2, 1, 3])], 4, FORMATS[0]),
        ([(3, [64, 140])], 4, FORMATS[0]),  # beat-bound: b_T = 35 > D
        ([(4, [64, 132])], 4, FORMATS[0]),  # b_T = 33 = D
        ([(3, [20, 7]), (2, [9]), (1, [200, 3])], 3, FORMATS[1]),  # query tiles back to back
        ([(5, [9, 9, 2])], 1, FORMATS[2]),
    ],
)
def test_cycle_model_equals_the_rtl(shapes, lanes, fmt, seed):
    """``kaleido.model.tile_softmax_cycles`` is the RTL's count with no
    stalls, from the first transfer on ``s`` to the last on ``p`` or ``r``,
    both counted."""
    expected, got = _run(shapes, fmt, lanes, max(rows for rows, _ in shapes), seed)
    assert {"p": got.p, "r": got.r} == expected
    assert got.first_in == 0
    assert got.cycles == tile_softmax_cycles(shapes, lanes, fmt)
    dut = TileSoftmax(CFG, fmt, lanes, 4)
    assert dut.latency == TILE_SOFTMAX_LATENCY and dut.row_latency == TILE_SOFTMAX_LATENCY + 1 + fmt.recip_width


def test_formula_regimes():
    """The closed form of one query tile (default format, D = 33: six
    pipeline stages to P, the row-sum register, 26 divider steps):
    ``R (2 sum b - b_T) + b_T + (R - 1) max(b_T, D) + D``."""
    assert tile_softmax_cycles([(6, [4, 4, 4])], 4) == 6 * (6 - 1) + 1 + 5 * 33 + 33
    assert tile_softmax_cycles([(3, [64, 140])], 4) == 3 * (2 * 51 - 35) + 35 + 2 * 35 + 33
    # the default query tile: 64 rows, 16 key tiles of 64 keys, 4 lanes
    assert tile_softmax_cycles([(64, [64] * 16)], 4) == 64 * (2 * 256 - 16) + 16 + 63 * 33 + 33


def test_a_wrong_cycle_model_fails(seed):
    """The cycle check can fail: the formula with one latency cycle fewer."""
    shapes = [(2, [5, 3])]
    _, got = _run(shapes, FORMATS[0], 4, 2, seed)
    assert got.cycles == tile_softmax_cycles(shapes, 4)
    assert got.cycles != tile_softmax_cycles(shapes, 4, SoftmaxFormat(recip_bits=31))


@pytest.mark.parametrize(
    "make, error, message",
    [
        (lambda: TileSoftmax(rows=0), ValueError, "rows must be at least 1, not 0"),
        (lambda: TileSoftmax(rows=1.5), TypeError, "rows must be an integer, not 1.5"),  # type: ignore[arg-type]
        (lambda: TileSoftmax(lanes=0), ValueError, "lanes must be at least 1, not 0"),
        (lambda: TileSoftmax(max_tokens=0), ValueError, "max_tokens must be at least 1, not 0"),
        (lambda: TileSoftmax(fmt="q8"), TypeError, "fmt must be a SoftmaxFormat, not 'q8'"),  # type: ignore[arg-type]
        (lambda: TileSoftmax({"F": 5}), TypeError, "config must be a KaleidoConfig"),  # type: ignore[arg-type]
        (lambda: tile_softmax_cycles([(0, [4])], 4), ValueError, "rows must be a positive integer, not 0"),
        (lambda: tile_softmax_cycles([(1, [4, 0])], 4), ValueError, "keys must be a positive integer, not 0"),
        (lambda: tile_softmax_cycles([(1, [])], 4), ValueError, "keys must hold at least one key tile"),
        (lambda: tile_softmax_cycles([], 4), ValueError, "walk must hold at least one query tile"),
        (lambda: tile_softmax_cycles([(1, [4])], 0), ValueError, "lanes must be a positive integer, not 0"),
        (lambda: tile_softmax([], 100), ValueError, "s_tiles must hold at least one"),
        (lambda: tile_softmax([np.zeros((2, 3), int), np.zeros((3, 3), int)], 100), ValueError, "S tile 1 has 3 rows"),
        (lambda: tile_softmax([np.zeros((2, 0), int)], 100), ValueError, "S tile 0 must be a 2-D integer array"),
    ],
)
def test_bad_parameters_are_named(make, error, message):
    with pytest.raises(error, match=message):
        make()


def test_default_rows_are_the_tile():
    assert TileSoftmax().rows == CoreConfig().tile_tokens
