"""Input validation shared by every layer: each check turns bad input into
a TypeError or ValueError whose message names the bad value."""

from __future__ import annotations

import numbers

import numpy as np

__all__ = [
    "parse_array_size",
    "is_int",
    "check_thresholds",
    "check_split",
    "check_grid",
    "check_side",
    "as_int8",
    "check_qk",
    "check_qkv",
    "check_scales",
    "ARRAY_VARIANTS",
    "check_variant",
    "check_positive",
]


def is_int(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def parse_array_size(text: str, what: str = "array size") -> tuple[int, int]:
    """``"N"`` (``N x N``) or ``"RxC"`` as ``(R, C)``; a ValueError
    naming ``what`` otherwise (the command lines' array shapes)."""
    try:
        parts = tuple(int(x) for x in text.lower().split("x"))
    except ValueError:
        parts = ()
    if len(parts) == 1:
        parts = parts * 2
    if len(parts) != 2:
        raise ValueError(f"{what} must be N or RxC, not {text!r}")
    return parts[0], parts[1]


def check_thresholds(F, P) -> tuple[int, int]:
    """Validate the reuse thresholds of spec sec. 3: ``1 <= P <= F <= 9``."""
    for name, value in (("F", F), ("P", P)):
        if not is_int(value):
            raise TypeError(f"threshold {name} must be an integer, not {value!r}")
        if not 1 <= value <= 9:
            raise ValueError(f"threshold {name} must be in 1..9, not {value!r} (9 means never)")
    if P > F:
        raise ValueError(f"thresholds must satisfy P <= F, not F={F!r}, P={P!r}")
    return int(F), int(P)


def check_group_thresholds(thresholds) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int]]:
    """Three ``(F, P)`` pairs, one per channel group (t, x, y), each valid
    for :func:`check_thresholds`; one pair is repeated."""
    try:
        items = list(thresholds)
    except TypeError:
        raise ValueError(f"thresholds must be an (F, P) pair or three of them, not {thresholds!r}") from None
    if len(items) == 2 and all(is_int(x) for x in items):
        items = [tuple(items)] * 3
    if len(items) != 3:
        raise ValueError(f"thresholds must be an (F, P) pair or three of them (t, x, y), not {thresholds!r}")
    out = []
    for pair in items:
        try:
            F, P = pair
        except (TypeError, ValueError):
            raise ValueError(f"each group's thresholds must be an (F, P) pair, not {pair!r}") from None
        out.append(check_thresholds(F, P))
    return out[0], out[1], out[2]


def _positive_triple(value, shape: str, not_sequence: str, too_small: str) -> tuple[int, int, int]:
    """Three integers >= 1; the messages name ``value``: ``shape`` and
    ``not_sequence`` for a TypeError, ``too_small`` for a ValueError."""
    try:
        parts = tuple(value)
    except TypeError:
        raise TypeError(f"{not_sequence}, not {value!r}") from None
    if len(parts) != 3 or not all(is_int(p) for p in parts):
        raise TypeError(f"{shape}, not {value!r}")
    if any(p < 1 for p in parts):
        raise ValueError(f"{too_small}, not {value!r}")
    a, b, c = (int(p) for p in parts)
    return a, b, c


def check_split(split, d: int | None = None) -> tuple[int, int, int]:
    """Validate a channel split ``(d_t, d_x, d_y)``: three integers >= 1 that
    sum to ``d`` when ``d`` is given."""
    parts = _positive_triple(
        split,
        "split must be three integers (d_t, d_x, d_y)",
        "split must be a sequence of three integers",
        "every channel group of split must be at least 1",
    )
    if d is not None and sum(parts) != d:
        raise ValueError(f"split {parts!r} sums to {sum(parts)}, but the head dimension d is {d}")
    return parts


def as_int8(name: str, value, ndim: int | None = 2) -> np.ndarray:
    if not isinstance(value, np.ndarray):
        raise TypeError(f"{name} must be a numpy int8 array, not {type(value).__name__}")
    if value.dtype != np.int8:
        raise TypeError(f"{name} must have dtype int8, not {value.dtype}")
    if ndim is not None and value.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, not shape {value.shape!r}")
    return value


def check_grid(grid, n: int | None = None) -> tuple[int, int, int]:
    """Validate a latent grid ``(T, H, W)``: three integers >= 1 holding
    ``n`` tokens when ``n`` is given."""
    shape = "grid must be three integers (T, H, W)"
    parts = _positive_triple(grid, shape, shape, "every grid extent must be at least 1")
    if n is not None and parts[0] * parts[1] * parts[2] != n:
        raise ValueError(f"grid {parts!r} holds {parts[0] * parts[1] * parts[2]} tokens, but the tensor has N = {n}")
    return parts


#: the arrays a P V tile stage, an attention core or its cycle model is
#: built on: ``"kaleido"`` (reuse) or ``"dense"`` (the baseline: int8 MAC
#: PEs, no reuse; docs/CORE.md "The dense core")
ARRAY_VARIANTS = ("kaleido", "dense")


def check_variant(variant) -> str:
    """``variant`` if it is one of :data:`ARRAY_VARIANTS`; anything else is
    a ValueError naming the value."""
    if not isinstance(variant, str) or variant not in ARRAY_VARIANTS:
        raise ValueError(f"variant must be one of {ARRAY_VARIANTS!r}, not {variant!r}")
    return variant


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


def check_qkv(Q, K, V, grid, split):
    """Validate the (Q, K, V) of one head; return (grid, split)."""
    grid, split = check_qk(Q, K, grid, split)
    as_int8("V", V)
    if V.shape != Q.shape:
        raise ValueError(f"V must have the shape of Q, {Q.shape!r}, not {V.shape!r}")
    return grid, split


def check_scales(scales) -> tuple[float, float, float]:
    """Validate per-tensor quantisation scales ``(q, k, v)``: finite and positive."""
    try:
        parts = tuple(scales)
    except TypeError:
        raise TypeError(f"scales must be (q_scale, k_scale, v_scale), not {scales!r}") from None
    if len(parts) != 3 or not all(isinstance(s, numbers.Real) and not isinstance(s, bool) for s in parts):
        raise TypeError(f"scales must be three real numbers (q_scale, k_scale, v_scale), not {scales!r}")
    if not all(np.isfinite(s) and s > 0 for s in parts):
        raise ValueError(f"scales must be finite and positive, not {scales!r}")
    q, k, v = (float(s) for s in parts)
    return q, k, v


def check_s_sets(sets, name: str = "s_sets") -> int:
    """The S tile's sets in a Q K^T tile engine (``CoreConfig.s_buffers``,
    named ``name`` in the message): 1 (unload, then the next tile) or 2 (a
    tile unloads while the next one loads and computes into the other set)."""
    if not is_int(sets) or sets not in (1, 2):
        raise ValueError(f"{name} must be 1 or 2, not {sets!r}")
    return int(sets)


def check_positive(name: str, value) -> int:
    """A positive ``int`` (not a bool), named ``name`` in the message."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be a positive integer, not {value!r}")
    return value


def check_pv_buffers(buffers) -> int:
    """The P V tile stage's key-tile buffers (``CoreConfig.pv_buffers``):
    1 (fill, then run) or 2 (the next key tile fills while the current one
    runs)."""
    if not isinstance(buffers, int) or isinstance(buffers, bool) or buffers not in (1, 2):
        raise ValueError(f"pv_buffers must be 1 or 2, not {buffers!r}")
    return buffers
