"""The RTL softmax unit and output scaler (hdl/softmax.py) beyond the
reference-vs-RTL runs of tb/test_blocks.py (3 simulators, 5 stall
patterns): the shared exponential table, other formats and lane counts,
the cycle model equal to the RTL's cycles, bad parameters, and seeded
mismatches that the comparison finds."""

import functools

import numpy as np
import pytest

from kaleido.config import KaleidoConfig, SoftmaxFormat
from kaleido.golden.softmax import exp2_table, head_constant
from kaleido.hdl.softmax import OutputScaler, SoftmaxUnit
from kaleido.model import SOFTMAX_LATENCY, output_scaler_cycles, softmax_cycles
from kaleido.tb.benches import stream_bench
from kaleido.tb.blocks import Case, ref, rtl
from kaleido.tb.kit import simulate
from kaleido.tb.softmax_cases import random_rows, random_scale, scaler_case, softmax_run, softmax_words

CFG = KaleidoConfig.one_array()
FORMATS = [
    SoftmaxFormat(),
    SoftmaxFormat(p_bits=8, lut_bits=6),
    SoftmaxFormat(p_bits=12, out_frac_bits=4),
    SoftmaxFormat(p_bits=1, lut_bits=4, lut_width=10, exp_frac_bits=12, constant_bits=16, recip_bits=20),
]


@pytest.mark.parametrize("fmt", [*FORMATS, SoftmaxFormat(lut_bits=10, lut_width=24, exp_frac_bits=22)])
def test_exp2_table_is_numpy_round_exp2(fmt):
    """One table for golden and RTL (config.SoftmaxFormat.exp2_table), equal
    to numpy's round-half-even of exp2 for every entry."""
    k = np.arange(1 << fmt.lut_bits, dtype=np.float64)
    expected = np.round(np.exp2(fmt.lut_width - k / (1 << fmt.lut_bits))).astype(np.int64)
    assert fmt.exp2_table() == tuple(int(x) for x in expected)
    assert (exp2_table(fmt) == expected).all()


@pytest.mark.parametrize("fmt", FORMATS)
def test_recip_width_holds_every_reciprocal(fmt):
    r = (1 << fmt.recip_bits) // fmt.p_max  # the largest: z = p_max
    assert r.bit_length() == fmt.recip_width
    assert fmt.recip_width == (fmt.recip_bits + 1 if fmt.p_bits == 1 else fmt.recip_bits - fmt.p_bits + 1)


def _softmax(rows, scale, fmt, lanes, seed, stalls=("none", "none"), constant_delta=0):
    """Expected and RTL outputs (Amaranth simulator) of score rows."""
    rng = np.random.default_rng(seed)
    inputs, expected = softmax_words(rows, scale, fmt, lanes, CFG.buffer_width(), rng)
    inputs = {**inputs, "constant": inputs["constant"] + constant_delta}
    run = functools.partial(softmax_run, inputs=inputs, in_stall=stalls[0], out_stall=stalls[1], seed=seed)
    return expected, simulate(SoftmaxUnit(CFG, fmt, lanes), run)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("lanes", [1, 3, 4])
def test_other_formats_and_lanes_are_bit_exact(fmt, lanes, seed):
    rng = np.random.default_rng(seed)
    scale = random_scale(rng, fmt)
    rows = random_rows(rng, 8, lanes, CFG.buffer_width(), head_constant(scale, fmt))
    expected, got = _softmax(rows, scale, fmt, lanes, seed, ("random", "random"))
    assert {"p": got.p, "r": got.r} == expected


