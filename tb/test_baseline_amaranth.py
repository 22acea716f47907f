"""The dense baseline array computes plain int8 tiles, with stalls, at the
latency it declares (Amaranth simulator)."""

import numpy as np
import pytest

from kaleido import KaleidoConfig
from kaleido.hdl.baseline import DenseArray
from kaleido.tb.benches import dense_bench
from kaleido.tb.kit import simulate


@pytest.mark.parametrize("in_stall, out_stall", [("none", "none"), ("random", "every4")])
def test_dense_array_tiles(seed, in_stall, out_stall):
    cfg = KaleidoConfig.one_array(array_rows=3, array_cols=2)
    R, C = 3, 2
    rng = np.random.default_rng(seed)
    tiles = [(rng.integers(-128, 128, (R, n)), rng.integers(-128, 128, (C, n))) for n in (1, 5, 16, 2)]
    dut = DenseArray(cfg)
    res = simulate(dut, lambda be: dense_bench(be, cfg, tiles, in_stall=in_stall, out_stall=out_stall, seed=seed))
    for (r, c), drains in res.drains.items():
        assert [v for _, v in drains] == [int(a[r].astype(np.int64) @ b[c]) for a, b in tiles], (r, c)
        assert res.latency[(r, c)] == [dut.tile_latency(r, c)] * len(tiles), (r, c)
