"""The engine's scheduling stage (docs/ENGINE.md, "Scheduling a batch"):
per batch, every unit of its group through a :class:`ReuseDetector` per side
and a :class:`Scheduler` per side, into the sorted unit memories in pass
order.

    unit ROM (anchor, follower) -> Q / K reads -> ReuseDetector x2 (Q, K)
      -> Scheduler x2 (row: Q strings, column: K strings)
      -> unit memories (anchor order) -> sorted memories, bank b % 2
         (pass order, UNITS_PER_WORD units per word)

The sorted memories have two banks (batch parity): batch ``b + 1`` is
scheduled while the pass former reads batch ``b``; batch ``b + 2`` starts
once batch ``b``'s passes were all taken.
"""

from __future__ import annotations

from amaranth import Array, Cat, Const, Module, Mux, Signal, signed
from amaranth.hdl import ResetInserter
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ..checks import check_grid
from ..config import KaleidoConfig
from ..loopnest import batches
from ._common import as_config
from .detector import ReuseDetector
from .encoding import Tag
from .qk_memory import unit_read_signature
from .scheduler import Scheduler

__all__ = [
    "SchedulingStage",
    "UNITS_PER_WORD",
    "sorted_unit_layout",
    "sorted_read_signature",
    "unit_groups",
]

#: units per sorted-memory word: one pass's row (or column) units on the 4x4 array
UNITS_PER_WORD = 4


