"""``kaleido explore``'s command line (:func:`main`, :func:`add_arguments`,
:func:`run`): the candidates' sweep (:mod:`kaleido.explore.explorer`), the op
bounds and their ceilings (:mod:`kaleido.explore.op_bounds`,
:mod:`kaleido.explore.bounds_io`), or the window PE on them
(:mod:`kaleido.explore.window_pe`). It is the one module that needs the
sweep and the window PE both, so neither imports the other's caller."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from ..calibrate import FLOOR
from . import explorer
from .bounds_io import bound_rows, write_bounds
from .candidate_sets import candidates, quick_candidates
from .explorer import explore, merge, rerank
from .op_bounds import window_bounds
from .ranking import rank
from .report import write
from .window_pe import window_pe, write_window_pe
from .workloads import TUNING

__all__ = ["add_arguments", "run", "main"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--out",
        default=None,
        help="folder for results.json, results.csv, summary.md (default build/explore; with --quick "
        "build/explore/quick, so a quick look never replaces the full run make report reads)",
    )
    p.add_argument("--jobs", type=int, default=None, help="processes (default every core)")
    p.add_argument("--floor", type=float, default=FLOOR, help=f"PSNR floor in dB (default {FLOOR:g})")
    p.add_argument("--quick", action="store_true", help="a few candidates on the tuning set only (about 15 s)")
    p.add_argument("--family", action="append", default=None, help="only these candidate families (repeatable)")
    p.add_argument("--candidate", action="append", default=None, help="only these candidates, by name (repeatable)")
    p.add_argument("--no-bounds", action="store_true", help="skip the longer-window op bounds")
    p.add_argument(
        "--bounds-only",
        action="store_true",
        help="only the op bounds and the ceiling of every lever, on both sets: OUT/bounds.json, bounds.csv, "
        "bounds.md (about 9 min on two cores)",
    )
    p.add_argument(
        "--window-pe",
        action="store_true",
        help="the window PE's cycle model on each head's window and thresholds from OUT/bounds.json (else the "
        "committed docs/report/exploration_bounds.csv): OUT/window_pe.json, window_pe.csv, window_pe.md "
        "(about 10 min on two cores)",
    )
    p.add_argument(
        "--max-window",
        type=int,
        default=None,
        help="with --window-pe: choose among windows of at most this many tokens (a smaller PE)",
    )
    p.add_argument(
        "--merge", action="store_true", help="add these candidates to OUT/results.json (same names are replaced)"
    )
    p.add_argument(
        "--summarize",
        action="store_true",
        help="re-rank OUT/results.json, recompute the window bounds (unless --no-bounds), rewrite its outputs",
    )


def _read(out: str) -> dict:
    path = os.path.join(out, "results.json")
    if not os.path.exists(path):
        raise ValueError(f"no results to read: {path!r} does not exist (run kaleido explore first)")
    with open(path) as f:
        return json.load(f)


def run(args: argparse.Namespace) -> int:
    if args.out is None:
        args.out = os.path.join("build", "explore", "quick") if args.quick else os.path.join("build", "explore")
    if args.jobs is not None and args.jobs < 1:
        raise ValueError(f"--jobs must be a positive integer, not {args.jobs}")
    if args.max_window is not None and not args.window_pe:
        raise ValueError("--max-window needs --window-pe")
    if args.window_pe:
        if args.summarize or args.no_bounds or args.quick or args.bounds_only:
            raise ValueError("--window-pe runs alone: not with --summarize, --no-bounds, --quick or --bounds-only")
        wb, source = bound_rows(args.out)
        if args.max_window is not None:
            if args.max_window < 2:
                raise ValueError(f"--max-window must be at least 2 (pairs), not {args.max_window}")
            wb = [b for b in wb if b["w"] <= args.max_window]
        print(f"bounds from {source}" + ("" if args.max_window is None else f", windows up to {args.max_window}"))
        for path in write_window_pe(window_pe(wb, args.floor, jobs=args.jobs), args.out, args.floor):
            print(f"wrote {path}")
        return 0
    if args.bounds_only:
        if args.summarize or args.no_bounds or args.quick:
            raise ValueError("--bounds-only runs alone: not with --summarize, --no-bounds or --quick")
        for path in write_bounds(window_bounds(jobs=args.jobs), args.out, args.floor):
            print(f"wrote {path}")
        return 0
    if args.summarize:
        result = rerank(_read(args.out))
        if not args.no_bounds:
            result["window_bounds"] = window_bounds(jobs=args.jobs)
        for path in write(result, args.out):
            print(f"wrote {path}")
        return 0
    cands = quick_candidates() if args.quick else candidates()
    if args.family:
        known = sorted({c.family for c in candidates()})
        unknown = [f for f in args.family if f not in known]
        if unknown:
            raise ValueError(f"unknown candidate family {unknown[0]!r}; known: {known}")
        cands = [c for c in cands if c.family in args.family or c.name == "paper"]
    if args.candidate:
        known = [c.name for c in candidates()]
        unknown = [n for n in args.candidate if n not in known]
        if unknown:
            raise ValueError(f"unknown candidate {unknown[0]!r}; known: {known}")
        cands = [c for c in cands if c.name in args.candidate]
    sets = {"tuning": TUNING} if args.quick else None
    t0 = time.time()

    def log(done, total, row):
        print(
            f"  [{time.time() - t0:6.1f} s] {done}/{total} {row['candidate']} on {row['workload']}: "
            f"attention {row['attention_speedup']:.3f}x, Q K^T {row['qk_speedup']:.3f}x, {row['psnr']:.1f} dB",
            flush=True,
        )

    result = explore(cands, sets, jobs=args.jobs, floor=args.floor, bounds=not args.no_bounds, log=log)
    if args.merge:
        result = merge(_read(args.out), result)
    for path in write(result, args.out):
        print(f"wrote {path}")
    agg = result["aggregate"]
    best = rank(agg, "tuning", require=tuple(result["sets"]))[0]
    for name in dict.fromkeys(n for n in ("paper", best) if n in agg):
        t = agg[name]["tuning"]
        print(
            f"{name}: tuning attention {t['attention_speedup']:.3f}x, Q K^T {t['qk_speedup']:.3f}x, "
            f"PSNR min {t['psnr_min']:.1f} dB{'' if t['meets_floor'] else ' (below floor)'}"
        )
    print(f"{len(result['candidates'])} candidates in {result['seconds']:.0f} s on {result['jobs']} processes")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="kaleido explore", description=explorer.__doc__.splitlines()[0])
    add_arguments(ap)
    args = ap.parse_args(argv)
    try:
        return run(args)
    except (ValueError, TypeError) as err:
        ap.exit(2, f"kaleido explore: error: {err}\n")


if __name__ == "__main__":
    sys.exit(main())
