"""Which memories of a design are buffers (SRAM macros) and which stay
logic, and how to name one in a Yosys selection: shared by the whole-core
flows (:mod:`kaleido.synth.core`, :mod:`kaleido.synth.hier`)."""

from __future__ import annotations

import json
import os

__all__ = ["MACRO_MIN_WORDS", "REGFILE_MIN_WORDS", "classify_memories", "macro_synth", "select_name"]

#: a memory of at least this many words is a buffer (an SRAM macro); fewer
#: is a FIFO's or a pipeline's storage, built from flip-flops, unless its
#: reads are registered and it has :data:`REGFILE_MIN_WORDS` words
MACRO_MIN_WORDS = 32

#: a memory whose every read port is registered (synchronous) is a buffer
#: from this many words on: a register-file macro, as a memory compiler
#: builds one (its bits counted as a macro's, as every buffer's); an
#: assumption, docs/SYNTH.md "Buffers"
REGFILE_MIN_WORDS = 16


def _number(value) -> int:
    """A Yosys JSON parameter: an int, or a binary string (``x`` bits as 0)."""
    if isinstance(value, int):
        return value
    return int(str(value).replace("x", "0") or "0", 2)


def classify_memories(mems: dict, top: str, min_words: int = MACRO_MIN_WORDS) -> tuple[dict, dict]:
    """Split the ``$mem_v2`` cells of Yosys ``write_json`` output ``mems``
    (module ``top``) into buffers and logic. Returns ``(buffers, logic)``,
    each ``{cell name: {"words", "width", "bits", "read_ports",
    "write_ports", "read"}}`` (``read``: ``"sync"`` when every read port is
    clocked, else ``"async"``). A buffer is a memory the design declared
    (not a ``proc_rom`` case table) with at least ``min_words`` words, or
    with registered reads and at least :data:`REGFILE_MIN_WORDS`. A design
    without memories has an empty list."""
    if not mems["modules"]:  # no memory selected: Yosys writes no module
        return {}, {}
    module = mems["modules"].get(top)
    if module is None:
        raise ValueError(f"no module {top!r} in the memory list; modules: {sorted(mems['modules'])}")
    buffers: dict[str, dict] = {}
    logic: dict[str, dict] = {}
    for name, cell in module["cells"].items():
        if cell["type"] != "$mem_v2":
            continue
        p = cell["parameters"]
        words, width, reads = _number(p["SIZE"]), _number(p["WIDTH"]), _number(p["RD_PORTS"])
        clocked = _number(p["RD_CLK_ENABLE"]) if reads else 0
        entry = {
            "words": words,
            "width": width,
            "bits": words * width,
            "read_ports": reads,
            "write_ports": _number(p["WR_PORTS"]),
            "read": "sync" if clocked == (1 << reads) - 1 else "async",
        }
        table = "proc_rom" in str(p.get("MEMID", ""))
        least = min(min_words, REGFILE_MIN_WORDS) if entry["read"] == "sync" else min_words
        (logic if table or words < least else buffers)[name] = entry
    return buffers, logic


def select_name(name: str, top: str) -> str:
    """A Yosys selection of cell ``name`` of module ``top``."""
    return f"{top}/" + name.replace("\\", "\\\\").replace("$", "\\$").replace(" ", "\\ ")


def macro_synth(work: str, source: str, top: str, min_words: int, flatten: bool, children=()) -> dict:
    """The logic of ``source`` (Verilog file name in ``work``, module
    ``top``) with its buffers as SRAM macros: Yosys up to ``memory
    -nomap`` (``-flatten`` or not), every memory of at least ``min_words``
    words a black-box ``sram_macro``, then the rest of ``synth`` and the
    transistor steps. Returns ``cells`` and ``flip_flops`` without the
    macros (checked one per buffer) and the ``children``'s instances,
    ``transistors``, ``gate_depth``, ``buffers`` (per buffer) and
    ``logic_memory_bits`` (the memories left to logic)."""
    from .tools import LOGIC_STEPS, flip_flop_count, logic_stats, read_commands, run_tool, tool_path

    yosys = tool_path("yosys")
    flat = "-flatten " if flatten else ""
    run_tool(
        [
            yosys,
            "-p",
            f"{read_commands(source, top)} synth {flat}-top {top} -run begin:fine; delete t:$scopeinfo; "
            "write_rtlil coarse.il; select t:$mem_v2; write_json -selected mems.json",
        ],
        work,
        "coarse.log",
    )
    with open(os.path.join(work, "mems.json")) as f:
        buffers, logic = classify_memories(json.load(f), top, min_words)
    with open(os.path.join(work, "macros.ys"), "w") as f:
        if buffers:
            f.write("chtype -set sram_macro " + " ".join(select_name(n, top) for n in buffers) + "\n")
    run_tool(
        [yosys, "-p", f"read_rtlil coarse.il; script macros.ys; synth -top {top} -run fine:check; {LOGIC_STEPS}"],
        work,
        "logic.log",
    )
    cells, transistors, gate_depth = logic_stats(work, top)
    macros = cells.pop("sram_macro", 0)
    if macros != len(buffers):
        raise RuntimeError(f"{work}: {len(buffers)} buffers chosen but {macros} sram_macro cells left after synth")
    for child in set(children):
        cells.pop(child, None)
    os.remove(os.path.join(work, "coarse.il"))  # tens of MB, and read back by nothing
    return {
        "cells": sum(cells.values()),
        "flip_flops": flip_flop_count(cells),
        "transistors": transistors,
        "gate_depth": gate_depth,
        "buffers": {n.lstrip("\\"): b for n, b in sorted(buffers.items())},
        "logic_memory_bits": sum(b["bits"] for b in logic.values()),
    }
