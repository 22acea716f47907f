"""The dense core beside the Kaleido core (docs/CORE.md "The dense core").

``python scripts/dense_core_compare.py`` (about 2 min): the small heads of
``tb/test_core.py`` through both cores in the Amaranth simulator (the RTL's
``cycles``, O checked bit-exact against ``core_attention`` with and
without reuse) beside ``core_cycles`` of each variant, then the memory bits
of both default cores (``KaleidoConfig()``, ``CoreConfig()``).

``python scripts/dense_core_compare.py --sim verilator --grid 2,4,8``: one
head of the default configuration through both emitted cores on
Verilator or Icarus instead (a few minutes of build each).
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict

import numpy as np

from kaleido.config import CoreConfig, KaleidoConfig
from kaleido.hdl.core import KaleidoAttentionCore
from kaleido.model import core_cycles
from kaleido.tb.core_buffers import memories
from kaleido.tb.core_io import core_head, core_reference, run_core, simulate_core

#: tb/test_core.py's heads: (grid, tile, split, batch)
SMALL = [
    ((2, 2, 2), (2, 2, 4), (4, 4, 4), 4),
    ((2, 2, 4), (2, 2, 4), (5, 4, 7), 4),
    ((2, 4, 4), (2, 2, 4), (4, 4, 4), 4),
    ((2, 2, 4), (2, 2, 4), (11, 10, 11), 8),
]


def one_head(grid, config, core, sim, seed):
    Q, K, V, scales = core_head(grid, config.split, seed)
    row = {"tokens": int(np.prod(grid))}
    for variant in ("kaleido", "dense"):
        t0 = time.time()
        if sim == "amaranth":
            o, cycles = simulate_core(Q, K, V, grid, scales, config, core, variant=variant)
        else:
            res = run_core(sim, Q, K, V, grid, scales, config, core, variant=variant)
            o, cycles = res["o"], res["cycles"]
        ref = core_reference(Q, K, V, grid, scales, config, core, variant=variant)
        row[variant] = cycles
        row[f"{variant}_exact"] = bool(np.array_equal(o, ref))
        row[f"{variant}_model"] = core_cycles(Q, K, V, grid, config, core, variant=variant)
        row[f"{variant}_s"] = round(time.time() - t0, 1)
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sim", default="amaranth", help="amaranth (small heads), icarus or verilator")
    ap.add_argument("--grid", default=None, help="T,H,W of one default-configuration head (with --sim)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    if args.grid:
        grid = tuple(int(x) for x in args.grid.split(","))
        rows = [(grid, KaleidoConfig(), CoreConfig())]
    else:
        rows = [
            (grid, KaleidoConfig(split=split, batch=batch), CoreConfig(tile=tile, port_bytes=4, mem_latency=3))
            for grid, tile, split, batch in SMALL
        ]
    print("grid, tile, split, batch: tokens | Kaleido core cycles (model) exact | dense core cycles (model) exact")
    for grid, config, core in rows:
        r = one_head(grid, config, core, args.sim, args.seed)
        print(
            f"{grid} {core.tile} {config.split} b{config.batch}: {r['tokens']} | "
            f"{r['kaleido']} ({r['kaleido_model']}) {r['kaleido_exact']} | "
            f"{r['dense']} ({r['dense_model']}) {r['dense_exact']} | "
            f"dense / Kaleido {r['dense'] / r['kaleido']:.3f} | {r['kaleido_s']} s, {r['dense_s']} s"
        )
    print("memory bits of the default cores (KaleidoConfig(), CoreConfig()):")
    for variant in ("kaleido", "dense"):
        mems = memories(KaleidoAttentionCore(KaleidoConfig(), CoreConfig(), variant=variant))
        by: dict = defaultdict(int)
        for m in mems:
            parts = m["path"].split(".")
            if parts[1] == "engine":  # the dense engine's Q and K banks as one
                key = "engine.qk_banks" if parts[2].startswith(("q_bank", "k_bank")) else f"engine.{parts[2]}"
            else:
                key = parts[1]
            by[key] += m["bits"]
        total = sum(m["bits"] for m in mems)
        print(
            f"  {variant}: {len(mems)} memories, {total:,} bits; "
            + ", ".join(f"{k} {v:,}" for k, v in sorted(by.items()))
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
