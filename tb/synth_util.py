"""Helpers of the synthesis tests."""

from __future__ import annotations

import os

__all__ = ["workdir"]


def workdir(tmp_path, name: str) -> str:
    """A work directory relative to the cwd (YoWASP tools cannot open
    absolute /tmp paths)."""
    root = os.path.relpath(tmp_path / name)
    if root.startswith(".."):
        root = os.path.join("build", "test_synth", os.path.basename(str(tmp_path)), name)
    return root
