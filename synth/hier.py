"""Hierarchical synthesis: each distinct module once, the hierarchy summed
(issue 42, item 3; docs/SYNTH.md "Hierarchical synthesis").

Amaranth writes one Verilog module per instance (sixteen PEs are sixteen
modules with the same body). :func:`split_modules` cuts an emitted design
into its modules; :func:`module_hashes` gives each a hash of its own
Verilog with the names Amaranth and Yosys generate (``\\port$55283$0``,
``\\$12``) renamed in order of appearance and each instantiated module
replaced by its own hash, so equal modules have equal hashes, in one core
or across cores. Each distinct module goes once through
:func:`synth_module`: its children are black boxes (``(* blackbox *)``
stubs with their ports only), its buffers become ``sram_macro`` cells as in
:mod:`kaleido.synth.core`, and its own cells, flip-flops, transistors and
buffers are cached under the hash (:class:`Cache`). :func:`sum_hierarchy`
adds every instance's figures from the top down, and by part
(:func:`part_name`: the instance path with its indices starred), where a
core's logic goes.

What this gives up against ``synth -flatten``: optimisation across module
boundaries (a constant input of an instance, an output nobody reads). The
gap on one core is measured and stated in docs/SYNTH.md.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import time

__all__ = [
    "VModule",
    "split_modules",
    "module_hashes",
    "instance_counts",
    "top_module",
    "module_source",
    "interface",
    "Cache",
    "synth_module",
    "sum_hierarchy",
    "part_name",
    "FLOW_ID",
]

#: changes whenever the per-module flow changes what it measures (a cached
#: result of another flow is never reused); the tool version is added to it
FLOW_ID = "hier-1"

_INSTANCE = re.compile(r"^ {2}(\\\S+|[A-Za-z_][\w$]*) +(\\\S+ |[A-Za-z_][\w$]*) ?\($")
_GENERATED = re.compile(r"\\\S*\$\S*|\b[A-Za-z_]\w*\$[\w$]*")
_PORT = re.compile(r"^\s*(input|output|inout)\b")


@dataclasses.dataclass
class VModule:
    """One module of an emitted design: its name, its lines (header to
    ``endmodule``) and the modules it instantiates, once per instance."""

    name: str
    lines: list[str]
    children: list[str]


def _module_name(header: str) -> str:
    rest = header[len("module ") :]
    return rest.split(" ")[0] if rest.startswith("\\") else rest.split("(")[0].strip()


def split_modules(text: str) -> dict[str, VModule]:
    """The modules of Verilog ``text`` as written by Amaranth (Yosys's
    ``write_verilog``: ``module`` and ``endmodule`` at the line start, a
    long header wrapped (joined here into the first line), instances as
    ``  <type> <name> (``), attributes before a module dropped."""
    mods: dict[str, VModule] = {}
    current: VModule | None = None
    header = False  # in a header Yosys wrapped over lines
    for line in text.splitlines():
        if current is None:
            if line.startswith("module "):
                current = VModule(_module_name(line), [line], [])
                header = not line.rstrip().endswith(");")
            continue
        if header:
            current.lines[0] += line
            header = not line.rstrip().endswith(");")
            continue
        current.lines.append(line)
        if line.startswith("endmodule"):
            mods[current.name] = current
            current = None
    for mod in mods.values():
        for line in mod.lines[1:]:
            m = _INSTANCE.match(line)
            if m and m.group(1) in mods:
                mod.children.append(m.group(1))
    return mods


def _canonical(mod: VModule, hashes: dict[str, str]) -> str:
    """``mod``'s text with its own name, its children's names (their
    hashes) and every generated name (in order of appearance in the body)
    replaced, and its port list sorted (Amaranth orders it by no rule)."""
    names: dict[str, str] = {}

    def rename(m: re.Match) -> str:
        return names.setdefault(m.group(0), f"$g{len(names)}")

    out = []
    for line in mod.lines[1:]:
        m = _INSTANCE.match(line)
        if m and m.group(1) in hashes:
            line = f"  <{hashes[m.group(1)]}> {m.group(2)}("
        out.append(_GENERATED.sub(rename, line))
    head = mod.lines[0][len("module ") + len(mod.name) :]
    ports = head[head.index("(") + 1 : head.rindex(")")].split(",")
    ports = sorted(_GENERATED.sub(rename, p.strip()) for p in ports)
    return "\n".join([f"module <self> ({', '.join(ports)});", *out])


def module_hashes(mods: dict[str, VModule]) -> dict[str, str]:
    """sha256 of every module's canonical text (children first)."""
    hashes: dict[str, str] = {}

    def visit(name: str) -> str:
        if name not in hashes:
            for child in mods[name].children:
                visit(child)
            text = _canonical(mods[name], hashes)
            hashes[name] = hashlib.sha256(text.encode()).hexdigest()
        return hashes[name]

    for name in mods:
        visit(name)
    return hashes


def top_module(mods: dict[str, VModule]) -> str:
    """The one module no other instantiates."""
    used = {c for m in mods.values() for c in m.children}
    tops = [n for n in mods if n not in used]
    if len(tops) != 1:
        raise ValueError(f"expected one top module, found {tops}")
    return tops[0]


def instance_counts(mods: dict[str, VModule], top: str) -> dict[str, int]:
    """How many instances of each module the hierarchy under ``top`` has
    (``top``: 1)."""
    counts: dict[str, int] = {}

    def visit(name: str, n: int) -> None:
        counts[name] = counts.get(name, 0) + n
        for child in set(mods[name].children):
            visit(child, n * mods[name].children.count(child))

    visit(top, 1)
    return counts


#: the name a module is synthesized under
TOP = "kaleido_top"


def interface(mod: VModule) -> list[str]:
    """``mod``'s header and port declarations: a stub's start."""
    return [mod.lines[0], *[x for x in mod.lines[1:] if _PORT.match(x)]]


def module_source(mods: dict[str, VModule], name: str) -> str:
    """Verilog of module ``name`` renamed :data:`TOP`, with each module it
    instantiates as a black-box stub (its header and port declarations)."""
    out = []
    for child in dict.fromkeys(mods[name].children):
        out += ["(* blackbox *)", *interface(mods[child]), "endmodule", ""]
    own = mods[name].lines
    out += [f"module {TOP} " + own[0][len("module ") + len(name) :].lstrip(), *own[1:], ""]
    return "\n".join(out)


class Cache:
    """Results by key, one JSON file each under ``root`` (written whole, by
    rename, so a reader never sees half a file); counts its hits and
    misses."""

    def __init__(self, root: str):
        self.root = root
        self.hits = 0
        self.misses = 0
        os.makedirs(root, exist_ok=True)

    def path(self, key: str) -> str:
        return os.path.join(self.root, f"{key}.json")

    def get(self, key: str) -> dict | None:
        try:
            with open(self.path(key)) as f:
                value = json.load(f)
        except (OSError, ValueError):
            self.misses += 1
            return None
        self.hits += 1
        return value

    def put(self, key: str, value: dict) -> None:
        tmp = f"{self.path(key)}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            json.dump(value, f)
        os.replace(tmp, self.path(key))


def cache_key(*parts: str) -> str:
    """sha256 of the parts (the flow's id, tool versions, a module hash)."""
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def synth_module(source: str, work: str, children: list[str]) -> dict:
    """One module's own figures (:data:`TOP` in ``source``, its children
    black boxes) through the core flow's steps (:mod:`kaleido.synth.core`):
    ``cells`` and ``flip_flops`` without the children's instances and the
    macros, ``transistors``, ``gate_depth``, ``buffers``,
    ``logic_memory_bits``, ``seconds``."""
    from .memories import MACRO_MIN_WORDS, macro_synth
    from .tools import work_dir

    t0 = time.time()
    work_dir(os.path.dirname(work) or ".", os.path.basename(work), ("mems.json", "macros.ys", "generic_stat.json"))
    with open(os.path.join(work, "module.v"), "w") as f:
        f.write(source)
    figures = macro_synth(work, "module.v", TOP, MACRO_MIN_WORDS, False, children)
    return {**figures, "seconds": round(time.time() - t0, 1)}


def _instance_paths(mods: dict[str, VModule], top: str) -> list[tuple[str, str]]:
    """``(path, module)`` of every instance under ``top`` (``""``: top)."""
    out = [("", top)]
    for path, name in out:
        for line in mods[name].lines[1:]:
            m = _INSTANCE.match(line)
            if m and m.group(1) in mods:
                inst = m.group(2).strip().lstrip("\\")
                out.append((f"{path}.{inst}" if path else inst, m.group(1)))
    return out


def part_name(path: str) -> str:
    """The part an instance belongs to: its path with every index starred
    (``engine.arrays.dispatcher12.matcher`` ->
    ``engine.arrays.dispatcher*.matcher``, ``pe_1_2`` -> ``pe_*_*``), so the
    copies of one block add up; ``(top)`` for the top module's own logic."""
    return re.sub(r"\d+", "*", path) if path else "(top)"


def sum_hierarchy(mods: dict[str, VModule], top: str, figures: dict[str, dict]) -> dict:
    """The figures of the design under ``top`` from each module's own
    (``figures``: module name -> :func:`synth_module` entry): cells,
    flip-flops, transistors and buffer bits summed over every instance;
    ``gate_depth`` the deepest module's (paths across modules are not
    followed); ``buffers`` by instance path; ``parts``: per
    :func:`part_name`, its instances and their own transistors and
    flip-flops (children not included, so the parts add up to the total)."""
    total = {"cells": 0, "flip_flops": 0, "transistors": 0, "logic_memory_bits": 0}
    buffers: dict[str, dict] = {}
    parts: dict[str, dict] = {}
    for path, name in _instance_paths(mods, top):
        own = figures[name]
        for k in total:
            total[k] += own[k]
        for b, entry in own["buffers"].items():
            buffers[f"{path}.{b}" if path else b] = entry
        part = parts.setdefault(part_name(path), {"instances": 0, "transistors": 0, "flip_flops": 0})
        part["instances"] += 1
        part["transistors"] += own["transistors"]
        part["flip_flops"] += own["flip_flops"]
    return {
        **total,
        "parts": dict(sorted(parts.items(), key=lambda kv: -kv[1]["transistors"])),
        "gate_depth": max(figures[n]["gate_depth"] for n in instance_counts(mods, top)),
        "buffers": buffers,
        "buffer_bits": sum(b["bits"] for b in buffers.values()),
    }
