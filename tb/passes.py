"""Pass generators for the array tests: random passes and the passes of a
whole (small) workload, as golden beat streams."""

from __future__ import annotations

import numpy as np

from kaleido.encoding import Phase
from kaleido.golden.array import pass_beats
from kaleido.golden.grouped import grouped_scores
from kaleido.golden.loopnest import accumulate_tiles, iter_passes
from kaleido.golden.matcher import channel_needs, match
from kaleido.golden.workloads import constant_workload, random_workload, synthetic_video

__all__ = ["coverage_pass", "random_pass", "workload_passes", "make_workload", "split_and_place"]


def random_pass(rng, cfg, n=None, absent_p=0.15):
    """A pass with random operands and random tags (every (q, k) combination,
    ABSENT included, can meet at every PE), slot streams from the golden
    matcher with a random lookahead (DUAL_LO included) or no merging."""
    R, C = cfg.array_rows, cfg.array_cols
    n = n or int(rng.integers(1, cfg.batch + 1))
    A = rng.integers(-128, 128, (R, 2, n), dtype=np.int8)
    B = rng.integers(-128, 128, (C, 2, n), dtype=np.int8)
    q = rng.integers(0, 3, (R, n)).astype(np.uint8)
    k = rng.integers(0, 3, (C, n)).astype(np.uint8)
    q[rng.random(R) < absent_p] = 3  # unpaired rows
    k[rng.random(C) < absent_p] = 3  # unpaired columns
    look = int(rng.integers(0, 6))
    slots = [match(channel_needs(p, q, k, accumulators=cfg.accumulators), look) for p in Phase]
    return pass_beats(A, q, B, k, slots, accumulators=cfg.accumulators), (A, q, B, k, slots)


def coverage_pass(rng, cfg):
    """A pass whose 16 channels put every (q, k) tag pair, ABSENT included,
    at every PE: q = c % 4 on every row, k = c // 4 on every column."""
    R, C, n = cfg.array_rows, cfg.array_cols, 16
    if cfg.batch < n:
        raise ValueError(f"the coverage pass needs a batch of at least 16 channels, not {cfg.batch}")
    A = rng.integers(-128, 128, (R, 2, n), dtype=np.int8)
    B = rng.integers(-128, 128, (C, 2, n), dtype=np.int8)
    q = np.tile(np.arange(n, dtype=np.uint8) % 4, (R, 1))
    k = np.tile(np.arange(n, dtype=np.uint8) // 4, (C, 1))
    slots = [match(channel_needs(p, q, k, accumulators=cfg.accumulators), cfg.lookahead) for p in Phase]
    return pass_beats(A, q, B, k, slots, accumulators=cfg.accumulators)


def make_workload(kind, grid, split, seed):
    if kind == "video":
        return synthetic_video(tuple(split), grid, "fast", seed=seed, d_model=32)
    if kind == "random":
        return random_workload(grid, split, seed)
    if kind == "constant":
        return constant_workload(grid, split, seed)
    raise ValueError(f"unknown workload kind {kind!r}")


def workload_passes(cfg, grid, kind="video", seed=0, matcher=True, scheduler=False):
    """``(S_expected, [(beats, place), ...])``: ``S_expected`` is
    ``grouped_scores`` (the configuration's per-group thresholds);
    ``place(S, drains)`` adds one pass's RTL drains (per PE lists of
    ``(phase, value)``) into ``S``. The workload itself is
    ``make_workload(kind, grid, cfg.split, seed)``."""
    w = make_workload(kind, grid, cfg.split, seed)
    S_expected = grouped_scores(w.q, w.k, w.grid, w.split, cfg.thresholds)
    out = []
    for ps in iter_passes(w.q, w.k, w.grid, w.split, cfg, matcher=matcher, scheduler=scheduler):
        beats = ps.beats(cfg.accumulators)

        def place(S, drains, rows=ps.rows, cols=ps.cols):
            tiles = np.zeros((len(rows), len(cols), 4), dtype=np.int64)
            for (r, c), lst in drains.items():
                assert [p for p, _ in lst] == [0, 1, 2, 3], lst
                tiles[r, c] = [v for _, v in lst]
            accumulate_tiles(S, tiles, rows, cols)

        out.append((beats, place))
    return S_expected, out


def split_and_place(shape, passes, drains):
    """Accumulate the drains of back-to-back passes (4 per PE per pass)."""
    S = np.zeros(shape, dtype=np.int64)
    for i, (_, place) in enumerate(passes):
        place(S, {pe: lst[4 * i : 4 * i + 4] for pe, lst in drains.items()})
    return S


def pass_words(cfg, w) -> tuple[list[int], list]:
    """The :class:`~kaleido.hdl.dispatcher.PassDispatcher` input words of a
    whole head (workload ``w``, the loop nest without scheduler) and the
    golden beats the dispatcher must make of them."""
    from kaleido.hdl.dispatcher import pass_layout
    from kaleido.tb.driver import Packer, pass_word

    pack = Packer(pass_layout(cfg.array_rows, cfg.array_cols, cfg.batch))
    words, beats = [], []
    for ps in iter_passes(w.q, w.k, w.grid, w.split, cfg):
        beats += ps.beats(cfg.accumulators)
        words.append(pass_word(pack, ps.A, ps.q, ps.rows_present, ps.B, ps.k, ps.cols_present))
    return words, beats
