"""One parameter swept on the full variant: fig. 21 (array size at a
constant PE count), fig. 23 (thresholds) and fig. 24 (motion and channel
spread)."""

from __future__ import annotations

from kaleido.golden import reuse_attention

from .base import bar_plot, finish_plot, save_csv


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
    save_csv(rep.out, "fig21_array_size", rows)
    rep.fig21 = rows
    fig, ax = plt.subplots(figsize=(6.4, 3.4))
    ax.plot([x["array"] for x in rows], [x["normalized"] for x in rows], "o-")
    ax.set_ylabel("speedup / speedup(4x4)")
    finish_plot(plt, rep.out, fig, ax, "fig21_array_size", f"Fig. 21: array size at {total} PEs (full variant)")
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
    save_csv(rep.out, "fig23_thresholds", rows)
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
    finish_plot(plt, rep.out, fig, ax, "fig23_thresholds", "Fig. 23: thresholds (F, P)")
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
    save_csv(rep.out, "fig24_motion", rows)
    rep.fig24 = rows
    bar_plot(
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
