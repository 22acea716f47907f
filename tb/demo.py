"""``make sim``: the attention core demo. Builds
:class:`~kaleido.hdl.core.KaleidoAttentionCore` (a build serves any head of
its size: the head's data is read at run time), runs the head on the chosen simulator (the testbench
only starts it and waits for ``busy`` to fall: ``tb/cocotb_core.py``),
checks O bit for bit against the tiled golden model and prints the core's
cycles, the cycle model's, the dense core's (``variant="dense"``: the
same buffers, ``DenseEngine`` and ``DensePvArray``, by
``core_cycles(..., variant="dense")``) and the speedup. Writes
``build/sim/result.json`` (the issue's keys, the head's thresholds, and
``sim_seconds``, the head's run, and ``wall_seconds``, emission, build and
run).

``python -m kaleido.tb.demo [--sim verilator|icarus] [--grid T,H,W]
[--preset hunyuan|wan] [--seed S] [--tile t,y,x] [--port-bytes B]
[--latency L] [--sub-arrays N] [--pv-pairs] [--thresholds FILE |
--calibrate] [--waves]``; the default is a 1,024-token HunyuanVideo head (grid
4x16x16, split 16/56/56) on Verilator.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from kaleido.checks import check_grid, check_group_thresholds, parse_array_size
from kaleido.efficiency import design_efficiency, summary_line
from kaleido.tb.runner import SIMULATORS


def _ints(text: str, what: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.split(","))
    except ValueError:
        raise SystemExit(f"error: {what} must be comma-separated integers, not {text!r}") from None


def reference(w, grid, config, core, thresholds=None) -> tuple:
    """O of the tiled golden model, and the models' figures: ``model`` (the
    core's cycles by the cycle model), ``dense`` (the dense core's),
    ``energy_ratio`` (the head's energy over the dense core's) and
    ``psnr`` (O against int8 attention, dB); ``thresholds``: the head
    command's Q K^T thresholds (default ``config.thresholds``)."""
    from kaleido.efficiency import head_energy_ratio, head_psnr
    from kaleido.model import core_cycles
    from kaleido.tb.core_io import core_reference

    ref = core_reference(w.q, w.k, w.v, grid, w.scales, config, core, thresholds=thresholds)
    timed = config if thresholds is None else config.replace(group_thresholds=thresholds)
    model = core_cycles(w.q, w.k, w.v, grid, timed, core, scales=w.scales)
    dense = core_cycles(w.q, w.k, w.v, grid, config, core, variant="dense")
    energy = head_energy_ratio(w.q, w.k, w.v, grid, config.split, timed, scales=w.scales)
    psnr = head_psnr(w.q, w.k, w.v, grid, config.split, timed, scales=w.scales)
    return ref, {"model": model, "dense": dense, "energy_ratio": energy, "psnr": psnr}


def _parser() -> argparse.ArgumentParser:
    """:func:`main`'s arguments."""
    ap = argparse.ArgumentParser(description="Kaleido attention core demo (cocotb)")
    ap.add_argument(
        "--sim", default="verilator", help=f"one of {', '.join(SIMULATORS)} (default: verilator, the faster)"
    )
    ap.add_argument("--grid", default="4,16,16", help="T,H,W of the head's latent grid (default 4,16,16: 1,024 tokens)")
    ap.add_argument("--preset", default="hunyuan", help="the channel split: hunyuan (16,56,56) or wan (44,42,42)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--tile", default=None, help="t,y,x of a tile (default: CoreConfig's 2,4,8)")
    ap.add_argument("--port-bytes", type=int, default=None, help="read port width in bytes (default 16)")
    ap.add_argument("--latency", type=int, default=None, help="memory latency in cycles (default 32)")
    ap.add_argument("--waves", action="store_true", help="write a waveform into the build directory")
    ap.add_argument(
        "--design",
        default="default",
        help="the named design (kaleido.config.DESIGNS): default (sixteen 1x1 arrays, small-P pairing), "
        "one_array (the same reuse on one 4x4 array, P V unpaired) or paper (default: default)",
    )
    ap.add_argument(
        "--sub-arrays",
        default=None,
        help="N or RxC, the size of each small array: the Q K^T engine's passes on small arrays behind a "
        "shared queue (issue 14; 1 = sixteen 1x1 arrays, 4 = one 4x4 array; default: the design's)",
    )
    ap.add_argument(
        "--pv-pairs",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="small-P pairing on P V (issue 14, docs/DESIGN.md): two beats whose P is below 16 as one "
        "(default: the design's)",
    )
    ap.add_argument(
        "--thresholds",
        default=None,
        help="the head's Q K^T thresholds, sent in its command to the engine's run-time port: a kaleido "
        "calibrate JSON file or 'Ft,Pt,Fx,Px,Fy,Py' (default: the design's, built in)",
    )
    ap.add_argument(
        "--calibrate",
        action="store_true",
        help="choose the head's Q K^T thresholds with kaleido calibrate on the same layer seeing the other "
        "motion (40 dB + 1.5), and send them to the engine's run-time port (make sim CALIBRATE=1)",
    )
    ap.add_argument(
        "--s-buffers",
        type=int,
        default=None,
        help="S tiles in the Q K^T engine: 2 (default) reads one while the next computes; 1 is the first core's",
    )
    return ap


