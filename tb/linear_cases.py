"""Golden-side inputs and expected outputs of the linear-layer blocks
(issue 17): the window detector, and a layer through the pass dispatcher
and the array."""

from __future__ import annotations

import numpy as np

from kaleido.config import KaleidoConfig, LinearReuse
from kaleido.golden.linear import linear_passes, window_class
from kaleido.golden.scheduler import reuse_strings
from kaleido.golden.workloads import linear_weights, video_activations
from kaleido.hdl.detector import detector_in_layout, detector_out_layout
from kaleido.tb.driver import Packer

__all__ = ["window_detector_case", "linear_layer", "linear_pass_words", "LINEAR_GRID", "LINEAR_D_OUT"]

#: the small layer of the block tests: 2x3x4 tokens, 12 -> 10 features
LINEAR_GRID = (2, 3, 4)
LINEAR_D_OUT = 10


def window_detector_case(cfg: KaleidoConfig, rng, n_pairs=150, source="random", rule: LinearReuse | None = None):
    """``(in_words, expected_out_words)`` of the window detector: random
    pairs near each other (every class occurs) or activation pairs of a
    synthetic video, short batches and absent followers included."""
    rule = rule or LinearReuse()
    B = cfg.batch
    pack_in, pack_out = Packer(detector_in_layout(B)), Packer(detector_out_layout(B))
    if source == "random":
        a = rng.integers(-128, 128, (n_pairs, B))
        b = np.clip(a + rng.integers(-20, 21, (n_pairs, B)) * (rng.random((n_pairs, B)) < 0.8), -128, 127)
        a, b = a.astype(np.int8), b.astype(np.int8)
        a[0], b[0] = -128, 127  # the widest difference
    else:
        X, _, _ = video_activations((2, 4, 4), "fast", int(rng.integers(1 << 31)), d_model=2 * B)
        a = np.resize(X[0::2, :B], (n_pairs, B)).astype(np.int8)
        b = np.resize(X[1::2, :B], (n_pairs, B)).astype(np.int8)
    counts = rng.integers(1, B + 1, n_pairs)
    counts[rng.random(n_pairs) < 0.5] = B
    absent = rng.random(n_pairs) < 0.1
    ins, outs = [], []
    for p in range(n_pairs):
        n = int(counts[p])
        ins.append(
            pack_in(
                {
                    ("count",): n,
                    ("absent",): int(absent[p]),
                    **{("anchor", c): a[p, c] for c in range(B)},
                    **{("follower", c): b[p, c] for c in range(B)},
                }
            )
        )
        cls = np.zeros(B, np.uint8)
        cls[:n] = 3 if absent[p] else window_class(a[p, :n], b[p, :n], rule)
        row = np.zeros(B, np.int8)
        col = np.zeros(B, np.int8)
        if not absent[p]:
            row[:n] = np.where(cls[:n] == 2, a[p, :n], b[p, :n])
            col[:n] = b[p, :n]
        exp: dict[tuple, int] = {("string",): int(reuse_strings(cls[None, :n], B)[0])}
        for c in range(B):
            exp[("anchor", c)] = a[p, c] if c < n else 0
            exp[("cls", c)] = cls[c]
            exp[("row_eff", c)] = row[c]
            exp[("col_eff", c)] = col[c]
        outs.append(pack_out(exp))
    return ins, outs


def linear_layer(motion: str, seed: int, d_in: int = 12, grid=LINEAR_GRID, d_out: int = LINEAR_D_OUT):
    """``(X, W)`` of a small layer: video activations and seeded weights."""
    X, _, _ = video_activations(grid, motion, seed, d_model=d_in)
    W, _, _ = linear_weights(d_in, d_out, seed)
    return X, W


def linear_pass_words(cfg: KaleidoConfig, X, W, grid, rule: LinearReuse | None = None) -> tuple[list[int], list]:
    """The ``PassDispatcher`` words of a whole layer (no scheduler) and the
    golden beats they must become."""
    from kaleido.hdl.dispatcher import pass_layout
    from kaleido.tb.driver import pass_word

    pack = Packer(pass_layout(cfg.array_rows, cfg.array_cols, cfg.batch))
    words, beats = [], []
    for ps in linear_passes(X, W, grid, cfg, rule):
        beats += ps.beats(cfg.accumulators)
        words.append(pass_word(pack, ps.A, ps.q, ps.rows_present, ps.B, ps.k, ps.cols_present))
    return words, beats
