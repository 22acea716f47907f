"""Benchmark of the golden model (not a timed test).

``python -m kaleido.bench.golden --out build/bench/golden.json`` times
``reuse_scores`` at N = 4096, d = 128 (best and median of several runs) and
checks the result exactly against an int64 matmul.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time

import numpy as np

from kaleido.golden import effective, reuse_scores

from ..golden.workloads import synthetic_video


def bench_reuse_scores(grid=(16, 16, 16), preset="hunyuan", repeats=7, seed=0):
    w = synthetic_video(preset, grid, "slow", seed=seed)
    times = []
    for i in range(repeats):
        t0 = time.perf_counter()
        S = reuse_scores(w.q, w.k, w.grid, w.split)
        times.append(time.perf_counter() - t0)
        print(f"  run {i + 1}/{repeats}: {times[-1]:.3f} s", flush=True)
    Qe = effective(w.q, w.grid, w.split, side="row").astype(np.int64)
    Ke = effective(w.k, w.grid, w.split).astype(np.int64)
    exact = bool((S == Qe @ Ke.T).all())
    return {
        "function": "reuse_scores",
        "N": int(w.n),
        "d": int(w.d),
        "grid": list(grid),
        "best_s": min(times),
        "median_s": statistics.median(times),
        "repeats": repeats,
        "exact_vs_int64_matmul": exact,
        "goal_s": 0.5,
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="build/bench/golden.json")
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args(argv)
    print("reuse_scores, N = 4096, d = 128:", flush=True)
    result = bench_reuse_scores(repeats=args.repeats)
    result["machine"] = {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "processor": platform.processor(),
    }
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=2)
    print(
        f"best {result['best_s']:.3f} s, median {result['median_s']:.3f} s "
        f"(goal <= {result['goal_s']} s), exact: {result['exact_vs_int64_matmul']} -> {args.out}"
    )
    if not result["exact_vs_int64_matmul"]:
        raise SystemExit("reuse_scores is NOT exact")


if __name__ == "__main__":
    main()