def _head(args: argparse.Namespace) -> tuple:
    """The result's path (an earlier result removed), then the head from
    the arguments, checked before anything is emitted or built: ``(path,
    grid, config, sub_arrays, thresholds, core, tokens, workload)``; a bad
    argument stops with its message."""
    from kaleido.config import DESIGNS, PRESETS, CoreConfig, KaleidoConfig
    from kaleido.golden.workloads import synthetic_video
    from kaleido.hdl.core import check_core_input

    out_dir = pathlib.Path("build") / "sim"
    out_dir.mkdir(parents=True, exist_ok=True)
    result_path = out_dir / "result.json"
    result_path.unlink(missing_ok=True)
    try:
        if args.sim not in SIMULATORS:
            raise ValueError(f"--sim must be one of {SIMULATORS}, not {args.sim!r}")
        if args.preset not in PRESETS:
            raise ValueError(f"--preset must be one of {sorted(PRESETS)}, not {args.preset!r}")
        grid = check_grid(_ints(args.grid, "--grid"))
        if args.design not in DESIGNS:
            raise ValueError(f"--design must be one of {sorted(DESIGNS)}, not {args.design!r}")
        config = KaleidoConfig.preset(args.preset, args.design)
        if args.sub_arrays:
            config = config.replace(sub_arrays=parse_array_size(args.sub_arrays, "--sub-arrays"))
        if args.pv_pairs is not None:
            config = config.replace(pv_pairs=args.pv_pairs)
        sub = config.sub_arrays
        thresholds = run_thresholds(args, grid, config)
        fields: dict = {}
        if args.tile:
            fields["tile"] = _ints(args.tile, "--tile")
        if args.port_bytes is not None:
            fields["port_bytes"] = args.port_bytes
        if args.latency is not None:
            fields["mem_latency"] = args.latency
        if args.s_buffers is not None:
            fields["s_buffers"] = args.s_buffers
        core = CoreConfig(**fields)
        n = int(np.prod(grid))
        if n > core.max_tokens:  # before making the head's tensors
            raise ValueError(f"the head has {n} tokens; the core addresses at most {core.max_tokens} (max_tokens)")
        w = synthetic_video(args.preset, grid, "slow", args.seed)
        check_core_input(w.q, w.k, w.v, grid, config.split, config, core)
    except (TypeError, ValueError) as e:
        raise SystemExit(f"error: {e}") from None
    return result_path, grid, config, sub, thresholds, core, n, w


def run_thresholds(args: argparse.Namespace, grid, config) -> tuple | None:
    """The head's run-time thresholds: ``--thresholds``, those ``--calibrate``
    chooses (on :func:`kaleido.calibrate.calibration_head`), or ``None``
    (the build's)."""
    from kaleido.calibrate import calibrate, calibration_head, load_thresholds

    if args.thresholds is not None and args.calibrate:
        raise ValueError(f"--calibrate chooses the thresholds: drop --thresholds {args.thresholds!r}")
    if args.thresholds is not None:
        return load_thresholds(args.thresholds)
    if not args.calibrate:
        return None
    cal = calibration_head(args.preset, grid, "slow", args.seed)
    chosen = calibrate(cal.q, cal.k, cal.v, cal.grid, cal.split, config, scales=cal.scales)
    print(
        f"calibrated on the head's other motion (fast): thresholds {chosen['thresholds']}, "
        f"{chosen['psnr']:.1f} dB there (floor {chosen['floor']:.0f} + {chosen['margin']} dB)",
        flush=True,
    )
    return check_group_thresholds(chosen["thresholds"])


def _announce(args: argparse.Namespace, n: int, grid, config, sub, thresholds, core) -> str:
    """Print the head and how it runs; the harness (``"binary"`` or ``"cocotb"``)."""
    arrays = "one 4x4 array" if sub is None else f"{config.n_arrays} {sub[0]}x{sub[1]} arrays"
    arrays += "; P V pairs small P" if config.pv_pairs else ""
    arrays += f"; thresholds {thresholds} at run time" if thresholds else ""
    print(
        f"head: {n} tokens (grid {grid}), split {config.split}, tile {core.tile}, seed {args.seed}; Q K^T on {arrays}",
        flush=True,
    )
    # on Verilator a plain binary runs the head (no cocotb main loop around the model: 1.4x faster);
    # waveforms and Icarus go through cocotb
    harness = "binary" if args.sim == "verilator" and not args.waves else "cocotb"
    how = "a plain Verilator binary" if harness == "binary" else "cocotb"
    print(
        f"building and running the core on {args.sim} ({how}; a first build takes a few minutes); "
        "the golden and cycle models run beside it",
        flush=True,
    )
    return harness


