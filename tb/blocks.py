"""Reference-vs-RTL for every block, on any simulator: ``rtl(cases, sim)``
equals ``[ref(case) for case in cases]``.

A :class:`Case` names a block, a configuration, a seed, a stimulus source
and stall patterns; everything else is derived from it, so a case crosses
into a cocotb process as JSON and the stimulus is rebuilt there. ``ref``
is the golden model; ``rtl`` runs the block's bench (:mod:`kaleido.tb.benches`)
in the Amaranth simulator, or on the emitted Verilog under Icarus or
Verilator through :mod:`kaleido.tb.cocotb_blocks` (one simulator run per
configuration). Outputs are JSON-shaped: a list of words for a stream
block, ``[phase, value]`` drains for the PE, ``"r,c" -> drains`` for an
array.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import pathlib
from typing import Any

import numpy as np

from kaleido.config import KaleidoConfig
from kaleido.tb.benches import array_bench, dispatched_bench, pe_bench, pv_bench, stream_bench
from kaleido.tb.dispatch_cases import detector_case, matcher_case, scheduler_case
from kaleido.tb.driver import expected_drains, pe_beat
from kaleido.tb.kit import Backend, simulate
from kaleido.tb.linear_cases import window_detector_case
from kaleido.tb.o_accumulator_cases import o_accumulator_case
from kaleido.tb.passes import make_workload, pass_words, random_pass
from kaleido.tb.pv_tile_cases import pv_tile_bench, pv_tile_case
from kaleido.tb.softmax_cases import scaler_case, softmax_bench, softmax_case, tile_softmax_case

__all__ = ["Case", "BLOCKS", "SIMULATORS", "ref", "rtl", "bench", "stimulus"]

#: block -> emitted design
BLOCKS = {
    "detector": "detector",
    "matcher": "matcher",
    "scheduler": "scheduler",
    "pe": "kaleido_pe",
    "array": "kaleido_array",
    "dispatched": "dispatched_array",
    "pv": "pv_array",
    "window_detector": "window_detector",
    "linear": "dispatched_array",
    "softmax": "softmax",
    "output_scaler": "output_scaler",
    "tile_softmax": "tile_softmax",
    "o_accumulator": "o_accumulator",
    "pv_tile": "pv_tile",
}
SIMULATORS = ("amaranth", "icarus", "verilator")
_STREAM_CASES = {"detector": (detector_case, 120), "matcher": (matcher_case, 60), "scheduler": (scheduler_case, 213)}
_STREAM_CASES.update({"softmax": (softmax_case, 10), "output_scaler": (scaler_case, 12)})  # rows
_STREAM_CASES["window_detector"] = (window_detector_case, 150)
_STREAM_CASES["tile_softmax"] = (tile_softmax_case, 4)  # query tiles
_STREAM_CASES["o_accumulator"] = (o_accumulator_case, 3)  # query tiles
_STREAM_CASES["pv_tile"] = (pv_tile_case, 3)  # query tiles
#: stream blocks with their own bench (not one ``i`` -> ``o`` stream)
_OWN_BENCHES = {"softmax": softmax_bench, "tile_softmax": softmax_bench, "pv_tile": pv_tile_bench}


@dataclasses.dataclass(frozen=True)
class Case:
    """One stimulus of one block. ``config``: :class:`KaleidoConfig`
    overrides; ``source``: ``random`` or ``workload`` (stream blocks);
    ``size``: inputs (pairs, jobs, strings or passes; a default per block).
    For ``dispatched`` (a whole head through the pass dispatcher and the
    array) ``source`` is the workload kind and ``out_stall`` drives ``hold``."""

    block: str
    seed: int
    in_stall: str = "none"
    out_stall: str = "none"
    source: str = "random"
    size: int | None = None
    config: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        if self.block not in BLOCKS:
            raise ValueError(f"block must be one of {sorted(BLOCKS)}, not {self.block!r}")

    @property
    def cfg(self) -> KaleidoConfig:
        return KaleidoConfig.one_array(**dict(self.config))

    def to_json(self) -> dict:
        return {**dataclasses.asdict(self), "config": [list(kv) for kv in self.config]}

    @classmethod
    def from_json(cls, d: dict) -> Case:
        return cls(**{**d, "config": tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in d["config"])})


def _pe_beats(case: Case) -> list:
    """Every (phase, slot kind, q0, q1, k0, k1): one slot with random
    operands, then the four phase drains from that phase on."""
    import itertools

    rng = np.random.default_rng(case.seed)
    beats = []
    for phase, kind, q0, q1, k0, k1 in itertools.product(range(4), range(2), *[range(4)] * 4):
        if not kind:
            q1, k1 = q0, k0  # FULL8 carries one channel
        r0, r1, k = (int(x) for x in rng.integers(-128, 128, 3))
        beats.append(pe_beat(1, kind, phase, 0, r0, r0 if not kind else r1, q0, q1, k, k0, k1))
        beats += [pe_beat(0, 0, (phase + i) % 4, 1, 0, 0, 0, 0, 0, 0, 0) for i in range(4)]
    # P V mode: every PvSelect with random operands (pre-adds of any int8
    # pair: the 9-bit row operand), interleaved with the QK^T registers'
    # contents, then a T3 drain
    for sel, last in itertools.product(range(4), range(2)):
        r0, r1, k = (int(x) for x in rng.integers(-128, 128, 3))
        beats.append(pe_beat(1, 0, 3, last, r0, r1, 0, 0, k, sel, 0, pv=1))
    if case.cfg.pv_pairs:
        # paired P V beats (small-P pairing): every pair of selects with
        # random nibbles in r0 and r1 (whatever the other nibble holds) and
        # two random V values, drained after each select of beat A
        for sel_a, sel_b in itertools.product(range(4), range(4)):
            r0, r1, k, kb = (int(x) for x in rng.integers(-128, 128, 4))
            beats.append(pe_beat(1, 1, 3, int(sel_b == 3), r0, r1, 0, 0, k, sel_a, sel_b, pv=1, kb=kb))
    beats.append(pe_beat(1, 0, 0, 0, 100, 100, 0, 0, -77, 2, 2))  # QK^T after P V
    beats += [pe_beat(0, 0, i, 1, 0, 0, 0, 0, 0, 0, 0) for i in range(4)]
    return beats


def _array_beats(case: Case) -> list:
    rng = np.random.default_rng(case.seed)
    beats: list = []
    for _ in range(case.size or 6):
        beats += random_pass(rng, case.cfg, absent_p=0.25)[0]
    return beats


def _dispatched_passes(case: Case) -> tuple[list[int], list]:
    """The pass words of a whole head (``source``: the workload kind, grid
    2x3x4) and their golden beats."""
    cfg = case.cfg
    return pass_words(cfg, make_workload(case.source, (2, 3, 4), cfg.split, case.seed))


def _pv_head(case: Case) -> tuple[list[int], list]:
    """The unit words of a whole P V head (``source``: ``video`` or
    ``random`` V, grid 2x3x4) and their golden beats."""
    from kaleido.tb.pv_cases import pv_head, pv_words

    cfg = case.cfg
    P, V = pv_head(case.source, (2, 3, 4), cfg.split, case.seed, small_p=cfg.pv_pairs)
    return pv_words(cfg, P, V, (2, 3, 4), cfg.split)


def _linear_layer(case: Case) -> tuple[list[int], list]:
    """The pass words of a small linear layer (``source``: the motion of
    the video activations) and their golden beats."""
    from kaleido.tb.linear_cases import LINEAR_GRID, linear_layer, linear_pass_words

    X, W = linear_layer(case.source, case.seed)
    return linear_pass_words(case.cfg, X, W, LINEAR_GRID)


def _drains_json(drains: dict) -> dict:
    return {f"{r},{c}": [list(d) for d in v] for (r, c), v in drains.items()}


def stimulus(case: Case) -> tuple[list, Any]:
    """``(inputs, expected outputs)`` of a case: stream words, or beats."""
    cfg = case.cfg
    if case.block in _STREAM_CASES:
        make, size = _STREAM_CASES[case.block]
        return make(cfg, np.random.default_rng(case.seed), case.size or size, case.source)
    if case.block == "pe":
        beats = _pe_beats(case)
        return beats, [list(d) for d in expected_drains(beats, 1, 1, cfg.accumulators, cfg.acc_width)[(0, 0)]]
    if case.block in ("dispatched", "pv", "linear"):
        head = {"dispatched": _dispatched_passes, "pv": _pv_head, "linear": _linear_layer}[case.block]
        words, beats = head(case)
        return words, _drains_json(
            expected_drains(beats, cfg.array_rows, cfg.array_cols, cfg.accumulators, cfg.acc_width)
        )
    beats = _array_beats(case)
    return beats, _drains_json(expected_drains(beats, cfg.array_rows, cfg.array_cols, cfg.accumulators, cfg.acc_width))


def ref(case: Case) -> Any:
    """The golden model's output for a case."""
    return stimulus(case)[1]


