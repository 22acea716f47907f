"""Fig. 20: a whole DiT block, reuse in attention only against reuse in
its linear layers too."""

from __future__ import annotations

import numpy as np

from ... import KaleidoConfig
from ...model import attention_stages
from .base import bar_plot, save_csv


def _block_layers(rep, motion):
    """The linear layers of one DiT block on the report's head, as
    ``(name, X, W)``: QKV, output projection, MLP up and down. The output
    projection's input is stood in by the block input (the attention output
    is not synthesised); the MLP's hidden activations are
    ``GELU(X W_up)``, quantised."""
    from ...golden.workloads import linear_weights, quantise, video_activations

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


def _block_rows(rep, rule):
    """The block's rows (per motion) and its linear layers' rows, with reuse under ``rule``."""
    from ...golden.linear import linear_quality
    from ...model import linear_cycles

    rows, layer_rows = [], []
    for motion in ("slow", "fast"):
        w = rep.workload(motion)
        att = attention_stages(rep.model(w), w.v, w.grid, w.split, KaleidoConfig.paper(split=w.split))["attention"]
        heads = 2  # d_model 256 = two heads of 128
        lin, lin_dense = 0, 0
        for name, X, W in _block_layers(rep, motion):
            r = linear_cycles(X, W.shape[1], rep.grid, KaleidoConfig.paper(), rule)
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
    return rows, layer_rows


def fig20(rep, plt):
    """Fig. 20: reuse on attention only against all layers of a DiT block."""
    from ...config import LinearReuse

    rule = LinearReuse()
    rows, layer_rows = _block_rows(rep, rule)
    save_csv(rep.out, "fig20_block", rows)
    save_csv(rep.out, "fig20_layers", layer_rows)
    bar_plot(
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
