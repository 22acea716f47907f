"""Cycle-level performance model of Kaleido (spec sec. 9): the RTL's exact
cycles, stage by stage, one module per stage.

* :mod:`kaleido.model.slots`: one pass's phases on an array (the need
  table, need words, the matcher automaton, :func:`pass_phase_beats`);
* :mod:`kaleido.model.queue`: the small arrays' shared queue
  (:func:`queue_ticks`, block beats, :func:`queue_end`);
* :mod:`kaleido.model.qk`: ``Q K^T`` on the arrays (:func:`run_model`,
  the array walk, :func:`linear_cycles`, :func:`scheduler_cycles`);
* :mod:`kaleido.model.engine`: the integrated engine and the dense engine
  (:func:`engine_cycles`, :func:`dense_engine_cycles`: the accumulation
  buffer's banks);
* :mod:`kaleido.model.softmax`: the softmax unit, the output scaler, the
  tiled softmax;
* :mod:`kaleido.model.pv`: ``P V`` (:func:`pv_cycles`, small-P pairing)
  and the P V tile stage;
* :mod:`kaleido.model.core`: the attention core (:func:`core_cycles`, its
  memory port and tile feeder) and the stages of a whole head
  (:func:`attention_stages`).

Every public name is re-exported here (``from kaleido.model import
run_model``); the modules import each other bottom up, in the order above.
"""

from .core import attention_stages, core_cycles, load_cycles, tile_feed_cycles
from .engine import (
    DENSE_ARRAY_LATENCY,
    DENSE_FIRST_TAKE,
    DENSE_PE_LATENCY,
    ENGINE_MODEL_TOKENS,
    DenseEngineTiming,
    EngineTiming,
    dense_engine_cycles,
    engine_cycles,
    engine_tiles,
)
from .pv import (
    PV_TILE_ISSUE,
    PV_TILE_TAIL,
    PvTiming,
    pair_occupancy,
    pv_cycles,
    pv_pair_block_beats,
    pv_tile_beats,
    pv_tile_cycles,
    pv_tile_run,
    pv_tile_tail,
)
from .qk import ModelResult, check_arrays, linear_cycles, run_model, scheduler_cycles
from .queue import block_phase_beats, iter_block_beats, queue_end, queue_ticks
from .slots import VARIANTS, array_drain, dense_array_drain, group_masks, need_table, pass_phase_beats, stream_cycles
from .softmax import SOFTMAX_LATENCY, TILE_SOFTMAX_LATENCY, output_scaler_cycles, softmax_cycles, tile_softmax_cycles

__all__ = [
    "VARIANTS",
    "ModelResult",
    "run_model",
    "stream_cycles",
    "array_drain",
    "dense_array_drain",
    "queue_ticks",
    "need_table",
    "EngineTiming",
    "engine_cycles",
    "engine_tiles",
    "DenseEngineTiming",
    "dense_engine_cycles",
    "DENSE_ARRAY_LATENCY",
    "DENSE_PE_LATENCY",
    "DENSE_FIRST_TAKE",
    "ENGINE_MODEL_TOKENS",
    "pass_phase_beats",
    "scheduler_cycles",
    "linear_cycles",
    "PvTiming",
    "pv_cycles",
    "pv_pair_block_beats",
    "load_cycles",
    "tile_feed_cycles",
    "core_cycles",
    "group_masks",
    "attention_stages",
    "SOFTMAX_LATENCY",
    "softmax_cycles",
    "output_scaler_cycles",
    "TILE_SOFTMAX_LATENCY",
    "tile_softmax_cycles",
    "pv_tile_beats",
    "pv_tile_cycles",
    "pv_tile_run",
    "pv_tile_tail",
    "PV_TILE_ISSUE",
    "PV_TILE_TAIL",
    # public before the split, outside __all__
    "check_arrays",
    "block_phase_beats",
    "iter_block_beats",
    "queue_end",
    "pair_occupancy",
]
