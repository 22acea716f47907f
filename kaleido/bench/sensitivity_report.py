"""Which assumption each efficiency conclusion rests on (issue 46, item 3):
the default design on ``make sim``'s head, every per-event energy and every
area figure halved and doubled (:mod:`kaleido.sensitivity`), as a CSV, a
tornado plot and the conclusions that flip within 2x.

``python -m kaleido.bench.sensitivity_report [--out docs/report]``;
``make report`` runs it.
"""

from __future__ import annotations

import argparse
import pathlib

from ..efficiency import SynthFigures, chip_blocks, load_synth
from ..energy import load_table
from ..sensitivity import area_rows, energy_rows, write_csv

__all__ = ["DESIGN", "sensitivity_rows", "flips", "plot", "lines", "run", "main"]

#: the design the sensitivity is shown for
DESIGN = "default"


def sensitivity_rows(events: dict, synth: SynthFigures, design: str = DESIGN) -> list[dict]:
    """Energy and area rows of :mod:`kaleido.sensitivity` for ``design``."""
    kaleido, dense = synth.core[design], synth.core["dense"]
    return energy_rows(events, load_table()) + area_rows(kaleido, dense, chip_blocks(design, synth))


def _verdict(ratio: str, value: float, time_speedup: float) -> bool:
    """The conclusion a ratio supports: energy saved (below 1), or more
    throughput per mm^2 than dense (speedup in time above the area ratio)."""
    return value < 1 if ratio == "energy" else time_speedup / value > 1


def flips(rows: list[dict], time_speedup: float) -> list[dict]:
    """The rows whose conclusion differs from their baseline's."""
    return [
        r
        for r in rows
        if _verdict(r["ratio"], r["value"], time_speedup) != _verdict(r["ratio"], r["baseline"], time_speedup)
    ]


def plot(rows: list[dict], path: pathlib.Path) -> None:
    """A tornado plot: per ratio, each assumption's value at x0.5 and x2
    around the baseline."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ratios = sorted({r["ratio"] for r in rows})
    fig, axes = plt.subplots(len(ratios), 1, figsize=(6.4, 1.2 + 1.1 * len(ratios) + 0.2 * len(rows) / 2))
    for ax, ratio in zip(axes if len(ratios) > 1 else [axes], ratios, strict=True):
        mine = [r for r in rows if r["ratio"] == ratio]
        names = sorted(
            {r["assumption"] for r in mine},
            key=lambda a: -max(abs(r["value"] - r["baseline"]) for r in mine if r["assumption"] == a),
        )
        base = mine[0]["baseline"]
        for y, name in enumerate(names):
            for r in (r for r in mine if r["assumption"] == name):
                color = "tab:blue" if r["factor"] < 1 else "tab:orange"
                ax.barh(y, r["value"] - base, left=base, color=color, height=0.6)
        ax.axvline(base, color="k", lw=0.8)
        ax.set_yticks(range(len(names)), names, fontsize=7)
        ax.set_title(f"{ratio} (Kaleido / dense; blue x0.5, orange x2)", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def lines(rows: list[dict], time_speedup: float) -> list[str]:
    """The markdown: the conclusions and whether any flips within 2x."""
    out = []
    for ratio in sorted({r["ratio"] for r in rows}):
        mine = [r for r in rows if r["ratio"] == ratio]
        lo, hi = min(r["value"] for r in mine), max(r["value"] for r in mine)
        flipped = sorted({f"{r['assumption']} x{r['factor']:g}" for r in flips(mine, time_speedup)})
        verdict = "flips with " + ", ".join(flipped) if flipped else "holds under every halving and doubling"
        out.append(f"| {ratio} | {mine[0]['baseline']:.3f} | {lo:.3f} to {hi:.3f} | {verdict} |")
    return ["| ratio (Kaleido / dense) | baseline | range | conclusion |", "|---|---|---|---|", *out]


def run(out: pathlib.Path, rows: list[dict], synth_path=None) -> tuple[list[dict], float]:
    """The sensitivity rows of :data:`DESIGN` from its efficiency row (of
    :func:`kaleido.bench.efficiency_report.run`), written to
    ``out/sensitivity.csv`` and ``out/sensitivity.png``; and the time
    speedup the per-mm^2 conclusions use. Raises ValueError when the
    design's efficiency was not computed."""
    row = next(r for r in rows if r["design"] == DESIGN)
    if "error" in row["efficiency"]:
        raise ValueError(f"no efficiency for {DESIGN!r}: {row['efficiency']['error']}")
    found = sensitivity_rows(row["events"], load_synth(synth_path))
    out.mkdir(parents=True, exist_ok=True)
    write_csv(found, out / "sensitivity.csv")
    plot(found, out / "sensitivity.png")
    return found, row["efficiency"]["time_speedup"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="docs/report")
    ap.add_argument("--synth-report", default=None)
    args = ap.parse_args(argv)
    from .efficiency_report import run as efficiency_rows

    out = pathlib.Path(args.out)
    rows, time_speedup = run(out, efficiency_rows(out, args.synth_report), args.synth_report)
    print("\n".join(lines(rows, time_speedup)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
