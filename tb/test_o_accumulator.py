"""The O accumulators (hdl/o_accumulator.py, issue 13) beyond the
reference-vs-RTL runs of tb/test_blocks.py (3 simulators, 5 stall
patterns): a word that comes back before its write lands, other lane and
channel counts, the cycle count, and bad parameters."""

import numpy as np
import pytest

from kaleido.config import CoreConfig, KaleidoConfig
from kaleido.hdl.o_accumulator import OAccumulator
from kaleido.tb.benches import stream_bench
from kaleido.tb.kit import simulate
from kaleido.tb.o_accumulator_cases import o_accumulator_words, random_pv_tile

CFG = KaleidoConfig.one_array()


def _run(shapes, lanes, capacity, channels, seed, stalls=("none", "none")):
    rng = np.random.default_rng(seed)
    tiles = [random_pv_tile(rng, rows, keys, channels) for rows, keys in shapes]
    ins, expected = o_accumulator_words(tiles, lanes, capacity, channels, CFG.acc_width)
    dut = OAccumulator(CFG, lanes, capacity, channels)
    got, cycles = simulate(dut, lambda be: stream_bench(be, ins, in_stall=stalls[0], out_stall=stalls[1], seed=seed))
    return ins, expected, got, cycles


@pytest.mark.parametrize("rows, channels", [(1, 4), (2, 4), (1, 7)])
@pytest.mark.parametrize("stalls", [("none", "none"), ("random", "random")])
def test_a_word_back_before_its_write_lands(rows, channels, stalls, seed):
    """One word (one row, one group of 4 lanes): every beat reads the word
    the previous beat writes in the same cycle, over eight key tiles and
    then a second query tile; two rows or two groups space them apart (the
    forwarding must not hand one word another's write)."""
    shapes = [(rows, [3, 1, 30, 2, 5, 1, 1, 9]), (rows, [4, 2])]
    _, expected, got, _ = _run(shapes, 4, rows, channels, seed, stalls)
    assert got == expected


@pytest.mark.parametrize("lanes, channels", [(1, 3), (3, 10), (4, 128)])
def test_other_lanes_and_channels(lanes, channels, seed):
    shapes = [(3, [5, 30, 2]), (2, [7]), (1, [1, 1])]
    _, expected, got, _ = _run(shapes, lanes, 3, channels, seed, ("random", "random"))
    assert got == expected


def test_cycles_are_the_beats_plus_the_latency(seed):
    """One beat a cycle and nothing waits: from the first beat taken (cycle
    0) to the last total on ``o``, ``beats + latency`` cycles."""
    ins, expected, got, cycles = _run([(3, [4, 4, 4]), (2, [1])], 4, 3, 10, seed)
    assert got == expected
    assert cycles == len(ins) + OAccumulator(CFG).latency == len(ins) + 2


def test_the_buffer_is_the_tiles():
    acc = OAccumulator(CFG)
    assert acc.words == CoreConfig().tile_tokens * CFG.d // CFG.array_cols
    assert acc.words * acc.lanes == CoreConfig().buffers(CFG)["o_acc"]["words"]


@pytest.mark.parametrize(
    "make, error, message",
    [
        (lambda: OAccumulator(rows=0), ValueError, "rows must be at least 1, not 0"),
        (lambda: OAccumulator(lanes=0), ValueError, "lanes must be at least 1, not 0"),
        (lambda: OAccumulator(channels=-2), ValueError, "channels must be at least 1, not -2"),
        (lambda: OAccumulator(rows=2.0), TypeError, "rows must be an integer, not 2.0"),  # type: ignore[arg-type]
        (lambda: OAccumulator(in_width=24, acc_width=20), ValueError, "acc_width 20 is narrower than in_width 24"),
        (lambda: OAccumulator({"d": 3}), TypeError, "config must be a KaleidoConfig"),  # type: ignore[arg-type]
    ],
)
def test_bad_parameters_are_named(make, error, message):
    with pytest.raises(error, match=message):
        make()
