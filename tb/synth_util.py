"""Helpers of the synthesis tests."""

from __future__ import annotations

import os

from amaranth import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

__all__ = ["workdir", "TwoMemories", "Leaf", "TwoLeaves"]


def workdir(tmp_path, name: str) -> str:
    """A work directory relative to the cwd (YoWASP tools cannot open
    absolute /tmp paths)."""
    root = os.path.relpath(tmp_path / name)
    if root.startswith(".."):
        root = os.path.join("build", "test_synth", os.path.basename(str(tmp_path)), name)
    return root


class TwoMemories(wiring.Component):
    """A 64-word buffer (a macro) written and read through counters, an
    8-word register file (logic) and an adder on their outputs."""

    def __init__(self):
        super().__init__({"din": In(16), "we": In(1), "dout": Out(17)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.big = big = Memory(shape=16, depth=64, init=[])
        m.submodules.small = small = Memory(shape=8, depth=8, init=[])
        waddr, raddr = Signal(6), Signal(6)
        bw, br = big.write_port(), big.read_port()
        sw, sr = small.write_port(), small.read_port(domain="comb")
        m.d.sync += [raddr.eq(raddr + 3)]
        with m.If(self.we):
            m.d.sync += waddr.eq(waddr + 1)
        m.d.comb += [
            bw.addr.eq(waddr),
            bw.data.eq(self.din),
            bw.en.eq(self.we),
            br.addr.eq(raddr),
            sw.addr.eq(waddr[:3]),
            sw.data.eq(self.din[:8]),
            sw.en.eq(self.we),
            sr.addr.eq(raddr[:3]),
            self.dout.eq(br.data + sr.data),
        ]
        return m


class Leaf(wiring.Component):
    """A registered 8-bit adder; with ``extra`` its sum goes through that
    many more 9-bit registers (the same ports)."""

    def __init__(self, extra: int = 0):
        self.extra = extra
        super().__init__({"a": In(8), "b": In(8), "y": Out(9)})

    def elaborate(self, platform):
        m = Module()
        value = self.a + self.b
        for k in range(self.extra):
            stage = Signal(9, name=f"stage{k}")
            m.d.sync += stage.eq(value)
            value = stage
        m.d.sync += self.y.eq(value)
        return m


class TwoLeaves(wiring.Component):
    """Two instances of :class:`Leaf` on their own inputs and a register on
    their sum: a two-level design nothing can be optimised across. The top
    module's own text does not depend on ``extra`` (the right leaf's)."""

    def __init__(self, extra: int = 0):
        self.extra = extra
        super().__init__({"a": In(8), "b": In(8), "c": In(8), "d": In(8), "y": Out(10)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.left = left = Leaf()
        m.submodules.right = right = Leaf(self.extra)
        m.d.comb += [left.a.eq(self.a), left.b.eq(self.b), right.a.eq(self.c), right.b.eq(self.d)]
        m.d.sync += self.y.eq(left.y + right.y)
        return m
