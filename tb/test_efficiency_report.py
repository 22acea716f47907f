"""kaleido.bench.efficiency_report: the results table and the README's
generated block, from hand-made rows (the model runs in `make report`)."""

from __future__ import annotations

import pytest

from kaleido.bench.efficiency_report import BEGIN, END, table_lines, update_readme


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
    row = {"design": design, "cycles": 100, "dense_cycles": 150, "psnr": 45.25, "efficiency": eff}
    return {**row, "energy_ratio_sized": 1.05}


def test_table_line_per_design():
    lines = table_lines([_row("default"), _row("paper", "no core 'paper' in the report")])
    assert lines[2] == (
        "| default | 1.500x | 80.0 (100.0) | **1.200x** (0.900x) | 2.00x (1.50x) / 1.250x | **0.60x** / 0.96x "
        "| 0.950x / 1.050x | 45.2 dB |"
    )
    assert lines[3] == "| paper | 1.500x | - | - | - | - | - / 1.050x | 45.2 dB |"
    assert "Synthesis figures: build/synth/report.json (measured on abc)." in lines
    assert "Not computed: no core 'paper' in the report" in lines


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
