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


@pytest.mark.slow
@pytest.mark.rtl
def test_plain_top_on_verilator_runs_a_head_bit_exact_in_the_models_cycles(tmp_path):
    """The profiler's own Verilog top level (no cocotb) starts one head,
    waits for it and reads O back: O bit-exact against the golden model and
    the cycles the model's (Verilator build, about 2 minutes)."""
    from kaleido.config import CoreConfig, KaleidoConfig
    from kaleido.golden.workloads import synthetic_video
    from kaleido.model import core_cycles
    from kaleido.tb.core_profile import main

    assert main(["--no-perf", "--grid", "2,2,2", "--out", str(tmp_path)]) == 0
    row = json.loads((tmp_path / "core_profile.json").read_text())
    w = synthetic_video("hunyuan", (2, 2, 2), "slow", 1)
    assert row["bit_exact"] is True
    assert row["cycles"] == core_cycles(w.q, w.k, w.v, (2, 2, 2), KaleidoConfig(), CoreConfig())
