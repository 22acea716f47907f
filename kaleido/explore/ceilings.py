"""The ceilings chosen from :func:`kaleido.explore.op_bounds.window_bounds`'
rows: per head, the best bound that keeps the floor (:func:`stacked_ceiling`,
an oracle), one window and thresholds for every head
(:func:`fixed_ceiling`), and per head the choice on its calibration head
(:func:`calibrated_ceiling`, as a deployed design could choose), with
:func:`set_stats`, the per-set summary they share."""

from __future__ import annotations

from ..calibrate import FLOOR
from .op_bounds import CALIBRATION
from .ranking import geomean

__all__ = ["CALIBRATION_MARGIN", "set_stats", "calibrated_ceiling", "stacked_ceiling", "fixed_ceiling"]


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
