"""The P V side's harnesses: the P V tile stage's beat scoreboard
(:class:`PvTileFlow`) and the O accumulator's (:class:`OAccumulatorFlow`).
"""

from __future__ import annotations

from typing import Any

from amaranth import Array, Cat, Const, Module, Mux, Signal, Value
from amaranth.hdl import Assert, Assume, Cover
from amaranth.lib import wiring

from .base import (
    StreamPorts,
)

#: the width of the P V scoreboard's reference counters (beats left, key tiles, totals owed)
_REF_WIDTH = 8


class OAccumulatorFlow(StreamPorts):
    """The O accumulator's scoreboard, black box: the final beats taken
    minus the beats given on ``o`` is 0, 1 or 2 (one in stage ``R``, one in
    the ``o`` register) and at least ``o.valid`` (nothing lost, duplicated
    or made up), and each ``o`` beat carries the ``row``, ``group`` and
    ``count`` of its final beat, in order (a queue of the harness's).
    Response: a final beat taken when ``o`` is empty or taken is on ``o``
    two cycles later if ``o`` was free in between (latency 2); a non-final
    beat never reaches ``o``. Covers: a total out, a stall, a final beat
    taken while one waits."""

    def flow(self, m: Module, dut: Any) -> None:
        i_fire, o_fire = dut.i.valid & dut.i.ready, dut.o.valid & dut.o.ready
        beat = dut.i.payload
        fin = i_fire & beat.final
        pending = Signal(2, name="finals_pending")
        m.d.sync += pending.eq(pending + fin - o_fire)
        m.d.comb += [Assert(pending <= 2), Assert(pending >= dut.o.valid)]
        with m.If(pending == 2):
            m.d.comb += [Assert(dut.o.valid), Assert(~dut.i.ready | dut.o.ready)]
        tag = Cat(beat.row, beat.group, beat.count)
        queue = [Signal(len(tag), name=f"final{k}") for k in range(2)]
        # queue[0]: the oldest pending final beat
        with m.If(fin):
            with m.If(pending - o_fire == 0):
                m.d.sync += queue[0].eq(tag)
            with m.Else():
                m.d.sync += [queue[0].eq(Mux(o_fire, queue[1], queue[0])), queue[1].eq(tag)]
        with m.Elif(o_fire):
            m.d.sync += queue[0].eq(queue[1])
        out = dut.o.payload
        with m.If(dut.o.valid):
            m.d.comb += Assert(Cat(out.row, out.group, out.count) == queue[0])
        # latency: taken at t with o free at t + 1 -> on o at t + 2
        took, free = Signal(name="took_final"), Signal(name="o_was_free")
        m.d.sync += [took.eq(fin & (pending - o_fire == 0)), free.eq(took & (~dut.o.valid | dut.o.ready))]
        with m.If(free):
            m.d.comb += Assert(dut.o.valid)
        m.d.comb += Cover(fin & dut.o.valid & ~dut.o.ready, "final_behind_stall")


