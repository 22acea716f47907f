"""cocotb: pass dispatcher + array (``DispatchedArray``) on a whole head,
under Icarus and Verilator. Drains equal the golden beat model (and so
reuse_scores), and the measured cycle count equals the cycle model's
prediction with a dispatcher (``dispatcher=True``)."""

from __future__ import annotations

import cocotb

from kaleido.model import run_model
from kaleido.tb.benches import dispatched_bench
from kaleido.tb.cocotb_util import seed, start
from kaleido.tb.driver import expected_drains
from kaleido.tb.kit import CocotbBackend
from kaleido.tb.passes import make_workload, pass_words
from kaleido.tb.runner import config_from_env

CFG = config_from_env()


@cocotb.test()
async def head_through_dispatcher(dut):
    """Whole heads: drains exact, and the cycle count equals the cycle
    model's with a dispatcher (always-valid passes, no hold; holds and
    drains under them: tb/test_blocks.py)."""
    s = seed()
    dut._log.info(f"seed {s}")
    await start(dut)
    for kind, grid in (("video", (2, 3, 4)), ("random", (1, 3, 5))):
        w = make_workload(kind, grid, CFG.split, s)
        words, beats = pass_words(CFG, w)
        res = await dispatched_bench(CocotbBackend(dut), CFG, words, seed=s)
        exp = expected_drains(beats, CFG.array_rows, CFG.array_cols, CFG.accumulators, CFG.acc_width)
        assert res.drains == exp, f"seed {s} {kind}: drains differ"
        model = run_model(w.q, w.k, w.grid, w.split, CFG, variant="pe-m", dispatcher=True)
        assert res.last_tile is not None and res.last_tile + 1 == model.cycles, (
            f"seed {s} {kind}: RTL {res.last_tile} + 1 cycles, model {model.cycles}"
        )
        dut._log.info(f"{kind} {grid}: {len(words)} passes, {res.last_tile + 1} cycles = model, exact")
