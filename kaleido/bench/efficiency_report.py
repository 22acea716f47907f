"""Every named design against the fair dense core on ``make sim``'s head
(spec sec. 13): a table, a CSV/JSON and two plots (speedup in time against
area and against energy, the dense core at (1, 1), the paper's point
marked), and the README's results table.

``python -m kaleido.bench.efficiency_report [--out docs/report] [--readme
README.md]``; ``make report`` runs it. The cycles are the core's exact
cycle model (``core_cycles``, equal to the RTL's), the energy the per-event
model, the clocks and areas the synthesis report (:mod:`kaleido.efficiency`).
"""

from __future__ import annotations

import argparse
import csv
import json
import pathlib

from ..config import DESIGNS, CoreConfig, KaleidoConfig
from ..efficiency import design_efficiency, head_energy, head_psnr
from ..headroom import GOALS, headroom

__all__ = [
    "HEAD",
    "PAPER_POINT",
    "design_row",
    "calibrated_row",
    "table_lines",
    "headroom_lines",
    "thresholds_label",
    "update_readme",
    "plot",
    "main",
]

#: make sim's head: (preset, grid, motion, seed)
HEAD = ("hunyuan", (4, 16, 16), "slow", 1)
#: the paper's point: about 2.1x on its array (its utilization over one
#: minus its op reduction, docs/REPORT.md) at its 7.9 % chip area overhead;
#: it states no energy against its own dense array
PAPER_POINT = {"time_speedup": 2.1, "area_ratio_chip": 1.079}
BEGIN, END = "<!-- efficiency:begin -->", "<!-- efficiency:end -->"


def design_row(design: str, w, synth_path=None, thresholds=None, preset: str = HEAD[0]) -> dict:
    """One design on head ``w`` (of the model ``preset``): core cycles,
    dense core cycles, PSNR, the efficiency figures (``error`` when the
    synthesis report lacks one), what the goals need of it
    (:mod:`kaleido.headroom`) and the energy model's event counts.
    ``thresholds`` (three ``(F, P)``): the head's run-time ``Q K^T``
    thresholds on the design's build (its clock and area), instead of the
    built-in ones."""
    from ..model import core_cycles

    config = KaleidoConfig.preset(preset, design)
    if thresholds is not None:
        config = config.replace(group_thresholds=thresholds)
    cycles = core_cycles(w.q, w.k, w.v, w.grid, config, CoreConfig(), scales=w.scales)
    dense = core_cycles(w.q, w.k, w.v, w.grid, config, CoreConfig(), variant="dense")
    energy = head_energy(w.q, w.k, w.v, w.grid, w.split, config, scales=w.scales)
    eff = design_efficiency(
        config.hardware_design, dense / cycles, energy["kaleido_pj"] / energy["dense_pj"], synth_path
    )
    sized = energy["sram"]["sized"]
    return {
        "design": design if thresholds is None else f"{design}, calibrated",
        "thresholds": [list(x) for x in config.thresholds],
        "cycles": cycles,
        "dense_cycles": dense,
        "psnr": head_psnr(w.q, w.k, w.v, w.grid, w.split, config, scales=w.scales),
        "efficiency": eff,
        "energy_ratio_sized": sized["kaleido_pj"] / sized["dense_pj"],
        "headroom": headroom(energy, eff),
        "events": energy["events"],
    }


def calibrated_row(design: str, w, calibration, synth_path=None, preset: str = HEAD[0]) -> dict:
    """:func:`design_row` of ``design``'s build on head ``w`` with the
    thresholds :func:`kaleido.calibrate.calibrate` chooses on the head
    ``calibration`` (40 dB plus its margin; :func:`kaleido.calibrate.calibration_head`,
    the other motion): the quality headroom spent as reuse, per head, at
    run time (issue 43, lever 4)."""
    from ..calibrate import calibrate

    config = KaleidoConfig.preset(preset, design)
    chosen = calibrate(
        calibration.q, calibration.k, calibration.v, calibration.grid, calibration.split, config,
        scales=calibration.scales,
    )["thresholds"]  # fmt: skip
    return design_row(design, w, synth_path, thresholds=chosen, preset=preset)


def thresholds_label(thresholds) -> str:
    """Three ``(F, P)`` as ``t(7,4) x(7,4) y(6,4)``."""
    return " ".join(f"{g}{tuple(p)}".replace(" ", "") for g, p in zip("txy", thresholds, strict=True))


