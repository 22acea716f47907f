"""SCALE-Sim v3 as an external dense reference (issue 15, item 4;
kaleido/bench/scalesim.py). The default suite needs no network: the fold
formula is checked against the committed runs, the report section falls
back to the committed CSV without the venv, and SCALE-Sim itself runs only
where ``make scalesim-venv`` made its venv."""

import os

import pytest

from kaleido.bench import scalesim as ss
from kaleido.config import PE_LATENCY, KaleidoConfig
from kaleido.golden.workloads import synthetic_video
from kaleido.model import pv_cycles, run_model

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_fold_formula_is_scalesim_v2():
    """SCALE-Sim v2's published 4x4 OS counts, and every committed run."""
    assert ss.fold_formula(64, 64, 16) == 5631
    assert ss.fold_formula(64, 64, 128) == 34303
    runs = [x for x in ss.read_csv(os.path.join(ROOT, ss.CSV)) if x["source"] == "run"]
    assert len(runs) >= 4
    for x in runs:
        assert int(x["scalesim_cycles"]) == ss.fold_formula(int(x["M"]), int(x["N"]), int(x["K"])), x


def test_dense_formula_is_the_model():
    w = synthetic_video("hunyuan", (2, 4, 6), "slow", 0)
    cfg = KaleidoConfig.one_array(split=w.split)
    assert ss.dense_formula(w.n, w.n, w.d) == run_model(w.q, w.k, w.grid, w.split, cfg).dense_cycles
    # P V: the same folds; one more cycle for the P V dispatcher's register and
    # PE_LATENCY - 1 for the PE's product register (issue 20)
    assert ss.dense_formula(w.n, w.d, w.n) + PE_LATENCY == pv_cycles(w.v, w.grid, w.split, cfg).dense_cycles


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "4"])
def test_bad_sizes_named(bad):
    with pytest.raises(ValueError, match=f"K must be a positive integer, not {bad!r}"):
        ss.fold_formula(4, 4, bad)


def test_report_without_venv_uses_committed_csv(tmp_path, monkeypatch):
    """No venv: the section says so and takes SCALE-Sim's numbers from the
    committed CSV (which it does not rewrite)."""
    from kaleido.bench.report import Report, scalesim_section

    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(ss, "VENV", str(tmp_path / "no-venv"))
    rep = Report((2, 4, 4), (2, 4, 4), 0, lambda msg: None, str(tmp_path))
    text = "\n".join(scalesim_section(rep, None))
    assert "No SCALE-Sim venv" in text and "docs/report/scalesim.csv" in text
    assert "| ref_64x64x16 | 64 x 64 x 16 | 5,631 | run |" in text
    assert not (tmp_path / "scalesim.csv").exists()


@pytest.mark.skipif(not ss.available(os.path.join(ROOT, ss.VENV)), reason="no SCALE-Sim venv (make scalesim-venv)")
def test_scalesim_runs(monkeypatch):
    """Where the venv exists: SCALE-Sim 3.0.0 itself on two small GEMMs
    (one 4x4, one 2x8 array) equals the fold formula."""
    monkeypatch.chdir(ROOT)
    (a,) = ss.run_gemms([("a", 64, 64, 16)])
    assert a["cycles"] == 5631 and 0 < a["utilization"] < 1
    (b,) = ss.run_gemms([("b", 12, 20, 7)], 2, 8)
    assert b["cycles"] == ss.fold_formula(12, 20, 7, 2, 8) == 269
