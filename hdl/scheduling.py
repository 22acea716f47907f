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
from .detector import THRESHOLD_BITS, ReuseDetector
from .encoding import Tag
from .qk_memory import unit_read_signature
from .scheduler import Scheduler

__all__ = [
    "SchedulingStage",
    "UNITS_PER_WORD",
    "thresholds_layout",
    "thresholds_init",
    "sorted_unit_layout",
    "sorted_read_signature",
    "unit_groups",
]

#: units per sorted-memory word: one pass's row (or column) units on the 4x4 array
UNITS_PER_WORD = 4


def thresholds_layout() -> data.ArrayLayout:
    """Run-time reuse thresholds of a head: per channel group (t, x, y) the
    detectors' ``full`` (F) and ``partial`` (P), leading equal bits."""
    return data.ArrayLayout(data.StructLayout({"full": THRESHOLD_BITS, "partial": THRESHOLD_BITS}), 3)


def thresholds_init(config: KaleidoConfig) -> list[dict[str, int]]:
    """The :func:`thresholds_layout` value of ``config.thresholds`` (the
    registers' reset value)."""
    return [{"full": F, "partial": P} for F, P in config.thresholds]


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
    """A registered read of one sorted memory, from the reader's side:
    ``bank`` (batch parity) and unit ``group`` out, with ``en``; the group's
    :data:`UNITS_PER_WORD` units (:func:`sorted_unit_layout`) back the next
    cycle, as the memory held them in the cycle of the read (a word written
    in that cycle is not seen). While ``en`` is low the units read last stay."""
    return wiring.Signature(
        {
            "bank": Out(1),
            "group": Out(range(max_groups + 1)),
            "en": Out(1),
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
    starts every head) and batch 0 is next. ``thresholds`` (in,
    :func:`thresholds_layout`): the head's per-group thresholds, taken into
    registers on ``restart`` (reset value ``config.thresholds``); every
    batch's units go through the detectors with its channel group's pair. ``run`` (in): walk units while
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
                "thresholds": In(thresholds_layout(), init=thresholds_init(config)),
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
        n = _Shared(cfg, self._batches, self._n_tokens, self._max_units, self.max_groups)
        self._memories(m, n)
        self._unit_walk(m, n)
        self._detected_units(m, n)
        self._sort(m, n)
        self._sorted_reads(m, n)
        self._sequence(m, n)
        return m

    def _memories(self, m: Module, n: _Shared) -> None:
        """The unit ROM, the unit and sorted memories, the detectors and the
        schedulers (restarted with every head) as submodules."""
        for name, rom in n.unit_roms.items():
            m.submodules[f"unit_rom_{name}"] = rom
        m.submodules.row_units, m.submodules.col_units = n.row_units, n.col_units
        m.submodules.sorted_rows, m.submodules.sorted_cols = n.sorted_rows, n.sorted_cols
        m.submodules.detect_q, m.submodules.detect_k = n.detect_q, n.detect_k
        m.submodules.schedule_rows = ResetInserter(self.restart)(n.schedule_rows)
        m.submodules.schedule_cols = ResetInserter(self.restart)(n.schedule_cols)

    def _unit_walk(self, m: Module, n: _Shared) -> None:
        """One unit of the scheduling batch per cycle: its tokens' values
        from the Q and K memories into the two detectors."""
        walk_rom = n.unit_roms["walk"].read_port(domain="comb")
        m.d.comb += walk_rom.addr.eq(n.batch_offset[n.batch] + n.walk_unit)
        tw = n.token_width
        anchor, follower, paired = walk_rom.data[:tw], walk_rom.data[tw : 2 * tw], walk_rom.data[2 * tw]
        walk = self.run & n.active & (n.walk_unit < n.n_units)
        thresholds = Signal(thresholds_layout(), init=thresholds_init(self._config))
        with m.If(self.restart):
            m.d.sync += thresholds.eq(self.thresholds)
        pair = thresholds[n.batch_group[n.batch]]
        for detector, read in ((n.detect_q, self.q), (n.detect_k, self.k)):
            m.d.comb += [
                read.batch.eq(n.batch),
                read.anchor.eq(anchor),
                read.follower.eq(follower),
                detector.i.valid.eq(walk),
                detector.i.payload.anchor.eq(read.anchor_values),
                detector.i.payload.follower.eq(read.follower_values),
                detector.i.payload.count.eq(n.batch_count[n.batch]),
                detector.i.payload.absent.eq(~paired),
                detector.i.payload.full.eq(pair.full),
                detector.i.payload.partial.eq(pair.partial),
            ]
        with m.If(walk & n.detect_q.i.ready):
            m.d.sync += n.walk_unit.eq(n.walk_unit + 1)

    def _detected_units(self, m: Module, n: _Shared) -> None:
        """Detectors -> the two schedulers (in lockstep) and the unit
        memories (anchor order)."""
        rows, cols, dq, dk = n.schedule_rows, n.schedule_cols, n.detect_q, n.detect_k
        both_ready = rows.i.ready & cols.i.ready
        last_unit = n.detected_unit + 1 == n.n_units
        m.d.comb += [
            rows.i.valid.eq(dq.o.valid & cols.i.ready),
            cols.i.valid.eq(dk.o.valid & rows.i.ready),
            rows.i.payload.string.eq(dq.o.payload.string),
            cols.i.payload.string.eq(dk.o.payload.string),
            rows.i.payload.last.eq(last_unit),
            cols.i.payload.last.eq(last_unit),
            dq.o.ready.eq(both_ready),
            dk.o.ready.eq(both_ready),
        ]
        detected = dq.o.valid & both_ready
        for detector, units, effective in ((dq, n.row_units, "row_eff"), (dk, n.col_units, "col_eff")):
            unit_write = units.write_port()
            out = detector.o.payload
            m.d.comb += [
                unit_write.addr.eq(n.detected_unit),
                unit_write.en.eq(detected),
                unit_write.data.eq(Cat(out.anchor.as_value(), getattr(out, effective).as_value(), out.cls.as_value())),
            ]
        with m.If(detected):
            m.d.sync += n.detected_unit.eq(n.detected_unit + 1)

    def _sort(self, m: Module, n: _Shared) -> None:
        """Schedulers -> sorted memories, in pass order, bank ``batch % 2``."""
        bank_base = Mux(n.batch[0], n.max_groups, 0)
        for scheduler, units, sorted_memory, side in (
            (n.schedule_rows, n.row_units, n.sorted_rows, "row"),
            (n.schedule_cols, n.col_units, n.sorted_cols, "col"),
        ):
            position = Signal(range(n.max_units + 1), name=f"{side}_position")  # pass-order units written
            window_base = Signal(range(n.max_units + n.window), name=f"{side}_window_base")
            unit = Signal(range(n.max_units + n.window), name=f"{side}_unit")
            m.d.comb += [scheduler.o.ready.eq(1), unit.eq(window_base + scheduler.o.payload.index)]
            unit_read, rom_read = units.read_port(domain="comb"), n.unit_roms[side].read_port(domain="comb")
            m.d.comb += [unit_read.addr.eq(unit), rom_read.addr.eq(n.batch_offset[n.batch] + unit)]
            sorted_unit = Signal(n.lane, name=f"{side}_sorted_unit")
            m.d.comb += sorted_unit.as_value().eq(Cat(unit_read.data, rom_read.data))
            sorted_write = sorted_memory.write_port(granularity=n.lane.size)
            m.d.comb += [
                sorted_write.addr.eq(bank_base + (position >> 2)),
                sorted_write.data.eq(Cat(*[sorted_unit.as_value()] * UNITS_PER_WORD)),
            ]
            with m.If(scheduler.o.valid):
                m.d.comb += sorted_write.en.eq(1 << position[:2])
                m.d.sync += position.eq(position + 1)
                with m.If(scheduler.o.payload.last):
                    m.d.sync += window_base.eq(window_base + n.window)
            n.clear += [position.eq(0), window_base.eq(0)]
            n.complete.append(position == n.n_units)

    def _sorted_reads(self, m: Module, n: _Shared) -> None:
        """The pass former's reads of the sorted memories: registered, as a
        register-file macro's (docs/SYNTH.md "Buffers")."""
        for sorted_memory, read in ((n.sorted_rows, self.sorted_rows), (n.sorted_cols, self.sorted_cols)):
            port = sorted_memory.read_port()
            m.d.comb += [
                port.addr.eq(Mux(read.bank, n.max_groups, 0) + read.group),
                port.en.eq(read.en),
                read.units.as_value().eq(port.data),
            ]

    def _sequence(self, m: Module, n: _Shared) -> None:
        """Batch sequencing: a batch done moves to the next, which starts
        once its bank is free (the passes of the batch before it all taken)."""
        n_batches = len(self._batches)
        with m.If(self.restart):
            m.d.sync += [n.batch.eq(0), n.active.eq(1), self.scheduled.eq(0)] + n.clear
        with m.Elif(self.run):
            with m.If(n.active & n.complete[0] & n.complete[1]):
                m.d.sync += [n.active.eq(0), self.scheduled.eq(self.scheduled + 1)] + n.clear
                with m.If(n.batch != n_batches - 1):
                    m.d.sync += n.batch.eq(n.batch + 1)
            with m.If(
                ~n.active & (self.scheduled == n.batch) & (self.scheduled != n_batches) & (self.issued + 1 >= n.batch)
            ):
                m.d.sync += n.active.eq(1)


class _Shared:
    """What the parts of :meth:`SchedulingStage.elaborate` share: the
    elaboration-time tables of the loop nest's units, the memories and
    blocks (built per elaboration), and the batch-walk state."""

    def __init__(self, config: KaleidoConfig, batch_table: list, n_tokens: int, max_units: int, max_groups: int):
        B = config.batch
        self.max_units, self.max_groups, self.window = max_units, max_groups, config.window("row")
        self.token_width = tw = max(1, (n_tokens - 1).bit_length())
        self.lane = sorted_unit_layout(B, n_tokens)
        group_offset: dict[int, int] = {}
        rom_init: list[int] = []
        for t in batch_table:
            if t.group not in group_offset:
                group_offset[t.group] = len(rom_init)
                rom_init += [a | (max(f, 0) << tw) | (int(f >= 0) << (2 * tw)) for a, f in t.units.tolist()]
        # one copy per read (the unit walk, the row and column sorts): one port each
        self.unit_roms = {
            name: Memory(shape=2 * tw + 1, depth=len(rom_init), init=rom_init) for name in ("walk", "row", "col")
        }
        self.batch_offset = Array(Const(group_offset[t.group], range(len(rom_init) + 1)) for t in batch_table)
        self.batch_units = Array(Const(len(t.units), range(max_units + 1)) for t in batch_table)
        self.batch_count = Array(Const(t.count, range(B + 1)) for t in batch_table)
        self.batch_group = Array(Const(t.group, range(3)) for t in batch_table)
        #: the batch being scheduled, and whether its units are still walking or finishing
        self.batch = Signal(range(len(batch_table)), name="scheduling_batch")
        self.active = Signal(name="active")
        self.n_units = self.batch_units[self.batch]
        self.walk_unit = Signal(range(max_units + 1), name="walk_unit")
        self.detected_unit = Signal(range(max_units + 1), name="detected_unit")
        self.clear = [self.walk_unit.eq(0), self.detected_unit.eq(0)]
        self.complete: list = []
        unit_width = 18 * B  # anchor values, effective values, tags of one unit in anchor order
        self.row_units = Memory(shape=unit_width, depth=max_units, init=[])
        self.col_units = Memory(shape=unit_width, depth=max_units, init=[])
        self.sorted_rows = Memory(shape=self.lane.size * UNITS_PER_WORD, depth=2 * max_groups, init=[])
        self.sorted_cols = Memory(shape=self.lane.size * UNITS_PER_WORD, depth=2 * max_groups, init=[])
        self.detect_q, self.detect_k = ReuseDetector(config), ReuseDetector(config)
        self.schedule_rows, self.schedule_cols = Scheduler(config), Scheduler(config)
