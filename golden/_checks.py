"""Input validation shared by the golden model: every public function turns
bad input into a TypeError or ValueError naming the bad value."""

from __future__ import annotations

import numbers

import numpy as np

from ..config import check_split, check_thresholds

__all__ = ["as_int8", "check_grid", "check_split", "check_thresholds", "check_side"]


def as_int8(name: str, value, ndim: int | None = 2) -> np.ndarray:
    if not isinstance(value, np.ndarray):
        raise TypeError(f"{name} must be a numpy int8 array, not {type(value).__name__}")
    if value.dtype != np.int8:
        raise TypeError(f"{name} must have dtype int8, not {value.dtype}")
    if ndim is not None and value.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, not shape {value.shape!r}")
    return value


def check_grid(grid, n: int | None = None) -> tuple[int, int, int]:
    try:
        parts = tuple(grid)
    except TypeError:
        raise TypeError(f"grid must be three integers (T, H, W), not {grid!r}") from None
    if len(parts) != 3 or not all(isinstance(p, numbers.Integral) and not isinstance(p, bool)
                                  for p in parts):
        raise TypeError(f"grid must be three integers (T, H, W), not {grid!r}")
    if any(p < 1 for p in parts):
        raise ValueError(f"every grid extent must be at least 1, not {grid!r}")
    parts = tuple(int(p) for p in parts)
    if n is not None and parts[0] * parts[1] * parts[2] != n:
        raise ValueError(f"grid {parts!r} holds {parts[0] * parts[1] * parts[2]} tokens, "
                         f"but the tensor has N = {n}")
    return parts


def check_side(side: str) -> str:
    if side not in ("row", "column"):
        raise ValueError(f"side must be 'row' or 'column', not {side!r}")
    return side


def check_qk(Q, K, grid, split):
    """Validate a (Q, K) pair of one head; return (grid, split)."""
    as_int8("Q", Q)
    as_int8("K", K)
    if Q.shape != K.shape:
        raise ValueError(f"Q and K must have the same shape, not {Q.shape!r} and {K.shape!r}")
    n, d = Q.shape
    return check_grid(grid, n), check_split(split, d)
