"""A cycle model of a window PE (issue 14): reuse windows of ``w`` tokens
on one-PE arrays, to see what utilization the windows' op bound keeps.

The pair PE (spec sec. 5) holds the four tiles of a 2x2 token group and
runs them in four phases. A **window PE** holds the ``w x w`` tiles of
one row window and one column window (:func:`window_units`: ``w`` tokens
along the channel group's direction sharing one anchor,
:mod:`kaleido.golden.windows`) in ``w^2`` accumulators, and every product
it computes adds to each tile that reuses it. Each tile at each channel
then costs what the oracle's table says (:data:`PRODUCT_COST`, or
:data:`ROW_PARTIAL_COST` with the row operand split too, which needs the
multipliers' 4x4 partial products): 0, 1 or 2 nibble multiplies, a
:class:`~kaleido.encoding.Need` of SKIP, HALF or FULL. The model, on
``arrays`` one-PE arrays fed from a shared pass queue (the explorer's
``queue`` dispatch), counts a pass (one row window, one column window,
one channel batch) two ways:

* ``"phased"``: the pair PE's timing generalised: the ``w^2`` tiles one
  after another, each streaming the batch's channels through the matcher
  (:func:`kaleido.golden.matcher.match_slots`, the configuration's
  lookahead) and costing ``max(1, slots)`` beats; a tile with a padding
  token (a short window at the grid's edge) costs nothing (the pair
  model charges an unpaired unit's missing tiles one idle beat each).
  With ``w = 2`` on a grid with no unpaired token this is the explorer's
  16 one-PE arrays with the ``queue`` order and dispatch
  (``tb/test_window_model.py`` checks it cycle for cycle);
* ``"stream"``: the pass as one stream in which any two HALF products
  share a slot: ``max(1, FULL + ceil(HALF / 2))`` beats, the best any
  matcher could do.

P V on the same one-PE arrays (:func:`window_pv_timing`): a block is one
query row and one channel over every key; V's FULL followers pre-add
their P into their anchor's product, and any two small products of a
block share a beat (``ceil(halves / 2)`` beats,
:func:`kaleido.explore.row_delta.pv_block_halves`); blocks from a shared
queue. Neither has RTL; no tile latency beyond the one-PE array's is
charged.
"""

from __future__ import annotations

import dataclasses
import math
import numbers

import numpy as np

from ..checks import check_grid, check_qk, check_qkv
from ..config import KaleidoConfig, tile_latency
from ..golden.grouped import check_group_thresholds
from ..golden.windows import PRODUCT_COST, ROW_PARTIAL_COST, window_classes
from ..loopnest import group_slices
from ..stage_timing import deal_passes, match_slots, pv_timing, softmax_stage_cycles
from .row_delta import pv_block_halves

__all__ = [
    "MODES",
    "PAD",
    "WindowTiming",
    "window_units",
    "window_pass_beats",
    "window_qk_timing",
    "window_pv_timing",
    "window_attention_timing",
]

#: how a pass's tiles are counted (module doc)
MODES = ("phased", "stream")

#: tag of a padding token (a short window at the grid's edge): no product
PAD = 4


def _cost_table(row_partial: bool) -> np.ndarray:
    table = np.zeros((5, 5), dtype=np.uint8)
    table[:4, :4] = ROW_PARTIAL_COST if row_partial else PRODUCT_COST
    return table


def window_units(grid, axis: int, w: int) -> np.ndarray:
    """int64 ``(U, w)``: the windows of ``w`` tokens along ``axis``
    (:func:`kaleido.golden.windows.window_anchors`), ordered by anchor
    index, the anchor first; -1 pads a short window at the grid's edge."""
    T, H, W = check_grid(grid)
    if not isinstance(w, numbers.Integral) or isinstance(w, bool) or w < 2:
        raise ValueError(f"window length w must be an integer >= 2, not {w!r}")
    if axis not in (0, 1, 2):
        raise ValueError(f"axis must be 0 (t), 1 (y) or 2 (x), not {axis!r}")
    coord = np.indices((T, H, W))[axis].ravel()
    pos = coord % w
    anchors = np.nonzero(pos == 0)[0]
    stride = int(np.prod((T, H, W)[axis + 1 :]))
    idx = np.searchsorted(anchors, np.arange(T * H * W) - pos * stride)
    out = np.full((len(anchors), int(w)), -1, dtype=np.int64)
    out[idx, pos] = np.arange(T * H * W)
    return out


