"""The arrays that compute the engine's passes (issue 14, docs/ENGINE.md
"Small arrays"): one :class:`PassDispatcher` and :class:`KaleidoArray` of
the pass's shape (the paper's), or ``config.n_arrays`` of the
``config.sub_arrays`` shape behind a shared queue.

With small arrays, each ``R x C`` pass the engine's pass former offers
is latched and split into blocks of ``r x c`` units (block ``k = i (C / c)
+ j``: row units ``i r ..``, column units ``j c ..``). The walk moves one
block a cycle into a stage register, from which it goes to the
lowest-index array whose dispatcher can take a pass; a block with no
present row unit or no present column unit goes nowhere (its cycle is
spent). A block leaves the stage at the earliest
:data:`~kaleido.config.QUEUE_LATENCY` (2) cycles after its pass is taken.
The next pass is latched in the cycle the last block enters the stage.
The stage keeps the walk's block select from fanning out to every
dispatcher's pass buffer in one cycle (the default core's critical path
without it). Each array's PE ``(r', c')`` drains on the engine's tile lane
``(i r + r', j c + c')`` of its block position (the lanes are the
accumulation buffer's; which array's block they carry is told by
``block_taken``, so the buffer keeps one ring of tokens per array).
"""

from __future__ import annotations

from amaranth import Array, Module, Mux, Signal
from amaranth.hdl import EnableInserter
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..config import KaleidoConfig
from ._common import as_config
from .accumulation_buffer import pass_tokens_layout
from .array import KaleidoArray
from .dispatcher import PassDispatcher, pass_layout
from .layouts import tile_layout
from .qk_pe import QkPE

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
        dispatchers = self._arrays(m)
        if self._config.n_arrays == 1:
            disp = dispatchers[0]
            wiring.connect(m, wiring.flipped(self.passes), disp.passes)
            m.d.comb += [
                self.block_tokens.eq(self.pass_tokens),
                self.block_taken.eq(self.passes.valid & self.passes.ready),
                self.idle.eq(1),
            ]
            return m
        stage_free = Signal()  # the stage can take the walk's block this cycle
        loaded, fill, units, tokens, empty = self._walk(m, stage_free)
        self._stage(m, dispatchers, stage_free, loaded, fill, units, tokens, empty)
        return m

    def _arrays(self, m: Module) -> list[PassDispatcher]:
        """The dispatchers and their arrays, each array's PEs on its block's
        tile lanes; the buffer's hold freezes every dispatcher with its
        array: they run in the arrays' own time (docs/ENGINE.md)."""
        cfg = self._config
        r, c = cfg.sub_shape
        A = cfg.n_arrays
        sub = cfg.sub_config()
        freeze = EnableInserter(~self.hold)
        dispatchers = []
        for a in range(A):
            disp, array = PassDispatcher(sub), KaleidoArray(sub, pe=QkPE)
            m.submodules[f"dispatcher{a}" if A > 1 else "dispatcher"] = freeze(disp)
            m.submodules[f"array{a}" if A > 1 else "array"] = array
            wiring.connect(m, disp.beats, array.slots)
            m.d.comb += array.hold.eq(self.hold)
            i, j = divmod(a, cfg.array_cols // c)
            m.d.comb += [self.tiles[i * r + y][j * c + x].eq(array.tiles[y][x]) for y in range(r) for x in range(c)]
            dispatchers.append(disp)
        return dispatchers

    def _walk(self, m: Module, stage_free: Signal):
        """The queue's walk: the latched pass and its next block, which
        moves into the stage (``fill``) when the stage is free or its block
        leaves this cycle (``stage_free``). Returns ``loaded`` (a pass
        latched), ``fill`` and the walk block's units, tokens and emptiness
        (no present row unit or no present column unit)."""
        cfg = self._config
        R, C = cfg.array_rows, cfg.array_cols
        r, c = cfg.sub_shape
        A = cfg.n_arrays
        cur, cur_tokens, sel = self._entries(m)
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

        fill = Signal()  # the walk's block moves into the stage this cycle
        m.d.comb += self.passes.ready.eq(~self.hold & (~loaded | (fill & (block == A - 1))))
        take = self.passes.valid & self.passes.ready
        with m.If(take):
            m.d.sync += [sel.eq(~sel), loaded.eq(1), block.eq(0)]
        with m.Elif(fill & (block == A - 1)):
            m.d.sync += [loaded.eq(0), block.eq(0)]
        with m.Elif(fill):
            m.d.sync += block.eq(block + 1)
        units = (row_units, col_units, cur.count)
        tokens = (row_tokens, col_tokens, cur_tokens.first)
        m.d.comb += fill.eq(loaded & ~self.hold & stage_free)
        return loaded, fill, units, tokens, empty

    def _entries(self, m: Module) -> tuple:
        """The walk's two pass entries: the current one (``queue_sel``),
        whose blocks the walk hands out, and the free one, which samples
        ``passes`` (payload and tokens) every cycle, so that a pass taken
        is in it at the clock edge of its take, when ``queue_sel`` flips.
        No register's enable hangs on ``passes.ready``, which comes late
        (through the stage and the dispatchers' choice): the single latch
        it once enabled set the default core's clock. Returns the current
        entry's pass and tokens, and ``queue_sel``."""
        sel = Signal(name="queue_sel")
        passes = [Signal.like(self.passes.payload, name=f"queued_pass{i}") for i in range(2)]
        tokens = [Signal.like(self.pass_tokens, name=f"queued_tokens{i}") for i in range(2)]
        for i in range(2):
            with m.If(sel != i):
                m.d.sync += [passes[i].eq(self.passes.payload), tokens[i].eq(self.pass_tokens)]
        cur = Signal.like(self.passes.payload, name="queued_pass")
        cur_tokens = Signal.like(self.pass_tokens, name="queued_tokens")
        m.d.comb += [cur.eq(Mux(sel, passes[1], passes[0])), cur_tokens.eq(Mux(sel, tokens[1], tokens[0]))]
        return cur, cur_tokens, sel

    def _target(self, m: Module, dispatchers) -> tuple[Signal, Signal]:
        """The lowest-index dispatcher whose ``passes.ready`` is high, one-hot
        (0: none), as a register chosen a cycle ahead from each dispatcher's
        ``ready_next`` (its ``ready`` while ``hold`` freezes it), so the
        choice does not cross the sixteen dispatchers and back in one cycle;
        and whether there is one (a register too, not an OR of the one-hot
        in front of the stage's hand-off)."""
        A = self._config.n_arrays
        target = Signal(A, init=1, name="queue_target")  # after reset every dispatcher is ready
        any_ready = Signal(init=1, name="queue_target_any")  # target != 0, as its own register
        nxt = [Mux(self.hold, d.passes.ready, d.ready_next) for d in dispatchers]
        lowest = Signal(A)
        for a in reversed(range(A)):
            with m.If(nxt[a]):
                m.d.comb += lowest.eq(1 << a)
        m.d.sync += [target.eq(lowest), any_ready.eq(lowest.any())]
        return target, any_ready

    def _stage(self, m: Module, dispatchers, stage_free, loaded, fill, units, tokens, empty) -> None:
        """The stage register between the walk and the dispatchers (so the
        walk's block select does not fan out to every dispatcher's pass
        buffer in one cycle): a staged block leaves in the cycle some
        dispatcher can take it, to the lowest-index one, or at once if it is
        empty (its cycle spent)."""
        cfg = self._config
        r, c = cfg.sub_shape
        payload = Signal(pass_layout(r, c, cfg.batch), name="staged_block")
        payload_tokens = Signal.like(self.block_tokens, name="staged_tokens")
        staged = Signal(name="staged")
        staged_empty = Signal(name="staged_empty")

        target, free = self._target(m, dispatchers)  # one-hot: the lowest-index array that can take a pass
        handed = Signal()  # the staged block leaves this cycle (taken, or empty)
        offer = Signal()  # a present block, and an array free to take it
        m.d.comb += [
            handed.eq(staged & ~self.hold & (staged_empty | free)),
            offer.eq(staged & ~staged_empty & free),
            stage_free.eq(~staged | handed),
            self.idle.eq(~loaded & ~staged),
        ]
        for a, d in enumerate(dispatchers):
            m.d.comb += [d.passes.payload.eq(payload), d.passes.valid.eq(offer & target[a])]
            m.d.comb += self.block_taken[a].eq(offer & target[a] & ~self.hold)
        m.d.comb += self.block_tokens.eq(payload_tokens)

        row_units, col_units, count = units
        row_tokens, col_tokens, first = tokens
        with m.If(fill):
            m.d.sync += [payload.rows[y].eq(row_units[y]) for y in range(r)]
            m.d.sync += [payload.cols[x].eq(col_units[x]) for x in range(c)]
            m.d.sync += [payload_tokens.rows[y].eq(row_tokens[y]) for y in range(r)]
            m.d.sync += [payload_tokens.cols[x].eq(col_tokens[x]) for x in range(c)]
            m.d.sync += [payload.count.eq(count), payload_tokens.first.eq(first)]
            m.d.sync += [staged.eq(1), staged_empty.eq(empty)]
        with m.Elif(handed):
            m.d.sync += staged.eq(0)
