"""The checks `make formal` runs: :data:`PROOFS`, proof name ->
:class:`~kaleido.tb.formal.base.Proof` (named ``<block>_<property>``), and
the small configurations the proofs build their blocks at.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from amaranth.lib import wiring

from kaleido.config import BEAT_REGISTER, CoreConfig, KaleidoConfig

from .accumulation_buffer import AccumulationBufferSums, AccumulationBufferUnload
from .array import ArrayDrain, ArraySetQueue
from .base import (
    Proof,
    StreamHolds,
    StreamPorts,
)
from .core import CoreStreams
from .dispatcher import PassDispatcherFlow, PassFormerFlow
from .matcher import DetectorFlow, MatcherFlow, MatcherFunction, MatcherJobs
from .mem_port import LoadResponse, MemoryModelFlow, TileLoaderFlow
from .pe import PEArithmetic, PEPvArithmetic
from .pv_tile import OAccumulatorFlow, PvTileFlow
from .scheduler import SchedulerInvariants, SchedulerPartition, scheduler_window_cycles
from .softmax import SoftmaxStream, TileSoftmaxFlow
from .tile_feeder import TileFeederFlow


def _softmax() -> wiring.Component:
    from kaleido.hdl.softmax import SoftmaxUnit

    return SoftmaxUnit(KaleidoConfig.one_array())


def _stream_holds(
    design: str, outputs: tuple[str, ...], config: KaleidoConfig | None = None
) -> Callable[[], wiring.Component]:
    def build() -> wiring.Component:
        from kaleido.hdl.emit import DESIGNS

        return StreamHolds(DESIGNS[design](config or KaleidoConfig.one_array()), outputs)

    return build


def _pv_pe() -> type:
    from kaleido.hdl.pv_pe import PvPE

    return PvPE


#: the checks `make formal` runs
PROOFS = {
    "detector_stream": Proof("detector_stream", _stream_holds("detector", ("o",))),
    "matcher_stream": Proof("matcher_stream", _stream_holds("matcher", ("o",))),
    "scheduler_stream": Proof("scheduler_stream", _stream_holds("scheduler", ("o",))),
    "pe_full8_product": Proof("pe_full8_product", lambda: PEArithmetic(dual=False), mode="bmc", depth=3),
    "pe_dual_lo_products": Proof("pe_dual_lo_products", lambda: PEArithmetic(dual=True), mode="bmc", depth=3),
    "pe_pv_products": Proof("pe_pv_products", PEPvArithmetic, mode="bmc", depth=3, slow=True),
    "matcher_function": Proof(
        "matcher_function", lambda: MatcherFunction(KaleidoConfig.one_array(batch=8, lookahead=4)), mode="bmc", depth=12
    ),
    "pv_dispatcher_stream": Proof("pv_dispatcher_stream", _stream_holds("pv_dispatcher", ("beats",))),
    "pv_dispatcher_pairs_stream": Proof(
        "pv_dispatcher_pairs_stream", _stream_holds("pv_dispatcher", ("beats",), KaleidoConfig.one_array(pv_pairs=True))
    ),
    "pe_pv_pair_products": Proof("pe_pv_pair_products", lambda: PEPvArithmetic(paired=True), mode="bmc", depth=3),
    # the P V array's PE (hdl/pv_pe.py), the one the core builds its P V arrays of
    "pv_pe_products": Proof("pv_pe_products", lambda: PEPvArithmetic(pe=_pv_pe()), mode="bmc", depth=3, slow=True),
    "pv_pe_pair_products": Proof(
        "pv_pe_pair_products", lambda: PEPvArithmetic(paired=True, pe=_pv_pe()), mode="bmc", depth=3
    ),
    "window_detector_stream": Proof("window_detector_stream", _stream_holds("window_detector", ("o",))),
    "output_scaler_stream": Proof("output_scaler_stream", _stream_holds("output_scaler", ("o",))),
    "softmax_stream": Proof("softmax_stream", lambda: SoftmaxStream(_softmax()), depth=2),
}


#: small configurations where a proof must unroll a whole pass or window
SMALL_DISPATCH = KaleidoConfig.one_array(batch=2, lookahead=1, array_rows=2, array_cols=2)


SMALL_SCHEDULER = KaleidoConfig.one_array(batch=4, array_rows=1)  # a 16-string window


#: the small arrays' queue: 2x2 passes on four 1x1 arrays, and 4x4 passes on four 2x2 arrays
SMALL_ARRAY_SET = KaleidoConfig.one_array(batch=2, lookahead=1, array_rows=2, array_cols=2, sub_arrays=(1, 1))


SMALL_ARRAY_SET_2X2 = KaleidoConfig.one_array(batch=2, lookahead=1, sub_arrays=(2, 2))


SMALL_BUFFER = KaleidoConfig.one_array(
    batch=2, array_rows=1, array_cols=1, s_banks=2, s_fifo_depth=1
)  # one lane, 2 banks


def _dispatcher(config: KaleidoConfig) -> wiring.Component:
    from kaleido.hdl.dispatcher import PassDispatcher

    return PassDispatcher(config)


def _array(config: KaleidoConfig) -> wiring.Component:
    from kaleido.hdl.array import KaleidoArray

    return KaleidoArray(config)


def _array_set(config: KaleidoConfig) -> wiring.Component:
    from kaleido.hdl.array_set import ArraySet

    return ArraySetQueue(ArraySet(config, n_tokens=4), config)


def _buffer(config: KaleidoConfig, n_tokens: int = 2, s_sets: int = 1) -> wiring.Component:
    from kaleido.hdl.accumulation_buffer import AccumulationBuffer

    return AccumulationBuffer(config, n_tokens, s_sets)


#: the core's stages at small sizes: a tile loader of 2 words of 2 beats
#: (1-byte beats), a memory of 3 beats with latency 2, an O accumulator of
#: 2 lanes, 2 rows, 2 channel groups
MEMORY_INIT = (1, 2, 3)


SMALL_CORE = KaleidoConfig.one_array(batch=2, array_rows=2, array_cols=2)


def _loader() -> wiring.Component:
    from kaleido.hdl.mem_port import TileLoader

    return TileLoader(2, 2, 1)


#: the tile feeder's proofs: tile (2, 4, 2) (16 tokens; its t and y
#: extents differ, so the harness tells its unnamed counters apart by
#: width), d = 4 in batches of 1, 1, 2 (3 batches: 96 qk words a command),
#: 2-byte beats (2 a token row), heads of up to 16 tokens
FEEDER = (
    KaleidoConfig.one_array(split=(1, 1, 2), batch=2),
    CoreConfig(tile=(2, 4, 2), port_bytes=2, mem_latency=1, max_tokens=16),
)


def _feeder() -> wiring.Component:
    from kaleido.hdl.tile_feeder import TileFeeder

    config, core = FEEDER
    return TileFeederFlow(TileFeeder(config, core), config, core)


def _memory() -> wiring.Component:
    from kaleido.hdl.mem_port import MemoryModel

    return MemoryModel(1, list(MEMORY_INIT), 2)


#: a small softmax format for the tiled softmax's BMC: a 3-bit reciprocal
#: (the divider takes 3 cycles, a row's r is 10 cycles after its last beat)
def _small_fmt() -> Any:
    from kaleido.config import SoftmaxFormat

    return SoftmaxFormat(lut_bits=2, lut_width=4, exp_frac_bits=3, constant_bits=4, recip_bits=9, out_frac_bits=2)


def _tile_softmax() -> wiring.Component:
    from kaleido.hdl.softmax import TileSoftmax

    return TileSoftmax(SMALL_CORE, _small_fmt(), lanes=2, rows=2, max_tokens=8)


def _pv_tile() -> wiring.Component:
    """The P V stage on a 2x2 array, 6 channels (3 channel blocks), key
    tiles up to (2, 2, 2), query tiles up to 2 rows."""
    from kaleido.hdl.pv_tile import PvTile

    return PvTile(KaleidoConfig.one_array(batch=2, array_rows=2, array_cols=2, split=(2, 2, 2)), (2, 2, 2), 2)


#: the P V stage's scoreboard: a 2x1 array (two rows a row block, so a
#: query tile of one row pads its row block), d = 3 (three channel blocks of
#: one channel), key tiles up to (2, 2, 2), query tiles up to 2 rows
PV_SMALL = KaleidoConfig.one_array(batch=2, array_rows=2, array_cols=1, split=(1, 1, 1))


def _pv_tile_small(buffers: int = 2) -> wiring.Component:
    from kaleido.hdl.pv_tile import PvTile

    return PvTile(PV_SMALL, (2, 2, 2), 2, buffers=buffers)


def _pv_gaps() -> tuple[int, ...]:
    """The P V stage's cycles from a query tile's last P beat to its last
    total, per key tile shape and rows (the model's exactly, values zero:
    no slack; ``pv_tile_cycles`` is exact on the 2x1 array since issue 19,
    ``tb/test_pv_tile.py``), in :class:`PvTileFlow`'s index order."""
    import itertools

    import numpy as np

    from kaleido.model import pv_tile_cycles

    gaps = []
    for t, y, x, rows in itertools.product((1, 2), (1, 2), (1, 2), (1, 2)):
        n = t * y * x
        cycles = pv_tile_cycles([(rows, [(np.zeros((n, PV_SMALL.d), np.int8), (t, y, x))])], PV_SMALL)
        gaps.append(cycles - 1 - n * (1 + rows))
    return tuple(gaps)


