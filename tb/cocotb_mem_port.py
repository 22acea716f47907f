"""cocotb side of ``tb/test_mem_port.py``: the loader bench (memory
preloaded in the emitted Verilog) takes each command of ``KALEIDO_LOADS``
and the testbench only waits for ``done``, counting cycles on a GPI clock;
then it reads the buffer rows back. Outputs go to ``loads.json`` in the
build directory for pytest to compare with the golden model."""

from __future__ import annotations

import json
import os

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge


@cocotb.test()
async def loads(dut):
    todo = json.loads(os.environ["KALEIDO_LOADS"])
    Clock(dut.clk, 10, unit="ns", impl="gpi").start(start_high=False)  # no Python on the clock
    dut.rst.value = 1
    dut.cmd__valid.value = 0
    dut.raddr.value = 0
    for _ in range(2):
        await FallingEdge(dut.clk)
    dut.rst.value = 0
    cycles = []
    for bits in todo["commands"]:
        dut.cmd__payload.value = bits
        dut.cmd__valid.value = 1
        await RisingEdge(dut.clk)  # accepted: the loader is idle
        await FallingEdge(dut.clk)
        dut.cmd__valid.value = 0
        n = 1
        while True:
            await ReadOnly()
            if int(dut.done.value):
                break
            await FallingEdge(dut.clk)
            n += 1
            assert n < 1_000_000, "the loader never signalled done"
        cycles.append(n)
        await FallingEdge(dut.clk)
    rows = []
    for i in range(todo["words"]):
        dut.raddr.value = i
        await ReadOnly()
        rows.append(int(dut.rdata.value))
        await FallingEdge(dut.clk)
    with open("loads.json", "w") as f:
        json.dump({"cycles": cycles, "rows": [str(r) for r in rows]}, f)
