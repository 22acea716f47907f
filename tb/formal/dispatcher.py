"""The pass dispatcher's harness (:class:`PassDispatcherFlow`: stream,
framing, payload) and the pass former's (:class:`PassFormerFlow`, against
the loop nest's batch table).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from amaranth import Array, Cat, Const, Module, Mux, Signal, Value, signed
from amaranth.hdl import Assert, Assume, Cover
from amaranth.lib import data, wiring

from kaleido.config import KaleidoConfig

from .base import (
    Harness,
    stream_rule,
)


class PassDispatcherFlow(Harness):
    """The pass dispatcher's framing: at most two passes are open (taken,
    their T3 ``last`` not yet left), so a pass in a buffer is never
    overwritten (a pass is taken only while fewer than two are open); with
    ``framing``, every beat belongs to the oldest open pass, its phases come
    T0, T1, T2, T3, one ``last`` each, and a marker (``slot`` 0) is a
    ``last``. With ``stream``, the stream rule on ``beats``. Covers: a
    DUAL_LO beat, a marker, each phase's ``last``, two passes, a pass taken
    while another's beats leave, two passes open, and a pass's first beat
    right after the previous pass's last (back to back)."""

    def __init__(
        self,
        dut: wiring.Component,
        stream: bool = True,
        framing: bool = True,
        payload: bool = False,
        config: KaleidoConfig | None = None,
    ):
        self._stream, self._framing, self._payload = stream, framing, payload
        self._cfg = config or KaleidoConfig.one_array()
        self.white_box = payload  # the payload check names the matcher's slot
        super().__init__(dut)

    def check(self, m: Module, dut: Any) -> None:
        p_fire, b_fire = dut.passes.valid & dut.passes.ready, dut.beats.valid & dut.beats.ready
        ctl = dut.beats.payload.ctl
        pass_done = b_fire & ctl.last & (ctl.phase == 3)
        open_ = Signal(2, name="passes_open")  # taken, their T3 last not yet left
        m.d.sync += open_.eq(open_ + p_fire - pass_done)
        m.d.comb += [Assert(open_ <= 2), Assert(~p_fire | (open_ < 2))]
        if self._stream:
            stream_rule(m, dut.beats, "beats")
        if self._framing:
            expect = Signal(2)
            passes = Signal(2)
            ended = Signal()  # the previous cycle's beat was a pass's last
            m.d.sync += ended.eq(pass_done)
            with m.If(b_fire & ctl.last):
                m.d.sync += expect.eq(expect + 1)
            with m.If(p_fire):
                m.d.sync += passes.eq(Mux(passes == 3, 3, passes + 1))
            with m.If(dut.beats.valid):
                m.d.comb += [Assert(open_ != 0), Assert(ctl.phase == expect)]
                with m.If(~ctl.slot):
                    m.d.comb += Assert(ctl.last)
            m.d.comb += [
                Cover(b_fire & ctl.slot & (ctl.kind == 1), "dual_lo_beat"),
                Cover(b_fire & ~ctl.slot & ctl.last, "marker"),
                Cover(pass_done & (passes == 2), "second_pass_done"),
                Cover(p_fire & dut.beats.valid, "pass_taken_while_beats_leave"),
                Cover(open_ == 2, "two_passes_open"),
                Cover(ended & b_fire & (ctl.phase == 0), "back_to_back"),
            ]
            m.d.comb += [Cover(b_fire & ctl.last & (ctl.phase == p), f"last_T{p}") for p in range(4)]
        if self._payload:
            self._check_payload(m, dut, p_fire, b_fire)

    def _check_payload(self, m: Module, dut: Any, p_fire: Value, b_fire: Value) -> None:
        """Every beat against the pass it belongs to (the oldest open pass,
        kept by the harness in a queue of two; the framing above shows the
        beat belongs to it). The beat's channels are the matcher's slot
        (white box: the dispatcher's slot register, the only place they
        exist). Per
        phase, the needed channels are a reference expression of the pass
        (spec sec. 4 through the shared tables of :mod:`kaleido.encoding`:
        per channel below ``count``, the union of the present PEs' needs,
        then the array rule). A slot's channels are needed and not issued
        before in the phase, two distinct HALF ones on a DUAL_LO slot; the
        phase's ``last`` completes exactly the needed channels (a marker:
        none needed), so no channel is lost or repeated. Its row operands
        are the channels' values of the phase's row side (anchors ``x`` in
        T0, T1, followers ``x1`` in T2, T3) and their tags, its column
        operand the column side's value (anchors in T0, T2, followers in
        T1, T3; on DUAL_LO the two low nibbles) and tags, for every row and
        column unit."""
        from kaleido.hdl.matcher import matcher_out_layout

        B = self._cfg.batch
        ctl = dut.beats.payload.ctl
        cur = self._pass_beating(m, dut, p_fire, b_fire)
        slot = data.View(matcher_out_layout(B), self.internal["slot"])
        c1, c2 = slot.c1, slot.c2
        issued = Signal(B, name="phase_issued")
        one, two = Signal(B, name="beat_one"), Signal(B, name="beat_two")
        m.d.comb += [one.eq(1 << c1), two.eq(Mux(ctl.kind, 1 << c2, 0))]
        with m.If(b_fire & ctl.last):
            m.d.sync += issued.eq(0)
        with m.Elif(b_fire & ctl.slot):
            m.d.sync += issued.eq(issued | one | two)
        needed, half = self._needed(m, cur, ctl)
        with m.If(dut.beats.valid & ~ctl.slot):
            m.d.comb += [Assert(issued == 0), Assert(needed == 0)]
        with m.If(dut.beats.valid & ctl.slot):
            m.d.comb += [Assert((one & (issued | ~needed)) == 0)]
            with m.If(ctl.kind):
                m.d.comb += [Assert(c1 != c2), Assert((two & (issued | ~needed)) == 0)]
                m.d.comb += [Assert((one & half) != 0), Assert((two & half) != 0)]
            with m.If(ctl.last):
                m.d.comb += Assert((issued | one | two) == needed)
            self._check_operands(m, dut, cur, c1, c2)

    def _pass_beating(self, m: Module, dut: Any, p_fire: Value, b_fire: Value) -> Signal:
        """The passes taken, in a queue of two; returns the oldest open one (``pass_beating``)."""
        ctl = dut.beats.payload.ctl
        taken = [Signal.like(dut.passes.payload, name=f"pass_taken{i}") for i in range(2)]
        head, tail = Signal(name="taken_head"), Signal(name="taken_tail")  # the oldest open pass, the next free
        with m.If(p_fire):
            m.d.sync += tail.eq(~tail)
        for i in range(2):
            with m.If(p_fire & (tail == i)):
                m.d.sync += taken[i].eq(dut.passes.payload)
        with m.If(b_fire & ctl.last & (ctl.phase == 3)):
            m.d.sync += head.eq(~head)
        cur = Signal.like(dut.passes.payload, name="pass_beating")
        m.d.comb += cur.eq(Mux(head, taken[1], taken[0]))
        return cur

    def _needed(self, m: Module, cur: Any, ctl: Any) -> tuple[Signal, Signal]:
        """The reference: the channels the phase needs of pass ``cur`` and the HALF ones among them."""
        from kaleido import encoding
        from kaleido.hdl.encoding import Need

        cfg = self._cfg
        R, C, B = cfg.array_rows, cfg.array_cols, cfg.batch
        pe_table = Array(
            Const(int(encoding.pe_need(p, q, k, cfg.accumulators)), 2)
            for p in range(4)
            for q in range(4)
            for k in range(4)
        )
        array_table = Array(Const(int(encoding.array_need(p, u)), 2) for p in range(4) for u in range(4))
        needed, half = Signal(B, name="phase_needed"), Signal(B, name="phase_half")
        for ch in range(B):
            union: Value = Const(0, 2)
            for r in range(R):
                for c in range(C):
                    present = cur.rows[r].present & cur.cols[c].present
                    pe = pe_table[Cat(cur.cols[c].t[ch], cur.rows[r].t[ch], ctl.phase)]
                    union = union | Mux(present, pe, 0)
            need = Mux(ch < cur.count, array_table[Cat(union, ctl.phase)], Need.SKIP)
            m.d.comb += [needed[ch].eq(need != Need.SKIP), half[ch].eq(need == Need.HALF)]
        return needed, half

    def _check_operands(self, m: Module, dut: Any, cur: Any, c1: Value, c2: Value) -> None:
        """A slot beat's row and column operands and tags: the channels' of the phase's sides of pass ``cur``."""
        R, C, B = self._cfg.array_rows, self._cfg.array_cols, self._cfg.batch
        beat = dut.beats.payload
        ctl = beat.ctl
        row_follow, col_follow = ctl.phase[1], ctl.phase[0]
        for r in range(R):
            unit = cur.rows[r]
            x = Mux(row_follow, unit.x1.as_value(), unit.x.as_value())
            xs = data.View(data.ArrayLayout(signed(8), B), x)
            port = beat.rows[r]
            m.d.comb += [Assert(port.r0 == xs[c1]), Assert(port.q0 == unit.t[c1])]
            with m.If(ctl.kind):
                m.d.comb += [Assert(port.r1 == xs[c2]), Assert(port.q1 == unit.t[c2])]
        for c in range(C):
            unit = cur.cols[c]
            x = Mux(col_follow, unit.x1.as_value(), unit.x.as_value())
            xs = data.View(data.ArrayLayout(signed(8), B), x)
            port = beat.cols[c]
            k = Mux(ctl.kind, Cat(xs[c1][:4], xs[c2][:4]), xs[c1].as_unsigned())
            m.d.comb += [Assert(port.k == k), Assert(port.k0 == unit.t[c1])]
            with m.If(ctl.kind):
                m.d.comb += Assert(port.k1 == unit.t[c2])


