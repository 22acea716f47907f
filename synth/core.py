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

import functools
import hashlib
import os
import pathlib
import time
import tomllib
from collections.abc import Callable

from amaranth.back import verilog
from amaranth.lib import wiring

from ..config import DESIGNS, CoreConfig, KaleidoConfig
from .memories import MACRO_MIN_WORDS, REGFILE_MIN_WORDS, classify_memories, macro_synth
from .tools import (
    LOGIC_STEPS,
    failure_entry,
    tool_version,
    work_dir,
)

__all__ = [
    "MACRO_MIN_WORDS",
    "REGFILE_MIN_WORDS",
    "CORE_VARIANTS",
    "DEFAULT_CORES",
    "classify_memories",
    "synth_core",
    "core_area",
    "core_report",
    "core_table",
    "parts_rows",
    "PART_MIN_SHARE",
    "core_config",
    "core_design",
    "core_verilog",
    "CoreRun",
    "DEFAULT_FLATTEN",
    "flat_core",
]

#: the cores the flow can build: report key -> (:data:`kaleido.config.DESIGNS`
#: name of its configuration, variant of
#: :class:`~kaleido.hdl.core.KaleidoAttentionCore`); the dense core is the
#: same core with the dense engine and P V array, at ``one_array``'s
#: configuration (its reuse settings are not used)
CORE_VARIANTS: dict[str, tuple[str, str]] = {
    "default": ("default", "kaleido"),
    "one_array": ("one_array", "kaleido"),
    "paper": ("paper", "kaleido"),
    "dense": ("one_array", "dense"),
}

#: the cores ``make synth`` builds unless ``--cores`` names others; the
#: overheads are each Kaleido core's over ``"dense"``
DEFAULT_CORES = tuple(CORE_VARIANTS)

#: the cores ``make synth`` synthesizes flattened unless ``--flatten`` says
#: otherwise: none, so every core is measured the same way (hierarchically;
#: how far that is from flattened: docs/SYNTH.md "Hierarchical against
#: flattened")
DEFAULT_FLATTEN: tuple[str, ...] = ()

DATA = pathlib.Path(__file__).resolve().parent.parent / "kaleido" / "data" / "chip_16nm.toml"


def _overhead_key(key: str) -> str:
    """Where ``report["core"]`` keeps core ``key``'s overheads over the
    dense core."""
    return f"overhead_{key}"


def core_config(key: str) -> KaleidoConfig:
    """The configuration core ``key`` (:data:`CORE_VARIANTS`) is built at."""
    return KaleidoConfig(**DESIGNS[CORE_VARIANTS[key][0]])


def core_design(key: str, core: CoreConfig | None = None) -> wiring.Component:
    """The core of report key ``key`` (:data:`CORE_VARIANTS`) at
    :func:`core_config` and ``core`` (``CoreConfig()`` by default)."""
    from ..hdl.core import KaleidoAttentionCore

    if key not in CORE_VARIANTS:
        raise ValueError(f"unknown core {key!r}; known: {sorted(CORE_VARIANTS)}")
    variant = CORE_VARIANTS[key][1]
    return KaleidoAttentionCore(core_config(key), core or CoreConfig(), variant=variant)


def core_verilog(key: str, core: CoreConfig | None = None) -> str:
    """The emitted Verilog of core ``key`` (top module ``core``)."""
    return verilog.convert(core_design(key, core), name="core", emit_src=False)


def synth_core(
    name: str,
    design: wiring.Component | Callable[[], wiring.Component] | None,
    root: str = "build/synth",
    min_words: int = MACRO_MIN_WORDS,
    text: str | None = None,
) -> dict:
    """The core flow (module docstring) for ``design`` (or a factory of it;
    or its Verilog ``text``, top ``core``) in ``root/name``; returns its
    report entry: ``cells``, ``flip_flops``,
    ``transistors``, ``gate_depth`` of the logic, ``buffers`` (per buffer),
    ``buffer_bits``, ``logic_memory_bits`` (memories left to logic) and
    ``seconds``."""

    t0 = time.time()
    work = work_dir(root, name, ("mems.json", "macros.ys", "generic_stat.json", "cmos_stat.txt", "cmos_ltp.txt"))
    top = "core"
    if text is None:
        dut = design() if callable(design) and not isinstance(design, wiring.Component) else design
        text = verilog.convert(dut, name=top, emit_src=False)
    with open(os.path.join(work, "design.v"), "w") as f:
        f.write(text)
    figures = macro_synth(work, "design.v", top, min_words, True)
    buffer_bits = sum(b["bits"] for b in figures["buffers"].values())
    return {**figures, "buffer_bits": buffer_bits, "seconds": round(time.time() - t0, 1)}


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


