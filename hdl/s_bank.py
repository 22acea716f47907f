"""One bank of the accumulation buffer's ``S`` (docs/ENGINE.md, "The
accumulation buffer"): a FIFO that takes every tile routed to the bank in a
cycle (in lane order), and a two-stage read-modify-write pipeline over the
bank's memory (one per ``S`` set), whose read port also serves the unload.

Every bank of a buffer is the same module (the routing, which lanes go to
which bank, is the buffer's), so a hierarchical synthesis synthesizes one
bank per configuration instead of ``s_banks`` (docs/SYNTH.md).
"""

from __future__ import annotations

from amaranth import Const, Module, Mux, Signal, Value, signed
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

__all__ = ["SBank"]


class SBank(wiring.Component):
    """A FIFO of ``depth`` entries in front of ``S``'s words of one bank.

    Parameters
    ----------
    entry_layout : data.StructLayout
        One FIFO entry (:func:`~kaleido.hdl.accumulation_buffer.bank_entry_layout`):
        ``offset``, ``value``, ``first``.
    lanes : int
        Tiles that may arrive in one cycle (the array's PEs).
    depth : int
        FIFO entries (``config.s_fifo_depth``).
    words : int
        The bank's words.
    width : int
        A word's bits (signed).
    sets : int
        Copies of the bank's words (1 or 2; ``write_set`` / ``read_set``).

    Ports
    -----
    ``sel`` (in, one bit per lane) and ``entries`` (in, per lane): the lanes
    routed here this cycle and their entries; ``take`` (in): the buffer takes
    this cycle's tiles (no bank is ``full``). ``full`` (out): the FIFO cannot
    take this cycle's arrivals. ``idle`` (out): FIFO and pipeline empty.
    ``unloading``, ``unload_offset``, ``unload_advance`` (in): the unload's
    read (the read port serves it while ``unloading``); ``data`` (out): the
    unload set's read data. A word written in the cycle it is read again is
    forwarded.
    """

    def __init__(self, entry_layout: data.StructLayout, lanes: int, depth: int, words: int, width: int, sets: int = 1):
        self._layout, self._lanes, self._depth = entry_layout, lanes, depth
        self._words, self._width, self._sets = words, width, sets
        super().__init__(
            {
                "sel": In(lanes),
                "entries": In(entry_layout).array(lanes),
                "take": In(1),
                "full": Out(1),
                "idle": Out(1),
                "unloading": In(1),
                "unload_offset": In(range(max(2, words))),
                "unload_advance": In(1),
                "write_set": In(1),
                "read_set": In(1),
                "data": Out(signed(width)),
            }
        )

    def _compact(self, m: Module) -> list[tuple[Value, Value]]:
        """The selected lanes' entries moved to the front in lane order, as
        ``(valid, entry bits)`` per position: lane ``i`` moves down by
        ``d_i``, the lanes not selected before it, in ``log2(lanes)``
        stages of 2:1 multiplexers, stage ``k`` moving it ``2^k`` when bit
        ``k`` of ``d_i`` is set. Least significant bit first, no two
        entries ever meet (after stage ``k`` lane ``i`` is at
        ``i - (d_i mod 2^(k+1))``, strictly increasing in ``i`` over the
        selected lanes): a network of ``lanes x log2(lanes)`` multiplexers
        per bit instead of a write port per lane on every slot."""
        L = self._lanes
        gaps = []
        for i in range(L):
            gap = Signal(range(max(2, L)), name=f"gap{i}")
            m.d.comb += gap.eq(sum((~self.sel[k] for k in range(i)), Const(0, range(max(2, L)))))
            gaps.append(gap)
        cur = [(self.sel[i], gaps[i], self.entries[i].as_value()) for i in range(L)]
        for k in range(max(0, (L - 1).bit_length())):
            step, nxt = 1 << k, []
            for p in range(L):
                valid = Signal(name=f"c{k}_valid{p}")
                gap = Signal.like(gaps[0], name=f"c{k}_gap{p}")
                entry = Signal(len(cur[p][2]), name=f"c{k}_entry{p}")
                stays = cur[p][0] & ~cur[p][1][k]
                if p + step < L:
                    v_in, g_in, e_in = cur[p + step]
                    moves_in = v_in & g_in[k]
                    m.d.comb += [
                        valid.eq(moves_in | stays),
                        gap.eq(Mux(moves_in, g_in, cur[p][1])),
                        entry.eq(Mux(moves_in, e_in, cur[p][2])),
                    ]
                else:
                    m.d.comb += [valid.eq(stays), gap.eq(cur[p][1]), entry.eq(cur[p][2])]
                nxt.append((valid, gap, entry))
            cur = nxt
        return [(v, e) for v, _, e in cur]

    def _rotate(self, m: Module, items: list[tuple[Value, Value]], by: Value) -> list[tuple[Value, Value]]:
        """``items`` (padded or cut to the FIFO's ``depth``) rotated so that
        item ``x`` lands on slot ``(by + x) mod depth``: ``log2(depth)``
        stages of 2:1 multiplexers."""
        D = self._depth
        width = len(items[0][1])
        cur = [items[x] if x < len(items) else (Const(0, 1), Const(0, width)) for x in range(D)]
        for k in range(max(0, (D - 1).bit_length())):
            step, nxt = 1 << k, []
            for s in range(D):
                valid, entry = Signal(name=f"r{k}_valid{s}"), Signal(width, name=f"r{k}_entry{s}")
                src = cur[(s - step) % D]
                m.d.comb += [
                    valid.eq(Mux(by[k], src[0], cur[s][0])),
                    entry.eq(Mux(by[k], src[1], cur[s][1])),
                ]
                nxt.append((valid, entry))
            cur = nxt
        return cur

    def _fifo(self, m: Module) -> tuple[data.View, Signal, Signal]:
        """The FIFO: every selected lane's entry this cycle, in lane order
        (compacted, then rotated to the write pointer); one pop a cycle.
        Returns the head entry, ``pop`` and the count."""
        D, L = self._depth, self._lanes
        # the slots as one signal (one process writes them: a smaller
        # Verilog, and a faster Verilator build and run)
        slots = Signal(data.ArrayLayout(self._layout, D), name="fifo")
        wr_ptr = Signal(range(D), name="fifo_wr")
        rd_ptr = Signal(range(D), name="fifo_rd")
        count = Signal(range(D + 1), name="fifo_count")
        arrivals = Signal(range(L + 1), name="arrivals")
        m.d.comb += arrivals.eq(sum(self.sel[k] for k in range(L)))
        overflow = Signal(name="overflow")
        m.d.comb += [overflow.eq(count + arrivals > D), self.full.eq(overflow)]
        take = self.take
        placed = self._rotate(m, self._compact(m), wr_ptr)
        # the outer test changes no value (every slot's write needs an
        # arrival) but is the simulation's fast path
        with m.If(take & (arrivals != 0)):
            for s in range(D):
                with m.If(placed[s][0]):
                    m.d.sync += slots[s].as_value().eq(placed[s][1])
        pop = Signal(name="pop")
        m.d.comb += pop.eq(count != 0)
        m.d.sync += [
            wr_ptr.eq(wr_ptr + Mux(take, arrivals, 0)),
            rd_ptr.eq(rd_ptr + pop),
            count.eq(count - pop + Mux(take, arrivals, 0)),
        ]
        return slots[rd_ptr], pop, count

    def elaborate(self, platform):
        m = Module()
        width, S = self._width, self._sets
        head, pop, count = self._fifo(m)
        # one memory per set; the read-modify-write uses the write set's
        # ports, the unload the read set's read port
        mems = [Memory(shape=signed(width), depth=self._words, init=[]) for _ in range(S)]
        for k, mem in enumerate(mems):
            m.submodules[f"set{k}"] = mem
        rds = [mem.read_port() for mem in mems]
        wrs = [mem.write_port() for mem in mems]
        # stage 1: the word read; stage 2: add (or overwrite) and write
        s1 = Signal(self._layout, name="rmw")
        s1_valid = Signal(name="rmw_valid")
        m.d.sync += [s1.eq(head), s1_valid.eq(pop)]
        last_offset = Signal.like(s1.offset, name="written_offset")
        last_value = Signal(signed(width), name="written_value")
        last_valid = Signal(name="written_valid")
        if S == 1:
            rmw_data, unload_data = rds[0].data, rds[0].data
        else:
            rmw_data = Mux(self.write_set, rds[1].data, rds[0].data)
            unload_data = Mux(self.read_set, rds[1].data, rds[0].data)
        # the read in s1's first cycle missed the write of that cycle: forward it
        old = Signal(signed(width), name="old")
        m.d.comb += old.eq(Mux(last_valid & (last_offset == s1.offset), last_value, rmw_data))
        new = Signal(signed(width), name="new")
        m.d.comb += new.eq(Mux(s1.first, s1.value, old + s1.value))
        for k, (rd, wr) in enumerate(zip(rds, wrs, strict=True)):
            # this set's read port serves the unload (with one set: while unloading)
            serves_unload = self.unloading if S == 1 else self.unloading & (self.read_set == k)
            writes_here = s1_valid if S == 1 else s1_valid & (self.write_set == k)
            m.d.comb += [
                rd.addr.eq(Mux(serves_unload, self.unload_offset, head.offset)),
                rd.en.eq(Mux(serves_unload, self.unload_advance, 1)),
                wr.addr.eq(s1.offset),
                wr.data.eq(new),
                wr.en.eq(writes_here),
            ]
        m.d.sync += [last_valid.eq(s1_valid), last_offset.eq(s1.offset), last_value.eq(new)]
        m.d.comb += [self.idle.eq((count == 0) & ~s1_valid), self.data.eq(unload_data)]
        return m
