"""cocotb side of the attention core's fast path (``make sim``,
``tb/test_core.py``'s ``rtl`` tests): the core bench (Q, K and V preloaded
from the image file the run names, ``+image=<path>``) takes one head
command (``KALEIDO_CORE_CMD``, the payload's bits) and the testbench waits for
``busy`` to fall: the top level makes its own clock
(``tb/core_benches.py``'s ``CORE_TOP``), so neither Python nor the GPI
runs on any cycle of the head. Then it reads O back through the bench's read port and
writes the JSON file ``KALEIDO_CORE_CMD`` names (``out``: ``cycles``,
the core's ``cycles`` port; ``words``, O a bank word at a time;
``seconds``, the head's wall time)."""

from __future__ import annotations

import json
import os
import time

import cocotb
from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge

from kaleido.tb.cocotb_util import reset


@cocotb.test()
async def head(dut):
    todo = json.loads(os.environ["KALEIDO_CORE_CMD"])
    dut.cmd__valid.value = 0
    dut.raddr.value = 0
    await reset(dut)  # the top level runs its own clock
    dut.cmd__payload.value = int(todo["cmd"])
    dut.cmd__valid.value = 1
    await RisingEdge(dut.clk)  # taken: the core is idle
    await FallingEdge(dut.clk)
    dut.cmd__valid.value = 0
    t0 = time.perf_counter()
    await FallingEdge(dut.busy)
    seconds = time.perf_counter() - t0
    await FallingEdge(dut.clk)
    cycles = int(dut.cycles.value)
    words = []
    for i in range(todo["words"]):
        dut.raddr.value = i
        await ReadOnly()
        words.append(str(int(dut.rdata.value)))
        await FallingEdge(dut.clk)
    with open(todo["out"], "w") as f:
        json.dump({"cycles": cycles, "words": words, "seconds": seconds}, f)
