"""``make sim``: the engine demo. Builds :class:`KaleidoEngine` for a small
synthetic video head, runs it under cocotb on the chosen simulator, checks
``S`` against ``reuse_scores`` and prints the measured cycles, the dense
array's cycles and the speedup.

``python -m kaleido.tb.demo [--sim icarus|verilator] [--grid T,H,W]
[--preset NAME] [--split a,b,c] [--batch B] [--seed S] [--waves]``;
the default is the HunyuanVideo split (16, 56, 56) at BATCH 16 on a
2x4x4 grid (about 1.5 min on Icarus including the build).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

from kaleido.checks import check_grid
from kaleido.config import add_config_arguments, config_from_args
from kaleido.hdl.engine import check_engine
from kaleido.tb.runner import SIMULATORS, run_cocotb


def _ints(text: str, what: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.split(","))
    except ValueError:
        raise SystemExit(f"error: {what} must be comma-separated integers, not {text!r}") from None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Kaleido engine demo (cocotb)")
    ap.add_argument("--sim", default="icarus", help=f"one of {', '.join(SIMULATORS)}")
    ap.add_argument("--grid", default="2,4,4", help="T,H,W of the latent grid (an elaboration parameter)")
    add_config_arguments(ap, ("batch",))
    ap.add_argument("--split", default=None, help="d_t,d_x,d_y instead of the preset's split")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--thresholds",
        default=None,
        metavar="FILE|Ft,Pt,Fx,Px,Fy,Py",
        help="the head's per-group thresholds on the engine's run-time port: a kaleido calibrate JSON or six "
        "integers (default: the design's)",
    )
    ap.add_argument(
        "--waves",
        action="store_true",
        help="write a waveform into the build directory (FST on Icarus, VCD on Verilator)",
    )
    args = ap.parse_args(argv)
    out = pathlib.Path("build") / "sim" / f"demo_{args.sim}.txt"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.unlink(missing_ok=True)
    if args.sim not in SIMULATORS:
        raise SystemExit(f"error: --sim must be one of {SIMULATORS}, not {args.sim!r}")
    try:
        grid = check_grid(_ints(args.grid, "--grid"))
        cfg = config_from_args(args)
        if args.split:
            cfg = cfg.replace(split=_ints(args.split, "--split"))
        check_engine(cfg, grid)
        env = {"KALEIDO_SEED": str(args.seed), "KALEIDO_DEMO_OUT": str(out.resolve())}
        if args.thresholds is not None:
            from kaleido.calibrate import load_thresholds

            env["KALEIDO_THRESHOLDS"] = json.dumps(load_thresholds(args.thresholds))
    except (TypeError, ValueError) as e:
        raise SystemExit(f"error: {e}") from None
    print(
        f"building the engine for grid {grid}, split {cfg.split}, batch {cfg.batch} on {args.sim} "
        "(the first build of a configuration takes a while; later runs reuse it)",
        flush=True,
    )
    res = run_cocotb(
        args.sim,
        "engine",
        cfg,
        "kaleido.tb.cocotb_engine",
        testcase="demo",
        grid=grid,
        waves=args.waves,
        extra_env=env,
    )
    if out.exists():
        print(out.read_text(), end="")
    if args.waves:
        waves = sorted(pathlib.Path(res["build_dir"]).glob("*.fst")) + sorted(
            pathlib.Path(res["build_dir"]).glob("*.vcd")
        )
        print(f"  waveform: {waves[0] if waves else 'not written (see ' + res['build_dir'] + ')'}")
    if res["failed"] or res["tests"] != 1:
        print(f"demo FAILED ({res['failed']} of {res['tests']} tests), see {res['build_dir']}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
