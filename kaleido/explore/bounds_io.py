"""The op bounds as tables and files: thresholds written and read back
(:func:`fmt_thresholds`, :func:`parse_thresholds`), the markdown of the
bounds and their ceilings (:func:`bounds_table`), ``bounds.json``,
``bounds.csv`` and ``bounds.md`` (:func:`write_bounds`,
:func:`write_bounds_csv`, :func:`read_bounds_csv`), and the bound rows a
report reads (:func:`bound_rows`: a run's, else the committed
:data:`BOUNDS_CSV`)."""

from __future__ import annotations

import csv
import json
import numbers
import os
import re

from ..calibrate import FLOOR
from .ceilings import CALIBRATION_MARGIN, calibrated_ceiling, fixed_ceiling, stacked_ceiling

__all__ = [
    "fmt_thresholds",
    "parse_thresholds",
    "bounds_table",
    "BOUNDS_FIELDS",
    "write_bounds",
    "write_bounds_csv",
    "read_bounds_csv",
    "BOUNDS_CSV",
    "bound_rows",
]


def fmt_thresholds(th) -> str:
    """``(F,P)`` when the three groups agree, else the three, t x y:
    ``(7,4) (7,4) (6,4)``. Takes one pair too (rows written before the
    window bounds kept three)."""
    th = [tuple(th)] if len(th) == 2 and all(isinstance(x, numbers.Integral) for x in th) else [tuple(x) for x in th]
    return f"({th[0][0]},{th[0][1]})" if len(set(th)) == 1 else " ".join(f"({F},{P})" for F, P in th)


def bounds_table(wb: list[dict], floor: float = FLOOR) -> list[str]:
    """Markdown of :func:`window_bounds`' rows and, when they carry every
    lever, :func:`stacked_ceiling` at ``floor``."""
    lines = [
        "Op bounds at 100 % utilization (no PE implements windows longer than pairs, row-side partial "
        "reuse or delta-coded query rows; small-P pairing is built, its halves are its bound):",
        "",
        "| set | head | w | (F,P) | Q K^T bound | ... with row-side partial reuse | P V bound | "
        "... with small-P halves | ... and delta rows | attention bound | ... with small-P halves | "
        "... every lever | PSNR |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        *[
            f"| {b.get('set', 'tuning')} | {b['workload']} | {b['w']} | "
            f"{fmt_thresholds(b['thresholds'])} | "
            f"{b['qk_bound']:.3f}x | {b.get('qk_bound_row_partial', float('nan')):.3f}x | "
            f"{b['pv_bound']:.3f}x | {b.get('pv_bound_small', float('nan')):.3f}x | "
            f"{b.get('pv_bound_small_delta', float('nan')):.3f}x | {b['attention_bound']:.3f}x | "
            f"{b.get('attention_bound_small', float('nan')):.3f}x | "
            f"{b.get('attention_bound_stacked', float('nan')):.3f}x | {b['psnr']:.1f} dB |"
            for b in wb
        ],
    ]
    if all("attention_bound_stacked" in b for b in wb):
        lines += _oracle_ceiling_lines(wb, floor)
        lines += _fixed_ceiling_lines(wb, floor)
        lines += _calibrated_ceiling_lines(wb, floor)
    return lines


def _oracle_ceiling_lines(wb: list[dict], floor: float) -> list[str]:
    """:func:`stacked_ceiling`'s table: each head's best bound, chosen per head."""
    ceiling = stacked_ceiling(wb, floor)
    lines = [
        "",
        f"The ceiling at {floor:g} dB: each head's best bound over the windows and "
        "thresholds above that hold the floor (chosen per head, an oracle):",
        "",
        "| set | head | every lever | w, (F,P), PSNR | ... over a dense array pairing small P | "
        "Q K^T levers, small-P halves on P V | w, (F,P), PSNR |",
        "|---|---|---|---|---|---|---|",
    ]
    for group, c in ceiling.items():
        for head, h in c["heads"].items():
            st, sm = h["attention_bound_stacked"], h["attention_bound_small"]
            vd = f"{h['vs_dense_small']:.3f}x" if "vs_dense_small" in h else "-"
            lines.append(
                f"| {group} | {head} | {st[0]:.3f}x | {st[1]}, {fmt_thresholds(st[2])}, {st[3]:.1f} dB | "
                f"{vd} | "
                f"{sm[0]:.3f}x | {sm[1]}, {fmt_thresholds(sm[2])}, {sm[3]:.1f} dB |"
            )

        def agg(a: dict, n: int = len(c["heads"])) -> str:
            return f"{a['geomean']:.3f}x ({a['min']:.3f}x), {a['at_least_2x']} of {n} at 2x"

        vd = agg(c["vs_dense_small"]) if "vs_dense_small" in c else "-"
        lines.append(
            f"| {group} | geomean (slowest) | {agg(c['attention_bound_stacked'])} | | {vd} | "
            f"{agg(c['attention_bound_small'])} | |"
        )
    return lines


