"""The default design's array shape on the efficiency frontier (issue 43,
levers 2 and 5): the default design's reuse (thresholds, four
accumulators, small-P pairing on P V) on every way of building its 16 Q
K^T PEs (``sub_arrays``: sixteen 1x1 arrays, eight 2x1, four 4x1 or 2x2,
two 4x2, ... or one 4x4 array), each core synthesized hierarchically as
``make synth`` builds the cores (:class:`kaleido.synth.core.CoreRun`, the
same module cache), its exact core cycles (``core_cycles``, equal to the
RTL's) and its energy on ``make sim``'s head, against the dense core of
the synthesis report.

    .venv/bin/python scripts/shape_frontier.py [--shapes 1x1,2x1,4x1,2x2] [--jobs 2]

writes ``build/shape_frontier/frontier.json`` and ``.csv`` and prints a
table. The clock of every shape is the report's core clock rule with the
default design's own blocks (its array set measured at 1x1); a shape's
array set is not placed and routed here, so the table names the clock it
assumes. Research code: the product's figures are ``make synth`` and
``make report``.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import csv
import json
import math
import pathlib

from amaranth.back import verilog

from kaleido.bench.efficiency_report import HEAD
from kaleido.config import CoreConfig, KaleidoConfig
from kaleido.efficiency import core_chip_area_ratio, core_clock, head_energy, head_psnr, load_synth
from kaleido.golden.workloads import synthetic_video
from kaleido.model import core_cycles
from kaleido.synth.core import core_area

OUT = pathlib.Path("build/shape_frontier")


def shape_dims(shape: str) -> tuple[int, int]:
    """``(R, C)`` of ``RxC``; a SystemExit naming ``shape`` unless R and C
    are each 1, 2 or 4."""
    try:
        r, c = (int(x) for x in shape.split("x"))
    except ValueError:
        r = c = 0
    if r not in (1, 2, 4) or c not in (1, 2, 4):
        raise SystemExit(f"error: a shape is RxC with R and C of 1, 2 or 4, not {shape!r}")
    return r, c


def shape_config(shape: str) -> KaleidoConfig:
    """The default design's configuration on ``shape`` (``RxC`` sub-arrays,
    or ``4x4``: one array)."""
    r, c = shape_dims(shape)
    sub = None if (r, c) == (4, 4) else (r, c)
    return KaleidoConfig.preset(HEAD[0], "default", sub_arrays=sub)


def core_text(shape: str) -> str:
    """The emitted Verilog of the default core on ``shape``."""
    from kaleido.hdl.core import KaleidoAttentionCore

    core = KaleidoAttentionCore(shape_config(shape), CoreConfig(), variant="kaleido")
    return verilog.convert(core, name="core", emit_src=False)


def synthesize(shapes: list[str], jobs: int) -> dict:
    """``{shape: core entry}`` (hierarchical, cached like ``make synth``'s)."""
    from kaleido.synth.core import CoreRun
    from kaleido.synth.hier import Cache

    texts = {s: core_text(s) for s in shapes}
    with concurrent.futures.ProcessPoolExecutor(jobs) as pool:
        run = CoreRun(tuple(shapes), str(OUT), pool, Cache("build/synth/cache"), verilog=texts)
        got = run.collect(print)
    if got["failures"]:
        raise RuntimeError(f"synthesis failed: {got['failures']}")
    return got["entries"]


def row(shape: str, entry: dict, w, synth) -> dict:
    """One shape's cycles, energy, PSNR, area and efficiency against the
    dense core of ``synth``."""
    config = shape_config(shape)
    cycles = core_cycles(w.q, w.k, w.v, w.grid, config, CoreConfig(), scales=w.scales)
    dense = core_cycles(w.q, w.k, w.v, w.grid, config, CoreConfig(), variant="dense")
    energy = head_energy(w.q, w.k, w.v, w.grid, w.split, config, scales=w.scales)
    area = core_area(entry)
    dense_area = synth.core["dense"]["area_mm2"]
    clock, dense_clock = core_clock("default", synth), core_clock("dense", synth)
    time_speedup = dense / cycles * clock["mhz"] / dense_clock["mhz"]
    area_ratio = area["total"] / dense_area["total"]
    chip_ratio = core_chip_area_ratio(entry["transistors"], synth)
    return {
        "shape": shape,
        "arrays": 16 // math.prod(shape_dims(shape)),
        "cycles": cycles,
        "dense_cycles": dense,
        "cycle_speedup": dense / cycles,
        "clock_mhz": clock["mhz"],
        "clock_limited_by": clock["limited_by"],
        "dense_clock_mhz": dense_clock["mhz"],
        "time_speedup": time_speedup,
        "transistors": entry["transistors"],
        "flip_flops": entry["flip_flops"],
        "logic_mm2": area["logic"],
        "area_ratio": area_ratio,
        "throughput_per_area": time_speedup / area_ratio,
        "chip_area_ratio": chip_ratio,
        "throughput_per_area_chip": time_speedup / chip_ratio,
        "energy_ratio": energy["kaleido_pj"] / energy["dense_pj"],
        "psnr_db": head_psnr(w.q, w.k, w.v, w.grid, w.split, config, scales=w.scales),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="1x1,2x1,1x2,4x1,2x2,4x2,4x4")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    shapes = [s for s in args.shapes.split(",") if s]
    for s in shapes:
        shape_dims(s)
    OUT.mkdir(parents=True, exist_ok=True)
    entries = synthesize(shapes, args.jobs)
    synth = load_synth()
    preset, grid, motion, seed = HEAD
    w = synthetic_video(preset, grid, motion, seed)
    rows = [row(s, entries[s], w, synth) for s in shapes]
    (OUT / "frontier.json").write_text(json.dumps({"source": synth.source, "rows": rows}, indent=2) + "\n")
    with open(OUT / "frontier.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(
        "| shape | arrays | cycle speedup | time speedup | transistors | area / dense: core, chip "
        "| per mm^2: core, chip | energy | PSNR |"
    )
    for x in rows:
        print(
            f"| {x['shape']} | {x['arrays']} | {x['cycle_speedup']:.3f}x | {x['time_speedup']:.3f}x | "
            f"{x['transistors']:,} | {x['area_ratio']:.3f}x, {x['chip_area_ratio']:.3f}x | "
            f"{x['throughput_per_area']:.3f}x, {x['throughput_per_area_chip']:.3f}x | "
            f"{x['energy_ratio']:.3f} | {x['psnr_db']:.1f} dB |"
        )
    print(f"-> {OUT / 'frontier.json'}, {OUT / 'frontier.csv'} (dense core and clocks: {synth.source['report']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
