"""An external dense reference: SCALE-Sim v3 (issue 15, item 4).

SCALE-Sim (PyPI ``scalesim``, 3.0.0) is the systolic-array simulator
architects use. It runs in its own venv (``make scalesim-venv`` ->
``build/scalesim-venv``: 3.0.0 fails under numpy 2 with "only 0-dimensional
arrays can be converted", so the venv pins numpy < 2 with the rest of its
dependencies in ``scripts/scalesim-constraints.txt``) through
``scripts/scalesim_gemm.py``, a subprocess: the project never imports it.

The GEMMs are the dense baseline's: ``Q K^T`` (M = N = tokens, K = d) and
``P V`` (M = tokens, N = d, K = tokens) on one 4x4 output-stationary
array. SCALE-Sim's OS cycle count is ``folds * (K + R + C - 2) - 1`` with
``folds = ceil(M/R) ceil(N/C)`` (:func:`fold_formula`; it equals every run
here): each fold pays its own fill and drain skew. The cycle model's dense
array streams folds back to back (a PE's drain register frees it for the
next fold's first beat), so it pays ``R + C - 1`` once:
``folds * K + R + C - 1`` (``P V``: one more, the dispatcher's register).
"""

from __future__ import annotations

import concurrent.futures as futures
import csv
import json
import math
import os
import pathlib
import subprocess

__all__ = ["VENV", "SCRIPT", "CSV", "fold_formula", "dense_formula", "available", "run_gemms", "read_csv"]

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
#: the SCALE-Sim venv, relative to the working directory (``make scalesim-venv``)
VENV = os.path.join("build", "scalesim-venv")
SCRIPT = ROOT / "scripts" / "scalesim_gemm.py"
#: the committed results (``make report`` rewrites it when the venv exists)
CSV = os.path.join("docs", "report", "scalesim.csv")


def _check(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer, not {value!r}")
    return value


def fold_formula(M: int, N: int, K: int, R: int = 4, C: int = 4) -> int:
    """SCALE-Sim v3's output-stationary cycles for an ``M x N x K`` GEMM on
    an ``R x C`` array: ``ceil(M/R) ceil(N/C) (K + R + C - 2) - 1``."""
    M, N, K, R, C = (_check(n, v) for n, v in zip("MNKRC", (M, N, K, R, C), strict=True))
    return math.ceil(M / R) * math.ceil(N / C) * (K + R + C - 2) - 1


def dense_formula(M: int, N: int, K: int, R: int = 4, C: int = 4) -> int:
    """The cycle model's dense output-stationary array (``run_model``'s
    ``dense_cycles`` for ``Q K^T``): ``ceil(M/R) ceil(N/C) K + R + C - 1``."""
    M, N, K, R, C = (_check(n, v) for n, v in zip("MNKRC", (M, N, K, R, C), strict=True))
    return math.ceil(M / R) * math.ceil(N / C) * K + R + C - 1


def available(venv: str | None = None) -> bool:
    """Whether the SCALE-Sim venv (default :data:`VENV`) exists."""
    return os.path.exists(os.path.join(VENV if venv is None else venv, "bin", "python"))


def _run_one(python: str, rows: int, cols: int, spec: str) -> dict:
    out = subprocess.run([python, str(SCRIPT), str(rows), str(cols), spec], capture_output=True, text=True)
    if out.returncode != 0:
        tail = "\n".join((out.stderr or out.stdout).strip().splitlines()[-10:])
        raise RuntimeError(f"SCALE-Sim failed on {spec} (exit {out.returncode}):\n{tail}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_gemms(
    gemms: list[tuple[str, int, int, int]], rows: int = 4, cols: int = 4, venv: str | None = None, jobs: int = 2
):
    """SCALE-Sim on ``(name, M, N, K)`` GEMMs (``jobs`` at a time); per GEMM
    ``{"name", "M", "N", "K", "cycles", "utilization"}``."""
    venv = VENV if venv is None else venv
    if not available(venv):
        raise FileNotFoundError(f"no SCALE-Sim venv at {venv!r} (make scalesim-venv)")
    python = os.path.join(venv, "bin", "python")
    specs = [f"{n}:{_check('M', M)}:{_check('N', N)}:{_check('K', K)}" for n, M, N, K in gemms]
    with futures.ThreadPoolExecutor(jobs) as pool:
        return list(pool.map(lambda s: _run_one(python, rows, cols, s), specs))


def read_csv(path: str = CSV) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))
