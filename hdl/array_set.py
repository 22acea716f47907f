"""The arrays that compute the engine's passes (issue 14, docs/ENGINE.md
"Small arrays"): one :class:`PassDispatcher` and :class:`KaleidoArray` of
the pass's shape (the paper's), or ``config.n_arrays`` of the
``config.sub_arrays`` shape behind a shared queue.

With small arrays, each ``R x C`` pass the engine's pass former offers
is latched and split into blocks of ``r x c`` units (block ``k = i (C / c)
+ j``: row units ``i r ..``, column units ``j c ..``). One block a cycle
goes to the lowest-index array whose dispatcher can take a pass; a block
with no present row unit or no present column unit goes nowhere (its
cycle is spent). The next pass is latched in the cycle the last block
leaves. Each array's PE ``(r', c')`` drains on the engine's tile lane
``(i r + r', j c + c')`` of its block position (the lanes are the
accumulation buffer's; which array's block they carry is told by
``block_taken``, so the buffer keeps one ring of tokens per array).
"""

from __future__ import annotations

from amaranth import Array, Module, Signal
from amaranth.hdl import EnableInserter
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..config import KaleidoConfig
from ._common import as_config
from .accumulation_buffer import pass_tokens_layout
from .array import KaleidoArray
from .dispatcher import PassDispatcher, pass_layout
from .layouts import tile_layout

__all__ = ["ArraySet"]


class ArraySet(wiring.Component):
    """The passes of a head into tiles on ``config.n_arrays`` arrays.

    Ports
    -----
    ``passes`` (in stream of :func:`~kaleido.hdl.dispatcher.pass_layout`
    of the pass shape) and ``pass_tokens`` (in, sampled with a pass):
    the passes and their tokens. ``hold`` (in): freeze the dispatchers,
    the arrays and the queue (the tiles stay on their ports). ``tiles``
    (out, ``R x C`` of :func:`~kaleido.hdl.layouts.tile_layout`): every
    PE's drain port, by lane. ``block_tokens`` (out,
    :func:`~kaleido.hdl.accumulation_buffer.pass_tokens_layout` of the
    small arrays' shape) and ``block_taken`` (out, one bit per array): the
    block (the whole pass with one array) an array takes this cycle, never
    more than one a cycle. ``idle`` (out): no block waits in the queue.

    With one array this is the dispatcher and the array as they were:
    the pass goes straight to the dispatcher (``idle`` always 1)."""

    def __init__(self, config: KaleidoConfig | None = None, n_tokens: int = 32):
        config = as_config(config)
        self._config = config
        self._n_tokens = n_tokens
        R, C, B = config.array_rows, config.array_cols, config.batch
        r, c = config.sub_shape
        super().__init__(
            {
                "passes": In(stream.Signature(pass_layout(R, C, B))),
                "pass_tokens": In(pass_tokens_layout(R, C, n_tokens)),
                "hold": In(1),
                "tiles": Out(tile_layout(config.acc_width)).array(R, C),
                "block_tokens": Out(pass_tokens_layout(r, c, n_tokens)),
                "block_taken": Out(config.n_arrays),
                "idle": Out(1),
            }
        )

    def elaborate(self, platform):
        m = Module()
        cfg = self._config
        R, C = cfg.array_rows, cfg.array_cols
        r, c = cfg.sub_shape
        A = cfg.n_arrays
        sub = cfg.sub_config()
        # the buffer's hold freezes every dispatcher with its array: they
        # run in the arrays' own time (docs/ENGINE.md)
        freeze = EnableInserter(~self.hold)
        dispatchers = []
        for a in range(A):
            disp, array = PassDispatcher(sub), KaleidoArray(sub)
            m.submodules[f"dispatcher{a}" if A > 1 else "dispatcher"] = freeze(disp)
            m.submodules[f"array{a}" if A > 1 else "array"] = array
            wiring.connect(m, disp.beats, array.slots)
            m.d.comb += array.hold.eq(self.hold)
            i, j = divmod(a, C // c)
            m.d.comb += [self.tiles[i * r + y][j * c + x].eq(array.tiles[y][x]) for y in range(r) for x in range(c)]
            dispatchers.append(disp)

        if A == 1:
            disp = dispatchers[0]
            wiring.connect(m, wiring.flipped(self.passes), disp.passes)
            m.d.comb += [
                self.block_tokens.eq(self.pass_tokens),
                self.block_taken.eq(self.passes.valid & self.passes.ready),
                self.idle.eq(1),
            ]
            return m

        # ---- the shared queue: one latched pass, one block a cycle ----------
        cur = Signal.like(self.passes.payload, name="queued_pass")
        cur_tokens = Signal.like(self.pass_tokens, name="queued_tokens")
        loaded = Signal()
        block = Signal(range(A))
        i_blk = Signal(range(R // r))
        j_blk = Signal(range(C // c))
        m.d.comb += [i_blk.eq(block // (C // c)), j_blk.eq(block % (C // c))]

        # the block's units (row units i r + y, column units j c + x)
        row_units = [Array(cur.rows[i * r + y] for i in range(R // r))[i_blk] for y in range(r)]
        col_units = [Array(cur.cols[j * c + x] for j in range(C // c))[j_blk] for x in range(c)]
        row_tokens = [Array(cur_tokens.rows[i * r + y] for i in range(R // r))[i_blk] for y in range(r)]
        col_tokens = [Array(cur_tokens.cols[j * c + x] for j in range(C // c))[j_blk] for x in range(c)]
        empty = Signal()
        any_row = 0
        for u in row_units:
            any_row = any_row | u.present
        any_col = 0
        for u in col_units:
            any_col = any_col | u.present
        m.d.comb += empty.eq(~(any_row & any_col))

        # the lowest-index array that can take a pass
        ready = [d.passes.ready for d in dispatchers]
        chosen = Signal(range(A))
        free = Signal()
        for a in reversed(range(A)):
            with m.If(ready[a]):
                m.d.comb += [chosen.eq(a), free.eq(1)]

        handed = Signal()  # the block leaves this cycle (taken, or empty)
        offer = Signal()  # a present block, and an array free to take it
        m.d.comb += [handed.eq(loaded & ~self.hold & (empty | free)), offer.eq(loaded & ~empty & free)]
        for a, d in enumerate(dispatchers):
            p = d.passes.payload
            m.d.comb += [p.rows[y].eq(row_units[y]) for y in range(r)]
            m.d.comb += [p.cols[x].eq(col_units[x]) for x in range(c)]
            m.d.comb += [p.count.eq(cur.count), d.passes.valid.eq(offer & (chosen == a))]
            m.d.comb += self.block_taken[a].eq(offer & (chosen == a) & ~self.hold)
        m.d.comb += [self.block_tokens.rows[y].eq(row_tokens[y]) for y in range(r)]
        m.d.comb += [self.block_tokens.cols[x].eq(col_tokens[x]) for x in range(c)]
        m.d.comb += self.block_tokens.first.eq(cur_tokens.first)

        last_block = handed & (block == A - 1)
        m.d.comb += [self.passes.ready.eq(~self.hold & (~loaded | last_block)), self.idle.eq(~loaded)]
        take = self.passes.valid & self.passes.ready
        with m.If(take):
            m.d.sync += [cur.eq(self.passes.payload), cur_tokens.eq(self.pass_tokens), loaded.eq(1), block.eq(0)]
        with m.Elif(last_block):
            m.d.sync += [loaded.eq(0), block.eq(0)]
        with m.Elif(handed):
            m.d.sync += block.eq(block + 1)
        return m
