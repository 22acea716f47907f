"""The dispatcher blocks' cocotb testbench under Icarus and Verilator."""

import pytest

from kaleido import KaleidoConfig

from .runner import SIMULATORS, run_cocotb

pytestmark = pytest.mark.rtl


@pytest.mark.parametrize("block", ["detector", "matcher", "scheduler"])
@pytest.mark.parametrize("sim", SIMULATORS)
def test_dispatch_block(sim, block, seed):
    cfg = KaleidoConfig()
    result = run_cocotb(sim, block, cfg, "kaleido.tb.cocotb_stream",
                        extra_env={"KALEIDO_SEED": str(seed), "KALEIDO_BLOCK": block})
    assert result["tests"] == 2 and result["failed"] == 0, result
