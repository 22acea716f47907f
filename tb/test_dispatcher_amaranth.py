"""The pass dispatcher (feature buffer, need derivation, matcher, beat
former) turns golden passes into exactly the golden beat stream."""

import numpy as np
import pytest

from kaleido import KaleidoConfig
from kaleido.encoding import Phase
from kaleido.golden.array import pass_beats
from kaleido.golden.loopnest import iter_passes
from kaleido.golden.matcher import channel_needs, match
from kaleido.hdl.dispatcher import PassDispatcher, pass_layout
from kaleido.hdl.layouts import slot_layout
from kaleido.model import array_drain, run_model
from kaleido.tb.amaranth_sim import simulate_stream
from kaleido.tb.driver import Packer, Unpacker, pass_word
from kaleido.tb.passes import make_workload, random_pass


def _comparable(unpack, word):
    d = unpack(word)
    if not d[("ctl", "slot")]:  # a marker beat: operands are don't-care
        d = {key: v for key, v in d.items() if key[0] == "ctl"}
    return d


@pytest.mark.parametrize("source", ["workload", "random"])
@pytest.mark.parametrize("out_stall", ["none", "random"])
def test_dispatcher_beats(source, out_stall, seed):
    cfg = KaleidoConfig.one_array(batch=8, lookahead=3, split=(8, 5, 3))
    rng = np.random.default_rng(seed)
    pack = Packer(pass_layout(cfg.array_rows, cfg.array_cols, cfg.batch))
    words, expected = [], []
    if source == "workload":
        w = make_workload("video", (2, 3, 5), cfg.split, seed)
        passes = list(iter_passes(w.q, w.k, w.grid, w.split, cfg))
        items = [(p.A, p.q, p.rows_present, p.B, p.k, p.cols_present, p.slots) for p in passes]
    else:
        items = []
        for _ in range(20):
            _, (A, q, B, k, _) = random_pass(rng, cfg, n=cfg.batch)
            slots = [match(channel_needs(p, q, k, accumulators=cfg.accumulators), cfg.lookahead) for p in Phase]
            items.append((A, q, np.ones(4, bool), B, k, np.ones(4, bool), slots))
    for A, q, rp, B, k, cp, slots in items:
        expected += pass_beats(A, q, B, k, slots, accumulators=cfg.accumulators, rows_present=rp, cols_present=cp)
        words.append(pass_word(pack, A, q, rp, B, k, cp))
    out, cycles = simulate_stream(PassDispatcher(cfg), words, out_stall=out_stall, seed=seed, ports=("passes", "beats"))
    from kaleido.tb.driver import BeatEncoder

    enc, unpack = BeatEncoder(4, 4), Unpacker(slot_layout(4, 4))
    assert [_comparable(unpack, o) for o in out] == [_comparable(unpack, enc(b)) for b in expected]
    if out_stall == "none":  # one beat per cycle, passes back to back (three cycles to start: take, job, slot)
        assert cycles == len(expected) + 3
        if source == "workload":  # dispatcher + array: the cycle model with a dispatcher
            model = run_model(w.q, w.k, w.grid, w.split, cfg, variant="pe-m", dispatcher=True)
            assert cycles + array_drain(cfg) == model.cycles
