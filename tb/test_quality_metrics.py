"""The quality metrics (golden/attention.py ``metrics``; issue 46, item 6)
against an independent formula in plain Python, on the references the
other tests never use: a negative peak (the largest magnitude negative),
constant references, all-zero outputs and references; and a clear error
for a shape, dtype or value that has no metric."""

import math
import warnings

import numpy as np
import pytest

from kaleido.golden.attention import metrics

SEEDS = range(6)


def by_hand(out, ref) -> dict:
    """The metrics from their definitions, element by element: MSE; PSNR =
    10 log10(peak^2 / MSE), peak the largest |reference| (inf when equal,
    -inf for an all-zero reference and a nonzero error); cosine = <o, r> /
    (|o| |r|), 1 for two zero vectors, 0 for one; the largest |error|."""
    o = [float(x) for x in np.ravel(out)]
    r = [float(x) for x in np.ravel(ref)]
    err = [a - b for a, b in zip(o, r, strict=True)]
    mse = math.fsum(e * e for e in err) / len(err)
    peak = max(abs(b) for b in r)
    if mse == 0:
        psnr = math.inf
    else:
        psnr = 10 * math.log10(peak * peak / mse) if peak else -math.inf
    no, nr = math.sqrt(math.fsum(a * a for a in o)), math.sqrt(math.fsum(b * b for b in r))
    if no == 0 or nr == 0:
        cosine = 1.0 if no == nr else 0.0
    else:
        cosine = math.fsum(a * b for a, b in zip(o, r, strict=True)) / (no * nr)
    return {"mse": mse, "psnr": psnr, "cosine": cosine, "max_abs": max(abs(e) for e in err)}


def check(out, ref, where: str) -> dict:
    """``metrics`` equals :func:`by_hand` (no numpy warning on the way)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = metrics(out, ref)
    want = by_hand(out, ref)
    assert set(got) == set(want), where
    for key, value in want.items():
        assert got[key] == pytest.approx(value, rel=1e-9, abs=1e-12), f"{where}: {key} {got[key]} != {value}"
    return got


def test_negative_peak_by_hand():
    """Reference peak -4 (largest value 2): PSNR of a 0.1 error is 10
    log10(16 / 0.01) = 32.04 dB; a peak taken without abs() would give
    10 log10(4 / 0.01) = 26.02 dB."""
    ref = np.array([[-4.0, 1.0], [2.0, 0.5]])
    m = check(ref + 0.1, ref, "literal")
    assert m["psnr"] == pytest.approx(10 * math.log10(1600)) and m["psnr"] == pytest.approx(32.0412, abs=1e-4)
    assert m["mse"] == pytest.approx(0.01) and m["max_abs"] == pytest.approx(0.1)


@pytest.mark.parametrize("seed", SEEDS)
def test_negative_peak_random(seed):
    """Random references whose largest magnitude is negative (seeded; the
    seed is in every message), outputs with a random error."""
    rng = np.random.default_rng(seed)
    ref = rng.normal(size=(rng.integers(1, 9), rng.integers(1, 9)))
    ref.flat[rng.integers(ref.size)] = -(np.abs(ref).max() + 1 + rng.random())
    assert abs(ref.min()) > max(ref.max(), 0), f"seed {seed}: the peak is negative"
    check(ref + rng.normal(scale=0.05, size=ref.shape), ref, f"seed {seed}")
    check(-ref + rng.normal(scale=0.05, size=ref.shape), -ref, f"seed {seed}, positive peak")


@pytest.mark.parametrize("value", [3.0, -3.0, 0.25])
def test_constant_reference(value):
    """A constant reference: peak |value|, cosine of a constant output 1."""
    ref = np.full((3, 4), value)
    rng = np.random.default_rng(7)
    check(ref + rng.normal(scale=0.1, size=ref.shape), ref, f"constant {value}")
    m = check(np.full((3, 4), 2 * value), ref, f"constant {value}, doubled")
    assert m["cosine"] == pytest.approx(1.0) and m["psnr"] == pytest.approx(0.0)  # error = peak: 0 dB
    assert check(ref, ref, "equal")["psnr"] == math.inf


def test_all_zero_output():
    """An all-zero output: the error is the reference, cosine 0 (not 1)."""
    ref = np.array([[-3.0, 1.0], [2.0, 0.0]])
    m = check(np.zeros_like(ref), ref, "zero output")
    assert m["cosine"] == 0.0 and m["max_abs"] == 3.0
    assert m["psnr"] == pytest.approx(10 * math.log10(9 / (14 / 4)))


def test_all_zero_reference():
    """An all-zero reference: PSNR -inf against a nonzero output (no peak),
    inf and cosine 1 against a zero output, with no numpy warning."""
    ref = np.zeros((2, 3))
    m = check(np.full((2, 3), 0.5), ref, "zero reference")
    assert m["psnr"] == -math.inf and m["cosine"] == 0.0 and m["mse"] == 0.25
    m = check(np.zeros((2, 3)), ref, "both zero")
    assert (m["psnr"], m["cosine"], m["mse"], m["max_abs"]) == (math.inf, 1.0, 0.0, 0.0)


def test_integer_inputs():
    """int8 arrays (the golden model's operands) are metrics of their values."""
    ref = np.array([[-128, 5], [7, 127]], dtype=np.int8)
    out = np.array([[-127, 5], [9, 127]], dtype=np.int8)
    m = check(out, ref, "int8")
    assert m["psnr"] == pytest.approx(10 * math.log10(128 * 128 / (5 / 4)))


@pytest.mark.parametrize(
    "out, ref, error, message",
    [
        (np.zeros((2, 3)), np.zeros((3, 2)), ValueError, r"shapes differ: \(2, 3\) vs \(3, 2\)"),
        (np.zeros(4), np.zeros((4, 1)), ValueError, r"shapes differ: \(4,\) vs \(4, 1\)"),
        (np.zeros((0, 3)), np.zeros((0, 3)), ValueError, r"empty \(shape \(0, 3\)\)"),
        (np.zeros(2, complex), np.zeros(2), TypeError, "output must be an integer or floating-point array, not dtype "),
        (np.zeros(2), np.array(["a", "b"]), TypeError, "reference must be .* not dtype <U1"),
        (np.zeros(2, bool), np.zeros(2), TypeError, "output .* not dtype bool"),
        (np.zeros(2), np.array([1, None]), TypeError, "reference .* not dtype object"),
        (np.array([[0, np.nan]]), np.zeros((1, 2)), ValueError, r"output has a non-finite value nan at index \(0, 1\)"),
        (np.zeros(3), np.array([1.0, np.inf, -np.inf]), ValueError, r"reference .* inf at index \(1,\) \(2 in all\)"),
    ],
    ids=["shape", "rank", "empty", "complex", "str", "bool", "object", "nan", "inf"],
)
def test_bad_input_is_named(out, ref, error, message):
    with pytest.raises(error, match=message):
        metrics(out, ref)
