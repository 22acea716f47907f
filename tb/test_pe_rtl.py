"""The Kaleido PE's cocotb tests under Icarus and Verilator."""

import pytest

from kaleido import KaleidoConfig

from .runner import SIMULATORS, run_cocotb

pytestmark = pytest.mark.rtl


@pytest.mark.parametrize("accumulators", [3, 4])
@pytest.mark.parametrize("sim", SIMULATORS)
def test_kaleido_pe(sim, accumulators, seed):
    cfg = KaleidoConfig(accumulators=accumulators)
    result = run_cocotb(sim, "kaleido_pe", cfg, "kaleido.tb.cocotb_pe",
                        extra_env={"KALEIDO_SEED": str(seed)})
    assert result["tests"] == 4 and result["failed"] == 0, result
