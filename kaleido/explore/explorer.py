"""Design exploration on the cycle model (issue 14): ``kaleido explore`` or
``python -m kaleido.bench.explore``.

Every candidate design runs on a **tuning set** (the report's default
workloads, both motions) and a **held-out set** (other seeds, channel
spreads, grids, a photograph and the Wan split the project never tuned
on), over every core (:mod:`multiprocessing`). For each head it measures

* ``Q K^T`` cycles (:func:`kaleido.stage_timing.qk_timing`, equal to
  :func:`kaleido.model.run_model` on the RTL's settings) and the dense
  array's with the same PE count;
* whole attention: ``Q K^T``, the softmax unit and output scaler, and
  ``P V`` (:func:`kaleido.stage_timing.pv_timing`), one after another,
  against the dense array running the same three stages;
* the attention output's PSNR against int8 attention without reuse, as
  the hardware computes it (:func:`kaleido.golden.grouped.hw_attention`:
  Q row side, K column side, V FULL followers only).

Candidates are ranked by the geometric-mean whole-attention speedup over
the tuning set among those whose every tuning head keeps the quality floor
(40 dB by default); the held-out set is reported beside it. Each candidate
says whether its cycles are RTL-backed (``rtl``): ``yes`` (the built
design, cycle-exact against the RTL), ``config`` (a parameter the RTL
already takes), or ``no`` (a model of hardware that does not exist: an
estimate). Longer reuse windows are measured as an op bound only
(:func:`kaleido.golden.windows.window_bound`).

Writes ``results.json``, ``results.csv`` (one row per candidate and head)
and ``summary.md`` to ``--out`` (default ``build/explore``).
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import json
import math
import multiprocessing
import numbers
import os
import re
import sys
import time

import numpy as np

from ..calibrate import FLOOR, LADDER, search_thresholds
from ..config import KaleidoConfig
from ..golden.grouped import check_group_thresholds, hw_attention, int8_attention
from ..golden.softmax import head_p
from ..golden.windows import window_bound
from ..golden.workloads import DEFAULT_SPREAD, MOTIONS, Workload, synthetic_video
from ..stage_timing import (
    DISPATCHES,
    ISSUES,
    ORDERS,
    pv_timing,
    qk_passes,
    qk_timing,
    softmax_stage_cycles,
)
from .model import qk_cycle_budget
from .row_delta import pv_half_beats, window_p, window_pv_bounds

__all__ = [
    "WorkloadSpec",
    "TUNING",
    "HELD_OUT",
    "Candidate",
    "PAPER",
    "DEFAULT",
    "FLOOR",
    "LADDER",
    "ADAPTIVE",
    "calibration_spec",
    "candidates",
    "SHAPES",
    "shape_candidates",
    "BLOCK_TRANSISTORS",
    "ARRAYS_PER_DISPATCHER",
    "shape_transistors",
    "quick_candidates",
    "quality",
    "measure",
    "evaluate",
    "aggregate",
    "rank",
    "frontier",
    "BUDGET_PARTS",
    "cycle_budget",
    "budget_table",
    "explore",
    "rerank",
    "merge",
    "window_bounds",
    "geomean",
    "set_stats",
    "parse_thresholds",
    "BOUNDS_CSV",
    "bound_rows",
    "BOUND_THRESHOLDS",
    "fmt_thresholds",
    "CALIBRATION",
    "CALIBRATION_MARGIN",
    "calibrated_ceiling",
    "stacked_ceiling",
    "fixed_ceiling",
    "bounds_table",
    "BOUNDS_FIELDS",
    "write_bounds",
    "write_bounds_csv",
    "read_bounds_csv",
    "built_candidates",
    "SMALL_P_BASES",
    "small_p_candidates",
    "summary",
    "write",
]


@dataclasses.dataclass(frozen=True)
class WorkloadSpec:
    """A synthetic head (:func:`kaleido.golden.workloads.synthetic_video`)."""

    preset: str = "hunyuan"
    grid: tuple = (8, 16, 16)
    motion: str = "slow"
    seed: int = 0
    spread: float = DEFAULT_SPREAD
    image: str = "astronaut"

    def __post_init__(self):
        if self.motion not in MOTIONS:
            raise ValueError(f"motion must be one of {sorted(MOTIONS)}, not {self.motion!r}")

    @property
    def name(self) -> str:
        g = "x".join(str(x) for x in self.grid)
        extra = "" if self.image == "astronaut" else f" {self.image}"
        return f"{self.preset} {g} {self.motion} s{self.seed} sp{self.spread:g}{extra}"

    def load(self) -> Workload:
        return _load(self)


@functools.lru_cache(maxsize=16)
def _load(spec: WorkloadSpec) -> Workload:
    return synthetic_video(spec.preset, spec.grid, spec.motion, spec.seed, spread=spec.spread, image=spec.image)


@functools.lru_cache(maxsize=16)
def _reference(spec: WorkloadSpec) -> np.ndarray:
    w = spec.load()
    return int8_attention(w.q, w.k, w.v, scales=w.scales)


#: the report's default workloads (``make report``): both motions
TUNING = (WorkloadSpec(motion="slow"), WorkloadSpec(motion="fast"))

#: heads the project never tuned on: other seeds, spreads, grids, a photograph, the Wan split
HELD_OUT = (
    WorkloadSpec(motion="slow", seed=1),
    WorkloadSpec(motion="fast", seed=2),
    WorkloadSpec(motion="slow", seed=3, spread=1.0),
    WorkloadSpec(motion="fast", seed=4, spread=0.25),
    WorkloadSpec(grid=(6, 12, 16), motion="slow", seed=5),
    WorkloadSpec(grid=(4, 16, 24), motion="fast", seed=6),
    WorkloadSpec(motion="slow", seed=7, image="chelsea"),
    WorkloadSpec(preset="wan", motion="fast", seed=8),
)

#: adaptive threshold modes (:func:`measure`)
ADAPTIVE = (None, "uniform", "group", "group-calibrated")


@dataclasses.dataclass(frozen=True)
class Candidate:
    """One design point. ``thresholds``: one ``(F, P)`` or three (t, x, y);
    ``v_full``: V's FULL threshold per group (default each group's ``F``);
    ``adaptive``: ``None``, ``"uniform"`` (per head, the fastest rung of
    :data:`LADDER` at or above the floor), ``"group"`` (that, then each
    group's ``F`` lowered while the floor holds) or ``"group-calibrated"``
    (``"group"``'s choice on :func:`calibration_spec`'s head, the same
    layer on other input, at ``margin`` dB above the floor, applied to this
    head); ``rtl``: ``yes``,
    ``config`` or ``no`` (see module doc); ``area``: the cost estimate."""

    name: str
    family: str
    thresholds: tuple = (5, 3)
    v_full: tuple | None = None
    accumulators: int = 3
    rows: int = 4
    cols: int = 4
    arrays: int = 1
    order: str = "lfsr"
    window: int | None = None
    issue: str = "array"
    #: how passes reach several arrays (:data:`kaleido.stage_timing.DISPATCHES`)
    dispatch: str = "round-robin"
    #: ``(r, c)``: each ``rows x cols`` pass split over ``r x c`` arrays in step
    sub_array: tuple | None = None
    lookahead: int = 4
    adaptive: str | None = None
    #: dB above the floor a ``"group-calibrated"`` candidate chooses at
    margin: float = 0.0
    pv_small: int | None = None
    #: ``(rows, cols)``: P V on one array of that shape (16 PEs) instead of
    #: the candidate's Q K^T arrays (the core's P V stage is one 4x4 ``PvArray``)
    pv_shape: tuple | None = None
    rtl: str = "yes"
    area: str = "the built design"
    note: str = ""

    def __post_init__(self):
        check_group_thresholds(self.thresholds)
        if self.order not in ORDERS:
            raise ValueError(f"order must be one of {ORDERS}, not {self.order!r}")
        if self.issue not in ISSUES:
            raise ValueError(f"issue must be one of {ISSUES}, not {self.issue!r}")
        if self.dispatch not in DISPATCHES:
            raise ValueError(f"dispatch must be one of {DISPATCHES}, not {self.dispatch!r}")
        if self.sub_array is not None:
            r, c = self.sub_array
            if self.issue != "array" or self.arrays != 1 or self.rows % r or self.cols % c:
                raise ValueError(
                    f"sub_array {r}x{c} splits one {self.rows}x{self.cols} array's passes (issue 'array'), "
                    f"not {self.arrays} arrays with issue {self.issue!r}"
                )
        if self.adaptive not in ADAPTIVE:
            raise ValueError(f"adaptive must be one of {ADAPTIVE}, not {self.adaptive!r}")
        if not isinstance(self.margin, (int, float)) or not 0 <= self.margin <= 20:
            raise ValueError(f"margin must be a number of dB in [0, 20], not {self.margin!r}")
        if self.pv_small is not None and (
            isinstance(self.pv_small, bool) or not isinstance(self.pv_small, int) or not 1 <= self.pv_small <= 16
        ):
            raise ValueError(f"pv_small must be None or an integer in 1..16, not {self.pv_small!r}")
        if self.pv_shape is not None and (
            not isinstance(self.pv_shape, tuple)
            or len(self.pv_shape) != 2
            or not all(isinstance(x, int) and x > 0 for x in self.pv_shape)
            or self.pv_shape[0] * self.pv_shape[1] != 16
        ):
            raise ValueError(f"pv_shape must be None or (rows, cols) of one 16-PE array, not {self.pv_shape!r}")
        if self.rtl not in ("yes", "config", "no"):
            raise ValueError(f"rtl must be 'yes', 'config' or 'no', not {self.rtl!r}")
        if self.rows * self.cols * self.arrays != 16:
            raise ValueError(
                f"candidates compare at 16 PEs: {self.arrays} x {self.rows}x{self.cols} has "
                f"{self.rows * self.cols * self.arrays}"
            )

    def config(self, split) -> KaleidoConfig:
        fp = check_group_thresholds(self.thresholds)
        return KaleidoConfig.one_array(
            F=fp[0][0],
            P=fp[0][1],
            group_thresholds=fp,
            split=tuple(split),
            accumulators=self.accumulators,
            array_rows=self.rows,
            array_cols=self.cols,
            lookahead=self.lookahead,
        )


#: the paper's design, as built: (5, 3), three accumulators, one 4x4 array, scheduler and matcher
PAPER = Candidate("paper", "paper", note="the paper's design (spec sec. 5-8), KaleidoConfig.paper()")

#: the project's default reuse on one 4x4 array (``KaleidoConfig.one_array()``,
#: the default design until the small arrays became it): per-group
#: thresholds t (7,4) x (7,4) y (6,4) on Q K^T at run time, P V's FULL
#: threshold 7, four accumulators. The candidate keeps its name "default"
#: (the results' label); the default design is the built candidate
#: "default 16x 1x1 queue, P V 4x4 + small-P pairs" (:func:`small_p_candidates`)
DEFAULT = Candidate(
    "default",
    "default",
    ((7, 4), (7, 4), (6, 4)),
    v_full=(7, 7, 7),
    accumulators=4,
    area="4 accumulators (measured) + run-time per-group threshold registers (docs/SYNTH.md)",
    note="the default reuse on one 4x4 array, KaleidoConfig.one_array()",
)

_PE_AREA = "PE cells 1,790 with 4 accumulators, 1,545 with 3 (docs/SYNTH_TABLE.md, docs/SYNTH.md)"


def candidates() -> list[Candidate]:
    """Every candidate of the full sweep."""
    out = _reference_candidates()
    out += _threshold_candidates()
    out += _group_threshold_candidates()
    out += _adaptive_candidates()
    out += _array_count_candidates()
    out += shape_candidates()
    for fp, acc in (((5, 3), 3), ((6, 4), 4)):
        out += _dispatch_candidates(fp, acc)
    out += _stack_candidates()
    out += built_candidates(out)
    out += small_p_candidates(out)
    return out


def _reference_candidates() -> list[Candidate]:
    """The paper's design, the default reuse on one array, and it with P
    V's FULL threshold 6."""
    return [
        PAPER,
        DEFAULT,
        dataclasses.replace(
            DEFAULT,
            name="default V6",
            family="v-threshold",
            v_full=(6, 6, 6),
            rtl="config",
            note="the one-array design with P V's FULL threshold 6 (KaleidoConfig.one_array(F=6), the same group "
            "thresholds)",
        ),
    ]


_ACC4_AREA = f"{_PE_AREA}; a fourth accumulator adds about 10 % (estimate: one 19-bit register and adder)"


def _threshold_candidates() -> list[Candidate]:
    """A fourth accumulator, the (F, P) grid with three and four, and P
    V's own FULL threshold."""
    out = [
        Candidate("acc4", "accumulators", accumulators=4, rtl="config", area=_ACC4_AREA, note="spec sec. 5 extension")
    ]
    for acc in (3, 4):
        for F, P in ((4, 3), (4, 4), (5, 4), (6, 3), (6, 4), (6, 6), (7, 4), (7, 7), (8, 4)):
            out.append(
                Candidate(
                    f"F{F}P{P} acc{acc}",
                    "thresholds",
                    (F, P),
                    accumulators=acc,
                    rtl="config" if acc == 4 else "yes",
                    area="as the paper's" if acc == 3 else _ACC4_AREA,
                )
            )
    for qk, vf in (((5, 4), 6), ((5, 4), 7), ((5, 4), 9), ((6, 4), 7), ((6, 4), 9)):
        out.append(
            Candidate(
                f"F{qk[0]}P{qk[1]} V{vf} acc4",
                "v-threshold",
                qk,
                v_full=(vf,) * 3,
                accumulators=4,
                rtl="no",
                area="one more 4-bit threshold register (estimate: negligible)",
                note="P V's own FULL threshold",
            )
        )
    return out


def _group_threshold_candidates() -> list[Candidate]:
    """Per-group Q K^T thresholds t, x, y in 5..7 (P 4) that differ."""
    out: list[Candidate] = []
    for ft in (5, 6, 7):
        for fx in (5, 6, 7):
            for fy in (5, 6, 7):
                if ft == fx == fy:
                    continue
                out.append(
                    Candidate(
                        f"group t{ft} x{fx} y{fy} P4 acc4",
                        "group-thresholds",
                        ((ft, 4), (fx, 4), (fy, 4)),
                        accumulators=4,
                        rtl="no",
                        area="per-group thresholds: two 4-bit registers per group in each detector "
                        "(estimate: negligible)",
                    )
                )
    return out


def _adaptive_candidates() -> list[Candidate]:
    """Thresholds per head: uniform, per group, or calibrated on the same
    layer's other-motion head."""
    adaptive_area = "threshold registers per head, set by offline calibration (estimate: negligible on chip)"
    return [
        Candidate("adaptive uniform acc3", "adaptive", adaptive="uniform", rtl="no", area=adaptive_area),
        Candidate(
            "adaptive uniform acc4", "adaptive", accumulators=4, adaptive="uniform", rtl="no", area=adaptive_area
        ),
        Candidate("adaptive group acc4", "adaptive", accumulators=4, adaptive="group", rtl="no", area=adaptive_area),
        Candidate(
            "calibrated group acc4",
            "adaptive",
            accumulators=4,
            adaptive="group-calibrated",
            rtl="no",
            area=adaptive_area,
            note="thresholds chosen on the same layer's other-motion head",
        ),
        Candidate(
            "calibrated group +1.5 dB acc4",
            "adaptive",
            accumulators=4,
            adaptive="group-calibrated",
            margin=1.5,
            rtl="no",
            area=adaptive_area,
            note="thresholds chosen at 41.5 dB on the same layer's other-motion head",
        ),
        Candidate(
            "calibrated group +1.5 dB acc4 V7",
            "adaptive",
            accumulators=4,
            v_full=(7, 7, 7),
            adaptive="group-calibrated",
            margin=1.5,
            area="run-time per-group threshold registers (docs/SYNTH.md), set per head by kaleido calibrate",
            note="as built: per-group Q K^T thresholds per head (kaleido calibrate), P V's FULL threshold 7",
        ),
    ]


def _array_count_candidates() -> list[Candidate]:
    """Array count and shape at 16 PEs, one dispatcher per array."""
    out: list[Candidate] = []
    for (rows, cols, arrays), fp, acc in (
        ((2, 2, 4), (5, 3), 3),
        ((1, 1, 16), (5, 3), 3),
        ((2, 4, 2), (5, 3), 3),
        ((4, 2, 2), (5, 3), 3),
        ((2, 2, 4), (6, 4), 4),
        ((1, 1, 16), (6, 4), 4),
    ):
        out.append(
            Candidate(
                f"{arrays}x {rows}x{cols} F{fp[0]}P{fp[1]} acc{acc}",
                "shape",
                fp,
                accumulators=acc,
                rows=rows,
                cols=cols,
                arrays=arrays,
                rtl="config",
                area=f"{arrays} dispatchers (scheduler + matcher, about 8,200 cells each, docs/SYNTH_TABLE.md) "
                f"instead of 1; operand ports {arrays * (rows + cols)} instead of 8",
                note="array count/shape at 16 PEs; P V dealt by query blocks (estimate)",
            )
        )
    return out


_GREEDY_AREA = "a batch-wide pass-aware scheduler (estimate: unit memory of a batch, 1,024 strings, vs 64)"


def _dispatch_candidates(fp: tuple, acc: int) -> list[Candidate]:
    """At one (F, P) and accumulator count: no scheduler, greedy schedulers,
    per-PE issue, and matcher lookahead 8."""
    return [
        Candidate(
            f"queue F{fp[0]}P{fp[1]} acc{acc}",
            "scheduler",
            fp,
            accumulators=acc,
            order="queue",
            rtl="yes" if acc == 3 else "config",
            area="no scheduler (pe-m)",
        ),
        Candidate(
            f"greedy F{fp[0]}P{fp[1]} acc{acc}",
            "scheduler",
            fp,
            accumulators=acc,
            order="greedy",
            rtl="no",
            area=_GREEDY_AREA,
        ),
        Candidate(
            f"greedy64 F{fp[0]}P{fp[1]} acc{acc}",
            "scheduler",
            fp,
            accumulators=acc,
            order="greedy",
            window=64,
            rtl="no",
            area="greedy pass-aware scheduler on the RTL's 64-string window (estimate: as the scheduler)",
        ),
        Candidate(
            f"per-PE issue F{fp[0]}P{fp[1]} acc{acc}",
            "issue",
            fp,
            accumulators=acc,
            issue="pe",
            rtl="no",
            area="per-PE operand queues and slot streams (estimate: a matcher and a 16-deep operand FIFO "
            "per PE, about +40 % of the array)",
            note="bound of any row/column/PE issue mask that keeps the passes in step",
        ),
        Candidate(
            f"lookahead8 F{fp[0]}P{fp[1]} acc{acc}",
            "matcher",
            fp,
            accumulators=acc,
            lookahead=8,
            rtl="config",
            area="matcher lookahead 8 (estimate: +60 % of a 416-cell matcher)",
        ),
    ]


def _stack_candidates() -> list[Candidate]:
    """Levers stacked: adaptive or calibrated group thresholds with the
    greedy scheduler, small arrays or per-PE issue."""
    stack_area = "4 accumulators + per-group thresholds + batch-wide scheduler (estimates above)"
    return [
        *_adaptive_stacks(stack_area),
        *_calibrated_stacks(stack_area),
        Candidate(
            "stack: adaptive group + per-PE issue acc4",
            "stack",
            accumulators=4,
            issue="pe",
            adaptive="group",
            rtl="no",
            area=stack_area + "; per-PE issue",
        ),
    ]


def _adaptive_stacks(stack_area: str) -> list[Candidate]:
    """Adaptive group thresholds with the greedy scheduler, 4x 2x2 or 16x 1x1."""
    return [
        Candidate(
            "stack: adaptive group + greedy acc4",
            "stack",
            accumulators=4,
            order="greedy",
            adaptive="group",
            rtl="no",
            area=stack_area,
        ),
        Candidate(
            "stack: adaptive group + greedy + 4x 2x2 acc4",
            "stack",
            accumulators=4,
            order="greedy",
            adaptive="group",
            rows=2,
            cols=2,
            arrays=4,
            rtl="no",
            area=stack_area + "; 4 dispatchers",
        ),
        Candidate(
            "stack: adaptive group + 16x 1x1 acc4",
            "stack",
            accumulators=4,
            adaptive="group",
            rows=1,
            cols=1,
            arrays=16,
            rtl="no",
            area=stack_area.replace(" + batch-wide scheduler", "") + "; 16 one-PE arrays, each with a matcher",
        ),
    ]


def _calibrated_stacks(stack_area: str) -> list[Candidate]:
    """Calibrated group thresholds (at the floor and 1.5 dB above) with the
    greedy scheduler on 4x 2x2, or 16x 1x1."""
    return [
        Candidate(
            "stack: calibrated group + greedy + 4x 2x2 acc4",
            "stack",
            accumulators=4,
            order="greedy",
            adaptive="group-calibrated",
            rows=2,
            cols=2,
            arrays=4,
            rtl="no",
            area=stack_area + "; 4 dispatchers",
        ),
        Candidate(
            "stack: calibrated group +1.5 dB + greedy + 4x 2x2 acc4",
            "stack",
            accumulators=4,
            order="greedy",
            adaptive="group-calibrated",
            margin=1.5,
            rows=2,
            cols=2,
            arrays=4,
            rtl="no",
            area=stack_area + "; 4 dispatchers",
        ),
        Candidate(
            "stack: calibrated group +1.5 dB + 16x 1x1 acc4",
            "stack",
            accumulators=4,
            adaptive="group-calibrated",
            margin=1.5,
            rows=1,
            cols=1,
            arrays=16,
            rtl="no",
            area=stack_area.replace(" + batch-wide scheduler", "") + "; 16 one-PE arrays, each with a matcher",
        ),
    ]


def built_candidates(base: list[Candidate]) -> list[Candidate]:
    """What the attention core builds beyond the default (issue 14): its
    ``Q K^T`` engine on 16 1x1 arrays behind a shared pass queue
    (``KaleidoConfig(sub_arrays=(1, 1))``, the ``default 16x 1x1 queue``
    candidate's ``Q K^T``) and its P V stage's one 4x4 ``PvArray``."""
    by_name = {c.name: c for c in base}
    q = by_name.get("default 16x 1x1 queue")
    if q is None:
        raise ValueError("built_candidates: no base candidate 'default 16x 1x1 queue'")
    return [
        dataclasses.replace(
            q,
            name="default 16x 1x1 queue, P V 4x4",
            family="built",
            pv_shape=(4, 4),
            rtl="yes",
            area="the core with sub_arrays=(1, 1): the default design's core; its transistors against "
            "one_array's in docs/SYNTH_TABLE.md (make synth)",
            note="the core as built with KaleidoConfig(sub_arrays=(1, 1)): Q K^T on 16 1x1 arrays behind a "
            "shared pass queue, P V on the one 4x4 PvArray",
        )
    ]


#: array shapes at 16 PEs besides one 4x4: (rows, cols, arrays)
SHAPES = ((2, 4, 2), (4, 2, 2), (2, 2, 4), (1, 1, 16))

_DISPATCH_NOTE = {
    "round-robin": "passes dealt round-robin",
    "queue": "each array takes the next pass from a shared pass queue when it is free",
    "rows": "passes split statically by row group (array = row group mod arrays)",
    "columns": "passes split statically by column group (array = column group mod arrays)",
}


def shape_candidates() -> list[Candidate]:
    """Array shape and count at 16 PEs behind one dispatcher (issue 14),
    with the default design's thresholds and with the paper's: every shape
    of :data:`SHAPES` with every dispatch policy, and one 4x4 array's
    passes split over arrays in step (``sub_array``). The paper's
    round-robin shapes are the ``shape`` family's ``F5P3 acc3`` candidates."""
    out = []
    for base, tag in ((DEFAULT, "default"), (PAPER, "paper")):
        for rows, cols, arrays in SHAPES:
            for dispatch in DISPATCHES:
                if base is PAPER and dispatch == "round-robin":
                    continue
                suffix = "" if dispatch == "round-robin" else f" {dispatch}"
                out.append(
                    dataclasses.replace(
                        base,
                        name=f"{tag} {arrays}x {rows}x{cols}{suffix}",
                        family="shape",
                        rows=rows,
                        cols=cols,
                        arrays=arrays,
                        dispatch=dispatch,
                        rtl="no",
                        area=f"estimate: {arrays} arrays of {rows}x{cols}, a matcher and P V dispatcher each, "
                        "one scheduler pair; docs/EXPLORATION.md, 'Array shape and count'",
                        note=f"{tag} thresholds; {_DISPATCH_NOTE[dispatch]}",
                    )
                )
            out.append(
                dataclasses.replace(
                    base,
                    name=f"{tag} 4x4 split {rows}x{cols}",
                    family="shape",
                    sub_array=(rows, cols),
                    rtl="no",
                    area=f"estimate: {arrays} arrays of {rows}x{cols} with a matcher each, in step on one 4x4 "
                    "pass stream; docs/EXPLORATION.md, 'Array shape and count'",
                    note=f"{tag} thresholds; each 4x4 pass split by rows/columns over {arrays} {rows}x{cols} arrays "
                    "that issue their own slots, the pass ends with the slowest",
                )
            )
    return out


#: the candidates :func:`small_p_candidates` adds small-P pairing to
SMALL_P_BASES = (
    "default",
    "default 16x 1x1 queue",
    "default 16x 1x1 queue, P V 4x4",
    "stack: adaptive group + 16x 1x1 acc4",
    "stack: calibrated group +1.5 dB + 16x 1x1 acc4",
)


def small_p_candidates(base: list[Candidate]) -> list[Candidate]:
    """Small-P pairing on P V (``pv_small=16``, :func:`kaleido.stage_timing.pv_timing`)
    on the candidates of :data:`SMALL_P_BASES` found in ``base``: built
    (``KaleidoConfig.pv_pairs``, the greedy rule of
    :func:`kaleido.golden.pv.pair_pass`), so ``rtl`` is ``config`` where the
    base is built, ``no`` where it is not (P V on small arrays). It
    does not change the output (the same products, two a beat), and a dense
    array could pair small P the same way: the rows report that array too
    (``attention_speedup_vs_dense_small``)."""
    by_name = {c.name: c for c in base}
    missing = [n for n in SMALL_P_BASES if n not in by_name]
    if missing:
        raise ValueError(f"small_p_candidates: no base candidate {missing}")
    return [
        dataclasses.replace(
            by_name[n],
            name=f"{n} + small-P pairs",
            family="small-p",
            pv_small=16,
            rtl="config" if by_name[n].rtl in ("yes", "config") else "no",
            area=by_name[n].area + "; pairing synthesized (docs/DESIGN.md): PE +3.8 %, P V dispatcher +93 %, "
            "P V array +20.8 % transistors (about +0.9 % of the core, estimated)",
            note=(by_name[n].note + "; " if by_name[n].note else "")
            + "P V beats whose P is below 16 at every row pair up, two a beat",
        )
        for n in SMALL_P_BASES
    ] + [
        dataclasses.replace(
            by_name[n],
            name=f"{n} + small-P pairs, V exact",
            family="small-p",
            v_full=(9, 9, 9),
            pv_small=16,
            rtl="config" if by_name[n].rtl in ("yes", "config") else "no",
            area=by_name[n].area + "; as the small-P pairs candidates, V reuse off",
            note="small-P pairing with V reuse off (V's FULL threshold 9): the pairing does the P V work, "
            "and the quality V reuse cost goes to Q K^T's thresholds",
        )
        for n in SMALL_P_BASES
        if n.startswith("stack")
    ]


#: transistors of the blocks an array shape is built from, measured with
#: ``make synth``'s flow at ``KaleidoConfig.one_array()`` (docs/SYNTH_TABLE.md for the
#: 4x4 entries; :func:`kaleido.synth.flow.synth_design` with the array shape
#: overridden, no Fmax, for the others; docs/EXPLORATION.md). A scheduler's
#: key is its window in strings (16 per unit of a pass side).
BLOCK_TRANSISTORS = {
    "array 4x4": 286_252,
    "array 2x4": 142_690,
    "array 4x2": 144_348,
    "array 2x2": 70_436,
    "array 1x1": 16_578,
    "pv_dispatcher 4x4": 8_062,
    "pv_dispatcher 2x4": 5_848,
    "pv_dispatcher 4x2": 6_266,
    "pv_dispatcher 2x2": 4_074,
    "pv_dispatcher 1x1": 2_098,
    "scheduler 64": 81_582,
    "scheduler 32": 45_638,
    "scheduler 16": 27_926,
    "matcher": 4_200,
    "detector": 20_674,
    "dense array 4x4": 102_606,
}

#: arrays that share one pair of detectors and schedulers (docs/SYNTH.md, the paper's 8 per dispatcher)
ARRAYS_PER_DISPATCHER = 8


def shape_transistors(rows: int, cols: int, arrays: int, sub_array=None, blocks: dict | None = None) -> dict:
    """An **estimate** of the transistors per 16 PEs of ``arrays`` arrays
    of ``rows x cols`` behind one dispatcher (or, with ``sub_array=(r,
    c)``, one ``rows x cols`` array's passes split over arrays of ``r x c``
    in step), from measured blocks (:data:`BLOCK_TRANSISTORS`): every array
    with its own matcher (its own slot stream) and P V dispatcher (one
    ``rows x cols`` P V dispatcher for the arrays in step, whose P V pass is
    the whole pass), and the share of 16 PEs of a dispatcher's two
    detectors and two schedulers (Q side window ``16 rows``, K side ``16
    cols``), which serve :data:`ARRAYS_PER_DISPATCHER` 16-PE groups. The
    pass queue or static split that deals passes to the arrays is left out
    (a counter and a comparator per array). ``ports``: operand words a beat
    (row plus column operands of every array). Keys: ``arrays``,
    ``matchers``, ``pv_dispatchers``, ``shared``, ``total``, ``ports``,
    ``vs_dense`` (total over the dense 4x4 array)."""
    b = BLOCK_TRANSISTORS if blocks is None else blocks
    if sub_array is not None:
        if arrays != 1:
            raise ValueError(f"sub_array splits one array's passes, not {arrays} arrays'")
        r, c = sub_array
        if rows % r or cols % c:
            raise ValueError(f"sub_array {r}x{c} must divide the {rows}x{cols} pass")
        n, pvd = (rows // r) * (cols // c), b[f"pv_dispatcher {rows}x{cols}"]
    else:
        r, c, n = rows, cols, arrays
        pvd = arrays * b[f"pv_dispatcher {rows}x{cols}"]
    if r * c * n != 16:
        raise ValueError(f"the estimate is per 16 PEs, not {n} x {r}x{c}")
    shared = (2 * b["detector"] + b[f"scheduler {16 * rows}"] + b[f"scheduler {16 * cols}"]) / ARRAYS_PER_DISPATCHER
    out = {
        "arrays": n * b[f"array {r}x{c}"],
        "matchers": n * b["matcher"],
        "pv_dispatchers": pvd,
        "shared": shared,
        "ports": n * (r + c),
    }
    out["total"] = out["arrays"] + out["matchers"] + out["pv_dispatchers"] + out["shared"]
    out["vs_dense"] = out["total"] / b["dense array 4x4"]
    return out


def quick_candidates() -> list[Candidate]:
    """A small subset (``--quick``, the report's fallback, the tests)."""
    names = {"paper", "acc4", "F6P4 acc4", "group t5 x6 y6 P4 acc4", "greedy F6P4 acc4", "adaptive uniform acc4"}
    return [c for c in candidates() if c.name in names]


@functools.lru_cache(maxsize=512)
def quality(spec: WorkloadSpec, fp: tuple, vf: tuple) -> tuple[float, float]:
    """PSNR and cosine of the hardware's attention output (hardware-independent: cached per head)."""
    w = spec.load()
    q = hw_attention(w.q, w.k, w.v, w.grid, w.split, fp, list(vf), scales=w.scales, reference=_reference(spec))
    return q["vs_int8"]["psnr"], q["vs_int8"]["cosine"]


def _measure_fixed(spec: WorkloadSpec, cand: Candidate, thresholds, v_full) -> dict:
    w = spec.load()
    fp = check_group_thresholds(thresholds)
    cfg = dataclasses.replace(cand, thresholds=fp).config(w.split)
    passes = _qk_passes(
        spec,
        fp,
        cand.accumulators,
        cand.rows,
        cand.cols,
        cand.lookahead,
        cand.order,
        cand.window,
        cand.issue,
        cand.sub_array,
    )
    qk = qk_timing(
        w.q,
        w.k,
        w.grid,
        w.split,
        cfg,
        fp,
        order=cand.order,
        issue=cand.issue,
        arrays=cand.arrays,
        window=cand.window,
        dispatch=cand.dispatch,
        sub_array=cand.sub_array,
        passes=passes,
    )
    vf = tuple(F for F, _ in fp) if v_full is None else tuple(int(x) for x in v_full)
    p = None if cand.pv_small is None else _p_operand(spec, fp)
    pv_cfg, pv_arrays = (
        (cfg, cand.arrays)
        if cand.pv_shape is None
        else (cfg.replace(array_rows=cand.pv_shape[0], array_cols=cand.pv_shape[1]), 1)
    )
    pv = pv_timing(w.v, w.grid, w.split, pv_cfg, vf, arrays=pv_arrays, p=p, small_p=cand.pv_small)
    sm = softmax_stage_cycles(w.n, w.d)
    psnr, cosine = quality(spec, fp, vf)
    att = qk.cycles + sm + pv["cycles"]
    att_dense = qk.dense_cycles + sm + pv["dense_cycles"]
    small = {}
    if cand.pv_small is not None:  # the dense array given the same small-P pairing, for comparison
        small = {
            "pv_dense_small_cycles": pv["dense_small_cycles"],
            "attention_speedup_vs_dense_small": (qk.dense_cycles + sm + pv["dense_small_cycles"]) / att,
        }
    return {
        "thresholds": [list(x) for x in fp],
        "v_full": list(vf),
        "qk_cycles": qk.cycles,
        "qk_dense_cycles": qk.dense_cycles,
        "qk_speedup": qk.speedup,
        "qk_utilization": qk.utilization,
        "qk_op_reduction": 1 - qk.ops["hw"] / qk.ops["dense"],
        "pv_cycles": pv["cycles"],
        "pv_dense_cycles": pv["dense_cycles"],
        "softmax_cycles": sm,
        "attention_cycles": att,
        "attention_dense_cycles": att_dense,
        "attention_speedup": att_dense / att,
        "psnr": psnr,
        "cosine": cosine,
        **{f"qk_{k}_cycles": v for k, v in qk_cycle_budget(qk).items()},
        **small,
    }


@functools.lru_cache(maxsize=4)
def _p_operand(spec: WorkloadSpec, fp: tuple) -> np.ndarray:
    """The P operand of a head (the fixed-point softmax of its reuse scores
    with thresholds ``fp``, :func:`kaleido.golden.softmax.head_p`):
    what the small-P pairing (``Candidate.pv_small``) inspects."""
    w = spec.load()
    return head_p(w.q, w.k, w.grid, w.split, fp, scales=w.scales)


@functools.lru_cache(maxsize=4)
def _qk_passes(spec: WorkloadSpec, fp: tuple, accumulators, rows, cols, lookahead, order, window, issue, sub_array):
    """:func:`kaleido.stage_timing.qk_passes` of a head, cached: candidates
    that differ only in how the passes reach the arrays share them."""
    w = spec.load()
    cfg = Candidate(
        "passes",
        "passes",
        fp,
        accumulators=accumulators,
        rows=rows,
        cols=cols,
        arrays=16 // (rows * cols),
        lookahead=lookahead,
    ).config(w.split)
    return qk_passes(w.q, w.k, w.grid, w.split, cfg, fp, order=order, issue=issue, window=window, sub_array=sub_array)


def measure(spec: WorkloadSpec, cand: Candidate, floor: float = FLOOR) -> dict:
    """One candidate on one head: cycles (``Q K^T``, softmax, ``P V``,
    attention, each with the dense array's) and quality. An adaptive
    candidate first picks this head's thresholds: the most aggressive rung
    of :data:`LADDER` whose output keeps ``floor`` (the last rung, reuse
    off, if none does); ``"group"`` then lowers one group's ``F`` at a time
    (x, y, t, repeated) while the floor holds and the attention speedup
    grows. ``search`` lists the points it tried."""
    if cand.adaptive is None:
        return _measure_fixed(spec, cand, cand.thresholds, cand.v_full)
    if cand.adaptive == "group-calibrated":
        calib = calibration_spec(spec)
        chosen = measure(calib, dataclasses.replace(cand, adaptive="group"), floor + cand.margin)
        row = _measure_fixed(spec, cand, chosen["thresholds"], cand.v_full)
        return {**row, "calibrated_on": calib.name, "calibration_psnr": chosen["psnr"], "search": chosen["search"]}

    def psnr(fp) -> float:
        fp = check_group_thresholds(fp)
        return quality(spec, fp, tuple(F for F, _ in fp) if cand.v_full is None else tuple(cand.v_full))[0]

    _, best, search = search_thresholds(
        psnr, lambda fp: _measure_fixed(spec, cand, fp, cand.v_full), floor, group=cand.adaptive == "group"
    )
    return {**best, "search": search}


def calibration_spec(spec: WorkloadSpec) -> WorkloadSpec:
    """The head a ``"group-calibrated"`` candidate chooses ``spec``'s
    thresholds on: the same layer (seed: projections, channel gains, view;
    preset, grid, spread, photograph) seeing the other motion, so the
    thresholds are never chosen on the head they are measured on."""
    return dataclasses.replace(spec, motion="fast" if spec.motion == "slow" else "slow")


def _task(args):
    cand, spec, group, floor = args
    t0 = time.time()
    row = measure(spec, cand, floor)
    return {"candidate": cand.name, "workload": spec.name, "set": group, **row, "seconds": time.time() - t0}


def evaluate(
    cands: list[Candidate],
    sets: dict[str, tuple] | None = None,
    *,
    jobs: int | None = None,
    floor: float = FLOOR,
    log=None,
) -> list[dict]:
    """Rows of every candidate on every head of ``sets`` (name -> specs,
    default tuning and held-out), on ``jobs`` processes (default every
    core; 1 runs in this process)."""
    sets = {"tuning": TUNING, "held_out": HELD_OUT} if sets is None else sets
    tasks = [(c, s, g, floor) for c in cands for g, specs in sets.items() for s in specs]
    position = {(c.name, g, s.name): i for i, (c, s, g, _) in enumerate(tasks)}
    # heavy candidates first, then by head so a worker's workload cache hits
    heavy = {c.name: (c.adaptive is not None) * 4 + (c.issue == "pe") * 3 + (c.order == "greedy") for c in cands}
    tasks.sort(key=lambda t: (-heavy[t[0].name], t[1].name))
    jobs = jobs or os.cpu_count() or 1
    rows = []
    if jobs == 1:
        it = map(_task, tasks)
        for i, row in enumerate(it):
            rows.append(row)
            if log:
                log(i + 1, len(tasks), row)
        return sorted(rows, key=lambda r: position[(r["candidate"], r["set"], r["workload"])])
    ctx = multiprocessing.get_context("fork" if sys.platform != "win32" else "spawn")
    with ctx.Pool(jobs) as pool:
        for i, row in enumerate(pool.imap_unordered(_task, tasks)):
            rows.append(row)
            if log:
                log(i + 1, len(tasks), row)
    return sorted(rows, key=lambda r: position[(r["candidate"], r["set"], r["workload"])])


def geomean(xs) -> float:
    """The geometric mean of positive numbers."""
    xs = list(xs)
    return float(math.exp(sum(math.log(x) for x in xs) / len(xs)))


def aggregate(rows: list[dict], floor: float = FLOOR) -> dict:
    """Per candidate and set: geometric-mean and minimum speedups (``Q K^T``
    and attention), minimum and mean PSNR, and ``meets_floor`` (every head
    at or above ``floor``)."""
    out: dict = {}
    for r in rows:
        out.setdefault(r["candidate"], {}).setdefault(r["set"], []).append(r)
    agg: dict = {}
    for name, by_set in out.items():
        agg[name] = {}
        for group, rs in by_set.items():
            psnr = [r["psnr"] for r in rs]
            agg[name][group] = {
                "heads": len(rs),
                "qk_speedup": geomean(r["qk_speedup"] for r in rs),
                "qk_speedup_min": min(r["qk_speedup"] for r in rs),
                "attention_speedup": geomean(r["attention_speedup"] for r in rs),
                "attention_speedup_min": min(r["attention_speedup"] for r in rs),
                "qk_utilization": float(np.mean([r["qk_utilization"] for r in rs])),
                "qk_op_reduction": float(np.mean([r["qk_op_reduction"] for r in rs])),
                "psnr_min": min(psnr),
                "psnr_mean": float(np.mean([min(p, 99.0) for p in psnr])),
                "meets_floor": min(psnr) >= floor,
            }
    return agg


def rank(agg: dict, group: str = "tuning", key: str = "attention_speedup", require: tuple = ()) -> list[str]:
    """Candidate names at or above the floor on ``group`` (and on every set
    of ``require`` they were run on), fastest first by ``key`` on
    ``group``; the others follow, fastest first."""
    names = [n for n in agg if group in agg[n]]

    def ok(n: str) -> bool:
        return all(agg[n][g]["meets_floor"] for g in (group, *require) if g in agg[n])

    good = sorted((n for n in names if ok(n)), key=lambda n: -agg[n][group][key])
    bad = sorted((n for n in names if not ok(n)), key=lambda n: -agg[n][group][key])
    return good + bad


def frontier(agg: dict, group: str = "tuning", key: str = "attention_speedup") -> list[str]:
    """The Pareto frontier on ``group``: candidates no other beats on both
    minimum PSNR and ``key``, by increasing PSNR."""
    pts = [(agg[n][group]["psnr_min"], agg[n][group][key], n) for n in agg if group in agg[n]]
    front = [n for p, s, n in pts if not any((p2 >= p and s2 >= s) and (p2 > p or s2 > s) for p2, s2, _ in pts)]
    return sorted(front, key=lambda n: agg[n][group]["psnr_min"])


def _head_bounds(args) -> list[dict]:
    spec, group, ws, thresholds = args
    w = spec.load()
    cfg = KaleidoConfig.one_array(split=w.split)
    qk_dense = qk_timing(w.q, w.k, w.grid, w.split, cfg, order="queue").dense_cycles
    pv_dense = pv_timing(w.v, w.grid, w.split, cfg)["dense_cycles"]
    sm = softmax_stage_cycles(w.n, w.d)

    def attention(qk: float, pv: float, pv_base: float = 1.0) -> float:  # each stage's dense cycles over its bound
        return (qk_dense + pv_dense / pv_base + sm) / (qk_dense / qk + pv_dense / pv + sm)

    # the dense array given small-P pairing too (no reuse: F = P = 9), the baseline that pairing alone does not beat
    p_dense = window_p(w.q, w.k, w.grid, w.split, 2, (9, 9), scales=w.scales)
    pv_dense_small = pv_half_beats(p_dense, w.v, w.grid, w.split, 2, 9)["bound"]

    rows = []
    for fp in thresholds:
        for win in ws:
            b = window_bound(w.q, w.k, w.v, w.grid, w.split, win, fp, scales=w.scales, reference=_reference(spec))
            s = window_pv_bounds(w.q, w.k, w.v, w.grid, w.split, win, fp, scales=w.scales)
            rows.append(
                {
                    "workload": spec.name,
                    "set": group,
                    "calibration": calibration_spec(spec).name,
                    "w": win,
                    "thresholds": [list(x) for x in check_group_thresholds(fp)],
                    "qk_bound": b["bound"],
                    "qk_bound_row_partial": b["bound_row_partial"],
                    "pv_bound": b["pv_bound"],
                    **s,
                    "attention_bound": attention(b["bound"], b["pv_bound"]),
                    "attention_bound_small": attention(b["bound"], s["pv_bound_small"]),
                    "attention_bound_stacked": attention(b["bound_row_partial"], s["pv_bound_small_delta"]),
                    "pv_dense_bound_small": pv_dense_small,
                    "attention_bound_stacked_vs_dense_small": attention(
                        b["bound_row_partial"], s["pv_bound_small_delta"], pv_dense_small
                    ),
                    "psnr": b["vs_int8"]["psnr"],
                }
            )
    return rows


#: the thresholds :func:`window_bounds` tries: three uniform, then the
#: default design's per-group triple and the two with one group at (6,4)
BOUND_THRESHOLDS = (
    (5, 4),
    (6, 4),
    (7, 4),
    ((7, 4), (7, 4), (6, 4)),
    ((6, 4), (7, 4), (6, 4)),
    ((7, 4), (6, 4), (6, 4)),
)


def window_bounds(
    sets: dict[str, tuple] | None = None,
    ws=(2, 4, 8),
    thresholds=BOUND_THRESHOLDS,
    *,
    jobs: int | None = None,
    calibration: bool = True,
) -> list[dict]:
    """Op bounds at full utilization, per head of ``sets`` (name -> specs,
    default tuning and held-out; with ``calibration``, each head's
    :func:`calibration_spec` that no set holds too, as the set
    :data:`CALIBRATION`, for :func:`calibrated_ceiling`), window ``w`` and thresholds (no PE
    implements them; the softmax counted as it is, each stage at its
    dense cycles over its bound):

    * ``qk_bound``, ``qk_bound_row_partial``, ``pv_bound``
      (:func:`kaleido.golden.windows.window_bound`; w = 2 is the pairs);
    * ``pv_bound_small`` (small-P halves) and ``pv_bound_small_delta``
      (and delta-coded query rows, P-side reuse):
      :func:`kaleido.explore.row_delta.window_pv_bounds`;
    * ``attention_bound`` (the first and third), ``attention_bound_small``
      (``Q K^T`` with small-P halves on P V), ``attention_bound_stacked``
      (every lever: row-side partial reuse, small-P halves, delta rows);
    * ``pv_dense_bound_small``: the dense array's P V with small-P halves
      (no reuse), and ``attention_bound_stacked_vs_dense_small``, every
      lever over that array (pairing small P is not reuse: a dense array
      can do it too);
    * ``psnr`` against int8 attention (the levers past windows change no
      output).

    Heads run on ``jobs`` processes (default every core)."""
    sets = {"tuning": TUNING, "held_out": HELD_OUT} if sets is None else dict(sets)
    if calibration:  # each head's calibration head that no set holds, as the set "calibration"
        names = {spec.name for specs in sets.values() for spec in specs}
        extra = {calibration_spec(spec) for specs in sets.values() for spec in specs}
        sets[CALIBRATION] = tuple(sorted((s for s in extra if s.name not in names), key=lambda s: s.name))
    tasks = [(spec, group, tuple(ws), tuple(thresholds)) for group, specs in sets.items() for spec in specs]
    jobs = min(jobs or os.cpu_count() or 1, len(tasks))
    if jobs <= 1:
        return [row for t in tasks for row in _head_bounds(t)]
    ctx = multiprocessing.get_context("fork" if sys.platform != "win32" else "spawn")
    with ctx.Pool(jobs) as pool:
        return [row for rows in pool.map(_head_bounds, tasks) for row in rows]


#: the set name of the heads :func:`window_bounds` adds only to calibrate on
CALIBRATION = "calibration"

#: dB above the floor :func:`calibrated_ceiling` chooses at (the calibrated candidates')
CALIBRATION_MARGIN = 1.5


def _stats(xs: list[float]) -> dict:
    return {"geomean": geomean(xs), "min": min(xs), "at_least_2x": sum(x >= 2.0 for x in xs)}


def set_stats(xs: list[float], psnrs: list[float], floor: float) -> dict:
    """A set's speedups (or bounds) ``xs``: ``geomean``, ``min``, ``at_least_2x``, with its worst PSNR
    (``psnr_min``) and how many heads are below ``floor`` (``below_floor``)."""
    return {**_stats(xs), "psnr_min": min(psnrs), "below_floor": sum(p < floor for p in psnrs)}


def _choice(b: dict) -> tuple:
    """A bound row's window and thresholds, hashable: what a ceiling chooses."""
    return b["w"], tuple(tuple(x) for x in b["thresholds"])


def calibrated_ceiling(
    bounds: list[dict], floor: float = FLOOR, margin: float = CALIBRATION_MARGIN, key: str = "attention_bound_stacked"
) -> dict:
    """The ceiling as a deployed design could choose it: per head, the
    window and thresholds with the largest ``key`` on its calibration head
    (:func:`calibration_spec`: the same layer, the other motion) among
    those at ``floor + margin`` dB there, then measured on the head. Per
    set (not :data:`CALIBRATION`): ``heads`` (name -> ``(bound, w,
    thresholds, psnr)``), ``geomean``, ``min``, ``at_least_2x``,
    ``psnr_min``, ``below_floor``; a head whose calibration head has no
    choice at that PSNR, or is not in ``bounds``, is left out and counted
    in ``missing``."""
    by_head: dict = {}
    for b in bounds:
        by_head.setdefault(b["workload"], {})[_choice(b)] = b
    out: dict = {}
    for b in bounds:
        if b["set"] == CALIBRATION:
            continue
        group = out.setdefault(b["set"], {"heads": {}, "missing": set()})
        cal = [c for c in by_head.get(b.get("calibration"), {}).values() if c["psnr"] >= floor + margin]
        if not cal:
            group["missing"].add(b["workload"])
            continue
        mine = by_head[b["workload"]][_choice(max(cal, key=lambda c: c[key]))]
        group["heads"][b["workload"]] = (mine[key], mine["w"], mine["thresholds"], mine["psnr"])
    for group in out.values():
        group["missing"] = len(group["missing"])
        if group["heads"]:
            heads = group["heads"].values()
            group.update(set_stats([h[0] for h in heads], [h[3] for h in heads], floor))
    return out


def stacked_ceiling(bounds: list[dict], floor: float = FLOOR) -> dict:
    """Per set, each head's best ``attention_bound_stacked`` (and
    ``attention_bound_small``) over the windows and thresholds whose PSNR
    holds ``floor``, with the geometric means and the slowest head: the
    ceiling of every lever measured, chosen per head (an oracle)."""
    out: dict = {}
    for b in bounds:
        if b["psnr"] < floor or b["set"] == CALIBRATION:
            continue
        head = out.setdefault(b["set"], {"heads": {}})["heads"].setdefault(b["workload"], {})
        for key in ("attention_bound_stacked", "attention_bound_small"):
            if b[key] > head.get(key, (0.0,))[0]:
                head[key] = (b[key], b["w"], b["thresholds"], b["psnr"])
                if key == "attention_bound_stacked" and "attention_bound_stacked_vs_dense_small" in b:
                    head["vs_dense_small"] = b["attention_bound_stacked_vs_dense_small"]

    for group in out.values():
        for key in ("attention_bound_stacked", "attention_bound_small"):
            group[key] = _stats([h[key][0] for h in group["heads"].values()])
        xs = [h["vs_dense_small"] for h in group["heads"].values() if "vs_dense_small" in h]
        if len(xs) == len(group["heads"]):
            group["vs_dense_small"] = _stats(xs)
    return out


def rerank(result: dict) -> dict:
    """Recompute a result's ``aggregate``, rankings and frontiers from its
    ``rows`` (after merging runs, or with a newer ranking)."""
    floor = result["floor_db"]
    agg = aggregate(result["rows"], floor)
    sets = list(dict.fromkeys(r["set"] for r in result["rows"]))
    result.update(
        aggregate=agg,
        ranking={g: rank(agg, g) for g in sets},
        ranking_robust=rank(agg, "tuning", require=tuple(sets)),
        ranking_qk={g: rank(agg, g, "qk_speedup") for g in sets},
        frontier={g: frontier(agg, g) for g in sets},
        frontier_qk={g: frontier(agg, g, "qk_speedup") for g in sets},
    )
    return result


def merge(old: dict, new: dict) -> dict:
    """``old`` with ``new``'s candidates added (a candidate of both takes
    ``new``'s rows), re-ranked; the floors must agree."""
    if old["floor_db"] != new["floor_db"]:
        raise ValueError(f"cannot merge results at floors {old['floor_db']} and {new['floor_db']} dB")
    names = {c["name"] for c in new["candidates"]}
    out = dict(old)
    out["candidates"] = [c for c in old["candidates"] if c["name"] not in names] + new["candidates"]
    out["rows"] = [r for r in old["rows"] if r["candidate"] not in names] + new["rows"]
    out["sets"] = {**old["sets"], **new["sets"]}
    if "window_bounds" in new:
        out["window_bounds"] = new["window_bounds"]
    out["seconds"] = old.get("seconds", 0) + new.get("seconds", 0)
    return rerank(out)


def explore(
    cands: list[Candidate] | None = None,
    sets: dict[str, tuple] | None = None,
    *,
    jobs: int | None = None,
    floor: float = FLOOR,
    bounds: bool = True,
    log=None,
) -> dict:
    """Run the sweep: ``rows``, ``aggregate``, ``ranking`` and ``frontier``
    per set, the ``candidates`` and, with ``bounds``, the window bounds."""
    cands = candidates() if cands is None else cands
    sets = {"tuning": TUNING, "held_out": HELD_OUT} if sets is None else sets
    names = [c.name for c in cands]
    if len(set(names)) != len(names):
        raise ValueError(f"candidate names must be unique: {sorted(n for n in names if names.count(n) > 1)}")
    t0 = time.time()
    rows = evaluate(cands, sets, jobs=jobs, floor=floor, log=log)
    agg = aggregate(rows, floor)
    result = {
        "floor_db": floor,
        "sets": {g: [s.name for s in specs] for g, specs in sets.items()},
        "candidates": [
            {**dataclasses.asdict(c), "thresholds": [list(x) for x in check_group_thresholds(c.thresholds)]}
            for c in cands
        ],
        "aggregate": agg,
        "ranking": {g: rank(agg, g) for g in sets},
        "ranking_robust": rank(agg, "tuning", require=tuple(sets)),
        "ranking_qk": {g: rank(agg, g, "qk_speedup") for g in sets},
        "frontier": {g: frontier(agg, g) for g in sets},
        "frontier_qk": {g: frontier(agg, g, "qk_speedup") for g in sets},
        "rows": rows,
    }
    if bounds:
        result["window_bounds"] = window_bounds(sets, jobs=jobs)
    result["seconds"] = time.time() - t0
    result["jobs"] = jobs or os.cpu_count() or 1
    return result


BUDGET_PARTS = ("qk_work", "qk_issue", "qk_imbalance", "softmax", "pv")


def cycle_budget(rows: list[dict], group: str = "tuning") -> dict:
    """Where each candidate's whole-attention cycles go on ``group``, summed
    over its heads, as fractions of the dense array's whole-attention
    cycles (the same PE count): ``Q K^T``'s op bound (``qk_work``), its
    beats beyond that (``qk_issue``: slots issued to PEs that do not need
    them, one-beat idle phases), the busiest array beyond the average
    (``qk_imbalance``; ``Q K^T``'s drain is counted there too), the softmax
    and output scaler, ``P V``; ``total`` (their sum, 1 / speedup) and,
    for reference, ``qk_dense`` and ``pv_dense``. Only rows measured with
    the cycle budget (``qk_work_cycles``) count."""
    sums: dict = {}
    for r in rows:
        if r["set"] != group or "qk_work_cycles" not in r:
            continue
        s = sums.setdefault(r["candidate"], dict.fromkeys((*BUDGET_PARTS, "qk_dense", "pv_dense", "dense"), 0.0))
        s["qk_work"] += r["qk_work_cycles"]
        s["qk_issue"] += r["qk_issue_cycles"]
        s["qk_imbalance"] += r["qk_imbalance_cycles"] + r["qk_drain_cycles"]
        s["softmax"] += r["softmax_cycles"]
        s["pv"] += r["pv_cycles"]
        s["qk_dense"] += r["qk_dense_cycles"]
        s["pv_dense"] += r["pv_dense_cycles"]
        s["dense"] += r["attention_dense_cycles"]
    out = {}
    for name, s in sums.items():
        d = s.pop("dense")
        out[name] = {k: v / d for k, v in s.items()}
        out[name]["total"] = sum(out[name][k] for k in BUDGET_PARTS)
    return out


def budget_table(result: dict, group: str = "tuning") -> list[str]:
    """Markdown: :func:`cycle_budget` of every candidate that has one."""
    b = cycle_budget(result["rows"], group)
    if not b:
        return []
    lines = [
        "",
        f"Where the cycles go ({group} set, summed over its heads; fractions of the dense array's whole-attention "
        "cycles, so `total` = 1 / speedup and 2x needs `total` <= 50 %): Q K^T at its op bound (`work`), "
        "its beats beyond the op bound (`issue`), the busiest array beyond the average and the drain "
        "(`imbalance`), softmax and output scaler, P V (dense: `P V dense`).",
        "",
        "| candidate | Q K^T work | Q K^T issue | Q K^T imbalance | softmax | P V | total | Q K^T dense | P V dense |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name in sorted(b, key=lambda n: b[n]["total"]):
        x = b[name]
        lines.append(
            f"| {name} | {x['qk_work']:.1%} | {x['qk_issue']:.1%} | {x['qk_imbalance']:.1%} | {x['softmax']:.1%} | "
            f"{x['pv']:.1%} | {x['total']:.1%} | {x['qk_dense']:.1%} | {x['pv_dense']:.1%} |"
        )
    return lines


def fmt_thresholds(th) -> str:
    """``(F,P)`` when the three groups agree, else the three, t x y:
    ``(7,4) (7,4) (6,4)``. Takes one pair too (rows written before the
    window bounds kept three)."""
    th = [tuple(th)] if len(th) == 2 and all(isinstance(x, numbers.Integral) for x in th) else [tuple(x) for x in th]
    return f"({th[0][0]},{th[0][1]})" if len(set(th)) == 1 else " ".join(f"({F},{P})" for F, P in th)


def fixed_ceiling(bounds: list[dict], floor: float = FLOOR, key: str = "attention_bound_stacked") -> dict:
    """The ceiling with one window and thresholds for every head (no
    oracle): among the ``(w, thresholds)`` of :func:`window_bounds`' rows,
    the fastest by the tuning geomean of ``key`` whose PSNR holds ``floor``
    on every tuning head (``tuning``) and on every head of every set
    (``robust``). Each: ``w``, ``thresholds`` and per set ``geomean``,
    ``min``, ``at_least_2x``, ``heads``, ``psnr_min``, ``below_floor``."""
    combos: dict = {}
    for b in (b for b in bounds if b["set"] != CALIBRATION):
        combos.setdefault(_choice(b), {}).setdefault(b["set"], []).append(b)

    def summary(sets: dict) -> dict:
        return {
            g: {**set_stats([b[key] for b in rows], [b["psnr"] for b in rows], floor), "heads": len(rows)}
            for g, rows in sets.items()
        }

    out = {}
    for name, groups in (("tuning", ("tuning",)), ("robust", None)):
        ok = [
            (c, sets)
            for c, sets in combos.items()
            if "tuning" in sets and all(b["psnr"] >= floor for g in (groups or sets) for b in sets[g])
        ]
        if ok:
            (w, fp), sets = max(ok, key=lambda x: geomean([b[key] for b in x[1]["tuning"]]))
            out[name] = {"w": w, "thresholds": [list(x) for x in fp], **summary(sets)}
    return out


def bounds_table(wb: list[dict], floor: float = FLOOR) -> list[str]:
    """Markdown of :func:`window_bounds`' rows and, when they carry every
    lever, :func:`stacked_ceiling` at ``floor``."""
    lines = [
        "Op bounds at 100 % utilization (no PE implements windows longer than pairs, row-side partial "
        "reuse or delta-coded query rows; small-P pairing is built, its halves are its bound):",
        "",
        "| set | head | w | (F,P) | Q K^T bound | ... with row-side partial reuse | P V bound | "
        "... with small-P halves | ... and delta rows | attention bound | ... with small-P halves | "
        "... every lever | PSNR |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        *[
            f"| {b.get('set', 'tuning')} | {b['workload']} | {b['w']} | "
            f"{fmt_thresholds(b['thresholds'])} | "
            f"{b['qk_bound']:.3f}x | {b.get('qk_bound_row_partial', float('nan')):.3f}x | "
            f"{b['pv_bound']:.3f}x | {b.get('pv_bound_small', float('nan')):.3f}x | "
            f"{b.get('pv_bound_small_delta', float('nan')):.3f}x | {b['attention_bound']:.3f}x | "
            f"{b.get('attention_bound_small', float('nan')):.3f}x | "
            f"{b.get('attention_bound_stacked', float('nan')):.3f}x | {b['psnr']:.1f} dB |"
            for b in wb
        ],
    ]
    if all("attention_bound_stacked" in b for b in wb):
        lines += _oracle_ceiling_lines(wb, floor)
        lines += _fixed_ceiling_lines(wb, floor)
        lines += _calibrated_ceiling_lines(wb, floor)
    return lines


def _oracle_ceiling_lines(wb: list[dict], floor: float) -> list[str]:
    """:func:`stacked_ceiling`'s table: each head's best bound, chosen per head."""
    ceiling = stacked_ceiling(wb, floor)
    lines = [
        "",
        f"The ceiling at {floor:g} dB: each head's best bound over the windows and "
        "thresholds above that hold the floor (chosen per head, an oracle):",
        "",
        "| set | head | every lever | w, (F,P), PSNR | ... over a dense array pairing small P | "
        "Q K^T levers, small-P halves on P V | w, (F,P), PSNR |",
        "|---|---|---|---|---|---|---|",
    ]
    for group, c in ceiling.items():
        for head, h in c["heads"].items():
            st, sm = h["attention_bound_stacked"], h["attention_bound_small"]
            vd = f"{h['vs_dense_small']:.3f}x" if "vs_dense_small" in h else "-"
            lines.append(
                f"| {group} | {head} | {st[0]:.3f}x | {st[1]}, {fmt_thresholds(st[2])}, {st[3]:.1f} dB | "
                f"{vd} | "
                f"{sm[0]:.3f}x | {sm[1]}, {fmt_thresholds(sm[2])}, {sm[3]:.1f} dB |"
            )

        def agg(a: dict, n: int = len(c["heads"])) -> str:
            return f"{a['geomean']:.3f}x ({a['min']:.3f}x), {a['at_least_2x']} of {n} at 2x"

        vd = agg(c["vs_dense_small"]) if "vs_dense_small" in c else "-"
        lines.append(
            f"| {group} | geomean (slowest) | {agg(c['attention_bound_stacked'])} | | {vd} | "
            f"{agg(c['attention_bound_small'])} | |"
        )
    return lines


def _fixed_ceiling_lines(wb: list[dict], floor: float) -> list[str]:
    """:func:`fixed_ceiling`'s table: one window and thresholds for every head."""
    fixed = fixed_ceiling(wb, floor)
    lines = [
        "",
        "Every lever with one window and thresholds for every head (no oracle), the fastest on the tuning "
        f"set that holds {floor:g} dB on every tuning head, and on every head of every set:",
        "",
        "| holds the floor on | w, (F,P) | set | every lever | heads at 2x | PSNR min | heads below the floor |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, f in fixed.items():
        for group in (g for g in f if isinstance(f[g], dict)):
            a = f[group]
            lines.append(
                f"| {'the tuning set' if name == 'tuning' else 'every set'} | {f['w']}, "
                f"{fmt_thresholds(f['thresholds'])} | {group} | {a['geomean']:.3f}x ({a['min']:.3f}x) | "
                f"{a['at_least_2x']} of {a['heads']} | {a['psnr_min']:.1f} dB | {a['below_floor']} |"
            )
    return lines


def _calibrated_ceiling_lines(wb: list[dict], floor: float) -> list[str]:
    """:func:`calibrated_ceiling`'s table: per head, the choice on its calibration head."""
    cal = calibrated_ceiling(wb, floor)
    lines = [
        "",
        f"Every lever as a deployed design would choose it: per head, the window and thresholds with the "
        f"largest bound on its calibration head (the same layer, the other motion) at {floor:g} + "
        f"{CALIBRATION_MARGIN:g} dB there:",
        "",
        "| set | head | every lever | w, (F,P), PSNR |",
        "|---|---|---|---|",
    ]
    for group, g in cal.items():
        for head, h in g["heads"].items():
            lines.append(f"| {group} | {head} | {h[0]:.3f}x | {h[1]}, {fmt_thresholds(h[2])}, {h[3]:.1f} dB |")
        if g["heads"]:
            lines.append(
                f"| {group} | geomean (slowest) | {g['geomean']:.3f}x ({g['min']:.3f}x), {g['at_least_2x']} of "
                f"{len(g['heads'])} at 2x | PSNR min {g['psnr_min']:.1f} dB, {g['below_floor']} below the floor"
                + (f", {g['missing']} without a choice |" if g["missing"] else " |")
            )
    return lines


def summary(result: dict) -> list[str]:
    """Markdown tables of a result (``summary.md``, docs/EXPLORATION.md)."""
    agg, floor = result["aggregate"], result["floor_db"]
    by_name = {c["name"]: c for c in result["candidates"]}
    lines = [
        f"Quality floor {floor:g} dB (attention output vs int8 attention); speedups are geometric means over "
        "the set's heads, `min` the slowest head; PSNR is the worst head's. Ranked by tuning whole-attention "
        "speedup, first the candidates at the floor on every head of both sets, then those at the floor on "
        "the tuning set only, then the rest.",
        "",
        "| rank | candidate | family | RTL | tuning attention | tuning Q K^T | tuning PSNR min | held-out attention "
        "(min) | held-out Q K^T | held-out PSNR min | Q K^T util. | Q K^T op red. |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    tuned = rank(agg, "tuning")
    both = [n for n in tuned if all(a["meets_floor"] for a in agg[n].values())]
    tuning_only = [n for n in tuned if agg[n]["tuning"]["meets_floor"] and n not in both]
    order = both + tuning_only + [n for n in tuned if n not in both and n not in tuning_only]
    for i, n in enumerate(order):
        t, h = agg[n]["tuning"], agg[n].get("held_out")
        mark = (
            " (below floor)"
            if not t["meets_floor"]
            else (" (below floor held-out)" if h and not h["meets_floor"] else "")
        )
        held = (
            f"{h['attention_speedup']:.3f}x ({h['attention_speedup_min']:.3f}x) | {h['qk_speedup']:.3f}x | "
            f"{h['psnr_min']:.1f} dB"
            if h
            else "- | - | -"
        )
        lines.append(
            f"| {i + 1} | {n}{mark} | {by_name[n]['family']} | {by_name[n]['rtl']} | {t['attention_speedup']:.3f}x | "
            f"{t['qk_speedup']:.3f}x | {t['psnr_min']:.1f} dB | {held} | {t['qk_utilization']:.1%} | "
            f"{t['qk_op_reduction']:.1%} |"
        )
    lines += budget_table(result)
    lines += ["", "Per head (tuning and held-out): thresholds used, speedups, PSNR.", ""]
    lines += [
        "| candidate | head | set | thresholds (t x y) | Q K^T | attention | PSNR |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        if by_name[r["candidate"]]["adaptive"] or r["candidate"] == "paper":
            lines.append(
                f"| {r['candidate']} | {r['workload']} | {r['set']} | {fmt_thresholds(r['thresholds'])} | "
                f"{r['qk_speedup']:.3f}x | {r['attention_speedup']:.3f}x | {r['psnr']:.1f} dB |"
            )
    if "window_bounds" in result:
        lines += ["", *bounds_table(result["window_bounds"], floor)]
    return lines


_CSV_FIELDS = (
    "candidate",
    "set",
    "workload",
    "thresholds",
    "v_full",
    "qk_cycles",
    "qk_dense_cycles",
    "qk_speedup",
    "qk_utilization",
    "qk_op_reduction",
    "pv_cycles",
    "pv_dense_cycles",
    "softmax_cycles",
    "attention_cycles",
    "attention_dense_cycles",
    "attention_speedup",
    "psnr",
    "cosine",
    "seconds",
)


#: the columns of ``bounds.csv`` (:func:`write_bounds`), one row per head, window and thresholds
BOUNDS_FIELDS = (
    "set",
    "workload",
    "calibration",
    "w",
    "thresholds",
    "qk_bound",
    "qk_bound_row_partial",
    "pv_bound",
    "pv_bound_small",
    "pv_bound_small_delta",
    "pv_dense_bound_small",
    "attention_bound",
    "attention_bound_small",
    "attention_bound_stacked",
    "attention_bound_stacked_vs_dense_small",
    "psnr",
)


def write_bounds_csv(wb: list[dict], path: str) -> str:
    """:func:`window_bounds`' rows as CSV (:data:`BOUNDS_FIELDS`, the
    thresholds as :func:`fmt_thresholds` writes them), for
    :func:`read_bounds_csv`."""
    with open(path, "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=list(BOUNDS_FIELDS), extrasaction="ignore")
        wr.writeheader()
        for b in wb:
            wr.writerow({**b, "thresholds": fmt_thresholds(b["thresholds"])})
    return path


def write_bounds(wb: list[dict], out: str, floor: float = FLOOR) -> list[str]:
    """``bounds.json``, ``bounds.csv`` (:data:`BOUNDS_FIELDS`) and
    ``bounds.md`` (:func:`bounds_table`) of :func:`window_bounds`' rows in
    ``out``."""
    os.makedirs(out, exist_ok=True)
    paths = [os.path.join(out, x) for x in ("bounds.json", "bounds.csv", "bounds.md")]
    with open(paths[0], "w") as f:
        json.dump({"floor_db": floor, "window_bounds": wb}, f, indent=1, default=float)
    write_bounds_csv(wb, paths[1])
    with open(paths[2], "w") as f:
        f.write("\n".join(bounds_table(wb, floor)) + "\n")
    return paths


def read_bounds_csv(path: str) -> list[dict]:
    """:func:`window_bounds`' rows back from a ``bounds.csv``."""
    text = ("set", "workload", "calibration")
    with open(path) as f:
        rows = list(csv.DictReader(f))
    missing = [k for k in BOUNDS_FIELDS if rows and k not in rows[0]]
    if missing:
        raise ValueError(f"{path} lacks the bounds columns {missing}")

    return [
        {
            k: r[k]
            if k in text
            else int(r[k])
            if k == "w"
            else parse_thresholds(r[k], path)
            if k == "thresholds"
            else float(r[k])
            for k in BOUNDS_FIELDS
        }
        for r in rows
    ]


def parse_thresholds(cell: str, where: str = "thresholds") -> list:
    """A CSV cell of :func:`fmt_thresholds` back: three ``[F, P]`` (one
    pair is every group's); ``where`` names the file in the error."""
    fp = [[int(F), int(P)] for F, P in re.findall(r"\((\d+),(\d+)\)", cell)]
    if len(fp) not in (1, 3):
        raise ValueError(f"{where}: thresholds must be (F,P) or three of them, not {cell!r}")
    return fp * 3 if len(fp) == 1 else fp


def write(result: dict, out: str) -> list[str]:
    """``results.json``, ``results.csv`` and ``summary.md`` in ``out``."""
    os.makedirs(out, exist_ok=True)
    paths = [os.path.join(out, x) for x in ("results.json", "results.csv", "summary.md")]
    with open(paths[0], "w") as f:
        json.dump(result, f, indent=1, default=float)
    with open(paths[1], "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=list(_CSV_FIELDS), extrasaction="ignore")
        wr.writeheader()
        for r in result["rows"]:
            wr.writerow({**r, "thresholds": fmt_thresholds(r["thresholds"]), "v_full": " ".join(map(str, r["v_full"]))})
    with open(paths[2], "w") as f:
        f.write("\n".join(summary(result)) + "\n")
    return paths


#: the committed op bounds (``kaleido explore --bounds-only``'s ``bounds.csv``, rewritten by ``make report``)
BOUNDS_CSV = os.path.join("docs", "report", "exploration_bounds.csv")


def bound_rows(out: str, csv_path: str = BOUNDS_CSV) -> tuple[list[dict], str]:
    """:func:`window_bounds`' rows and where they came from: ``OUT/bounds.json``,
    else ``OUT/results.json``'s when they carry every lever, else the
    committed ``csv_path`` (default :data:`BOUNDS_CSV`)."""
    for path in (os.path.join(out, "bounds.json"), os.path.join(out, "results.json")):
        if os.path.exists(path):
            with open(path) as f:
                wb = json.load(f).get("window_bounds", [])
            if wb and all("attention_bound_stacked" in b for b in wb):
                return wb, path
    if os.path.exists(csv_path):
        return read_bounds_csv(csv_path), csv_path
    raise ValueError(f"no op bounds to read: none in {out!r} and no {csv_path} (run kaleido explore --bounds-only)")
