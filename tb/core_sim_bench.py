"""The attention core's simulation speed on the fast path (issue 13): one
head through the emitted core (Q, K and V read from a file at time 0, self-clocked top
level, the testbench only waiting for ``busy``) on Verilator, the
simulated cycles per second of the head's run (the build and the O
readback not counted) against the goal of 200,000.

``python -m kaleido.tb.core_sim_bench [--grid T,H,W] [--sim verilator]
[--out build/bench/core_sim.json]``; the default head is 128 tokens
(2x8x8), HunyuanVideo split, default configuration (328,247 cycles).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import time

import numpy as np

from kaleido.config import CoreConfig, KaleidoConfig

__all__ = ["GOAL", "measure", "main"]

#: the issue's goal for the core on Verilator, simulated cycles per second
GOAL = 200_000


def measure(grid=(2, 8, 8), sim: str = "verilator", seed: int = 1) -> dict:
    """One head on ``sim``: cycles, the model's, bit-exactness, seconds and
    cycles per second."""
    from kaleido.golden.workloads import synthetic_video
    from kaleido.model import core_cycles
    from kaleido.tb.core_io import core_reference, run_core

    config, core = KaleidoConfig(), CoreConfig()
    w = synthetic_video("hunyuan", grid, "slow", seed)
    t0 = time.time()
    res = run_core(sim, w.q, w.k, w.v, grid, w.scales, config, core)
    wall = time.time() - t0
    if res["failed"] or "o" not in res:
        raise RuntimeError(f"the core simulation failed, see {res['build_dir']}")
    ref = core_reference(w.q, w.k, w.v, grid, w.scales, config, core)
    return {
        "simulator": sim,
        "tokens": int(np.prod(grid)),
        "grid": list(grid),
        "cycles": res["cycles"],
        "model_cycles": core_cycles(w.q, w.k, w.v, grid, config, core),
        "bit_exact": bool(np.array_equal(res["o"], ref)),
        "run_seconds": round(res["seconds"], 3),
        "build_and_run_seconds": round(wall, 1),
        "sim_cycles_per_s": round(res["cycles"] / res["seconds"]),
        "goal_cycles_per_s": GOAL,
        "goal_met": res["cycles"] / res["seconds"] >= GOAL,
        "load_average": round(os.getloadavg()[0], 2),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grid", default="2,8,8")
    ap.add_argument("--sim", default="verilator")
    ap.add_argument("--out", default="build/bench/core_sim.json")
    args = ap.parse_args(argv)
    grid = tuple(int(x) for x in args.grid.split(","))
    row = measure(grid, args.sim)
    out = pathlib.Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(row, indent=2) + "\n")
    verdict = "met" if row["goal_met"] else "MISSED"
    print(
        f"core on {row['simulator']}, {row['tokens']} tokens: {row['cycles']:,} cycles "
        f"(model {row['model_cycles']:,}), bit-exact {row['bit_exact']}, {row['sim_cycles_per_s']:,} cycles/s "
        f"(goal {GOAL:,}: {verdict}; load {row['load_average']}) -> {out}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
