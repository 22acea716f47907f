"""Fast inner loop: detector, matcher and scheduler in the Amaranth
simulator, bit-exact against the golden models, under stall patterns."""

import numpy as np
import pytest

from kaleido import KaleidoConfig
from kaleido.hdl.matcher import Matcher
from kaleido.hdl.scheduler import Scheduler
from kaleido.tb.amaranth_sim import simulate_stream
from kaleido.tb.blocks import Case, ref, rtl
from kaleido.tb.dispatch_cases import matcher_case, scheduler_case

STALLS = [("none", "none"), ("random", "random"), ("every4", "random")]


def _cases(block, seed, config=(), **kw):
    return [Case(block, seed + k, i, o, config=config, **kw) for k, (i, o) in enumerate(STALLS)]


@pytest.mark.parametrize("F, P", [(5, 3), (5, 4), (3, 1), (9, 9)])
def test_detector(F, P, seed):
    cases = _cases("detector", seed, (("F", F), ("P", P)), size=60)
    assert rtl(cases, "amaranth") == [ref(c) for c in cases]


@pytest.mark.parametrize("lookahead", [1, 4, 16])
def test_matcher(lookahead, seed):
    cases = _cases("matcher", seed, (("lookahead", lookahead),), size=40)
    assert rtl(cases, "amaranth") == [ref(c) for c in cases]


def test_matcher_one_slot_per_cycle(seed):
    """Jobs back to back: one slot per cycle after one cycle."""
    cfg = KaleidoConfig.one_array()
    ins, exp = matcher_case(cfg, np.random.default_rng(seed), 40)
    out, cycles = simulate_stream(Matcher(cfg), ins)
    assert out == exp
    assert cycles == len(exp) + 1


@pytest.mark.parametrize("n", [1, 3, 5, 64, 64 + 64 + 9])
def test_scheduler_cycles(n, seed):
    """Outputs exact, and the cycle count is schedule_cycles() per window."""
    from kaleido.config import LFSR_SEED
    from kaleido.golden.scheduler import schedule, schedule_cycles
    from kaleido.hdl.scheduler import scheduler_in_layout
    from kaleido.loopnest import chunks
    from kaleido.tb.driver import Unpacker

    cfg = KaleidoConfig.one_array()
    ins, exp = scheduler_case(cfg, np.random.default_rng(seed), n)
    out, cycles = simulate_stream(Scheduler(cfg), ins)
    assert out == exp
    strings = [Unpacker(scheduler_in_layout(cfg.batch))(w)[("string",)] for w in ins]
    expected, state = 0, LFSR_SEED
    for win in chunks(n, cfg.window("row")):
        window = strings[win]
        sch = schedule(window, seed=state)
        state = sch.state
        expected += schedule_cycles(sch, len(window))
    assert cycles == expected
