"""Every named design against the fair dense core on the exploration's
held-out heads (:data:`kaleido.explore.workloads.HELD_OUT`): issue 43's
figures beyond ``make sim``'s head.

``python -m kaleido.bench.heldout_efficiency [--designs default,...]
[--heads 0,3] [--out build/bench]``; ``make bench`` runs it. Each head runs
each design's build twice: at its built-in thresholds and at the
thresholds :func:`kaleido.calibrate.calibrate` chooses on the head's
calibration head (the same layer, the other motion,
:func:`kaleido.explore.workloads.calibration_spec`). The rows are
:func:`kaleido.bench.efficiency_report.design_row`'s: the exact core cycles,
the energy model, the synthesis report's clocks and areas, and what the
goals need (:mod:`kaleido.headroom`). Writes ``heldout_efficiency.json``,
``.csv`` and ``.md`` (a table and the geometric means).
"""

from __future__ import annotations

import argparse
import csv
import json
import pathlib
import sys
import time

from tqdm import tqdm

from ..config import DESIGNS
from ..explore.ranking import geomean
from ..explore.workloads import HELD_OUT, calibration_spec
from .efficiency_report import calibrated_row, design_row, thresholds_label

__all__ = ["COLUMNS", "head_rows", "flat_row", "summary", "table_lines", "run", "main"]

#: the CSV's columns, in order
COLUMNS = (
    "head",
    "design",
    "thresholds",
    "psnr",
    "cycle_speedup",
    "time_speedup",
    "per_mm2_core",
    "per_mm2_chip",
    "energy_savings",
    "energy_savings_ceiling",
    "time_needed_core",
)


def head_rows(index: int, designs: tuple[str, ...], synth_path=None) -> list[dict]:
    """The rows of held-out head ``index``: each design, built-in and
    calibrated, each with ``head`` (the head's name) added."""
    if not 0 <= index < len(HELD_OUT):
        raise ValueError(f"held-out head index must be in 0..{len(HELD_OUT) - 1}, not {index!r}")
    spec = HELD_OUT[index]
    w, cal = spec.load(), calibration_spec(spec).load()
    rows = []
    for d in designs:
        for row in (design_row(d, w, synth_path, preset=spec.preset),
                    calibrated_row(d, w, cal, synth_path, preset=spec.preset)):  # fmt: skip
            rows.append({"head": spec.name, **row})
    return rows


def flat_row(row: dict) -> dict:
    """One CSV row (:data:`COLUMNS`); efficiency columns empty when not computed."""
    eff, room = row["efficiency"], row["headroom"]
    out = {
        "head": row["head"],
        "design": row["design"],
        "thresholds": thresholds_label(row["thresholds"]),
        "psnr": row["psnr"],
        "cycle_speedup": row["dense_cycles"] / row["cycles"],
        "energy_savings": room["energy"]["measured"],
        "energy_savings_ceiling": room["energy"]["ceiling"]["hw"],
    }
    if "error" in eff:
        return {**out, **{k: "" for k in ("time_speedup", "per_mm2_core", "per_mm2_chip", "time_needed_core")}}
    return {
        **out,
        "time_speedup": eff["time_speedup"],
        "per_mm2_core": eff["throughput_per_area"]["core"],
        "per_mm2_chip": eff["throughput_per_area"]["chip"],
        "time_needed_core": room["area"]["core"]["time_needed"],
    }


def summary(flat: list[dict]) -> dict:
    """Per design: the geometric mean and the minimum of each figure over
    the heads, the lowest PSNR and how many heads are below 40 dB."""
    out: dict = {}
    for design in dict.fromkeys(f["design"] for f in flat):
        mine = [f for f in flat if f["design"] == design]
        entry: dict = {"heads": len(mine), "psnr_min": min(f["psnr"] for f in mine)}
        entry["below_40_db"] = sum(f["psnr"] < 40.0 for f in mine)
        for key in ("time_speedup", "per_mm2_core", "per_mm2_chip", "energy_savings", "energy_savings_ceiling"):
            xs = [f[key] for f in mine if f[key] != ""]
            entry[key] = {"geomean": geomean(xs), "min": min(xs)} if xs else None
        out[design] = entry
    return out


def table_lines(stats: dict) -> list[str]:
    """The summary as markdown: geometric mean (lowest head) per figure."""

    def cell(x: dict | None) -> str:
        return "-" if x is None else f"{x['geomean']:.3f}x ({x['min']:.3f}x)"

    lines = [
        "| design | heads | time speedup | per mm^2 core | per mm^2 chip | energy savings "
        "| energy savings as cheap as the MAC | PSNR min (below 40 dB) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for design, s in stats.items():
        lines.append(
            f"| {design} | {s['heads']} | {cell(s['time_speedup'])} | {cell(s['per_mm2_core'])} "
            f"| {cell(s['per_mm2_chip'])} | {cell(s['energy_savings'])} | {cell(s['energy_savings_ceiling'])} "
            f"| {s['psnr_min']:.1f} dB ({s['below_40_db']}) |"
        )
    return lines


def run(out: pathlib.Path, designs: tuple[str, ...], heads: tuple[int, ...], synth_path=None) -> dict:
    """Every design on every chosen held-out head; writes the JSON, CSV and
    markdown into ``out`` and returns the JSON's content."""
    t0 = time.time()
    rows: list[dict] = []
    for i in tqdm(heads, desc="held-out heads", file=sys.stderr, disable=None):
        rows += head_rows(i, designs, synth_path)
    flat = [flat_row(r) for r in rows]
    stats = summary(flat)
    source = next((r["efficiency"]["source"] for r in rows if "source" in r["efficiency"]), None)
    result = {"rows": flat, "summary": stats, "source": source, "seconds": time.time() - t0}
    out.mkdir(parents=True, exist_ok=True)
    (out / "heldout_efficiency.json").write_text(json.dumps(result, indent=2) + "\n")
    with open(out / "heldout_efficiency.csv", "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=list(COLUMNS))
        wr.writeheader()
        wr.writerows(flat)
    (out / "heldout_efficiency.md").write_text("\n".join(table_lines(stats)) + "\n")
    return result


def _ints(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated head indices, not {text!r}") from None


def _designs(text: str) -> tuple[str, ...]:
    names = tuple(text.split(","))
    bad = [n for n in names if n not in DESIGNS]
    if bad:
        raise argparse.ArgumentTypeError(f"unknown design(s) {bad}; one of {list(DESIGNS)}")
    return names


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--designs", type=_designs, default=tuple(DESIGNS), help="comma-separated (default: all)")
    ap.add_argument("--heads", type=_ints, default=tuple(range(len(HELD_OUT))), help="held-out head indices")
    ap.add_argument("--out", default="build/bench", help="folder for heldout_efficiency.json, .csv, .md")
    ap.add_argument("--synth-report", default=None, help="a make synth report (default: build/synth, else docs)")
    args = ap.parse_args(argv)
    try:
        result = run(pathlib.Path(args.out), args.designs, args.heads, args.synth_report)
    except ValueError as err:
        ap.error(str(err))
    print("\n".join(table_lines(result["summary"])))
    print(f"{result['seconds']:.0f} s; {args.out}/heldout_efficiency.csv")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
