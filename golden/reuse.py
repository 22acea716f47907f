"""Channel-wise reuse: pairing, classification and effective operands
(spec sections 2-4).

Everything here is exact integer arithmetic on int8 operands.
"""

from __future__ import annotations

import numpy as np

from ..checks import as_int8, check_grid, check_qk, check_side, check_split, check_thresholds
from ..encoding import ABSENT, Reuse
from ..loopnest import group_slices, pairs

__all__ = [
    "lead_eq",
    "classify",
    "effective",
    "effective_values",
    "follower_classes",
    "classes",
    "reuse_scores",
    "exact_matmul",
    "hi",
    "lo",
]


_LEAD_EQ = np.array([8 - int(v).bit_length() for v in range(256)], dtype=np.uint8)


def hi(x: np.ndarray) -> np.ndarray:
    """Signed high nibble, ``x >> 4`` (-8..7)."""
    return np.right_shift(np.asarray(x, dtype=np.int8), 4)


def lo(x: np.ndarray) -> np.ndarray:
    """Unsigned low nibble, ``x & 0xF`` (0..15)."""
    return np.asarray(x, dtype=np.int8).view(np.uint8) & np.uint8(0xF)


def lead_eq(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Number of leading bits (MSB first) on which the 8-bit patterns of
    ``a`` and ``b`` agree; 8 when equal."""
    a = as_int8("anchor", a, None)
    b = as_int8("follower", b, None)
    if a.shape != b.shape:
        raise ValueError(f"anchor and follower must have the same shape, not {a.shape!r} and {b.shape!r}")
    return _LEAD_EQ[a.view(np.uint8) ^ b.view(np.uint8)]


def classify(anchor: np.ndarray, follower: np.ndarray, F: int = 5, P: int = 3) -> np.ndarray:
    """Elementwise reuse class of int8 ``follower`` against ``anchor``.

    Returns a uint8 array of :class:`Reuse` values: FULL if the two agree on
    at least ``F`` leading bits, else PARTIAL if on at least ``P``, else NONE.
    """
    F, P = check_thresholds(F, P)
    eq = lead_eq(anchor, follower)
    return np.where(
        eq >= F, np.uint8(Reuse.FULL), np.where(eq >= P, np.uint8(Reuse.PARTIAL), np.uint8(Reuse.NONE))
    ).astype(np.uint8)


def effective_values(a, b, cls, side):
    """Effective values of followers ``b`` of anchors ``a`` with classes
    ``cls`` on ``side`` (see :func:`effective`)."""
    if side == "row":
        return np.where(cls == Reuse.FULL, a, b)
    partial = ((a.view(np.uint8) & np.uint8(0xF0)) | (b.view(np.uint8) & np.uint8(0x0F))).view(np.int8)
    return np.where(cls == Reuse.FULL, a, np.where(cls == Reuse.PARTIAL, partial, b))


def classes(Z, grid, split, F=5, P=3):
    """Per group: ``(slice, anchors, followers, unpaired, cls)`` with ``cls``
    the uint8 classes of shape ``(n_pairs, group_size)``."""
    as_int8("Z", Z)
    grid = check_grid(grid, Z.shape[0])
    split = check_split(split, Z.shape[1])
    F, P = check_thresholds(F, P)
    out = []
    for sl, axis in group_slices(split):
        anchors, followers, unpaired = pairs(grid, axis)
        out.append((sl, anchors, followers, unpaired, classify(Z[anchors, sl], Z[followers, sl], F, P)))
    return out


def effective(Z, grid, split, F=5, P=3, *, side="column"):
    """Effective int8 operands of ``Z`` (``(N, d)``, token order
    ``n = (t*H + y)*W + x``) under channel-wise reuse.

    ``side="column"`` (K, V): FULL -> anchor, PARTIAL -> anchor's high nibble
    with the follower's low nibble, NONE -> follower. ``side="row"`` (Q):
    FULL -> anchor, otherwise the follower's own value. Anchors and unpaired
    tokens keep their values.
    """
    check_side(side)
    out = Z.copy() if isinstance(Z, np.ndarray) else Z
    for sl, anchors, followers, _, cls in classes(Z, grid, split, F, P):
        out[followers, sl] = effective_values(Z[anchors, sl], Z[followers, sl], cls, side)
    return out


def follower_classes(Z, grid, split, F=5, P=3):
    """uint8 ``(N, d)``: each token's reuse class at each channel where it is
    a follower (in that channel's group), else ABSENT (3)."""
    role = np.full(Z.shape, ABSENT, dtype=np.uint8)
    for sl, _, followers, _, cls in classes(Z, grid, split, F, P):
        role[followers, sl] = cls
    return role


def exact_matmul(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Exact int64 ``A @ B`` of int8 matrices through float BLAS.

    Every product of two int8 values is an integer of magnitude at most
    2**14 and every partial sum over ``k`` channels is an integer of
    magnitude at most ``k * 2**14``. While that is below 2**24 (``k <= 1024``)
    every intermediate value is exactly representable in float32, so the
    BLAS result is exact whatever order or FMA use it chooses; up to
    ``k < 2**39`` float64 is used for the same reason.
    """
    k = A.shape[1]
    if B.shape[0] != k:
        raise ValueError(f"inner dimensions differ: {A.shape!r} @ {B.shape!r}")
    dtype = np.float32 if k <= 1024 else np.float64
    return (A.astype(dtype) @ B.astype(dtype)).astype(np.int64)


def reuse_scores(Q, K, grid, split, F=5, P=3):
    """Exact reuse scores ``effective(Q, side="row") @ effective(K).T``, int64 ``(N, N)``."""
    grid, split = check_qk(Q, K, grid, split)
    check_thresholds(F, P)
    return exact_matmul(effective(Q, grid, split, F, P, side="row"), effective(K, grid, split, F, P, side="column").T)
