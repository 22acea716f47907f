"""Paper-reproduction report: ``make report`` -> docs/REPORT.md, with PNG
plots and CSVs in docs/report/: the command line, every section in the
report's order."""

from __future__ import annotations

import argparse
import os
import time

from .base import Report, pyplot
from .block import fig20
from .cost import efficiency_section, energy
from .cycles import breakdown, decomposition, scalesim_section
from .design_space import ceiling, exploration, window_pe_section
from .ops import fig9, fig18c
from .summary import preamble
from .sweeps import fig21, fig23, fig24
from .variants import accumulators, designs, fig19

#: the report's sections, in its order; each ``step(rep, plt)`` returns its lines
STEPS = (
    efficiency_section,
    fig9,
    fig18c,
    fig19,
    designs,
    fig20,
    fig21,
    fig23,
    fig24,
    accumulators,
    breakdown,
    decomposition,
    energy,
    scalesim_section,
    exploration,
    ceiling,
    window_pe_section,
)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m kaleido.bench.report", description=__doc__.splitlines()[0])
    ap.add_argument("--grid", default="8,16,16")
    ap.add_argument("--small-grid", default="4,8,8", help="head for the fig. 9 baselines (N^2 d products)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="docs", help="folder for REPORT.md; plots and CSVs go to OUT/report/")
    args = ap.parse_args(argv)
    os.makedirs(os.path.join(args.out, "report"), exist_ok=True)
    grid = tuple(int(x) for x in args.grid.split(","))
    small = tuple(int(x) for x in args.small_grid.split(","))
    t0 = time.time()
    rep = Report(
        grid,
        small,
        args.seed,
        lambda msg: print(f"  [{time.time() - t0:6.1f} s] {msg}", flush=True),
        os.path.join(args.out, "report"),
    )
    plt = pyplot()
    body = []
    for step in STEPS:
        rep.log(step.__name__)
        body += step(rep, plt)
    head = preamble(rep)
    path = os.path.join(args.out, "REPORT.md")
    with open(path, "w") as f:
        f.write("\n".join(head + body))
    rep.log(f"wrote {path}")