#: the smallest attention core that elaborates: the engine's 4x4 array
#: (its sorted memories hold 4 units a word), d = 4 in batches of 4 (the P V
#: detector's batch is array_cols), one S bank, tile (2, 2, 2), 4-byte
#: beats, a memory of latency 1, heads of up to 8 tokens, the small format
CORE_SMALL = (
    KaleidoConfig.one_array(split=(1, 1, 2), batch=4, s_banks=1, lookahead=1),
    CoreConfig(tile=(2, 2, 2), port_bytes=4, mem_latency=1, max_tokens=8),
)


def _core() -> wiring.Component:
    from kaleido.hdl.core import KaleidoAttentionCore

    return CoreStreams(KaleidoAttentionCore(*CORE_SMALL, _small_fmt()))


def _o_accumulator() -> wiring.Component:
    from kaleido.hdl.o_accumulator import OAccumulator

    return OAccumulator(SMALL_CORE, 2, 2, 4)


#: the pass former's proofs: batch 16 over a grid whose batches have 6, 5
#: and 10 units (2, 2 and 3 groups: padding units and a 3x3 batch) and
#: short batches of 8 channels
PASS_FORMER = (KaleidoConfig.one_array(), (1, 2, 5))


def _former() -> wiring.Component:
    from kaleido.hdl.pass_former import PassFormer

    return PassFormer(*PASS_FORMER)


