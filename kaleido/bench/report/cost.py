"""What the designs cost: energy of whole attention by event kind, and
every named design against the fair dense core (area, energy, time; from
:mod:`kaleido.bench.efficiency_report` and
:mod:`kaleido.bench.sensitivity_report`)."""

from __future__ import annotations

import numpy as np

from ... import KaleidoConfig
from .base import finish_plot, save_csv


def _energy_rows(rep, table):
    """Energy per head, both motions: totals, by stage and by event kind."""
    from ...energy import attention_energy

    rows, kinds, stages = [], {}, {}
    for motion in ("slow", "fast"):
        w = rep.workload(motion)
        cfg = KaleidoConfig.paper(split=w.split)
        r = rep.model(w, "full")
        e = attention_energy(w.q, w.k, w.v, w.grid, w.split, cfg, r, table)
        rows.append(
            {
                "motion": motion,
                "kaleido_pj": e["kaleido_pj"],
                "dense_pj": e["dense_pj"],
                "savings": e["savings"],
                "qk_savings": e["qk_savings"],
                **{f"{s}_{d}_pj": v[d] for s, v in e["by_stage"].items() for d in ("kaleido", "dense")},
                **{f"{k}_{d}_pj": v[d] for k, v in e["by_kind"].items() for d in ("kaleido", "dense")},
            }
        )
        kinds[motion], stages[motion] = e["by_kind"], e["by_stage"]
    return rows, kinds, stages


def _energy_plot(rep, plt, table, kinds):
    """Energy by event kind, stacked, dense and Kaleido on both heads."""
    from ...energy import EVENTS

    fig, ax = plt.subplots(figsize=(7.0, 3.8))
    bars = [(m, d) for m in ("slow", "fast") for d in ("dense", "kaleido")]
    bottom = np.zeros(len(bars))
    for k in EVENTS:
        vals = np.array([kinds[m][k][d] / 1e6 for m, d in bars])
        if vals.any():
            ax.bar(range(len(bars)), vals, 0.6, bottom=bottom, label=k)
            bottom += vals
    ax.set_xticks(range(len(bars)), [f"{m}\n{d}" for m, d in bars])
    ax.set_ylabel("energy per head (uJ)")
    ax.legend(fontsize=7, ncol=2, loc="upper right", bbox_to_anchor=(1.0, 1.0))
    ax.set_ylim(0, bottom.max() * 1.45)
    finish_plot(
        plt, rep.out, fig, ax, "energy", f"Energy of whole attention by event kind ({table.node_nm} nm estimates)"
    )


def energy(rep, plt):
    """Energy of whole attention (issue 15): the per-event model of
    kaleido/energy.py, Kaleido (full variant) against the dense array."""
    from ...energy import EVENTS, load_table

    table = load_table()
    rows, kinds, stages = _energy_rows(rep, table)
    save_csv(rep.out, "energy", rows)
    rep.energy = rows
    _energy_plot(rep, plt, table, kinds)
    f = table.pj
    return [
        "## Energy: dense against Kaleido (estimates)",
        "",
        f"Head {rep.grid}, full variant, (5,3), 3 accumulators, whole attention (Q K^T, softmax, P V, the "
        "dispatcher, DRAM in and out). Per-event energies from `kaleido/data/energy_45nm.toml`: Horowitz's "
        f"45 nm figures (ISSCC 2014) scaled to {table.node_nm} nm by {table.factor} (C V^2), DRAM not scaled; "
        "event counts from the cycle model, equal to the RTL's in the Amaranth simulator "
        "(`tb/test_energy.py`); docs/ENERGY.md. **Estimates, not a power simulation.**",
        "",
        "| motion | Kaleido (uJ) | dense (uJ) | savings | Q K^T savings | P V savings |",
        "|---|---|---|---|---|---|",
        *[
            f"| {x['motion']} | {x['kaleido_pj'] / 1e6:,.1f} | {x['dense_pj'] / 1e6:,.1f} | {x['savings']:.3f}x | "
            f"{x['qk_savings']:.3f}x | {x['pv_dense_pj'] / x['pv_kaleido_pj']:.3f}x |"
            for x in rows
        ],
        "",
        "By stage, slow (uJ):",
        "",
        "| stage | Kaleido | dense |",
        "|---|---|---|",
        *[f"| {s} | {v['kaleido'] / 1e6:,.2f} | {v['dense'] / 1e6:,.2f} |" for s, v in stages["slow"].items()],
        "",
        f"Energies used (pJ at {table.node_nm} nm): "
        + ", ".join(f"{k} {f[k]:.3g}" for k in EVENTS)
        + ". Where the energy goes: on-chip buffer traffic dominates both designs (the drains' read-modify-writes "
        "of S and of P V's partial O, every 16 channels or 16 tokens, the depth of the 20-bit accumulators; the "
        "operand reads; the softmax's S reads and P writes); DRAM (Q, K, V in, O out, the same for both) is "
        f"{rows[0]['io_dense_pj'] / rows[0]['dense_pj']:.0%} of the dense head. Kaleido's Q K^T reads each "
        "operand once per pass for the four tiles of a pair group (half the dense array's operand reads) and "
        "multiplies less, but its PE forwards 38 bits a beat (dense 18), combines its nibble products and adds "
        "into up to three registers; its P V saves only the multiplies the FULL V followers remove, less than "
        "the wider PE costs.",
        "",
        "Paper: 16.0x energy savings, but against an A100 GPU (14.8x to 18.4x across four models, fig. 18b), "
        "with its dispatcher at 0.1 % of the energy and 9 % less energy from the dispatcher (fig. 19); "
        "the comparison here is against a dense systolic array of the same PEs, the paper's own baseline "
        "architecture, where the reuse can only save what it removes from the array.",
        "",
        "![energy](report/energy.png)",
        "",
    ]


