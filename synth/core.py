"""The attention core through Yosys, beside the dense core (issue 13, item 5;
docs/SYNTH.md "The whole core").

A core is mostly memory: about a million bits of on-chip buffers around a
few hundred thousand transistors of logic. Mapping the buffers to flip-flops
would bury the logic (and exhaust ABC), so the flow splits them:

1. ``synth -flatten`` up to ``memory -nomap`` (Yosys's ``begin:fine``): every
   memory is a ``$mem_v2`` cell; their list is written (``mems.json``).
2. Each **buffer** (:func:`classify_memories`: an Amaranth ``Memory`` of at
   least :data:`MACRO_MIN_WORDS` words) becomes a black-box cell
   ``sram_macro`` (``chtype``): its address, data and enable logic stay, its
   bits leave the logic. A FIFO's storage (fewer words) and the case tables
   Yosys turns into ROMs (``proc_rom``) stay logic.
3. The rest of ``synth`` (``fine:check``) and the generic/CMOS steps every
   design gets (:func:`~kaleido.synth.flow.synth_design`): cells,
   flip-flops, transistors (``abc -g cmos2``, ``stat -tech cmos``), gate
   depth.

Area (:func:`core_area`): logic transistors at the 16 nm logic density, and
buffer bits at the SRAM bit cell (``kaleido/data/chip_16nm.toml``, sources
stated there). Both are ESTIMATES, not a layout.

A buffer read combinationally is marked ``read: "async"``: an SRAM macro
reads through a register, so such a buffer would cost one more cycle on its
read path on a chip. The area counts it as SRAM all the same.
"""

from __future__ import annotations

import json
import os
import pathlib
import time
import tomllib
from collections.abc import Callable

from amaranth.back import verilog
from amaranth.lib import wiring

from ..config import CoreConfig, KaleidoConfig

__all__ = [
    "MACRO_MIN_WORDS",
    "CORE_VARIANTS",
    "DEFAULT_CORES",
    "SMALL_ARRAYS",
    "classify_memories",
    "synth_core",
    "core_area",
    "core_report",
    "core_table",
    "core_design",
    "run_cores",
    "collect_cores",
]

#: a memory of at least this many words is a buffer (an SRAM macro); fewer
#: is a FIFO's or a pipeline's storage, built from flip-flops
MACRO_MIN_WORDS = 32

#: the cores the flow can build: report key -> variant of
#: :class:`~kaleido.hdl.core.KaleidoAttentionCore` (``"kaleido_1x1"``: the
#: Kaleido core with its Q K^T engine on 16 1x1 arrays behind the shared
#: queue, ``KaleidoConfig(sub_arrays=(1, 1))``, issue 14)
CORE_VARIANTS = {"kaleido": "kaleido", "dense": "dense", "kaleido_1x1": "kaleido_1x1"}

#: the cores ``make synth`` builds unless ``--cores`` names others; the
#: overheads are each Kaleido core's over ``"dense"``
DEFAULT_CORES = ("kaleido", "dense")

#: the small arrays of the ``"kaleido_1x1"`` core
SMALL_ARRAYS = (1, 1)

DATA = pathlib.Path(__file__).resolve().parent.parent / "kaleido" / "data" / "chip_16nm.toml"


def _overhead_key(key: str) -> str:
    """Where ``report["core"]`` keeps core ``key``'s overheads over the
    dense core: ``"overhead"`` for the default Kaleido core, else
    ``"overhead_<key>"``."""
    return "overhead" if key == "kaleido" else f"overhead_{key}"


