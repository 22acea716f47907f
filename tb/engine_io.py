"""Host side of :class:`kaleido.hdl.engine.KaleidoEngine`: the input words
of a head and the decoding of its score stream, shared by the Amaranth
simulator, the cocotb testbench and the ``make sim`` demo."""

from __future__ import annotations

import numpy as np

__all__ = ["engine_words", "decode_scores", "threshold_word", "random_thresholds"]


def engine_words(Q, K, config) -> list[int]:
    """``qk`` stream words: Q then K, token by token, batch by batch within
    a token; lane ``c`` of a word is bits ``8c..8c+7`` (two's complement),
    lanes past a short batch 0."""
    words = []
    for Z in (Q, K):
        Z = np.asarray(Z, dtype=np.int8).view(np.uint8)
        for tok in Z:
            for c0, n in config.batches:
                lanes = tok[c0 : c0 + n].astype(object)
                words.append(sum(int(v) << (8 * c) for c, v in enumerate(lanes)))
    return words


def decode_scores(values, n_tokens: int, width: int) -> np.ndarray:
    """``S`` (int64 ``(N, N)``) from the ``value`` fields of the ``s``
    stream (row-major, unsigned ``width``-bit patterns)."""
    if len(values) != n_tokens * n_tokens:
        raise ValueError(f"expected {n_tokens * n_tokens} scores, got {len(values)}")
    return signed_values(values, width).reshape(n_tokens, n_tokens)


def signed_values(values, width: int) -> np.ndarray:
    """int64 two's-complement values of unsigned ``width``-bit patterns."""
    v = np.array([int(x) for x in values], dtype=np.int64)
    return np.where(v >> (width - 1) & 1, v - (1 << width), v)


def threshold_word(thresholds) -> int:
    """The engine's ``thresholds`` port value
    (:func:`kaleido.hdl.scheduling.thresholds_layout`) of three ``(F, P)``
    pairs (t, x, y) or one: group ``g``'s F in bits ``8g..8g+3``, its P in
    ``8g+4..8g+7``."""
    from kaleido.checks import check_group_thresholds

    return sum((F | P << 4) << (8 * g) for g, (F, P) in enumerate(check_group_thresholds(thresholds)))


def random_thresholds(rng: np.random.Generator) -> tuple[tuple[int, int], ...]:
    """Three random valid ``(F, P)`` pairs (``1 <= P <= F <= 9``), drawn
    around the useful range 3..9 so every class occurs on video heads."""
    out = []
    for _ in range(3):
        F = int(rng.integers(3, 10))
        out.append((F, int(rng.integers(2, F + 1))))
    return tuple(out)
