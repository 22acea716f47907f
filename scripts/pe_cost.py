"""What each feature of the Kaleido PE costs (issue 43, lever 1): the PE of
each named design and the PE with one feature taken away, beside the dense
MAC PE (with and without its product register), through Yosys (generic
cells, flip-flops, CMOS transistors) and ECP5 place and route (Fmax, every
port registered).

    .venv/bin/python scripts/pe_cost.py [--no-fmax] [NAME ...]

writes ``build/pe_cost/<name>/`` and ``build/pe_cost/pe_cost.json`` and
prints one line a variant. Research code: the product's flow is
``make synth``.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import re
import subprocess
import sys

from amaranth.back import verilog

from kaleido.config import KaleidoConfig
from kaleido.hdl.baseline import MacPE
from kaleido.hdl.pe import KaleidoPE
from kaleido.hdl.pv_pe import PvPE
from kaleido.hdl.qk_pe import QkPE
from kaleido.synth.flow import RegisteredIO, tool_path

ROOT = pathlib.Path("build/pe_cost")
LOGIC = (
    "synth -flatten -top {top}; delete t:$scopeinfo; tee -o generic.json stat -json; "
    "dfflegalize -cell $_DFF_P_ 01; abc -g cmos2; tee -o cmos.txt stat -tech cmos"
)


def variants() -> dict:
    """name -> factory of the PE."""
    default = KaleidoConfig()
    return {
        "mac_1stage": lambda: MacPE(default.acc_width, product_register=False),
        "mac": lambda: MacPE(default.acc_width),
        "kaleido_default": lambda: KaleidoPE(default),
        "kaleido_one_array": lambda: KaleidoPE(KaleidoConfig.one_array()),
        "kaleido_paper": lambda: KaleidoPE(KaleidoConfig.paper()),
        "kaleido_3acc_pairs": lambda: KaleidoPE(default.replace(accumulators=3)),
        "qk_default": lambda: QkPE(default),
        "qk_paper": lambda: QkPE(KaleidoConfig.paper()),
        "pv_default": lambda: PvPE(default),
    }


def _run(args: list, cwd: pathlib.Path, log: str) -> str:
    proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True)
    (cwd / log).write_text(proc.stdout + proc.stderr)
    if proc.returncode:
        raise RuntimeError(f"{args[0]} failed in {cwd}: see {cwd / log}")
    return proc.stdout


def measure(name: str, make, fmax: bool) -> dict:
    work = ROOT / name
    work.mkdir(parents=True, exist_ok=True)
    (work / "pe.v").write_text(verilog.convert(make(), name="pe", emit_src=False))
    _run([tool_path("yosys"), "-p", "read_verilog pe.v; " + LOGIC.format(top="pe")], work, "logic.log")
    text = (work / "generic.json").read_text()
    stat = json.loads(text[text.index("{") : text.rindex("}") + 1])
    by_type = next(iter(stat["modules"].values()))["num_cells_by_type"]
    ffs = sum(int(n) for t, n in by_type.items() if "DFF" in t.upper())
    transistors = int(re.findall(r"Estimated number of transistors:\s+(\d+)", (work / "cmos.txt").read_text())[-1])
    out: dict = {"transistors": transistors, "flip_flop_cells": ffs, "fmax_mhz": None}
    if fmax:
        (work / "wrapped.v").write_text(verilog.convert(RegisteredIO(make()), name="wrapped", emit_src=False))
        _run(
            [tool_path("yosys"), "-p", "read_verilog wrapped.v; synth_ecp5 -top wrapped -json wrapped.json"],
            work,
            "ecp5.log",
        )
        log = _run(
            [tool_path("nextpnr-ecp5"), "--85k", "--json", "wrapped.json", "--out-of-context", "--freq", "400",
             "--timing-allow-fail", "--seed", "1"],
            work,
            "nextpnr.log",
        )  # fmt: skip
        text = log + (work / "nextpnr.log").read_text()
        out["fmax_mhz"] = float(re.findall(r"Max frequency for clock\s+'[^']*':\s+([0-9.]+)\s+MHz", text)[-1])
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*")
    ap.add_argument("--no-fmax", action="store_true")
    args = ap.parse_args(argv)
    table = variants()
    names = args.names or list(table)
    unknown = [n for n in names if n not in table]
    if unknown:
        print(f"unknown variant(s) {unknown}; known: {sorted(table)}", file=sys.stderr)
        return 2
    results = {}
    for name in names:
        results[name] = measure(name, table[name], not args.no_fmax)
        r = results[name]
        print(f"{name:20s} {r['transistors']:>8,} transistors {r['flip_flop_cells']:>4} FF cells  Fmax {r['fmax_mhz']}")
    (ROOT / "pe_cost.json").write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