def _tags(u: np.ndarray, cls: np.ndarray, channels: slice) -> np.ndarray:
    """uint8 ``(U, w, n)``: each window token's class at ``channels``
    (ABSENT for the anchor), :data:`PAD` for a padding token."""
    t = cls[np.maximum(u, 0)][:, :, channels]
    return np.where((u >= 0)[:, :, None], t, PAD).astype(np.uint8)


def window_pass_beats(tq: np.ndarray, tk: np.ndarray, lookahead: int, *, row_partial: bool = False) -> dict:
    """Beats of every pass of one batch: ``phased`` and ``stream``, int64
    ``(row windows, column windows)`` (module doc), from the row and column
    windows' tags (:func:`_tags`, ``(U, w, n)``, ``n <= 64`` channels), and
    ``ops``: the nibble multiplies."""
    table = _cost_table(row_partial)
    Uq, w, n = tq.shape
    Uk = tk.shape[0]
    phased = np.zeros((Uq, Uk), dtype=np.int64)
    stream = np.zeros((Uq, Uk), dtype=np.int64)
    ops = 0
    step = max(1, (1 << 22) // max(1, Uk * w * w * n))
    real_k = tk[:, :, 0] != PAD  # (Uk, w)
    for r0 in range(0, Uq, step):
        q = tq[r0 : r0 + step]
        needs = table[q[:, None, :, None, :], tk[None, :, None, :, :]]  # (r, Uk, w, w, n)
        present = (q[:, None, :, None, 0] != PAD) & real_k[None, :, None, :]
        slots = match_slots(needs, lookahead)
        phased[r0 : r0 + step] = np.where(present, np.maximum(slots, 1), 0).sum(axis=(2, 3))
        full = (needs == 2).sum(axis=(2, 3, 4), dtype=np.int64)
        half = (needs == 1).sum(axis=(2, 3, 4), dtype=np.int64)
        stream[r0 : r0 + step] = np.maximum(1, full + (half + 1) // 2)
        ops += int(2 * full.sum() + half.sum())
    return {"phased": phased, "stream": stream, "ops": ops}


@dataclasses.dataclass
class WindowTiming:
    """One head's ``Q K^T`` on window PEs: ``cycles`` per mode
    (:data:`MODES`), the dense arrays' ``dense_cycles`` (same PEs), the
    nibble multiplies ``ops`` and ``dense_ops``, and each mode's
    ``utilization`` (``ops / (2 beats)``, beats summed over the arrays)."""

    cycles: dict
    dense_cycles: int
    ops: int
    dense_ops: int
    beats: dict
    passes: int

    @property
    def utilization(self) -> dict:
        return {m: self.ops / (2 * b) if b else 0.0 for m, b in self.beats.items()}

    @property
    def speedup(self) -> dict:
        return {m: self.dense_cycles / c for m, c in self.cycles.items()}


def _check_arrays(arrays) -> int:
    if not isinstance(arrays, numbers.Integral) or isinstance(arrays, bool) or arrays < 1:
        raise ValueError(f"arrays must be a positive integer, not {arrays!r}")
    return int(arrays)


def window_qk_timing(
    Q,
    K,
    grid,
    split,
    w: int,
    thresholds,
    *,
    arrays: int = 16,
    row_partial: bool = False,
    config: KaleidoConfig | None = None,
) -> WindowTiming:
    """One head's ``Q K^T`` on ``arrays`` one-PE window arrays behind a
    shared pass queue (module doc): windows of ``w`` on Q and K,
    thresholds ``(F, P)`` or three (t, x, y); ``row_partial``: PARTIAL row
    followers split the row operand (exact only when every ``P >= 4``).
    ``config`` gives the batch and the matcher's lookahead (default
    ``KaleidoConfig()``'s)."""
    grid, split = check_qk(Q, K, grid, split)
    fp = check_group_thresholds(thresholds)
    arrays = _check_arrays(arrays)
    cfg = config or KaleidoConfig(split=tuple(split))
    qcls = window_classes(Q, grid, split, w, fp)
    kcls = window_classes(K, grid, split, w, fp)
    loads = {m: np.zeros(arrays, dtype=np.int64) for m in MODES}
    ops = passes = 0
    for sl, axis in group_slices(split):
        u = window_units(grid, axis, w)
        for c0 in range(sl.start, sl.stop, cfg.batch):
            chans = slice(c0, min(c0 + cfg.batch, sl.stop))
            b = window_pass_beats(_tags(u, qcls, chans), _tags(u, kcls, chans), cfg.lookahead, row_partial=row_partial)
            for m in MODES:
                deal_passes(b[m], loads[m], (passes, 0, 0), "queue")
            ops += b["ops"]
            passes += b["phased"].size
    n, d = Q.shape
    drain = tile_latency(0, 0)
    return WindowTiming(
        cycles={m: int(x.max()) + drain for m, x in loads.items()},
        dense_cycles=math.ceil(n * n / arrays) * d + 1,
        ops=ops,
        dense_ops=2 * n * n * d,
        beats={m: int(x.sum()) for m, x in loads.items()},
        passes=passes,
    )


def window_pv_timing(rows, V, grid, split, w: int, v_full, *, arrays: int = 16) -> dict:
    """P V on ``arrays`` one-PE arrays (module doc) for the row operands
    ``rows`` (P, or delta-coded rows), V's FULL followers in windows of
    ``w`` (``v_full``: one FULL threshold or three). Returns ``cycles``,
    ``beats`` and the dense one-PE arrays' ``dense_cycles`` (no reuse, no
    pairing: :func:`kaleido.stage_timing.pv_timing`'s)."""
    arrays = _check_arrays(arrays)
    halves = pv_block_halves(rows, V, grid, split, w, v_full)
    beats = (halves + 1) // 2
    loads = np.zeros(arrays, dtype=np.int64)
    deal_passes(beats.reshape(1, -1), loads, (0, 0, 0), "queue")
    one = KaleidoConfig(array_rows=1, array_cols=1, split=tuple(int(x) for x in split))
    dense = pv_timing(V, grid, split, one, arrays=arrays)["dense_cycles"]
    return {"cycles": int(loads.max()) + 1 + tile_latency(0, 0), "beats": int(loads.sum()), "dense_cycles": dense}


def window_attention_timing(Q, K, V, grid, split, w: int, thresholds, *, rows, **kw) -> dict:
    """Whole attention on window PEs: :func:`window_qk_timing` (``kw``:
    its keywords), the softmax stage and :func:`window_pv_timing` on the P
    operand ``rows`` (V's FULL threshold: each group's ``F``). Returns the
    cycles per mode, the dense cycles and the speedups."""
    grid, split = check_qkv(Q, K, V, grid, split)
    fp = check_group_thresholds(thresholds)
    qk = window_qk_timing(Q, K, grid, split, w, fp, **kw)
    pv = window_pv_timing(rows, V, grid, split, w, tuple(F for F, _ in fp), arrays=kw.get("arrays", 16))
    sm = softmax_stage_cycles(*Q.shape)
    dense = qk.dense_cycles + sm + pv["dense_cycles"]
    return {
        "qk": qk,
        "pv": pv,
        "softmax_cycles": sm,
        "dense_cycles": dense,
        "cycles": {m: c + sm + pv["cycles"] for m, c in qk.cycles.items()},
        "speedup": {m: dense / (c + sm + pv["cycles"]) for m, c in qk.cycles.items()},
    }
