"""The attention core's simulation speed on the fast path (issue 13): one
head through the emitted core on Verilator (Q, K and V read from a file at
time 0, the command's bits given at run time, nothing but the simulator on
each cycle), the simulated cycles per second of the head's run (the build
not counted; the plain binary's time is its whole process, start-up and O
readback included) against the goal of 200,000.

``python -m kaleido.tb.core_sim_bench [--grid T,H,W] [--harness binary,cocotb]
[--repeat N] [--out build/bench/core_sim.json]``; also writes the
runs as CSV beside it (``core_sim.csv``).

Two harnesses, one row each (``run_core``'s ``harness``):

- ``binary`` (the goal's): ``make sim``'s own path, a plain Verilator binary
  with its Verilog top level, on ``make sim``'s head by default (4x16x16,
  1,024 tokens, 15,397,085 cycles). It shares ``make sim``'s build: after
  ``make sim`` nothing is rebuilt.
- ``cocotb``: the same emitted core under cocotb's main loop, the path of
  the stall-injecting tests and ``WAVES=1``, on a 128-token head (2x8x8;
  ``--cocotb-grid``).

``--repeat N`` runs each head N times on its build and keeps every rate (the
host's speed varies by about 10 % from run to run); the verdict is on the
median.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import time
import warnings

import numpy as np

from kaleido.config import CoreConfig, KaleidoConfig

__all__ = ["GOAL", "HARNESSES", "CSV_COLUMNS", "measure", "runs_csv", "main"]

#: the issue's goal for the core on Verilator, simulated cycles per second
GOAL = 200_000
#: ``run_core``'s harnesses, the goal's first
HARNESSES = ("binary", "cocotb")


def measure(grid=(4, 16, 16), sim: str = "verilator", seed: int = 1, harness: str = "binary", repeat: int = 1) -> dict:
    """One head on ``sim`` through ``harness``, ``repeat`` times on one
    build: cycles, the model's, bit-exactness (every run), seconds and
    cycles per second of each run, their median."""
    from kaleido.golden.workloads import synthetic_video
    from kaleido.model import core_cycles
    from kaleido.tb.core_io import core_reference, run_core

    if harness not in HARNESSES:
        raise ValueError(f"harness must be one of {HARNESSES}, not {harness!r}")
    if repeat < 1:
        raise ValueError(f"repeat must be at least 1, not {repeat}")
    config, core = KaleidoConfig.one_array(), CoreConfig()
    w = synthetic_video("hunyuan", grid, "slow", seed)
    ref = core_reference(w.q, w.k, w.v, grid, w.scales, config, core)
    runs, exact, cycles = [], True, set()
    t0 = time.time()
    for _ in range(repeat):
        res = run_core(sim, w.q, w.k, w.v, grid, w.scales, config, core, harness=harness)
        if res["failed"] or "o" not in res:
            raise RuntimeError(f"the core simulation failed, see {res['build_dir']}")
        exact &= bool(np.array_equal(res["o"], ref))
        cycles.add(res["cycles"])
        runs.append(res["seconds"])
    wall = time.time() - t0
    if len(cycles) != 1:
        raise RuntimeError(f"the runs of one head disagree on its cycles: {sorted(cycles)}")
    (n_cycles,) = cycles
    rates = [round(n_cycles / s) for s in runs]
    median = round(statistics.median(rates))
    return {
        "simulator": sim,
        "harness": harness,
        "tokens": int(np.prod(grid)),
        "grid": list(grid),
        "cycles": n_cycles,
        "model_cycles": core_cycles(w.q, w.k, w.v, grid, config, core),
        "bit_exact": exact,
        "run_seconds": [round(s, 3) for s in runs],
        "build_and_run_seconds": round(wall, 1),
        "runs_cycles_per_s": rates,
        "sim_cycles_per_s": median,
        "goal_cycles_per_s": GOAL,
        "goal_met": median >= GOAL,
        "load_average": round(os.getloadavg()[0], 2),
    }


#: the fields of a :func:`measure` row that :func:`runs_csv` repeats on each of its runs' lines
ROW_FIELDS = ("harness", "simulator", "tokens", "cycles", "model_cycles", "bit_exact")
#: the columns of :func:`runs_csv`: the row's fields, then the run's
CSV_COLUMNS = (*ROW_FIELDS, "run", "run_seconds", "sim_cycles_per_s", "goal_cycles_per_s")


def runs_csv(rows: list[dict]) -> str:
    """:func:`measure`'s rows as CSV, one line a run (``core_sim.csv``
    beside the JSON), in :data:`CSV_COLUMNS`."""
    lines = [",".join(CSV_COLUMNS)]
    for r in rows:
        for i, (sec, rate) in enumerate(zip(r["run_seconds"], r["runs_cycles_per_s"], strict=True)):
            fields = [r[c] for c in ROW_FIELDS] + [i + 1, sec, rate, GOAL]
            lines.append(",".join(str(f) for f in fields))
    return "\n".join(lines) + "\n"


def _grid(text: str, flag: str) -> tuple[int, ...]:
    try:
        grid = tuple(int(x) for x in text.split(","))
    except ValueError:
        grid = ()
    if len(grid) != 3 or min(grid) < 1:
        raise SystemExit(f"error: {flag} must be three positive integers T,H,W, not {text!r}")
    return grid


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grid", default="4,16,16", help="the binary harness's head (default make sim's, 4,16,16)")
    ap.add_argument("--cocotb-grid", default="2,8,8", help="the cocotb harness's head (default 2,8,8)")
    ap.add_argument("--harness", default=",".join(HARNESSES), help="binary, cocotb or both (default both)")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each head on its build (default 1)")
    ap.add_argument("--sim", default="verilator")
    ap.add_argument("--out", default="build/bench/core_sim.json")
    args = ap.parse_args(argv)
    # as in the test suite (pyproject.toml): Amaranth's note on each bench whose cached Verilog was reused
    warnings.filterwarnings("ignore", message=".*created but never used")
    harnesses = [h for h in args.harness.split(",") if h]
    bad = [h for h in harnesses if h not in HARNESSES]
    if bad or not harnesses:
        raise SystemExit(f"error: --harness takes {', '.join(HARNESSES)}, not {args.harness!r}")
    if args.repeat < 1:
        raise SystemExit(f"error: --repeat must be at least 1, not {args.repeat}")
    grids = {"binary": _grid(args.grid, "--grid"), "cocotb": _grid(args.cocotb_grid, "--cocotb-grid")}
    rows = []
    for harness in harnesses:
        row = measure(grids[harness], args.sim, harness=harness, repeat=args.repeat)
        rows.append(row)
        verdict = "met" if row["goal_met"] else "MISSED"
        print(
            f"core on {row['simulator']} ({harness}), {row['tokens']} tokens: {row['cycles']:,} cycles "
            f"(model {row['model_cycles']:,}), bit-exact {row['bit_exact']}, {row['sim_cycles_per_s']:,} cycles/s "
            f"(runs {', '.join(f'{r:,}' for r in row['runs_cycles_per_s'])}; goal {GOAL:,}: {verdict}; "
            f"load {row['load_average']})",
            flush=True,
        )
    out = pathlib.Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    goal = next((r for r in rows if r["harness"] == "binary"), None)
    summary = {
        "goal_cycles_per_s": GOAL,
        "goal_harness": "binary",
        "goal_met": None if goal is None else goal["goal_met"],
        "rows": rows,
    }
    out.write_text(json.dumps(summary, indent=2) + "\n")
    out.with_suffix(".csv").write_text(runs_csv(rows))
    print(f"-> {out}, {out.with_suffix('.csv')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
