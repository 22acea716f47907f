"""How far each block's Fmax by parts is from its Fmax placed and routed
whole (docs/SYNTH.md "Fmax by parts"): two `make synth` reports, one run
with ``--fmax-parts``, as a markdown table, with each core's clock (its
slowest block) both ways.

``python scripts/fmax_parts_gap.py PARTS_REPORT [FLATTENED_REPORT]``
(default flattened report: docs/report/synth_report.json)
"""

from __future__ import annotations

import argparse
import json

from kaleido.efficiency import CORE_BLOCKS, SynthFigures, core_clock


def _fmax(report: dict) -> dict[str, float]:
    return {n: e["fmax_mhz"] for n, e in report.get("designs", {}).items() if e.get("fmax_mhz")}


def gap_table(parts: dict, flat: dict) -> list[str]:
    """Markdown rows: every block with both Fmax, then every core's clock."""
    fp, ff = _fmax(parts), _fmax(flat)
    lines = ["| block | flattened (MHz) | by parts (MHz) | by parts / flattened | slowest part |"]
    lines.append("|---|---|---|---|---|")
    for name in (n for n in ff if n in fp):
        part = (parts["designs"][name].get("critical_path") or {}).get("part", "-")
        lines.append(f"| {name} | {ff[name]:.1f} | {fp[name]:.1f} | {fp[name] / ff[name]:.3f} | {part} |")
    lines += ["", "| core clock | flattened (MHz) | by parts (MHz) |", "|---|---|---|"]
    figures = [SynthFigures(r.get("designs", {}), {}, {"report": n}) for r, n in ((flat, "flat"), (parts, "parts"))]
    for core, blocks in CORE_BLOCKS.items():
        if all(b in fp and b in ff for b in blocks):
            f, p = (core_clock(core, s) for s in figures)
            lines.append(f"| {core} | {f['mhz']:.1f} ({f['limited_by']}) | {p['mhz']:.1f} ({p['limited_by']}) |")
    return lines


def main(argv: list | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("parts")
    ap.add_argument("flattened", nargs="?", default="docs/report/synth_report.json")
    args = ap.parse_args(argv)
    with open(args.parts) as f, open(args.flattened) as g:
        print("\n".join(gap_table(json.load(f), json.load(g))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
