"""Fast inner loop: the Kaleido PE array in the Amaranth simulator against
the golden beat model and reuse_scores."""

import numpy as np
import pytest

from kaleido import KaleidoConfig
from kaleido.hdl.array import KaleidoArray
from kaleido.hdl.pe import KaleidoPE
from kaleido.model import VARIANTS, run_model
from kaleido.tb.amaranth_sim import simulate_array
from kaleido.tb.driver import expected_drains
from kaleido.tb.passes import make_workload, random_pass, split_and_place, workload_passes


def _check(cfg, beats, **kw):
    drains, lat = simulate_array(cfg, beats, **kw)
    exp = expected_drains(beats, cfg.array_rows, cfg.array_cols, cfg.accumulators, cfg.acc_width)
    assert drains == exp
    for (r, c), offsets in lat.items():
        assert offsets == [KaleidoArray(cfg).tile_latency(r, c)] * len(offsets), (r, c)
    return drains


@pytest.mark.parametrize("accumulators", [3, 4])
def test_random_passes(accumulators, seed):
    cfg = KaleidoConfig.one_array(split=(4, 4, 4), batch=4, accumulators=accumulators)
    rng = np.random.default_rng(seed)
    beats = []
    for _ in range(4):
        beats += random_pass(rng, cfg)[0]
    _check(cfg, beats)


@pytest.mark.parametrize("in_stall, out_stall", [("random", "none"), ("none", "random"), ("every4", "every4")])
def test_stalls(in_stall, out_stall, seed):
    cfg = KaleidoConfig.one_array(split=(4, 4, 4), batch=4)
    rng = np.random.default_rng(seed)
    beats = random_pass(rng, cfg)[0] + random_pass(rng, cfg)[0]
    _check(cfg, beats, in_stall=in_stall, out_stall=out_stall, seed=seed)


@pytest.mark.parametrize("rows, cols, variant", [(1, 1, "pe"), (2, 3, "full"), (4, 4, "pe-m"), (3, 2, "pe-sh")])
def test_workload_equals_reuse_scores_and_model(rows, cols, variant):
    cfg = KaleidoConfig.one_array(split=(3, 2, 3), batch=3, array_rows=rows, array_cols=cols)
    scheduler, matcher = VARIANTS[variant]
    S_expected, passes = workload_passes(
        cfg, grid=(2, 3, 3), kind="video", seed=1, matcher=matcher, scheduler=scheduler
    )
    beats = [b for bs, _ in passes for b in bs]  # every pass back to back
    drains, _, cycles = simulate_array(cfg, beats, with_cycles=True)
    assert (split_and_place(S_expected.shape, passes, drains) == S_expected).all()
    w = make_workload("video", (2, 3, 3), cfg.split, 1)
    assert cycles == run_model(w.q, w.k, w.grid, w.split, cfg, variant=variant).cycles


def test_invalid_configuration():
    with pytest.raises(ValueError, match="array_rows must be at least 1, not 0"):
        KaleidoArray(KaleidoConfig.one_array(array_rows=0))
    with pytest.raises(ValueError, match="acc_width 12 is too narrow for batch 16"):
        KaleidoPE(KaleidoConfig.one_array(acc_width=12))
    with pytest.raises(TypeError, match="config must be a KaleidoConfig"):
        KaleidoArray({"array_rows": 4})
