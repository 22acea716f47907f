"""kaleido.bench.heldout_efficiency: the held-out heads' summary from
hand-made rows (the model runs in `make bench`), and its bad input."""

from __future__ import annotations

import math

import pytest

from kaleido.bench.heldout_efficiency import COLUMNS, flat_row, head_rows, main, summary, table_lines


def _row(head: str, design: str, time: float, psnr: float, error: bool = False) -> dict:
    eff = {"error": "no report"} if error else {
        "time_speedup": time, "throughput_per_area": {"core": time / 2, "chip": time / 4},
    }  # fmt: skip
    room: dict = {"energy": {"measured": 1.02, "ceiling": {"hw": 1.2}}}
    if not error:
        room["area"] = {"core": {"time_needed": 2.4}}
    return {
        "head": head, "design": design, "thresholds": [[7, 4], [7, 4], [6, 4]], "psnr": psnr,
        "cycles": 100, "dense_cycles": 150, "efficiency": eff, "headroom": room,
    }  # fmt: skip


def test_flat_row_has_every_column():
    f = flat_row(_row("h0", "default", 1.5, 45.0))
    assert set(f) == set(COLUMNS)
    assert f["thresholds"] == "t(7,4) x(7,4) y(6,4)"
    assert (f["cycle_speedup"], f["per_mm2_core"], f["per_mm2_chip"], f["time_needed_core"]) == (1.5, 0.75, 0.375, 2.4)
    g = flat_row(_row("h0", "paper", 1.5, 45.0, error=True))
    assert g["time_speedup"] == g["per_mm2_core"] == "" and g["energy_savings"] == 1.02


def test_summary_geomean_min_and_floor():
    flat = [flat_row(_row("h0", "default", 1.2, 45.0)), flat_row(_row("h1", "default", 1.8, 39.5)),
            flat_row(_row("h0", "paper", 1.1, 33.0, error=True))]  # fmt: skip
    s = summary(flat)
    d = s["default"]
    assert d["time_speedup"]["geomean"] == pytest.approx(math.sqrt(1.2 * 1.8))
    assert d["time_speedup"]["min"] == 1.2
    assert (d["heads"], d["psnr_min"], d["below_40_db"]) == (2, 39.5, 1)
    assert s["paper"]["time_speedup"] is None and s["paper"]["below_40_db"] == 1
    lines = table_lines(s)
    assert lines[2].startswith(f"| default | 2 | {math.sqrt(1.2 * 1.8):.3f}x (1.200x) |")
    assert lines[2].endswith("| 39.5 dB (1) |")
    assert lines[3].startswith("| paper | 1 | - | - | - |")


def test_bad_input_is_named(capsys):
    with pytest.raises(ValueError, match="held-out head index must be in 0..7, not 8"):
        head_rows(8, ("default",))
    for argv, message in (
        (["--designs", "default,fast"], "unknown design(s) ['fast']"),
        (["--heads", "0,x"], "comma-separated head indices, not '0,x'"),
        (["--heads", "9"], "not 9"),
    ):
        with pytest.raises(SystemExit):
            main(argv)
        assert message in capsys.readouterr().err
