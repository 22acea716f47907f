"""The habits every commit keeps: ruff (lint and format) and mypy are clean
on the whole tree (settings in pyproject.toml)."""

import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
BIN = pathlib.Path(sys.executable).parent


@pytest.mark.parametrize(
    "command",
    [["ruff", "check", "."], ["ruff", "format", "--check", "."], ["mypy"]],
    ids=["ruff-check", "ruff-format", "mypy"],
)
def test_clean(command):
    out = subprocess.run([str(BIN / command[0]), *command[1:]], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, f"`{' '.join(command)}` is not clean:\n{out.stdout}\n{out.stderr}"
