"""``kaleido sweep`` (issue 16): tiny synthetic heads on a Dask local
cluster; every table value against a direct model call, the whole-model
speedup against its definition, and clear errors for bad input."""

import json

import numpy as np
import pandas as pd
import pytest

from kaleido import KaleidoConfig
from kaleido.cli import main
from kaleido.energy import attention_energy
from kaleido.golden.attention import reuse_attention
from kaleido.golden.workloads import load, random_workload, save, synthetic_video
from kaleido.model import attention_stages, run_model
from kaleido.sweep import MANIFEST, SweepConfig, configurations, discover, evaluate, sweep, write_manifest

#: (file, step, layer, head, workload)
HEADS = [
    ("s0_l0_h0.npz", 0, 0, 0, lambda: synthetic_video("hunyuan", (2, 4, 4), "slow", seed=1)),
    ("s0_l1_h0.npz", 0, 1, 0, lambda: synthetic_video("hunyuan", (2, 4, 6), "fast", seed=2)),
    ("s1_l0_h1.npz", 1, 0, 1, lambda: synthetic_video("wan", (2, 2, 4), "slow", seed=3)),
    ("s1_l1_h1.npz", 1, 1, 1, lambda: random_workload((2, 4, 4), (4, 6, 6), seed=4)),
]


@pytest.fixture
def heads_dir(tmp_path):
    d = tmp_path / "heads"
    d.mkdir()
    entries = []
    for name, step, layer, head, make in HEADS:
        w = make()
        save(d / name, w)
        entries.append({"file": name, "step": step, "layer": layer, "head": head, "grid": w.grid, "split": w.split})
    write_manifest(d, entries, model="tiny-synthetic", prompt="none")
    return d


def _direct(name, F, P, acc):
    """The row's values computed here, from the model's own functions."""
    w = load(name)
    cfg = KaleidoConfig.one_array(split=w.split, F=F, P=P, accumulators=acc)
    r = run_model(w.q, w.k, w.grid, w.split, cfg, variant="full")
    att = attention_stages(r, w.v, w.grid, w.split, cfg)
    e = attention_energy(w.q, w.k, w.v, w.grid, w.split, cfg, r)
    q = reuse_attention(w.q, w.k, w.v, w.grid, w.split, F, P, scales=w.scales).metrics["vs_int8"]
    return r, att, e, q


def test_sweep_cli_on_a_local_cluster(heads_dir, tmp_path, capsys):
    out = tmp_path / "out"
    argv = ["sweep", str(heads_dir), "--out", str(out), "--workers", "2"]
    assert main([*argv, "--thresholds", "5,3", "4,2", "--accumulators", "3", "4"]) == 0
    table = pd.read_parquet(out / "heads.parquet")
    csv = pd.read_csv(out / "heads.csv")
    assert len(table) == len(csv) == 4 * len(HEADS)
    assert (csv["cycles"].to_numpy() == table["cycles"].to_numpy()).all()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["cluster"]["workers"] == 2 and summary["cluster"]["local"]
    for f in ("speedup_by_layer.png", "speedup_by_step.png", "speedup_hist.png"):
        assert (out / f).stat().st_size > 1000
    assert "whole-model speedup" in capsys.readouterr().out
    seen = set()
    for (F, P), acc in [((5, 3), 3), ((5, 3), 4), ((4, 2), 3), ((4, 2), 4)]:
        rows = table[(table.F == F) & (table.P == P) & (table.accumulators == acc)]
        assert len(rows) == len(HEADS)
        cycles = dense = 0
        for (name, step, layer, head, _), (_, row) in zip(HEADS, rows.iterrows(), strict=True):
            assert row["file"].endswith(name) and (row["step"], row["layer"], row["head"]) == (step, layer, head)
            assert row["model"] == "tiny-synthetic"
            r, att, e, q = _direct(row["file"], F, P, acc)
            assert row["cycles"] == r.cycles and row["dense_cycles"] == r.dense_cycles
            assert row["speedup"] == r.speedup and row["passes"] == r.passes and row["beats"] == r.beats
            assert [row["ops_dense"], row["ops_oracle"], row["ops_hw"]] == [r.ops[k] for k in ("dense", "oracle", "hw")]
            assert row["attention_cycles"] == att["attention"]["cycles"]
            assert row["pv_cycles"] == att["stages"]["pv"]["cycles"]
            assert row["energy_kaleido_pj"] == e["kaleido_pj"] and row["energy_dense_pj"] == e["dense_pj"]
            assert row["psnr_db"] == q["psnr"] and row["cosine"] == q["cosine"] and row["psnr_rows"] == row["n"]
            cycles, dense = cycles + r.cycles, dense + r.dense_cycles
        name = rows["config"].iloc[0]
        seen.add(name)
        assert summary["by_config"][name]["speedup"] == dense / cycles
        assert summary["by_config"][name]["cycles"] == cycles
    assert seen == set(summary["by_config"])


