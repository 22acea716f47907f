"""Speedup of the designs as built: fig. 19 (the four variants), the
paper's design against the default, three against four accumulators."""

from __future__ import annotations

import math

from ... import KaleidoConfig
from ...clock import clocks, time_speedup
from ...model import VARIANTS, attention_stages, run_model
from .base import bar_plot, save_csv


def _fig19_rows(rep):
    """Fig. 19's rows: every variant on both heads, Q K^T and whole attention, cycles and time."""
    rows, vals, utils = [], {}, {}
    for motion in ("slow", "fast"):
        w = rep.workload(motion)
        vals[motion], utils[motion] = {}, {}
        for v in VARIANTS:
            r = rep.model(w, v)
            vals[motion][v] = r.speedup
            utils[motion][v] = r.utilization
            clock = clocks(*VARIANTS[v])
            att = attention_stages(r, w.v, w.grid, w.split, KaleidoConfig.paper(split=w.split))
            rows.append(
                {
                    "motion": motion,
                    "variant": v,
                    "attention_cycles": att["attention"]["cycles"],
                    "attention_dense_cycles": att["attention"]["dense_cycles"],
                    "attention_speedup": att["attention"]["speedup"],
                    "pv_speedup": att["stages"]["pv"]["dense_cycles"] / att["stages"]["pv"]["cycles"],
                    "cycles": r.cycles,
                    "dense_cycles": r.dense_cycles,
                    "speedup": r.speedup,
                    "utilization": r.utilization,
                    "core_mhz": clock.kaleido_mhz,
                    "limited_by": clock.limited_by,
                    "dense_mhz": clock.dense_mhz,
                    "time_speedup": time_speedup(r.speedup, clock),
                }
            )
    return rows, vals, utils


def _fig19_tables(rep, rows):
    """Fig. 19's two tables: Q K^T (cycles, utilization, clock) and whole attention."""
    lines = [
        "## Fig. 19: the four variants",
        "",
        f"Head {rep.grid}, one 4x4 array, (F,P) = (5,3), 3 accumulators.",
        "",
        "| motion | variant | cycles | dense cycles | speedup (cycles) | utilization | core clock (MHz) | "
        "speedup (time) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {x['motion']} | {x['variant']} | {x['cycles']:,} | {x['dense_cycles']:,} | {x['speedup']:.3f}x | "
        f"{x['utilization']:.1%} | {x['core_mhz']:.1f} ({x['limited_by']}) | {x['time_speedup']:.3f}x |"
        for x in rows
    ]
    lines += [
        "",
        "Whole attention (Q K^T, then softmax, then P V with reuse on V, on the same array; the dense array "
        "runs the same softmax unit):",
        "",
        "| motion | variant | attention cycles | dense | speedup (cycles) | P V speedup |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {x['motion']} | {x['variant']} | {x['attention_cycles']:,} | {x['attention_dense_cycles']:,} | "
        f"{x['attention_speedup']:.3f}x | {x['pv_speedup']:.3f}x |"
        for x in rows
    ]
    return lines


