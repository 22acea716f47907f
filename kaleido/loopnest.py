"""The loop nest, written once: channel groups -> batches -> scheduler
windows -> passes (spec sections 2, 7, 8).

The golden model, the cycle model, the RTL's unit ROMs and the benchmarks
all walk a head through these functions, so they agree on the order by
construction. Token pairing (:func:`pairs`) and the units a batch's passes
take (:func:`units`) are geometry: they depend on the grid and the split,
not on any data.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import numpy as np

from .checks import check_grid, check_split
from .config import KaleidoConfig
from .encoding import ABSENT

__all__ = [
    "DIRECTIONS",
    "pairs",
    "group_slices",
    "units",
    "unit_tags",
    "Batch",
    "batches",
    "chunks",
    "pad_units",
    "PvPass",
    "pv_chunk",
    "pv_passes",
    "Box",
    "tile_boxes",
    "dense_pass_beats",
]

#: reuse direction of each channel group (t-, x-, y-channels) as a grid axis
#: index of (T, H, W): t-channels along x (axis 2), x-channels along y
#: (axis 1), y-channels along t (axis 0).
DIRECTIONS = (2, 1, 0)


def pairs(grid, axis: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Anchor/follower pairing along one grid axis (spec sec. 2).

    Returns ``(anchors, followers, unpaired)``: int64 flat token indices of
    the complete pairs (ordered by anchor index) and of the unpaired anchors
    (even coordinate at the end of an odd extent).
    """
    T, H, W = check_grid(grid)
    if axis not in (0, 1, 2):
        raise ValueError(f"axis must be 0 (t), 1 (y) or 2 (x), not {axis!r}")
    idx = np.arange(T * H * W, dtype=np.int64).reshape(T, H, W)
    ext = (T, H, W)[axis]

    def take(sl: slice) -> np.ndarray:
        return np.moveaxis(np.moveaxis(idx, axis, 0)[sl], 0, axis)

    n_pairs = ext // 2
    anchors = np.sort(take(slice(0, 2 * n_pairs, 2)).ravel())
    followers = anchors + int(np.prod((T, H, W)[axis + 1 :]))
    unpaired = np.sort(take(slice(ext - 1, ext)).ravel()) if ext % 2 else np.zeros(0, np.int64)
    return anchors, followers, unpaired


def group_slices(split) -> list[tuple[slice, int]]:
    """``(slice, axis)`` of each channel group, in the order t, x, y."""
    d_t, d_x, d_y = check_split(split)
    starts = (0, d_t, d_t + d_x, d_t + d_x + d_y)
    return [(slice(starts[g], starts[g + 1]), DIRECTIONS[g]) for g in range(3)]


def units(grid, axis: int) -> np.ndarray:
    """Row/column units of one channel group, ordered by anchor index: int64
    ``(U, 2)`` of (anchor, follower) with follower -1 when unpaired."""
    anchors, followers, unpaired = pairs(grid, axis)
    u = np.concatenate([np.stack([anchors, followers], 1), np.stack([unpaired, np.full_like(unpaired, -1)], 1)])
    return u[np.argsort(u[:, 0], kind="stable")]


def unit_tags(u: np.ndarray, cls: np.ndarray, channels) -> np.ndarray:
    """uint8 ``(U, n)``: each unit's follower tag at ``channels`` (rows of a
    per-token class array ``cls``), ABSENT for an unpaired unit."""
    return np.where((u[:, 1] >= 0)[:, None], cls[np.maximum(u[:, 1], 0)][:, channels], ABSENT).astype(np.uint8)


@dataclasses.dataclass(frozen=True)
class Batch:
    """One channel batch of the loop nest: its group (0 t, 1 x, 2 y), the
    group's reuse axis, the first channel and the channel count, and the
    group's units (:func:`units`)."""

    index: int
    group: int
    axis: int
    first: int
    count: int
    units: np.ndarray = dataclasses.field(compare=False, repr=False)

    @property
    def channels(self) -> np.ndarray:
        return np.arange(self.first, self.first + self.count)


def batches(config: KaleidoConfig, grid, split=None) -> list[Batch]:
    """Every batch of a head, in loop-nest order: groups t, x, y; within a
    group, ``config.batch`` channels at a time (batches never cross a group).
    ``split`` defaults to the configuration's."""
    grid = check_grid(grid)
    split = check_split(config.split if split is None else split)
    out: list[Batch] = []
    for g, (sl, axis) in enumerate(group_slices(split)):
        u = units(grid, axis)
        for c0 in range(sl.start, sl.stop, config.batch):
            out.append(Batch(len(out), g, axis, c0, min(config.batch, sl.stop - c0), u))
    return out


def chunks(n: int, size: int) -> Iterator[slice]:
    """Consecutive slices of ``size`` over ``n`` items, the last one short:
    the scheduler windows over a queue of strings, and the unit groups of
    consecutive passes on one side (padded by :func:`pad_units`)."""
    for start in range(0, n, size):
        yield slice(start, min(start + size, n))


