"""The window PE on the exploration's heads (issue 14): how much of the
ceiling of every lever a cycle model keeps.

The ceiling (:func:`kaleido.explore.window_bounds`) counts op bounds at
100 % utilization. Here each head's window and thresholds, chosen three
ways from those bound rows, run on :mod:`kaleido.explore.window_model`'s one-PE
window arrays (16, a shared pass queue):

* ``calibrated``: :func:`kaleido.explore.calibrated_ceiling` (chosen on
  the head's calibration head at the floor + 1.5 dB: deployable);
* ``oracle``: :func:`kaleido.explore.stacked_ceiling` (the head's own
  best at the floor);
* ``fixed``: :func:`kaleido.explore.fixed_ceiling`'s robust choice (one
  window and thresholds holding the floor on every head).

Two designs each, both modes of the window PE (``phased``, ``stream``):
``window`` (windows on Q, K and V; small-P pairing on P V) and ``every
lever`` (also the row operand split on PARTIAL row followers and the
query rows delta-coded on P V, as the ceiling's ``attention_bound_stacked``).
The output does not change with the cycle model: the PSNR is the bound
row's.
"""

from __future__ import annotations

import csv
import json
import multiprocessing
import os
import sys

from ..calibrate import FLOOR
from ..golden.grouped import check_group_thresholds
from ..stage_timing import softmax_stage_cycles
from .bounds_io import fmt_thresholds, parse_thresholds
from .ceilings import calibrated_ceiling, fixed_ceiling, set_stats, stacked_ceiling
from .op_bounds import CALIBRATION
from .ranking import geomean
from .row_delta import delta_rows, window_p
from .window_model import MODES, window_pv_timing, window_qk_timing
from .workloads import HELD_OUT, TUNING

__all__ = [
    "CHOICES",
    "DESIGNS",
    "WINDOW_PE_FIELDS",
    "window_pe_choices",
    "window_pe",
    "window_pe_summary",
    "window_pe_table",
    "write_window_pe",
    "write_window_pe_csv",
    "read_window_pe_csv",
]

#: how a head's window and thresholds are chosen (module doc)
CHOICES = ("calibrated", "oracle", "fixed")

#: the designs measured: column name prefix -> what it has
DESIGNS = {"window": "windows, small-P pairing", "all": "every lever (+ row split, delta rows)"}

#: the columns of ``window_pe.csv``
WINDOW_PE_FIELDS = (
    "set",
    "workload",
    "choice",
    "w",
    "thresholds",
    "psnr",
    "bound",
    *(f"qk_{d}_{m}" for d in DESIGNS for m in MODES),
    *(f"qk_{d}_utilization_{m}" for d in DESIGNS for m in MODES),
    "pv_window",
    "pv_all",
    *(f"attention_{d}_{m}" for d in DESIGNS for m in MODES),
)


def _key(row: dict) -> tuple:
    """A row's head, window and thresholds, hashable."""
    return row["workload"], row["w"], fmt_thresholds(row["thresholds"])


def window_pe_choices(bounds: list[dict], floor: float = FLOOR) -> list[dict]:
    """Per head of every set but the calibration heads and per
    :data:`CHOICES` entry: ``set``, ``workload``, ``choice``, ``w``,
    ``thresholds``, ``psnr`` and the ceiling's ``bound``
    (``attention_bound_stacked``) of the bound row chosen."""
    rows = {_key(b): b for b in bounds}
    picks: list[tuple[str, str, str, int, list]] = []
    for group, c in calibrated_ceiling(bounds, floor).items():
        picks += [(group, name, "calibrated", h[1], h[2]) for name, h in c["heads"].items()]
    for group, c in stacked_ceiling(bounds, floor).items():
        picks += [(group, name, "oracle", *h["attention_bound_stacked"][1:3]) for name, h in c["heads"].items()]
    robust = fixed_ceiling(bounds, floor).get("robust")
    if robust:
        picks += [
            (b["set"], b["workload"], "fixed", robust["w"], robust["thresholds"])
            for b in bounds
            if b["set"] != CALIBRATION
            and (b["w"], fmt_thresholds(b["thresholds"]))
            == (
                robust["w"],
                fmt_thresholds(robust["thresholds"]),
            )
        ]
    out = []
    for group, name, choice, w, th in picks:
        b = rows[(name, w, fmt_thresholds(th))]
        out.append(
            {
                "set": group,
                "workload": name,
                "choice": choice,
                "w": int(w),
                "thresholds": [list(x) for x in check_group_thresholds(th)],
                "psnr": b["psnr"],
                "bound": b["attention_bound_stacked"],
            }
        )
    return out


