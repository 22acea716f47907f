"""kaleido.bench.efficiency_report: the results table and the README's
generated block, from hand-made rows (the model runs in `make report`),
and a calibrated row on a small head."""

from __future__ import annotations

import pytest

from kaleido.bench.efficiency_report import (
    BEGIN,
    END,
    calibrated_row,
    design_row,
    headroom_lines,
    table_lines,
    update_readme,
)
from kaleido.calibrate import calibrate
from kaleido.config import CoreConfig, KaleidoConfig
from kaleido.efficiency import SNAPSHOT
from kaleido.golden.workloads import synthetic_video
from kaleido.model import core_cycles


def _row(design: str, error: str | None = None) -> dict:
    eff: dict = {"error": error} if error else {
        "clock": {"kaleido": {"mhz": 80.0, "limited_by": "kaleido_array"},
                  "dense": {"mhz": 100.0, "limited_by": "softmax"}},
        "time_speedup": 1.2, "time_speedup_own_blocks": 0.9,
        "area_ratio": {"core": 2.0, "chip": 1.25},
        "throughput_per_area": {"core": 0.6, "chip": 0.96},
        "energy_ratio": 0.95,
        "core_sram": {"sized": {"ratio": 1.5}},
        "source": {"report": "build/synth/report.json", "why": "measured on abc"},
    }  # fmt: skip
    th = [[5, 4], [6, 4], [6, 4]] if design.endswith("calibrated") else [[7, 4], [7, 4], [6, 4]]
    row = {"design": design, "thresholds": th, "cycles": 100, "dense_cycles": 150, "psnr": 45.25, "efficiency": eff}
    return {**row, "energy_ratio_sized": 1.05}


def test_table_line_per_design():
    rows = [_row("default"), _row("paper", "no core 'paper' in the report"), _row("default, calibrated")]
    lines = table_lines(rows)
    assert lines[2] == (
        "| default | 1.500x | 80.0 (100.0) | **1.200x** (0.900x) | 2.00x (1.50x) / 1.250x | **0.60x** / 0.96x "
        "| 0.950x / 1.050x | 45.2 dB |"
    )
    assert lines[3] == "| paper | 1.500x | - | - | - | - | - / 1.050x | 45.2 dB |"
    assert lines[4].startswith("| default, calibrated t(5,4) x(6,4) y(6,4) | 1.500x |")
    assert "Synthesis figures: build/synth/report.json (measured on abc)." in lines
    assert "Not computed: no core 'paper' in the report" in lines


def test_headroom_line_per_design():
    energy = {
        "measured": 1.01,
        "ceiling": {"hw": 1.2, "oracle": 1.25},
        "keep": {"hw": 0.772, "oracle": 0.733},
        "keep_max": 0.683,
    }
    area = {"core": {"measured": 0.8, "time_needed": 2.23, "logic_budget_mm2": 0.05, "logic_mm2": 0.125,
                     "dense_logic_mm2": 0.04},
            "chip": {"measured": 0.42, "time_needed": 5.35}}  # fmt: skip
    rows = [{**_row("default"), "headroom": {"energy": energy, "area": area}},
            {**_row("paper", "no report"), "headroom": {"energy": energy}}]  # fmt: skip
    lines = headroom_lines(rows)
    assert lines[2] == (
        "| default | 1.010x; 1.200x (1.250x) | 77.2% (73.3%); 68.3% | 0.80x; 2.23x | 0.40 (1.25x dense logic) "
        "| 0.42x; 5.35x |"
    )
    assert lines[3] == "| paper | 1.010x; 1.200x (1.250x) | 77.2% (73.3%); 68.3% | - | - | - |"


def test_readme_block_is_replaced_and_the_rest_kept(tmp_path):
    path = tmp_path / "README.md"
    path.write_text(f"intro\n{BEGIN}\nold table\n{END}\nrest\n")
    update_readme(path, ["| new |"])
    assert path.read_text() == f"intro\n{BEGIN}\n| new |\n{END}\nrest\n"


def test_readme_without_markers_is_named(tmp_path):
    path = tmp_path / "README.md"
    path.write_text("no markers\n")
    with pytest.raises(ValueError, match="README.md"):
        update_readme(path, ["x"])
    assert path.read_text() == "no markers\n"


@pytest.mark.parametrize("design", ["default", "paper"])
def test_calibrated_row_runs_the_build_on_thresholds_chosen_on_the_other_motion(design):
    """The calibrated row: thresholds from the calibration head (never the
    measured one), the exact core cycles with them, and the named design's
    build (its clock and area) in the efficiency figures."""
    seed = 2  # a head whose two motions choose different thresholds (checked below)
    head = synthetic_video("hunyuan", (2, 8, 8), "slow", seed)
    other = synthetic_video("hunyuan", (2, 8, 8), "fast", seed)
    config = KaleidoConfig.preset("hunyuan", design)
    chosen = calibrate(other.q, other.k, other.v, other.grid, other.split, config, scales=other.scales)["thresholds"]
    on_head = calibrate(head.q, head.k, head.v, head.grid, head.split, config, scales=head.scales)["thresholds"]
    assert chosen != on_head, f"seed {seed}: both heads choose {chosen}; the test cannot tell them apart"
    row = calibrated_row(design, head, other, SNAPSHOT)
    assert row["design"] == f"{design}, calibrated" and row["thresholds"] == chosen
    run = config.replace(group_thresholds=chosen)
    assert row["cycles"] == core_cycles(head.q, head.k, head.v, head.grid, run, CoreConfig(), scales=head.scales)
    built = design_row(design, head, SNAPSHOT)
    eff, ref = row["efficiency"], built["efficiency"]
    assert "error" not in eff, eff
    assert eff["area_ratio"] == ref["area_ratio"] and eff["clock"] == ref["clock"]
    assert eff["time_speedup"] == pytest.approx(
        row["dense_cycles"] / row["cycles"] * eff["clock"]["kaleido"]["mhz"] / eff["clock"]["dense"]["mhz"]
    )
