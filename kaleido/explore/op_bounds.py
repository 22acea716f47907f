"""Op bounds at full utilization (:func:`window_bounds`): per head,
reuse window and thresholds (:data:`BOUND_THRESHOLDS`), the ``Q K^T`` and
``P V`` bounds of longer reuse windows
(:func:`kaleido.golden.windows.window_bound`), of small-P halves and
delta-coded query rows (:func:`kaleido.explore.row_delta.window_pv_bounds`)
and the whole-attention bounds they give, with the output's PSNR. No PE
implements them: they are estimates of what a design could reach. The
ceilings chosen from these rows are :mod:`kaleido.explore.ceilings`'."""

from __future__ import annotations

import multiprocessing
import os
import sys

from ..config import KaleidoConfig
from ..golden.grouped import check_group_thresholds
from ..golden.windows import window_bound
from ..stage_timing import pv_timing, qk_timing, softmax_stage_cycles
from .row_delta import pv_half_beats, window_p, window_pv_bounds
from .workloads import HELD_OUT, TUNING, calibration_spec, int8_reference

__all__ = ["BOUND_THRESHOLDS", "window_bounds", "CALIBRATION"]


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
            b = window_bound(w.q, w.k, w.v, w.grid, w.split, win, fp, scales=w.scales, reference=int8_reference(spec))
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

#: the set name of the heads :func:`window_bounds` adds only to calibrate on
CALIBRATION = "calibration"


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