def fig19(rep, plt):
    rows, vals, utils = _fig19_rows(rep)
    save_csv(rep.out, "fig19_variants", rows)
    bar_plot(
        plt,
        rep.out,
        "fig19_variants",
        ["slow", "fast"],
        list(VARIANTS),
        vals,
        "speedup over dense",
        "Fig. 19: variants (3 accumulators, (5,3))",
        hline=1.0,
    )
    bar_plot(
        plt,
        rep.out,
        "fig19_utilization",
        ["slow", "fast"],
        list(VARIANTS),
        utils,
        "PE utilization",
        "Fig. 19: PE utilization",
    )
    lines = _fig19_tables(rep, rows)
    bar_plot(
        plt,
        rep.out,
        "fig19_attention",
        ["slow", "fast"],
        list(VARIANTS),
        {m: {x["variant"]: x["attention_speedup"] for x in rows if x["motion"] == m} for m in ("slow", "fast")},
        "speedup over dense",
        "Fig. 19: variants over whole attention",
        hline=1.0,
    )
    source = clocks().source
    lines += [
        "",
        "![fig19 attention](report/fig19_attention.png)",
        "",
        f"Speedup in time = cycle speedup x core clock / dense array clock ({rows[0]['dense_mhz']:.1f} MHz); "
        f"a core runs at its slowest block's ECP5 Fmax (Fmax from {source}; issue 20 pipelines the "
        "scheduler and the matcher).",
    ]
    gain = {m: vals[m]["full"] / vals[m]["pe"] for m in vals}
    lines += [
        "",
        f"Dispatcher gain (full / pe): slow {gain['slow']:.3f}x, fast {gain['fast']:.3f}x. "
        f"Utilization pe -> full: slow {utils['slow']['pe']:.1%} -> {utils['slow']['full']:.1%}.",
        "Paper: the dispatcher gives 1.2x and lifts utilization from 69.4 % to 85.2 %.",
        "",
        "![fig19](report/fig19_variants.png) ![fig19u](report/fig19_utilization.png)",
        "",
    ]
    rep.fig19 = (vals, utils, gain)
    return lines


#: the named designs the report compares (:data:`kaleido.config.DESIGNS`), in order
COMPARED_DESIGNS = ("paper", "one_array", "default")


def _design_rows(rep):
    """Every compared design on both heads: Q K^T, whole attention and the hardware's PSNR."""
    from ...golden.grouped import hw_attention
    from ...golden.softmax import head_p

    rows, vals = [], {}
    for motion in ("slow", "fast"):
        w = rep.workload(motion)
        for name in COMPARED_DESIGNS:
            cfg = KaleidoConfig.preset("hunyuan", name, split=w.split)
            r = run_model(w.q, w.k, w.grid, w.split, cfg)
            P = head_p(w.q, w.k, w.grid, w.split, cfg.thresholds, scales=w.scales) if cfg.pv_pairs else None
            att = attention_stages(r, w.v, w.grid, w.split, cfg, P=P)["attention"]
            q = hw_attention(w.q, w.k, w.v, w.grid, w.split, cfg.thresholds, [cfg.F] * 3, scales=w.scales)
            vals.setdefault(name, {})[motion] = att["speedup"]
            r_, c_ = cfg.sub_shape
            rows.append(
                {
                    "motion": motion,
                    "design": name,
                    "thresholds": " ".join(f"{g}{F},{P_}" for g, (F, P_) in zip("txy", cfg.thresholds, strict=True)),
                    "accumulators": cfg.accumulators,
                    "arrays": f"{cfg.n_arrays}x {r_}x{c_}",
                    "pv_pairs": cfg.pv_pairs,
                    "qk_speedup": r.speedup,
                    "utilization": r.utilization,
                    "op_reduction": 1 - r.ops["hw"] / r.ops["dense"],
                    "attention_speedup": att["speedup"],
                    "psnr_vs_int8": q["vs_int8"]["psnr"],
                }
            )
    return rows, vals