def _label(flat: dict) -> str:
    """The design, with a calibrated row's thresholds."""
    return f"{flat['design']} {flat['thresholds']}" if flat["design"].endswith("calibrated") else flat["design"]


def _flat(row: dict) -> dict:
    eff = row["efficiency"]
    out = {k: row[k] for k in ("design", "cycles", "dense_cycles", "psnr", "energy_ratio_sized")}
    out["thresholds"] = thresholds_label(row["thresholds"])
    out["cycle_speedup"] = row["dense_cycles"] / row["cycles"]
    if "error" in eff:
        return {**out, "error": eff["error"]}
    return {
        **out,
        "kaleido_mhz": eff["clock"]["kaleido"]["mhz"],
        "limited_by": eff["clock"]["kaleido"]["limited_by"],
        "dense_mhz": eff["clock"]["dense"]["mhz"],
        "dense_limited_by": eff["clock"]["dense"]["limited_by"],
        "time_speedup": eff["time_speedup"],
        "time_speedup_own_blocks": eff["time_speedup_own_blocks"],
        "area_ratio_core": eff["area_ratio"]["core"],
        "area_ratio_chip": eff["area_ratio"]["chip"],
        "area_ratio_core_sized": eff["core_sram"]["sized"]["ratio"] if eff.get("core_sram") else None,
        "throughput_per_area_core": eff["throughput_per_area"]["core"],
        "throughput_per_area_chip": eff["throughput_per_area"]["chip"],
        "energy_ratio": eff["energy_ratio"],
        "error": "",
    }