class PvTileFlow(StreamPorts):
    """The P V tile stage's beat scoreboard, black box: the stream rule on
    ``o`` (from :class:`StreamPorts`, assumed on ``i``) and, per query
    tile, exactly ``rows x channel blocks`` beats on ``o`` after its final
    key tile, in the stage's order (channel block by channel block, rows in
    order within a block), each with its ``row``, ``group`` and the block's
    channel ``count``: a beat made up, lost (a later beat comes instead) or
    repeated fails. Bounded response (``bound``, an always-ready ``o``):
    the query tile's last total leaves at most ``bound[k]`` cycles after
    its final key tile's last P beat, ``k`` the index of the key tile's
    shape and rows (``((t - 1) Y + y - 1) X + x - 1) rows + rows - 1``):
    none is lost at the end either. Assumed, the input's framing: a
    key tile is a header (extents ``1 ..`` the tile's, ``1 ..`` ``rows``
    query rows, ``first`` exactly on a query tile's first key tile, its
    rows kept to the final one), its ``t y x`` V beats and ``rows t y x`` P
    beats; the values are zero (data independence: the beats' count and
    tags do not depend on them). Covers: a total out, a total stalled, a
    query tile's second key tile taken."""

    def __init__(self, dut: wiring.Component, tile: tuple[int, int, int], rows: int, bound: tuple[int, ...] = ()):
        self._tile, self._rows, self._bound = tile, rows, bound
        super().__init__(dut, sinks=("o",) if bound else ())

    def flow(self, m: Module, dut: Any) -> None:
        take = dut.i.valid & dut.i.ready
        phase, left, open_ = self._framing(m, dut, take)
        tile_done, tiles_owed = self._scoreboard(m, dut, take, phase)
        if self._bound:
            self._response(m, dut, take, phase, left, tile_done, tiles_owed)
        m.d.comb += Cover(take & (phase == 0) & open_, "second_key_tile")

    def _framing(self, m: Module, dut: Any, take: Value) -> tuple[Signal, Signal, Signal]:
        """The input's framing, assumed and tracked; returns its phase, the beats left in it and ``ref_open``."""
        tt, ty, tx = self._tile
        beat = dut.i.payload
        # the input's framing: phase 0 header, 1 V beats, 2 P beats
        phase = Signal(2, name="ref_phase")
        left = Signal(_REF_WIDTH, name="ref_left")
        n_keys = Signal(_REF_WIDTH, name="ref_keys")
        open_ = Signal(name="ref_open")  # a query tile's key tiles are coming
        q_rows = Signal(range(self._rows + 1), name="ref_rows")
        with m.If(dut.i.valid):
            m.d.comb += [Assume(beat.v.as_value() == 0), Assume(beat.p == 0)]
            with m.If(phase == 0):
                for ext, most in ((beat.t, tt), (beat.y, ty), (beat.x, tx), (beat.rows, self._rows)):
                    m.d.comb += [Assume(ext >= 1), Assume(ext <= most)]
                m.d.comb += Assume(beat.first == ~open_)
                with m.If(open_):
                    m.d.comb += Assume(beat.rows == q_rows)
        keys = beat.t * beat.y * beat.x
        with m.If(take):
            with m.Switch(phase):
                with m.Case(0):
                    m.d.sync += [
                        phase.eq(1),
                        n_keys.eq(keys),
                        left.eq(keys),
                        open_.eq(~beat.final),
                        q_rows.eq(beat.rows),
                    ]
                with m.Case(1):
                    m.d.sync += left.eq(left - 1)
                    with m.If(left == 1):
                        m.d.sync += [phase.eq(2), left.eq(n_keys * q_rows)]
                with m.Case(2):
                    m.d.sync += left.eq(left - 1)
                    with m.If(left == 1):
                        m.d.sync += phase.eq(0)
        with m.If(phase != 0):
            m.d.comb += Assert(left >= 1)  # a harness invariant
        return phase, left, open_

    def _scoreboard(self, m: Module, dut: Any, take: Value, phase: Signal) -> tuple[Value, Signal]:
        """The totals owed and each ``o`` beat's tags, in order; returns a query tile's last total out, tiles owed."""
        blocks = dut.blocks
        nb = len(blocks)
        beat = dut.i.payload
        o_fire = dut.o.valid & dut.o.ready
        # the totals owed, and the query tiles they belong to (two at most in flight)
        owed = Signal(_REF_WIDTH, name="ref_owed")
        fin = take & (phase == 0) & beat.final
        rows_q = [Signal(range(self._rows + 1), name=f"ref_rows_q{k}") for k in range(2)]
        tiles_owed = Signal(2, name="ref_tiles_owed")
        erow, egrp = Signal(range(self._rows), name="ref_row"), Signal(range(max(nb, 2)), name="ref_group")
        cur_rows = rows_q[0]
        tile_done = o_fire & (erow == cur_rows - 1) & (egrp == nb - 1)
        m.d.sync += [owed.eq(owed + Mux(fin, beat.rows * nb, 0) - o_fire), tiles_owed.eq(tiles_owed + fin - tile_done)]
        m.d.comb += Assume(~fin | (tiles_owed < 2) | tile_done)
        with m.If(fin):
            with m.If(tiles_owed - tile_done == 0):
                m.d.sync += rows_q[0].eq(beat.rows)
            with m.Else():
                m.d.sync += rows_q[1].eq(beat.rows)
                with m.If(tile_done):
                    m.d.sync += rows_q[0].eq(rows_q[1])
        with m.Elif(tile_done):
            m.d.sync += rows_q[0].eq(rows_q[1])
        with m.If(o_fire):
            m.d.sync += erow.eq(erow + 1)
            with m.If(erow == cur_rows - 1):
                m.d.sync += [erow.eq(0), egrp.eq(egrp + 1)]
                with m.If(egrp == nb - 1):
                    m.d.sync += egrp.eq(0)
        counts = Array(Const(c, range(max(c for _, c, _ in blocks) + 1)) for _, c, _ in blocks)
        out = dut.o.payload
        with m.If(dut.o.valid):
            m.d.comb += [Assert(owed != 0), Assert(tiles_owed != 0)]
            m.d.comb += [Assert(out.row == erow), Assert(out.group == egrp), Assert(out.count == counts[egrp])]
        return tile_done, tiles_owed

    def _response(
        self, m: Module, dut: Any, take: Value, phase: Signal, left: Signal, tile_done: Value, tiles_owed: Signal
    ) -> None:
        """Bounded response: a query tile's last total leaves within its ``bound`` of its last P beat."""
        _, ty, tx = self._tile
        beat = dut.i.payload
        # the final key tile's last P beat taken in cycle 0: its query tile's last total leaves
        # in cycle pv_tile_cycles - 1 - (keys + rows keys) at the latest (the model's, no stalls)
        gaps = Array(Const(g, range(max(self._bound) + 1)) for g in self._bound)
        shape_index = Signal(range(len(self._bound)), name="ref_shape")
        final_tile = Signal(name="ref_final_tile")
        with m.If(take & (phase == 0)):
            index = (((beat.t - 1) * ty + beat.y - 1) * tx + beat.x - 1) * self._rows + beat.rows - 1
            m.d.sync += [shape_index.eq(index), final_tile.eq(beat.final)]
        # per query tile owed (oldest first): cycles since its last P beat (0: not yet) and its bound
        since = [Signal(range(max(self._bound) + 2), name=f"ref_since_final{k}") for k in range(2)]
        gap = [Signal(range(max(self._bound) + 1), name=f"ref_gap{k}") for k in range(2)]
        nxt = [Mux(x != 0, x + 1, 0) for x in since]
        with m.If(tile_done):  # the oldest query tile's totals are out: the second moves up
            m.d.sync += [since[0].eq(nxt[1]), gap[0].eq(gap[1]), since[1].eq(0)]
        with m.Else():
            m.d.sync += [since[k].eq(nxt[k]) for k in range(2)]
        with m.If(take & (phase == 2) & (left == 1) & final_tile):
            slot = tiles_owed - 1 - tile_done  # this query tile's place after this cycle's shift
            with m.If(slot == 0):
                m.d.sync += [since[0].eq(1), gap[0].eq(gaps[shape_index])]
            with m.Else():
                m.d.sync += [since[1].eq(1), gap[1].eq(gaps[shape_index])]
        m.d.comb += [Assert(since[k] <= gap[k]) for k in range(2)]
