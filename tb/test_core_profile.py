"""The profile's attribution of perf samples to module instances
(kaleido.tb.core_profile.module_shares)."""

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