#: how the report counts a buffer read combinationally (``read: "async"``)
ASYNC_READ_NOTE = (
    "a buffer read combinationally (read: async) is counted as an SRAM macro of the same bits, as a macro with "
    "a registered read would be built: its bits at the SRAM bit cell, no logic for its storage; on a chip its "
    "read would take one more cycle, which the RTL and the cycle counts do not include"
)


def _overheads(k: dict, d: dict, paper: dict, per_array: float, per_transistor: float | None) -> dict:
    """Core entry ``k``'s area overheads over the dense core's ``d``."""
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
    return over


def _with_area(entry: dict, data: dict) -> dict:
    """A core entry with ``area_mm2`` and its combinationally read buffers
    named (``async_read_buffers``, ``async_read_bits``)."""
    async_read = sorted(n for n, b in entry.get("buffers", {}).items() if b.get("read") == "async")
    return dict(
        entry,
        area_mm2=core_area(entry, data=data),
        async_read_buffers=async_read,
        async_read_bits=sum(entry["buffers"][n]["bits"] for n in async_read),
    )


def core_report(entries: dict, designs: dict | None = None, data_path=None) -> dict:
    """``report["core"]``: each core's entry with its ``area_mm2``, and
    every Kaleido core's area overhead over the dense one under
    ``overhead_<key>``:

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

    Without the dense core there are no overheads (``error``); a core of
    :data:`DEFAULT_CORES` without a result is named in ``missing``."""
    data = _area_data(data_path)
    out: dict = {k: _with_area(e, data) for k, e in entries.items()}
    missing = [k for k in DEFAULT_CORES if k not in entries]
    if missing:
        out["missing"] = missing
    if "dense" not in entries or len(entries) < 2:
        out["error"] = f"cores without a synthesis result: {missing}"
        return out
    paper = data["paper"]
    per_array = paper["buffers_mm2"] / paper["arrays"]
    dense_array = (designs or {}).get("baseline_array", {}).get("transistors")
    per_transistor = None
    if dense_array:
        paper_dense_array = (paper["arrays_mm2"] - paper["arrays_overhead"] * paper["total_mm2"]) / paper["arrays"]
        per_transistor = paper_dense_array / dense_array
    for key in entries:
        if key != "dense":
            out[_overhead_key(key)] = _overheads(out[key], out["dense"], paper, per_array, per_transistor)
    out["assumptions"] = {
        "macro_min_words": MACRO_MIN_WORDS,
        "regfile_min_words": REGFILE_MIN_WORDS,
        "logic": data["logic"]["source"],
        "sram": data["sram"]["source"],
        "paper_buffer_mm2_per_array": per_array,
        "async_read_buffers": ASYNC_READ_NOTE,
    }
    if per_transistor is not None:
        out["assumptions"]["calibrated_mm2_per_transistor"] = per_transistor
    return out


