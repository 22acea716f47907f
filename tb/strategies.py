"""Hypothesis strategies shared by the golden-model tests."""

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp


@st.composite
def thresholds(draw):
    F = draw(st.integers(1, 9))
    P = draw(st.integers(1, F))
    return F, P


@st.composite
def heads(draw, max_extent=5, max_group=6, correlated=True):
    """(Q, K, grid, split): small int8 heads with odd and even extents; with
    ``correlated`` some followers copy or perturb their neighbour so every
    class occurs."""
    grid = tuple(draw(st.integers(1, max_extent)) for _ in range(3))
    split = tuple(draw(st.integers(1, max_group)) for _ in range(3))
    n, d = int(np.prod(grid)), sum(split)
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(2):
        z = rng.integers(-128, 128, (n, d), dtype=np.int8)
        if correlated:
            base = np.repeat(rng.integers(-128, 128, (1, d)), n, axis=0)
            noise = rng.integers(-1, 2, (n, d)) * rng.choice([0, 1, 4, 16, 40], (n, d))
            mix = rng.random((n, d)) < 0.7
            z = np.where(mix, np.clip(base + noise, -128, 127), z).astype(np.int8)
        out.append(z)
    return out[0], out[1], grid, split


int8_pairs = hnp.arrays(np.int8, st.integers(1, 64)).flatmap(
    lambda a: st.tuples(st.just(a), hnp.arrays(np.int8, a.shape))
)