def _measure(args) -> dict:
    """The window PE's cycles of one head at one window and thresholds."""
    spec, w, th = args
    h = spec.load()
    fp = check_group_thresholds(th)
    vf = tuple(F for F, _ in fp)
    qk = {d: window_qk_timing(h.q, h.k, h.grid, h.split, w, fp, row_partial=d == "all") for d in DESIGNS}
    p = window_p(h.q, h.k, h.grid, h.split, w, fp, scales=h.scales)
    pv = {
        "window": window_pv_timing(p, h.v, h.grid, h.split, w, vf),
        "all": window_pv_timing(delta_rows(p, h.grid), h.v, h.grid, h.split, w, vf),
    }
    sm = softmax_stage_cycles(h.n, h.d)
    dense = qk["window"].dense_cycles + sm + pv["window"]["dense_cycles"]
    out: dict = {}
    for d in DESIGNS:
        for m in MODES:
            out[f"qk_{d}_{m}"] = qk[d].speedup[m]
            out[f"qk_{d}_utilization_{m}"] = qk[d].utilization[m]
            out[f"attention_{d}_{m}"] = dense / (qk[d].cycles[m] + sm + pv[d]["cycles"])
        out[f"pv_{d}"] = pv[d]["dense_cycles"] / pv[d]["cycles"]
    return out


def window_pe(bounds: list[dict], floor: float = FLOOR, *, jobs: int | None = None, specs=None) -> list[dict]:
    """:func:`window_pe_choices` with the window PE's speedups (columns
    :data:`WINDOW_PE_FIELDS`); a window and thresholds chosen twice for a
    head are measured once. Heads run on ``jobs`` processes (default every
    core). ``specs``: the heads the rows may name (default the tuning and
    held-out sets)."""
    specs = {s.name: s for s in (TUNING + HELD_OUT if specs is None else specs)}
    choices = window_pe_choices(bounds, floor)
    unknown = sorted({c["workload"] for c in choices} - specs.keys())
    if unknown:
        raise ValueError(f"window_pe: the bound rows name heads the exploration does not have: {unknown}")
    first: dict = {}  # one measurement per head, window and thresholds
    for c in choices:
        first.setdefault(_key(c), c)
    keys = list(first)
    tasks = [(specs[first[k]["workload"]], first[k]["w"], first[k]["thresholds"]) for k in keys]
    jobs = min(jobs or os.cpu_count() or 1, max(1, len(tasks)))
    if jobs <= 1:
        measured = [_measure(t) for t in tasks]
    else:
        ctx = multiprocessing.get_context("fork" if sys.platform != "win32" else "spawn")
        with ctx.Pool(jobs) as pool:
            measured = pool.map(_measure, tasks)
    by_key = dict(zip(keys, measured, strict=True))
    return [{**c, **by_key[_key(c)]} for c in choices]


def window_pe_summary(rows: list[dict], floor: float = FLOOR) -> dict:
    """Per choice and set: for every design and mode and for the ceiling's
    ``bound``, :func:`kaleido.explore.set_stats` (geomean, slowest, heads
    at 2x, worst PSNR, heads below ``floor``)."""
    out: dict = {}
    for r in rows:
        out.setdefault(r["choice"], {}).setdefault(r["set"], []).append(r)
    keys = ["bound", *(f"attention_{d}_{m}" for d in DESIGNS for m in MODES)]
    return {
        choice: {
            group: {k: set_stats([r[k] for r in rs], [r["psnr"] for r in rs], floor) for k in keys}
            | {"heads": len(rs), "utilization": geomean([r["qk_all_utilization_phased"] for r in rs])}
            for group, rs in sets.items()
        }
        for choice, sets in out.items()
    }