def designs(rep, plt):
    """The paper's design (``KaleidoConfig.paper()``, ``--design paper``),
    the default's reuse on one 4x4 array (``KaleidoConfig.one_array()``)
    and the project's default (``KaleidoConfig()``: four accumulators,
    per-group thresholds, sixteen 1x1 arrays, small-P pairing) on fig. 19's
    heads: the full variant, Q K^T and whole attention, PSNR of the output
    the hardware computes."""
    rows, vals = _design_rows(rep)
    save_csv(rep.out, "designs", rows)
    bar_plot(
        plt,
        rep.out,
        "designs",
        ["slow", "fast"],
        list(COMPARED_DESIGNS),
        {m: {d: vals[d][m] for d in vals} for m in ("slow", "fast")},
        "whole-attention speedup over dense",
        "The paper's design, the default on one array, the default (full variant)",
        hline=1.0,
    )
    rep.designs = rows
    gm = {d: math.sqrt(vals[d]["slow"] * vals[d]["fast"]) for d in vals}
    low = {d: min(x["psnr_vs_int8"] for x in rows if x["design"] == d) for d in vals}
    return [
        "## The paper's design and the default, side by side",
        "",
        f"Head {rep.grid}, full variant, 16 PEs in every design. `paper`: `KaleidoConfig.paper()` / "
        "`--design paper` (one 4x4 array). `one_array`: `KaleidoConfig.one_array()` / `--design one_array`, "
        'the reuse chosen by the exploration (docs/EXPLORATION.md, "The default design": four accumulators, '
        "per-group thresholds on Q K^T, the engine's run-time `thresholds` port, P V's FULL threshold F = 7) "
        "on one 4x4 array, P V unpaired. `default`: `KaleidoConfig()`, the same "
        "reuse with each 4x4 pass on sixteen 1x1 arrays behind a shared queue (`sub_arrays=(1, 1)`, "
        "each array's dispatcher with two pass buffers) and small-P pairing on P V (`pv_pairs=True`); "
        "P V runs on the one 4x4 P V array, as the core builds it. PSNR: the attention output the hardware "
        "computes (Q K^T with each group's thresholds, P V with FULL followers only) against int8 attention; "
        "pairing and the small arrays do not change it.",
        "",
        "| motion | design | (F,P) t x y | acc. | Q K^T arrays | P V pairing | Q K^T speedup | utilization | "
        "hw op reduction | attention speedup | PSNR vs int8 |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
        *[
            f"| {x['motion']} | {x['design']} | {x['thresholds']} | {x['accumulators']} | {x['arrays']} | "
            f"{'yes' if x['pv_pairs'] else 'no'} | {x['qk_speedup']:.3f}x | "
            f"{x['utilization']:.1%} | {x['op_reduction']:.1%} | {x['attention_speedup']:.3f}x | "
            f"{x['psnr_vs_int8']:.1f} dB |"
            for x in rows
        ],
        "",
        "Whole attention, geometric mean of the two heads: "
        + ", ".join(f"{d} {gm[d]:.3f}x at {low[d]:.1f} dB (worst head)" for d in COMPARED_DESIGNS)
        + ". The reuse is chosen to hold 40 dB on the tuning and on every held-out head of the exploration; "
        'per head, `kaleido calibrate` chooses faster thresholds at 40 dB + 1.5 dB (docs/EXPLORATION.md, "Calibration").',
        "",
        "![designs](report/designs.png)",
        "",
    ]


def accumulators(rep, plt):
    rows, vals = [], {}
    for motion in ("slow", "fast"):
        w = rep.workload(motion)
        for acc in (3, 4):
            r = rep.model(w, "full", accumulators=acc)
            vals.setdefault(f"{acc} acc.", {})[motion] = r.speedup
            rows.append(
                {
                    "motion": motion,
                    "accumulators": acc,
                    "speedup": r.speedup,
                    "utilization": r.utilization,
                    "op_reduction": 1 - r.ops["hw"] / r.ops["dense"],
                }
            )
    save_csv(rep.out, "accumulators", rows)
    bar_plot(
        plt,
        rep.out,
        "accumulators",
        ["3 acc.", "4 acc."],
        ["slow", "fast"],
        vals,
        "speedup over dense",
        "3 vs 4 accumulators (full, (5,3))",
        hline=1.0,
    )
    return [
        "## Three vs four accumulators",
        "",
        f"Head {rep.grid}, full variant, (5,3).",
        "",
        "| motion | accumulators | speedup | utilization | hw op reduction |",
        "|---|---|---|---|---|",
        *[
            f"| {x['motion']} | {x['accumulators']} | {x['speedup']:.3f}x | {x['utilization']:.1%} | {x['op_reduction']:.1%} |"
            for x in rows
        ],
        "",
        "Three accumulators cap op reduction at 50 % and speedup at 2x (spec sec. 5); four lift the caps to 75 % and 4x.",
        "",
        "![acc](report/accumulators.png)",
        "",
    ]
