"""The profile's attribution of perf samples to module instances
(kaleido.tb.core_profile.module_shares)."""

import json

import pytest

from kaleido.tb.core_profile import module_shares

VERILOG = """\
module top(clk);
  input clk;
endmodule
module \\top.core.engine.accumulator (clk);
  reg a;
endmodule
module top.core.softmax(clk);
  reg b;
endmodule
"""

REPORT = """\
# Overhead  Symbol
    40.00%  [.] Vtop___024root___act_comb__TOP__1__PROF__top__l5
    10.50%  [.] Vtop___024root___act_comb__TOP__2__PROF__top__l4
     9.00%  [.] Vtop___024root___nba_comb__TOP__3__PROF__top__l8
     2.00%  [.] Vtop___024root___act_comb__TOP__4__PROF__top__l2
     5.00%  [.] Vtop___024root___eval_nba
"""


def test_samples_go_to_the_module_holding_their_line():
    shares = module_shares(REPORT, VERILOG)
    assert shares == {
        "top.core.engine.accumulator": 50.5,  # lines 4 (its header) and 5
        "top.core.softmax": 9.0,
        "Vtop___024root___eval_nba": 5.0,  # no line: kept under its name
        "top": 2.0,
    }
    assert list(shares)[0] == "top.core.engine.accumulator"  # largest first


def test_the_plain_binarys_compiler(monkeypatch, tmp_path):
    """``KALEIDO_CXX`` names the plain binary's compiler; without it the
    first clang on ``PATH``, else Verilator's default (``None``)."""
    from kaleido.tb.core_benches import plain_cxx

    monkeypatch.setenv("KALEIDO_CXX", "g++")
    assert plain_cxx() == "g++"
    monkeypatch.delenv("KALEIDO_CXX")
    monkeypatch.setenv("PATH", str(tmp_path))  # no compiler at all
    assert plain_cxx() is None
    clang = tmp_path / "clang++-15"
    clang.write_text("#!/bin/sh\n")
    clang.chmod(0o755)
    assert plain_cxx() == "clang++-15"


@pytest.mark.slow
@pytest.mark.rtl
@pytest.mark.parametrize("cxx", [None, "g++"], ids=["clang-if-found", "gcc"])
def test_plain_top_on_verilator_runs_a_head_bit_exact_in_the_models_cycles(tmp_path, monkeypatch, cxx):
    """The profiler's own Verilog top level (no cocotb) starts one head,
    waits for it and reads O back: O bit-exact against the golden model and
    the cycles the model's (Verilator build, about 2 minutes), with the
    default compiler (clang where found, as ``make sim``'s) and with GCC
    (a machine without clang)."""
    from kaleido.config import CoreConfig, KaleidoConfig
    from kaleido.golden.workloads import synthetic_video
    from kaleido.model import core_cycles
    from kaleido.tb.core_profile import main

    if cxx:
        monkeypatch.setenv("KALEIDO_CXX", cxx)
    assert main(["--no-perf", "--grid", "2,2,2", "--out", str(tmp_path)]) == 0
    row = json.loads((tmp_path / "core_profile.json").read_text())
    if cxx:
        assert row["cxx"] == cxx
    w = synthetic_video("hunyuan", (2, 2, 2), "slow", 1)
    assert row["bit_exact"] is True
    assert row["cycles"] == core_cycles(w.q, w.k, w.v, (2, 2, 2), KaleidoConfig.one_array(), CoreConfig())


def test_the_speed_bench_rows_carry_the_design_and_the_cpu_time_of_each_run():
    """``make bench``'s speed bench (``core_sim_bench.runs_csv``): one line a
    run, with its design and its CPU seconds where measured (empty for a run
    that built the binary), in the rows' order."""
    import csv
    import io

    from kaleido.tb.core_sim_bench import runs_csv

    row = {"harness": "binary", "simulator": "verilator", "tokens": 8, "cycles": 100, "model_cycles": 100}
    rows = [
        {**row, "design": "default", "bit_exact": True, "run_seconds": [0.5, 0.25]}
        | {"runs_cycles_per_s": [200, 400], "run_cpu_seconds": [None, 0.2]},
        {**row, "design": "one_array", "bit_exact": True, "run_seconds": [0.1]}
        | {"runs_cycles_per_s": [1000], "run_cpu_seconds": [0.05]},
    ]
    got = [
        (r["design"], r["run"], r["run_seconds"], r["run_cpu_seconds"])
        for r in csv.DictReader(io.StringIO(runs_csv(rows)))
    ]
    assert got == [("default", "1", "0.5", ""), ("default", "2", "0.25", "0.2"), ("one_array", "1", "0.1", "0.05")]


@pytest.mark.parametrize(
    "designs, match",
    [("dense", r"--designs takes names of default, one_array, paper, not 'dense'"), (",", r"not ','")],
)
def test_the_speed_bench_rejects_an_unknown_design(designs, match, tmp_path):
    """The speed bench stops naming a bad ``--designs`` before it builds
    anything."""
    from kaleido.tb.core_sim_bench import DESIGNS_MEASURED
    from kaleido.tb.core_sim_bench import main as bench

    assert DESIGNS_MEASURED[0] == "default"  # the goal's row is make sim's design
    with pytest.raises(SystemExit, match=match):
        bench(["--designs", designs, "--out", str(tmp_path / "core_sim.json")])
    assert not (tmp_path / "core_sim.json").exists()
