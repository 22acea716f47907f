"""kaleido.bench.sensitivity_report: which conclusions flip within 2x,
from hand-made rows."""

from __future__ import annotations

import pytest

from kaleido.bench.sensitivity_report import flips, lines, run


def _row(ratio: str, assumption: str, factor: float, value: float, baseline: float) -> dict:
    return {"ratio": ratio, "assumption": assumption, "factor": factor, "value": value, "baseline": baseline}


ROWS = [
    _row("energy", "dram_byte", 0.5, 0.97, 0.98),
    _row("energy", "mul_4x8", 2.0, 1.02, 0.98),  # saving turns into a cost
    _row("core_area", "bitcell_um2", 0.5, 1.6, 1.4),  # 1.5 / 1.6 < 1: per mm^2 flips to a loss
    _row("core_area", "bitcell_um2", 2.0, 1.3, 1.4),
]


def test_flips_name_the_rows_whose_conclusion_changes():
    assert flips(ROWS, time_speedup=1.5) == [ROWS[1], ROWS[2]]
    assert flips(ROWS, time_speedup=2.0) == [ROWS[1]]  # 2.0 / 1.6 still above 1


def test_lines_say_what_flips():
    text = "\n".join(lines(ROWS, time_speedup=1.5))
    assert "| energy | 0.980 | 0.970 to 1.020 | flips with mul_4x8 x2 |" in text
    assert "| core_area | 1.400 | 1.300 to 1.600 | flips with bitcell_um2 x0.5 |" in text
    assert "holds under every" in "\n".join(lines(ROWS[:1] + ROWS[3:], time_speedup=1.5))


def test_run_refuses_a_design_without_efficiency(tmp_path):
    rows = [{"design": "default", "efficiency": {"error": "no synthesis report"}, "events": {}}]
    with pytest.raises(ValueError, match="no synthesis report"):
        run(tmp_path, rows)
