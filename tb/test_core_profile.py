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
