"""kaleido.efficiency: the yardstick's figures from a hand-made synthesis
report, each recomputed here from the spec's definitions (sec. 13) and the
paper's table 2, not from the functions under test."""

from __future__ import annotations

import json
import subprocess

import pytest

from kaleido.efficiency import (
    CORE_BLOCKS,
    SynthFigures,
    chip_area_ratio,
    core_chip_area_ratio,
    core_clock,
    design_efficiency,
    efficiency,
    load_synth,
    summary_line,
)

#: block Fmax (MHz) and transistors of a made-up report
FMAX = {
    "kaleido_array": 80.0,
    "kaleido_array_set": 90.0,
    "dispatched_array": 81.0,
    "pv_tile": 86.0,
    "pv_tile_pairs": 87.0,
    "dense_pv_tile": 120.0,
    "o_accumulator": 96.0,
    "detector": 150.0,
    "scheduler": 85.0,
    "matcher": 84.0,
    "pv_dispatcher": 200.0,
    "tile_softmax": 82.0,
    "output_scaler": 95.0,
    "baseline_array": 130.0,
}
TRANSISTORS = {
    "baseline_array": 1000,
    "kaleido_array": 2000,
    "kaleido_array_set": 2100,
    "detector": 100,
    "scheduler": 200,
    "matcher": 50,
    "pv_dispatcher": 10,
}
CORES = {
    "dense": {"transistors": 9000, "area_mm2": {"logic": 0.1, "buffers": 0.1, "total": 0.2}},
    "one_array": {"transistors": 10000, "area_mm2": {"logic": 0.2, "buffers": 0.1, "total": 0.3}},
    "default": {"transistors": 10400, "area_mm2": {"logic": 0.25, "buffers": 0.1, "total": 0.35}},
    "paper": {"transistors": 9800, "area_mm2": {"logic": 0.19, "buffers": 0.1, "total": 0.29}},
}


def _report(provenance=None) -> dict:
    names = set(FMAX) | set(TRANSISTORS)
    designs = {n: {"fmax_mhz": FMAX.get(n), "transistors": TRANSISTORS.get(n)} for n in names}
    out = {"designs": designs, "core": CORES}
    if provenance is not None:
        out["provenance"] = provenance
    return out


def _figures() -> SynthFigures:
    return SynthFigures(_report()["designs"], CORES, {"report": "made-up", "stale": False, "why": "test"})


def _paper_chip_ratio(array_transistors: float) -> float:
    """Table 2 of the paper (kaleido/data/chip_16nm.toml): the dense arrays
    are the Kaleido arrays (25.1 mm^2) less 6.6 % of the 94.8 mm^2 chip;
    our transistors scale that area; 16,384 arrays, a dispatcher (2
    detectors, 2 schedulers, 8 matchers) per 8 arrays, a P V dispatcher per
    array; 68.4 mm^2 of buffers in both chips."""
    dense_arrays = 25.1 - 0.066 * 94.8
    per_transistor = dense_arrays / (16384 * 1000)
    dispatch = (2048 * (2 * 100 + 2 * 200 + 8 * 50) + 16384 * 10) * per_transistor
    kaleido = 16384 * array_transistors * per_transistor + dispatch + 68.4
    return kaleido / (dense_arrays + 68.4)


def test_clock_is_the_slowest_block():
    f = _figures()
    assert core_clock("one_array", f)["limited_by"] == "kaleido_array"
    assert core_clock("one_array", f)["mhz"] == 80.0
    assert core_clock("default", f)["limited_by"] == "tile_softmax"  # 82 MHz below the array set's 90
    assert core_clock("dense", f) == {
        "mhz": 82.0,
        "limited_by": "tile_softmax",
        "blocks": {
            "baseline_array": 130.0,
            "dense_pv_tile": 120.0,
            "tile_softmax": 82.0,
            "output_scaler": 95.0,
            "o_accumulator": 96.0,
        },
    }


def test_every_core_has_the_shared_blocks():
    for design, blocks in CORE_BLOCKS.items():
        assert {"tile_softmax", "output_scaler", "o_accumulator"} <= set(blocks), design


def test_a_dispatcher_is_measured_with_the_array_it_drives():
    """The pass dispatcher's operand select and the P V tile's reads drive
    their arrays through logic, so each Kaleido core's clock includes the
    block that holds both (a per-block Fmax alone would flatter it)."""
    assert "kaleido_array_set" in CORE_BLOCKS["default"] and "pv_tile_pairs" in CORE_BLOCKS["default"]
    for design in ("one_array", "paper"):
        assert {"dispatched_array", "pv_tile"} <= set(CORE_BLOCKS[design]), design
    assert "dense_pv_tile" in CORE_BLOCKS["dense"]
    f = _figures()
    slow = SynthFigures({**f.designs, "pv_tile": {"fmax_mhz": 40.0}}, f.core, f.source)
    assert core_clock("one_array", slow) == {**core_clock("one_array", slow), "mhz": 40.0, "limited_by": "pv_tile"}


@pytest.mark.parametrize(
    "design, array",
    [("one_array", 2000), ("default", 2000 + 10400 - 10000), ("paper", 2000 + 9800 - 10000)],
)
def test_chip_ratio_from_table_2(design, array):
    assert chip_area_ratio(design, _figures()) == pytest.approx(_paper_chip_ratio(array), rel=1e-12)


