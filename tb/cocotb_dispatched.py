"""cocotb: pass dispatcher + array (``DispatchedArray``) on a whole head,
under Icarus and Verilator. Drains equal the golden beat model (and so
reuse_scores), and the measured cycle count equals the cycle model's
prediction with ``pass_gap=1``."""

from __future__ import annotations

import cocotb

from kaleido.golden.loopnest import iter_passes
from kaleido.hdl.dispatcher import pass_layout
from kaleido.model import run_model
from kaleido.tb.benches import dispatched_bench
from kaleido.tb.cocotb_util import seed, start
from kaleido.tb.driver import Packer, expected_drains, pass_word
from kaleido.tb.kit import CocotbBackend
from kaleido.tb.passes import make_workload
from kaleido.tb.runner import config_from_env

CFG = config_from_env()


def _passes(w, cfg):
    pack = Packer(pass_layout(cfg.array_rows, cfg.array_cols, cfg.batch))
    words, beats = [], []
    for ps in iter_passes(w.q, w.k, w.grid, w.split, cfg):
        A, q, B, k = ps.A, ps.q, ps.B, ps.k
        beats += ps.beats(cfg.accumulators)
        words.append(pass_word(pack, A, q, ps.rows_present, B, k, ps.cols_present))
    return words, beats


async def _run(dut, words, hold_pattern, s):
    res = await dispatched_bench(CocotbBackend(dut), CFG, words, hold=hold_pattern, seed=s)
    return res.drains, res.last_tile


@cocotb.test()
async def head_through_dispatcher(dut):
    s = seed()
    dut._log.info(f"seed {s}")
    await start(dut)
    for kind, grid in (("video", (2, 3, 4)), ("random", (1, 3, 5))):
        w = make_workload(kind, grid, CFG.split, s)
        words, beats = _passes(w, CFG)
        for hold in ("none", "random"):
            drains, last_tile = await _run(dut, words, hold, s)
            exp = expected_drains(beats, CFG.array_rows, CFG.array_cols, CFG.accumulators, CFG.acc_width)
            assert drains == exp, f"seed {s} {kind} hold={hold}: drains differ"
            if hold == "none":  # the model assumes always-valid, always-ready boundaries
                model = run_model(w.q, w.k, w.grid, w.split, CFG, variant="pe-m", pass_gap=1)
                assert last_tile + 1 == model.cycles, (
                    f"seed {s} {kind}: RTL {last_tile + 1} cycles, model {model.cycles}"
                )
            dut._log.info(f"{kind} {grid} hold={hold}: {len(words)} passes, {last_tile + 1} cycles, exact")
