"""Issue 16: the fast array walk (:func:`kaleido.model.qk.array_walk`: distinct
row/column keys, the matcher as an automaton, multiplicities per array)
against the walk it replaced (kaleido/explore/reference_walk.py), result for result, on
random small heads and configurations; a failing case prints its seed."""

import functools
import itertools

import numpy as np
import pytest

from kaleido import KaleidoConfig
from kaleido.encoding import Need
from kaleido.explore.reference_walk import reference_walk, walk_reference
from kaleido.golden.matcher import match
from kaleido.golden.workloads import synthetic_video
from kaleido.model import VARIANTS, linear_cycles, qk, run_model
from kaleido.model.slots import need_words, pair_slots


def _both(fn):
    fast = fn()
    with reference_walk():
        assert qk.array_walk is walk_reference
        ref = fn()
    assert qk.array_walk is not walk_reference
    return fast.as_dict(), ref.as_dict()


def _random_head(rng):
    grid = tuple(int(x) for x in rng.integers(1, 7, 3))
    split = tuple(int(x) for x in rng.integers(1, 9, 3))
    n, d = int(np.prod(grid)), sum(split)
    out = []
    for _ in range(2):
        base = np.repeat(rng.integers(-128, 128, (1, d)), n, axis=0)
        noise = rng.integers(-1, 2, (n, d)) * rng.choice([0, 1, 4, 16, 40], (n, d))
        z = np.where(rng.random((n, d)) < 0.7, np.clip(base + noise, -128, 127), rng.integers(-128, 128, (n, d)))
        out.append(z.astype(np.int8))
    return out[0], out[1], grid, split


@pytest.mark.parametrize("case", range(12))
def test_fast_walk_equals_reference(seed, case):
    rng = np.random.default_rng([seed, case])
    Q, K, grid, split = _random_head(rng)
    cfg = KaleidoConfig.one_array(
        split=split,
        F=int(rng.integers(3, 7)),
        P=2,
        batch=int(rng.integers(1, 20)),
        accumulators=int(rng.choice([3, 4])),
        array_rows=int(rng.integers(1, 5)),
        array_cols=int(rng.integers(1, 5)),
        lookahead=int(rng.integers(1, 7)),
    )
    variant = str(rng.choice(sorted(VARIANTS)))
    arrays, gap = int(rng.integers(1, 6)), int(rng.integers(0, 2))
    fast, ref = _both(lambda: run_model(Q, K, grid, split, cfg, variant=variant, arrays=arrays, pass_gap=gap))
    assert fast == ref, (cfg, variant, arrays, gap)


def test_fast_walk_equals_reference_on_video():
    w = synthetic_video("hunyuan", (4, 8, 8), "fast", seed=3)
    for variant, arrays in itertools.product(VARIANTS, (1, 3)):
        fast, ref = _both(
            functools.partial(
                run_model, w.q, w.k, w.grid, w.split, KaleidoConfig.one_array(), variant=variant, arrays=arrays
            ),
        )
        assert fast == ref, (variant, arrays)


def test_fast_walk_equals_reference_on_linear(seed):
    rng = np.random.default_rng(seed)
    X = rng.integers(-3, 4, (64, 24)).astype(np.int8)
    fast, ref = _both(lambda: linear_cycles(X, 12, (4, 4, 4), KaleidoConfig.one_array(batch=8), arrays=2, pass_gap=1))
    assert fast == ref


@pytest.mark.parametrize("lookahead", [0, 1, 2, 4, 16])
@pytest.mark.parametrize("n", [16, 40])
def test_slot_table_is_the_golden_matcher(seed, lookahead, n):
    """The byte automaton, chained over two bytes, against
    :func:`kaleido.golden.matcher.match` on random need vectors."""
    rng = np.random.default_rng(seed)
    needs = rng.choice([Need.SKIP, Need.HALF, Need.FULL], (400, n), p=[0.3, 0.4, 0.3]).astype(np.uint8)
    ns, half = needs != Need.SKIP, needs == Need.HALF
    cols = need_words(ns, half)[None]  # (1, 400, lanes)
    rows = need_words(np.ones((1, n), bool), np.ones((1, n), bool))[None]
    slots = pair_slots(rows, cols, lookahead)
    expect = [len(match(list(v), lookahead)) for v in needs]
    assert slots[0].tolist() == expect
    assert pair_slots(rows, cols, None)[0].tolist() == [int(v.sum()) for v in ns]
