"""``make sweep``: a synthetic stand-in for a whole generation through
``kaleido sweep`` (docs/SWEEP.md).

Writes ``steps x layers x heads`` synthetic heads (:func:`synthetic_video`;
each layer its own channel spread, each step its own camera motion and
seed) with a manifest into ``OUT/heads`` and sweeps them on a local Dask
cluster into ``OUT/table``; the timing goes to ``OUT/bench.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import time

from ..golden.workloads import save, synthetic_video
from ..sweep import configurations, sweep, write_manifest


def write_heads(directory: str, grid, steps: int, layers: int, heads: int, preset: str = "hunyuan") -> int:
    """The synthetic heads and their manifest; returns the head count."""
    os.makedirs(directory, exist_ok=True)
    entries = []
    for step in range(steps):
        for layer in range(layers):
            for head in range(heads):
                w = synthetic_video(
                    preset,
                    grid,
                    "slow" if step % 2 == 0 else "fast",
                    seed=1000 * step + 10 * layer + head,
                    spread=0.25 * (layer % 5),
                )
                name = f"s{step}_l{layer}_h{head}.npz"
                save(os.path.join(directory, name), w)
                entries.append(
                    {"file": name, "step": step, "layer": layer, "head": head, "grid": grid, "split": w.split}
                )
    write_manifest(directory, entries, model=f"synthetic-{preset}", prompt="panned photograph (docs/WORKLOADS.md)")
    return len(entries)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grid", default="4,16,16")
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default="build/sweep")
    args = ap.parse_args(argv)
    grid = tuple(int(x) for x in args.grid.split(","))
    heads_dir, table_dir = os.path.join(args.out, "heads"), os.path.join(args.out, "table")
    t0 = time.perf_counter()
    n = write_heads(heads_dir, grid, args.steps, args.layers, args.heads)
    t1 = time.perf_counter()
    configs = configurations([(5, 3), (5, 4)], [3, 4])
    s = sweep(heads_dir, table_dir, configs, workers=args.workers)
    out = {
        "grid": grid,
        "heads": n,
        "configurations": len(configs),
        "workers": args.workers,
        "write_s": t1 - t0,
        "sweep_s": s["seconds"],
        "speedup": {name: c["speedup"] for name, c in s["by_config"].items()},
        "summary": s["files"]["summary"],
    }
    with open(os.path.join(args.out, "bench.json"), "w") as f:
        json.dump(out, f, indent=2)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