def _core_rows(core: dict) -> list[str]:
    lines = [
        "| core | method | logic cells | flip-flops | transistors | gate depth | buffers | buffer bits | "
        "of them read async | logic mm^2 | buffers mm^2 | total mm^2 |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for key in CORE_VARIANTS:
        e = core.get(key)
        if e is None:
            continue
        a = e["area_mm2"]
        lines.append(
            f"| {key} | {e.get('method', 'flattened')} | {e['cells']:,} | {e['flip_flops']:,} | "
            f"{e['transistors']:,} | {e['gate_depth']} | {len(e['buffers'])} | {e['buffer_bits']:,} | "
            f"{e.get('async_read_bits', 0):,} | {a['logic']:.4f} | {a['buffers']:.4f} | {a['total']:.4f} |"
        )
    return lines


def _overhead_rows(core: dict) -> list[str]:
    keys = [k for k in CORE_VARIANTS if k != "dense" and _overhead_key(k) in core]
    if not keys:
        return []
    over = [core[_overhead_key(k)] for k in keys]

    def row(label: str, field: str) -> str:
        return f"| {label} | " + " | ".join(f"{o[field]:.1%}" for o in over) + " |"

    return [
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


#: a part gets its own row in :func:`parts_rows` from this share of some core's logic
PART_MIN_SHARE = 0.02


def parts_rows(core: dict, min_share: float = PART_MIN_SHARE) -> list[str]:
    """Markdown lines: where each hierarchical core's logic goes, in
    transistors per part (:func:`kaleido.synth.hier.part_name`, instances
    in brackets); parts below ``min_share`` of every core's logic are
    summed in one row."""
    keys = [k for k in CORE_VARIANTS if "parts" in core.get(k, {})]
    if not keys:
        return []
    big = [
        p
        for p in dict.fromkeys(p for k in keys for p in core[k]["parts"])
        if any(core[k]["parts"].get(p, {}).get("transistors", 0) >= min_share * core[k]["transistors"] for k in keys)
    ]
    big.sort(key=lambda p: -max(core[k]["parts"].get(p, {}).get("transistors", 0) for k in keys))

    def cell(k: str, p: str) -> str:
        e = core[k]["parts"].get(p)
        return "" if e is None else f"{e['transistors']:,} ({e['instances']})"

    def rest(k: str) -> str:
        return f"{sum(e['transistors'] for p, e in core[k]['parts'].items() if p not in big):,}"

    return [
        "",
        f"Where each core's logic goes: transistors of each part's own logic (instances), parts of at least "
        f"{min_share:.0%} of some core's logic (`make synth`'s per-module figures):",
        "",
        "| part | " + " | ".join(keys) + " |",
        "|---|" + "---|" * len(keys),
        *(f"| `{p}` | " + " | ".join(cell(k, p) for k in keys) + " |" for p in big),
        "| every other part | " + " | ".join(rest(k) for k in keys) + " |",
        "| **total** | " + " | ".join(f"**{core[k]['transistors']:,}**" for k in keys) + " |",
    ]


def core_table(report: dict) -> list[str]:
    """Markdown lines of ``report["core"]`` (empty without it): each core,
    its overheads over the dense core, and how buffers read
    combinationally are counted."""
    core = report.get("core")
    if not core:
        return []
    lines = _core_rows(core) + _overhead_rows(core) + parts_rows(core)
    if any(core.get(k, {}).get("async_read_bits") for k in CORE_VARIANTS):
        lines += ["", f"Buffers: {ASYNC_READ_NOTE}."]
    if "error" in core:
        lines += ["", f"Core comparison incomplete: {core['error']}."]
    return lines


class CoreRun:
    """The cores of ``keys`` (:data:`CORE_VARIANTS`) synthesized in
    ``pool``: each core elaborated in a worker, then every distinct module
    of it (:mod:`kaleido.synth.hier`) not in ``cache`` and not already
    submitted by another core, largest first; a core of ``flatten`` goes
    whole through :func:`synth_core` instead (``synth -flatten``).
    :meth:`collect` waits and sums."""

    def __init__(
        self,
        keys: tuple,
        root: str,
        pool,
        cache,
        flatten: tuple = (),
        core: CoreConfig | None = None,
        verilog: dict[str, str] | None = None,
    ):
        from .hier import FLOW_ID

        for key in () if verilog else keys:
            if key not in CORE_VARIANTS:
                raise ValueError(f"unknown core {key!r}; known: {sorted(CORE_VARIANTS)}")
        self.root, self.pool, self.cache, self.core = root, pool, cache, core or CoreConfig()
        self.salt = (FLOW_ID, tool_version("yosys"), f"{MACRO_MIN_WORDS}/{REGFILE_MIN_WORDS}", LOGIC_STEPS)
        self.flat = {k: pool.submit(flat_core, k, root, self.salt, self.core) for k in flatten}
        if verilog is not None:  # designs given as Verilog (any top), not cores to elaborate
            self.elab = {k: _Done(text) for k, text in verilog.items()}
        else:
            self.elab = {k: pool.submit(core_verilog, k, self.core) for k in keys if k not in flatten}
        self.jobs: dict = {}  # module hash -> future or cached result
        self.done: dict = {}  # key -> (Verilog, modules, hashes)
        self.flat_hits = 0  # flattened cores taken from the cache
        self.failures: dict = {}

    def submit(self) -> None:
        """Wait for the elaborations and submit every distinct module not
        cached, the largest first over all cores."""
        from .hier import cache_key, module_hashes, module_source, split_modules, synth_module

        todo = {}
        for key, fut in self.elab.items():
            try:
                text = fut.result()
                mods = split_modules(text)
                self.done[key] = (text, mods, module_hashes(mods))
            except Exception as err:
                self.failures[f"core:{key}"] = failure_entry(err)
                continue
            for name, h in self.done[key][2].items():
                if h not in self.jobs and h not in todo:
                    cached = self.cache.get(cache_key(*self.salt, h))
                    if cached is not None:
                        self.jobs[h] = cached
                    else:
                        todo[h] = (mods, name)
        for h, (mods, name) in sorted(todo.items(), key=lambda kv: -_size(kv[1][0][kv[1][1]])):
            work = os.path.join(self.root, "modules", h[:16])
            children = sorted(set(mods[name].children))
            self.jobs[h] = self.pool.submit(synth_module, module_source(mods, name), work, children)
            self.jobs[h].add_done_callback(functools.partial(self._store, h))  # kept even if the run stops

    def _store(self, h: str, fut) -> None:
        """Cache a finished module's figures (not a failure)."""
        from .hier import cache_key

        if not fut.cancelled() and fut.exception() is None:
            self.cache.put(cache_key(*self.salt, h), fut.result())

    def _result(self, h: str, name: str) -> dict:
        job = self.jobs[h]
        if isinstance(job, dict):
            return job
        try:
            value = job.result()
        except Exception as err:
            err.module = name  # type: ignore[attr-defined]
            raise
        self.jobs[h] = value
        return value

    def collect(self, progress: Callable[[str], None] = lambda s: None) -> dict:
        """``{"entries": {key: entry}, "failures": {"core:<key>": ...}}``."""

        if not self.done and self.elab:
            self.submit()
        entries = {}
        for key, (text, mods, hashes) in self.done.items():
            try:
                entries[key] = self._entry(text, mods, hashes)
            except Exception as err:
                self.failures[f"core:{key}"] = dict(failure_entry(err), module=getattr(err, "module", None))
            else:
                progress(f"core {key}: {entries[key]['transistors']:,} transistors (hierarchical)")
        for key, fut in self.flat.items():
            try:
                entry = fut.result()
                self.flat_hits += entry.pop("cached")
                entries[key] = dict(entry, method="flattened")
            except Exception as err:
                self.failures[f"core:{key}"] = failure_entry(err)
        return {"entries": entries, "failures": dict(self.failures)}

    def _entry(self, text: str, mods: dict, hashes: dict) -> dict:
        from .hier import instance_counts, sum_hierarchy, top_module

        figures = {name: self._result(hashes[name], name) for name in mods}
        top = top_module(mods)
        counts = instance_counts(mods, top)
        distinct = {hashes[n]: n for n in counts}
        return {
            **sum_hierarchy(mods, top, figures),
            "method": "hierarchical",
            "verilog_sha256": hashlib.sha256(text.encode()).hexdigest(),
            "modules": sum(counts.values()),
            "distinct_modules": len(distinct),
            "module_seconds": round(sum(figures[n].get("seconds", 0.0) for n in distinct.values()), 1),
        }


#: the flattened core flow's id in its cache key (beside the module flow's salt)
FLAT_FLOW_ID = "core-flat-1"


def flat_core(key: str, root: str, salt: tuple, core: CoreConfig | None = None) -> dict:
    """Core ``key`` through :func:`synth_core` (``synth -flatten``), or its
    cached entry (``root/cache``, keyed by ``salt`` and the hash of its
    Verilog); the entry has ``verilog_sha256`` and ``cached``."""
    from .hier import Cache, cache_key

    text = core_verilog(key, core)
    sha = hashlib.sha256(text.encode()).hexdigest()
    cache = Cache(os.path.join(root, "cache"))
    cache_id = cache_key(FLAT_FLOW_ID, *salt, sha)
    entry = cache.get(cache_id)
    if entry is None:
        entry = synth_core(f"{key}_core_flat", None, root, text=text)
        cache.put(cache_id, entry)
    return dict(entry, verilog_sha256=sha, cached=cache.hits > 0)


class _Done:
    """A finished job's stand-in (``result()``)."""

    def __init__(self, value):
        self.value = value

    def result(self):
        return self.value


def _size(mod) -> int:
    return sum(len(x) for x in mod.lines)
