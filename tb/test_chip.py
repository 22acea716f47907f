"""The chip area estimate at the paper's denominator (issue 15, item 3;
synth/chip.py, docs/SYNTH.md): its arithmetic, its inputs and `make
synth`'s report field."""

import inspect
import json
import tomllib

import pytest

from kaleido.synth import flow
from kaleido.synth.chip import DATA, NEEDED, chip_estimate, chip_table, main, table_transistors


def test_estimate_from_the_committed_table():
    """From docs/SYNTH_TABLE.md: both chips' totals add up, the buffers are
    96 MB at the bit-cell model, the calibrated dense arrays are the area
    the paper's table implies, and the overheads are the ratios."""
    d = table_transistors()
    est = chip_estimate(d)
    data = tomllib.loads(DATA.read_text())
    for kind in ("absolute", "calibrated"):
        k, dn, ov = est[kind]["kaleido_mm2"], est[kind]["dense_mm2"], est[kind]["overhead"]
        assert k["total"] == pytest.approx(k["arrays"] + k["dispatchers"] + k["buffers"])
        assert dn["total"] == pytest.approx(dn["arrays"] + dn["buffers"]) and k["buffers"] == dn["buffers"]
        assert ov["total"] == pytest.approx((k["total"] - dn["total"]) / dn["total"])
        assert ov["total"] == pytest.approx(ov["arrays"] + ov["dispatchers"])
        # Kaleido arrays / dense arrays = the synthesized arrays' transistor ratio
        assert k["arrays"] / dn["arrays"] == pytest.approx(
            d["kaleido_array"]["transistors"] / d["baseline_array"]["transistors"]
        )
    bits = 96 * 2**20 * 8
    assert est["absolute"]["kaleido_mm2"]["buffers"] == pytest.approx(bits * 0.07e-6 / 0.75)
    p = data["paper"]
    assert est["calibrated"]["dense_mm2"]["arrays"] == pytest.approx(25.1 - 0.066 * 94.8)
    assert est["calibrated"]["kaleido_mm2"]["buffers"] == p["buffers_mm2"] == 68.4
    assert est["paper"]["overhead"]["total"] == pytest.approx(0.079)
    per_disp = 2 * d["detector"]["transistors"] + 2 * d["scheduler"]["transistors"] + 8 * d["matcher"]["transistors"]
    assert est["transistors"]["dispatchers"] == 2048 * per_disp + 16384 * d["pv_dispatcher"]["transistors"]


def test_chip_table_rows():
    """SYNTH_TABLE.md's chip table: one row per estimate, each its areas and
    overheads (a row whose total is not arrays + dispatchers + buffers, or
    whose overhead is another kind's, fails); no table for an error."""
    est = chip_estimate(table_transistors())
    rows = chip_table(est)
    assert len(rows) == 5 and rows[0].startswith("| chip at the paper's denominator")
    for row, kind in zip(rows[2:], ("paper", "calibrated", "absolute"), strict=True):
        cells = [c.strip() for c in row.strip("|").split("|")]
        k, o = est[kind]["kaleido_mm2"], est[kind]["overhead"]
        assert float(cells[4]) == pytest.approx(k["arrays"] + k["dispatchers"] + k["buffers"], abs=0.051)
        assert cells[-1] == f"{o['total']:.1%}" and cells[-3] == f"{o['arrays']:.1%}"
    assert rows[2].split("|")[-2].strip() == "7.9%"
    assert chip_table({"error": "designs without a transistor count: ['scheduler']"}) == []


def test_missing_design_is_named():
    d = table_transistors()
    del d["scheduler"]
    assert chip_estimate(d) == {"error": "designs without a transistor count: ['scheduler']"}
    assert set(NEEDED) <= set(table_transistors())


def test_bad_data_names_the_value(tmp_path):
    bad = tmp_path / "c.toml"
    bad.write_text(DATA.read_text().replace("bitcell_um2 = 0.07", "bitcell_um2 = -1"))
    with pytest.raises(ValueError, match=r"sram.bitcell_um2 must be a positive number, not -1"):
        chip_estimate(table_transistors(), bad)


def test_flow_reports_chip_and_cli_adds_it(tmp_path, capsys):
    """`make synth`'s report gets `chip` (run_flow calls the estimate), and
    `python -m kaleido.synth.chip` adds it to an existing report (exit 1
    when the report lacks the designs)."""
    assert 'report["chip"] = chip_estimate(report["designs"])' in inspect.getsource(flow.run_flow)
    report = {"designs": table_transistors()}
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report))
    assert main(["--report", str(path)]) == 0
    chip = json.loads(path.read_text())["chip"]
    assert chip == json.loads(json.dumps(chip_estimate(report["designs"])))
    assert "overhead" in capsys.readouterr().out
    path.write_text(json.dumps({"designs": {}}))
    assert main(["--report", str(path)]) == 1
