"""Paper-reproduction report: ``make report`` -> docs/REPORT.md, with PNG
plots and CSVs in docs/report/.

Every number comes from the golden model and the cycle model (validated
cycle for cycle against the RTL in the test suite) on SYNTHETIC workloads
(docs/WORKLOADS.md). Each figure stands beside the paper's for comparison.
"""

from __future__ import annotations

import argparse
import csv
import os
import time

import numpy as np

from kaleido.golden import op_counts, reuse_attention, skip_baselines

from .. import KaleidoConfig
from ..clock import clocks, time_speedup
from ..golden.workloads import synthetic_video
from ..model import VARIANTS, attention_stages, run_model


def _save(out, name, rows):
    path = os.path.join(out, f"{name}.csv")
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return path


def _plot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _finish(plt, out, fig, ax, name, title):
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(os.path.join(out, f"{name}.png"), dpi=110)
    plt.close(fig)


def _bars(plt, out, name, groups, series, values, ylabel, title, log=False, hline=None):
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
    _finish(plt, out, fig, ax, name, title)


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
        c = KaleidoConfig(**{"split": w.split, **cfg})
        return run_model(w.q, w.k, w.grid, w.split, c, variant=variant, arrays=arrays)


def fig9(rep, plt):
    rows, vals = [], {}
    for motion in ("slow", "fast"):
        w = rep.workload(motion, grid=rep.small)
        out = skip_baselines(w.q, w.k, w.v, w.grid, w.split, 5, 3, scales=w.scales)
        for label, ratio in out["ratios"].items():
            key = f"{motion} {ratio:.0%}"
            vals[key] = {
                "reuse": out["reuse"]["mse"],
                "skip_reused": out["skip_reused"][label]["mse"],
                "skip_lowest": out["skip_lowest"][label]["mse"],
            }
            rows.append(
                {
                    "motion": motion,
                    "saving": label,
                    "saved_ratio": ratio,
                    **{f"mse_{k}": v for k, v in vals[key].items()},
                    "advantage_vs_skip_lowest": out["advantage"][label]["skip_lowest"],
                    "advantage_vs_skip_reused": out["advantage"][label]["skip_reused"],
                }
            )
    _save(rep.out, "fig9_skip_baselines", rows)
    _bars(
        plt,
        rep.out,
        "fig9_skip_baselines",
        list(vals),
        ["reuse", "skip_reused", "skip_lowest"],
        vals,
        "attention-output MSE vs int8",
        "Fig. 9: reuse vs token-level skipping",
        log=True,
    )
    return [
        "## Fig. 9: reuse vs token-level skipping",
        "",
        f"Head {rep.small}, (F,P) = (5,3). Both baselines are token-level (spec sec. 4): skip-lowest drops, per "
        "query row, the keys of lowest score (top-k sparse attention); skip-reused drops the key tokens the reuse "
        "would reuse most (FULL follower channels count two, PARTIAL one). Each runs at the reuse's own saved-op "
        "ratio (the oracle's saved nibble multiplies on `Q K^T`) and at the paper's 85 %; the reuse's MSE is the "
        "same in both rows. MSE of the attention output against int8 attention without reuse; the advantage is "
        "the baseline's MSE over the reuse's, against each baseline separately.",
        "",
        "| motion | saved | MSE reuse | MSE skip-lowest | MSE skip-reused | advantage vs skip-lowest | "
        "advantage vs skip-reused |",
        "|---|---|---|---|---|---|---|",
        *[
            f"| {x['motion']} | {x['saved_ratio']:.1%} | {x['mse_reuse']:.3g} | {x['mse_skip_lowest']:.3g} | "
            f"{x['mse_skip_reused']:.3g} | {x['advantage_vs_skip_lowest']:.1f}x | "
            f"{x['advantage_vs_skip_reused']:.1f}x |"
            for x in rows
        ],
        "",
        "Paper: an order of magnitude lower MSE than both baselines at 85 % saved tokens.",
        "",
        "![fig9](report/fig9_skip_baselines.png)",
        "",
    ]


