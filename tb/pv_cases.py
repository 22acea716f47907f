"""Golden-side inputs and expected outputs of the P V array (issue 12),
shared by the Amaranth-simulator tests and the cocotb testbenches."""

from __future__ import annotations

import numpy as np

from kaleido.config import KaleidoConfig
from kaleido.golden.pv import pv_pass_beats
from kaleido.hdl.pv_dispatcher import pv_unit_layout
from kaleido.loopnest import pv_passes
from kaleido.tb.driver import Packer
from kaleido.tb.passes import make_workload

__all__ = ["pv_head", "pv_words"]


def pv_head(kind: str, grid, split, seed: int, *, small_p: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """``(P, V)`` of one head: V of a workload (``video``: smooth, many FULL
    followers; ``random``: V with followers near their anchors, so every
    class occurs) and a random 7-bit P; with ``small_p`` four values in
    five below 16, as a softmax's P mostly is (small-P pairing: beats of
    every kind, small and not)."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(grid))
    if kind == "random":
        V = rng.integers(-128, 128, (n, sum(split))).astype(np.int8)
        near = np.clip(np.roll(V, 1, axis=0).astype(np.int64) + rng.integers(-3, 4, V.shape), -128, 127)
        V = np.where(rng.random(V.shape) < 0.5, near, V).astype(np.int8)
    else:
        V = make_workload(kind, grid, split, seed).v
    P = rng.integers(0, 128, (n, n))
    if small_p:
        P = np.where(rng.random(P.shape) < 0.8, rng.integers(0, 16, P.shape), P)
    return P, V


def pv_words(cfg: KaleidoConfig, P: np.ndarray, V: np.ndarray, grid, split) -> tuple[list[int], list]:
    """The ``PvArray``'s unit words for a whole head and the golden beats
    they must become."""
    pack = Packer(pv_unit_layout(cfg.array_rows, cfg.array_cols))
    words: list[int] = []
    beats: list = []
    for ps in pv_passes(cfg, grid, split, P.shape[0]):
        beats += pv_pass_beats(P, V, ps, cfg, cfg.F)
        for i, (a, f) in enumerate(ps.units):
            vals: dict[tuple, int] = {("absent",): int(f < 0), ("last",): int(i == len(ps.units) - 1)}
            for r, q in enumerate(ps.queries):
                vals[("p_a", r)] = int(P[q, a])
                vals[("p_f", r)] = int(P[q, f]) if f >= 0 else 0
            for c, ch in enumerate(ps.channels):
                vals[("v_a", c)] = int(V[a, ch])
                vals[("v_f", c)] = int(V[f, ch]) if f >= 0 else 0
            words.append(pack(vals))
    return words, beats
