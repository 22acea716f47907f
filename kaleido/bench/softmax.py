"""The fixed-point softmax's own error (issue 12): PSNR and cosine of its
probabilities against float softmax over the same int8 scores (reuse off),
and of the attention output ``O`` against float attention with the same
int8 scores and V, per workload kind and P width.

Also whole attention in fixed point with reuse on Q, K and V, per workload
kind at the default and the swept thresholds, against int8 attention
without reuse and against float attention.
``python -m kaleido.bench.softmax [--out build/bench/softmax.json]`` writes
JSON and CSVs and prints the markdown tables of docs/SOFTMAX.md.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os

import numpy as np

from ..config import SoftmaxFormat
from ..golden.attention import metrics
from ..golden.reuse import exact_matmul
from ..golden.softmax import fixed_attention, fixed_softmax, float_softmax
from ..golden.workloads import random_workload, synthetic_video

__all__ = ["rows", "quality_rows", "main"]

#: thresholds of the quality sweep: the default (5,3), the swept ones, and reuse off
THRESHOLDS = [(5, 3), (3, 1), (4, 2), (5, 4), (6, 4), (9, 9)]


def rows(grid=(4, 16, 16), seed=0, p_widths=(6, 7, 8, 10)) -> list[dict]:
    """One row per (workload kind, P width)."""
    heads = {
        "video slow": synthetic_video("hunyuan", grid, "slow", seed),
        "video fast": synthetic_video("hunyuan", grid, "fast", seed),
        "random": random_workload(grid, (16, 56, 56), seed),
    }
    out = []
    for kind, w in heads.items():
        S = exact_matmul(w.q, w.k.T)
        scale = w.scales[0] * w.scales[1] / math.sqrt(w.d)
        ref = float_softmax(S * scale)
        o_ref = ref @ w.v.astype(np.float64)
        for bits in p_widths:
            fmt = SoftmaxFormat(p_bits=bits)
            sm = fixed_softmax(S, scale, fmt)
            P = sm.probabilities
            worst_row = min(
                10 * math.log10(ref[i].max() ** 2 / max(float(np.mean((P[i] - ref[i]) ** 2)), 1e-300))
                for i in range(len(P))
            )
            p_m = metrics(P, ref)
            o_m = metrics(fixed_attention(sm, w.v) / (1 << fmt.out_frac_bits), o_ref)
            out.append(
                {
                    "workload": kind,
                    "N": int(w.n),
                    "p_bits": bits,
                    "p_psnr_db": p_m["psnr"],
                    "p_worst_row_psnr_db": worst_row,
                    "p_cosine": p_m["cosine"],
                    "o_psnr_db": o_m["psnr"],
                    "o_cosine": o_m["cosine"],
                }
            )
    return out


def quality_rows(grid=(4, 16, 16), seed=0) -> list[dict]:
    """Whole attention in fixed point (reuse on Q, K and V) per workload
    kind and thresholds: PSNR and cosine against int8 attention without
    reuse and against float attention."""
    from ..golden.softmax import fixed_reuse_attention
    from ..golden.workloads import constant_workload

    heads = {
        "video slow": synthetic_video("hunyuan", grid, "slow", seed),
        "video fast": synthetic_video("hunyuan", grid, "fast", seed),
        "random": random_workload(grid, (16, 56, 56), seed),
        "constant": constant_workload(grid, (16, 56, 56), seed),
    }
    out = []
    for kind, w in heads.items():
        for F, P in THRESHOLDS:
            res = fixed_reuse_attention(w.q, w.k, w.v, w.grid, w.split, F, P, scales=w.scales, reference=w.reference)
            row = {"workload": kind, "F": F, "P": P}
            for ref in ("vs_int8", "vs_float"):
                if ref in res:
                    row |= {f"{ref}_{k}": res[ref][k] for k in ("mse", "psnr", "cosine")}
            out.append(row)
    return out


def quality_table(results: list[dict]) -> list[str]:
    lines = [
        "| workload | (F,P) | PSNR vs int8 (dB) | cosine vs int8 | PSNR vs float (dB) | cosine vs float |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        f = f"{r['vs_float_psnr']:.1f} | {r['vs_float_cosine']:.5f}" if "vs_float_psnr" in r else "- | -"
        lines.append(
            f"| {r['workload']} | ({r['F']},{r['P']}) | {r['vs_int8_psnr']:.1f} | {r['vs_int8_cosine']:.5f} | {f} |"
        )
    return lines


def pv_rows(grid=(4, 16, 16), seed=0) -> list[dict]:
    """The V-reuse candidates' saved nibble multiplies on ``P V`` per motion
    and thresholds (:func:`kaleido.golden.ops.pv_op_counts`), and the beats
    the 4x4 array saves with the chosen rule (:func:`kaleido.model.pv_cycles`)."""
    from ..config import KaleidoConfig
    from ..golden.ops import pv_op_counts
    from ..model import pv_cycles

    out = []
    for motion in ("slow", "fast"):
        w = synthetic_video("hunyuan", grid, motion, seed)
        for F, P in THRESHOLDS[:-1]:
            counts = pv_op_counts(w.v, w.grid, w.split, F, P)
            timing = pv_cycles(w.v, w.grid, w.split, KaleidoConfig.one_array(split=w.split, F=F, P=P))
            out.append(
                {
                    "motion": motion,
                    "F": F,
                    "P": P,
                    **{f"saved_{k}": 1 - v / counts["dense"] for k, v in counts.items() if k != "dense"},
                    "saved_beats": 1 - timing.beats / timing.dense_beats,
                    "pv_speedup": timing.speedup,
                }
            )
    return out


def pv_table(results: list[dict]) -> list[str]:
    lines = [
        "| motion | (F,P) | multiplies saved, FULL only | multiplies saved, FULL + PARTIAL | "
        "beats saved on the 4x4 array | P V speedup (cycles) |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['motion']} | ({r['F']},{r['P']}) | {r['saved_full_only']:.1%} | {r['saved_full_partial']:.1%} | "
        f"{r['saved_beats']:.1%} | {r['pv_speedup']:.3f}x |"
        for r in results
    ]
    return lines


def table(results: list[dict]) -> list[str]:
    lines = [
        "| workload | P bits | P PSNR (dB) | worst row (dB) | P cosine | O PSNR (dB) | O cosine |",
        "|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['workload']} | {r['p_bits']} | {r['p_psnr_db']:.1f} | {r['p_worst_row_psnr_db']:.1f} | "
        f"{r['p_cosine']:.6f} | {r['o_psnr_db']:.1f} | {r['o_cosine']:.6f} |"
        for r in results
    ]
    return lines


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="build/bench/softmax.json")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    results = rows(seed=args.seed)
    quality = quality_rows(seed=args.seed)
    pv = pv_rows(seed=args.seed)
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"softmax_error": results, "attention_quality": quality, "pv_ops": pv}, f, indent=2)
    base = os.path.splitext(args.out)[0]
    for suffix, data in (("", results), ("_quality", quality), ("_pv_ops", pv)):
        fields = sorted({k for r in data for k in r}, key=lambda k: list(data[0]).index(k) if k in data[0] else 99)
        with open(f"{base}{suffix}.csv", "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=fields)
            writer.writeheader()
            writer.writerows(data)
    print("\n".join(table(results)))
    print()
    print("\n".join(quality_table(quality)))
    print()
    print("\n".join(pv_table(pv)))


if __name__ == "__main__":
    main()
