"""The attention core's simulation speed on the fast path (issues 13 and
42): one head through the emitted core on Verilator (Q, K and V read from a file at
time 0, the command's bits given at run time, nothing but the simulator on
each cycle), the simulated cycles per second of the head's run (the build
not counted; the plain binary's time is its whole process, start-up and O
readback included) against the goal of 200,000.

``python -m kaleido.tb.core_sim_bench [--grid T,H,W] [--designs default,one_array]
[--harness binary,cocotb] [--repeat N] [--out build/bench/core_sim.json]``;
also writes the runs as CSV beside it (``core_sim.csv``).

Two harnesses (``run_core``'s ``harness``):

- ``binary``: ``make sim``'s own path, a plain Verilator binary with its
  Verilog top level, on ``make sim``'s head by default (4x16x16, 1,024
  tokens), one row per design of ``--designs``. The first design's row
  (``default``, ``make sim``'s: sixteen 1x1 arrays, small-P pairing) is the
  goal's; ``one_array`` (one 4x4 array, the design the goal was first met
  on) beside it. The default's row shares ``make sim``'s build: after
  ``make sim`` nothing is rebuilt for it.
- ``cocotb``: the first design's emitted core under cocotb's main loop, the
  path of the stall-injecting tests and ``WAVES=1``, on a 128-token head
  (2x8x8; ``--cocotb-grid``).

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

__all__ = ["GOAL", "HARNESSES", "DESIGNS_MEASURED", "CSV_COLUMNS", "measure", "runs_csv", "main"]

#: the issue's goal for the core on Verilator, simulated cycles per second
GOAL = 200_000
#: ``run_core``'s harnesses, the goal's first
HARNESSES = ("binary", "cocotb")
#: the designs the binary harness measures by default: the goal's (``make sim``'s) first
DESIGNS_MEASURED = ("default", "one_array")


def measure(
    grid=(4, 16, 16),
    sim: str = "verilator",
    seed: int = 1,
    harness: str = "binary",
    repeat: int = 1,
    design: str = "default",
) -> dict:
    """One head of ``design`` (:data:`kaleido.config.DESIGNS`, on the
    HunyuanVideo preset, as ``make sim`` builds it) on ``sim`` through
    ``harness``, ``repeat`` times on one build: cycles, the model's,
    bit-exactness (every run), seconds and cycles per second of each run,
    their median."""
    from kaleido.golden.workloads import synthetic_video
    from kaleido.model import core_cycles
    from kaleido.tb.core_io import core_reference, run_core

    if harness not in HARNESSES:
        raise ValueError(f"harness must be one of {HARNESSES}, not {harness!r}")
    if repeat < 1:
        raise ValueError(f"repeat must be at least 1, not {repeat}")
    config, core = KaleidoConfig.preset("hunyuan", design), CoreConfig()
    w = synthetic_video("hunyuan", grid, "slow", seed)
    ref = core_reference(w.q, w.k, w.v, grid, w.scales, config, core)
    runs, cpus, exact, cycles = [], [], True, set()
    t0 = time.time()
    for _ in range(repeat):
        started, cpu0 = time.time(), _children_cpu()
        res = run_core(sim, w.q, w.k, w.v, grid, w.scales, config, core, harness=harness)
        if res["failed"] or "o" not in res:
            raise RuntimeError(f"the core simulation failed, see {res['build_dir']}")
        exact &= bool(np.array_equal(res["o"], ref))
        cycles.add(res["cycles"])
        runs.append(res["seconds"])
        binary = pathlib.Path(res["build_dir"]) / "obj" / "Vplain_top"
        # the binary's CPU time, from the children's rusage: only a run that built nothing is counted
        built = not binary.exists() or binary.stat().st_mtime >= started
        cpus.append(None if harness != "binary" or built else _children_cpu() - cpu0)
    wall = time.time() - t0
    if len(cycles) != 1:
        raise RuntimeError(f"the runs of one head disagree on its cycles: {sorted(cycles)}")
    (n_cycles,) = cycles
    rates = [round(n_cycles / s) for s in runs]
    median = round(statistics.median(rates))
    cpu_rates = [round(n_cycles / s) for s in cpus if s]
    return {
        "design": design,
        "simulator": sim,
        "harness": harness,
        "tokens": int(np.prod(grid)),
        "grid": list(grid),
        "cycles": n_cycles,
        "model_cycles": core_cycles(w.q, w.k, w.v, grid, config, core, scales=w.scales),
        "bit_exact": exact,
        "run_seconds": [round(s, 3) for s in runs],
        "build_and_run_seconds": round(wall, 1),
        "runs_cycles_per_s": rates,
        "sim_cycles_per_s": median,
        "run_cpu_seconds": [None if s is None else round(s, 3) for s in cpus],
        "cpu_cycles_per_s": round(statistics.median(cpu_rates)) if cpu_rates else None,
        "goal_cycles_per_s": GOAL,
        "goal_met": median >= GOAL,
        "load_average": round(os.getloadavg()[0], 2),
    }


def _children_cpu() -> float:
    """User and system seconds of this process's finished children (the
    plain binary's run, and its build when one ran)."""
    import resource

    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


