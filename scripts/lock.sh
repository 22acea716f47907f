#!/usr/bin/env bash
# Refresh requirements.lock (`make lock`): install the newest releases that
# pyproject.toml allows into a scratch venv (build/lock/venv), run every tool
# flow a README command depends on there (`pytest -m "toolchain"`: synthesis
# on the detector through generic/CMOS, iCE40, ECP5 and nextpnr, `make
# verilog`, the report on a tiny head, one cocotb test per simulator) plus the
# fast suite, and only if all of it passes write the venv's exact versions
# to requirements.lock. Then run `make setup && make test` and commit the lock.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3.11}
VENV=build/lock/venv
rm -rf build/lock
mkdir -p build/lock
"$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet --upgrade -e ".[hw,test]" uv
# setuptools is the venv's own (the build runs in pip's isolated env)
"$VENV/bin/python" -m pip freeze --all --exclude-editable | grep -v '^setuptools==' > build/lock/candidate.lock
echo "lock: candidate versions in build/lock/candidate.lock; running the flows with them"
export PATH="$PWD/$VENV/bin:$PATH"
KALEIDO_LOCK=build/lock/candidate.lock "$VENV/bin/python" -m pytest -n "${JOBS:-2}" \
    -m "toolchain or not (rtl or soak or slow)" tb
{
    echo "# Exact versions the project is tested with (pip constraints; make setup installs them)."
    echo "# Refresh with \`make lock\`: it installs the newest allowed releases, runs every flow, then rewrites this file."
    echo "# Written by scripts/lock.sh on $(date -u +%Y-%m-%d) with $("$VENV/bin/python" --version)."
    cat build/lock/candidate.lock
} > requirements.lock
echo "lock: requirements.lock updated; diff:"
git --no-pager diff --stat -- requirements.lock || true
