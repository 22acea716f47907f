"""The design exploration (issue 14): its frontier, the ceiling of every
lever and the window PE, each read from a run in ``build/explore`` or the
CSV committed beside the report."""

from __future__ import annotations

import csv
import os

from .base import save_csv

#: the exploration's aggregate per candidate and set, committed beside the plot
_EXPLORE_CSV = "exploration.csv"


def _exploration_source(rep):
    """The exploration's aggregates: ``build/explore/results.json`` (``make
    explore``) when it exists, else the committed ``exploration.csv`` in the
    report folder, else a quick run (a few candidates, tuning set and the
    paper's design and the quick subset's best on the held-out set)."""
    import json

    from ...explore import HELD_OUT, TUNING, aggregate, explore, quick_candidates

    path = "build/explore/results.json"
    if os.path.exists(path):
        with open(path) as f:
            res = json.load(f)
        return res["aggregate"], {c["name"]: c for c in res["candidates"]}, f"`make explore` ({path})"
    csv_path = os.path.join(rep.out, _EXPLORE_CSV)
    if os.path.exists(csv_path):
        agg: dict = {}
        meta = {}
        with open(csv_path) as f:
            for row in csv.DictReader(f):
                meta[row["candidate"]] = {"name": row["candidate"], "family": row["family"], "rtl": row["rtl"]}
                agg.setdefault(row["candidate"], {})[row["set"]] = {
                    k: (row[k] == "True" if k == "meets_floor" else int(row[k]) if k == "heads" else float(row[k]))
                    for k in row
                    if k not in ("candidate", "set", "family", "rtl")
                }
        return agg, meta, f"the committed {csv_path} (run `make explore` to refresh it)"
    cands = quick_candidates()
    res = explore(cands, {"tuning": TUNING}, bounds=False)
    agg = res["aggregate"]
    best = res["ranking"]["tuning"][0]
    held = explore([c for c in cands if c.name in ("paper", best)], {"held_out": HELD_OUT}, bounds=False)
    for name, sets in aggregate(held["rows"]).items():
        agg[name].update(sets)
    return agg, {c.name: {"name": c.name, "family": c.family, "rtl": c.rtl} for c in cands}, "a quick run (no cache)"


def _frontier_plot(rep, plt, agg, best):
    """The frontier on the tuning set, Q K^T and whole attention, the named designs and the best marked."""
    from ...explore import FLOOR, frontier

    fig, axes = plt.subplots(1, 2, figsize=(9.6, 3.8))
    for ax, key, label in zip(axes, ("qk_speedup", "attention_speedup"), ("Q K^T", "whole attention"), strict=True):
        names = [n for n in agg if "tuning" in agg[n]]
        x = [min(agg[n]["tuning"]["psnr_min"], 70.0) for n in names]
        y = [agg[n]["tuning"][key] for n in names]
        ax.scatter(x, y, s=12, color="0.6", label="candidates")
        front = frontier(agg, "tuning", key)
        ax.plot(
            [min(agg[n]["tuning"]["psnr_min"], 70.0) for n in front],
            [agg[n]["tuning"][key] for n in front],
            "-",
            color="tab:blue",
            lw=1,
            drawstyle="steps-pre",
            label="frontier",
        )
        marks = [
            ("paper", "r*", "paper"),
            ("default", "c*", "one_array design"),
            ("default 16x 1x1 queue, P V 4x4 + small-P pairs", "b*", "default design"),
            (best, "g*", f"best at {FLOOR:g} dB: {best}"),
        ]
        for name, style, tag in marks:
            if name not in agg:
                continue
            a = agg[name]["tuning"]
            ax.plot([min(a["psnr_min"], 70.0)], [a[key]], style, ms=12, label=tag)
        ax.axvline(FLOOR, color="k", lw=0.8, ls="--")
        ax.axhline(2.0, color="tab:red", lw=0.8, ls=":")
        ax.set_xlabel("worst tuning head's PSNR vs int8 attention (dB)")
        ax.set_ylabel(f"{label} speedup over dense (geomean)")
        ax.set_title(label, fontsize=9)
        ax.set_ylim(0.9, max(2.1, max(y) * 1.05))
    handles, labels = axes[1].get_legend_handles_labels()  # below the plots: it would hide the points
    fig.legend(handles, labels, fontsize=7, loc="lower center", ncol=3)
    fig.suptitle("Exploration frontier (tuning set; dashed: 40 dB floor, dotted: the 2x goal)", fontsize=10)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    fig.savefig(os.path.join(rep.out, "exploration_frontier.png"), dpi=110)
    plt.close(fig)


