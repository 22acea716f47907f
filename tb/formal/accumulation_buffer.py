"""The accumulation buffer's harnesses: its output stream and unload framing
(:class:`AccumulationBufferUnload`) and the banked buffer against a
reference of ``S`` (:class:`AccumulationBufferSums`).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from amaranth import Array, Cat, Module, Mux, Signal, Value, signed
from amaranth.hdl import Assert, Assume, Cover
from amaranth.lib import wiring

from kaleido.config import KaleidoConfig

from .base import (
    Harness,
    started_flag,
    stream_rule,
)


class AccumulationBufferUnload(Harness):
    """The accumulation buffer's output stream ``s``. ``s.valid`` follows
    ``unload`` a cycle later (the banks' synchronous read); its driver is
    assumed to keep ``unload`` high while a word waits, and no tile arrives
    while ``S`` is unloading (the engine unloads a settled buffer). Then the
    stream rule holds on ``s``; with ``framing``, ``last`` marks exactly
    every ``N^2``-th word taken (no word lost or repeated within an unload)
    and ``unloaded`` pulses exactly with it. Covers: a whole unload, a
    stalled word. ``concurrent`` (two S sets): tiles may arrive during the
    unload, into the other set (assumed, the engine's control: the sets
    differ while unloading, and the read set holds while a word is out);
    the same stream rule and framing must hold."""

    def __init__(self, dut: wiring.Component, config: KaleidoConfig, framing: bool = False, concurrent: bool = False):
        self._cfg, self._framing, self._concurrent = config, framing, concurrent
        super().__init__(dut)

    def check(self, m: Module, dut: Any) -> None:
        cfg, N = self._cfg, dut.n_tokens
        R, C = cfg.array_rows, cfg.array_cols
        held = Signal()
        m.d.sync += held.eq(dut.s.valid & ~dut.s.ready)
        with m.If(held):
            m.d.comb += Assume(dut.unload)
        if not self._concurrent:
            with m.If(dut.unload):
                m.d.comb += [Assume(~dut.tiles[r][c].valid) for r in range(R) for c in range(C)]
        else:  # the engine's control: the sets differ while unloading, the read set holds while a word is out
            last_read_set = Signal(name="last_read_set")
            m.d.sync += last_read_set.eq(dut.read_set)
            with m.If(dut.unload | dut.s.valid):
                m.d.comb += Assume(dut.write_set != dut.read_set)
            with m.If(started_flag(m) & dut.s.valid):
                m.d.comb += Assume(dut.read_set == last_read_set)
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


class AccumulationBufferSums(Harness):
    """The banked accumulation buffer against a reference of ``S`` (white
    box: the ring, its pointers and the in-flight count in the routing's
    invariants; the FIFO counts in the FIFO bound; the arrivals and the
    read-after-write forward's registers in the covers).

    The harness keeps its own copy of the ring of passes in flight (the
    tokens of each pass taken, the last :func:`~kaleido.hdl.accumulation_buffer.ring_depth` of them) and,
    per lane, the pass its tiles belong to (one step per T3 tile taken).
    ``routing``: each lane's ``writes`` port is enabled exactly for a tile
    taken (``valid``, not ``hold``) of a present unit pair, at entry
    ``i * N + j`` of the phase's tokens (rows: anchor in T0, T1, follower in
    T2, T3; columns: anchor in T0, T2, follower in T1, T3); ``drained`` is
    the harness's count of passes taken minus last-PE T3 tiles taken being
    0; a pass is never taken under ``hold`` (assumed: the engine freezes
    the dispatcher). ``sums``: the harness's ``S`` applies every tile
    taken, in lane order, to its entry (``first``: overwrite, else add, in
    the buffer's width); every word the ``s`` stream gives is the
    harness's entry for its position (row-major, counted since the last
    ``unloaded``), so no tile is lost, duplicated, misrouted, misplaced in
    a FIFO or added to a stale word. ``fifo``: no FIFO holds more than
    ``s_fifo_depth`` entries (``hold`` rises in time). Assumed for the
    unload (the engine's protocol): ``unload`` only while ``settled``, held
    while a word waits, no tile and no pass while unloading; and the
    array's: the last PE's T3 tile ends a pass taken, at most
    :func:`~kaleido.hdl.accumulation_buffer.ring_depth` passes are in flight. With ``sums``, lane ``k``'s
    tiles have the value ``16^k`` (data independence: the buffer only moves
    and adds values, and each lane counts in its own hex digit, so a tile
    lost, repeated, misrouted or added to a stale word changes the word; a
    narrower value space keeps the BMC within reach). The stream rule on
    ``s`` and ``unloaded`` are asserted in every variant. Covers: a hold, a full FIFO, a
    forwarded read-modify-write, two lanes to one bank in a cycle, a tile
    added to a word (not first), a whole unload, a full ring
    (:func:`~kaleido.hdl.accumulation_buffer.ring_depth` passes in flight)."""

    white_box = True

    def __init__(
        self, dut: wiring.Component, config: KaleidoConfig, routing: bool = True, sums: bool = True, fifo: bool = True
    ):
        self._cfg, self._routing, self._sums, self._fifo = config, routing, sums, fifo
        super().__init__(dut)

    def check(self, m: Module, dut: Any) -> None:
        """The engine's protocol (:meth:`protocol`), the stream rule on
        ``s`` and ``unloaded``, the harness's ring of passes in flight
        (:meth:`passes_in_flight`), its ``S`` (:meth:`reference_s`), the
        words out and the covers (:meth:`words_out`)."""
        s = SimpleNamespace(r=self.internal, take=~dut.hold, two=dut.s_sets == 2)
        m.d.comb += Assume(~(dut.pass_taken & dut.hold))
        self.protocol(m, dut, s)
        stream_rule(m, dut.s, "s")
        s.fire = dut.s.valid & dut.s.ready
        m.d.comb += Assert(dut.unloaded == (s.fire & dut.s.payload.last))
        self.passes_in_flight(m, dut, s)
        self.reference_s(m, dut, s)
        self.words_out(m, dut, s)

    def protocol(self, m: Module, dut: Any, s: SimpleNamespace) -> None:
        """The engine's protocol, assumed: the unload's, and with one S set
        no tile and no pass while unloading; with two, when the sets may
        change. ``s`` gains ``unloading`` (and with two sets ``changed``,
        ``any_tile``)."""
        R, C, two = self._cfg.array_rows, self._cfg.array_cols, s.two
        # the unload protocol
        held = Signal(name="s_was_held")
        m.d.sync += held.eq(dut.s.valid & ~dut.s.ready)
        with m.If(held):
            m.d.comb += Assume(dut.unload)
        unloading = dut.unload | dut.s.valid
        if not two:
            with m.If(dut.unload):
                m.d.comb += Assume(dut.settled)
            with m.If(unloading):
                m.d.comb += Assume(~dut.pass_taken)
                m.d.comb += [Assume(~dut.tiles[y][x].valid) for y in range(R) for x in range(C)]
        else:
            # the engine's control (hdl/engine_control.py): the sets change only
            # while settled, not unloading and with no tile this cycle; while
            # one set unloads the tiles and passes go on into the other
            was_write, was_read = Signal(name="was_write_set"), Signal(name="was_read_set")
            m.d.sync += [was_write.eq(dut.write_set), was_read.eq(dut.read_set)]
            started = started_flag(m)
            changed = started & ((dut.write_set != was_write) | (dut.read_set != was_read))
            any_tile = Cat(*[dut.tiles[y][x].valid for y in range(R) for x in range(C)]).any()
            quiet = ~any_tile & ~dut.pass_taken.any()
            with m.If(changed):
                m.d.comb += Assume(dut.settled & ~unloading & quiet)
            with m.If(unloading):
                m.d.comb += Assume(dut.write_set != dut.read_set)
            s.changed, s.any_tile = changed, any_tile
        s.unloading = unloading

    def passes_in_flight(self, m: Module, dut: Any, s: SimpleNamespace) -> None:
        """The harness's ring of passes in flight and the array's contract on
        it (with ``routing``: the buffer's ring and pointers are the
        harness's); ``s`` gains ``ring`` and ``in_flight``."""
        from kaleido.hdl.accumulation_buffer import pass_tokens_layout, ring_depth
        from kaleido.hdl.encoding import Phase

        N, r, take = dut.n_tokens, s.r, s.take
        R, C = self._cfg.array_rows, self._cfg.array_cols
        # the harness's ring of passes in flight, and each lane's place in it
        ring = Array(Signal(pass_tokens_layout(R, C, N), name=f"ref_ring{k}") for k in range(ring_depth(self._cfg)))
        ring_write = Signal(range(ring_depth(self._cfg)), name="ref_ring_write")
        with m.If(dut.pass_taken):
            m.d.sync += [ring[ring_write].eq(dut.pass_tokens), ring_write.eq(ring_write + 1)]
        in_flight = Signal(8, name="ref_in_flight")
        last = dut.tiles[R - 1][C - 1]
        last_done = last.valid & (last.phase == Phase.T3) & take
        m.d.sync += in_flight.eq(in_flight + dut.pass_taken - last_done)
        # the array's contract: the last PE's T3 tile ends a pass taken, at
        # most ring_depth(self._cfg) passes are in flight (docs/ENGINE.md)
        m.d.comb += [
            Assume(~last_done | (in_flight != 0)),
            Assume(in_flight + dut.pass_taken <= ring_depth(self._cfg) + last_done),
        ]
        if self._routing:
            # the harness's ring and pointers are the buffer's (invariants: the step case starts from a real ring)
            m.d.comb += [Assert(dut.drained == (in_flight == 0)), Assert(in_flight == r["in_flight"])]
            m.d.comb += [Assert(ring_write == r["ring_write"])]
            m.d.comb += [Assert(ring[k].as_value() == r[f"in_flight{k}"]) for k in range(ring_depth(self._cfg))]
        s.ring, s.in_flight = ring, in_flight

    def reference_s(self, m: Module, dut: Any, s: SimpleNamespace) -> None:
        """The harness's ``S`` (one copy per set), every lane's tile applied
        in lane order (with ``routing``: each lane's write port is the
        harness's); ``s`` gains ``ref_sets`` and ``added``."""
        from kaleido.hdl.accumulation_buffer import ring_depth
        from kaleido.hdl.encoding import Phase

        cfg, N, r, take, two, ring = self._cfg, dut.n_tokens, s.r, s.take, s.two, s.ring
        R, C = cfg.array_rows, cfg.array_cols
        width = cfg.buffer_width()
        # the harness's S: one copy per set; tiles go to the write set's
        ref_sets = [
            [Signal(signed(width), name=f"ref_s{a}" if not k else f"ref_set{k}_s{a}") for a in range(N * N)]
            for k in range(dut.s_sets)
        ]
        ref = ref_sets[0] if not two else [Mux(dut.write_set, r1, r0) for r0, r1 in zip(*ref_sets, strict=True)]
        cur: list[Value] = list(ref)
        added = Signal(name="added")
        add_terms = []
        for y in range(R):
            for x in range(C):
                tile = dut.tiles[y][x]
                ptr = Signal(range(ring_depth(self._cfg)), name=f"ref_lane{y}_{x}")
                with m.If(tile.valid & (tile.phase == Phase.T3) & take):
                    m.d.sync += ptr.eq(ptr + 1)
                if self._routing:
                    m.d.comb += Assert(ptr == r[f"ring_read{y}_{x}"])
                if self._sums:  # data independence: each lane's tiles count in their own digit
                    m.d.comb += Assume(tile.value == 1 << (4 * (y * C + x)))
                entry = ring[ptr]
                row, col = entry.rows[y], entry.cols[x]
                follow_row = (tile.phase == Phase.T2) | (tile.phase == Phase.T3)
                follow_col = (tile.phase == Phase.T1) | (tile.phase == Phase.T3)
                i = Mux(follow_row, row.follower, row.anchor)
                j = Mux(follow_col, col.follower, col.anchor)
                present = Mux(follow_row, row.follower_present, row.anchor_present) & Mux(
                    follow_col, col.follower_present, col.anchor_present
                )
                enable = tile.valid & present & take
                address = Signal(range(N * N), name=f"ref_address{y}_{x}")
                m.d.comb += address.eq(i * N + j)
                write = dut.writes[y][x]
                if self._routing:
                    m.d.comb += Assert(write.enable == enable)
                    with m.If(enable):
                        m.d.comb += Assert(write.address == address)
                # this lane's tile applied after the lower lanes' (the FIFO order)
                nxt = []
                for a in range(N * N):
                    hit = enable & (address == a)
                    summed = Signal(signed(width), name=f"ref_s{a}_after{y}_{x}")
                    m.d.comb += summed.eq(Mux(hit, Mux(entry.first, tile.value, cur[a] + tile.value), cur[a]))
                    nxt.append(summed)
                cur = nxt
                add_terms.append(enable & ~entry.first)
        if not two:
            m.d.sync += [ref_sets[0][a].eq(cur[a]) for a in range(N * N)]
        else:
            for k in range(2):
                with m.If(dut.write_set == k):
                    m.d.sync += [ref_sets[k][a].eq(cur[a]) for a in range(N * N)]
        m.d.comb += added.eq(Cat(*add_terms).any())
        s.ref_sets, s.added = ref_sets, added

    def words_out(self, m: Module, dut: Any, s: SimpleNamespace) -> None:
        """Every word out is the harness's entry (with ``sums``); no FIFO
        over its depth (with ``fifo``); the covers."""
        from kaleido.hdl.accumulation_buffer import ring_depth

        cfg, N, r, take, two = self._cfg, dut.n_tokens, s.r, s.take, s.two
        R, C, B, D = cfg.array_rows, cfg.array_cols, cfg.s_banks, cfg.s_fifo_depth
        fire, unloading, in_flight, ref_sets, added = s.fire, s.unloading, s.in_flight, s.ref_sets, s.added
        # the words out, row-major since the last unload
        word = Signal(range(N * N), name="ref_word")
        with m.If(dut.unloaded):
            m.d.sync += word.eq(0)
        with m.Elif(fire):
            m.d.sync += word.eq(word + 1)
        unloaded_ref = ref_sets[0] if not two else [Mux(dut.read_set, r1, r0) for r0, r1 in zip(*ref_sets, strict=True)]
        if self._sums:
            with m.If(dut.s.valid):
                m.d.comb += [
                    Assert(dut.s.payload.value == Array(unloaded_ref)[word]),
                    Assert(dut.s.payload.last == (word == N * N - 1)),
                ]
        counts = [r[f"bank{b}.fifo_count"] for b in range(B)]
        if self._fifo:
            m.d.comb += [Assert(c <= D) for c in counts]
        forwarded = [
            r[f"bank{b}.rmw_valid"]
            & r[f"bank{b}.written_valid"]
            & (r[f"bank{b}.written_offset"] == r[f"bank{b}.rmw"][: len(r[f"bank{b}.written_offset"])])
            for b in range(B)
        ]
        lanes = R * C
        one_bank = Cat(*[r[f"bank{b}.arrivals"] == lanes for b in range(B)]).any() & take
        m.d.comb += [
            Cover(dut.hold, "hold"),
            Cover(Cat(*[c == D for c in counts]).any(), "fifo_full"),
            Cover(Cat(*forwarded).any(), "rmw_forwarded"),
            Cover(added, "tile_added"),
            Cover(dut.unloaded, "unloaded"),
            Cover(one_bank, "one_bank_all_lanes"),
            # the ring's bound: ring_depth(self._cfg) passes in flight (the routing holds with the ring full)
            Cover(in_flight == ring_depth(self._cfg), "ring_full"),
        ]
        if two:  # the overlap: tiles into a set, the handoff, then tiles into the other set while it unloads
            changed, any_tile = s.changed, s.any_tile
            tiles_in = any_tile & take
            filled = Signal(name="cover_filled")  # tiles taken into the write set since the last handoff
            handed = Signal(name="cover_handed")  # a handoff of a set that had taken tiles
            with m.If(changed):
                m.d.sync += [filled.eq(0), handed.eq(handed | filled)]
            with m.Elif(tiles_in):
                m.d.sync += filled.eq(1)
            m.d.comb += [
                Cover(unloading & tiles_in, "tile_during_unload"),
                Cover(handed & dut.s.valid & tiles_in, "tile_during_unload_after_handoff"),
                Cover(dut.s.valid & dut.read_set, "word_of_set1"),
            ]
