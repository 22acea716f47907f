"""The report's state and its shared outputs: :class:`Report` (the heads
it runs, cached, and the cycle model on them), a CSV per table and the bar
plots every figure module draws with."""

from __future__ import annotations

import csv
import os

import numpy as np

from ... import KaleidoConfig
from ...golden.workloads import synthetic_video
from ...model import run_model


def save_csv(out, name, rows):
    path = os.path.join(out, f"{name}.csv")
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return path


def pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def finish_plot(plt, out, fig, ax, name, title):
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(os.path.join(out, f"{name}.png"), dpi=110)
    plt.close(fig)


def bar_plot(plt, out, name, groups, series, values, ylabel, title, log=False, hline=None):
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    x = np.arange(len(groups))
    width = 0.8 / len(series)
    for i, s in enumerate(series):
        ax.bar(x + (i - (len(series) - 1) / 2) * width, [values[g][s] for g in groups], width, label=s)
    ax.set_xticks(x, groups)
    ax.set_ylabel(ylabel)
    if log:
        ax.set_yscale("log")
    if hline is not None:
        ax.axhline(hline, color="k", lw=0.8, ls="--")
    ax.legend(fontsize=8)
    finish_plot(plt, out, fig, ax, name, title)


class Report:
    def __init__(self, grid, small_grid, seed, log, out="docs/report"):
        self.grid, self.small, self.seed, self.log, self.out = grid, small_grid, seed, log, out
        self.cache = {}
        self.lines = []

    def workload(self, motion, spread=None, grid=None):
        key = (motion, spread, grid or self.grid)
        if key not in self.cache:
            kw = {} if spread is None else {"spread": spread}
            self.cache[key] = synthetic_video("hunyuan", key[2], motion, self.seed, **kw)
        return self.cache[key]

    def model(self, w, variant="full", arrays=1, **cfg):
        c = KaleidoConfig.paper(**{"split": w.split, **cfg})
        return run_model(w.q, w.k, w.grid, w.split, c, variant=variant, arrays=arrays)