@pytest.mark.parametrize(
    "n_tokens, n_rows, lanes, fmt",
    [
        (1, 5, 4, FORMATS[0]),  # divider-bound: one beat a traversal
        (13, 4, 4, FORMATS[0]),  # 2B = 8 < D = 30
        (60, 3, 4, FORMATS[0]),  # 2B = 30 = D
        (70, 3, 4, FORMATS[0]),  # beat-bound: 2B = 36 > D
        (70, 3, 3, FORMATS[1]),
        (9, 6, 1, FORMATS[3]),
        (33, 1, 4, FORMATS[2]),
    ],
)
def test_cycle_model_equals_the_rtl(n_tokens, n_rows, lanes, fmt, seed):
    """``kaleido.model.softmax_cycles`` is the RTL's count with no stalls:
    cycles from the first transfer on ``s`` to the last on ``p`` or ``r``,
    both counted."""
    rng = np.random.default_rng(seed)
    scale = random_scale(rng, fmt)
    rows = [rng.integers(-3000, 3000, n_tokens) for _ in range(n_rows)]
    expected, got = _softmax(rows, scale, fmt, lanes, seed)
    assert {"p": got.p, "r": got.r} == expected
    assert got.first_in == 0
    assert got.cycles == softmax_cycles(n_tokens, n_rows, lanes, fmt)
    assert SoftmaxUnit(CFG, fmt, lanes).latency == SOFTMAX_LATENCY


def test_output_scaler_cycles_equal_the_rtl(seed):
    ins, expected = scaler_case(CFG, np.random.default_rng(seed), 5)
    got, cycles = simulate(OutputScaler(CFG), lambda be: stream_bench(be, ins))
    assert got == expected
    beats = len(ins)  # stream_bench counts from cycle 0, where the first beat is taken
    assert cycles == beats + OutputScaler(CFG).latency == output_scaler_cycles(1, beats, 1)


def test_seeded_mismatches_are_found(seed):
    """The comparison can fail: a perturbed expected P or r, and a wrong
    constant, are each detected."""
    case = Case("softmax", seed)
    expected = ref(case)
    assert rtl([case], "amaranth") == [expected]
    wrong_p = {**expected, "p": expected["p"][:-1] + [expected["p"][-1] ^ (1 << 3)]}
    wrong_r = {**expected, "r": [expected["r"][0] + 1, *expected["r"][1:]]}
    assert rtl([case], "amaranth") != [wrong_p]
    assert rtl([case], "amaranth") != [wrong_r]
    rng = np.random.default_rng(seed)
    rows = [rng.integers(-50, 50, 9) for _ in range(3)]
    delta = head_constant(0.05, FORMATS[0]) // 4  # a constant 25 % off
    right, wrong = _softmax(rows, 0.05, FORMATS[0], 4, seed, constant_delta=delta)
    assert {"p": wrong.p, "r": wrong.r} != right
    scaler = Case("output_scaler", seed)
    want = ref(scaler)
    assert rtl([scaler], "amaranth") != [want[:-1] + [want[-1] ^ 1]]


@pytest.mark.parametrize(
    "make, error, message",
    [
        (lambda: SoftmaxUnit(lanes=0), ValueError, "lanes must be at least 1, not 0"),
        (lambda: SoftmaxUnit(lanes=2.0), TypeError, "lanes must be an integer, not 2.0"),  # type: ignore[arg-type]
        (lambda: SoftmaxUnit(max_tokens=0), ValueError, "max_tokens must be at least 1, not 0"),
        (lambda: SoftmaxUnit(fmt="q8"), TypeError, "fmt must be a SoftmaxFormat, not 'q8'"),  # type: ignore[arg-type]
        (lambda: SoftmaxUnit({"F": 5}), TypeError, "config must be a KaleidoConfig"),  # type: ignore[arg-type]
        (lambda: OutputScaler(lanes=-1), ValueError, "lanes must be at least 1, not -1"),
        (lambda: OutputScaler(acc_width=1), ValueError, "acc_width must be at least 2, not 1"),
        (lambda: OutputScaler(acc_width=True), TypeError, "acc_width must be an integer, not True"),
        (lambda: softmax_cycles(0, 1, 4), ValueError, "n_tokens must be a positive integer, not 0"),
        (lambda: softmax_cycles(4, 1, 0), ValueError, "lanes must be a positive integer, not 0"),
        (lambda: output_scaler_cycles(1, 0, 4), ValueError, "d must be a positive integer, not 0"),
    ],
)
def test_bad_parameters_are_named(make, error, message):
    with pytest.raises(error, match=message):
        make()


def test_formula_regimes():
    """The two regimes of the formula with the default format (D = 32: five
    pipeline stages to P, the row-sum register, 26 divider steps)."""
    assert softmax_cycles(4, 10, 4) == 2 + 9 * 32 + 32
    assert softmax_cycles(128, 10, 4) == 64 + 9 * 64 + 32
