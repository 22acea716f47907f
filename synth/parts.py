"""A block's Fmax by parts (issue 42, item 3; docs/SYNTH.md "Fmax by
parts"): instead of placing and routing the whole flattened block, each
distinct module of its hierarchy is placed and routed once, with a
register on every port and every child replaced by a register stub (its
input bits into kept flip-flops through one level of logic, every output
bit from a flip-flop). The block's
Fmax is the slowest part's; a part is cached by its module's hash, so a
module shared by several blocks is placed and routed once.

This is the hierarchical flow's assumption applied to timing: a path that
crosses a module boundary without a register is cut there (each side ends
or starts at a register), and a small part places more compactly than the
same module in a large block, so the figure is an estimate, not the
flattened one; the gap on every block is measured and stated in
docs/SYNTH.md. It works on Amaranth's Verilog as
:func:`kaleido.synth.hier.split_modules` reads it.
"""

from __future__ import annotations

import dataclasses
import re

from .hier import VModule, interface, module_hashes, split_modules, top_module

__all__ = ["SINK_FAN_IN", "Port", "Part", "ports", "wrapper", "register_stub", "parts", "WRAPPER"]

#: the module name of every part's wrapper (the place-and-route top)
WRAPPER = "wrapped"

_DECL = re.compile(r"^\s*(input|output|inout)\s+(?:signed\s+)?(?:\[(\d+):(\d+)\]\s+)?(\\\S+ |[A-Za-z_][\w$]*)\s*;")

#: ports passed through unregistered, as :class:`~kaleido.synth.flow.RegisteredIO` does
_DOMAIN = ("clk", "rst")


@dataclasses.dataclass(frozen=True)
class Port:
    """One port of a module: its direction, width and Verilog name (an
    escaped name keeps its trailing space)."""

    direction: str
    width: int
    name: str


def ports(mod: VModule) -> list[Port]:
    """The ports ``mod`` declares, in order of declaration."""
    out = []
    for line in mod.lines[1:]:
        m = _DECL.match(line)
        if m:
            if m.group(1) == "inout":
                raise ValueError(f"module {mod.name}: inout port {m.group(4).strip()} cannot be registered")
            width = int(m.group(2)) - int(m.group(3)) + 1 if m.group(2) is not None else 1
            out.append(Port(m.group(1), width, m.group(4)))
    if not any(p.name == "clk" for p in out):
        raise ValueError(f"module {mod.name} has no clk port: nothing to register its ports on")
    return out


def _range(width: int) -> str:
    return f"[{width - 1}:0] " if width > 1 else ""


def wrapper(mod: VModule) -> list[str]:
    """Verilog of :data:`WRAPPER`: ``mod`` with a register on every input
    and every output bit (``clk`` and ``rst`` passed through)."""
    decls, body, conns = [], [], []
    for i, p in enumerate(ports(mod)):
        decls.append(f"  {p.direction} {_range(p.width)}{p.name};")
        if p.name in _DOMAIN:
            conns.append(f"    .{p.name}({p.name})")
            continue
        body += [f"  reg {_range(p.width)}q{i};", f"  wire {_range(p.width)}w{i};"]
        if p.direction == "input":
            body.append(f"  always @(posedge clk) q{i} <= {p.name};")
            conns.append(f"    .{p.name}(q{i})")
        else:
            body += [f"  always @(posedge clk) q{i} <= w{i};", f"  assign {p.name} = q{i};"]
            conns.append(f"    .{p.name}(w{i})")
    names = ", ".join(p.name for p in ports(mod))
    inst = [f"  {mod.name} inner (", ",\n".join(conns), "  );"]
    return [f"module {WRAPPER}({names});", *decls, *body, *inst, "endmodule"]


#: input bits a stub's sink flip-flop takes (through one LUT4, as a
#: child's first level of logic would): a quarter of the flip-flops to place
SINK_FAN_IN = 4


