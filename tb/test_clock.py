"""Speedup in time: clocks from a `make synth` report or the committed
table, the core at its slowest block, and `kaleido perf` reporting both
speedups."""

import json

import pytest

from kaleido.cli import main
from kaleido.clock import TABLE, clocks, core_blocks, fmax_table, time_speedup


def _report(tmp_path, **fmax):
    path = tmp_path / "report.json"
    path.write_text(json.dumps({"designs": {k: {"fmax_mhz": v} for k, v in fmax.items()}}))
    return path


def test_the_committed_table_has_every_clock():
    fmax, source = fmax_table(None)
    for block in (*core_blocks(), "baseline_array", "baseline_pe", "kaleido_pe"):
        assert 1 < fmax[block] < 1000 and source[block] == "docs/SYNTH_TABLE.md"
    assert "| kaleido_array |" in TABLE.read_text() and str(fmax["kaleido_array"]) in TABLE.read_text()


def test_the_core_runs_at_its_slowest_block(tmp_path):
    report = _report(tmp_path, kaleido_array=50.0, detector=180.0, scheduler=40.0, matcher=30.0, baseline_array=60.0)
    full = clocks(True, True, report)
    assert (full.kaleido_mhz, full.limited_by, full.dense_mhz) == (30.0, "matcher", 60.0)
    assert clocks(True, False, report).limited_by == "scheduler"  # pe-sh: no matcher
    plain = clocks(False, False, report)  # pe: array and detector only
    assert (plain.kaleido_mhz, plain.limited_by) == (50.0, "kaleido_array")
    assert time_speedup(1.2, full) == pytest.approx(1.2 * 30 / 60)


def test_a_design_missing_from_the_report_falls_back_to_the_table(tmp_path):
    report = _report(tmp_path, matcher=10.0)
    c = clocks(True, True, report)
    assert c.kaleido_mhz == 10.0 and c.limited_by == "matcher"
    assert str(report) in c.source and "docs/SYNTH_TABLE.md" in c.source
    assert clocks(True, True, tmp_path / "none.json").source == "docs/SYNTH_TABLE.md"


def test_perf_reports_cycle_and_time_speedup(tmp_path, capsys):
    report = _report(tmp_path, kaleido_array=50.0, detector=180.0, scheduler=40.0, matcher=30.0, baseline_array=60.0)
    j = tmp_path / "r.json"
    assert main(["perf", "--grid", "2,4,4", "--json", str(j), "--synth-report", str(report)]) == 0
    data = json.loads(j.read_text())
    assert data["time"]["limited_by"] == "matcher" and data["time"]["kaleido_mhz"] == 30.0
    assert data["time"]["speedup"] == pytest.approx(data["speedup"] * 30 / 60)
    out = capsys.readouterr().out
    assert "time: speedup" in out and "limited by matcher" in out
