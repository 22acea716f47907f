"""``kaleido`` command line: ``kaleido perf`` runs the cycle model on one
head, ``kaleido sweep`` on every head of a directory (Dask; docs/SWEEP.md),
``kaleido capture`` dumps heads from a diffusers transformer (the optional
``.[capture]`` extra; docs/CAPTURE.md), ``kaleido explore`` runs the design
exploration (:mod:`kaleido.explore`), ``kaleido calibrate`` chooses a head's
per-group thresholds (:mod:`kaleido.calibrate`). ``--design paper`` selects
the paper's design everywhere (default: the project's, docs/EXPLORATION.md).

Examples::

    kaleido perf --preset hunyuan --grid 4,8,8 --motion slow --variant full
    kaleido perf --design paper --grid 4,8,8
    kaleido calibrate --grid 4,8,8 --motion fast --out build/calibrate/head.json
    kaleido perf --grid 4,8,8 --motion slow --thresholds build/calibrate/head.json
    kaleido explore --quick
    kaleido perf --workload my_head.npz --F 5 --P 4 --accumulators 4 --json out.json
    kaleido sweep heads/ --out build/sweep --workers 2 --thresholds 5,3 5,4 --accumulators 3 4
    kaleido capture --tiny wan --out heads/ --steps 2
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time

from .checks import parse_array_size
from .clock import REPORT, clocks, time_speedup
from .config import add_config_arguments, config_from_args
from .efficiency import summary_line
from .headroom import COMPUTE_STAGES, headroom, headroom_line
from .progress import batch_progress

#: the longest head whose P ``kaleido perf`` computes for small-P pairing
#: (``golden.softmax.head_p``, the whole ``N x N``: 3.8 GB peak at 8,192 tokens)
PV_PAIRS_TOKENS = 8192

__all__ = ["main"]


def _grid(text):
    try:
        parts = tuple(int(x) for x in text.replace("x", ",").split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"grid must be T,H,W (three integers), not {text!r}") from None
    if len(parts) != 3 or min(parts) < 1:
        raise argparse.ArgumentTypeError(f"grid must be three positive integers T,H,W, not {text!r}")
    return parts


def _array_size(text):
    try:
        return parse_array_size(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _perf_parser(sub):
    p = sub.add_parser(
        "perf",
        help="cycle model of one attention head (Q K^T, softmax, P V)",
        description="Run the cycle-level performance model on a workload.",
    )
    src = _perf_workload_arguments(p)
    _perf_linear_arguments(p)
    _perf_hardware_arguments(p, src)
    _perf_output_arguments(p)
    p.set_defaults(func=_perf)


def _perf_workload_arguments(p):
    """The workload group: a file or a synthetic head, and the op."""
    src = p.add_argument_group("workload (a file, or a synthetic one)")
    src.add_argument("--workload", metavar="FILE.npz", help="exchange-format .npz (q, k, v, grid, split)")
    src.add_argument("--grid", type=_grid, default=(4, 8, 8), help="T,H,W latent tokens (default 4,8,8)")
    src.add_argument("--motion", default="slow", choices=["slow", "fast"])
    src.add_argument("--seed", type=int, default=0)
    src.add_argument("--spread", type=float, default=None, help="Q/K channel-magnitude sigma")
    src.add_argument(
        "--op",
        default="attention",
        choices=["attention", "linear"],
        help="attention (a head: Q K^T, softmax, P V) or linear (a layer X W with reuse on the activations)",
    )
    return src


def _perf_linear_arguments(p):
    """The linear layer group (``--op linear``)."""
    lin = p.add_argument_group("linear layer (--op linear; synthetic video activations, seeded weights)")
    lin.add_argument("--d-model", type=int, default=256, help="activation width d_in (default 256)")
    lin.add_argument(
        "--d-out", type=int, default=None, help="output features (default 4 x d_model: an MLP up-projection)"
    )
    lin.add_argument("--window-axis", default="t", choices=["t", "y", "x"], help="activation window axis (default t)")
    lin.add_argument("--theta1", type=float, default=2.0, help="eq. 5 FULL threshold, int8 units (default 2.0)")
    lin.add_argument("--theta2", type=float, default=8.0, help="eq. 5 PARTIAL threshold (default 8.0)")


def _perf_hardware_arguments(p, src):
    """The hardware group; the workload group's ``--preset`` follows
    ``--variant`` (the usage line's order)."""
    hw = p.add_argument_group("hardware")
    hw.add_argument("--variant", default="full", choices=["pe", "pe-sh", "pe-m", "full"])
    add_config_arguments(src)  # --preset: the workload's split, and the configuration's name
    add_config_arguments(hw, ("F", "P", "batch", "lookahead", "accumulators"), preset=False)
    hw.add_argument(
        "--thresholds",
        metavar="FILE|Ft,Pt,Fx,Px,Fy,Py",
        default=None,
        help="per-group Q K^T thresholds for this head: a kaleido calibrate JSON or six integers "
        "(default: the design's)",
    )
    hw.add_argument("--arrays", type=int, default=1)
    hw.add_argument("--array-size", type=_array_size, default=(4, 4), help="N or RxC pair groups")
    hw.add_argument(
        "--pass-gap",
        type=int,
        default=None,
        help="idle beats between passes (default 0: the RTL's double-buffered PassDispatcher, and the bare "
        "array; 1 models the single-buffered dispatcher it replaced; small arrays take 0 or 1)",
    )
    hw.add_argument(
        "--engine",
        action="store_true",
        help="also the integrated engine's exact cycles (scheduling not hidden, load, output; "
        "the S banks' holds; docs/ENGINE.md); needs one 4x4 array and at most 4096 tokens",
    )
    hw.add_argument(
        "--sub-arrays",
        type=_array_size,
        default=None,
        metavar="N|RxC",
        help="the 4x4 passes on small arrays of RxC behind a shared queue (issue 14, docs/ENGINE.md "
        "'Small arrays'; 4 or 4x4: one array of the pass's shape; default: the design's, 1x1 in default)",
    )
    hw.add_argument(
        "--pv-pairs",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="small-P pairing on P V (issue 14, docs/DESIGN.md): two P V beats whose P is below 16 as one; "
        "the P V cycles then depend on the head's P (computed here); default: the design's, on in default",
    )


def _perf_output_arguments(p):
    """The output group: files, quality, energy and synthesis inputs."""
    out = p.add_argument_group("output")
    out.add_argument("--json", metavar="PATH")
    out.add_argument("--csv", metavar="PATH")
    out.add_argument(
        "--quality",
        choices=["auto", "on", "off"],
        default="auto",
        help="attention-output quality (auto: when N <= 4096)",
    )
    out.add_argument(
        "--energy-table",
        metavar="FILE.toml",
        default=None,
        help="per-event energies (default kaleido/data/energy_45nm.toml: Horowitz 45 nm scaled to 16 nm; "
        "docs/ENERGY.md)",
    )
    out.add_argument(
        "--sram-model",
        choices=["flat", "sized"],
        default="flat",
        help="SRAM bytes in the energy figures: flat (the table's per-byte energy) or sized (each buffer at its "
        "own macro's energy, kaleido/data/sram_16nm.toml; docs/ENERGY.md 'Buffers by size'); both are printed",
    )
    out.add_argument(
        "--synth-report",
        metavar="PATH",
        default=REPORT,
        help=f"make synth report for the clocks, areas and efficiency (default {REPORT}; "
        "without it, the committed docs/SYNTH_TABLE.md and docs/report/synth_report.json)",
    )


def _load_workload(args):
    from .golden.workloads import DEFAULT_SPREAD, load, synthetic_video

    if args.workload:
        return load(args.workload)
    spread = DEFAULT_SPREAD if args.spread is None else args.spread
    return synthetic_video(args.preset, args.grid, args.motion, args.seed, spread=spread)


def _perf_linear(args) -> int:
    from .config import LinearReuse
    from .golden.linear import linear_quality
    from .golden.workloads import linear_weights, video_activations
    from .model import linear_cycles

    if args.workload:
        raise ValueError(
            "--op linear runs synthetic activations (--grid, --motion, --seed, --d-model); "
            f"a workload file holds attention heads, not {args.workload!r}"
        )
    if args.d_model < 1:
        raise ValueError(f"--d-model must be a positive integer, not {args.d_model}")
    d_out = 4 * args.d_model if args.d_out is None else args.d_out
    if d_out < 1:
        raise ValueError(f"--d-out must be a positive integer, not {d_out}")
    rule = LinearReuse(args.window_axis, args.theta1, args.theta2)
    cfg = config_from_args(args, array_rows=args.array_size[0], array_cols=args.array_size[1])
    if args.sub_arrays is not None:
        cfg = cfg.replace(sub_arrays=tuple(args.sub_arrays))
    X, _, _ = video_activations(args.grid, args.motion, args.seed, d_model=args.d_model)
    W, _, _ = linear_weights(args.d_model, d_out, args.seed)
    t0 = time.time()
    r = linear_cycles(X, d_out, args.grid, cfg, rule, variant=args.variant, arrays=args.arrays, pass_gap=args.pass_gap)
    result = r.as_dict()
    result["op"] = "linear"
    result["layer"] = {"n": int(X.shape[0]), "d_in": args.d_model, "d_out": d_out, "grid": list(args.grid)}
    result["rule"] = {"axis": rule.axis, "theta1": rule.theta1, "theta2": rule.theta2, "limits": list(rule.limits)}
    if args.quality == "on" or (args.quality == "auto" and X.shape[0] <= 4096):
        result["quality"] = {"vs_int8": linear_quality(X, W, args.grid, rule)}
    result["model_seconds"] = time.time() - t0
    print(f"linear layer: N={X.shape[0]} d_in={args.d_model} d_out={d_out} grid={tuple(args.grid)} ({args.motion})")
    print(f"reuse: windows of 2 along {rule.axis}, theta1 {rule.theta1}, theta2 {rule.theta2}")
    print(f"cycles {r.cycles:,}  dense {r.dense_cycles:,}  speedup {r.speedup:.3f}x  utilization {r.utilization:.1%}")
    print(f"ops: dense {r.ops['dense']:,}  oracle {r.ops['oracle']:,}  hw {r.ops['hw']:,}")
    if "quality" in result:
        q = result["quality"]["vs_int8"]
        print(f"quality vs int8 X W: PSNR {q['psnr']:.1f} dB, cosine {q['cosine']:.5f}")
    if args.json:
        os.makedirs(os.path.dirname(args.json) or ".", exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    return 0


def _design_label(cfg) -> str:
    """The named design, its build with other run-time thresholds, or custom."""
    if cfg.design:
        return cfg.design
    return f"{cfg.hardware_design} (run-time thresholds)" if cfg.hardware_design else "custom"


def _efficiency(args, cfg, result: dict, energy: dict) -> dict:
    """The yardstick of :mod:`kaleido.efficiency` for a named design's whole
    attention (the engine's Q K^T with ``--engine``), or ``{"error": why}``."""
    from .efficiency import design_efficiency

    if args.variant != "full":
        return {"error": f"efficiency is measured with every block (variant full), not {args.variant!r}"}
    whole = result.get("attention_engine") or result["attention"]
    path = None if args.synth_report == REPORT else args.synth_report
    # the thresholds are a run-time input: a named design's build at its clock and area
    return design_efficiency(cfg.hardware_design, whole["speedup"], energy["kaleido_pj"] / energy["dense_pj"], path)


def _efficiency_columns(eff: dict) -> dict:
    """The CSV row's efficiency columns (empty where not computed)."""
    if "error" in eff:
        return {k: "" for k in ("time_speedup_core", "area_ratio_core", "area_ratio_chip", "tpa_core", "tpa_chip")}
    return {
        "time_speedup_core": eff["time_speedup"],
        "area_ratio_core": eff["area_ratio"]["core"],
        "area_ratio_chip": eff["area_ratio"]["chip"],
        "tpa_core": eff["throughput_per_area"]["core"],
        "tpa_chip": eff["throughput_per_area"]["chip"],
    }


def _perf(args):
    """``kaleido perf``: one head's cycles, energy and quality (or one linear layer's)."""
    if args.pass_gap is not None and args.pass_gap < 0:
        raise ValueError(f"--pass-gap must be >= 0, not {args.pass_gap}")
    if args.op == "linear":
        return _perf_linear(args)

    from .model import run_model

    w = _load_workload(args)
    cfg, pass_gap = _perf_config(args, w)
    quality = _perf_quality(args, w, cfg)
    t0 = time.time()
    r = run_model(
        w.q,
        w.k,
        w.grid,
        w.split,
        cfg,
        variant=args.variant,
        arrays=args.arrays,
        pass_gap=pass_gap,
        progress=batch_progress(),
        quality=quality,
    )
    result = r.as_dict()
    result["workload"] = _workload_entry(w)
    result["config"] = _config_entry(args, cfg, pass_gap)
    engine = _perf_engine(args, w, cfg, result)
    pv = _perf_stages(w, cfg, r, result, engine)
    energy, clock = _perf_cost(args, w, cfg, r, pv, result)
    result["model_seconds"] = time.time() - t0
    _print_perf_cycles(args, w, cfg, r, result, clock)
    _print_perf_energy(energy)
    if engine:
        _print_perf_engine(cfg, engine, result)
    eff = result["efficiency"]
    print(summary_line(eff) if "error" not in eff else f"efficiency: not computed ({eff['error']})")
    print(headroom_line(result["headroom"]))
    if quality:
        print(f"quality vs int8: PSNR {quality['vs_int8']['psnr']:.1f} dB, cosine {quality['vs_int8']['cosine']:.5f}")
    if args.json:
        os.makedirs(os.path.dirname(args.json) or ".", exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    if args.csv:
        _write_perf_csv(args.csv, r, result, energy)
    return 0


def _perf_config(args, w):
    """The head's configuration from the arguments and its pass gap;
    refuses small-P pairing on a head too long for its P."""
    from .model import check_arrays

    cfg = config_from_args(args, split=w.split, array_rows=args.array_size[0], array_cols=args.array_size[1])
    if args.thresholds is not None:
        from .calibrate import load_thresholds

        cfg = cfg.replace(group_thresholds=load_thresholds(args.thresholds))
    if getattr(args, "pv_pairs", None) is not None:
        cfg = cfg.replace(pv_pairs=args.pv_pairs)
    if args.sub_arrays is not None:
        cfg = cfg.replace(sub_arrays=tuple(args.sub_arrays))
    pass_gap = check_arrays(cfg, args.arrays, args.pass_gap)
    if cfg.pv_pairs and w.n > PV_PAIRS_TOKENS:  # before minutes of Q K^T, not a MemoryError after them
        raise ValueError(
            f"small-P pairing counts P V from the head's whole P ({w.n:,} x {w.n:,} fixed-point "
            f"probabilities); kaleido perf computes it for at most {PV_PAIRS_TOKENS:,} tokens: "
            "--no-pv-pairs or --design one_array for this head"
        )
    return cfg, pass_gap


def _perf_quality(args, w, cfg):
    """The attention output's quality metrics, or None when ``--quality``
    skips them."""
    from .efficiency import head_quality

    if args.quality == "on" or (args.quality == "auto" and w.n <= 4096):
        return head_quality(w.q, w.k, w.v, w.grid, w.split, cfg, scales=w.scales, reference=w.reference)
    return None


def _workload_entry(w) -> dict:
    """The result's ``workload``: shape and scalar metadata."""
    return {
        "n": w.n,
        "d": w.d,
        "grid": list(w.grid),
        "split": list(w.split),
        **{k: v for k, v in w.meta.items() if isinstance(v, (int, float, str, bool))},
    }


def _config_entry(args, cfg, pass_gap) -> dict:
    """The result's ``config``."""
    return {
        "F": cfg.F,
        "P": cfg.P,
        "thresholds": [list(x) for x in cfg.thresholds],
        "design": cfg.design,
        "hardware_design": cfg.hardware_design,
        "batch": cfg.batch,
        "lookahead": cfg.lookahead,
        "accumulators": cfg.accumulators,
        "array": [cfg.array_rows, cfg.array_cols],
        "arrays": args.arrays,
        "sub_arrays": None if cfg.sub_arrays is None else list(cfg.sub_arrays),
        "pass_gap": pass_gap,
        "pv_pairs": cfg.pv_pairs,
    }


def _perf_engine(args, w, cfg, result: dict):
    """With ``--engine``, the integrated engine's cycles (also in
    ``result["engine"]``); else None."""
    engine = None
    if args.engine:
        from .model import engine_cycles

        if args.arrays != 1 or (cfg.array_rows, cfg.array_cols) != (4, 4):
            raise ValueError(
                f"--engine models the engine's one 4x4 array, not {args.arrays} x {cfg.array_rows}x{cfg.array_cols}"
            )
        engine = engine_cycles(w.q, w.k, w.grid, w.split, cfg)
        result["engine"] = engine.as_dict()
    return engine


def _perf_stages(w, cfg, r, result: dict, engine):
    """Adds the softmax and P V stages and the whole attention (with the
    engine's Q K^T too) to ``result``; returns the P V cycles."""
    from .model import attention_stages, pv_cycles

    P = None
    if cfg.pv_pairs:
        from .golden.softmax import head_p

        P = head_p(w.q, w.k, w.grid, w.split, cfg.thresholds, scales=w.scales)
    pv = pv_cycles(w.v, w.grid, w.split, cfg, P=P)
    result.update(attention_stages(r, w.v, w.grid, w.split, cfg, pv=pv))
    if engine:  # whole attention with the engine's Q K^T (its compute cycles, on its arrays) in the qk stage
        rest = [result["stages"][k] for k in ("softmax", "pv")]
        cycles = engine.compute + sum(st["cycles"] for st in rest)
        dense = engine.dense_cycles + sum(st["dense_cycles"] for st in rest)
        result["attention_engine"] = {"cycles": cycles, "dense_cycles": dense, "speedup": dense / cycles}
    return pv


def _perf_cost(args, w, cfg, r, pv, result: dict):
    """Adds the energy, the clocks' time and the efficiency to ``result``;
    returns the energy and the clocks."""
    from .energy import attention_energy
    from .model import VARIANTS

    energy = attention_energy(
        w.q, w.k, w.v, w.grid, w.split, cfg, r, args.energy_table, pv=pv, sram_model=args.sram_model
    )
    result["energy"] = energy
    scheduler, matcher = VARIANTS[args.variant]
    clock = clocks(scheduler, matcher, args.synth_report)
    result["time"] = {**clock.as_dict(), "speedup": time_speedup(r.speedup, clock)}
    result["efficiency"] = _efficiency(args, cfg, result, energy)
    ops = {s: result["stages"][s]["ops"] for s in COMPUTE_STAGES}
    result["headroom"] = headroom({**energy, "ops": ops}, result["efficiency"])
    return energy, clock


def _print_perf_cycles(args, w, cfg, r, result: dict, clock) -> None:
    """The workload, the design, the cycles, time and stages."""
    print(f"workload: N={w.n} d={w.d} grid={w.grid} split={w.split}{' (synthetic)' if w.meta.get('synthetic') else ''}")
    print(
        f"variant {r.variant}, "
        + (
            f"{cfg.n_arrays} {cfg.sub_shape[0]}x{cfg.sub_shape[1]} arrays behind a shared queue "
            f"({cfg.array_rows}x{cfg.array_cols} passes in blocks), "
            if cfg.sub_arrays
            else f"{args.arrays} x {cfg.array_rows}x{cfg.array_cols} array(s), "
        )
        + f"(F,P) t {cfg.thresholds[0]} x {cfg.thresholds[1]} y {cfg.thresholds[2]} (P V F={cfg.F}), "
        f"{cfg.accumulators} accumulators, design {_design_label(cfg)}"
        + (", small-P pairing on P V" if cfg.pv_pairs else "")
    )
    print(f"cycles {r.cycles:,}  dense {r.dense_cycles:,}  speedup {r.speedup:.3f}x  utilization {r.utilization:.1%}")
    print(f"ops: dense {r.ops['dense']:,}  oracle {r.ops['oracle']:,}  hw {r.ops['hw']:,}")
    print(
        f"time: speedup {result['time']['speedup']:.3f}x (cycles {r.speedup:.3f}x x clocks "
        f"{clock.kaleido_mhz:.1f} MHz core, limited by {clock.limited_by} / {clock.dense_mhz:.1f} MHz dense; "
        f"Fmax from {clock.source}"
        + ("; the blocks without pairing, which lowers the PE's Fmax 6.5 %, docs/DESIGN.md)" if cfg.pv_pairs else ")")
    )
    for name, st in result["stages"].items():
        print(
            f"stage {name:8s} cycles {st['cycles']:>12,}  dense {st['dense_cycles']:>12,}  "
            f"ops dense {st['ops']['dense']:,}  oracle {st['ops']['oracle']:,}  hw {st['ops']['hw']:,}"
        )
    att = result["attention"]
    print(
        f"attention: cycles {att['cycles']:,}  dense {att['dense_cycles']:,}  speedup {att['speedup']:.3f}x "
        "(Q K^T, softmax, P V in turn)"
    )


def _print_perf_energy(energy: dict) -> None:
    """The energy estimate: totals, SRAM models, stages and kinds."""
    print(
        f"energy: Kaleido {energy['kaleido_pj'] / 1e6:,.3f} uJ  dense {energy['dense_pj'] / 1e6:,.3f} uJ  "
        f"savings {energy['savings']:.3f}x (Q K^T alone {energy['qk_savings']:.3f}x; estimates at "
        f"{energy['table']['node_nm']} nm, docs/ENERGY.md)"
    )
    sram = energy["sram"]
    print(
        f"  SRAM {sram['model']}; flat: savings {sram['flat']['savings']:.3f}x "
        f"(Q K^T {sram['flat']['qk_savings']:.3f}x), "
        f"sized by buffer: {sram['sized']['savings']:.3f}x (Q K^T {sram['sized']['qk_savings']:.3f}x)"
    )
    for name, e in energy["by_stage"].items():
        print(f"  energy {name:8s} Kaleido {e['kaleido'] / 1e6:>10,.3f} uJ  dense {e['dense'] / 1e6:>10,.3f} uJ")
    print(
        "  by kind (Kaleido / dense, uJ): "
        + ", ".join(
            f"{k} {e['kaleido'] / 1e6:,.3f}/{e['dense'] / 1e6:,.3f}"
            for k, e in energy["by_kind"].items()
            if e["kaleido"] or e["dense"]
        )
    )


def _print_perf_engine(cfg, engine, result: dict) -> None:
    """The integrated engine's cycles and the attention with its Q K^T."""
    sub = result["config"]["sub_arrays"]
    # with small arrays, engine.passes is one 4x4 array's (engine_cycles); the queue's beats are not summed
    where = f"{cfg.n_arrays} {sub[0]}x{sub[1]} arrays, queue idle" if sub else "passes"
    busy = f"{engine.stall:,}" if sub else f"{engine.passes:,}, dispatcher idle {engine.stall:,}"
    print(
        f"engine: compute {engine.compute:,} ({where} {busy})  speedup {engine.speedup:.3f}x  "
        f"whole head {engine.total:,} (load {engine.load:,}, output {engine.output:,})"
    )
    ae = result["attention_engine"]
    print(
        f"attention with the engine's Q K^T: cycles {ae['cycles']:,}  dense {ae['dense_cycles']:,}  "
        f"speedup {ae['speedup']:.3f}x (its compute, softmax, P V in turn)"
    )


def _write_perf_csv(path: str, r, result: dict, energy: dict) -> None:
    """``--csv``: one row of the head's figures."""
    row = {
        "cycles": r.cycles,
        "dense_cycles": r.dense_cycles,
        "speedup": r.speedup,
        "time_speedup": result["time"]["speedup"],
        "utilization": r.utilization,
        **{f"{k}_cycles": v["cycles"] for k, v in result["stages"].items()},
        "attention_cycles": result["attention"]["cycles"],
        "attention_dense_cycles": result["attention"]["dense_cycles"],
        "attention_speedup": result["attention"]["speedup"],
        "energy_kaleido_pj": energy["kaleido_pj"],
        "energy_dense_pj": energy["dense_pj"],
        "energy_savings": energy["savings"],
        **_efficiency_columns(result["efficiency"]),
        **{f"ops_{k}": v for k, v in r.ops.items()},
        **{f"beats_{k}": v["beats"] for k, v in r.phases.items()},
        "variant": r.variant,
    }
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=list(row))
        wr.writeheader()
        wr.writerow(row)


def _explore_parser(sub):
    from .explore import add_arguments, run

    p = sub.add_parser(
        "explore",
        help="design exploration: rank candidates by speedup at a PSNR floor (issue 14)",
        description="Run candidate designs on the tuning and held-out workloads with the cycle model, "
        "rank them by whole-attention speedup at a quality floor; docs/EXPLORATION.md.",
    )
    add_arguments(p)
    p.set_defaults(func=run)


def _calibrate_parser(sub):
    from .calibrate import FLOOR, MARGIN

    p = sub.add_parser(
        "calibrate",
        help="choose a head's per-group thresholds at a PSNR floor plus a margin (issue 14)",
        description="Run the adaptive threshold search on calibration input for one head (a file or a "
        "synthetic head) and write the chosen per-group (F, P) as JSON for kaleido perf --thresholds and "
        "the engine's run-time thresholds port; docs/EXPLORATION.md, 'Calibration'.",
    )
    src = p.add_argument_group("calibration input (a file, or a synthetic head)")
    src.add_argument("--workload", metavar="FILE.npz", help="exchange-format .npz (q, k, v, grid, split)")
    src.add_argument("--grid", type=_grid, default=(4, 8, 8), help="T,H,W latent tokens (default 4,8,8)")
    src.add_argument("--motion", default="slow", choices=["slow", "fast"])
    src.add_argument("--seed", type=int, default=0)
    src.add_argument("--spread", type=float, default=None, help="Q/K channel-magnitude sigma")
    add_config_arguments(src)
    p.add_argument("--floor", type=float, default=FLOOR, help=f"PSNR floor in dB (default {FLOOR:g})")
    p.add_argument("--margin", type=float, default=MARGIN, help=f"dB above the floor (default {MARGIN:g})")
    p.add_argument("--out", default=os.path.join("build", "calibrate", "thresholds.json"), help="JSON to write")
    p.set_defaults(func=_calibrate)


def _calibrate(args) -> int:
    from .calibrate import calibrate, save_thresholds

    w = _load_workload(args)
    cfg = config_from_args(args, split=w.split)
    t0 = time.time()
    result = calibrate(w.q, w.k, w.v, w.grid, w.split, cfg, scales=w.scales, floor=args.floor, margin=args.margin)
    result["workload"] = args.workload or {
        "preset": args.preset,
        "grid": list(args.grid),
        "motion": args.motion,
        "seed": args.seed,
        "spread": args.spread,
    }
    save_thresholds(result, args.out)
    t, x, y = result["thresholds"]
    print(
        f"thresholds t {tuple(t)} x {tuple(x)} y {tuple(y)}: {result['psnr']:.1f} dB on the calibration input "
        f"(floor {args.floor:g} + margin {args.margin:g}), Q K^T {result['qk_speedup']:.3f}x, attention "
        f"{result['attention_speedup']:.3f}x ({len(result['search'])} points, {time.time() - t0:.1f} s) -> {args.out}"
    )
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(prog="kaleido", description="Kaleido accelerator tools")
    sub = ap.add_subparsers(dest="command", required=True)
    _perf_parser(sub)
    from .sweep import add_parser as _sweep_parser

    _sweep_parser(sub)
    from .capture import add_parser as _capture_parser

    _capture_parser(sub)
    _explore_parser(sub)
    _calibrate_parser(sub)
    args = ap.parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, TypeError, FileNotFoundError) as err:
        ap.exit(2, f"kaleido {args.command}: error: {err}\n")


if __name__ == "__main__":
    sys.exit(main())