def exploration(rep, plt):
    """Issue 14: the exploration's frontier (speedup against the worst head's
    PSNR), the paper's design against the best at the floor, and the
    held-out table."""
    from ...explore import FLOOR, rank

    agg, meta, source = _exploration_source(rep)
    rows = []
    for name, sets in agg.items():
        for group, a in sets.items():
            rows.append(
                {"candidate": name, "set": group, "family": meta[name]["family"], "rtl": meta[name]["rtl"], **a}
            )
    save_csv(rep.out, "exploration", rows)
    ranking = rank(agg, "tuning", require=("held_out",))
    robust = [n for n in ranking if all(a["meets_floor"] for a in agg[n].values())]
    best = robust[0] if robust else "paper"
    _frontier_plot(rep, plt, agg, best)
    top = [n for n in ranking[:6]]
    shown = list(dict.fromkeys(["paper", *(["default"] if "default" in agg else []), *top]))

    def cell(n, group):
        a = agg[n].get(group)
        if not a:
            return "- | - | -"
        return f"{a['attention_speedup']:.3f}x ({a['attention_speedup_min']:.3f}x) | {a['qk_speedup']:.3f}x | {a['psnr_min']:.1f} dB"

    return [
        "## Design exploration (issue 14)",
        "",
        f"From {source}; docs/EXPLORATION.md has every candidate and why it wins or loses. Tuning set: the "
        "report's default heads (both motions); held-out: other seeds, channel spreads, grids, a photograph and "
        "the Wan split. Speedups are geometric means over the set's heads (the slowest head in brackets) against "
        "a dense array with the same PE count; PSNR is the worst head's, attention output against int8 attention. "
        f"Ranked by tuning whole-attention speedup among the candidates at or above {FLOOR:g} dB on every head "
        "of both sets (then the others).",
        "",
        "| candidate | RTL | tuning attention (min) | tuning Q K^T | tuning PSNR | held-out attention (min) | "
        "held-out Q K^T | held-out PSNR |",
        "|---|---|---|---|---|---|---|---|",
        *[f"| {n} | {meta[n]['rtl']} | {cell(n, 'tuning')} | {cell(n, 'held_out')} |" for n in shown],
        "",
        f"2.0x at {FLOOR:g} dB: "
        + (
            "**reached**."
            if robust and agg[best]["tuning"]["attention_speedup_min"] >= 2.0
            else f"**not reached**: the best candidate at the floor on both sets, {best}, gives "
            f"{agg[best]['tuning']['attention_speedup']:.3f}x whole attention and "
            f"{agg[best]['tuning']['qk_speedup']:.3f}x on Q K^T (tuning set geomeans)."
            if robust
            else "**not reached**: no candidate keeps the floor on every head of both sets."
        ),
        "",
        "![exploration](report/exploration_frontier.png)",
        "",
    ]


#: the op bounds of every lever (``kaleido explore --bounds-only``), committed beside the report
_BOUNDS_CSV = "exploration_bounds.csv"


def _bounds_source(rep):
    """The op bounds' rows (:func:`kaleido.explore.bound_rows`: a run in
    ``build/explore`` first, else the committed ``exploration_bounds.csv``)
    and their source in words; ``(None, None)`` without any."""
    from ...explore import bound_rows

    csv_path = os.path.join(rep.out, _BOUNDS_CSV)
    try:
        wb, path = bound_rows(os.path.join("build", "explore"), csv_path)
    except ValueError:
        return None, None
    if path == csv_path:
        return wb, f"the committed {csv_path} (`kaleido explore --bounds-only` refreshes it)"
    return wb, f"`kaleido explore --bounds-only` ({path})"


def ceiling(rep, plt):
    """Issue 14: the ceiling of every lever measured (op bounds at full
    utilization, the best per head at the floor), tuning and held-out."""
    from ...explore import FLOOR, calibrated_ceiling, fixed_ceiling, stacked_ceiling, write_bounds_csv

    wb, source = _bounds_source(rep)
    head = ["## The ceiling of every lever (issue 14)", ""]
    if wb is None:
        return [*head, "No op bounds yet: `kaleido explore --bounds-only` (about 9 min) writes them.", ""]
    if not source.startswith("the committed"):
        write_bounds_csv(wb, os.path.join(rep.out, _BOUNDS_CSV))
    c = stacked_ceiling(wb, FLOOR)

    def cell(a: dict | None, n: int) -> str:
        return "-" if a is None else f"{a['geomean']:.3f}x ({a['min']:.3f}x) | {a['at_least_2x']} of {n}"

    rows = [
        f"| {group} | {cell(g['attention_bound_stacked'], len(g['heads']))} | "
        f"{cell(g.get('vs_dense_small'), len(g['heads']))} | {cell(g['attention_bound_small'], len(g['heads']))} |"
        for group, g in c.items()
    ]
    return [
        *head,
        f'From {source}; docs/EXPLORATION.md, "The ceiling of every lever", explains it; the rows are in docs/report/exploration_bounds.csv. Whole-attention '
        "op bounds at 100 % utilization (each stage's dense cycles over its op bound, the softmax as it is): "
        "windows of w = 2, 4, 8 tokens sharing an anchor (three uniform and three per-group thresholds), "
        "row-side partial reuse, small-P halves on P V and "
        f"delta-coded query rows; per head the best window and thresholds at or above {FLOOR:g} dB (an oracle "
        "choice). Only small-P pairing among them is built; no PE computes windows longer than pairs, splits "
        "its row operand or delta-codes P. Geometric mean (slowest head) | heads at 2x or more.",
        "",
        "| set | every lever | heads at 2x | every lever, over a dense array that pairs small P too | heads at 2x "
        "| windows and small-P halves only | heads at 2x |",
        "|---|---|---|---|---|---|---|",
        *rows,
        "",
        *_fixed_line(fixed_ceiling(wb, FLOOR), FLOOR),
        *_calibrated_line(calibrated_ceiling(wb, FLOOR), FLOOR),
    ]