def _fixed_ceiling_lines(wb: list[dict], floor: float) -> list[str]:
    """:func:`fixed_ceiling`'s table: one window and thresholds for every head."""
    fixed = fixed_ceiling(wb, floor)
    lines = [
        "",
        "Every lever with one window and thresholds for every head (no oracle), the fastest on the tuning "
        f"set that holds {floor:g} dB on every tuning head, and on every head of every set:",
        "",
        "| holds the floor on | w, (F,P) | set | every lever | heads at 2x | PSNR min | heads below the floor |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, f in fixed.items():
        for group in (g for g in f if isinstance(f[g], dict)):
            a = f[group]
            lines.append(
                f"| {'the tuning set' if name == 'tuning' else 'every set'} | {f['w']}, "
                f"{fmt_thresholds(f['thresholds'])} | {group} | {a['geomean']:.3f}x ({a['min']:.3f}x) | "
                f"{a['at_least_2x']} of {a['heads']} | {a['psnr_min']:.1f} dB | {a['below_floor']} |"
            )
    return lines


def _calibrated_ceiling_lines(wb: list[dict], floor: float) -> list[str]:
    """:func:`calibrated_ceiling`'s table: per head, the choice on its calibration head."""
    cal = calibrated_ceiling(wb, floor)
    lines = [
        "",
        f"Every lever as a deployed design would choose it: per head, the window and thresholds with the "
        f"largest bound on its calibration head (the same layer, the other motion) at {floor:g} + "
        f"{CALIBRATION_MARGIN:g} dB there:",
        "",
        "| set | head | every lever | w, (F,P), PSNR |",
        "|---|---|---|---|",
    ]
    for group, g in cal.items():
        for head, h in g["heads"].items():
            lines.append(f"| {group} | {head} | {h[0]:.3f}x | {h[1]}, {fmt_thresholds(h[2])}, {h[3]:.1f} dB |")
        if g["heads"]:
            lines.append(
                f"| {group} | geomean (slowest) | {g['geomean']:.3f}x ({g['min']:.3f}x), {g['at_least_2x']} of "
                f"{len(g['heads'])} at 2x | PSNR min {g['psnr_min']:.1f} dB, {g['below_floor']} below the floor"
                + (f", {g['missing']} without a choice |" if g["missing"] else " |")
            )
    return lines


#: the columns of ``bounds.csv`` (:func:`write_bounds`), one row per head, window and thresholds
BOUNDS_FIELDS = (
    "set",
    "workload",
    "calibration",
    "w",
    "thresholds",
    "qk_bound",
    "qk_bound_row_partial",
    "pv_bound",
    "pv_bound_small",
    "pv_bound_small_delta",
    "pv_dense_bound_small",
    "attention_bound",
    "attention_bound_small",
    "attention_bound_stacked",
    "attention_bound_stacked_vs_dense_small",
    "psnr",
)


def write_bounds_csv(wb: list[dict], path: str) -> str:
    """:func:`window_bounds`' rows as CSV (:data:`BOUNDS_FIELDS`, the
    thresholds as :func:`fmt_thresholds` writes them), for
    :func:`read_bounds_csv`."""
    with open(path, "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=list(BOUNDS_FIELDS), extrasaction="ignore")
        wr.writeheader()
        for b in wb:
            wr.writerow({**b, "thresholds": fmt_thresholds(b["thresholds"])})
    return path


def write_bounds(wb: list[dict], out: str, floor: float = FLOOR) -> list[str]:
    """``bounds.json``, ``bounds.csv`` (:data:`BOUNDS_FIELDS`) and
    ``bounds.md`` (:func:`bounds_table`) of :func:`window_bounds`' rows in
    ``out``."""
    os.makedirs(out, exist_ok=True)
    paths = [os.path.join(out, x) for x in ("bounds.json", "bounds.csv", "bounds.md")]
    with open(paths[0], "w") as f:
        json.dump({"floor_db": floor, "window_bounds": wb}, f, indent=1, default=float)
    write_bounds_csv(wb, paths[1])
    with open(paths[2], "w") as f:
        f.write("\n".join(bounds_table(wb, floor)) + "\n")
    return paths


def read_bounds_csv(path: str) -> list[dict]:
    """:func:`window_bounds`' rows back from a ``bounds.csv``."""
    text = ("set", "workload", "calibration")
    with open(path) as f:
        rows = list(csv.DictReader(f))
    missing = [k for k in BOUNDS_FIELDS if rows and k not in rows[0]]
    if missing:
        raise ValueError(f"{path} lacks the bounds columns {missing}")

    return [
        {
            k: r[k]
            if k in text
            else int(r[k])
            if k == "w"
            else parse_thresholds(r[k], path)
            if k == "thresholds"
            else float(r[k])
            for k in BOUNDS_FIELDS
        }
        for r in rows
    ]


def parse_thresholds(cell: str, where: str = "thresholds") -> list:
    """A CSV cell of :func:`fmt_thresholds` back: three ``[F, P]`` (one
    pair is every group's); ``where`` names the file in the error."""
    fp = [[int(F), int(P)] for F, P in re.findall(r"\((\d+),(\d+)\)", cell)]
    if len(fp) not in (1, 3):
        raise ValueError(f"{where}: thresholds must be (F,P) or three of them, not {cell!r}")
    return fp * 3 if len(fp) == 1 else fp


#: the committed op bounds (``kaleido explore --bounds-only``'s ``bounds.csv``, rewritten by ``make report``)
BOUNDS_CSV = os.path.join("docs", "report", "exploration_bounds.csv")


def bound_rows(out: str, csv_path: str = BOUNDS_CSV) -> tuple[list[dict], str]:
    """:func:`window_bounds`' rows and where they came from: ``OUT/bounds.json``,
    else ``OUT/results.json``'s when they carry every lever, else the
    committed ``csv_path`` (default :data:`BOUNDS_CSV`)."""
    for path in (os.path.join(out, "bounds.json"), os.path.join(out, "results.json")):
        if os.path.exists(path):
            with open(path) as f:
                wb = json.load(f).get("window_bounds", [])
            if wb and all("attention_bound_stacked" in b for b in wb):
                return wb, path
    if os.path.exists(csv_path):
        return read_bounds_csv(csv_path), csv_path
    raise ValueError(f"no op bounds to read: none in {out!r} and no {csv_path} (run kaleido explore --bounds-only)")
