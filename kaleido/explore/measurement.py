"""One candidate on one head (:func:`measure`): ``Q K^T`` cycles
(:func:`kaleido.stage_timing.qk_timing`, equal to
:func:`kaleido.model.run_model` on the RTL's settings), the softmax unit
and output scaler, ``P V`` (:func:`kaleido.stage_timing.pv_timing`), each
against the dense array with the same PE count, the ``Q K^T`` cycle
budget, and the attention output's quality (:func:`quality`, against int8
attention without reuse, as the hardware computes it:
:func:`kaleido.golden.grouped.hw_attention`). An adaptive candidate first
chooses the head's thresholds (:func:`kaleido.calibrate.search_thresholds`);
a calibrated one chooses them on :func:`kaleido.explore.workloads.calibration_spec`'s
head. Heads, their P operands and ``Q K^T`` passes are cached per process."""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from ..calibrate import FLOOR, search_thresholds
from ..golden.grouped import check_group_thresholds, hw_attention
from ..golden.softmax import head_p
from ..stage_timing import pv_timing, qk_passes, qk_timing, softmax_stage_cycles
from .candidate import Candidate
from .model import qk_cycle_budget
from .workloads import WorkloadSpec, calibration_spec, int8_reference

__all__ = ["quality", "measure"]


@functools.lru_cache(maxsize=512)
def quality(spec: WorkloadSpec, fp: tuple, vf: tuple) -> tuple[float, float]:
    """PSNR and cosine of the hardware's attention output (hardware-independent: cached per head)."""
    w = spec.load()
    q = hw_attention(w.q, w.k, w.v, w.grid, w.split, fp, list(vf), scales=w.scales, reference=int8_reference(spec))
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
