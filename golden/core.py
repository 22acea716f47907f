"""Attention tile by tile, as the attention core computes it (issue 13,
docs/CORE.md): bounded buffers, a two-pass softmax.

For each query tile: pass 1 walks every key tile, computes the ``S`` tile
and keeps each row's running maximum (and, with ``s_pass="spill"``, writes
the tile to external memory); pass 2 walks them again, reads the ``S`` tile
back (or recomputes it), turns it into P with the row's final maximum, adds the row sums and
accumulates ``P V`` into the tile's O accumulators; then one reciprocal per
row scales O. Every reuse decision is tile-local (the tile's own pairing
and classes), which :func:`kaleido.loopnest.tile_boxes` makes equal to the
head's, and every sum is an exact integer sum, so the result equals
:func:`kaleido.golden.softmax.fixed_reuse_attention` bit for bit: the
tiling changes where numbers live and how long it takes, never a value.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..checks import check_group_thresholds, check_qkv, check_scales, check_thresholds
from ..config import CoreConfig, SoftmaxFormat
from ..loopnest import Box, tile_boxes
from .grouped import grouped_effective, grouped_v_effective
from .pv import v_effective
from .reuse import effective, exact_matmul
from .softmax import exp2_table, head_constant

__all__ = [
    "TileStats",
    "tile_operands",
    "core_attention",
    "memory_image",
    "beats_per_row",
    "TileSoftmaxResult",
    "tile_softmax",
    "pv_tile_accumulate",
    "query_tile_p",
    "pad_box",
    "box_mask",
]


@dataclasses.dataclass
class TileStats:
    """What one head's tiled walk touched: S tiles computed (once per
    query/key tile pair, twice with ``recompute``), bytes read (Q once per
    query tile, K in pass 1 and again with ``recompute``, V in pass 2, the
    spilled S) and written (the spilled S, O at 2 bytes per value), and the
    largest number of S and O entries live at once (bounded by the tile,
    whatever N)."""

    s_tiles: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    peak_s: int = 0
    peak_o: int = 0


def beats_per_row(d: int, port_bytes: int) -> int:
    """Port beats of one token row of ``d`` int8 values; a row never
    shares a beat, so ``d`` must be a multiple of ``port_bytes``."""
    if d % port_bytes:
        raise ValueError(f"d = {d} is not a multiple of port_bytes = {port_bytes}: a token row must fill whole beats")
    return d // port_bytes


def memory_image(X: np.ndarray, port_bytes: int) -> list[int]:
    """The external-memory beats of an int8 operand ``X`` (tokens x d) as
    the core reads it: row-major, token ``t`` in beats ``t * d /
    port_bytes`` onward, byte 0 of a beat in its low bits, values as
    two's-complement bytes."""
    X = np.asarray(X)
    if X.ndim != 2 or X.dtype != np.int8:
        raise ValueError(f"X must be a 2-D int8 array (tokens x d), not {X.dtype} of shape {X.shape}")
    beats_per_row(X.shape[1], port_bytes)
    raw = X.astype(np.uint8).reshape(-1, port_bytes)
    return [int.from_bytes(row.tobytes(), "little") for row in raw]


def tile_operands(
    Z: np.ndarray, box: Box, split, F: int, P: int, side: str, *, thresholds=None, v_full=None
) -> np.ndarray:
    """Effective operands of one tile from the tile's own pairing: ``row``
    (Q), ``column`` (K) or ``v`` (V: FULL followers only). ``thresholds``:
    one ``(F, P)`` per channel group (t, x, y) instead of ``F``, ``P``; V's
    FULL threshold is then ``v_full`` (one or three; default each group's
    ``F``)."""
    sub = Z[box.tokens]
    if thresholds is not None:
        fp = check_group_thresholds(thresholds)
        if side == "v":
            return grouped_v_effective(sub, box.shape, split, [f for f, _ in fp] if v_full is None else v_full)
        return grouped_effective(sub, box.shape, split, fp, side=side)
    if side == "v":
        return v_effective(sub, box.shape, split, F)
    return effective(sub, box.shape, split, F, P, side=side)


def pad_box(Z: np.ndarray, box: Box, tile) -> np.ndarray:
    """The rows of ``box`` (a box of :func:`tile_boxes`) laid out in the
    full ``tile`` shape, ``(t, y, x)`` order, zeros where the grid's edge
    clipped the box: the operand the RTL tile engine runs."""
    bt, by, bx = (int(e) for e in tile)
    t, y, x = box.shape
    if t > bt or y > by or x > bx:
        raise ValueError(f"box {box.shape} does not fit the tile {tuple(tile)}")
    out = np.zeros((bt, by, bx, Z.shape[1]), dtype=Z.dtype)
    out[:t, :y, :x] = Z[box.tokens].reshape(t, y, x, Z.shape[1])
    return out.reshape(bt * by * bx, Z.shape[1])


