"""Every block against its golden model on every simulator, one line each:
``rtl(cases, sim) == [ref(case) for case in cases]`` (Glasgow's pattern),
over the stall patterns on both sides, on the Amaranth simulator, Icarus
and Verilator (:mod:`kaleido.tb.blocks`)."""

import pytest

from kaleido.tb.blocks import BLOCKS, SIMULATORS, Case, ref, rtl

#: (input stall, output stall): a test dimension, as in verilog-axis
STALLS = [("none", "none"), ("random", "none"), ("none", "random"), ("random", "random"), ("every4", "every4")]


def cases(block: str, seed: int) -> list[Case]:
    if block == "pe":  # no handshake: both register counts instead
        return [Case("pe", seed, config=(("accumulators", a),)) for a in (3, 4)] + [
            Case("pe", seed, config=(("accumulators", 4), ("pv_pairs", True)))  # paired P V beats too
        ]
    if block == "dispatched":  # a whole head (batch 4, odd split), hold patterns
        small = (("batch", 4), ("split", (5, 3, 4)))
        return [
            Case(block, seed, "none", hold, source=kind, config=small)
            for kind in ("video", "random")
            for hold in ("none", "random")
        ]
    if block == "linear":  # a small layer (batch 4: three batches of 12 -> 10 features), hold patterns
        return [
            Case(block, seed + k, "none", hold, source=motion, config=(("batch", 4),))
            for k, (motion, hold) in enumerate([("slow", "none"), ("fast", "random"), ("slow", "every4")])
        ]
    if block == "pv":  # a whole P V head (batch 4, odd split), every stall pattern, the V kinds in turn
        small = (("batch", 4), ("split", (5, 3, 4)))
        kinds = ("video", "random")
        out = [Case(block, seed + k, i, o, source=kinds[k % 2], config=small) for k, (i, o) in enumerate(STALLS)]
        pairs = (*small, ("pv_pairs", True))  # small-P pairing: P mostly below 16
        stalls = enumerate(["none", "random"])
        return out + [Case(block, seed + k, i, i, source=kinds[k], config=pairs) for k, i in stalls]
    if block == "pv_tile":  # full, partial and odd key tiles (batch 4: padded passes), every stall pattern
        small = (("batch", 4), ("split", (5, 3, 4)))
        kinds = ("random", "video")
        out = [Case(block, seed + k, i, o, source=kinds[k % 2], config=small) for k, (i, o) in enumerate(STALLS)]
        pairs = (*small, ("pv_pairs", True))  # small-P pairing: P mostly below 16
        return out + [Case(block, seed + 7, "random", "random", source="random", config=pairs)]
    out = [Case(block, seed + k, i, o) for k, (i, o) in enumerate(STALLS)]
    if block in ("detector", "matcher", "scheduler", "window_detector"):
        out.append(Case(block, seed, "random", "random", source="workload"))
    return out


@pytest.mark.parametrize(
    "sim", [pytest.param(s, marks=[pytest.mark.rtl] if s != "amaranth" else []) for s in SIMULATORS]
)
@pytest.mark.parametrize("block", list(BLOCKS))
def test_block(block, sim, seed):
    todo = cases(block, seed)
    assert rtl(todo, sim) == [ref(c) for c in todo]


def test_a_wrong_reference_fails(seed):
    """The comparison can fail: a case whose expected output is perturbed."""
    case = Case("matcher", seed)
    expected = ref(case)
    assert rtl([case], "amaranth") == [expected]
    assert rtl([case], "amaranth") != [expected[:-1] + [expected[-1] ^ 1]]


def test_bad_case_is_named():
    with pytest.raises(ValueError, match="block must be one of .*, not 'alu'"):
        Case("alu", 0)
    with pytest.raises(ValueError, match="simulator must be one of .*, not 'xsim'"):
        rtl([], "xsim")