def _former_passes() -> int:
    from kaleido.hdl.scheduling import unit_groups
    from kaleido.loopnest import batches

    return sum(unit_groups(len(t.units)) ** 2 for t in batches(*PASS_FORMER))


def _matcher(config: KaleidoConfig) -> wiring.Component:
    from kaleido.hdl.matcher import Matcher

    return Matcher(config)


def _detector(config: KaleidoConfig) -> wiring.Component:
    from kaleido.hdl.detector import ReuseDetector

    return ReuseDetector(config)


def _scheduler(config: KaleidoConfig) -> wiring.Component:
    from kaleido.hdl.scheduler import Scheduler

    return Scheduler(config)


_B = KaleidoConfig.one_array().batch


_LAT = BEAT_REGISTER + max(
    r + c for r in range(KaleidoConfig.one_array().array_rows) for c in range(KaleidoConfig.one_array().array_cols)
)


_PASS = 4 * SMALL_DISPATCH.batch + 1  # a pass of the small dispatcher: four phases of at most batch beats, and one


_FORMER_PASSES = _former_passes()


_PV_BOUND = _pv_gaps()


_PV_WHY = (
    "2x1 array, d = 3 (3 channel blocks), key tiles up to (2, 2, 2), 2 query rows, values zero. The smallest "
    "query tile (a key tile of one token, one row) gives its last total 17 cycles after its first beat (the "
    "model's pv_tile_cycles = 18; 20 with 2 rows): depth 20 checks every input sequence (any shapes, rows, "
    "stalls on i and o) for 20 cycles, in which whole query tiles of one key token end (rows 1 and 2, with o "
    "stalled up to 2 and 0 cycles) and larger ones are checked as far as they get. z3 needs about 100 s per "
    "step from step 18 on "
    "(the P V array's multipliers and the stage's row FIFO, memories as flip-flops)"
)


