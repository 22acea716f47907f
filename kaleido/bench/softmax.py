"""The fixed-point softmax's own error (issue 12): PSNR and cosine of its
probabilities against float softmax over the same int8 scores (reuse off),
and of the attention output ``O`` against float attention with the same
int8 scores and V, per workload kind and P width.

``python -m kaleido.bench.softmax [--out build/bench/softmax.json]`` writes
JSON and CSV and prints the markdown table of docs/SOFTMAX.md.
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

__all__ = ["rows", "main"]


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
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(results, f, indent=2)
    with open(os.path.splitext(args.out)[0] + ".csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(results[0]))
        writer.writeheader()
        writer.writerows(results)
    print("\n".join(table(results)))


if __name__ == "__main__":
    main()
