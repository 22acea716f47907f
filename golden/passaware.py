"""A pass-aware scheduler (issue 14 candidate): order one batch's units so
that each group of ``size`` consecutive units (one array pass's rows, or
its columns) needs as few channels as possible *together*.

The paper's scheduler (:mod:`kaleido.golden.scheduler`) clusters single
reuse strings around four random pivots; what costs beats is the union of
a whole pass's needs: a channel is issued to the array if any unit of the
pass needs it. This greedy builds the groups directly. Within a window of
units (the whole batch by default), it seeds a group with the remaining
unit that reuses least (most non-FULL channels, then queue order) and adds
the unit that grows the group's cost least (among equals, the one that
reuses least: it would cost a cleaner group more), ``size - 1`` times. The cost of
a group is ``2 |OR none| + |OR non-FULL \\ OR none|`` over its units'
channel bit strings: a NONE channel needs a full 8x8 slot, a PARTIAL one
only a low nibble (which the matcher may pair).

Software only: no RTL implements it (docs/EXPLORATION.md).
"""

from __future__ import annotations

import numpy as np

from ..encoding import ABSENT, Reuse
from ..loopnest import chunks

__all__ = ["pass_aware_order", "group_cost"]


def _bits(mask: np.ndarray) -> np.ndarray:
    """bool ``(U, n)`` -> uint64 ``(U,)`` with channel ``c`` at bit ``c``."""
    if mask.shape[1] > 64:
        raise ValueError(f"a batch holds at most 64 channels, not {mask.shape[1]}")
    weights = np.left_shift(np.uint64(1), np.arange(mask.shape[1], dtype=np.uint64))
    return (mask.astype(np.uint64) * weights).sum(axis=1, dtype=np.uint64)


def _strings(tags: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    tags = np.asarray(tags)
    if tags.ndim != 2:
        raise ValueError(f"tags must be a (units, channels) array, not shape {tags.shape!r}")
    if tags.size and int(tags.max()) > ABSENT:
        raise ValueError(f"tags must be 0..3, not up to {int(tags.max())}")
    present = tags != ABSENT
    return _bits(present & (tags != Reuse.FULL)), _bits(present & (tags == Reuse.NONE))


def group_cost(tags: np.ndarray) -> int:
    """The cost a group of units (uint8 tags ``(u, n)``) is ordered by:
    ``2 |OR none| + |OR non-FULL \\ OR none|`` (ABSENT channels cost
    nothing)."""
    nonfull, none = _strings(tags)
    nf = int(np.bitwise_or.reduce(nonfull)) if len(nonfull) else 0
    nn = int(np.bitwise_or.reduce(none)) if len(none) else 0
    return 2 * bin(nn).count("1") + bin(nf & ~nn).count("1")


def pass_aware_order(tags: np.ndarray, size: int, window: int | None = None) -> np.ndarray:
    """Permutation of the units (rows of uint8 ``tags`` ``(U, n)``) into
    groups of ``size`` (see module doc), window by window (``window`` units
    at a time in queue order, default all of them; a multiple of ``size``
    keeps groups inside windows). Returns int64 ``(U,)``."""
    if not isinstance(size, (int, np.integer)) or size < 1:
        raise ValueError(f"size must be a positive integer, not {size!r}")
    nonfull, none = _strings(tags)
    U = len(nonfull)
    window = U if window is None else window
    if not isinstance(window, (int, np.integer)) or window < 1:
        raise ValueError(f"window must be a positive integer or None, not {window!r}")
    weight = np.bitwise_count(nonfull).astype(np.int64) + np.bitwise_count(none).astype(np.int64)
    order: list[int] = []
    for win in chunks(U, max(1, int(window))):
        left = np.arange(win.start, win.stop)
        while len(left):
            seed = int(np.argmax(weight[left]))  # first of the least reusing
            group = [int(left[seed])]
            left = np.delete(left, seed)
            g_nf, g_nn = nonfull[group[0]], none[group[0]]
            for _ in range(int(size) - 1):
                if not len(left):
                    break
                nn = g_nn | none[left]
                cost = 2 * np.bitwise_count(nn).astype(np.int64) + np.bitwise_count((g_nf | nonfull[left]) & ~nn)
                # the cheapest addition; among equals the unit that reuses least
                # (it costs this group nothing and would cost a cleaner one)
                pick = int(np.argmin(cost * 256 - weight[left]))
                unit = int(left[pick])
                group.append(unit)
                g_nf, g_nn = g_nf | nonfull[unit], g_nn | none[unit]
                left = np.delete(left, pick)
            order += group
    return np.array(order, dtype=np.int64)
