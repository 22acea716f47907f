"""The window PE's cycle model (kaleido.explore.window_model, issue 14): with
windows of 2 it is the explorer's 16 one-PE arrays cycle for cycle, its
nibble multiplies are the windows' op bound, a pass's beats equal the
golden matcher's slots tile by tile, P V's beats equal a per-product
count, and the harness measures the ceiling's choices."""

from __future__ import annotations

import math
import os
import types

import numpy as np
import pytest

from kaleido import KaleidoConfig
from kaleido.bench.report import window_pe_section
from kaleido.encoding import Need
from kaleido.explore import WorkloadSpec, window_bounds
from kaleido.explore import main as explore_main
from kaleido.explore.model import qk_timing
from kaleido.explore.row_delta import pv_block_halves, pv_half_beats, window_p
from kaleido.explore.window_model import (
    PAD,
    window_pass_beats,
    window_pv_timing,
    window_qk_timing,
    window_units,
)
from kaleido.explore.window_pe import read_window_pe_csv, window_pe, window_pe_summary, write_window_pe
from kaleido.golden.matcher import match
from kaleido.golden.windows import PRODUCT_COST, ROW_PARTIAL_COST, window_anchors, window_bound, window_classes
from kaleido.golden.workloads import synthetic_video
from kaleido.loopnest import group_slices

FP = ((7, 4), (7, 4), (6, 4))


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("motion", ["slow", "fast"])
def test_pairs_are_the_explorers_one_pe_arrays(seed, motion):
    w = synthetic_video("hunyuan", (2, 8, 8), motion, seed)
    cfg = KaleidoConfig.one_array(
        F=7, P=4, group_thresholds=FP, split=w.split, accumulators=4, array_rows=1, array_cols=1
    )
    ref = qk_timing(w.q, w.k, w.grid, w.split, cfg, FP, order="queue", arrays=16, dispatch="queue")
    got = window_qk_timing(w.q, w.k, w.grid, w.split, 2, FP)
    assert (got.cycles["phased"], got.dense_cycles, got.ops) == (ref.cycles, ref.dense_cycles, ref.ops["hw"]), seed


@pytest.mark.parametrize("w", [2, 4, 8])
def test_ops_are_the_windows_op_bound(w):
    h = synthetic_video("hunyuan", (6, 4, 8), "fast", 5)  # t = 6: short windows at w = 4 and 8
    b = window_bound(h.q, h.k, h.v, h.grid, h.split, w, FP, scales=h.scales)
    for row_partial, key in ((False, "oracle"), (True, "oracle_row_partial")):
        t = window_qk_timing(h.q, h.k, h.grid, h.split, w, FP, row_partial=row_partial)
        assert t.ops == b[key]
        assert t.dense_ops == b["dense"]
        # no pass beats its op bound; stream packs at least as tightly as phases
        assert t.beats["phased"] >= t.beats["stream"] >= math.ceil(t.ops / 2)
        assert 0 < t.utilization["phased"] <= t.utilization["stream"] <= 1
        assert t.cycles["stream"] >= math.ceil(t.ops / 2 / 16)


def test_window_units_cover_every_token_once():
    u = window_units((6, 3, 4), 0, 4)
    assert u.shape == (24, 4)  # t 0-3 and t 4-5 at each of the 12 (y, x)
    assert sorted(u[u >= 0].tolist()) == list(range(72))
    assert (u[:, :2] >= 0).all() and (u < 0).sum() == 12 * 2  # the t 4-5 windows are short by two
    t = np.indices((6, 3, 4))[0].ravel()
    for row in u:
        real = row[row >= 0]
        assert (t[real] == t[real[0]] + np.arange(len(real))).all()  # consecutive along t, anchor first
    for bad, kw in (("w", {"w": 1}), ("axis", {"axis": 3})):
        with pytest.raises(ValueError, match=bad):
            window_units((2, 2, 2), **{"axis": 0, "w": 2, **kw})
    with pytest.raises(ValueError, match="arrays must be a positive integer, not 0"):
        z = np.zeros((8, 3), np.int8)
        window_qk_timing(z, z, (2, 2, 2), (1, 1, 1), 2, (6, 4), arrays=0)


