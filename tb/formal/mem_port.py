"""The memory port's harnesses: the tile loader (:class:`TileLoaderFlow`,
white box; :class:`LoadResponse`, on the memory model) and the memory model
(:class:`MemoryModelFlow`).
"""

from __future__ import annotations

from typing import Any

from amaranth import Array, Const, Module, Signal
from amaranth.hdl import Assert, Assume, Cover, ResetSignal
from amaranth.lib import wiring
from amaranth.lib.stream import Signature as StreamSignature
from amaranth.lib.wiring import In

from .base import (
    StreamPorts,
    stream_rule,
)


class TileLoaderFlow(StreamPorts):
    """The tile loader (white box for its counters, which the invariants
    tie to the harness's). Assumed: ``cmd`` keeps the stream rule; a
    response comes only for a request taken and not yet answered (the
    memory's contract). Proved: the stream rule on ``q``; ``cmd.ready``
    exactly while no load is in progress; the ``k``-th request of a load of
    ``n`` rows reads beat ``base + k``, and there are exactly
    ``n * beats_per_word`` of them; every response is written at once
    (``w.en``), the ``k``-th to word ``offset + k // beats_per_word``, lane
    ``k mod beats_per_word``, with its data; ``done`` exactly with the last
    (a load of 0 rows is no load). Covers: a whole load, a stalled request,
    a response in the cycle of a request."""

    white_box = True
    takes_all = ("r",)

    def flow(self, m: Module, dut: Any) -> None:
        words, B, _ = dut.buffer_layout
        r = self.internal
        cmd = dut.cmd.payload
        c_fire, q_fire = dut.cmd.valid & dut.cmd.ready, dut.q.valid & dut.q.ready
        busy = Signal(name="ref_busy")
        base = Signal.like(cmd.base, name="ref_base")
        offset = Signal.like(cmd.offset, name="ref_offset")
        beats = Signal(range(words * B + 1), name="ref_beats")
        asked = Signal(range(words * B + 1), name="ref_asked")
        got = Signal(range(words * B + 1), name="ref_got")
        m.d.comb += Assume(~dut.r.valid | (asked != got))
        with m.If(c_fire):
            m.d.sync += [busy.eq(cmd.count != 0), base.eq(cmd.base), offset.eq(cmd.offset), beats.eq(cmd.count * B)]
            m.d.sync += [asked.eq(0), got.eq(0)]
        m.d.comb += Assert(dut.cmd.ready == ~busy)
        with m.If(~busy):
            m.d.comb += [Assert(~dut.q.valid), Assert(~dut.w.en), Assert(~dut.done)]
        with m.Else():
            m.d.comb += [Assert(asked <= beats), Assert(got <= asked), Assert(got < beats)]
            m.d.comb += Assert(dut.q.valid == (asked < beats))
            with m.If(dut.q.valid):
                m.d.comb += Assert(dut.q.payload.addr == (base + asked)[: len(base)])
            with m.If(q_fire):
                m.d.sync += asked.eq(asked + 1)
            m.d.comb += Assert(dut.w.en == dut.r.valid)
            with m.If(dut.r.valid):
                word = Signal.like(offset, name="ref_word")
                m.d.comb += word.eq(offset + got // B)
                m.d.comb += [Assert(dut.w.addr == word), Assert(dut.w.lane == got % B)]
                m.d.comb += [Assert(dut.w.data == dut.r.payload.data), Assert(dut.done == (got + 1 == beats))]
                m.d.sync += got.eq(got + 1)
                with m.If(got + 1 == beats):
                    m.d.sync += busy.eq(0)
            with m.Else():
                m.d.comb += Assert(~dut.done)
        # invariants: the loader's counters are the harness's
        m.d.comb += Assert(r["busy"] == busy)
        with m.If(busy):
            m.d.comb += [Assert(r["issued"] == asked), Assert(r["got"] == got), Assert(r["beats"] == beats)]
            m.d.comb += [Assert(r["base"] == base)]
            m.d.comb += [Assert(r["word"] == (offset + got // B)[: len(r["word"])])]
            if B > 1:
                m.d.comb += Assert(r["lane"] == got % B)
        m.d.comb += [
            Cover(dut.done & (beats == words * B), "whole_buffer_loaded"),
            Cover(q_fire & dut.r.valid, "request_beside_response"),
        ]


class MemoryModelFlow(StreamPorts):
    """The memory model (its consumer takes every response: ``r.ready``
    assumed high): ``q.ready`` always; a response exactly ``latency``
    cycles after each request, none otherwise; its data is the initial
    contents at the request's address (a reference table). Covers: back to
    back responses."""

    takes_all = ("q",)

    def __init__(self, dut: wiring.Component, init: list[int]):
        self._init = init
        super().__init__(dut, sinks=("r",))

    def flow(self, m: Module, dut: Any) -> None:
        L = dut.latency
        valid, addr = dut.q.valid, dut.q.payload.addr
        for k in range(L):
            v, a = Signal(name=f"asked{k}"), Signal.like(addr, name=f"asked{k}_addr")
            m.d.sync += [v.eq(valid), a.eq(addr)]
            valid, addr = v, a
        m.d.comb += Assert(dut.r.valid == valid)
        table = Array(Const(x, len(dut.r.payload.data)) for x in self._init)
        with m.If(valid & (addr < len(self._init))):
            m.d.comb += Assert(dut.r.payload.data == table[addr[: max(1, (len(self._init) - 1).bit_length())]])
        first = Signal(name="responded")
        m.d.sync += first.eq(dut.r.valid)
        m.d.comb += Cover(first & dut.r.valid, "back_to_back")


class LoadResponse(wiring.Component):
    """The tile loader on the memory model (``words`` rows of
    ``beats_per_word`` one-byte beats, a memory of ``latency``), its
    command stream free (the stream rule and at most ``words`` rows
    assumed): ``done`` comes exactly
    :func:`kaleido.model.load_cycles` cycles after a command of ``n > 0``
    rows is accepted (``n * beats_per_word`` beats), never otherwise, and a
    command of 0 rows starts nothing (bounded response, cycle for cycle
    with the model). Covers: a load of the whole buffer."""

    def __init__(self, words: int, beats_per_word: int, latency: int):
        from kaleido.hdl.mem_port import load_command_layout

        self._words, self._beats, self._latency = words, beats_per_word, latency
        super().__init__({"cmd": In(StreamSignature(load_command_layout(words)))})

    def elaborate(self, platform: Any) -> Module:
        from kaleido.hdl.mem_port import MemoryModel, TileLoader
        from kaleido.model import load_cycles

        m = Module()
        W, B, L = self._words, self._beats, self._latency
        m.submodules.loader = loader = TileLoader(W, B, 1)
        m.submodules.memory = memory = MemoryModel(1, list(range(1, W * B + 3)), L)
        wiring.connect(m, loader.q, memory.q)
        wiring.connect(m, memory.r, loader.r)
        wiring.connect(m, wiring.flipped(self.cmd), loader.cmd)
        m.d.comb += Assume(~ResetSignal())
        stream_rule(m, self.cmd, "cmd", assume=True)
        # the command's contract: at most the buffer's rows (the field holds up to 2^bits - 1)
        m.d.comb += Assume(self.cmd.payload.count <= W)
        fire = self.cmd.valid & self.cmd.ready
        longest = load_cycles(W * B, L)
        due = Signal(range(longest + 1), name="due")  # cycles until done, 0: no load
        with m.If(fire):
            cycles = Array(Const(load_cycles(n * B, L) if n else 0, range(longest + 1)) for n in range(W + 1))
            m.d.sync += due.eq(cycles[self.cmd.payload.count])
        with m.Elif(due != 0):
            m.d.sync += due.eq(due - 1)
        m.d.comb += Assert(loader.done == ((due == 1) & ~fire))
        with m.If(due != 0):
            m.d.comb += Assert(~self.cmd.ready)
        m.d.comb += Cover(loader.done & (due == 1), "load_done")
        return m