@pytest.mark.parametrize("transistors, array", [(10000, 2000), (10400, 2400), (9000, 1000)])
def test_chip_ratio_of_any_core(transistors, array):
    # a core of any shape: one_array's array plus what that core adds to the one_array core (10,000)
    assert core_chip_area_ratio(transistors, _figures()) == pytest.approx(_paper_chip_ratio(array), rel=1e-12)


def test_efficiency_figures():
    eff = efficiency("one_array", 1.5, 0.9, _figures())
    time = 1.5 * 80.0 / 82.0
    assert eff["time_speedup"] == pytest.approx(time)
    assert eff["area_ratio"]["core"] == pytest.approx(0.3 / 0.2)
    assert eff["throughput_per_area"]["core"] == pytest.approx(time / 1.5)
    assert eff["throughput_per_area"]["chip"] == pytest.approx(time / _paper_chip_ratio(2000))
    assert eff["energy_ratio"] == 0.9
    # own blocks: the Kaleido array (80) against the dense P V tile (120), not the softmax
    assert eff["time_speedup_own_blocks"] == pytest.approx(1.5 * 80.0 / 120.0)
    assert "1.463x" in summary_line(eff)  # 1.5 x 80 / 82
    assert eff["area_method"] == {"kaleido": "flattened", "dense": "flattened"}


def test_areas_by_different_methods_are_said():
    f = _figures()
    cores = {**f.core, "default": {**f.core["default"], "method": "hierarchical"}}
    line = summary_line(efficiency("default", 1.5, 0.9, SynthFigures(f.designs, cores, f.source)))
    assert "core areas hierarchical against flattened" in line


@pytest.mark.parametrize("design", ["dense", "custom", None])
def test_efficiency_refuses_other_designs(design):
    with pytest.raises(ValueError, match=repr(design)):
        efficiency(design, 1.2, 1.0, _figures())


def test_missing_block_is_named():
    f = _figures()
    designs = {k: v for k, v in f.designs.items() if k != "scheduler"}
    with pytest.raises(ValueError, match="scheduler"):
        core_clock("paper", SynthFigures(designs, f.core, f.source))


def test_missing_report_names_where_it_looked(tmp_path):
    missing = tmp_path / "none.json"
    with pytest.raises(FileNotFoundError, match="none.json"):
        load_synth(missing)
    assert str(missing) in design_efficiency("default", 1.2, 1.0, missing)["error"]


def _head() -> str:
    return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()


def _commit_before_an_rtl_change() -> str:
    last = subprocess.run(
        ["git", "log", "-1", "--format=%H", "--", "hdl"], capture_output=True, text=True, check=True
    ).stdout.strip()
    return last + "~1"


def test_report_provenance(tmp_path):
    path = tmp_path / "report.json"
    path.write_text(json.dumps(_report()))
    assert load_synth(path).source["stale"] is None  # no commit recorded: cannot tell
    path.write_text(json.dumps(_report({"git_commit": _commit_before_an_rtl_change(), "git_dirty": False})))
    src = load_synth(path).source
    assert src["stale"] is True and "re-run `make synth`" in src["why"]
    assert "STALE" in summary_line(efficiency("paper", 1.2, None, load_synth(path)))
    path.write_text(json.dumps(_report({"git_commit": "0" * 40, "git_dirty": False})))
    assert "not in this checkout" in load_synth(path).source["why"]


def test_report_at_head_is_current_unless_the_tree_changed(tmp_path):
    path = tmp_path / "report.json"
    path.write_text(json.dumps(_report({"git_commit": _head(), "git_dirty": False})))
    dirty = subprocess.run(["git", "diff", "--quiet", "HEAD", "--", "hdl", "kaleido/config.py"]).returncode
    assert load_synth(path).source["stale"] is bool(dirty)


def test_report_with_uncommitted_changes_is_unverified(tmp_path):
    """A report measured at HEAD with uncommitted changes (``git_dirty``)
    is not called current: ``stale`` None, the changes named, the summary
    line marked unverified (or ``stale`` True when the RTL changed since)."""
    path = tmp_path / "report.json"
    path.write_text(json.dumps(_report({"git_commit": _head(), "git_dirty": True})))
    src = load_synth(path).source
    dirty = subprocess.run(["git", "diff", "--quiet", "HEAD", "--", "hdl", "kaleido/config.py"]).returncode
    if dirty:
        assert src["stale"] is True
    else:
        assert src["stale"] is None and "with uncommitted changes" in src["why"], src
        assert "unverified: " in summary_line(efficiency("paper", 1.2, None, load_synth(path)))


def test_a_report_with_fmax_by_parts_says_so(tmp_path):
    """A `make synth --fmax-parts` report (an estimate) is named as such
    in the efficiency figures' source, and in the summary line."""
    path = tmp_path / "report.json"
    path.write_text(json.dumps(_report({"git_commit": _head(), "git_dirty": False}) | {"fmax_method": "parts"}))
    assert "Fmax by parts, an estimate" in load_synth(path).source["why"]
    assert "Fmax by parts" in summary_line(efficiency("paper", 1.2, None, load_synth(path)))
    path.write_text(json.dumps(_report({"git_commit": _head(), "git_dirty": False}) | {"fmax_method": "flattened"}))
    assert "parts" not in load_synth(path).source["why"]
