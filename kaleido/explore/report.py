"""A sweep's result written out: the markdown of ``summary.md``
(:func:`summary`: the ranking, the cycle budget of :func:`budget_table`,
the adaptive candidates' heads and the op bounds) and ``results.json``,
``results.csv`` (one row per candidate and head) and ``summary.md``
(:func:`write`)."""

from __future__ import annotations

import csv
import json
import os

from .bounds_io import bounds_table, fmt_thresholds
from .ranking import cycle_budget, rank

__all__ = ["budget_table", "summary", "write"]


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