def core_design(variant: str, config: KaleidoConfig, core: CoreConfig) -> wiring.Component:
    """The core of ``variant`` (``"kaleido"``: the default core; ``"dense"``:
    the same core with the dense engine and dense P V array;
    ``"kaleido_1x1"``: the default core with its Q K^T engine on
    :data:`SMALL_ARRAYS` arrays)."""
    from ..hdl.core import KaleidoAttentionCore

    if variant == "kaleido":
        return KaleidoAttentionCore(config, core)
    if variant == "kaleido_1x1":
        return KaleidoAttentionCore(config.replace(sub_arrays=SMALL_ARRAYS), core)
    return KaleidoAttentionCore(config, core, variant=variant)


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
    (not a ``proc_rom`` case table) with at least ``min_words`` words."""
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
        (logic if table or words < min_words else buffers)[name] = entry
    return buffers, logic


def _select(name: str, top: str) -> str:
    """A Yosys selection of cell ``name`` of module ``top``."""
    return f"{top}/" + name.replace("\\", "\\\\").replace("$", "\\$").replace(" ", "\\ ")


def synth_core(
    name: str,
    design: wiring.Component | Callable[[], wiring.Component],
    root: str = "build/synth",
    min_words: int = MACRO_MIN_WORDS,
) -> dict:
    """The core flow (module docstring) for ``design`` (or a factory of it)
    in ``root/name``; returns its report entry: ``cells``, ``flip_flops``,
    ``transistors``, ``gate_depth`` of the logic, ``buffers`` (per buffer),
    ``buffer_bits``, ``logic_memory_bits`` (memories left to logic) and
    ``seconds``."""
    from .flow import LOGIC_STEPS, flip_flop_count, logic_stats, read_commands, run_tool, tool_path, work_dir

    t0 = time.time()
    work = work_dir(root, name, ("mems.json", "macros.ys", "generic_stat.json", "cmos_stat.txt", "cmos_ltp.txt"))
    top = "core"
    dut = design() if callable(design) and not isinstance(design, wiring.Component) else design
    with open(os.path.join(work, "design.v"), "w") as f:
        f.write(verilog.convert(dut, name=top, emit_src=False))
    yosys = tool_path("yosys")
    run_tool(
        [
            yosys,
            "-p",
            f"{read_commands('design.v', top)} synth -flatten -top {top} -run begin:fine; delete t:$scopeinfo; "
            "write_rtlil coarse.il; select t:$mem_v2; write_json -selected mems.json",
        ],
        work,
        "coarse.log",
    )
    with open(os.path.join(work, "mems.json")) as f:
        buffers, logic = classify_memories(json.load(f), top, min_words)
    with open(os.path.join(work, "macros.ys"), "w") as f:
        if buffers:
            f.write("chtype -set sram_macro " + " ".join(_select(n, top) for n in buffers) + "\n")
    run_tool(
        [
            yosys,
            "-p",
            f"read_rtlil coarse.il; script macros.ys; synth -top {top} -run fine:check; {LOGIC_STEPS}",
        ],
        work,
        "logic.log",
    )
    cells, transistors, gate_depth = logic_stats(work, top)
    macros = cells.pop("sram_macro", 0)
    if macros != len(buffers):
        raise RuntimeError(f"{name}: {len(buffers)} buffers chosen but {macros} sram_macro cells left after synth")
    os.remove(os.path.join(work, "coarse.il"))  # tens of MB, and read back by nothing
    return {
        "cells": sum(cells.values()),
        "flip_flops": flip_flop_count(cells),
        "transistors": transistors,
        "gate_depth": gate_depth,
        "buffers": {n.lstrip("\\"): b for n, b in sorted(buffers.items())},
        "buffer_bits": sum(b["bits"] for b in buffers.values()),
        "logic_memory_bits": sum(b["bits"] for b in logic.values()),
        "seconds": round(time.time() - t0, 1),
    }


def _area_data(data_path=None) -> dict:
    return tomllib.loads(pathlib.Path(DATA if data_path is None else data_path).read_text())


def core_area(entry: dict, data_path=None, data: dict | None = None) -> dict:
    """mm^2 of a core entry of :func:`synth_core`: ``logic`` (transistors at
    the logic density and utilisation), ``buffers`` (bits at the SRAM bit
    cell over the macro's array efficiency) and ``total``."""
    data = data or _area_data(data_path)
    logic = entry["transistors"] / (data["logic"]["transistors_per_mm2"] * data["logic"]["utilization"])
    sram = entry["buffer_bits"] * data["sram"]["bitcell_um2"] / data["sram"]["array_efficiency"] * 1e-6
    return {"logic": logic, "buffers": sram, "total": logic + sram}


def core_report(entries: dict, designs: dict | None = None, data_path=None) -> dict:
    """``report["core"]``: each core's entry with its ``area_mm2``, and the
    Kaleido core's area overhead over the dense one:

    * ``total``: as built (logic and each core's own buffers);
    * ``logic``: logic only;
    * ``at_paper_buffers``: each core's logic (absolute mm^2) plus the
      paper's buffer area per array (68.4 mm^2 / 16,384), the paper's
      denominator;
    * ``at_paper_buffers_calibrated`` (when ``designs``, the block report,
      has ``baseline_array``): the same with the logic in the paper's own
      area per transistor, the dense array's area the paper's table implies
      over our dense array's transistors (as :mod:`kaleido.synth.chip`'s
      calibrated estimate): the number comparable with the paper's 7.9 %.

    A missing core of :data:`DEFAULT_CORES` gives ``error`` instead of the
    overheads. Any other Kaleido core synthesized (``"kaleido_1x1"``) gets
    the same overheads over the dense core under ``overhead_<key>``."""
    data = _area_data(data_path)
    missing = [k for k in DEFAULT_CORES if k not in entries]
    out: dict = {k: dict(e, area_mm2=core_area(e, data=data)) for k, e in entries.items()}
    if missing:
        out["error"] = f"cores without a synthesis result: {missing}"
        return out
    paper = data["paper"]
    per_array = paper["buffers_mm2"] / paper["arrays"]
    dense_array = (designs or {}).get("baseline_array", {}).get("transistors")
    per_transistor = None
    if dense_array:
        paper_dense_array = (paper["arrays_mm2"] - paper["arrays_overhead"] * paper["total_mm2"]) / paper["arrays"]
        per_transistor = paper_dense_array / dense_array
    d = out["dense"]
    for key in entries:
        if key == "dense":
            continue
        k = out[key]
        ka, da = k["area_mm2"], d["area_mm2"]
        over = {
            "total": (ka["total"] - da["total"]) / da["total"],
            "logic": (ka["logic"] - da["logic"]) / da["logic"],
            "at_paper_buffers": (ka["logic"] - da["logic"]) / (da["logic"] + per_array),
            "paper": paper["arrays_overhead"] + paper["dispatcher_overhead"],
        }
        if per_transistor is not None:
            kt, dt = k["transistors"], d["transistors"]
            over["at_paper_buffers_calibrated"] = (kt - dt) * per_transistor / (dt * per_transistor + per_array)
        out[_overhead_key(key)] = over
    out["assumptions"] = {
        "macro_min_words": MACRO_MIN_WORDS,
        "logic": data["logic"]["source"],
        "sram": data["sram"]["source"],
        "paper_buffer_mm2_per_array": per_array,
    }
    if per_transistor is not None:
        out["assumptions"]["calibrated_mm2_per_transistor"] = per_transistor
    return out


def core_table(report: dict) -> list[str]:
    """Markdown lines of ``report["core"]`` (empty without it)."""
    core = report.get("core")
    if not core:
        return []
    lines = [
        "| core | logic cells | flip-flops | transistors | gate depth | buffers | buffer bits | "
        "logic mm^2 | buffers mm^2 | total mm^2 |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for key in CORE_VARIANTS:
        e = core.get(key)
        if e is None:
            continue
        a = e["area_mm2"]
        lines.append(
            f"| {key} | {e['cells']:,} | {e['flip_flops']:,} | {e['transistors']:,} | {e['gate_depth']} | "
            f"{len(e['buffers'])} | {e['buffer_bits']:,} | {a['logic']:.4f} | {a['buffers']:.4f} | {a['total']:.4f} |"
        )
    keys = [k for k in CORE_VARIANTS if k != "dense" and _overhead_key(k) in core]
    if keys:
        over = [core[_overhead_key(k)] for k in keys]

        def row(label: str, field: str) -> str:
            return f"| {label} | " + " | ".join(f"{o[field]:.1%}" for o in over) + " |"

        lines += [
            "",
            "| area overhead over the dense core | " + " | ".join(f"{k} core" for k in keys) + " |",
            "|---|" + "---|" * len(keys),
            row("as built (logic + its own buffers)", "total"),
            row("logic only", "logic"),
            row("logic + the paper's buffer area per array", "at_paper_buffers"),
            *(
                [row("the same, logic at the paper's area per transistor", "at_paper_buffers_calibrated")]
                if all("at_paper_buffers_calibrated" in o for o in over)
                else []
            ),
            row("the paper (table 2: arrays + dispatchers)", "paper"),
        ]
    if "error" in core:
        lines += ["", f"Core comparison incomplete: {core['error']}."]
    return lines


def run_cores(
    config: KaleidoConfig,
    core: CoreConfig,
    root: str = "build/synth",
    variants: tuple = DEFAULT_CORES,
    pool=None,
    wait: bool = True,
) -> dict:
    """Every core of ``variants`` through :func:`synth_core`, in ``pool`` (an
    executor) when given. Returns ``{"entries": {...}, "failures": {...}}``,
    or with ``wait=False`` the submitted jobs for :func:`collect_cores`."""
    jobs = {}
    for key in variants:
        if key not in CORE_VARIANTS:
            raise ValueError(f"unknown core {key!r}; known: {sorted(CORE_VARIANTS)}")
        name = "core" if key == "kaleido" else f"{key}_core"
        args = (name, _CoreFactory(CORE_VARIANTS[key], config, core), root)
        jobs[key] = pool.submit(synth_core, *args) if pool is not None else args
    return collect_cores(jobs) if wait else jobs


def collect_cores(jobs: dict) -> dict:
    """``{"entries", "failures"}`` of :func:`run_cores`' jobs (futures, or
    the arguments of :func:`synth_core` to run here)."""
    from .flow import failure_entry

    entries, failures = {}, {}
    for key, job in jobs.items():
        try:
            entries[key] = synth_core(*job) if isinstance(job, tuple) else job.result()
        except Exception as err:
            failures[f"core:{key}"] = failure_entry(err)
    return {"entries": entries, "failures": failures}


class _CoreFactory:
    """A picklable factory of one core (crosses the process pool)."""

    def __init__(self, variant: str, config: KaleidoConfig, core: CoreConfig):
        self.variant, self.config, self.core = variant, config, core

    def __call__(self) -> wiring.Component:
        return core_design(self.variant, self.config, self.core)
