"""The Kaleido array's cocotb regression under Icarus and Verilator."""

import pytest

from kaleido import KaleidoConfig

from .runner import SIMULATORS, run_cocotb

pytestmark = pytest.mark.rtl


@pytest.mark.parametrize("accumulators", [3, 4])
@pytest.mark.parametrize("sim", SIMULATORS)
def test_kaleido_array(sim, accumulators, seed):
    cfg = KaleidoConfig(accumulators=accumulators)
    result = run_cocotb(sim, "kaleido_array", cfg, "kaleido.tb.cocotb_array",
                        extra_env={"KALEIDO_SEED": str(seed)})
    assert result["tests"] == 5 and result["failed"] == 0, result