async def bench(be: Backend, case: Case) -> Any:
    """The block's output for a case, on any backend."""
    inputs, _ = stimulus(case)
    cfg = case.cfg
    ins, outs, seed = case.in_stall, case.out_stall, case.seed
    if case.block in _OWN_BENCHES:
        return await _OWN_BENCHES[case.block](be, inputs, in_stall=ins, out_stall=outs, seed=seed)
    if case.block in _STREAM_CASES:
        return (await stream_bench(be, inputs, in_stall=ins, out_stall=outs, seed=seed))[0]
    if case.block == "pe":
        return [list(d) for d in await pe_bench(be, cfg, inputs)]
    if case.block == "pv":  # out_stall drives hold
        return _drains_json((await pv_bench(be, cfg, inputs, in_stall=ins, hold=outs, seed=seed)).drains)
    if case.block in ("dispatched", "linear"):  # the passes stream is always valid; out_stall drives hold
        return _drains_json((await dispatched_bench(be, cfg, inputs, hold=outs, seed=seed)).drains)
    return _drains_json((await array_bench(be, cfg, inputs, in_stall=ins, out_stall=outs, seed=seed)).drains)


def _design(case: Case) -> Any:
    from kaleido.hdl.emit import DESIGNS

    return DESIGNS[BLOCKS[case.block]](case.cfg)