_CORE_DEPTH = 26


#: the banked buffer's reduced configuration: 2 lanes (a 1x2 array), 2
#: banks, FIFOs of 2 (the least for 2 lanes), N = 2 (4 entries, 2 words a bank)
BANKED_BUFFER = KaleidoConfig.one_array(batch=2, array_rows=1, array_cols=2, s_banks=2, s_fifo_depth=2)


#: the sums' BMC depth: z3 needs 80 s for step 8 and more than 5 minutes for step 9
_BANKED_DEPTH = 9


_BANKED_WHY = (
    "1x2 array, 2 banks, FIFOs of 2, N = 2 (4 entries). A tile taken in cycle t is in its bank at t + 3, the "
    "buffer settles and the unload gives word w at t + 5 + w at the earliest: depth 9 checks every trace of up to "
    "4 cycles of passes and tiles (two lanes into one bank, a hold, a full FIFO, a forwarded read-modify-write: "
    "the covers reach each within it) followed by the words unloaded within the depth. Each lane and each bank is "
    "a copy of the same logic for any count, and the cases that differ between lanes and banks (two lanes into "
    "one bank in a cycle, a full FIFO, a forward) all occur at this size. Step 9 takes z3 more than 5 minutes; "
    "yices checks depth 9 in 7 s, and step 10 alone in about 5 minutes"
)