def fig18c(rep, plt):
    rows, vals = [], {}
    for motion in ("slow", "fast"):
        w = rep.workload(motion)
        c = op_counts(w.q, w.k, w.grid, w.split, 5, 3)
        vals[motion] = {k: c[k] / c["dense"] for k in ("dense", "hw3", "hw4", "oracle")}
        rows.append({"motion": motion, **c})
    _save(rep.out, "fig18c_ops", rows)
    _bars(
        plt,
        rep.out,
        "fig18c_ops",
        ["slow", "fast"],
        ["dense", "hw3", "hw4", "oracle"],
        vals,
        "nibble multiplies / dense",
        "Fig. 18c: op counts of Q K^T",
    )
    return [
        "## Fig. 18c: dense, oracle and hardware op counts",
        "",
        f"Head {rep.grid}, (F,P) = (5,3), nibble multiplies of `Q K^T` (dense = 8 per pair group and channel).",
        "",
        "| motion | dense | hw (3 acc.) | hw (4 acc.) | oracle | saved hw3 | saved oracle |",
        "|---|---|---|---|---|---|---|",
        *[
            f"| {x['motion']} | {x['dense']:,} | {x['hw3']:,} | {x['hw4']:,} | {x['oracle']:,} | "
            f"{1 - x['hw3'] / x['dense']:.1%} | {1 - x['oracle'] / x['dense']:.1%} |"
            for x in rows
        ],
        "",
        "Paper: up to 85 % of attention computation removed (its oracle also reuses in any direction; ours "
        "keeps the fixed directions, spec sec. 9).",
        "",
        "![fig18c](report/fig18c_ops.png)",
        "",
        *_fig18c_attention(rep, plt),
    ]


def _fig18c_attention(rep, plt):
    """Fig. 18c over whole attention: Q K^T and P V nibble multiplies
    (the softmax multiplies nothing on the array)."""
    from ..model import pv_cycles

    rows, vals = [], {}
    for motion in ("slow", "fast"):
        w = rep.workload(motion)
        qk = op_counts(w.q, w.k, w.grid, w.split, 5, 3)
        pv = pv_cycles(w.v, w.grid, w.split, KaleidoConfig(split=w.split)).ops
        total = {k: qk[k] + pv[k] for k in ("dense", "oracle")}
        total["hw"] = qk["hw3"] + pv["hw"]
        rows.append(
            {
                "motion": motion,
                **{f"qk_{k}": qk[k] for k in ("dense", "hw3", "oracle")},
                **{f"pv_{k}": v for k, v in pv.items()},
                **{f"attention_{k}": v for k, v in total.items()},
            }
        )
        vals[motion] = {k: total[k] / total["dense"] for k in ("dense", "hw", "oracle")}
    _save(rep.out, "fig18c_attention_ops", rows)
    _bars(
        plt,
        rep.out,
        "fig18c_attention_ops",
        ["slow", "fast"],
        ["dense", "hw", "oracle"],
        vals,
        "nibble multiplies / dense",
        "Fig. 18c: op counts of whole attention (Q K^T + P V)",
    )
    return [
        "### Whole attention: Q K^T and P V",
        "",
        f"Head {rep.grid}, (F,P) = (5,3), 3 accumulators; P V with reuse on V (FULL followers pre-add P; "
        "docs/DESIGN.md). hw = what the array multiplies.",
        "",
        "| motion | Q K^T hw / dense | P V hw / dense | P V oracle / dense | attention hw / dense | "
        "attention oracle / dense |",
        "|---|---|---|---|---|---|",
        *[
            f"| {x['motion']} | {x['qk_hw3'] / x['qk_dense']:.3f} | {x['pv_hw'] / x['pv_dense']:.3f} | "
            f"{x['pv_oracle'] / x['pv_dense']:.3f} | {x['attention_hw'] / x['attention_dense']:.3f} | "
            f"{x['attention_oracle'] / x['attention_dense']:.3f} |"
            for x in rows
        ],
        "",
        "![fig18c attention](report/fig18c_attention_ops.png)",
        "",
    ]


