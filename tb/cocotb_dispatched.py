"""cocotb: pass dispatcher + array (``DispatchedArray``) on a whole head,
under Icarus and Verilator. Drains equal the golden beat model (and so
reuse_scores), and the measured cycle count equals the cycle model's
prediction with ``pass_gap=1``."""

from __future__ import annotations

import cocotb
from cocotb.triggers import FallingEdge, Timer

from kaleido.golden.loopnest import iter_passes
from kaleido.hdl.dispatcher import pass_layout
from kaleido.model import run_model
from kaleido.tb.cocotb_util import seed, start
from kaleido.tb.driver import Packer, TileDecoder, expected_drains, pass_word, stall_pattern
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
    R, C = CFG.array_rows, CFG.array_cols
    decode = TileDecoder(CFG.acc_width)
    ports = {(r, c): getattr(dut, f"tiles__{r}__{c}") for r in range(R) for c in range(C)}
    drains = {pe: [] for pe in ports}
    holds = stall_pattern(hold_pattern, s)
    i = idle = cycle = 0
    last_tile = None
    while i < len(words) or idle < 400:
        hold = next(holds)
        dut.hold.value = hold
        dut.passes__valid.value = int(i < len(words))
        if i < len(words):
            dut.passes__payload.value = words[i]
        if not hold:
            for pe, port in ports.items():
                valid, phase, value = decode(int(port.value))
                if valid:
                    drains[pe].append((phase, value))
                    last_tile = cycle
            cycle += 1
        await Timer(1, unit="ns")  # the dispatcher's ready is combinational: let it settle
        if i < len(words) and int(dut.passes__ready.value):
            i += 1
            idle = 0
        elif i >= len(words):
            idle += 1
        await FallingEdge(dut.clk)
    dut.passes__valid.value = 0
    return drains, last_tile


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
