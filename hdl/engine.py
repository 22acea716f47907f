"""Integrated attention-pass engine (issue 7): Q and K of one head in,
the reuse attention scores ``S`` out.

The engine is the wiring of its stages (docs/ENGINE.md)::

    qk stream -> QKMemory (Q / K memories)
      SchedulingStage, batch b:   unit walk -> 2 x ReuseDetector -> 2 x Scheduler
                                  -> sorted unit memories, bank b % 2 (pass order)
      PassFormer, batch b' <= b:  sorted memories, bank b' % 2 -> passes
                                  -> PassDispatcher (matcher) -> KaleidoArray
      AccumulationBuffer:         16 lanes -> a FIFO per bank -> S banks -> s stream (row-major);
                                  its hold freezes the dispatcher and the array
    EngineControl: the head sequence (load, run, drain, unload), ``cycles``, ``busy``

The grid and the channel split are elaboration parameters (like the array
size): unit tables are ROMs built from the loop nest
(:func:`kaleido.loopnest.batches`).
:func:`check_engine` and :func:`check_engine_input` reject a grid, split or
tensor the engine does not support before anything is simulated.
"""

from __future__ import annotations

import numpy as np
from amaranth import Module
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..checks import check_grid, check_qk
from ..config import KaleidoConfig
from ..loopnest import batches
from ._common import as_config
from .accumulation_buffer import AccumulationBuffer, score_layout
from .array_set import ArraySet
from .engine_control import EngineControl
from .pass_former import PassFormer
from .qk_memory import QKMemory, qk_layout
from .scheduling import SchedulingStage, thresholds_init, thresholds_layout

__all__ = [
    "KaleidoEngine",
    "check_engine",
    "check_engine_tokens",
    "engine_signature",
    "check_engine_input",
    "MAX_TOKENS",
    "s_layout",
    "qk_layout",
]

#: largest head the engine elaborates (its S memory holds N^2 entries)
MAX_TOKENS = 1024


def check_engine_tokens(grid, what: str = "the engine") -> tuple[int, int, int]:
    """The grid of a Q K^T tile engine (``what`` names it in the message):
    a valid grid of 2 to :data:`MAX_TOKENS` tokens; returns it as a tuple."""
    grid = check_grid(grid)
    n = grid[0] * grid[1] * grid[2]
    if n > MAX_TOKENS:
        raise ValueError(
            f"grid {grid!r} holds {n} tokens; {what} elaborates at most {MAX_TOKENS} "
            "(its accumulation buffer holds N^2 scores)"
        )
    if n < 2:
        raise ValueError(f"grid {grid!r} holds {n} token; {what} needs at least 2")
    return grid


def engine_signature(config: KaleidoConfig) -> dict:
    """The ports of a Q K^T tile engine (:class:`KaleidoEngine`, and the
    dense one): ``qk`` in, ``thresholds``, ``s`` out, ``cycles``, ``busy``."""
    return {
        "qk": In(stream.Signature(qk_layout(config.batch))),
        "thresholds": In(thresholds_layout(), init=thresholds_init(config)),
        "s": Out(stream.Signature(s_layout(config.buffer_width()))),
        "cycles": Out(32),
        "busy": Out(1),
    }


def check_engine(config: KaleidoConfig, grid) -> tuple[int, int, int]:
    """Validate an engine geometry; returns the grid as a tuple. A clear
    ValueError names the unsupported value."""
    config = as_config(config)
    grid = check_engine_tokens(grid)
    if (config.array_rows, config.array_cols) != (4, 4):
        raise ValueError(
            f"the engine drives a 4x4 array (its sorted memories hold 4 units per word), "
            f"not {config.array_rows}x{config.array_cols}"
        )
    return grid


def check_engine_input(Q, K, grid, split, config: KaleidoConfig, engine_grid) -> None:
    """Reject a head the engine built for ``(config, engine_grid)`` cannot
    take: a different grid or split, or tensors that are not int8 ``(N, d)``."""
    engine_grid = check_engine(config, engine_grid)
    grid, split = check_qk(np.asarray(Q), np.asarray(K), grid, split)
    if grid != engine_grid:
        raise ValueError(
            f"grid {grid!r} is not the engine's grid {engine_grid!r} "
            "(the grid is an elaboration parameter: build an engine for it)"
        )
    if tuple(split) != tuple(config.split):
        raise ValueError(f"split {tuple(split)!r} is not the engine's split {tuple(config.split)!r}")


def s_layout(width: int) -> data.StructLayout:
    """One output word (:func:`~kaleido.hdl.accumulation_buffer.score_layout`):
    a score and ``last`` on the final one."""
    return score_layout(width)


