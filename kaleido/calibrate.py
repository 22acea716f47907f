"""Per-head threshold calibration (issue 14, docs/EXPLORATION.md,
"Calibration"): choose a head's per-group ``(F, P)`` on calibration input
so its attention output keeps a PSNR floor plus a margin, as fast as the
cycle model says it can be.

The search (:func:`search_thresholds`) is the explorer's adaptive one
(``kaleido.explore``'s ``"group"`` and ``"group-calibrated"`` candidates
call it): the most aggressive rung of :data:`LADDER` (one pair in every
group) whose output keeps the floor, then one group's ``F`` lowered at a
time (x, y, t, repeated) while the floor holds and the speedup grows.

:func:`calibrate` runs it on one head for the built hardware: ``Q K^T``
with the chosen per-group thresholds (the engine's run-time ``thresholds``
port), ``P V`` with the configuration's FULL threshold ``F`` (the P V
dispatcher's, fixed at build time). ``kaleido calibrate`` writes the
result as JSON; ``kaleido perf --thresholds FILE`` and
:func:`load_thresholds` (for the engine's harness,
``kaleido.tb.amaranth_sim.simulate_engine(thresholds=...)``) read it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable

from .checks import check_group_thresholds
from .config import KaleidoConfig

__all__ = [
    "LADDER",
    "FLOOR",
    "MARGIN",
    "search_thresholds",
    "calibrate",
    "calibration_head",
    "load_thresholds",
    "save_thresholds",
]

#: the quality floor, dB of attention-output PSNR against int8 attention
FLOOR = 40.0
#: dB above the floor a calibration chooses at: thresholds chosen on other
#: input to the same layer need it to hold the floor on every held-out head
#: (docs/EXPLORATION.md, "Adaptive thresholds")
MARGIN = 1.5
#: uniform ``(F, P)`` rungs, most aggressive first; the last turns reuse off
LADDER = ((4, 3), (4, 4), (5, 3), (5, 4), (6, 3), (6, 4), (7, 4), (8, 4), (9, 9))


def search_thresholds(
    psnr: Callable[[list], float],
    measure: Callable[[list], dict],
    floor: float,
    *,
    group: bool = True,
    key: str = "attention_speedup",
) -> tuple[list, dict, list]:
    """The adaptive threshold search. ``psnr(thresholds)``: the output's
    PSNR with three ``(F, P)`` pairs (t, x, y); ``measure(thresholds)``: a
    dict with the speedup under ``key``. Returns ``(thresholds, measured,
    search)``: the chosen pairs, ``measure`` of them, and every point tried
    (``thresholds``, ``psnr``, and ``speedup`` where measured). Uniform
    rungs of :data:`LADDER` first (the last, reuse off, if none keeps
    ``floor``); with ``group``, then each group's ``F`` lowered by one
    (x and y first: they hold most channels) while the floor holds and the
    speedup grows."""
    search: list[dict] = []
    rung = LADDER[-1]
    for fp in LADDER:
        p = psnr([fp] * 3)
        search.append({"thresholds": [list(fp)] * 3, "psnr": p})
        if p >= floor:
            rung = fp
            break
    current = [tuple(rung)] * 3
    best = measure(current)
    search[-1]["speedup"] = best[key]
    if group and search[-1]["psnr"] >= floor:
        improved = True
        while improved:
            improved = False
            for g in (1, 2, 0):
                F, P = current[g]
                if F <= 4:
                    continue
                trial = list(current)
                trial[g] = (F - 1, min(P, F - 1))
                p = psnr(trial)
                point: dict = {"thresholds": [list(x) for x in trial], "psnr": p}
                search.append(point)
                if p < floor:
                    continue
                m = measure(trial)
                point["speedup"] = m[key]
                if m[key] > best[key]:
                    current, best, improved = trial, m, True
    return current, best, search


def calibrate(
    Q,
    K,
    V,
    grid,
    split,
    config: KaleidoConfig | None = None,
    *,
    scales,
    floor: float = FLOOR,
    margin: float = MARGIN,
) -> dict:
    """Choose one head's per-group thresholds on calibration input ``Q, K,
    V`` (int8, with their ``scales``) at ``floor + margin`` dB. Returns
    ``thresholds`` (three ``[F, P]``), ``psnr`` on this input,
    ``qk_speedup`` and ``attention_speedup`` (cycle model, one array of
    ``config``), ``floor``, ``margin`` and ``search``."""
    from .checks import check_qkv
    from .golden.grouped import hw_attention, int8_attention
    from .stage_timing import pv_timing, qk_timing, softmax_stage_cycles

    grid, split = check_qkv(Q, K, V, grid, split)
    cfg = (config or KaleidoConfig()).replace(split=tuple(split))
    for name, value in (("floor", floor), ("margin", margin)):
        if not isinstance(value, (int, float)) or not 0 <= value <= 100:
            raise ValueError(f"{name} must be a number of dB in [0, 100], not {value!r}")
    v_full = [cfg.F] * 3
    reference = int8_attention(Q, K, V, scales=scales)
    cache: dict = {}

    def psnr(fp) -> float:
        fp = check_group_thresholds(fp)
        if fp not in cache:
            out = hw_attention(Q, K, V, grid, split, fp, v_full, scales=scales, reference=reference)
            cache[fp] = float(out["vs_int8"]["psnr"])
        return cache[fp]

    pv = pv_timing(V, grid, split, cfg, v_full)
    sm = softmax_stage_cycles(Q.shape[0], Q.shape[1])

    def measure(fp) -> dict:
        fp = check_group_thresholds(fp)
        qk = qk_timing(Q, K, grid, split, cfg, fp)
        att, dense = qk.cycles + sm + pv["cycles"], qk.dense_cycles + sm + pv["dense_cycles"]
        return {"qk_speedup": qk.speedup, "attention_speedup": dense / att, "psnr": psnr(fp)}

    chosen, best, search = search_thresholds(psnr, measure, floor + margin)
    return {
        "thresholds": [list(x) for x in check_group_thresholds(chosen)],
        "psnr": best["psnr"],
        "qk_speedup": best["qk_speedup"],
        "attention_speedup": best["attention_speedup"],
        "floor": floor,
        "margin": margin,
        "accumulators": cfg.accumulators,
        "v_full": cfg.F,
        "search": search,
    }


def calibration_head(preset: str, grid, motion: str, seed: int):
    """The synthetic head a synthetic head's thresholds are chosen on: the
    same layer (``preset``, ``grid``, ``seed``) seeing the other motion, so
    thresholds are never chosen on the head they are measured on
    (:func:`kaleido.golden.workloads.synthetic_video`)."""
    from .golden.workloads import synthetic_video

    if motion not in ("slow", "fast"):
        raise ValueError(f"motion must be 'slow' or 'fast', not {motion!r}")
    return synthetic_video(preset, grid, "fast" if motion == "slow" else "slow", seed)


def save_thresholds(result: dict, path: str) -> None:
    """Write a :func:`calibrate` result as JSON (folders created)."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as f:
        json.dump(result, f, indent=2)


def load_thresholds(spec: str) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int]]:
    """Three ``(F, P)`` pairs from a :func:`calibrate` JSON file, or from a
    literal ``"Ft,Pt,Fx,Px,Fy,Py"`` (or ``"F,P"`` for every group)."""
    if os.path.exists(spec):
        with open(spec) as f:
            data = json.load(f)
        if not isinstance(data, dict) or "thresholds" not in data:
            raise ValueError(f"{spec!r} has no 'thresholds' (a kaleido calibrate result)")
        return check_group_thresholds(data["thresholds"])
    try:
        values = [int(x) for x in spec.split(",")]
    except ValueError:
        raise ValueError(
            f"thresholds must be a calibration JSON file or 'Ft,Pt,Fx,Px,Fy,Py' / 'F,P', not {spec!r}"
        ) from None
    if len(values) == 2:
        return check_group_thresholds(values)
    if len(values) != 6:
        raise ValueError(f"thresholds must be 2 or 6 integers (F,P per group t, x, y), not {spec!r}")
    return check_group_thresholds([values[0:2], values[2:4], values[4:6]])
