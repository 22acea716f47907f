"""Every cocotb testbench under Icarus and Verilator: one pytest function,
parametrised over the simulator and the design (one build directory per
simulator, design and configuration, so ``pytest -n 2`` is safe)."""

import pytest

from kaleido import KaleidoConfig

from .runner import SIMULATORS, run_cocotb

pytestmark = pytest.mark.rtl

#: (design, accumulators, cocotb module, extra environment, tests in the module)
BENCHES = [
    ("kaleido_pe", 3, "kaleido.tb.cocotb_pe", {}, 4),
    ("kaleido_pe", 4, "kaleido.tb.cocotb_pe", {}, 4),
    ("kaleido_array", 3, "kaleido.tb.cocotb_array", {}, 5),
    ("kaleido_array", 4, "kaleido.tb.cocotb_array", {}, 5),
    ("detector", 3, "kaleido.tb.cocotb_stream", {"KALEIDO_BLOCK": "detector"}, 2),
    ("matcher", 3, "kaleido.tb.cocotb_stream", {"KALEIDO_BLOCK": "matcher"}, 2),
    ("scheduler", 3, "kaleido.tb.cocotb_stream", {"KALEIDO_BLOCK": "scheduler"}, 2),
]


@pytest.mark.parametrize("design, accumulators, module, env, n_tests", BENCHES,
                         ids=[f"{b[0]}-acc{b[1]}" for b in BENCHES])
@pytest.mark.parametrize("sim", SIMULATORS)
def test_cocotb(sim, design, accumulators, module, env, n_tests, seed):
    cfg = KaleidoConfig(accumulators=accumulators)
    result = run_cocotb(sim, design, cfg, module, extra_env={"KALEIDO_SEED": str(seed), **env})
    assert result["tests"] == n_tests and result["failed"] == 0, result