def test_sweep_on_an_existing_cluster(heads_dir, tmp_path):
    """``--scheduler``: an in-process cluster started here; a directory
    without a manifest (step, layer, head from the file names)."""
    from distributed import LocalCluster

    (heads_dir / MANIFEST).unlink()
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        s = sweep(heads_dir, tmp_path / "o", configurations(), scheduler=cluster.scheduler_address, plots=False)
        assert s["cluster"]["local"] is False and s["cluster"]["workers"] == 1
    table = pd.read_csv(tmp_path / "o" / "heads.csv")
    assert list(zip(table["step"], table["layer"], table["head"], strict=True)) == [h[1:4] for h in HEADS]
    r, _, _, _ = _direct(table["file"][2], 5, 3, 3)
    assert table["cycles"][2] == r.cycles


def _cli_error(argv, capsys) -> str:
    with pytest.raises(SystemExit) as err:
        main(argv)
    assert err.value.code == 2
    return capsys.readouterr().err


def test_bad_input_is_named(tmp_path, capsys, heads_dir):
    out = str(tmp_path / "out")
    missing = str(tmp_path / "nope")
    assert f"sweep directory {missing!r} does not exist" in _cli_error(["sweep", missing, "--out", out], capsys)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "holds no heads" in _cli_error(["sweep", str(empty), "--out", out], capsys)
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "junk.npz").write_bytes(b"not a zip file")
    msg = _cli_error(["sweep", str(bad), "--out", out], capsys)
    assert "junk.npz" in msg and "not a readable .npz" in msg
    (bad / "junk.npz").unlink()
    w = synthetic_video("hunyuan", (2, 4, 4), "slow", seed=0)
    np.savez(bad / "s0_l0_h0.npz", q=w.q, k=w.k, v=w.v, grid=np.array([2, 4, 5]), split=np.array(w.split))
    msg = _cli_error(["sweep", str(bad), "--out", out], capsys)
    assert "s0_l0_h0.npz" in msg and "(2, 4, 5)" in msg
    np.savez(bad / "s0_l0_h0.npz", q=w.q, k=w.k, v=w.v, grid=np.array(w.grid), split=np.array([16, 56, 50]))
    msg = _cli_error(["sweep", str(bad), "--out", out], capsys)
    assert "s0_l0_h0.npz" in msg and "(16, 56, 50)" in msg
    # a manifest whose grid disagrees with its file
    data = json.loads((heads_dir / MANIFEST).read_text())
    data["heads"][1]["grid"] = [4, 2, 6]
    (heads_dir / MANIFEST).write_text(json.dumps(data))
    msg = _cli_error(["sweep", str(heads_dir), "--out", out], capsys)
    assert "heads[1]" in msg and "[4, 2, 6]" in msg and "[2, 4, 6]" in msg
    with pytest.raises(ValueError, match="accumulators must be 3 or 4, not 5"):
        configurations(accumulators=[5])
    assert "a threshold pair must be F,P" in _cli_error(
        ["sweep", str(heads_dir), "--out", out, "--thresholds", "5"], capsys
    )


def test_discover_reads_the_manifest(heads_dir):
    heads = discover(heads_dir)
    assert [(h.step, h.layer, h.head) for h in heads] == [h[1:4] for h in HEADS]
    assert heads[2].grid == (2, 2, 4) and heads[2].split == (44, 42, 42) and heads[2].model == "tiny-synthetic"


def test_quality_of_a_long_head_samples_queries(heads_dir):
    """Above ``quality_max_n`` tokens the PSNR is over ``quality_rows``
    evenly spaced queries against every key."""
    h = discover(heads_dir)[1]
    w = load(h.file)
    row = evaluate(h, SweepConfig(), quality_max_n=47, quality_rows=10)
    rows = np.linspace(0, w.n - 1, 10).round().astype(np.int64)
    q = reuse_attention(w.q, w.k, w.v, w.grid, w.split, 5, 3, scales=w.scales, rows=rows).metrics["vs_int8"]
    assert row["psnr_rows"] == 10 and row["psnr_db"] == q["psnr"] and row["cosine"] == q["cosine"]
    full = evaluate(h, SweepConfig())
    assert full["psnr_rows"] == w.n == 48 and full["psnr_db"] != row["psnr_db"]
    with pytest.raises(ValueError, match="quality_rows must be a positive integer, not 0"):
        sweep(heads_dir, heads_dir / "o", quality_rows=0)
