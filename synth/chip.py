"""Area of a whole chip at the paper's denominator (issue 15, item 3).

The paper's 7.9 % area overhead (table 2) is measured against a whole chip
of 94.8 mm^2 of which the on-chip buffers are 68.4; ``make synth`` compares
single PEs and arrays. Until the attention core with real buffers exists
(issue 13), this is a stated ESTIMATE: the paper's configuration (16,384
4x4 arrays, a dispatcher per 8 arrays, 96 MB of SRAM) built from this
project's synthesized blocks (transistors from ``make synth``) and an SRAM
bit-cell model (``kaleido/data/chip_16nm.toml``), against a dense chip with
the same buffers and dense arrays. Two ways to turn transistors into area:

* ``absolute``: a 16 nm logic density and placement utilisation;
* ``calibrated``: our Kaleido/dense transistor ratios applied to the dense
  arrays' area the paper's table implies (its Kaleido arrays minus its
  6.6 % overhead), so only ratios of our synthesis enter.

The softmax unit (the paper's vector unit) is the same in both chips and
not in the paper's table: left out of both.

``python -m kaleido.synth.chip`` adds ``chip`` to an existing
``build/synth/report.json`` (or prints it from docs/SYNTH_TABLE.md).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import re
import sys

from ..area import DATA, NEEDED, chip_estimate  # the arithmetic, shared with kaleido.efficiency

__all__ = ["DATA", "NEEDED", "chip_estimate", "table_transistors", "main"]

ROOT = pathlib.Path(__file__).resolve().parent.parent
TABLE = ROOT / "docs" / "SYNTH_TABLE.md"


def table_transistors(path=TABLE) -> dict[str, dict]:
    """``{design: {"transistors": n}}`` from a ``make synth`` markdown table."""
    out = {}
    for line in pathlib.Path(path).read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 7 and re.fullmatch(r"[0-9,]+", cells[3]):
            out[cells[0]] = {"transistors": int(cells[3].replace(",", ""))}
    return out


def chip_table(est: dict) -> list[str]:
    """The markdown rows of a chip estimate (``report["chip"]``): the
    paper's table 2, ours calibrated and ours absolute, in mm^2 and overhead
    over the dense chip; no rows for an estimate with an ``error``."""
    if not est or "error" in est:
        return []
    rows = [
        "| chip at the paper's denominator | arrays (mm^2) | dispatchers | buffers | total | dense chip "
        "| overhead: arrays | dispatchers | total |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for label, key in (("paper, table 2", "paper"), ("ours, calibrated", "calibrated"), ("ours, absolute", "absolute")):
        e = est[key]
        k, o = e["kaleido_mm2"], e["overhead"]
        dense = f"{e['dense_mm2']['total']:.1f}" if "dense_mm2" in e else "-"
        rows.append(
            f"| {label} | {k['arrays']:.1f} | {k['dispatchers']:.1f} | {k['buffers']:.1f} | {k['total']:.1f} "
            f"| {dense} | {o['arrays']:.1%} | {o['dispatchers']:.1%} | {o['total']:.1%} |"
        )
    return rows


def main(argv: list | None = None) -> int:
    ap = argparse.ArgumentParser(description="chip area estimate at the paper's denominator (issue 15)")
    ap.add_argument("--report", default="build/synth/report.json", help="make synth report to add `chip` to")
    args = ap.parse_args(argv)
    report_path = pathlib.Path(args.report)
    if report_path.exists():
        report = json.loads(report_path.read_text())
        report["chip"] = chip_estimate(report["designs"])
        report_path.write_text(json.dumps(report, indent=2))
        est, source = report["chip"], str(report_path)
    else:
        est, source = chip_estimate(table_transistors()), str(TABLE)
    if "error" in est:
        print(f"chip: {est['error']}", file=sys.stderr)
        return 1
    for kind in ("absolute", "calibrated"):
        e = est[kind]
        print(
            f"chip ({kind}, transistors from {source}): Kaleido {e['kaleido_mm2']['total']:.1f} mm^2 "
            f"(arrays {e['kaleido_mm2']['arrays']:.1f}, dispatchers {e['kaleido_mm2']['dispatchers']:.1f}, "
            f"buffers {e['kaleido_mm2']['buffers']:.1f}) vs dense {e['dense_mm2']['total']:.1f}: "
            f"overhead {e['overhead']['total']:.1%} (arrays {e['overhead']['arrays']:.1%}, "
            f"dispatchers {e['overhead']['dispatchers']:.1%}); paper 7.9 %"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