def unit_groups(n_units: int) -> int:
    """Sorted-memory words (groups of :data:`UNITS_PER_WORD` units, the last
    one padded) of a batch of ``n_units`` units."""
    return -(-n_units // UNITS_PER_WORD)


def sorted_unit_layout(batch: int, n_tokens: int) -> data.StructLayout:
    """One unit in pass order: the anchor's values, the follower's effective
    values (this side's) and tags over the batch, the anchor and follower
    token indices and whether the unit is ``paired`` (has a follower)."""
    return data.StructLayout(
        {
            "anchor_values": data.ArrayLayout(signed(8), batch),
            "follower_values": data.ArrayLayout(signed(8), batch),
            "tags": data.ArrayLayout(Tag, batch),
            "anchor": range(n_tokens),
            "follower": range(n_tokens),
            "paired": 1,
        }
    )


def sorted_read_signature(batch: int, n_tokens: int, max_groups: int) -> wiring.Signature:
    """A read of one sorted memory, from the reader's side: ``bank`` (batch
    parity) and unit ``group`` out, the group's :data:`UNITS_PER_WORD` units
    (:func:`sorted_unit_layout`) back in the same cycle."""
    return wiring.Signature(
        {
            "bank": Out(1),
            "group": Out(range(max_groups + 1)),
            "units": In(data.ArrayLayout(sorted_unit_layout(batch, n_tokens), UNITS_PER_WORD)),
        }
    )


class SchedulingStage(wiring.Component):
    """Batches ``0 .. n_batches - 1`` of a head, in loop-nest order
    (:func:`kaleido.loopnest.batches`), from the Q and K memories into the
    two-bank sorted memories.

    Parameters
    ----------
    config : KaleidoConfig
        Batch, reuse thresholds and scheduler window.
    grid : tuple of int
        ``(T, H, W)``; the unit tables are ROMs built from the loop nest.

    Ports
    -----
    ``restart`` (in): a head starts (its last input word is taken): both
    schedulers reset (their LFSRs back at the seed, as the golden loop nest
    starts every head) and batch 0 is next. ``run`` (in): walk units while
    high. ``issued`` (in): batches whose passes were all taken (a bank is
    free once its previous batch's passes are). ``scheduled`` (out): batches
    whose sorted memories are complete. ``q``, ``k`` (out,
    :func:`~kaleido.hdl.qk_memory.unit_read_signature`): unit reads of the Q
    and K memories. ``sorted_rows``, ``sorted_cols`` (in,
    :func:`sorted_read_signature`): reads of the sorted memories (row
    units from Q, column units from K).

    One unit per cycle into the detectors; a batch is complete
    ``latency`` cycles after its schedulers' own cycles
    (:func:`kaleido.model.scheduler_cycles`) from its first unit.
    """

    def __init__(self, config: KaleidoConfig | None = None, grid=(2, 4, 4)):
        config = as_config(config)
        self._config = config
        grid = check_grid(grid)
        if (config.array_rows, config.array_cols) != (UNITS_PER_WORD, UNITS_PER_WORD):
            raise ValueError(
                f"the sorted memories hold {UNITS_PER_WORD} units per word, one pass's side of a "
                f"{UNITS_PER_WORD}x{UNITS_PER_WORD} array, not {config.array_rows}x{config.array_cols}"
            )
        self._batches = batches(config, grid)
        self._n_tokens = grid[0] * grid[1] * grid[2]
        if config.window("row") != config.window("column"):
            raise ValueError(
                f"the schedulers run in lockstep: the row and column windows must agree, "
                f"not {config.window('row')} and {config.window('column')}"
            )
        n_tokens, n_batches, B = self._n_tokens, len(self._batches), config.batch
        self._max_units = max(len(t.units) for t in self._batches)
        read_sorted = sorted_read_signature(B, n_tokens, self.max_groups)
        read_unit = unit_read_signature(n_tokens, n_batches, B)
        super().__init__(
            {
                "restart": In(1),
                "run": In(1),
                "issued": In(range(n_batches + 1)),
                "scheduled": Out(range(n_batches + 1)),
                "q": Out(read_unit),
                "k": Out(read_unit),
                "sorted_rows": In(read_sorted),
                "sorted_cols": In(read_sorted),
            }
        )

    @property
    def max_groups(self) -> int:
        """Words per sorted-memory bank: the largest batch's unit groups."""
        return unit_groups(self._max_units)

    @property
    def latency(self) -> int:
        """Cycles a batch takes beyond its schedulers' own: one for the
        detectors' register, one to see both sorted memories complete."""
        return 2

    def elaborate(self, platform):
        m = Module()
        cfg = self._config
        B, N = cfg.batch, self._n_tokens
        n_batches = len(self._batches)
        token_width = max(1, (N - 1).bit_length())
        lane = sorted_unit_layout(B, N)
        max_units, max_groups, window = self._max_units, self.max_groups, cfg.window("row")

        # ---- elaboration-time tables: the loop nest's units per group --------
        group_offset = {}
        rom_init = []
        for t in self._batches:
            if t.group not in group_offset:
                group_offset[t.group] = len(rom_init)
                rom_init += [
                    a | (max(f, 0) << token_width) | (int(f >= 0) << (2 * token_width)) for a, f in t.units.tolist()
                ]
        batch_offset = Array(Const(group_offset[t.group], range(len(rom_init) + 1)) for t in self._batches)
        batch_units = Array(Const(len(t.units), range(max_units + 1)) for t in self._batches)
        batch_count = Array(Const(t.count, range(B + 1)) for t in self._batches)

        m.submodules.unit_rom = unit_rom = Memory(shape=2 * token_width + 1, depth=len(rom_init), init=rom_init)
        unit_width = 18 * B  # anchor values, effective values, tags of one unit in anchor order
        m.submodules.row_units = row_units = Memory(shape=unit_width, depth=max_units, init=[])
        m.submodules.col_units = col_units = Memory(shape=unit_width, depth=max_units, init=[])
        m.submodules.sorted_rows = sorted_rows = Memory(shape=lane.size * 4, depth=2 * max_groups, init=[])
        m.submodules.sorted_cols = sorted_cols = Memory(shape=lane.size * 4, depth=2 * max_groups, init=[])
        m.submodules.detect_q = detect_q = ReuseDetector(cfg)
        m.submodules.detect_k = detect_k = ReuseDetector(cfg)
        schedule_rows, schedule_cols = Scheduler(cfg), Scheduler(cfg)
        m.submodules.schedule_rows = ResetInserter(self.restart)(schedule_rows)
        m.submodules.schedule_cols = ResetInserter(self.restart)(schedule_cols)

        scheduling_batch = Signal(range(n_batches))
        active = Signal()  # walking (or finishing) scheduling_batch
        n_units = batch_units[scheduling_batch]

        # ---- unit walk -> detectors --------------------------------------------
        walk_unit = Signal(range(max_units + 1))
        detected_unit = Signal(range(max_units + 1))
        walk_rom = unit_rom.read_port(domain="comb")
        m.d.comb += walk_rom.addr.eq(batch_offset[scheduling_batch] + walk_unit)
        anchor = walk_rom.data[:token_width]
        follower = walk_rom.data[token_width : 2 * token_width]
        paired = walk_rom.data[2 * token_width]
        walk = self.run & active & (walk_unit < n_units)
        for detector, read in ((detect_q, self.q), (detect_k, self.k)):
            m.d.comb += [
                read.batch.eq(scheduling_batch),
                read.anchor.eq(anchor),
                read.follower.eq(follower),
                detector.i.valid.eq(walk),
                detector.i.payload.anchor.eq(read.anchor_values),
                detector.i.payload.follower.eq(read.follower_values),
                detector.i.payload.count.eq(batch_count[scheduling_batch]),
                detector.i.payload.absent.eq(~paired),
            ]
        with m.If(walk & detect_q.i.ready):
            m.d.sync += walk_unit.eq(walk_unit + 1)

        # ---- detectors -> schedulers (in lockstep) and unit memories -----------
        both_ready = schedule_rows.i.ready & schedule_cols.i.ready
        last_unit = detected_unit + 1 == n_units
        m.d.comb += [
            schedule_rows.i.valid.eq(detect_q.o.valid & schedule_cols.i.ready),
            schedule_cols.i.valid.eq(detect_k.o.valid & schedule_rows.i.ready),
            schedule_rows.i.payload.string.eq(detect_q.o.payload.string),
            schedule_cols.i.payload.string.eq(detect_k.o.payload.string),
            schedule_rows.i.payload.last.eq(last_unit),
            schedule_cols.i.payload.last.eq(last_unit),
            detect_q.o.ready.eq(both_ready),
            detect_k.o.ready.eq(both_ready),
        ]
        detected = detect_q.o.valid & both_ready
        for detector, units, effective in ((detect_q, row_units, "row_eff"), (detect_k, col_units, "col_eff")):
            unit_write = units.write_port()
            out = detector.o.payload
            m.d.comb += [
                unit_write.addr.eq(detected_unit),
                unit_write.en.eq(detected),
                unit_write.data.eq(Cat(out.anchor.as_value(), getattr(out, effective).as_value(), out.cls.as_value())),
            ]
        with m.If(detected):
            m.d.sync += detected_unit.eq(detected_unit + 1)

        # ---- schedulers -> sorted memories, in pass order ----------------------
        bank_base = Mux(scheduling_batch[0], max_groups, 0)
        clear = [walk_unit.eq(0), detected_unit.eq(0)]
        complete = []
        for scheduler, units, sorted_memory, side in (
            (schedule_rows, row_units, sorted_rows, "row"),
            (schedule_cols, col_units, sorted_cols, "col"),
        ):
            position = Signal(range(max_units + 1), name=f"{side}_position")  # pass-order units written
            window_base = Signal(range(max_units + window), name=f"{side}_window_base")
            unit = Signal(range(max_units + window), name=f"{side}_unit")
            m.d.comb += [scheduler.o.ready.eq(1), unit.eq(window_base + scheduler.o.payload.index)]
            unit_read, rom_read = units.read_port(domain="comb"), unit_rom.read_port(domain="comb")
            m.d.comb += [unit_read.addr.eq(unit), rom_read.addr.eq(batch_offset[scheduling_batch] + unit)]
            sorted_unit = Signal(lane, name=f"{side}_sorted_unit")
            m.d.comb += sorted_unit.as_value().eq(Cat(unit_read.data, rom_read.data))
            sorted_write = sorted_memory.write_port(granularity=lane.size)
            m.d.comb += [
                sorted_write.addr.eq(bank_base + (position >> 2)),
                sorted_write.data.eq(Cat(*[sorted_unit.as_value()] * UNITS_PER_WORD)),
            ]
            with m.If(scheduler.o.valid):
                m.d.comb += sorted_write.en.eq(1 << position[:2])
                m.d.sync += position.eq(position + 1)
                with m.If(scheduler.o.payload.last):
                    m.d.sync += window_base.eq(window_base + window)
            clear += [position.eq(0), window_base.eq(0)]
            complete.append(position == n_units)

        # ---- reads for the pass former -----------------------------------------
        for sorted_memory, read in ((sorted_rows, self.sorted_rows), (sorted_cols, self.sorted_cols)):
            port = sorted_memory.read_port(domain="comb")
            m.d.comb += [
                port.addr.eq(Mux(read.bank, max_groups, 0) + read.group),
                read.units.as_value().eq(port.data),
            ]

        # ---- batch sequencing --------------------------------------------------
        with m.If(self.restart):
            m.d.sync += [scheduling_batch.eq(0), active.eq(1), self.scheduled.eq(0)] + clear
        with m.Elif(self.run):
            # batch done -> the next one, once its bank is free (the passes of
            # the batch before it all taken)
            with m.If(active & complete[0] & complete[1]):
                m.d.sync += [active.eq(0), self.scheduled.eq(self.scheduled + 1)] + clear
                with m.If(scheduling_batch != n_batches - 1):
                    m.d.sync += scheduling_batch.eq(scheduling_batch + 1)
            with m.If(
                ~active
                & (self.scheduled == scheduling_batch)
                & (self.scheduled != n_batches)
                & (self.issued + 1 >= scheduling_batch)
            ):
                m.d.sync += active.eq(1)
        return m
