"""Cycle-model scale benchmark (not a timed test): a HunyuanVideo-sized head.

``python -m kaleido.bench.model --grid 8,64,64`` (32,768 tokens, d = 128)
times the synthetic workload and ``run_model`` for every variant (one core's
wall time, ``time.perf_counter``) and writes ``build/bench/model.json``;
issue 16's goal is at most 10 s per head. ``--reference`` also times the
array walk the model had before issue 16 (``kaleido.explore.reference_walk``,
about 40 s) and checks both give the same result.
"""

from __future__ import annotations

import argparse
import json
import os
import time

from .. import KaleidoConfig
from ..golden.workloads import synthetic_video
from ..model import VARIANTS, run_model
from ..progress import batch_progress

#: issue 16: seconds per 32,768-token head on one core
GOAL_S = 10.0


def _timed(w, variant: str):
    t0 = time.perf_counter()
    r = run_model(w.q, w.k, w.grid, w.split, KaleidoConfig.one_array(), variant=variant, progress=batch_progress())
    return r, time.perf_counter() - t0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grid", default="8,64,64")
    ap.add_argument("--variant", default="all", help="one of the variants, or all (default)")
    ap.add_argument("--reference", action="store_true", help="also time the pre-issue-16 walk (slow)")
    ap.add_argument("--out", default="build/bench/model.json")
    args = ap.parse_args(argv)
    grid = tuple(int(x) for x in args.grid.split(","))
    variants = sorted(VARIANTS) if args.variant == "all" else [args.variant]
    t0 = time.perf_counter()
    w = synthetic_video("hunyuan", grid, "slow", seed=0)
    t1 = time.perf_counter()
    runs = {}
    for variant in variants:
        r, seconds = _timed(w, variant)
        runs[variant] = {
            "model_s": seconds,
            "cycles": r.cycles,
            "speedup": r.speedup,
            "utilization": r.utilization,
            "passes": r.passes,
        }
    main_variant = "full" if "full" in runs else variants[0]
    out = {
        "grid": grid,
        "n": w.n,
        "d": w.d,
        "workload_s": t1 - t0,
        "variant": main_variant,
        "model_s": runs[main_variant]["model_s"],
        "goal_s": GOAL_S,
        "within_goal": all(r["model_s"] <= GOAL_S for r in runs.values()),
        "cycles": runs[main_variant]["cycles"],
        "speedup": runs[main_variant]["speedup"],
        "utilization": runs[main_variant]["utilization"],
        "passes": runs[main_variant]["passes"],
        "variants": runs,
        "cpu_count": os.cpu_count(),
        "load_average": list(os.getloadavg()),
    }
    if args.reference:
        from ..explore.reference_walk import reference_walk

        with reference_walk():
            ref, seconds = _timed(w, main_variant)
        fast = run_model(w.q, w.k, w.grid, w.split, KaleidoConfig.one_array(), variant=main_variant)
        out["reference"] = {"model_s": seconds, "equal": ref.as_dict() == fast.as_dict()}
        if not out["reference"]["equal"]:
            raise SystemExit("the fast walk and the reference walk disagree")
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(out, f, indent=2)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
