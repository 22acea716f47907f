"""Linear-layer reuse (issue 17): the window axis and eq. 5's thresholds,
measured. Per motion, axis and threshold pair, an MLP up-projection
(d_model 256 -> 1024) of synthetic video activations: multiplies saved,
speedup over a dense array (cycle model, full variant) and the layer
output's PSNR against int8 ``X W`` without reuse.

``python -m kaleido.bench.linear [--out build/bench/linear.json]`` writes
JSON and CSV and prints the markdown table of docs/LINEAR.md.
"""

from __future__ import annotations

import argparse
import csv
import json
import os

from ..config import KaleidoConfig, LinearReuse
from ..golden.linear import linear_quality
from ..golden.workloads import linear_weights, video_activations
from ..model import linear_cycles

__all__ = ["rows", "table", "main"]

#: eq. 5 thresholds swept (theta1, theta2), int8 units
THRESHOLDS = [(1.0, 4.0), (2.0, 8.0), (3.0, 8.0), (4.0, 12.0)]


def rows(grid=(4, 16, 16), seed=0, d_model=256) -> list[dict]:
    out = []
    W, _, _ = linear_weights(d_model, 4 * d_model, seed)
    for motion in ("slow", "fast"):
        X, _, _ = video_activations(grid, motion, seed, d_model=d_model)
        for axis in ("t", "y", "x"):
            for t1, t2 in THRESHOLDS:
                rule = LinearReuse(axis, t1, t2)
                r = linear_cycles(X, W.shape[1], grid, KaleidoConfig.one_array(), rule)
                q = linear_quality(X, W, grid, rule)
                out.append(
                    {
                        "motion": motion,
                        "axis": axis,
                        "theta1": t1,
                        "theta2": t2,
                        "saved": 1 - r.ops["hw"] / r.ops["dense"],
                        "speedup": r.speedup,
                        "utilization": r.utilization,
                        "psnr_db": q["psnr"],
                        "cosine": q["cosine"],
                    }
                )
    return out


def window_rows(grid=(4, 16, 16), seed=0, d_model=256) -> list[dict]:
    """Windows longer than two (golden only: the array holds pairs): the
    activations a FULL follower could reuse and the layer output's PSNR, at
    theta1 = 2 along t."""
    from ..golden.attention import metrics
    from ..golden.linear import window_savings
    from ..golden.reuse import exact_matmul

    W, _, _ = linear_weights(d_model, 4 * d_model, seed)
    out = []
    for motion in ("slow", "fast"):
        X, _, _ = video_activations(grid, motion, seed, d_model=d_model)
        ref = exact_matmul(X, W).astype(float)
        for w in (2, 3, 4, 8):
            s = window_savings(X, grid, "t", w, 2.0)
            q = metrics(exact_matmul(s["effective"], W).astype(float), ref)
            out.append({"motion": motion, "w": w, "reusable": s["reusable"], "psnr_db": q["psnr"]})
    return out


def table(results: list[dict]) -> list[str]:
    lines = [
        "| motion | axis | (theta1, theta2) | multiplies saved | speedup | utilization | PSNR vs int8 (dB) |",
        "|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['motion']} | {r['axis']} | ({r['theta1']:g}, {r['theta2']:g}) | {r['saved']:.1%} | "
        f"{r['speedup']:.3f}x | {r['utilization']:.1%} | {r['psnr_db']:.1f} |"
        for r in results
    ]
    return lines


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="build/bench/linear.json")
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
    windows = window_rows(seed=args.seed)
    with open(os.path.splitext(args.out)[0] + "_windows.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(windows[0]))
        writer.writeheader()
        writer.writerows(windows)
    print()
    print("| motion | window w | activations reusable | PSNR vs int8 (dB) |")
    print("|---|---|---|---|")
    for r in windows:
        print(f"| {r['motion']} | {r['w']} | {r['reusable']:.1%} | {r['psnr_db']:.1f} |")


if __name__ == "__main__":
    main()