def table_lines(rows: list[dict]) -> list[str]:
    """The results table (markdown), one line per design and its source."""
    lines = [
        "| design | cycles vs dense | clock MHz (dense) | time speedup (own blocks) "
        "| area: core (SRAM by size) / chip | throughput per mm^2 (core / chip) "
        "| energy vs dense: SRAM flat / by size | PSNR vs int8 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        f = _flat(row)
        if f["error"]:
            lines.append(
                f"| {_label(f)} | {f['cycle_speedup']:.3f}x | - | - | - | - "
                f"| - / {f['energy_ratio_sized']:.3f}x | {f['psnr']:.1f} dB |"
            )
            continue
        sized_area = f"({f['area_ratio_core_sized']:.2f}x) " if f["area_ratio_core_sized"] else ""
        lines.append(
            f"| {_label(f)} | {f['cycle_speedup']:.3f}x | {f['kaleido_mhz']:.1f} ({f['dense_mhz']:.1f}) "
            f"| **{f['time_speedup']:.3f}x** ({f['time_speedup_own_blocks']:.3f}x) "
            f"| {f['area_ratio_core']:.2f}x {sized_area}/ {f['area_ratio_chip']:.3f}x "
            f"| **{f['throughput_per_area_core']:.2f}x** / {f['throughput_per_area_chip']:.2f}x "
            f"| {f['energy_ratio']:.3f}x / {f['energy_ratio_sized']:.3f}x | {f['psnr']:.1f} dB |"
        )
    src = next((r["efficiency"]["source"] for r in rows if "source" in r["efficiency"]), None)
    errors = sorted({r["efficiency"]["error"] for r in rows if "error" in r["efficiency"]})
    if src:
        lines += ["", f"Synthesis figures: {src['report']} ({src['why']})."]
    lines += [f"Not computed: {e}" for e in errors]
    return lines


def _area_cells(area: dict | None) -> str:
    if area is None:
        return "- | - | -"
    core, chip = area["core"], area["chip"]
    logic = core["logic_budget_mm2"] / core["dense_logic_mm2"]
    return (
        f"{core['measured']:.2f}x; {core['time_needed']:.2f}x | "
        f"{core['logic_budget_mm2'] / core['logic_mm2']:.2f} ({logic:.2f}x dense logic) | "
        f"{chip['measured']:.2f}x; {chip['time_needed']:.2f}x"
    )


def headroom_lines(rows: list[dict]) -> list[str]:
    """What issue 43's goals need of each design (:mod:`kaleido.headroom`),
    markdown."""
    lines = [
        f"| design | energy savings: measured; at a dense op's cost, ops built (oracle) "
        f"| scalable energy spent: ops built (oracle); at most, for {GOALS['energy_savings']}x "
        f"| per mm^2 core: measured; speedup the built area needs for {GOALS['per_mm2_core']}x "
        f"| logic allowed / built (/ dense logic) "
        f"| per mm^2 chip: measured; speedup needed for {GOALS['per_mm2_chip']}x |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        e = row["headroom"]["energy"]
        lines.append(
            f"| {_label(_flat(row))} | {e['measured']:.3f}x; {e['ceiling']['hw']:.3f}x ({e['ceiling']['oracle']:.3f}x) "
            f"| {e['keep']['hw']:.1%} ({e['keep']['oracle']:.1%}); {e['keep_max']:.1%} "
            f"| {_area_cells(row['headroom'].get('area'))} |"
        )
    return lines


def update_readme(path: pathlib.Path, lines: list[str]) -> None:
    """Replace the README's table between the efficiency markers. Raises
    ValueError naming the file when the markers are missing."""
    text = path.read_text()
    if BEGIN not in text or END not in text:
        raise ValueError(f"{path}: no {BEGIN} ... {END} markers for the results table")
    head, rest = text.split(BEGIN, 1)
    path.write_text(head + BEGIN + "\n" + "\n".join(lines) + "\n" + END + rest.split(END, 1)[1])


def plot(rows: list[dict], out: pathlib.Path) -> None:
    """``efficiency_area.png`` and ``efficiency_energy.png`` in ``out``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    flat = [f for f in map(_flat, rows) if not f["error"]]
    for name, keys, xlabel in (
        ("efficiency_area", ("area_ratio_core", "area_ratio_chip"), "area / dense core (core as built; chip)"),
        ("efficiency_energy", ("energy_ratio",), "energy per head / dense core"),
    ):
        fig, ax = plt.subplots(figsize=(6.4, 4.0))
        ax.plot([1], [1], "ks", label="dense core")
        for key, marker in zip(keys, "o^", strict=False):
            for f in flat:
                ax.plot(f[key], f["time_speedup"], marker, label=f"{f['design']} ({key.split('_')[-1]})")
        if "area_ratio_chip" in keys:
            ax.plot(PAPER_POINT["area_ratio_chip"], PAPER_POINT["time_speedup"], "r*", ms=12, label="paper (chip)")
        else:
            ax.axhline(PAPER_POINT["time_speedup"], color="r", ls=":", label="paper's speedup (no energy stated)")
        ax.axhline(1, color="k", lw=0.6)
        ax.axvline(1, color="k", lw=0.6)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("speedup in time over the dense core")
        ax.legend(fontsize=7)
        ax.set_title("make sim's head against the fair dense core", fontsize=10)
        fig.tight_layout()
        fig.savefig(out / f"{name}.png", dpi=110)
        plt.close(fig)


def run(out: pathlib.Path, synth_path=None) -> list[dict]:
    """Every named design on make sim's head; writes efficiency.csv/json
    and the plots into ``out``."""
    from ..calibrate import calibration_head
    from ..golden.workloads import synthetic_video

    preset, grid, motion, seed = HEAD
    w = synthetic_video(preset, grid, motion, seed)
    cal = calibration_head(preset, grid, motion, seed)
    rows = []
    for d in DESIGNS:
        rows += [design_row(d, w, synth_path), calibrated_row(d, w, cal, synth_path)]
    out.mkdir(parents=True, exist_ok=True)
    (out / "efficiency.json").write_text(json.dumps(rows, indent=2) + "\n")
    flat: list[dict] = [_flat(r) for r in rows]
    with open(out / "efficiency.csv", "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=list(max(flat, key=lambda f: len(list(f)))))
        wr.writeheader()
        wr.writerows(flat)
    plot(rows, out)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="docs/report", help="folder for efficiency.csv, .json and the plots")
    ap.add_argument("--readme", default=None, help="rewrite this README's results table (between its markers)")
    ap.add_argument("--synth-report", default=None, help="a make synth report (default: build/synth, else docs)")
    args = ap.parse_args(argv)
    rows = run(pathlib.Path(args.out), args.synth_report)
    lines = table_lines(rows)
    print("\n".join(lines))
    if args.readme:
        update_readme(pathlib.Path(args.readme), lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
