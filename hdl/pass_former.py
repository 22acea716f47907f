"""The engine's pass former (docs/ENGINE.md, "Passes of a batch"): the
sorted memories of each scheduled batch into the passes of the loop nest,
row group outer, column group inner, for the :class:`PassDispatcher`; and
each pass's tokens for the :class:`AccumulationBuffer`."""

from __future__ import annotations

from amaranth import Array, Const, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..checks import check_grid
from ..config import KaleidoConfig
from ..encoding import ABSENT
from ..loopnest import batches
from ._common import as_config
from .accumulation_buffer import pass_tokens_layout
from .dispatcher import pass_layout
from .scheduling import UNITS_PER_WORD, sorted_read_signature, unit_groups

__all__ = ["PassFormer"]


class PassFormer(wiring.Component):
    """Every pass of a head, batch by batch, from the sorted memories.

    Parameters
    ----------
    config : KaleidoConfig
        Batch and array size (4x4: one sorted-memory word per pass side).
    grid : tuple of int
        ``(T, H, W)``; the batch table comes from the loop nest.

    Ports
    -----
    ``restart`` (in): a head starts; batch 0 is next. ``run`` (in): passes
    may be offered. ``scheduled`` (in): batches whose sorted memories are
    complete. ``drained`` (in): the array has drained every pass taken so
    far; a batch's first pass waits for it (within a batch two passes never
    put tiles on one ``S`` entry, but the previous batch's last passes may
    cover the same tokens, docs/ENGINE.md). ``sorted_rows``,
    ``sorted_cols`` (out, :func:`~kaleido.hdl.scheduling.sorted_read_signature`):
    registered reads of the sorted memories, bank = the batch's parity:
    the reads address the word of the next cycle's pass (the walk's next
    position), so the offered pass's units arrive with it; while an offered
    pass waits the reads are off and its words stay.

    ``passes`` (out stream of :func:`~kaleido.hdl.dispatcher.pass_layout`):
    the passes; a padding unit of a short last group is absent
    (``present`` 0, tags ABSENT, zero operands), as
    :func:`kaleido.golden.loopnest.pass_operands`. ``tokens`` (out,
    :func:`~kaleido.hdl.accumulation_buffer.pass_tokens_layout`): the
    offered pass's tokens. ``taken`` (out): the offered pass is taken this
    cycle. ``issued`` (out): batches whose passes were all taken. ``done``
    (out): the head's last pass is taken this cycle.

    A pass is offered in the cycle its batch is scheduled (``latency`` 0):
    the scheduling stage sees a batch complete at least a cycle after its
    last write (:attr:`~kaleido.hdl.scheduling.SchedulingStage.latency`), so
    the word read in the cycle before holds it.
    """

    def __init__(self, config: KaleidoConfig | None = None, grid=(2, 4, 4)):
        config = as_config(config)
        grid = check_grid(grid)
        if (config.array_rows, config.array_cols) != (UNITS_PER_WORD, UNITS_PER_WORD):
            raise ValueError(
                f"the pass former reads one sorted-memory word ({UNITS_PER_WORD} units) per pass side, "
                f"so it needs a {UNITS_PER_WORD}x{UNITS_PER_WORD} array, not {config.array_rows}x{config.array_cols}"
            )
        self._config = config
        self._batches = batches(config, grid)
        self._n_tokens = grid[0] * grid[1] * grid[2]
        R, C, B, N = config.array_rows, config.array_cols, config.batch, self._n_tokens
        n_batches = len(self._batches)
        read_sorted = sorted_read_signature(B, N, self.max_groups)
        super().__init__(
            {
                "restart": In(1),
                "run": In(1),
                "scheduled": In(range(n_batches + 1)),
                "drained": In(1),
                "sorted_rows": Out(read_sorted),
                "sorted_cols": Out(read_sorted),
                "passes": Out(stream.Signature(pass_layout(R, C, B))),
                "tokens": Out(pass_tokens_layout(R, C, N)),
                "taken": Out(1),
                "issued": Out(range(n_batches + 1)),
                "done": Out(1),
            }
        )

    @property
    def max_groups(self) -> int:
        """Unit groups of the largest batch (a sorted-memory bank's words)."""
        return unit_groups(max(len(t.units) for t in self._batches))

    @property
    def latency(self) -> int:
        """Cycles from the sorted memories to the offered pass: 0."""
        return 0

    def elaborate(self, platform):
        m = Module()
        cfg = self._config
        R, C, B = cfg.array_rows, cfg.array_cols, cfg.batch
        n_batches, max_groups = len(self._batches), self.max_groups
        max_units = max(len(t.units) for t in self._batches)
        batch_units = Array(Const(len(t.units), range(max_units + 1)) for t in self._batches)
        batch_groups = Array(Const(unit_groups(len(t.units)), range(max_groups + 1)) for t in self._batches)
        batch_count = Array(Const(t.count, range(B + 1)) for t in self._batches)

        pass_batch = Signal(range(n_batches))
        row_group = Signal(range(max_groups + 1))
        col_group = Signal(range(max_groups + 1))
        n_units, n_groups = batch_units[pass_batch], batch_groups[pass_batch]
        # the walk's next position, which the registered reads address
        batch_next, row_next, col_next = Signal.like(pass_batch), Signal.like(row_group), Signal.like(col_group)
        m.d.sync += [pass_batch.eq(batch_next), row_group.eq(row_next), col_group.eq(col_next)]
        hold = self.passes.valid & ~self.passes.ready & ~self.restart  # an offered pass waits: its words stay
        for read, group in ((self.sorted_rows, row_next), (self.sorted_cols, col_next)):
            m.d.comb += [read.bank.eq(batch_next[0]), read.group.eq(group), read.en.eq(~hold)]

        offered = self.passes.payload
        for side, read, group, ports, units in (
            ("rows", self.sorted_rows, row_group, offered.rows, R),
            ("cols", self.sorted_cols, col_group, offered.cols, C),
        ):
            for x in range(units):
                unit = read.units[x]
                present = (group * UNITS_PER_WORD + x) < n_units
                port = ports[x]
                m.d.comb += [
                    port.present.eq(present),
                    port.x.eq(Mux(present, unit.anchor_values.as_value(), 0)),
                    port.x1.eq(Mux(present, unit.follower_values.as_value(), 0)),
                    port.t.eq(Mux(present, unit.tags.as_value(), Const(ABSENT, 2).replicate(B))),
                ]
                token = getattr(self.tokens, side)[x]
                m.d.comb += [
                    token.anchor.eq(unit.anchor),
                    token.follower.eq(unit.follower),
                    token.anchor_present.eq(present),
                    token.follower_present.eq(present & unit.paired),
                ]

        first_of_batch = (row_group == 0) & (col_group == 0)
        last_of_batch = (row_group + 1 == n_groups) & (col_group + 1 == n_groups)
        m.d.comb += [
            offered.count.eq(batch_count[pass_batch]),
            self.tokens.first.eq(pass_batch == 0),
            self.passes.valid.eq(
                self.run
                & (self.scheduled > pass_batch)
                & (self.issued == pass_batch)
                & (~first_of_batch | self.drained)
            ),
            self.taken.eq(self.passes.valid & self.passes.ready),
            self.done.eq(self.taken & last_of_batch & (pass_batch == n_batches - 1)),
        ]
        m.d.comb += [batch_next.eq(pass_batch), row_next.eq(row_group), col_next.eq(col_group)]
        with m.If(self.restart):
            m.d.sync += self.issued.eq(0)
            m.d.comb += [batch_next.eq(0), row_next.eq(0), col_next.eq(0)]
        with m.Elif(self.taken):
            with m.If(last_of_batch):
                m.d.sync += self.issued.eq(self.issued + 1)
                m.d.comb += [row_next.eq(0), col_next.eq(0)]
                with m.If(pass_batch != n_batches - 1):
                    m.d.comb += batch_next.eq(pass_batch + 1)
            with m.Elif(col_group + 1 == n_groups):
                m.d.comb += [col_next.eq(0), row_next.eq(row_group + 1)]
            with m.Else():
                m.d.comb += col_next.eq(col_group + 1)
        return m