def register_stub(mod: VModule) -> list[str]:
    """Verilog of a module with ``mod``'s name and ports: every input bit
    goes, in groups of :data:`SINK_FAN_IN` through one XOR, into a kept
    flip-flop (``sink``), and every output bit comes from a flip-flop fed
    by a sink bit: what the parent sees of a child whose ports are
    registered behind one level of logic. The sink's process is kept, so
    two stubs on the same inputs stay two sets of flip-flops and the
    parent's fan-out to both is kept."""
    ps = ports(mod)
    ins = [p for p in ps if p.direction == "input" and p.name not in _DOMAIN]
    outs = [p for p in ps if p.direction == "output"]
    bits = sum(p.width for p in ins)
    width = -(-bits // SINK_FAN_IN)
    lines = interface(mod)
    if width:
        data = "{" + ", ".join(p.name for p in reversed(ins)) + "}"
        lines += [f"  wire {_range(bits)}data = {data};", f"  (* keep *) reg {_range(width)}sink;"]
        groups = [f"^data[{min(bits, (k + 1) * SINK_FAN_IN) - 1}:{k * SINK_FAN_IN}]" for k in reversed(range(width))]
        lines.append("  (* keep *) always @(posedge clk) sink <= {" + ", ".join(groups) + "};")
    for i, p in enumerate(outs):
        src = "{" + ", ".join(f"sink[{(i + b) % width}]" for b in reversed(range(p.width))) + "}" if width else "0"
        lines += [f"  reg {_range(p.width)}o{i};", f"  (* keep *) always @(posedge clk) o{i} <= {src};"]
        lines.append(f"  assign {p.name} = o{i};")
    return [*lines, "endmodule"]


def _subtree(mods: dict[str, VModule], name: str) -> list[str]:
    """``name`` and every module under it, each once."""
    seen: dict[str, None] = {}

    def visit(n: str) -> None:
        if n not in seen:
            seen[n] = None
            for c in mods[n].children:
                visit(c)

    visit(name)
    return list(seen)


def _clocked(mod: VModule) -> bool:
    return any((m := _DECL.match(x)) is not None and m.group(4) == "clk" for x in mod.lines[1:])


@dataclasses.dataclass(frozen=True)
class Part:
    """One part to place and route: the module it is (``name``, as
    emitted), its hash (:func:`~kaleido.synth.hier.module_hashes`: equal
    modules, in one design or across designs, are one part) and its whole
    Verilog source, :data:`WRAPPER` on top."""

    name: str
    hash: str
    source: str


def _part_source(mods: dict[str, VModule], name: str) -> str:
    """Module ``name``, each clocked child a :func:`register_stub`, each
    child without a clock whole (its subtree), under its :func:`wrapper`."""
    lines = list(mods[name].lines)
    for child in dict.fromkeys(mods[name].children):
        if _clocked(mods[child]):
            lines += register_stub(mods[child])
        else:
            lines += [x for n in _subtree(mods, child) for x in mods[n].lines]
    return "\n".join([*lines, *wrapper(mods[name])]) + "\n"


def parts(text: str) -> list[Part]:
    """The parts of Verilog ``text`` (one top module, clocked): every
    distinct clocked module of its hierarchy once, the top first, each
    with its clocked children as register stubs. A module without a clock
    is no part of its own: it stays inside its parent's."""
    mods = split_modules(text)
    top = top_module(mods)
    if not _clocked(mods[top]):
        raise ValueError(f"module {top} has no clk port: its Fmax cannot be measured")
    hashes = module_hashes(mods)
    out: dict[str, Part] = {}

    def visit(name: str) -> None:
        if hashes[name] in out or not _clocked(mods[name]):
            return
        out[hashes[name]] = Part(name, hashes[name], _part_source(mods, name))
        for child in mods[name].children:
            visit(child)

    visit(top)
    return list(out.values())