@pytest.mark.parametrize("seed", [3, 4])
def test_pass_beats_are_the_golden_matchers_slots(seed):
    rng = np.random.default_rng(seed)
    print(f"seed {seed}")
    w, n = 3, 6
    tq = rng.integers(0, 4, size=(5, w, n)).astype(np.uint8)
    tk = rng.integers(0, 4, size=(4, w, n)).astype(np.uint8)
    tq[1, 2] = PAD  # a short window
    for row_partial, table in ((False, PRODUCT_COST), (True, ROW_PARTIAL_COST)):
        b = window_pass_beats(tq, tk, 2, row_partial=row_partial)
        ops = 0
        for a in range(len(tq)):
            for k in range(len(tk)):
                phased = full = half = 0
                for i in range(w):
                    for j in range(w):
                        if tq[a, i, 0] == PAD or tk[k, j, 0] == PAD:
                            continue
                        needs = [Need(int(table[tq[a, i, c], tk[k, j, c]])) for c in range(n)]
                        phased += max(1, len(match(needs, 2)))
                        full += needs.count(Need.FULL)
                        half += needs.count(Need.HALF)
                assert b["phased"][a, k] == phased, (seed, a, k)
                assert b["stream"][a, k] == max(1, full + (half + 1) // 2), (seed, a, k)
                ops += 2 * full + half
        assert b["ops"] == ops


def test_pv_beats_are_a_per_product_count():
    h = synthetic_video("hunyuan", (2, 4, 4), "slow", 2)
    p = window_p(h.q, h.k, h.grid, h.split, 2, (6, 4), scales=h.scales)
    p[::3] -= 20  # negative operands, as delta rows give
    halves = pv_block_halves(p, h.v, h.grid, h.split, 2, 6)
    cls = window_classes(h.v, h.grid, h.split, 2, (6, 6))
    for sl, axis in group_slices(h.split):
        anchor = window_anchors(h.grid, axis, 2)
        for c in range(sl.start, sl.stop):
            for i in range(p.shape[0]):
                ops: dict[int, int] = {}
                for j in range(h.n):
                    key = int(anchor[j]) if cls[j, c] == 2 else j
                    ops[key] = ops.get(key, 0) + int(p[i, j])
                want = sum(1 + (not -16 <= x < 16 and h.v[j, c] != 0) for j, x in ops.items())
                assert halves[i, c] == want, (i, c)
    assert halves.sum() == pv_half_beats(p, h.v, h.grid, h.split, 2, 6)["halves"]
    t = window_pv_timing(p, h.v, h.grid, h.split, 2, 6, arrays=4)
    assert t["beats"] == int(((halves + 1) // 2).sum())
    assert t["cycles"] >= math.ceil(t["beats"] / 4)


def test_the_window_pe_harness_measures_the_ceilings_choices(tmp_path):
    spec = WorkloadSpec(grid=(2, 4, 8), motion="fast", seed=3)
    wb = window_bounds({"tuning": (spec,)}, ws=(2, 4), thresholds=((6, 4), (8, 4)), jobs=1)
    rows = window_pe(wb, 10.0, jobs=1, specs=(spec,))
    assert {r["choice"] for r in rows} == {"calibrated", "oracle", "fixed"}
    for r in rows:
        assert 0 < r["qk_all_utilization_phased"] <= r["qk_all_utilization_stream"] <= 1
        assert r["attention_all_phased"] <= r["attention_all_stream"]
        # the stream keeps the ceiling within rounding and the tiles' latency
        assert r["attention_all_stream"] <= r["bound"] * 1.01
    s = window_pe_summary(rows, 10.0)
    assert s["oracle"]["tuning"]["heads"] == 1
    paths = write_window_pe(rows, str(tmp_path), 10.0)
    back = read_window_pe_csv(paths[1])
    assert back == [{k: r[k] for k in back[0]} for r in rows]
    assert "| oracle | tuning | 1 |" in open(paths[2]).read()
    with pytest.raises(ValueError, match="heads the exploration does not have"):
        window_pe(wb, 10.0, jobs=1, specs=())


def test_window_pe_runs_alone(capsys):
    with pytest.raises(SystemExit) as err:
        explore_main(["--window-pe", "--quick"])
    assert err.value.code == 2
    assert "--window-pe runs alone" in capsys.readouterr().err


def test_the_reports_window_pe_section(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no build/explore here: the report reads the committed CSV
    out = tmp_path / "report"
    out.mkdir()
    rep = types.SimpleNamespace(out=str(out))
    assert "No window PE rows yet" in "\n".join(window_pe_section(rep, None))
    spec = WorkloadSpec(grid=(2, 4, 8), motion="fast", seed=3)
    wb = window_bounds({"tuning": (spec,)}, ws=(2,), thresholds=((6, 4),), jobs=1)
    rows = window_pe(wb, 10.0, jobs=1, specs=(spec,))
    os.makedirs("build/explore")
    write_window_pe(rows, "build/explore", 10.0)
    text = "\n".join(window_pe_section(rep, None))  # a fresh run is read first, and rewrites the committed CSV
    assert "--window-pe` (build/explore/window_pe.json)" in text
    assert read_window_pe_csv(str(out / "exploration_window_pe.csv")) == read_window_pe_csv(
        "build/explore/window_pe.csv"
    )
    os.remove("build/explore/window_pe.json")
    text = "\n".join(window_pe_section(rep, None))
    assert "the committed" in text
    g = window_pe_summary(rows, 40.0)["oracle"]["tuning"]["attention_all_phased"]
    assert "| oracle | tuning | 1 | " in text and f"{g['geomean']:.3f}x ({g['min']:.3f}x), {g['at_least_2x']}" in text


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--max-window", "4"], "--max-window needs --window-pe"),
        (["--window-pe", "--max-window", "1"], "--max-window must be at least 2 (pairs), not 1"),
    ],
)
def test_max_window_is_checked(argv, message, capsys, tmp_path):
    with pytest.raises(SystemExit) as err:
        explore_main([*argv, "--out", str(tmp_path)])
    assert err.value.code == 2
    assert message in capsys.readouterr().err
