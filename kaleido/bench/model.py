"""Cycle-model scale benchmark (not a timed test): a HunyuanVideo-sized head.

``python -m kaleido.bench.model --grid 8,64,64`` (32,768 tokens, d = 128)
times the synthetic workload and ``run_model`` for the ``full`` variant and
writes ``build/bench/model.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import time

from .. import KaleidoConfig
from ..golden.workloads import synthetic_video
from ..model import run_model
from ..progress import batch_progress


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grid", default="8,64,64")
    ap.add_argument("--variant", default="full")
    ap.add_argument("--out", default="build/bench/model.json")
    args = ap.parse_args(argv)
    grid = tuple(int(x) for x in args.grid.split(","))
    t0 = time.perf_counter()
    w = synthetic_video("hunyuan", grid, "slow", seed=0)
    t1 = time.perf_counter()
    r = run_model(w.q, w.k, w.grid, w.split, KaleidoConfig(), variant=args.variant, progress=batch_progress())
    t2 = time.perf_counter()
    out = {
        "grid": grid,
        "n": w.n,
        "d": w.d,
        "variant": args.variant,
        "workload_s": t1 - t0,
        "model_s": t2 - t1,
        "goal_s": 60,
        "cycles": r.cycles,
        "speedup": r.speedup,
        "utilization": r.utilization,
        "passes": r.passes,
    }
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(out, f, indent=2)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