def fig19(rep, plt):
    rows, vals, utils = [], {}, {}
    for motion in ("slow", "fast"):
        w = rep.workload(motion)
        vals[motion], utils[motion] = {}, {}
        for v in VARIANTS:
            r = rep.model(w, v)
            vals[motion][v] = r.speedup
            utils[motion][v] = r.utilization
            clock = clocks(*VARIANTS[v])
            att = attention_stages(r, w.v, w.grid, w.split, KaleidoConfig(split=w.split))
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
    _save(rep.out, "fig19_variants", rows)
    _bars(
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
    _bars(
        plt,
        rep.out,
        "fig19_utilization",
        ["slow", "fast"],
        list(VARIANTS),
        utils,
        "PE utilization",
        "Fig. 19: PE utilization",
    )
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
    _bars(
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


def _block_layers(rep, motion):
    """The linear layers of one DiT block on the report's head, as
    ``(name, X, W)``: QKV, output projection, MLP up and down. The output
    projection's input is stood in by the block input (the attention output
    is not synthesised); the MLP's hidden activations are
    ``GELU(X W_up)``, quantised."""
    from ..golden.workloads import linear_weights, quantise, video_activations

    d_model = 2 * 128
    X, _, Xf = video_activations(rep.grid, motion, rep.seed, d_model=d_model)
    layers = []
    for name, d_in, d_out in (
        ("qkv", d_model, 3 * d_model),
        ("out", d_model, d_model),
        ("mlp_up", d_model, 4 * d_model),
    ):
        layers.append((name, X, linear_weights(d_in, d_out, rep.seed + len(layers))[0]))
    _, _, w_up = linear_weights(d_model, 4 * d_model, rep.seed + 2)
    h = Xf @ w_up
    H, _ = quantise(0.5 * h * (1 + np.tanh(0.7978845608 * (h + 0.044715 * h**3))))
    layers.append(("mlp_down", H, linear_weights(4 * d_model, d_model, rep.seed + 3)[0]))
    return layers


def fig20(rep, plt):
    """Fig. 20: reuse on attention only against all layers of a DiT block."""
    from ..config import LinearReuse
    from ..golden.linear import linear_quality
    from ..model import linear_cycles

    rule = LinearReuse()
    rows, layer_rows = [], []
    for motion in ("slow", "fast"):
        w = rep.workload(motion)
        att = attention_stages(rep.model(w), w.v, w.grid, w.split, KaleidoConfig(split=w.split))["attention"]
        heads = 2  # d_model 256 = two heads of 128
        lin, lin_dense = 0, 0
        for name, X, W in _block_layers(rep, motion):
            r = linear_cycles(X, W.shape[1], rep.grid, KaleidoConfig(), rule)
            q = linear_quality(X, W, rep.grid, rule)
            lin += r.cycles
            lin_dense += r.dense_cycles
            layer_rows.append(
                {
                    "motion": motion,
                    "layer": name,
                    "d_in": X.shape[1],
                    "d_out": W.shape[1],
                    "cycles": r.cycles,
                    "dense_cycles": r.dense_cycles,
                    "speedup": r.speedup,
                    "hw_saved": 1 - r.ops["hw"] / r.ops["dense"],
                    "psnr_db": q["psnr"],
                }
            )
        dense = heads * att["dense_cycles"] + lin_dense
        attention_only = heads * att["cycles"] + lin_dense
        everything = heads * att["cycles"] + lin
        rows.append(
            {
                "motion": motion,
                "dense_cycles": dense,
                "attention_only_cycles": attention_only,
                "all_layers_cycles": everything,
                "speedup_attention_only": dense / attention_only,
                "speedup_all_layers": dense / everything,
                "linear_share_of_dense": lin_dense / dense,
                "saved_by_linear_reuse": (attention_only - everything) / dense,
            }
        )
    _save(rep.out, "fig20_block", rows)
    _save(rep.out, "fig20_layers", layer_rows)
    _bars(
        plt,
        rep.out,
        "fig20_block",
        ["slow", "fast"],
        ["attention only", "all layers"],
        {
            x["motion"]: {"attention only": x["speedup_attention_only"], "all layers": x["speedup_all_layers"]}
            for x in rows
        },
        "DiT block speedup over dense",
        "Fig. 20: reuse in attention only vs all layers",
        hline=1.0,
    )
    lines = [
        "## Fig. 20: reuse in the linear layers too",
        "",
        f"One DiT block on the head {rep.grid} (d_model 256: two heads of 128, the report's attention per head "
        "with reuse on Q, K and V), its four linear layers with reuse on the activations (windows of two along "
        f"{rule.axis}, eq. 5, theta1 = {rule.theta1}; docs/LINEAR.md), one 4x4 array, full variant; cycles from "
        "the cycle model (the linear layers' equal the RTL's in tb/test_linear.py). The output projection's "
        "input is stood in by the block input.",
        "",
        "| motion | layer | d_in -> d_out | cycles | dense | speedup | multiplies saved | PSNR vs int8 (dB) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {x['motion']} | {x['layer']} | {x['d_in']} -> {x['d_out']} | {x['cycles']:,} | {x['dense_cycles']:,} | "
        f"{x['speedup']:.3f}x | {x['hw_saved']:.1%} | {x['psnr_db']:.1f} |"
        for x in layer_rows
    ]
    lines += [
        "",
        "| motion | block speedup, reuse in attention only | block speedup, all layers | linear share of "
        "dense time | block time saved by linear reuse |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {x['motion']} | {x['speedup_attention_only']:.3f}x | {x['speedup_all_layers']:.3f}x | "
        f"{x['linear_share_of_dense']:.1%} | {x['saved_by_linear_reuse']:.1%} |"
        for x in rows
    ]
    lines += [
        "",
        "Paper (fig. 20, HunyuanVideo): reuse in the linear layers adds speedup at nearly unchanged PSNR.",
        "",
        "![fig20](report/fig20_block.png)",
        "",
    ]
    return lines


def fig21(rep, plt):
    w = rep.workload("slow")
    total = 4096
    rows = []
    for side in (2, 4, 8, 16, 32, 64):
        arrays = total // (side * side)
        r = rep.model(w, "full", arrays=arrays, array_rows=side, array_cols=side)
        rows.append(
            {
                "array": f"{side}x{side}",
                "arrays": arrays,
                "cycles": r.cycles,
                "dense_cycles": r.dense_cycles,
                "speedup": r.speedup,
                "utilization": r.utilization,
            }
        )
        rep.log(f"fig21 {side}x{side}")
    base = next(x for x in rows if x["array"] == "4x4")["speedup"]
    for x in rows:
        x["normalized"] = x["speedup"] / base
    _save(rep.out, "fig21_array_size", rows)
    rep.fig21 = rows
    fig, ax = plt.subplots(figsize=(6.4, 3.4))
    ax.plot([x["array"] for x in rows], [x["normalized"] for x in rows], "o-")
    ax.set_ylabel("speedup / speedup(4x4)")
    _finish(plt, rep.out, fig, ax, "fig21_array_size", f"Fig. 21: array size at {total} PEs (full variant)")
    return [
        "## Fig. 21: array size at a constant PE count",
        "",
        f"Head {rep.grid}, slow, {total} PEs in total, full variant; speedup over a dense array of the same shape and count.",
        "",
        "| array | arrays | cycles | speedup | normalized to 4x4 | utilization |",
        "|---|---|---|---|---|---|",
        *[
            f"| {x['array']} | {x['arrays']} | {x['cycles']:,} | {x['speedup']:.3f}x | {x['normalized']:.3f} | "
            f"{x['utilization']:.1%} |"
            for x in rows
        ],
        "",
        "Paper: speedup degrades slightly as arrays grow; 2x2 gains marginally over 4x4.",
        "",
        "![fig21](report/fig21_array_size.png)",
        "",
    ]


def fig23(rep, plt):
    rows = []
    for F, P in ((3, 1), (4, 2), (5, 3), (6, 4), (5, 4)):
        w = rep.workload("slow")
        r3 = rep.model(w, "full", F=F, P=P)
        r4 = rep.model(w, "full", F=F, P=P, accumulators=4)
        q = reuse_attention(w.q, w.k, w.v, w.grid, w.split, F, P, scales=w.scales, reference=w.reference)
        rows.append(
            {
                "F": F,
                "P": P,
                "speedup_3acc": r3.speedup,
                "speedup_4acc": r4.speedup,
                "utilization": r3.utilization,
                "psnr_vs_int8": q.metrics["vs_int8"]["psnr"],
                "psnr_vs_float": q.metrics["vs_float"]["psnr"],
            }
        )
        rep.log(f"fig23 ({F},{P})")
    _save(rep.out, "fig23_thresholds", rows)
    fig, ax = plt.subplots(figsize=(6.4, 3.4))
    labels = [f"({x['F']},{x['P']})" for x in rows]
    ax.plot(labels, [x["speedup_3acc"] for x in rows], "o-", label="speedup, 3 acc.")
    ax.plot(labels, [x["speedup_4acc"] for x in rows], "s-", label="speedup, 4 acc.")
    ax.set_ylabel("speedup over dense")
    ax2 = ax.twinx()
    ax2.plot(labels, [x["psnr_vs_int8"] for x in rows], "^--", color="tab:red", label="PSNR vs int8")
    ax2.set_ylabel("PSNR (dB)")
    ax.legend(loc="upper right", fontsize=8)
    ax2.legend(loc="lower left", fontsize=8)
    _finish(plt, rep.out, fig, ax, "fig23_thresholds", "Fig. 23: thresholds (F, P)")
    rep.fig23 = rows
    return [
        "## Fig. 23: thresholds",
        "",
        f"Head {rep.grid}, slow: speedup of the full variant; PSNR of the attention output (reuse on Q, K, V).",
        "",
        "| (F,P) | speedup 3 acc. | speedup 4 acc. | utilization | PSNR vs int8 | PSNR vs float |",
        "|---|---|---|---|---|---|",
        *[
            f"| ({x['F']},{x['P']}) | {x['speedup_3acc']:.3f}x | {x['speedup_4acc']:.3f}x | {x['utilization']:.1%} | "
            f"{x['psnr_vs_int8']:.1f} dB | {x['psnr_vs_float']:.1f} dB |"
            for x in rows
        ],
        "",
        "Paper: (5,3) is the chosen trade-off between speed and quality.",
        "",
        "![fig23](report/fig23_thresholds.png)",
        "",
    ]


def fig24(rep, plt):
    rows, vals = [], {}
    for motion in ("slow", "fast"):
        for spread in (0.0, None, 1.5):
            w = rep.workload(motion, spread)
            r = rep.model(w, "full")
            label = "default" if spread is None else f"spread {spread}"
            vals.setdefault(label, {})[motion] = r.speedup
            rows.append({"motion": motion, "spread": label, "speedup": r.speedup, "utilization": r.utilization})
    _save(rep.out, "fig24_motion", rows)
    rep.fig24 = rows
    _bars(
        plt,
        rep.out,
        "fig24_motion",
        list(vals),
        ["slow", "fast"],
        vals,
        "speedup over dense",
        "Fig. 24: slow vs fast motion (full, (5,3))",
        hline=1.0,
    )
    return [
        "## Fig. 24: slow vs fast motion",
        "",
        f"Head {rep.grid}, full variant, (5,3), three channel spreads.",
        "",
        "| motion | channel spread | speedup | utilization |",
        "|---|---|---|---|",
        *[f"| {x['motion']} | {x['spread']} | {x['speedup']:.3f}x | {x['utilization']:.1%} |" for x in rows],
        "",
        "Paper: fast motion is slightly slower, at similar quality.",
        "",
        "![fig24](report/fig24_motion.png)",
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
    _save(rep.out, "accumulators", rows)
    _bars(
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


def breakdown(rep, plt):
    w = rep.workload("slow")
    rows = []
    for acc in (3, 4):
        r = rep.model(w, "full", accumulators=acc)
        dense_beats = r.phases["T0"]["slots"]  # T0 issues every channel of every pass
        for ph, v in r.phases.items():
            rows.append(
                {
                    "accumulators": acc,
                    "phase": ph,
                    "beats": v["beats"],
                    "slots": v["slots"],
                    "fraction_of_dense_phase": v["beats"] / dense_beats,
                }
            )
    _save(rep.out, "phase_breakdown", rows)
    from kaleido.golden.reuse import follower_classes

    cls = follower_classes(w.k, w.grid, w.split)
    full = float((cls[cls != 3] == 2).mean())
    t3 = {x["accumulators"]: x["fraction_of_dense_phase"] for x in rows if x["phase"] == "T3"}
    fp54 = next(x for x in rep.fig23 if (x["F"], x["P"]) == (5, 4))
    fp31 = next(x for x in rep.fig23 if (x["F"], x["P"]) == (3, 1))
    small2 = next(x for x in rep.fig21 if x["array"] == "2x2")["normalized"] - 1
    spread = {x["spread"]: x["speedup"] for x in rep.fig24 if x["motion"] == "slow"}
    return [
        "## Where the cycles go",
        "",
        f"Head {rep.grid}, slow, full variant, (5,3): array beats per phase, as a fraction of a dense phase "
        "(every channel of every pass).",
        "",
        "| accumulators | phase | beats | slots | fraction of a dense phase |",
        "|---|---|---|---|---|",
        *[
            f"| {x['accumulators']} | {x['phase']} | {x['beats']:,} | {x['slots']:,} | {x['fraction_of_dense_phase']:.1%} |"
            for x in rows
        ],
        "",
        "* T0 is always dense: it alone is a quarter of the dense array's work, so no variant can beat 4x, and "
        "three accumulators add a recomputed T3 for q = k = FULL (the 2x cap of spec sec. 5).",
        f"* With three accumulators T3 costs {t3[3]:.0%} of a dense phase: some PE among 16 almost always needs "
        f"`p` or `p_hi` there; four accumulators cut it to {t3[4]:.0%}.",
        f"* A channel is issued to the whole 4x4 array if any of its 16 PEs needs it. {full:.0%} of K's "
        "follower values are FULL here, yet a whole T1 column of four column pairs is rarely all FULL at a "
        "channel, so the per-PE savings of fig. 18c shrink at the array level (utilization ~69 %).",
        "* The dispatcher helps only where needs differ between passes; on these workloads the scheduler "
        "tightens groups by 11-15 % (docs/DISPATCH.md) and the matcher merges few HALF pairs, because most "
        "non-SKIP channels are FULL8.",
        "",
        "What the 2x target at (5,4) would take: four accumulators (already in the RTL: "
        "`KaleidoConfig(accumulators=4)`, verified by the same tests on both simulators) give "
        f"{fp54['speedup_4acc']:.2f}x; smaller "
        f"arrays add {small2:.0%} (2x2, fig. 21); coarser thresholds reach {fp31['speedup_4acc']:.2f}x at "
        f"(3,1) with four accumulators, at {fp31['psnr_vs_int8']:.1f} dB. On these synthetic workloads 2x at "
        "40 dB is not reached; workloads with more FULL reuse (channel spread 1.5) move the slow full "
        f"variant from {spread['default']:.2f}x to {spread['spread 1.5']:.2f}x with three accumulators (fig. 24).",
        "",
    ]


def targets(rep):
    vals, utils, gain = rep.fig19
    fp54 = next(x for x in rep.fig23 if (x["F"], x["P"]) == (5, 4))
    rows = [
        (
            "full-variant utilization >= 90 %",
            f"{utils['slow']['full']:.1%} slow / {utils['fast']['full']:.1%} fast",
            utils["slow"]["full"] >= 0.9,
        ),
        (
            "dispatcher gain >= 1.25x over pe",
            f"{gain['slow']:.3f}x slow / {gain['fast']:.3f}x fast",
            gain["slow"] >= 1.25,
        ),
        ("speedup >= 2x at (5,4) (3 acc.)", f"{fp54['speedup_3acc']:.3f}x", fp54["speedup_3acc"] >= 2),
        ("speedup >= 2x at (5,4) (4 acc.)", f"{fp54['speedup_4acc']:.3f}x", fp54["speedup_4acc"] >= 2),
        ("PSNR >= 40 dB at (5,4)", f"{fp54['psnr_vs_int8']:.1f} dB vs int8", fp54["psnr_vs_int8"] >= 40),
    ]
    return [
        "## Targets",
        "",
        "| target | measured | met |",
        "|---|---|---|",
        *[f"| {t} | {m} | {'yes' if ok else '**no**'} |" for t, m, ok in rows],
        "",
    ]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
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
    plt = _plot()
    body = []
    for step in (fig9, fig18c, fig19, fig20, fig21, fig23, fig24, accumulators, breakdown):
        rep.log(step.__name__)
        body += step(rep, plt)
    head = [
        "# Kaleido reproduction report",
        "",
        "Regenerated by `make report` (`python -m kaleido.bench.report`). **All workloads are synthetic** "
        "(a panned/zoomed scikit-image photograph through random projections and real 3-D RoPE, hunyuan split "
        "(16, 56, 56), default channel spread; docs/WORKLOADS.md): the numbers say what this design does on them, "
        "not what the paper measured on real DiTs. Cycles come from the cycle model, which the test suite checks "
        "cycle for cycle against the RTL (Icarus and Verilator). CSVs beside each plot in docs/report/.",
        "",
    ]
    head += targets(rep)
    bench = "build/bench/model.json"
    if os.path.exists(bench):
        import json

        b = json.load(open(bench))
        head += [
            f"Scale (`make bench`): a HunyuanVideo-sized head of {b['n']:,} tokens (grid {tuple(b['grid'])}, "
            f"d = {b['d']}) runs through the exact model in {b['model_s']:.1f} s (goal 60 s): "
            f"{b['speedup']:.3f}x over dense, {b['utilization']:.1%} utilization ({b['variant']} variant).",
            "",
        ]
    path = os.path.join(args.out, "REPORT.md")
    with open(path, "w") as f:
        f.write("\n".join(head + body))
    rep.log(f"wrote {path}")


if __name__ == "__main__":
    main()