PROOFS.update(
    {
        "detector_scoreboard": Proof(
            "detector_scoreboard", lambda: DetectorFlow(_detector(KaleidoConfig.one_array()), response=False)
        ),
        "detector_response": Proof(
            "detector_response", lambda: DetectorFlow(_detector(KaleidoConfig.one_array()), scoreboard=False)
        ),
        "detector_payload": Proof(
            "detector_payload",
            # four lanes: the lanes are independent copies of one circuit
            # (and the reference's), so four show every lane's logic and the
            # count/absent masking around them; the 16-lane default took 80 s
            lambda: DetectorFlow(
                _detector(KaleidoConfig.one_array(batch=4)),
                scoreboard=False,
                response=False,
                payload=True,
                config=KaleidoConfig.one_array(batch=4),
            ),
            depth=2,
        ),
        "detector_cover": Proof(
            "detector_cover",
            lambda: DetectorFlow(_detector(KaleidoConfig.one_array())),
            mode="cover",
            depth=4,
            why="each cover is one or two transfers from reset",
        ),
        "matcher_scoreboard": Proof("matcher_scoreboard", lambda: MatcherFlow(_matcher(KaleidoConfig.one_array()), _B)),
        "matcher_response": Proof(
            "matcher_response",
            lambda: MatcherFlow(_matcher(KaleidoConfig.one_array()), _B, always_ready=True),
            depth=_B + 2,
        ),
        "matcher_jobs": Proof("matcher_jobs", lambda: MatcherJobs(_matcher(KaleidoConfig.one_array()), _B), depth=2),
        "matcher_cover": Proof(
            "matcher_cover",
            lambda: MatcherFlow(_matcher(KaleidoConfig.one_array()), _B),
            mode="cover",
            depth=_B + 3,
            why=f"the longest cover, a job of all {_B} channels, ends {_B} cycles after it is taken",
        ),
        "pass_dispatcher_stream": Proof(
            "pass_dispatcher_stream",
            lambda: PassDispatcherFlow(_dispatcher(SMALL_DISPATCH), framing=False),
            mode="bmc",
            depth=2 * _PASS + 2,
            why=f"batch {SMALL_DISPATCH.batch}, 2x2 array: a pass lasts at most {_PASS} cycles without stalls, so the "
            "depth covers two whole passes and the hand-over between them. k-induction does not converge: the "
            "next job's phase is not visible at the ports, so an unreachable value hides behind a stall of any length",
        ),
        "pass_dispatcher_framing": Proof(
            "pass_dispatcher_framing",
            lambda: PassDispatcherFlow(_dispatcher(SMALL_DISPATCH), stream=False),
            mode="bmc",
            depth=2 * _PASS + 2,
            why=f"batch {SMALL_DISPATCH.batch}, 2x2 array: a pass lasts at most {_PASS} cycles without stalls, so the "
            "depth covers two whole passes and the hand-over between them (the framing logic does not depend on the "
            "batch or the array size)",
        ),
        "pass_dispatcher_payload": Proof(
            "pass_dispatcher_payload",
            lambda: PassDispatcherFlow(
                _dispatcher(SMALL_DISPATCH), stream=False, framing=True, payload=True, config=SMALL_DISPATCH
            ),
            mode="bmc",
            depth=_PASS + 2,
            why=f"batch {SMALL_DISPATCH.batch}, 2x2 array: a pass lasts at most {_PASS} cycles without stalls, so "
            "the depth covers every beat of a whole first pass (any operands, tags and count) and the next pass "
            "taken; a beat's payload depends only on the pass taken and the matcher's slot",
        ),
        "pass_dispatcher_payload_two_passes": Proof(
            "pass_dispatcher_payload_two_passes",
            lambda: PassDispatcherFlow(
                _dispatcher(SMALL_DISPATCH), stream=False, framing=True, payload=True, config=SMALL_DISPATCH
            ),
            mode="bmc",
            depth=2 * _PASS + 2,
            why="as payload, over two whole passes and the hand-over (a pass after another, with stalls)",
        ),
        "pass_dispatcher_cover": Proof(
            "pass_dispatcher_cover",
            lambda: PassDispatcherFlow(_dispatcher(SMALL_DISPATCH), stream=False),
            mode="cover",
            depth=2 * _PASS + 2,
            why="two whole passes",
        ),
        "array_set_queue": Proof("array_set_queue", lambda: _array_set(SMALL_ARRAY_SET), depth=2),
        "array_set_queue_2x2": Proof("array_set_queue_2x2", lambda: _array_set(SMALL_ARRAY_SET_2X2), depth=2),
        "array_set_cover": Proof(
            "array_set_cover",
            lambda: _array_set(SMALL_ARRAY_SET),
            mode="cover",
            depth=14,
            why="four 1x1 arrays behind double-buffered dispatchers: a pass taken at step 0 hands its blocks out "
            "from step 2 (latch, stage), the next pass is taken as its last block enters the stage, and the set "
            "is busy only after eight blocks (two passes) while the first ones still run",
        ),
        "array_drain": Proof("array_drain", lambda: ArrayDrain(_array(KaleidoConfig.one_array())), depth=3),
        "array_tiles": Proof(
            "array_tiles", lambda: ArrayDrain(_array(KaleidoConfig.one_array()), timing=True), depth=_LAT + 4
        ),
        "array_cover": Proof(
            "array_cover",
            lambda: ArrayDrain(_array(KaleidoConfig.one_array())),
            mode="cover",
            depth=_LAT + 4,
            slow=True,
            why="the last PE's first tile leaves tile_latency = 9 cycles from reset, a held one a cycle later",
        ),
        "accumulation_buffer_stream": Proof(
            "accumulation_buffer_stream", lambda: AccumulationBufferUnload(_buffer(SMALL_BUFFER), SMALL_BUFFER)
        ),
        "accumulation_buffer_unload": Proof(
            "accumulation_buffer_unload",
            lambda: AccumulationBufferUnload(_buffer(SMALL_BUFFER), SMALL_BUFFER, framing=True),
            mode="bmc",
            depth=12,
            why="N = 2: an unload is 4 words, so the depth covers two whole unloads with stalls between",
        ),
        "accumulation_buffer_unload_two_sets": Proof(
            "accumulation_buffer_unload_two_sets",
            lambda: AccumulationBufferUnload(
                _buffer(SMALL_BUFFER, s_sets=2), SMALL_BUFFER, framing=True, concurrent=True
            ),
            mode="bmc",
            depth=12,
            why="two S sets: tiles arrive during the unload; as accumulation_buffer_unload",
        ),
        "accumulation_buffer_cover": Proof(
            "accumulation_buffer_cover",
            lambda: AccumulationBufferUnload(_buffer(SMALL_BUFFER), SMALL_BUFFER, framing=True),
            mode="cover",
            depth=8,
            why="an unload of N^2 = 4 words",
        ),
        "accumulation_buffer_routing": Proof(
            "accumulation_buffer_routing",
            lambda: AccumulationBufferSums(_buffer(BANKED_BUFFER), BANKED_BUFFER, sums=False, fifo=False),
            depth=2,
        ),
        "accumulation_buffer_sums": Proof(
            "accumulation_buffer_sums",
            lambda: AccumulationBufferSums(_buffer(BANKED_BUFFER), BANKED_BUFFER, routing=False, fifo=False),
            mode="bmc",
            depth=_BANKED_DEPTH,
            why=_BANKED_WHY,
            map_memories=True,
        ),
        "accumulation_buffer_sums_two_sets": Proof(
            "accumulation_buffer_sums_two_sets",
            lambda: AccumulationBufferSums(_buffer(BANKED_BUFFER, s_sets=2), BANKED_BUFFER, routing=False, fifo=False),
            mode="bmc",
            depth=_BANKED_DEPTH,
            why="two S sets: tiles into one set while the other unloads; as sums",
            map_memories=True,
        ),
        "accumulation_buffer_sums_short": Proof(
            "accumulation_buffer_sums_short",
            lambda: AccumulationBufferSums(_buffer(BANKED_BUFFER), BANKED_BUFFER, routing=False, fifo=False),
            mode="bmc",
            depth=7,
            why="the fast subset's part of sums (14 s): a tile taken in cycle 0 or 1 is in its bank at 3 or 4, the "
            "buffer settles and the unload's first words leave by cycle 6; every trace of two cycles of passes and "
            "tiles (two lanes into one bank, a hold, a full FIFO) and its first words. sums (depth 9) is the deeper "
            "check. Not by k-induction: the step case starts from free bank memories, which a harness cannot name "
            "(no signal holds a memory word) to tie to its reference S",
            map_memories=True,
        ),
        "accumulation_buffer_fifo": Proof(
            "accumulation_buffer_fifo",
            lambda: AccumulationBufferSums(_buffer(BANKED_BUFFER), BANKED_BUFFER, routing=False, sums=False),
            depth=2,
        ),
        "accumulation_buffer_banked_cover": Proof(
            "accumulation_buffer_banked_cover",
            lambda: AccumulationBufferSums(_buffer(BANKED_BUFFER), BANKED_BUFFER),
            mode="cover",
            depth=12,
            why="two lanes into one bank, then a third tile: a hold and a full FIFO; a forward; a whole unload",
            map_memories=True,
        ),
        "accumulation_buffer_two_sets_cover": Proof(
            "accumulation_buffer_two_sets_cover",
            lambda: AccumulationBufferSums(_buffer(BANKED_BUFFER, s_sets=2), BANKED_BUFFER, routing=False, fifo=False),
            mode="cover",
            depth=9,
            why="sums_two_sets' covers within its depth: tiles into a set, its handoff, then tiles into the other "
            "set while the first unloads (step 3); a word of set 1; a hold, a full FIFO, a forward",
            map_memories=True,
        ),
        "tile_loader_flow": Proof("tile_loader_flow", lambda: TileLoaderFlow(_loader()), depth=2),
        "tile_loader_cover": Proof(
            "tile_loader_cover",
            lambda: TileLoaderFlow(_loader()),
            mode="cover",
            depth=8,
            why="a load of the whole buffer (2 words of 2 beats) ends 4 + latency cycles after its command",
        ),
        "memory_model_response": Proof(
            "memory_model_response", lambda: MemoryModelFlow(_memory(), list(MEMORY_INIT)), depth=2
        ),
        "memory_model_cover": Proof(
            "memory_model_cover",
            lambda: MemoryModelFlow(_memory(), list(MEMORY_INIT)),
            mode="cover",
            depth=5,
            why="two requests back to back, answered latency = 2 cycles later",
        ),
        "tile_loader_response": Proof(
            "tile_loader_response",
            lambda: LoadResponse(2, 2, 2),
            mode="bmc",
            depth=12,
            why="2 words of 2 beats, latency 2: the longest load is load_cycles(4, 2) = 6 cycles, so depth 12 holds "
            "two whole loads back to back after any command stream",
        ),
        "tile_feeder_flow": Proof("tile_feeder_flow", _feeder, depth=2),
        "tile_feeder_cover": Proof(
            "tile_feeder_cover",
            _feeder,
            mode="cover",
            depth=18,
            why="a command of 1-token runs: each side loads in 4 cycles (latency 1), the first word 2 cycles after "
            "the last response, a padded token's word at the 4th word",
        ),
        "core_stream": Proof(
            "core_stream",
            _core,
            mode="bmc",
            depth=_CORE_DEPTH,
            slow=True,
            timeout=600,
            why=f"the smallest core that elaborates (4x4 array, d = 4, tile (2, 2, 2), heads of up to 8 tokens): "
            f"{_CORE_DEPTH} cycles from reset hold the head command and the feeder's loads of the first query "
            "box's runs (requests and responses, stalls on every port); yices checks them in about 50 s (z3 checked "
            "steps 0 .. 14 in about 290 s, and step 15 did not finish within 300 s). The first write of a head of "
            "one token comes 1,340 cycles after its "
            "command (kaleido.model.core_cycles): no BMC or cover reaches it, so the write port's rule is checked "
            "only while it is idle. The stages are proved one by one (tile_feeder, pass_dispatcher, "
            "accumulation_buffer, tile_softmax, pv_tile, o_accumulator); this is their wiring's first cycles",
        ),
        "o_accumulator_stream": Proof("o_accumulator_stream", lambda: StreamPorts(_o_accumulator()), depth=2),
        "pv_tile_stream": Proof("pv_tile_stream", lambda: StreamPorts(_pv_tile()), depth=3),
        "pv_tile_scoreboard": Proof(
            "pv_tile_scoreboard",
            lambda: PvTileFlow(_pv_tile_small(), (2, 2, 2), 2),
            mode="bmc",
            depth=20,
            slow=True,
            map_memories=True,
            why=_PV_WHY,
        ),
        "pv_tile_response": Proof(
            "pv_tile_response",
            # one buffer: with two, a final key tile's passes may wait for the
            # previous key tile's, so the lone key tile's gap is no bound
            lambda: PvTileFlow(_pv_tile_small(buffers=1), (2, 2, 2), 2, bound=_PV_BOUND),
            mode="bmc",
            depth=20,
            slow=True,
            map_memories=True,
            why=_PV_WHY + "; the bound is exercised for the query tiles that end within the depth",
        ),
        "pv_tile_cover": Proof(
            "pv_tile_cover",
            lambda: PvTileFlow(_pv_tile_small(), (2, 2, 2), 2),
            mode="cover",
            depth=20,
            map_memories=True,
            why="a total out: a query tile of one key token and one row ends 15 cycles after its first beat",
        ),
        "o_accumulator_flow": Proof(
            "o_accumulator_flow",
            lambda: OAccumulatorFlow(_o_accumulator()),
            mode="bmc",
            depth=10,
            why="the accumulator's control is stage R and the o register (at most two final beats pending); every "
            "combination of the two with a stall is reached within 4 cycles, and depth 10 checks every sequence of "
            "up to 10 transfers and stalls from reset. k-induction does not converge: stage R's valid and final "
            "flags have no name the harness can read (white box), so an unreachable stage R hides behind a stall",
        ),
        "o_accumulator_cover": Proof(
            "o_accumulator_cover",
            lambda: OAccumulatorFlow(_o_accumulator()),
            mode="cover",
            depth=6,
            why="a final beat behind a stalled total is three transfers from reset",
        ),
        "tile_softmax_stream": Proof(
            "tile_softmax_stream",
            lambda: TileSoftmaxFlow(_tile_softmax()),
            mode="bmc",
            depth=16,
            why="2 lanes, 2 rows, a 3-bit reciprocal: a row's r is row_latency = 10 cycles after its last beat, so "
            "16 steps hold a row's r stalled while the next row's last beat waits for the divider (covered). "
            "k-induction does not converge: stage R's flags have no name for a white-box invariant",
        ),
        "tile_softmax_cover": Proof(
            "tile_softmax_cover",
            lambda: TileSoftmaxFlow(_tile_softmax()),
            mode="cover",
            depth=16,
            why="as tile_softmax_stream",
        ),
        "scheduler_partition": Proof(
            "scheduler_partition",
            lambda: SchedulerInvariants(_scheduler(SMALL_SCHEDULER)),
            depth=2,
            solver="z3",  # z3 closes the induction in about 45 s; yices had not in 240 s
        ),
        "pass_former_flow": Proof("pass_former_flow", lambda: PassFormerFlow(_former(), *PASS_FORMER), depth=2),
        "pass_former_stream": Proof(
            "pass_former_stream", lambda: PassFormerFlow(_former(), *PASS_FORMER, stream=True), depth=2, slow=True
        ),
        "pass_former_cover": Proof(
            "pass_former_cover",
            lambda: PassFormerFlow(_former(), *PASS_FORMER, stream=True),
            mode="cover",
            depth=_FORMER_PASSES + 2,
            slow=True,
            why=f"grid {PASS_FORMER[1]}: a head is {_FORMER_PASSES} passes, one a cycle at best",
        ),
        "scheduler_cover": Proof(
            "scheduler_cover",
            lambda: SchedulerPartition(_scheduler(SMALL_SCHEDULER), no_stall=True, deep_covers=False),
            mode="cover",
            depth=scheduler_window_cycles(SMALL_SCHEDULER, 8) + 4,  # 44
            slow=True,
            timeout=1200,
            why="a window of 8 strings, the quickest with room for an empty cluster between nonempty ones, "
            "ends 40 cycles from reset (3 m + 11 draws + 5)",
        ),
    }
)