def window_pe_table(rows: list[dict], floor: float = FLOOR) -> list[str]:
    """Markdown: the summary (geomean, slowest head in brackets, heads at
    2x) per choice and set, then every row."""
    s = window_pe_summary(rows, floor)

    def cell(x: dict) -> str:
        return f"{x['geomean']:.3f}x ({x['min']:.3f}x), {x['at_least_2x']}"

    out = [
        "| choice | set | heads | worst PSNR | ceiling (op bounds) | window, phased | window, stream "
        "| every lever, phased | every lever, stream |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for choice in CHOICES:
        for group, g in s.get(choice, {}).items():
            out.append(
                f"| {choice} | {group} | {g['heads']} | {g['bound']['psnr_min']:.1f} dB | {cell(g['bound'])} | "
                + " | ".join(cell(g[f"attention_{d}_{m}"]) for d in DESIGNS for m in MODES)
                + " |"
            )
    out += [
        "",
        "| choice | set | head | w | thresholds | PSNR | ceiling | Q K^T every lever, phased (util.) "
        "| P V every lever | attention window, phased | attention every lever, phased | every lever, stream |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        out.append(
            f"| {r['choice']} | {r['set']} | {r['workload']} | {r['w']} | {fmt_thresholds(r['thresholds'])} "
            f"| {r['psnr']:.1f} | {r['bound']:.3f}x | {r['qk_all_phased']:.3f}x "
            f"({100 * r['qk_all_utilization_phased']:.1f} %) | {r['pv_all']:.3f}x "
            f"| {r['attention_window_phased']:.3f}x "
            f"| {r['attention_all_phased']:.3f}x | {r['attention_all_stream']:.3f}x |"
        )
    return out


def write_window_pe_csv(rows: list[dict], path: str) -> str:
    """:func:`window_pe`'s rows as CSV (:data:`WINDOW_PE_FIELDS`)."""
    with open(path, "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=WINDOW_PE_FIELDS)
        wr.writeheader()
        for r in rows:
            wr.writerow({k: fmt_thresholds(r[k]) if k == "thresholds" else r[k] for k in WINDOW_PE_FIELDS})
    return path


def write_window_pe(rows: list[dict], out: str, floor: float = FLOOR) -> list[str]:
    """``window_pe.json``, ``window_pe.csv`` and ``window_pe.md`` in ``out``."""
    os.makedirs(out, exist_ok=True)
    paths = [os.path.join(out, f"window_pe.{x}") for x in ("json", "csv", "md")]
    with open(paths[0], "w") as f:
        json.dump(rows, f, indent=1)
    write_window_pe_csv(rows, paths[1])
    with open(paths[2], "w") as f:
        f.write("\n".join(["# The window PE on the exploration's heads (kaleido explore --window-pe)", ""]))
        f.write("\n".join(window_pe_table(rows, floor)) + "\n")
    return paths


def read_window_pe_csv(path: str) -> list[dict]:
    """:func:`window_pe`'s rows back from a ``window_pe.csv``."""
    with open(path) as f:
        rows = list(csv.DictReader(f))
    missing = [k for k in WINDOW_PE_FIELDS if rows and k not in rows[0]]
    if missing:
        raise ValueError(f"{path} lacks the window PE columns {missing}")

    def value(k: str, v: str):
        if k in ("set", "workload", "choice"):
            return v
        return int(v) if k == "w" else parse_thresholds(v, path) if k == "thresholds" else float(v)

    return [{k: value(k, r[k]) for k in WINDOW_PE_FIELDS} for r in rows]