def box_mask(box: Box, tile) -> np.ndarray:
    """Which tokens of the padded tile (:func:`pad_box`) are the box's."""
    bt, by, bx = (int(e) for e in tile)
    mask = np.zeros((bt, by, bx), dtype=bool)
    mask[: box.shape[0], : box.shape[1], : box.shape[2]] = True
    return mask.ravel()


def _exp(d: np.ndarray, c: int, fmt: SoftmaxFormat) -> np.ndarray:
    """``p`` of ``d = m - S`` (steps 2-4 of :mod:`kaleido.golden.softmax`)."""
    shift = fmt.exp_frac_bits - fmt.lut_bits
    t = (d * c + (1 << (shift - 1))) >> shift
    n, k = t >> fmt.lut_bits, t & ((1 << fmt.lut_bits) - 1)
    e = np.where(n <= fmt.lut_width, exp2_table(fmt)[k] >> np.minimum(n, 63), 0)
    return (e * fmt.p_max + (1 << (fmt.lut_width - 1))) >> fmt.lut_width


def core_attention(
    Q,
    K,
    V,
    grid,
    split,
    F: int = 5,
    P: int = 3,
    *,
    scales,
    core: CoreConfig | None = None,
    fmt: SoftmaxFormat | None = None,
    thresholds=None,
    v_full=None,
) -> tuple[np.ndarray, TileStats]:
    """Integer O (int64 ``(N, d)``, scale ``v_scale / 2^out_frac_bits``) of
    a head, tile by tile; and the walk's :class:`TileStats`. ``thresholds``
    (one ``(F, P)`` per channel group, the default design's
    ``KaleidoConfig().thresholds``) and ``v_full`` (V's FULL threshold, one
    or three) replace ``F`` and ``P`` as in :func:`tile_operands`."""
    core = core or CoreConfig()
    fmt = fmt or SoftmaxFormat()
    grid, split = check_qkv(Q, K, V, grid, split)
    F, P = check_thresholds(F, P)
    if thresholds is not None:
        thresholds = check_group_thresholds(thresholds)
    qs, ks, _ = check_scales(scales)
    n, d = Q.shape
    if n > core.max_tokens:
        raise ValueError(f"the head has {n} tokens; the core addresses at most {core.max_tokens} (max_tokens)")
    c = head_constant(qs * ks / math.sqrt(d), fmt)
    boxes = tile_boxes(grid, core.tile)
    stats = TileStats()
    out = np.zeros((n, d), dtype=np.int64)
    shift = fmt.recip_bits - fmt.out_frac_bits
    for qb in boxes:
        q_eff = tile_operands(Q, qb, split, F, P, "row", thresholds=thresholds, v_full=v_full)
        stats.bytes_read += q_eff.size
        m = np.full(len(qb.tokens), np.iinfo(np.int64).min, dtype=np.int64)
        spilled: list[np.ndarray] = []  # the external memory's S tiles
        for kb in boxes:  # pass 1: S tiles and the row maxima
            s = exact_matmul(q_eff, tile_operands(K, kb, split, F, P, "column", thresholds=thresholds, v_full=v_full).T)
            m = np.maximum(m, s.max(axis=1))
            stats.s_tiles += 1
            stats.bytes_read += len(kb.tokens) * d
            stats.peak_s = max(stats.peak_s, s.size)
            if core.s_pass == "spill":
                spilled.append(s)
                stats.bytes_written += core.s_bytes * s.size
        z = np.zeros(len(qb.tokens), dtype=np.int64)
        acc = np.zeros((len(qb.tokens), d), dtype=np.int64)
        for i, kb in enumerate(boxes):  # pass 2: P, the row sums, P V
            if core.s_pass == "spill":
                s = spilled[i]
                stats.bytes_read += core.s_bytes * s.size
            else:
                k_eff = tile_operands(K, kb, split, F, P, "column", thresholds=thresholds, v_full=v_full)
                s = exact_matmul(q_eff, k_eff.T)
                stats.s_tiles += 1
                stats.bytes_read += len(kb.tokens) * d
            p = _exp(m[:, None] - s, c, fmt)
            z += p.sum(axis=1)
            acc += p @ tile_operands(V, kb, split, F, P, "v", thresholds=thresholds, v_full=v_full).astype(np.int64)
            stats.bytes_read += len(kb.tokens) * d
            stats.peak_o = max(stats.peak_o, acc.size)
        r = (1 << fmt.recip_bits) // z
        out[qb.tokens] = (acc * r[:, None] + (1 << (shift - 1))) >> shift
        stats.bytes_written += 2 * acc.size
    return out, stats