def rtl(cases: list[Case], sim: str) -> list:
    """Every case through the block's RTL on ``sim`` (``amaranth``,
    ``icarus`` or ``verilator``); one output per case."""
    if sim not in SIMULATORS:
        raise ValueError(f"simulator must be one of {SIMULATORS}, not {sim!r}")
    if sim == "amaranth":
        return [simulate(_design(c), functools.partial(bench, case=c)) for c in cases]
    from kaleido.tb.runner import run_cocotb

    out: list = [None] * len(cases)
    groups: dict[tuple, list[int]] = {}
    for i, c in enumerate(cases):
        groups.setdefault((c.block, c.config), []).append(i)
    for (block, _), idx in groups.items():
        first = cases[idx[0]]
        result = run_cocotb(
            sim,
            BLOCKS[block],
            first.cfg,
            "kaleido.tb.cocotb_blocks",
            extra_env={"KALEIDO_CASES": json.dumps([cases[i].to_json() for i in idx])},
        )
        assert result["tests"] == 1 and result["failed"] == 0, result
        results = json.loads((pathlib.Path(result["build_dir"]) / "block_outputs.json").read_text())
        for i, value in zip(idx, results, strict=True):
            out[i] = value
    return out


def write_outputs(outputs: list, directory: str | os.PathLike) -> None:
    """Where :mod:`kaleido.tb.cocotb_blocks` leaves its outputs for :func:`rtl`."""
    (pathlib.Path(directory) / "block_outputs.json").write_text(json.dumps(outputs))
