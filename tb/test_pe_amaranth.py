"""Fast inner loop: one Kaleido PE in the Amaranth simulator against the
golden PE model (the cocotb tests repeat these exhaustively on Verilog)."""

import itertools

import numpy as np
import pytest

from kaleido import KaleidoConfig
from kaleido.golden.array import run_beats
from kaleido.tb.amaranth_sim import simulate_pe
from kaleido.tb.driver import pe_beat


@pytest.mark.parametrize("accumulators", [3, 4])
def test_every_tag_combination(accumulators, seed):
    cfg = KaleidoConfig.one_array(accumulators=accumulators)
    rng = np.random.default_rng(seed)
    beats = []
    for phase, kind, q0, q1, k0, k1 in itertools.product(range(4), range(2), *[range(4)] * 4):
        if not kind:
            q1, k1 = q0, k0
        r0, r1, k = (int(x) for x in rng.integers(-128, 128, 3))
        # two slots so registers hold sums, then the four drains from this phase on
        beats.append(pe_beat(1, kind, phase, 0, r0, r1 if kind else r0, q0, q1, k, k0, k1))
        beats.append(pe_beat(1, kind, phase, 0, r1, r0 if kind else r1, q0, q1, ~k, k0, k1))
        beats += [pe_beat(0, 0, (phase + i) % 4, 1, 0, 0, 0, 0, 0, 0, 0) for i in range(4)]
    out = simulate_pe(cfg, beats)
    exp = [
        (int(p), int(t[0, 0])) for p, t in run_beats(beats, 1, 1, accumulators=accumulators, acc_width=cfg.acc_width)
    ]
    assert out == exp


def test_products_sampled(seed):
    """FULL8 products over a random sample of int8 pairs (exhaustive in cocotb)."""
    rng = np.random.default_rng(seed)
    pairs = [(-128, -128), (-128, 127), (127, -128), (0, -1)] + [
        tuple(int(x) for x in rng.integers(-128, 128, 2)) for _ in range(500)
    ]
    beats = [pe_beat(1, 0, 0, 1, a, a, 0, 0, b, 0, 0) for a, b in pairs]
    assert [v for _, v in simulate_pe(KaleidoConfig.one_array(), beats)] == [a * b for a, b in pairs]