#: the fields of a :func:`measure` row that :func:`runs_csv` repeats on each of its runs' lines
ROW_FIELDS = ("design", "harness", "simulator", "tokens", "cycles", "model_cycles", "bit_exact")
#: the columns of :func:`runs_csv`: the row's fields, then the run's
CSV_COLUMNS = (*ROW_FIELDS, "run", "run_seconds", "sim_cycles_per_s", "run_cpu_seconds", "goal_cycles_per_s")


def runs_csv(rows: list[dict]) -> str:
    """:func:`measure`'s rows as CSV, one line a run (``core_sim.csv``
    beside the JSON), in :data:`CSV_COLUMNS` (``run_cpu_seconds`` empty
    for a run whose CPU time was not measured: it built the binary, or ran
    under cocotb)."""
    lines = [",".join(CSV_COLUMNS)]
    for r in rows:
        cpus = r.get("run_cpu_seconds") or [None] * len(r["run_seconds"])  # a row without: none measured
        runs = zip(r["run_seconds"], r["runs_cycles_per_s"], cpus, strict=True)
        for i, (sec, rate, cpu) in enumerate(runs):
            fields = [r.get(c, "") for c in ROW_FIELDS] + [i + 1, sec, rate, "" if cpu is None else cpu, GOAL]
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
    from kaleido.config import DESIGNS

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grid", default="4,16,16", help="the binary harness's head (default make sim's, 4,16,16)")
    ap.add_argument("--cocotb-grid", default="2,8,8", help="the cocotb harness's head (default 2,8,8)")
    ap.add_argument(
        "--designs",
        default=",".join(DESIGNS_MEASURED),
        help="the binary harness's designs, the goal's first (default default,one_array); cocotb runs the first",
    )
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
    designs = [d for d in args.designs.split(",") if d]
    if not designs or any(d not in DESIGNS for d in designs):
        raise SystemExit(f"error: --designs takes names of {', '.join(DESIGNS)}, not {args.designs!r}")
    if args.repeat < 1:
        raise SystemExit(f"error: --repeat must be at least 1, not {args.repeat}")
    grids = {"binary": _grid(args.grid, "--grid"), "cocotb": _grid(args.cocotb_grid, "--cocotb-grid")}
    runs = [(h, d) for h in harnesses for d in (designs if h == "binary" else designs[:1])]
    rows = []
    for harness, design in runs:
        row = measure(grids[harness], args.sim, harness=harness, repeat=args.repeat, design=design)
        rows.append(row)
        verdict = "met" if row["goal_met"] else "MISSED"
        cpu = "" if row["cpu_cycles_per_s"] is None else f"CPU time {row['cpu_cycles_per_s']:,} cycles/s;"
        print(
            f"core of {design} on {row['simulator']} ({harness}), {row['tokens']} tokens: {row['cycles']:,} cycles "
            f"(model {row['model_cycles']:,}), bit-exact {row['bit_exact']}, {row['sim_cycles_per_s']:,} cycles/s "
            f"(runs {', '.join(f'{r:,}' for r in row['runs_cycles_per_s'])}; goal {GOAL:,}: {verdict}; "
            f"{cpu} load {row['load_average']})",
            flush=True,
        )
    out = pathlib.Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    goal = next((r for r in rows if r["harness"] == "binary"), None)
    summary = {
        "goal_cycles_per_s": GOAL,
        "goal_harness": "binary",
        "goal_design": None if goal is None else goal["design"],
        "goal_met": None if goal is None else goal["goal_met"],
        "rows": rows,
    }
    out.write_text(json.dumps(summary, indent=2) + "\n")
    out.with_suffix(".csv").write_text(runs_csv(rows))
    print(f"-> {out}, {out.with_suffix('.csv')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
