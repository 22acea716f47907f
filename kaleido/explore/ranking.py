"""The sweep's rows summed up: per candidate and set the geometric-mean
and slowest speedups and the quality (:func:`aggregate`), candidates
ranked among those that keep the quality floor (:func:`rank`), the Pareto
frontier of PSNR and speedup (:func:`frontier`), and where each
candidate's whole-attention cycles go (:func:`cycle_budget`)."""

from __future__ import annotations

import math

import numpy as np

from ..calibrate import FLOOR

__all__ = ["geomean", "aggregate", "rank", "frontier", "BUDGET_PARTS", "cycle_budget"]


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
