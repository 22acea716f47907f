"""The sweep's candidates, family by family (:func:`candidates`): the
reference points, (F, P) thresholds and accumulators, per-group and
adaptive thresholds, array count and shape (:func:`shape_candidates`),
schedulers, issue and matcher lookahead, stacked levers, the core as built
(:func:`built_candidates`) and small-P pairing on P V
(:func:`small_p_candidates`); :func:`quick_candidates` is a small subset.
Each candidate's ``area`` and ``rtl`` say what its cost is and whether
the RTL builds it (:class:`kaleido.explore.candidate.Candidate`)."""

from __future__ import annotations

import dataclasses

from ..stage_timing import DISPATCHES
from .candidate import DEFAULT, PAPER, Candidate

__all__ = [
    "candidates",
    "SHAPES",
    "shape_candidates",
    "built_candidates",
    "SMALL_P_BASES",
    "small_p_candidates",
    "quick_candidates",
]


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


def quick_candidates() -> list[Candidate]:
    """A small subset (``--quick``, the report's fallback, the tests)."""
    names = {"paper", "acc4", "F6P4 acc4", "group t5 x6 y6 P4 acc4", "greedy F6P4 acc4", "adaptive uniform acc4"}
    return [c for c in candidates() if c.name in names]