def pad_units(rows: np.ndarray, size: int) -> np.ndarray:
    """``rows`` (``(n, 2)`` units) completed to ``size`` with ``(-1, -1)``
    padding units."""
    if len(rows) == size:
        return rows
    return np.concatenate([rows, np.full((size - len(rows), 2), -1, dtype=np.int64)])


# -- P V (issue 12, docs/DESIGN.md "P V on the array") -----------------------


@dataclasses.dataclass(frozen=True)
class PvPass:
    """One P V pass of the array: PE row ``r`` accumulates query
    ``queries[r]``, PE column ``c`` channel ``channels[c]`` (both at most
    the array's extent; the rest is padding), over the contraction
    ``units`` (anchor/follower token pairs of the channels' group, follower
    -1 when unpaired). ``first``: the pass starts its ``(queries,
    channels)`` block's contraction (no partial sum to add to yet)."""

    group: int
    channels: np.ndarray
    queries: np.ndarray
    units: np.ndarray
    first: bool


def pv_chunk(config: KaleidoConfig) -> int:
    """Units per P V pass: ``batch // 2``, so a pass covers at most
    ``batch`` tokens and its sums (products of magnitude below ``2**14``:
    a 7-bit P times int8 V) fit ``config.acc_width`` as ``Q K^T``'s do."""
    return max(1, config.batch // 2)


def pv_passes(config: KaleidoConfig, grid, split=None, n_queries: int | None = None) -> Iterator[PvPass]:
    """Every P V pass of a head in order: groups t, x, y; within a group,
    blocks of ``array_cols`` channels; then blocks of ``array_rows``
    queries; then the group's units, :func:`pv_chunk` at a time. The V
    reuse of a unit is along the group's direction, so a pass never mixes
    groups. ``n_queries`` defaults to the head's token count."""
    grid = check_grid(grid)
    split = check_split(config.split if split is None else split)
    n = int(np.prod(grid)) if n_queries is None else n_queries
    R, C, chunk = config.array_rows, config.array_cols, pv_chunk(config)
    for g, (sl, axis) in enumerate(group_slices(split)):
        u = units(grid, axis)
        for cs in chunks(sl.stop - sl.start, C):
            channels = np.arange(sl.start + cs.start, sl.start + cs.stop)
            for qs in chunks(n, R):
                queries = np.arange(qs.start, qs.stop)
                for k, us in enumerate(chunks(len(u), chunk)):
                    yield PvPass(g, channels, queries, u[us], k == 0)


# -- tiles of the attention core (issue 13, docs/CORE.md) --------------------


@dataclasses.dataclass(frozen=True)
class Box:
    """A tile: the grid tokens ``origin + [0, shape)`` (``(t, y, x)``),
    ``tokens`` their flat indices in the tile's own ``(t, y, x)`` order."""

    origin: tuple[int, int, int]
    shape: tuple[int, int, int]
    tokens: np.ndarray = dataclasses.field(compare=False, repr=False)


def tile_boxes(grid, tile) -> list[Box]:
    """The grid cut into boxes of ``tile`` (``(t, y, x)``, even extents)
    aligned at multiples of it, clipped at the grid's edge, in ``t``, ``y``,
    ``x`` order. Every extent even means every anchor (an even coordinate
    along its group's axis) has its follower in the same box, so a tile's
    own pairing (:func:`pairs` on ``shape``) is the head's restricted to the
    tile: tile-local reuse classes equal the head's."""
    T, H, W = check_grid(grid)
    if len(tile) != 3 or any(int(e) < 2 or int(e) % 2 for e in tile):
        raise ValueError(f"tile must be three even extents >= 2 (t, y, x), not {tile!r}")
    bt, by, bx = (int(e) for e in tile)
    idx = np.arange(T * H * W, dtype=np.int64).reshape(T, H, W)
    out = []
    for t0 in range(0, T, bt):
        for y0 in range(0, H, by):
            for x0 in range(0, W, bx):
                sub = idx[t0 : t0 + bt, y0 : y0 + by, x0 : x0 + bx]
                out.append(Box((t0, y0, x0), sub.shape, sub.ravel()))
    return out


# -- the dense baseline (issue 13, docs/CORE.md "The dense core") ------------


def dense_pass_beats(count: int, config: KaleidoConfig) -> int:
    """Beats of one pass of the dense engine over a batch of ``count``
    channels: one a channel, and at least ``ceil((R + C - 1) / 3)``
    (bubbles after the channels), so a pass's last tile leaves the array
    before the accumulation buffer's ring of four passes in flight reuses
    its entry (three later passes take at least ``R + C - 1`` beats)."""
    R, C = config.array_rows, config.array_cols
    return max(int(count), -(-(R + C - 1) // 3))
