"""The array's harnesses: its drain ports and input stream
(:class:`ArrayDrain`) and the small arrays' shared queue
(:class:`ArraySetQueue`).
"""

from __future__ import annotations

from typing import Any

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.hdl import Assert, Assume, Cover
from amaranth.lib import data, wiring

from kaleido.config import KaleidoConfig

from .base import (
    Harness,
    started_flag,
    stream_rule,
)


class _Tile:
    """One PE drain port seen as a stream: ``valid`` and the tile
    (phase, value) as its payload."""

    def __init__(self, tile: Any):
        self.valid, self.payload = tile.valid, Cat(tile.phase, tile.value)


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


class ArraySetQueue(Harness):
    """The small arrays' shared queue (``ArraySet`` with ``n_arrays > 1``),
    white box for the dispatchers' ``passes`` ports (the queue's other
    side, not at the set's ports) and the queue's registers. The harness
    latches each pass taken (payload and tokens) and walks its blocks
    itself into a stage of one block: block ``k = i (C / c) + j`` has row
    units ``i r ..`` and column units ``j c ..``; it is present when one
    of its row units and one of its column units are. Each cycle, while
    ``hold`` is low, the staged block leaves: a present one to the
    lowest-index array whose dispatcher is ready, if there is one (else
    it waits), an absent one to no array; the walk's block moves into the
    stage when the stage is empty or its block leaves. Proved (no
    assumption on any input, the ``passes`` stream rule included):
    ``block_taken`` is exactly that array's bit (so one-hot or zero, never
    a busy array, never under ``hold``, never an absent block); a
    dispatcher's ``passes.valid`` only with its ``ready``, exactly for the
    staged present block and the lowest-index ready array, with the
    block's units and its pass's ``count``; ``block_tokens`` is the
    block's tokens and its pass's ``first`` when a block is taken;
    ``passes.ready`` is exactly ``~hold`` and (no pass latched, or the
    last block enters the stage this cycle); ``idle`` is exactly "no pass
    latched and the stage empty". So every present block of every pass is
    handed out exactly once, in block order, and no absent one. ``hold``
    freezes the queue (the walk and the stage stand still) and every
    dispatcher's registers. Invariants: the queue's pass, tokens,
    ``loaded``, ``block`` and stage are the harness's. Covers: an absent
    block skipped, a block waiting for a busy set, a block to the last
    array, a pass taken in the cycle the previous pass's last block
    enters the stage, a block held."""

    white_box = True

    def __init__(self, dut: wiring.Component, config: KaleidoConfig):
        self._cfg = config
        super().__init__(dut)

    def _units(self) -> list[tuple[list[int], list[int]]]:
        """Each block's row units and column units."""
        cfg = self._cfg
        r, c = cfg.sub_shape
        return [
            ([i * r + y for y in range(r)], [j * c + x for x in range(c)])
            for i in range(cfg.array_rows // r)
            for j in range(cfg.array_cols // c)
        ]

    def check(self, m: Module, dut: Any) -> None:
        A = self._cfg.n_arrays
        reg = self.internal
        hold = dut.hold
        readys = [reg[f"dispatcher{a}.passes__ready"] for a in range(A)]
        lowest = Signal(A, name="walk_lowest")  # the lowest-index ready dispatcher, one-hot
        for a in range(A):
            m.d.comb += lowest[a].eq(readys[a] & ~Cat(*readys[:a], Const(0, 1)).any())
        walk = self._walk(m, dut, lowest)
        self._ports(m, dut, walk, lowest)
        self._held(m, dut)
        m.d.comb += [
            Cover(walk["staged"] & ~walk["here"] & ~hold, "absent_block_skipped"),
            Cover(walk["offer"] & ~hold & (lowest == 0), "waits_for_array"),
            Cover(dut.block_taken[A - 1], "block_to_last_array"),
            Cover(walk["take"] & walk["loaded"], "pass_behind_last_block"),
            Cover(walk["offer"] & hold, "block_held"),
        ]

    def _present(self, m: Module, pass_, name: str) -> Signal:
        """Per block of ``pass_``: a present row unit and a present column unit."""
        present = Signal(self._cfg.n_arrays, name=name)
        for k, (rows, cols) in enumerate(self._units()):
            m.d.comb += present[k].eq(
                Cat(*(pass_.rows[y].present for y in rows)).any() & Cat(*(pass_.cols[x].present for x in cols)).any()
            )
        return present

    def _walk(self, m: Module, dut: Any, lowest: Signal) -> dict:
        """The harness's walk and stage (the staged block: its index and a
        copy of its pass), with the invariants that close the induction."""
        A = self._cfg.n_arrays
        reg, hold = self.internal, dut.hold
        loaded = Signal(name="walk_loaded")
        block = Signal(range(A), name="walk_block")
        cur = Signal.like(dut.passes.payload, name="walk_pass")
        tokens = Signal.like(dut.pass_tokens, name="walk_tokens")
        staged = Signal(name="stage_full")
        k_staged = Signal(range(A), name="stage_k")
        s_pass = Signal.like(dut.passes.payload, name="stage_pass")
        s_tokens = Signal.like(dut.pass_tokens, name="stage_tokens")
        here = self._present(m, s_pass, "stage_present").bit_select(k_staged, 1)
        offer = staged & here
        leaves = staged & ~hold & (~here | (lowest != 0))
        fill = loaded & ~hold & (~staged | leaves)
        last = fill & (block == A - 1)
        take = dut.passes.valid & dut.passes.ready
        with m.If(take):
            m.d.sync += [loaded.eq(1), block.eq(0), cur.eq(dut.passes.payload), tokens.eq(dut.pass_tokens)]
        with m.Elif(last):
            m.d.sync += [loaded.eq(0), block.eq(0)]
        with m.Elif(fill):
            m.d.sync += block.eq(block + 1)
        with m.If(fill):
            m.d.sync += [staged.eq(1), k_staged.eq(block), s_pass.eq(cur), s_tokens.eq(tokens)]
        with m.Elif(leaves):
            m.d.sync += staged.eq(0)

        m.d.comb += [
            Assert(reg["loaded"] == loaded),
            Assert(reg["block"] == block),
            Assert(reg["queued_pass"] == cur.as_value()),
            Assert(reg["queued_tokens"] == tokens.as_value()),
            Assert(reg["staged"] == staged),
            Assert(reg["queue_target"] == lowest),  # chosen a cycle ahead: the ready dispatchers' lowest
        ]
        with m.If(~loaded):
            m.d.comb += Assert(block == 0)
        with m.If(staged):
            m.d.comb += Assert(reg["staged_empty"] == ~here)
        staged_block = data.View(self._staged_layout(), reg["staged_block"])
        with m.If(staged):
            for k, (rows, cols) in enumerate(self._units()):
                with m.If(k_staged == k):
                    m.d.comb += [Assert(staged_block.rows[y] == s_pass.rows[u]) for y, u in enumerate(rows)]
                    m.d.comb += [Assert(staged_block.cols[x] == s_pass.cols[u]) for x, u in enumerate(cols)]
            m.d.comb += Assert(staged_block.count == s_pass.count)
        return {
            "loaded": loaded,
            "staged": staged,
            "here": here,
            "offer": offer,
            "last": last,
            "take": take,
            "k": k_staged,
            "pass": s_pass,
            "tokens": s_tokens,
        }

    def _staged_layout(self):
        from kaleido.hdl.dispatcher import pass_layout

        r, c = self._cfg.sub_shape
        return pass_layout(r, c, self._cfg.batch)

    def _ports(self, m: Module, dut: Any, walk: dict, lowest: Signal) -> None:
        """The set's ports and the dispatchers' ``passes`` against the walk."""
        A = self._cfg.n_arrays
        reg, hold = self.internal, dut.hold
        valids = [reg[f"dispatcher{a}.passes__valid"] for a in range(A)]
        readys = [reg[f"dispatcher{a}.passes__ready"] for a in range(A)]
        offers = [data.View(self._staged_layout(), reg[f"dispatcher{a}.passes__payload"]) for a in range(A)]
        offer, s_pass, s_tokens = walk["offer"], walk["pass"], walk["tokens"]
        m.d.comb += [
            Assert(dut.block_taken == Mux(offer & ~hold, lowest, 0)),
            Assert(dut.passes.ready == (~hold & (~walk["loaded"] | walk["last"]))),
            Assert(dut.idle == (~walk["loaded"] & ~walk["staged"])),
        ]
        for a in range(A):
            m.d.comb += Assert(valids[a] == (offer & lowest[a]))
            with m.If(valids[a]):
                m.d.comb += [Assert(readys[a]), Assert(offers[a].count == s_pass.count)]
        for k, (rows, cols) in enumerate(self._units()):
            with m.If(walk["k"] == k):
                for a in range(A):
                    with m.If(valids[a]):
                        m.d.comb += [Assert(offers[a].rows[y] == s_pass.rows[u]) for y, u in enumerate(rows)]
                        m.d.comb += [Assert(offers[a].cols[x] == s_pass.cols[u]) for x, u in enumerate(cols)]
                with m.If(walk["staged"]):  # so when a block is taken
                    m.d.comb += [Assert(dut.block_tokens.rows[y] == s_tokens.rows[u]) for y, u in enumerate(rows)]
                    m.d.comb += [Assert(dut.block_tokens.cols[x] == s_tokens.cols[u]) for x, u in enumerate(cols)]
                    m.d.comb += Assert(dut.block_tokens.first == s_tokens.first)

    def _held(self, m: Module, dut: Any) -> None:
        """``hold`` freezes every dispatcher (the walk: and the queue)."""
        reg = self.internal
        started = started_flag(m)
        was_held = Signal(name="was_held")
        m.d.sync += was_held.eq(dut.hold)
        for a in range(self._cfg.n_arrays):
            for name in ("full0", "full1", "job_phase", "buf0", "buf1"):
                sig = reg[f"dispatcher{a}.{name}"]
                before = Signal.like(sig, name=f"dispatcher{a}_{name}_was")
                m.d.sync += before.eq(sig)
                with m.If(started & was_held):
                    m.d.comb += Assert(sig == before)
