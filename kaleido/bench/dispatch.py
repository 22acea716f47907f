"""Measured note of the dispatcher (docs/DISPATCH.md).

``python -m kaleido.bench.dispatch`` on the hunyuan slow and fast synthetic
workloads: (1) how much the scheduler tightens groups of four reuse strings
(mean intra-group Hamming distance, scheduled vs queue order, Q and K,
every batch); (2) array beats (slot cycles, ``max(1, slots)`` per phase)
with and without scheduler and matcher, i.e. the variants pe, pe-sh, pe-m,
full of the paper, from the cycle model.
"""

from __future__ import annotations

import argparse
import csv
import json
import os

import numpy as np

from kaleido.config import LFSR_SEED
from kaleido.golden.loopnest import unit_order
from kaleido.golden.reuse import follower_classes
from kaleido.golden.scheduler import hamming, reuse_strings
from kaleido.loopnest import batches, unit_tags

from .. import KaleidoConfig
from ..golden.workloads import synthetic_video
from ..model import VARIANTS, run_model


def _intra(strings, order, size=4):
    vals = []
    for i in range(0, len(order) - size + 1, size):
        g = order[i : i + size]
        vals.append(np.mean([hamming(strings[a], strings[b]) for a in g for b in g if a < b]))
    return float(np.mean(vals))


def tightening(w, cfg):
    out = {}
    for side, name, Z in (("q", "row", w.q), ("k", "column", w.k)):
        cls = follower_classes(Z, w.grid, w.split, cfg.F, cfg.P)
        queue, sched, state = [], [], LFSR_SEED
        for batch in batches(cfg, w.grid, w.split):
            tags = unit_tags(batch.units, cls, batch.channels)
            strings = [int(s) for s in reuse_strings(tags, cfg.batch)]
            order, state = unit_order(tags, cfg, name, state)
            queue.append(_intra(strings, list(range(len(strings)))))
            sched.append(_intra(strings, list(order)))
        out[side] = {"queue_order": float(np.mean(queue)), "scheduled": float(np.mean(sched))}
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grid", default="4,8,8")
    ap.add_argument("--out", default="build/bench/dispatch.json")
    args = ap.parse_args(argv)
    grid = tuple(int(x) for x in args.grid.split(","))
    cfg = KaleidoConfig.preset("hunyuan", "paper")  # docs/DISPATCH.md measures the paper's design
    result = {"grid": grid, "config": {"F": cfg.F, "P": cfg.P, "batch": cfg.batch, "lookahead": cfg.lookahead}}
    rows = []
    for motion in ("slow", "fast"):
        w = synthetic_video("hunyuan", grid, motion, seed=0)
        t = tightening(w, cfg)
        b = {}
        for name in VARIANTS:
            print(f"  {motion}: {name} ...", flush=True)
            r = run_model(w.q, w.k, w.grid, w.split, cfg, variant=name)
            b[name] = {"beats": r.beats, "slots": sum(p["slots"] for p in r.phases.values()), "passes": r.passes}
        result[motion] = {"tightening": t, "beats": b}
        rows.append(
            {
                "motion": motion,
                "q_queue": t["q"]["queue_order"],
                "q_sched": t["q"]["scheduled"],
                "k_queue": t["k"]["queue_order"],
                "k_sched": t["k"]["scheduled"],
                **{f"beats_{n}": v["beats"] for n, v in b.items()},
                "matcher_saves": 1 - b["pe-m"]["beats"] / b["pe"]["beats"],
                "full_vs_pe": b["pe"]["beats"] / b["full"]["beats"],
            }
        )
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=2)
    with open(args.out.replace(".json", ".csv"), "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=list(rows[0]))
        wr.writeheader()
        wr.writerows(rows)
    for r in rows:
        print(r)


if __name__ == "__main__":
    main()
