"""Per-head threshold calibration (issue 14, :mod:`kaleido.calibrate`):
the search, its agreement with the explorer, the JSON round trip through
``kaleido calibrate`` and ``kaleido perf --thresholds``, clear errors."""

from __future__ import annotations

import json

import pytest

from kaleido import KaleidoConfig
from kaleido.calibrate import LADDER, calibrate, load_thresholds, search_thresholds
from kaleido.cli import main
from kaleido.explore import Candidate, WorkloadSpec, measure
from kaleido.golden.grouped import hw_attention
from kaleido.model import run_model
from kaleido.stage_timing import qk_timing

SPEC = WorkloadSpec(grid=(2, 8, 8), motion="fast", seed=1)


@pytest.fixture(scope="module")
def head():
    return SPEC.load()


def _toy(fp) -> float:
    """A PSNR that grows with every group's F (group x counts most)."""
    return 20.0 + sum(F * wt for (F, _), wt in zip(fp, (1.0, 2.0, 1.5), strict=True))


def test_search_on_a_toy_quality():
    """The first rung at the floor, then single-group steps down while the
    floor holds and the speedup (here: lower F is faster) grows."""

    def speed(fp):
        return {"attention_speedup": 100.0 - sum(F for F, _ in fp)}

    chosen, best, search = search_thresholds(_toy, speed, 40.0)
    assert _toy(chosen) >= 40.0 and best == speed(chosen)
    rung = next(fp for fp in LADDER if _toy([fp] * 3) >= 40.0)
    assert search[len([fp for fp in LADDER[: LADDER.index(rung) + 1]]) - 1]["thresholds"] == [list(rung)] * 3
    for g in range(3):  # no single group can go lower and keep the floor
        F, P = chosen[g]
        if F > 4:
            trial = list(chosen)
            trial[g] = (F - 1, min(P, F - 1))
            assert _toy(trial) < 40.0
    # uniform only: the rung itself
    assert search_thresholds(_toy, speed, 40.0, group=False)[0] == [rung] * 3
    # nothing keeps an impossible floor: reuse off
    assert search_thresholds(_toy, speed, 1000.0)[0] == [(9, 9)] * 3


def test_calibrate_keeps_floor_plus_margin_and_equals_the_explorer(head):
    """``calibrate`` chooses what the explorer's ``group`` search chooses
    with P V at the configuration's F (one search, not two), the output
    keeps floor + margin, and the speedup is the cycle model's."""
    cfg = KaleidoConfig.one_array(split=head.split)
    r = calibrate(head.q, head.k, head.v, head.grid, head.split, cfg, scales=head.scales, floor=40.0, margin=1.5)
    fp = [tuple(x) for x in r["thresholds"]]
    psnr = hw_attention(head.q, head.k, head.v, head.grid, head.split, fp, [cfg.F] * 3, scales=head.scales)
    assert r["psnr"] == pytest.approx(psnr["vs_int8"]["psnr"]) and r["psnr"] >= 41.5
    assert r["qk_speedup"] == qk_timing(head.q, head.k, head.grid, head.split, cfg, fp).speedup
    model = run_model(head.q, head.k, head.grid, head.split, cfg.replace(group_thresholds=fp))
    assert r["qk_speedup"] == pytest.approx(model.speedup)
    cand = Candidate("g", "adaptive", accumulators=4, v_full=(cfg.F,) * 3, adaptive="group")
    row = measure(SPEC, cand, 41.5)
    assert row["thresholds"] == r["thresholds"]
    assert row["attention_speedup"] == pytest.approx(r["attention_speedup"])


def test_calibrate_cli_round_trip(tmp_path, capsys):
    out = tmp_path / "t.json"
    assert main(["calibrate", "--grid", "2,8,8", "--motion", "fast", "--seed", "1", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["workload"]["motion"] == "fast" and data["psnr"] >= 41.5
    assert "thresholds t" in capsys.readouterr().out
    j = tmp_path / "perf.json"
    assert (
        main(["perf", "--grid", "2,8,8", "--motion", "fast", "--seed", "1", "--thresholds", str(out), "--json", str(j)])
        == 0
    )
    perf = json.loads(j.read_text())
    assert perf["config"]["thresholds"] == data["thresholds"]
    w = SPEC.load()
    fp = [tuple(x) for x in data["thresholds"]]
    ref = run_model(w.q, w.k, w.grid, w.split, KaleidoConfig(split=w.split, group_thresholds=fp))
    assert perf["cycles"] == ref.cycles


def test_load_thresholds(tmp_path):
    assert load_thresholds("7,4,7,4,6,4") == ((7, 4), (7, 4), (6, 4))
    assert load_thresholds("5,3") == ((5, 3),) * 3
    f = tmp_path / "t.json"
    f.write_text(json.dumps({"thresholds": [[6, 4], [5, 3], [7, 4]]}))
    assert load_thresholds(str(f)) == ((6, 4), (5, 3), (7, 4))
    f.write_text(json.dumps({"other": 1}))
    with pytest.raises(ValueError, match="has no 'thresholds'"):
        load_thresholds(str(f))
    with pytest.raises(ValueError, match="'7,4,7'"):
        load_thresholds("7,4,7")
    with pytest.raises(ValueError, match="'x,y'"):
        load_thresholds("x,y")
    with pytest.raises(ValueError, match="P <= F"):
        load_thresholds("5,6")


def test_calibrate_rejects_bad_margin(head):
    with pytest.raises(ValueError, match="margin must be a number of dB"):
        calibrate(head.q, head.k, head.v, head.grid, head.split, scales=head.scales, margin=-1)