def efficiency_section(rep, plt):
    """Every named design against the fair dense core on make sim's head
    (:mod:`kaleido.bench.efficiency_report`); written into the project's
    docs/report, it also rewrites the README's results table."""
    import pathlib

    from .. import efficiency_report as er
    from .. import sensitivity_report as sr

    rows = er.run(pathlib.Path(rep.out))
    lines = er.table_lines(rows)
    try:
        found, time_speedup = sr.run(pathlib.Path(rep.out), rows)
        sens = sr.lines(found, time_speedup)
    except ValueError as err:
        sens = [f"Sensitivity not computed: {err}"]
    readme = pathlib.Path(__file__).resolve().parents[3] / "README.md"
    # the README's table only from the project's own report (make report), never from a run elsewhere
    ours = pathlib.Path(rep.out).resolve() == (readme.parent / "docs" / "report").resolve()
    if ours and readme.exists() and er.BEGIN in readme.read_text():
        head = f"How each conclusion for `{sr.DESIGN}` moves when any one per-event energy or area figure is halved or doubled (docs/REPORT.md, Sensitivity):"
        er.update_readme(readme, [*lines, "", head, "", *sens])
    preset, grid, motion, seed = er.HEAD
    return [
        "## Efficiency against the fair dense core",
        "",
        f"`make sim`'s head ({preset}, grid {grid}, {motion} motion, seed {seed}): each core's exact cycles "
        "(the cycle model, equal to the RTL's), its clock (the Fmax of its slowest block), its area as built and at "
        "the paper's chip-level denominator, and its energy per head, against the dense core with the same "
        "buffers, clock rules, accumulator width, drain policy and a MAC PE gated by a mux with a product "
        "register (docs/SYNTH.md). Throughput per mm^2 = time speedup / area ratio.",
        "",
        *lines,
        "",
        "![efficiency vs area](report/efficiency_area.png) ![efficiency vs energy](report/efficiency_energy.png)",
        "",
        "### Sensitivity",
        "",
        f"The `{sr.DESIGN}` design's ratios with each per-event energy (docs/ENERGY.md) and each area figure "
        "(logic density, SRAM bit cell, SRAM array efficiency; kaleido/data/chip_16nm.toml) halved and doubled, "
        "one at a time; a conclusion is energy saved (ratio below 1) or more throughput per mm^2 than dense "
        "(speedup in time above the area ratio). CSV: `report/sensitivity.csv`.",
        "",
        *sens,
        "",
        "![sensitivity](report/sensitivity.png)",
        "",
        "### What the goals need",
        "",
        "Issue 43's goals against each design's own reuse (`kaleido.headroom`; docs/EFFICIENCY.md, "
        '"What the goals need"). Energy: the savings if every operation the reuse leaves in Q K^T and P V cost '
        "what a dense operation costs there (operand reads included, dispatch free), with the operations the "
        "design computes and the oracle's; the share of those two stages' scalable dense energy (all but their "
        "buffer writes) that would spend, and the most a design may spend to save the goal (the softmax, the "
        "drains' buffer writes and DRAM traffic are the same in both cores). Area: the "
        "speedup in time the built core and chip would need, and the logic the core may have beside its own "
        "buffers at its measured speedup (SRAM at flat prices).",
        "",
        *er.headroom_lines(rows),
        "",
    ]
