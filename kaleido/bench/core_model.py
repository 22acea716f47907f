"""The whole core's cycle model, timed (not a timed test): ``core_cycles``
of the Kaleido core and of the dense core on one synthetic head.

``python -m kaleido.bench.core_model`` (default: ``make sim``'s head, grid
4,16,16, 1,024 tokens, seed 1) times :func:`kaleido.model.core_cycles` for
both cores (one core's wall time, ``time.perf_counter``) and writes
``build/bench/core_model.json``: the cycles, the seconds, the distinct
tile pairs the Kaleido core's model lays out (one ``engine_cycles`` each)
and, from the seconds a pair, the projected time of a 32,768-token head
with the same tile (docs/CORE.md, "Cycles").
"""

from __future__ import annotations

import argparse
import json
import os
import time

from ..checks import check_grid
from ..config import PRESETS, CoreConfig, KaleidoConfig
from ..golden.workloads import synthetic_video
from ..loopnest import tile_boxes
from ..model import core_cycles

#: the sequence length the issue's core must reach (issue 13)
LONG_TOKENS = 32_768


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grid", default="4,16,16", help="T,H,W of the head (default make sim's 4,16,16)")
    ap.add_argument("--preset", default="hunyuan", choices=sorted(PRESETS))
    ap.add_argument("--motion", default="slow")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default="build/bench/core_model.json")
    args = ap.parse_args(argv)
    try:
        grid = check_grid(tuple(int(x) for x in args.grid.split(",")))
    except (TypeError, ValueError) as e:
        raise SystemExit(f"error: --grid {args.grid!r}: {e}") from None
    config = KaleidoConfig(split=PRESETS[args.preset]["split"])
    core = CoreConfig()
    w = synthetic_video(args.preset, grid, args.motion, args.seed)
    boxes = len(tile_boxes(grid, core.tile))
    out: dict = {
        "grid": list(grid),
        "tokens": w.n,
        "preset": args.preset,
        "motion": args.motion,
        "seed": args.seed,
        "design": config.design,
        "tile": list(core.tile),
        "tile_pairs": boxes * boxes,
    }
    for variant in ("kaleido", "dense"):
        t0 = time.perf_counter()
        cycles = core_cycles(w.q, w.k, w.v, grid, config, core, variant=variant, scales=w.scales)
        out[variant] = {"cycles": cycles, "model_s": round(time.perf_counter() - t0, 3)}
    per_pair = round(out["kaleido"]["model_s"] / (boxes * boxes), 5)
    out["kaleido_s_per_tile_pair"] = per_pair
    out["projected_s_at_32768_tokens"] = round(per_pair * (LONG_TOKENS // core.tile_tokens) ** 2)
    out["cpu_count"] = os.cpu_count()
    out["load_average"] = [round(x, 2) for x in os.getloadavg()]
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(out, f, indent=2)
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
