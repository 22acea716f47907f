"""Drain traffic into the accumulation buffer (input to the engine design).

``python -m kaleido.bench.tiles --grid 4,8,8`` streams a synthetic head's
passes (full variant) through the golden beat model and counts, per cycle,
how many PE drain registers deliver a tile of a present token pair (PE
``(r, c)`` delivers ``r + c + 1`` cycles after its phase's last beat,
docs/ARRAY.md). Prints the mean and maximum and the histogram.
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from kaleido.golden.loopnest import iter_passes

from .. import KaleidoConfig
from ..golden.workloads import synthetic_video


def tile_traffic(w, cfg, scheduler=True):
    R, C = cfg.array_rows, cfg.array_cols
    t, events = 0, []
    for ps in iter_passes(w.q, w.k, w.grid, w.split, cfg, scheduler=scheduler):
        beats = ps.beats(cfg.accumulators)
        has_row, has_col = ps.rows[:, 0] >= 0, ps.cols[:, 0] >= 0
        row_f, col_f = ps.rows[:, 1] >= 0, ps.cols[:, 1] >= 0
        for b in beats:
            if b.last:
                rows_ok = has_row & (row_f if b.phase >= 2 else True)
                cols_ok = has_col & (col_f if b.phase in (1, 3) else True)
                events.append((t, np.outer(rows_ok, cols_ok)))
            t += 1
    counts = np.zeros(t + R + C, dtype=np.int64)
    offsets = np.add.outer(np.arange(R), np.arange(C)) + 1
    for t_last, ok in events:
        np.add.at(counts, t_last + offsets[ok], 1)
    return {
        "beats": t,
        "tiles": int(counts.sum()),
        "mean_per_cycle": float(counts.sum() / t),
        "max_per_cycle": int(counts.max()),
        "histogram": np.bincount(counts).tolist(),
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grid", default="4,8,8")
    args = ap.parse_args(argv)
    grid = tuple(int(x) for x in args.grid.split(","))
    w = synthetic_video("hunyuan", grid, "slow", seed=0)
    print(json.dumps(tile_traffic(w, KaleidoConfig.one_array())))


if __name__ == "__main__":
    main()
