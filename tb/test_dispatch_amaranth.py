"""Fast inner loop: detector, matcher and scheduler in the Amaranth
simulator, bit-exact against the golden models, under stall patterns."""

import numpy as np
import pytest

from kaleido import KaleidoConfig
from kaleido.hdl.detector import ReuseDetector
from kaleido.hdl.matcher import Matcher
from kaleido.hdl.scheduler import Scheduler
from kaleido.tb.amaranth_sim import simulate_stream
from kaleido.tb.dispatch_cases import detector_case, matcher_case, scheduler_case

STALLS = [("none", "none"), ("random", "random"), ("every4", "random")]


@pytest.mark.parametrize("in_stall, out_stall", STALLS)
@pytest.mark.parametrize("F, P", [(5, 3), (5, 4), (3, 1), (9, 9)])
def test_detector(F, P, in_stall, out_stall, seed):
    cfg = KaleidoConfig(F=F, P=P)
    ins, exp = detector_case(cfg, np.random.default_rng(seed), 60)
    out, _ = simulate_stream(ReuseDetector(cfg), ins, in_stall=in_stall, out_stall=out_stall, seed=seed)
    assert out == exp


def test_detector_workload(seed):
    cfg = KaleidoConfig()
    ins, exp = detector_case(cfg, np.random.default_rng(seed), 40, source="workload")
    assert simulate_stream(ReuseDetector(cfg), ins)[0] == exp


@pytest.mark.parametrize("in_stall, out_stall", STALLS)
@pytest.mark.parametrize("lookahead", [1, 4, 16])
def test_matcher(lookahead, in_stall, out_stall, seed):
    cfg = KaleidoConfig(lookahead=lookahead)
    ins, exp = matcher_case(cfg, np.random.default_rng(seed), 40)
    out, cycles = simulate_stream(Matcher(cfg), ins, in_stall=in_stall, out_stall=out_stall, seed=seed)
    assert out == exp
    if in_stall == out_stall == "none":
        assert cycles - 300 == len(exp) + 1  # one slot per cycle after 1 cycle, jobs back to back


def test_matcher_workload(seed):
    cfg = KaleidoConfig()
    ins, exp = matcher_case(cfg, np.random.default_rng(seed), 80, source="workload")
    assert simulate_stream(Matcher(cfg), ins, in_stall="random", out_stall="random", seed=seed)[0] == exp


@pytest.mark.parametrize("in_stall, out_stall", STALLS[:2])
def test_scheduler(in_stall, out_stall, seed):
    cfg = KaleidoConfig()
    ins, exp = scheduler_case(cfg, np.random.default_rng(seed), 64 + 37)
    out, _ = simulate_stream(Scheduler(cfg), ins, in_stall=in_stall, out_stall=out_stall, seed=seed)
    assert out == exp


@pytest.mark.parametrize("n", [1, 3, 5, 64, 64 + 64 + 9])
def test_scheduler_cycles(n, seed):
    """Outputs exact, and the cycle count is schedule_cycles() per window."""
    from kaleido.config import LFSR_SEED
    from kaleido.golden.scheduler import schedule, schedule_cycles
    from kaleido.hdl.scheduler import scheduler_in_layout
    from kaleido.tb.driver import Unpacker

    cfg = KaleidoConfig()
    ins, exp = scheduler_case(cfg, np.random.default_rng(seed), n)
    out, cycles = simulate_stream(Scheduler(cfg), ins)
    assert out == exp
    strings = [Unpacker(scheduler_in_layout(cfg.batch))(w)[("string",)] for w in ins]
    expected, state = 0, LFSR_SEED
    for w0 in range(0, n, 64):
        window = strings[w0 : w0 + 64]
        sch = schedule(window, seed=state)
        state = sch.state
        expected += schedule_cycles(sch, len(window))
    assert cycles - 300 == expected
