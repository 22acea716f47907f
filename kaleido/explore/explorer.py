"""Design exploration on the cycle model (issue 14): ``kaleido explore`` or
``python -m kaleido.bench.explore``. This module runs the sweep
(:func:`explore`: :func:`evaluate` every candidate on every head, then
rank) and re-ranks or merges its results (:func:`rerank`, :func:`merge`).

Every candidate design (:mod:`.candidate_sets`) runs on a **tuning set**
(the report's default workloads, both motions) and a **held-out set**
(other seeds, channel spreads, grids, a photograph and the Wan split the
project never tuned on; :mod:`.workloads`), over every core
(:mod:`multiprocessing`). For each head it measures (:mod:`.measurement`)

* ``Q K^T`` cycles (:func:`kaleido.stage_timing.qk_timing`, equal to
  :func:`kaleido.model.run_model` on the RTL's settings) and the dense
  array's with the same PE count;
* whole attention: ``Q K^T``, the softmax unit and output scaler, and
  ``P V`` (:func:`kaleido.stage_timing.pv_timing`), one after another,
  against the dense array running the same three stages;
* the attention output's PSNR against int8 attention without reuse, as
  the hardware computes it (:func:`kaleido.golden.grouped.hw_attention`:
  Q row side, K column side, V FULL followers only).

Candidates are ranked (:mod:`.ranking`) by the geometric-mean
whole-attention speedup over the tuning set among those whose every
tuning head keeps the quality floor (40 dB by default); the held-out set
is reported beside it. Each candidate says whether its cycles are
RTL-backed (``rtl``): ``yes`` (the built design, cycle-exact against the
RTL), ``config`` (a parameter the RTL already takes), or ``no`` (a model
of hardware that does not exist: an estimate). Longer reuse windows are
measured as an op bound only (:mod:`.op_bounds`,
:func:`kaleido.golden.windows.window_bound`; their ceilings
:mod:`.ceilings`, their tables and files :mod:`.bounds_io`).

Writes ``results.json``, ``results.csv`` (one row per candidate and head)
and ``summary.md`` to ``--out`` (default ``build/explore``;
:mod:`.report`).
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import sys
import time

from ..calibrate import FLOOR
from ..golden.grouped import check_group_thresholds
from .candidate import Candidate
from .candidate_sets import candidates
from .measurement import measure
from .op_bounds import window_bounds
from .ranking import aggregate, frontier, rank
from .workloads import HELD_OUT, TUNING

__all__ = ["evaluate", "explore", "rerank", "merge"]


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
