"""cocotb side of :func:`kaleido.tb.blocks.rtl`: runs the cases in
``KALEIDO_CASES`` (JSON) through the same bench the Amaranth simulator
runs, resetting the block between cases, and leaves the outputs in the
build directory for pytest to compare with the golden model."""

from __future__ import annotations

import json
import os

import cocotb

from kaleido.tb.blocks import Case, bench, write_outputs
from kaleido.tb.cocotb_util import reset, start
from kaleido.tb.kit import CocotbBackend


@cocotb.test()
async def cases(dut):
    todo = [Case.from_json(d) for d in json.loads(os.environ["KALEIDO_CASES"])]
    await start(dut)
    outputs = []
    for case in todo:
        await reset(dut)  # each case starts from reset, as a fresh Amaranth simulation does
        outputs.append(await bench(CocotbBackend(dut), case))
        dut._log.info(f"{case}: {len(outputs[-1])} outputs")
    write_outputs(outputs, os.getcwd())