#: the window PE's cycle model on the ceiling's choices (``kaleido explore --window-pe``), committed beside the report
_WINDOW_PE_CSV = "exploration_window_pe.csv"


def window_pe_section(rep, plt):
    """Issue 14: the window PE's cycle model (:mod:`kaleido.explore.window_pe`) on
    the ceiling's choices: how much of the op bounds a PE keeps."""
    import json

    from ...explore import FLOOR
    from ...explore.window_pe import read_window_pe_csv, window_pe_table, write_window_pe_csv

    head = ["## The window PE: the ceiling in a cycle model (issue 14)", ""]
    path = "build/explore/window_pe.json"
    csv_path = os.path.join(rep.out, _WINDOW_PE_CSV)
    if os.path.exists(path):
        with open(path) as f:
            rows = json.load(f)
        source = f"`kaleido explore --window-pe` ({path})"
        write_window_pe_csv(rows, csv_path)
    elif os.path.exists(csv_path):
        rows, source = read_window_pe_csv(csv_path), f"the committed {csv_path}"
    else:
        return [*head, "No window PE rows yet: `kaleido explore --window-pe` (about 7 min) writes them.", ""]
    table = window_pe_table(rows, FLOOR)
    return [
        *head,
        f'From {source} (docs/EXPLORATION.md, "The window PE"). Each head\'s window and thresholds as the '
        "ceiling chose them (calibrated: deployable; oracle; fixed: one for every head) on 16 one-PE window "
        "arrays behind a shared pass queue (`kaleido.explore.window_model`; w^2 accumulators a PE, no RTL): "
        "`phased` runs the w^2 tiles one after another through the matcher (the pair PE's timing), `stream` "
        "packs any two half products of a pass. `window` has windows and small-P pairing; `every lever` also "
        "splits the row operand and delta-codes P. Whole attention over the dense arrays: geometric mean "
        "(slowest head), heads at 2x.",
        "",
        *table[: table.index("")],
        "",
    ]


def _set_phrase(group: str, a: dict, heads: int, extra: str = "") -> str:
    """A set's ceiling in words: geomean (slowest; heads at 2x, worst PSNR``extra``)."""
    return (
        f"{group} {a['geomean']:.3f}x ({a['min']:.3f}x; {a['at_least_2x']} of {heads} heads at 2x, "
        f"PSNR min {a['psnr_min']:.1f} dB{extra})"
    )


def _calibrated_line(cal: dict, floor: float) -> list[str]:
    """One sentence on :func:`kaleido.explore.calibrated_ceiling`."""
    from ...explore import CALIBRATION_MARGIN

    sets = ", ".join(
        _set_phrase(g, a, len(a["heads"]), f", {a['below_floor']} below the floor")
        for g, a in cal.items()
        if a["heads"]
    )
    if not sets:
        return []
    return [
        "As a deployed design would choose (per head, the best window and thresholds on its calibration head, "
        f"the same layer seeing the other motion, at {floor:g} + {CALIBRATION_MARGIN:g} dB), every lever: "
        f"{sets}.",
        "",
    ]


def _fixed_line(fixed: dict, floor: float) -> list[str]:
    """One sentence on :func:`kaleido.explore.fixed_ceiling`'s robust choice."""
    from ...explore import fmt_thresholds

    f = fixed.get("robust")
    if f is None:
        return [f"No single window and thresholds hold {floor:g} dB on every head of every set.", ""]
    sets = ", ".join(_set_phrase(g, a, a["heads"]) for g, a in f.items() if isinstance(a, dict))
    return [
        f"Without the oracle, one window and thresholds for every head, the fastest on the tuning set that "
        f"holds {floor:g} dB on every head of every set (w = {f['w']}, {fmt_thresholds(f['thresholds'])}), "
        f"every lever: {sets}.",
        "",
    ]
