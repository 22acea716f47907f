"""How often the engine's banked accumulation buffer holds the array
(docs/ENGINE.md, "The accumulation buffer").

``python -m kaleido.bench.banks`` runs the report's synthetic video heads
(hunyuan and wan splits, slow and fast motion) at engine size through
:func:`kaleido.model.engine_cycles` (exact, holds included) for several
bank counts and FIFO depths, and prints per head the compute cycles, the
cycles held and their share. ``--core`` instead runs ``make sim``'s head
through every named design's whole core and the dense core
(:func:`kaleido.model.core_cycles`) per bank count, the figures behind the
default of 4 banks. ``--json`` writes the rows.
"""

from __future__ import annotations

import argparse
import json
import time

from .. import KaleidoConfig
from ..checks import check_grid
from ..golden.workloads import synthetic_video
from ..model import engine_cycles

__all__ = ["measure", "measure_core", "main"]


def measure(grid, banks, depths, presets=("hunyuan", "wan"), motions=("slow", "fast"), seed=0) -> list[dict]:
    """One row per (preset, motion, banks, depth): compute cycles, held
    cycles, the share held, and the cost over a buffer that never holds."""
    rows = []
    for preset in presets:
        for motion in motions:
            w = synthetic_video(preset, grid, motion, seed)
            base = None
            for b in banks:
                for d in depths:
                    cfg = KaleidoConfig.one_array(split=w.split, s_banks=b, s_fifo_depth=d)
                    t0 = time.time()
                    t = engine_cycles(w.q, w.k, w.grid, w.split, cfg)
                    if base is None:
                        never = cfg.replace(s_banks=1024, s_fifo_depth=1024)
                        base = engine_cycles(w.q, w.k, w.grid, w.split, never).compute
                    rows.append(
                        {
                            "preset": preset,
                            "motion": motion,
                            "grid": list(grid),
                            "banks": b,
                            "depth": d,
                            "compute": t.compute,
                            "held": t.held,
                            "held_share": t.held / t.compute,
                            "over_never_held": t.compute / base - 1,
                            "seconds": round(time.time() - t0, 1),
                        }
                    )
    return rows


def measure_core(banks, depths=(16,), designs=None) -> list[dict]:
    """One row per (design, banks, FIFO depth) on ``make sim``'s head: the
    core's and the dense core's cycles (both take the configuration's
    banks)."""
    from ..config import DESIGNS, CoreConfig
    from ..model import core_cycles
    from .efficiency_report import HEAD

    preset, grid, motion, seed = HEAD
    w = synthetic_video(preset, grid, motion, seed)
    rows = []
    for design in designs or DESIGNS:
        for b in banks:
            for depth in depths:
                cfg = KaleidoConfig.preset(preset, design).replace(s_banks=b, s_fifo_depth=depth)
                cycles = core_cycles(w.q, w.k, w.v, w.grid, cfg, CoreConfig(), scales=w.scales)
                dense = core_cycles(w.q, w.k, w.v, w.grid, cfg, CoreConfig(), variant="dense")
                rows.append({"design": design, "banks": b, "depth": depth, "cycles": cycles, "dense_cycles": dense})
    return rows


def _print_core(rows: list[dict]) -> None:
    print(f"{'design':10s} {'banks':>5s} {'depth':>5s} {'core cycles':>12s} {'dense cycles':>12s} {'speedup':>8s}")
    for r in rows:
        speedup = r["dense_cycles"] / r["cycles"]
        print(
            f"{r['design']:10s} {r['banks']:5d} {r['depth']:5d} {r['cycles']:12,d} {r['dense_cycles']:12,d} "
            f"{speedup:7.4f}x"
        )


def _print_engine(rows: list[dict]) -> None:
    print(f"{'head':14s} {'banks':>5s} {'depth':>5s} {'compute':>10s} {'held':>8s} {'held %':>7s} {'vs never':>8s}")
    for r in rows:
        print(
            f"{r['preset'] + ' ' + r['motion']:14s} {r['banks']:5d} {r['depth']:5d} {r['compute']:10,d} "
            f"{r['held']:8,d} {100 * r['held_share']:6.2f}% {100 * r['over_never_held']:+7.2f}%"
        )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grid", default="4,8,8", help="T,H,W (at most 1024 tokens: the engine's limit)")
    ap.add_argument("--banks", default="2,4,8,16", help="comma-separated bank counts")
    ap.add_argument("--depths", default="16,32", help="comma-separated FIFO depths")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--core", action="store_true", help="make sim's head through each design's and the dense core")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    try:
        grid = check_grid(tuple(int(x) for x in args.grid.split(",")))
    except ValueError as e:
        raise SystemExit(f"--grid must be comma-separated integers, not {args.grid!r} ({e})") from None
    try:
        banks = [int(x) for x in args.banks.split(",")]
        depths = [int(x) for x in args.depths.split(",")]
        for b in banks:
            for d in depths:
                KaleidoConfig.one_array(s_banks=b, s_fifo_depth=d)
    except ValueError as e:
        raise SystemExit(f"--banks {args.banks!r} / --depths {args.depths!r}: {e}") from None
    if args.core:
        rows = measure_core(banks, depths)
        _print_core(rows)
    else:
        rows = measure(grid, banks, depths, seed=args.seed)
        _print_engine(rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
