"""The cocotb testbenches beyond reference-vs-RTL (tb/test_blocks.py):
exhaustive PE arithmetic, coverage, whole heads with cycle counts, reset,
throughput, the dispatched array, under Icarus and Verilator: one pytest
function parametrised over the simulator and the design (one build
directory per simulator, design and configuration, locked while in use,
so ``pytest -n 2`` is safe)."""

from typing import Any

import pytest

from kaleido import KaleidoConfig
from kaleido.tb.runner import SIMULATORS, run_cocotb

pytestmark = pytest.mark.rtl

#: (design, config overrides, cocotb module, extra environment, tests in the module)
BENCHES: list[tuple[str, Any, str, dict, int]] = [
    ("kaleido_pe", 3, "kaleido.tb.cocotb_pe", {}, 3),
    ("kaleido_pe", 4, "kaleido.tb.cocotb_pe", {}, 3),
    ("kaleido_array", 3, "kaleido.tb.cocotb_array", {}, 5),  # 4 + the soak, skipped here
    ("kaleido_array", 4, "kaleido.tb.cocotb_array", {}, 5),
    ("dispatched_array", {"batch": 4, "split": (5, 3, 4)}, "kaleido.tb.cocotb_dispatched", {}, 1),
]


def _config(overrides):
    return (
        KaleidoConfig.one_array(**overrides)
        if isinstance(overrides, dict)
        else KaleidoConfig.one_array(accumulators=overrides)
    )


@pytest.mark.parametrize(
    "design, overrides, module, env, n_tests", BENCHES, ids=[f"{b[0]}-{_config(b[1]).tag}" for b in BENCHES]
)
@pytest.mark.parametrize("sim", SIMULATORS)
def test_cocotb(sim, design, overrides, module, env, n_tests, seed):
    cfg = _config(overrides)
    result = run_cocotb(sim, design, cfg, module, extra_env={"KALEIDO_SEED": str(seed), **env})
    assert result["tests"] == n_tests and result["failed"] == 0, result


@pytest.mark.soak
@pytest.mark.parametrize("sim", ["verilator"])
def test_array_soak(sim, seed):
    """``make soak``: 10^6 cycles (KALEIDO_SOAK_CYCLES) of random passes with
    stalls through the array, zero mismatches."""
    import os

    cycles = os.environ.get("KALEIDO_SOAK_CYCLES", "1000000")
    result = run_cocotb(
        sim,
        "kaleido_array",
        KaleidoConfig.one_array(),
        "kaleido.tb.cocotb_array",
        testcase="soak",
        extra_env={"KALEIDO_SEED": str(seed), "KALEIDO_SOAK_CYCLES": cycles},
    )
    assert result["tests"] == 1 and result["failed"] == 0, result