def _simulate(args: argparse.Namespace, w, grid, config, core, thresholds, harness: str) -> tuple:
    """Run the head on the simulator, the models (:func:`reference`) beside
    it: ``(res, ref, models, wall)``, ``models`` :func:`reference`'s figures."""
    from kaleido.tb.core_io import run_core

    t0 = time.time()
    with ProcessPoolExecutor(1) as pool:  # the models on the second core while the simulator runs
        models = pool.submit(reference, w, grid, config, core, thresholds)
        res = run_core(
            args.sim, w.q, w.k, w.v, grid, w.scales, config, core, waves=args.waves, thresholds=thresholds,
            harness=harness,
        )  # fmt: skip
        ref, figures = models.result()
    wall = time.time() - t0
    if "seconds" in res:
        print(
            f"  done in {wall:.0f} s: {res['seconds']:.0f} s simulating the head, {wall - res['seconds']:.0f} s "
            "emitting, building (none if unchanged) and starting the simulator",
            flush=True,
        )
    return res, ref, figures, wall


def _result(args, n: int, grid, config, thresholds, res: dict, models: dict, wall, exact: bool) -> dict:
    """``build/sim/result.json``'s entries (``models``: :func:`reference`'s figures)."""
    from kaleido.tb.core_io import head_thresholds

    model, dense = models["model"], models["dense"]
    result = {
        "tokens": n,
        "grid": list(grid),
        "split": list(config.split),
        "simulator": args.sim,
        "design": config.design,
        "sub_arrays": None if config.sub_arrays is None else list(config.sub_arrays),
        "pv_pairs": config.pv_pairs,
        "thresholds": [list(x) for x in head_thresholds(config, thresholds)],
        "bit_exact": exact,
        "cycles": res["cycles"],
        "model_cycles": model,
        "dense_cycles": dense,
        "speedup": round(dense / res["cycles"], 4),
        "psnr_vs_int8": round(models["psnr"], 2),
        "sim_cycles_per_s": round(res["cycles"] / res["seconds"]),
        "sim_seconds": round(res["seconds"], 2),
        "wall_seconds": round(wall, 1),
    }
    if "cxx" in res:  # the plain binary's C++ compiler
        result["cxx"] = res["cxx"]
    result["efficiency"] = design_efficiency(config.design, dense / res["cycles"], models["energy_ratio"])
    return result


def _report(args, result_path: pathlib.Path, result: dict, res: dict, exact: bool) -> None:
    """Print the comparison with the models, the quality, the efficiency and the waveform."""
    model, dense = result["model_cycles"], result["dense_cycles"]
    print(f"  O bit-exact against the golden model: {'yes' if exact else 'NO'}")
    print(f"  core cycles      {res['cycles']:>12,}")
    print(f"  model cycles     {model:>12,}  ({'equal' if model == res['cycles'] else 'DIFFERENT'})")
    print(f"  dense core       {dense:>12,}  (DenseEngine, DensePvArray: docs/CORE.md)")
    print(f"  speedup          {dense / res['cycles']:>12.3f}x")
    print(f"  quality          {result['psnr_vs_int8']:>12.1f} dB  (O against int8 attention; the floor is 40)")
    eff = result["efficiency"]
    print("  " + (summary_line(eff) if "error" not in eff else f"efficiency: not computed ({eff['error']})"))
    print(f"  simulated at {result['sim_cycles_per_s']:,} cycles/s; {result_path}")
    if args.waves:
        waves = sorted(pathlib.Path(res["build_dir"]).glob("*.fst")) + sorted(
            pathlib.Path(res["build_dir"]).glob("*.vcd")
        )
        print(f"  waveform: {waves[0] if waves else 'not written (see ' + res['build_dir'] + ')'}")


def main(argv=None) -> int:
    """``make sim`` (the module's docstring): 0 when O is bit-exact and the
    core's cycles are the cycle model's."""
    args = _parser().parse_args(argv)
    result_path, grid, config, sub, thresholds, core, n, w = _head(args)
    harness = _announce(args, n, grid, config, sub, thresholds, core)
    res, ref, models, wall = _simulate(args, w, grid, config, core, thresholds, harness)
    if res["failed"] or "o" not in res:
        print(f"the simulation FAILED, see {res['build_dir']}", file=sys.stderr)
        return 1
    exact = bool(np.array_equal(res["o"], ref))
    result = _result(args, n, grid, config, thresholds, res, models, wall, exact)
    result_path.write_text(json.dumps(result, indent=2) + "\n")
    _report(args, result_path, result, res, exact)
    return 0 if exact and models["model"] == res["cycles"] else 1


if __name__ == "__main__":
    sys.exit(main())