class KaleidoEngine(wiring.Component):
    """One head ``S = Q_eff K_eff^T`` for a fixed ``grid`` and ``config``.

    ``s_sets`` (1 or 2): copies of ``S`` in the accumulation buffer. With
    two, a head's ``S`` streams out while the next head loads and computes
    into the other set (the attention core's default, ``CoreConfig.s_buffers``;
    docs/CORE.md "The S tile's two sets").

    Ports
    -----
    ``qk`` (in stream of :func:`qk_layout`): Q then K, each token by token
    (flat order ``(t*H + y)*W + x``) and within a token batch by batch
    (``config.batches`` order): ``2 * N * n_batches`` words.
    ``s`` (out stream of :func:`s_layout`): ``S`` row-major, ``N^2`` words,
    ``last`` on the final one. ``cycles``: compute cycles of the last head
    (from the first cycle after the final input word to the cycle before
    the first output word). ``busy``: a head is in flight. ``thresholds``
    (in, :func:`~kaleido.hdl.scheduling.thresholds_layout`): the head's
    ``(F, P)`` per channel group (t, x, y), sampled on the head's last
    input word (reset value ``config.thresholds``).

    Timing (exact, always-valid ``qk``, always-ready ``s``): docs/ENGINE.md
    and :func:`kaleido.model.engine_cycles`.

    Stages (attributes, each a :class:`~amaranth.lib.wiring.Component`):
    ``qk_memory`` (:class:`~kaleido.hdl.qk_memory.QKMemory`), ``scheduling``
    (:class:`~kaleido.hdl.scheduling.SchedulingStage`), ``pass_former``
    (:class:`~kaleido.hdl.pass_former.PassFormer`), ``accumulator``
    (:class:`~kaleido.hdl.accumulation_buffer.AccumulationBuffer`; its
    ``writes`` port is what a testbench monitors for write collisions) and
    ``control`` (:class:`~kaleido.hdl.engine_control.EngineControl`).
    """

    def __init__(self, config: KaleidoConfig | None = None, grid=(2, 4, 4), s_sets: int = 1):
        config = as_config(config)
        self._grid = check_engine(config, grid)
        self._config = config
        self.n_tokens = self._grid[0] * self._grid[1] * self._grid[2]
        self.s_width = config.buffer_width()
        self.batch_table = batches(config, self._grid)
        #: the stages, built here so a testbench can reach their ports
        #: (e.g. ``accumulator.writes``) before elaboration
        self.qk_memory = QKMemory(config, self.n_tokens, len(self.batch_table))
        self.scheduling = SchedulingStage(config, self._grid)
        self.pass_former = PassFormer(config, self._grid)
        self.arrays = ArraySet(config, self.n_tokens)
        self.accumulator = AccumulationBuffer(config, self.n_tokens, s_sets)
        self.control = EngineControl(32, s_sets)
        super().__init__(engine_signature(config))

    @property
    def grid(self) -> tuple[int, int, int]:
        """``(T, H, W)`` the engine is built for."""
        return self._grid

    def elaborate(self, platform):
        m = Module()
        m.submodules.qk_memory = qk_memory = self.qk_memory
        m.submodules.scheduling = scheduling = self.scheduling
        m.submodules.pass_former = pass_former = self.pass_former
        m.submodules.arrays = arrays = self.arrays
        hold = self.accumulator.hold
        m.submodules.accumulator = accumulator = self.accumulator
        m.submodules.control = control = self.control

        # input: qk -> Q / K memories -> the scheduling stage's unit reads
        wiring.connect(m, wiring.flipped(self.qk), qk_memory.qk)
        wiring.connect(m, scheduling.q, qk_memory.q)
        wiring.connect(m, scheduling.k, qk_memory.k)
        # scheduling stage -> sorted memories -> pass former -> dispatcher(s) -> array(s)
        wiring.connect(m, pass_former.sorted_rows, scheduling.sorted_rows)
        wiring.connect(m, pass_former.sorted_cols, scheduling.sorted_cols)
        # the buffer's hold freezes the dispatchers with the arrays: they
        # then run in the arrays' own time (docs/ENGINE.md)
        m.d.comb += [
            arrays.passes.payload.eq(pass_former.passes.payload),
            arrays.passes.valid.eq(pass_former.passes.valid & ~hold),
            pass_former.passes.ready.eq(arrays.passes.ready & ~hold),
            arrays.pass_tokens.eq(pass_former.tokens),
            arrays.hold.eq(hold),
        ]
        # arrays -> accumulation buffer -> s
        wiring.connect(m, accumulator.s, wiring.flipped(self.s))
        m.d.comb += [
            accumulator.tiles[r][c].eq(tile) for r, row in enumerate(arrays.tiles) for c, tile in enumerate(row)
        ]
        m.d.comb += [
            accumulator.pass_tokens.eq(arrays.block_tokens),
            accumulator.pass_taken.eq(arrays.block_taken),
        ]
        # the head sequence: a head starts on its last input word (both
        # stages restart, the schedulers' LFSRs at the seed)
        head_start = qk_memory.loaded
        m.d.comb += [
            qk_memory.load.eq(control.load),
            scheduling.restart.eq(head_start),
            scheduling.thresholds.eq(self.thresholds),
            scheduling.run.eq(control.run),
            scheduling.issued.eq(pass_former.issued),
            pass_former.restart.eq(head_start),
            pass_former.run.eq(control.run),
            pass_former.scheduled.eq(scheduling.scheduled),
            pass_former.drained.eq(accumulator.drained & arrays.idle),
            accumulator.unload.eq(control.unload),
            accumulator.write_set.eq(control.write_set),
            accumulator.read_set.eq(control.read_set),
            control.loaded.eq(head_start),
            control.done.eq(pass_former.done),
            control.drained.eq(accumulator.settled & arrays.idle),
            control.unloaded.eq(accumulator.unloaded),
            self.cycles.eq(control.cycles),
            self.busy.eq(control.busy),
        ]
        return m