@dataclasses.dataclass
class _Walk:
    """:class:`PassFormerFlow`'s walk of a head's passes: the batch table's
    constants (``n`` batches, their ``groups``, ``total`` passes; per
    batch, as ``Array``s, its ``units``, ``n_groups`` and channel
    ``counts``), the walk's registers (batch ``b``, row and column group
    ``rg``, ``cg``, the ``passes`` taken) and what they tell of the pass
    offered (``taken``, ``last_of_batch``, a batch's ``first``)."""

    n: int
    groups: list[int]
    total: int
    units: Any
    n_groups: Any
    counts: Any
    b: Signal
    rg: Signal
    cg: Signal
    passes: Signal
    taken: Value
    last_of_batch: Value
    first: Value


class PassFormerFlow(Harness):
    """The pass former against the loop nest's batch table (white box for
    its walk's registers: its batch register is the batches issued, the
    last one after the head; its row and column groups are the walk's). The harness walks the passes of the head itself:
    batch ``b`` (= ``issued``), row group outer, column group inner, and
    on ``restart`` back to batch 0. Always (no assumption): the registered
    reads' last enabled address is the walk's groups in bank ``b mod 2``
    (the words offered are those of the walk's pass); a pass is offered exactly when
    ``run`` is high, batch ``b`` is scheduled and (on a batch's first
    pass) the array has ``drained`` (bounded response: latency 0); each
    unit's operands, tags, presence and tokens are the word read (zero and
    ABSENT past the batch's units); the channel count and ``first`` are
    batch ``b``'s; ``taken`` is a transfer; ``done`` pulses exactly with
    the head's last pass, when the walk has taken every pass of every
    batch exactly once (scoreboard), and nothing is offered after it.
    The memories are modelled as registered reads: a read not enabled
    keeps its word. With ``stream``, the drivers of ``run``, ``scheduled``
    and ``drained`` are assumed to hold still while a pass waits (the words
    stay by themselves: the former disables its reads), and no head
    starts (``restart``, which withdraws the pass: the engine restarts
    between heads) while a pass is offered and not taken; then the stream
    rule holds on ``passes``."""

    white_box = True

    def __init__(self, dut: wiring.Component, config: KaleidoConfig, grid: tuple[int, int, int], stream: bool = False):
        self._cfg, self._grid, self._stream = config, grid, stream
        super().__init__(dut)

    def check(self, m: Module, dut: Any) -> None:
        walk = self._walk(m, dut)
        self._check_walk(m, dut, walk)
        self._check_units(m, dut, walk)
        if self._stream:
            self._assume_held(m, dut)
        offer, b, n = dut.passes, walk.b, walk.n
        m.d.comb += [
            Cover(dut.done, "done"),
            Cover(walk.taken & ~walk.first & (walk.rg == walk.n_groups[b] - 1), "last_row_group"),
            Cover(offer.valid & ~offer.ready, "stall"),
            Cover(dut.run & (b < n) & (dut.scheduled > b) & walk.first & ~dut.drained, "waits_for_drained"),
        ]

    def _walk(self, m: Module, dut: Any) -> _Walk:
        """The harness's walk of the head's passes (batch, row group, column group), a step per pass taken."""
        from kaleido.hdl.scheduling import UNITS_PER_WORD, unit_groups
        from kaleido.loopnest import batches

        table = batches(self._cfg, self._grid)
        n = len(table)
        groups = [unit_groups(len(t.units)) for t in table]
        G = max(groups)
        units = Array(Const(len(t.units), range(G * UNITS_PER_WORD + 1)) for t in table + table[-1:])
        n_groups = Array(Const(g, range(G + 1)) for g in groups + groups[-1:])
        counts = Array(Const(t.count, range(self._cfg.batch + 1)) for t in table + table[-1:])
        total = sum(g * g for g in groups)
        b = Signal(range(n + 1), name="walk_batch")
        rg, cg = Signal(range(G + 1), name="walk_row"), Signal(range(G + 1), name="walk_col")
        passes = Signal(range(total + 1), name="walk_passes")
        offer = dut.passes
        taken = offer.valid & offer.ready
        last_of_batch = (rg + 1 == n_groups[b]) & (cg + 1 == n_groups[b])
        with m.If(dut.restart):
            m.d.sync += [b.eq(0), rg.eq(0), cg.eq(0), passes.eq(0)]
        with m.Elif(taken):
            m.d.sync += passes.eq(passes + 1)
            with m.If(last_of_batch):
                m.d.sync += [b.eq(b + 1), rg.eq(0), cg.eq(0)]
            with m.Elif(cg + 1 == n_groups[b]):
                m.d.sync += [rg.eq(rg + 1), cg.eq(0)]
            with m.Else():
                m.d.sync += cg.eq(cg + 1)
        first = (rg == 0) & (cg == 0)
        return _Walk(n, groups, total, units, n_groups, counts, b, rg, cg, passes, taken, last_of_batch, first)

    def _check_walk(self, m: Module, dut: Any, walk: _Walk) -> None:
        """The former's batch, reads, offer, ``taken`` and ``done`` against the walk."""
        n, groups, total, n_groups = walk.n, walk.groups, walk.total, walk.n_groups
        b, rg, cg, passes = walk.b, walk.rg, walk.cg, walk.passes
        offer, taken, first = dut.passes, walk.taken, walk.first
        # the former's batch register: the batches issued, the last one after the head
        m.d.comb += Assert(self.internal["pass_batch"] == Mux(b == n, n - 1, b))
        # and its groups are the walk's (the reads address their next values)
        m.d.comb += [Assert(self.internal["row_group"] == rg), Assert(self.internal["col_group"] == cg)]
        m.d.comb += [Assert(dut.issued == b), Assert(b <= n), Assert(passes <= total)]
        with m.If(b < n):
            m.d.comb += [Assert(rg < n_groups[b]), Assert(cg < n_groups[b])]
            before = Array(Const(sum(g * g for g in groups[:k]), range(total + 1)) for k in range(n))
            m.d.comb += Assert(passes == before[b] + rg * n_groups[b] + cg)
        with m.Else():
            m.d.comb += [Assert(rg == 0), Assert(cg == 0), Assert(passes == total)]
        # the registered reads: the last enabled address is the walk's position
        bank = Mux(b == n, n - 1, b)[0]
        for read, group in ((dut.sorted_rows, rg), (dut.sorted_cols, cg)):
            read_bank, read_group = Signal.like(read.bank), Signal.like(read.group)
            with m.If(read.en):
                m.d.sync += [read_bank.eq(read.bank), read_group.eq(read.group)]
            m.d.comb += [Assert(read_bank == bank), Assert(read_group == group)]
        m.d.comb += Assert(offer.valid == (dut.run & (b < n) & (dut.scheduled > b) & (~first | dut.drained)))
        m.d.comb += [Assert(dut.taken == taken), Assert(dut.done == (taken & (b == n - 1) & walk.last_of_batch))]
        with m.If(dut.done):
            m.d.comb += Assert(passes + 1 == total)

    def _check_units(self, m: Module, dut: Any, walk: _Walk) -> None:
        """The pass offered: its count, ``first`` and each unit's operands, tags, presence and tokens."""
        from kaleido.encoding import ABSENT
        from kaleido.hdl.scheduling import UNITS_PER_WORD

        b, units = walk.b, walk.units
        payload = offered = dut.passes.payload
        m.d.comb += [Assert(payload.count == walk.counts[b]), Assert(dut.tokens.first == (b == 0))]
        for side, read, group in (("rows", dut.sorted_rows, walk.rg), ("cols", dut.sorted_cols, walk.cg)):
            for x in range(UNITS_PER_WORD):
                word, port, token = read.units[x], getattr(offered, side)[x], getattr(dut.tokens, side)[x]
                present = group * UNITS_PER_WORD + x < units[b]
                m.d.comb += [
                    Assert(port.present == present),
                    Assert(token.anchor == word.anchor),
                    Assert(token.follower == word.follower),
                    Assert(token.anchor_present == present),
                    Assert(token.follower_present == (present & word.paired)),
                ]
                with m.If(present):
                    m.d.comb += [
                        Assert(port.x.as_value() == word.anchor_values.as_value()),
                        Assert(port.x1.as_value() == word.follower_values.as_value()),
                        Assert(port.t.as_value() == word.tags.as_value()),
                    ]
                with m.Else():
                    m.d.comb += [Assert(port.x.as_value() == 0), Assert(port.x1.as_value() == 0)]
                    m.d.comb += [Assert(port.t[c] == ABSENT) for c in range(self._cfg.batch)]

    def _assume_held(self, m: Module, dut: Any) -> None:
        """The drivers hold still while a pass waits, no head starts then; the stream rule on ``passes``."""
        offer = dut.passes
        held = Signal(name="pass_held")
        m.d.sync += held.eq(offer.valid & ~offer.ready)
        scheduled = Signal.like(dut.scheduled, name="scheduled_was")
        m.d.sync += scheduled.eq(dut.scheduled)
        for read in (dut.sorted_rows, dut.sorted_cols):
            # a registered read not enabled keeps its word (the memory's behaviour)
            units, was_off = Signal.like(read.units), Signal()
            m.d.sync += [units.eq(read.units), was_off.eq(~read.en)]
            with m.If(was_off):
                m.d.comb += Assume(read.units.as_value() == units.as_value())
        with m.If(held):
            m.d.comb += [Assume(dut.run), Assume(dut.drained), Assume(dut.scheduled >= scheduled)]
        with m.If(offer.valid & ~offer.ready):  # a new head starts only while no pass waits
            m.d.comb += Assume(~dut.restart)
        stream_rule(m, offer, "passes")