@dataclasses.dataclass(frozen=True)
class TileSoftmaxResult:
    """One query tile's softmax over its key tiles, as the attention core
    computes it: the row maxima ``m`` after pass 1, the P tile of every key
    tile (int64, rows x keys of that tile), the row sums ``z`` and the
    reciprocals ``r`` (int64 ``(rows,)``)."""

    m: np.ndarray
    p: list[np.ndarray]
    z: np.ndarray
    r: np.ndarray


def tile_softmax(s_tiles, constant: int, fmt: SoftmaxFormat | None = None) -> TileSoftmaxResult:
    """The softmax of one query tile from its S tiles (one integer array of
    rows x keys per key tile, in walk order) and the head's constant ``C``:
    pass 1 folds each tile's row maxima into ``m``; pass 2 computes ``p``
    with the final ``m`` and adds the row sums; then ``r = floor(2^recip_bits
    / z)``. The same numbers as :func:`core_attention` (and as
    :func:`~kaleido.golden.softmax.fixed_softmax` of the tiles side by side:
    every sum is exact, so the tiling changes no value)."""
    fmt = fmt or SoftmaxFormat()
    tiles = [np.asarray(s) for s in s_tiles]
    if not tiles:
        raise ValueError("s_tiles must hold at least one key tile's S tile, not none")
    for j, s in enumerate(tiles):
        if s.ndim != 2 or not np.issubdtype(s.dtype, np.integer) or s.shape[1] < 1:
            raise ValueError(f"S tile {j} must be a 2-D integer array with at least one key, not {s.dtype} {s.shape!r}")
        if s.shape[0] != tiles[0].shape[0]:
            raise ValueError(f"S tile {j} has {s.shape[0]} rows; the query tile has {tiles[0].shape[0]}")
    m = tiles[0].max(axis=1).astype(np.int64)
    for s in tiles[1:]:  # pass 1
        m = np.maximum(m, s.max(axis=1))
    p = [_exp(m[:, None] - s.astype(np.int64), constant, fmt) for s in tiles]  # pass 2
    z = sum(x.sum(axis=1) for x in p)
    return TileSoftmaxResult(m, p, z, (1 << fmt.recip_bits) // z)


def query_tile_p(
    Q, K, qb: Box, boxes, split, scales, *, thresholds, fmt: SoftmaxFormat | None = None
) -> list[np.ndarray]:
    """The P tiles (int64 rows x keys, each key box's token order) of query
    box ``qb`` over the key boxes ``boxes`` in walk order, as the core's P V
    stage receives them: the S tiles from the tiles' own pairing with one
    ``(F, P)`` per channel group (``thresholds``), then
    :func:`tile_softmax` with the head's constant (``scales``, as
    :func:`core_attention`)."""
    fmt = fmt or SoftmaxFormat()
    qs, ks, _ = check_scales(scales)
    c = head_constant(qs * ks / math.sqrt(Q.shape[1]), fmt)
    q_eff = tile_operands(Q, qb, split, 0, 0, "row", thresholds=thresholds)
    s = [exact_matmul(q_eff, tile_operands(K, kb, split, 0, 0, "column", thresholds=thresholds).T) for kb in boxes]
    return tile_softmax(s, c, fmt).p


def pv_tile_accumulate(p_tiles, v_tiles, shapes, split, F: int = 5) -> np.ndarray:
    """int64 ``(rows, d)``: the O accumulators of one query tile after its
    key tiles, ``sum_j P_j v_effective(V_j)`` with each key tile's own
    pairing (``shapes[j]``, its box) and FULL followers only: the ``acc``
    of :func:`core_attention` before the reciprocal. ``p_tiles[j]``:
    rows x keys of key tile ``j`` (7-bit P); ``v_tiles[j]``: its keys x d
    int8 V in the box's token order."""
    from .pv import check_p

    if not p_tiles or len(p_tiles) != len(v_tiles) or len(v_tiles) != len(shapes):
        raise ValueError(
            f"p_tiles, v_tiles and shapes must be equally long and not empty, not {len(p_tiles)}, "
            f"{len(v_tiles)}, {len(shapes)}"
        )
    acc = None
    for P, V, shape in zip(p_tiles, v_tiles, shapes, strict=True):
        P = check_p(P, np.asarray(V).shape[0])
        part = P @ v_effective(V, shape, split, F).astype(np.int64)
        if acc is not None and acc.shape != part.shape:
            raise ValueError(f"every P tile must have the query tile's {acc.shape[0]} rows, not {P.shape[0]}")
        acc = part if acc is None else acc + part
    assert acc is not None
    return acc
