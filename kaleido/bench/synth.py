"""`make synth`'s wall time against issue 42's goal (10 minutes on 2 cores
from a fresh clone): the whole flow (every block, every core of
``kaleido.config.DESIGNS`` and the dense core) run cold, in a scratch
build directory with an empty cache, then once more warm on the same
cache, once per way to an Fmax (:data:`MODES`: on the flattened blocks,
``make synth``'s, and by parts, ``--fmax-parts``). A missed goal is
reported with its number, not failed.

``python -m kaleido.bench.synth [--modes flattened,parts] [--out build/bench/synth.json]``
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

__all__ = ["GOAL_SECONDS", "MODES", "run", "main"]

#: issue 42, item 3: `make synth` within 10 minutes on 2 cores
GOAL_SECONDS = 600.0


def run(root: str, jobs: int = 2, args: tuple[str, ...] = ()) -> dict:
    """One ``python -m kaleido.synth.flow`` in ``root`` (its report and
    table there, not in docs/): wall seconds, exit code and the report's
    cache counts and failures."""
    os.makedirs(root, exist_ok=True)
    cmd = [sys.executable, "-m", "kaleido.synth.flow", "--root", root, "--doc", os.path.join(root, "table.md")]
    t0 = time.time()
    with open(os.path.join(root, "flow.log"), "w") as log:
        proc = subprocess.run([*cmd, "--jobs", str(jobs), *args], stdout=log, stderr=subprocess.STDOUT)
    wall = time.time() - t0
    report_path = os.path.join(root, "report.json")
    report = json.load(open(report_path)) if os.path.exists(report_path) else {}
    return {
        "wall_seconds": round(wall, 1),
        "cpu_seconds": report.get("cpu_seconds"),
        "returncode": proc.returncode,
        "cache": report.get("cache"),
        "failures": sorted(report.get("failures", {})),
        "cores": {
            k: report.get("core", {}).get(k, {}).get("method") for k in ("default", "one_array", "paper", "dense")
        },
    }


#: the flow's two ways to an Fmax, the extra arguments of each
MODES = {"flattened": (), "parts": ("--fmax-parts",)}


def main(argv: list | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="build/bench/synth.json")
    ap.add_argument("--root", default="build/bench/synth", help="scratch build directory (emptied first)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--modes", default=",".join(MODES), help=f"comma-separated of {', '.join(MODES)}")
    args = ap.parse_args(argv)
    modes = [m for m in args.modes.split(",") if m]
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        raise SystemExit(f"unknown mode {unknown[0]!r}; known: {', '.join(MODES)}")
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    result: dict = {"goal_seconds": GOAL_SECONDS, "jobs": args.jobs, "cpus": os.cpu_count()}
    result["git_commit"] = commit or None
    for mode in modes:
        root = os.path.join(args.root, mode)
        shutil.rmtree(root, ignore_errors=True)
        cold = run(root, args.jobs, MODES[mode])
        warm = run(root, args.jobs, MODES[mode])
        met = cold["wall_seconds"] <= GOAL_SECONDS and cold["returncode"] == 0
        result[mode] = {"cold": cold, "warm": warm, "met": met}
        print(
            f"synth bench, Fmax {mode}: cold {cold['wall_seconds']:.0f} s (goal {GOAL_SECONDS:.0f} s: "
            f"{'met' if met else 'MISSED'}; exit {cold['returncode']}, cache {cold['cache']}), "
            f"warm {warm['wall_seconds']:.0f} s (cache {warm['cache']})"
        )
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=2)
    print(f"synth bench -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
