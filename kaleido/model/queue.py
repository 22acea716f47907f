"""The small arrays' shared queue (``config.sub_arrays``, the default
design; :class:`~kaleido.hdl.array_set.ArraySet`, docs/ENGINE.md "Small
arrays"): each pass split into blocks of the small array's shape, the
blocks in the queue's order (:func:`block_phase_beats`), one leaving a
cycle to a free array (:func:`queue_ticks`, :func:`queue_end`)."""

from __future__ import annotations

from collections.abc import Iterator

import numba
import numpy as np

from ..config import DISPATCH_LATENCY, QUEUE_LATENCY, KaleidoConfig
from .slots import pass_phase_beats


def queue_ticks(
    present: np.ndarray, beats: np.ndarray, arrays: int, buffers: int = 2
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, np.ndarray]:
    """The shared queue of :class:`~kaleido.hdl.array_set.ArraySet` over
    one batch's blocks in order (``present``: bool ``(K,)``, ``beats``:
    their total beats ``(K,)``), in the arrays' time from the batch's first
    pass taken (tick 0): block ``k`` leaves the queue's stage at ``h_k``,
    the first tick after ``h_{k-1}`` (``h_{-1} = QUEUE_LATENCY - 1``) at
    which some array's dispatcher can take it (an absent block needs no
    array), to the lowest-index such array (:func:`_queue_run`: ``buffers``
    pass buffers per dispatcher, 2 as the RTL's). Returns ``(h, array,
    pass_take, length, first)``: each block's tick and array (-1: absent),
    the tick each pass is taken (the tick its predecessor's last block
    enters the stage, which is the tick the block before that leaves;
    ``K / arrays`` passes), the tick after the last block, and each block's
    first beat (0: absent). ``buffers == 1`` is the queue and dispatcher
    the RTL had before the stage and the second pass buffer: no stage
    (``h_{-1} = 0``, a pass taken the tick its predecessor's last block
    leaves)."""
    n = len(beats)
    h = np.zeros(n, dtype=np.int64)
    who = np.full(n, -1, dtype=np.int64)
    first = np.zeros(n, dtype=np.int64)
    done = np.full((2, arrays), -1, dtype=np.int64)
    start = _queue_start(buffers)
    _queue_run(present, beats, done, buffers, start, h, who, first)
    lead = 1 + start  # the next pass is taken as the last block enters the stage (or, with none, leaves)
    takes = np.concatenate([[0], h[arrays - lead : n - lead : arrays]]) if n else np.zeros(1, dtype=np.int64)
    return h, who, takes, int(h[-1]) + 1 if n else 1, first


def _queue_start(buffers: int) -> int:
    """The tick before the first block can leave (:func:`_queue_run`'s
    ``t``): the stage's, or none with the old single-buffered queue."""
    return QUEUE_LATENCY - 1 if buffers == 2 else 0


@numba.njit(cache=True)
def _queue_run(
    present: np.ndarray,
    beats: np.ndarray,
    done: np.ndarray,
    buffers: int,
    t: int,
    h: np.ndarray,
    who: np.ndarray,
    first: np.ndarray,
) -> int:
    """The shared queue over blocks in order (numba: one compiled loop;
    the recurrence is sequential and has no numpy form). ``done[1, a]`` is
    the tick of array ``a``'s last beat so far, ``done[0, a]`` the one of
    the block before (-1: none; changed in place). Each block comes a tick
    after the one before; a present one waits for an array whose
    dispatcher can take it, the lowest-index one:

    * ``buffers == 2`` (hdl/dispatcher.py): a buffer is free from the tick
      after its pass's last beat, so array ``a`` takes at ``t`` when
      ``done[0, a] < t``; the block's beats start at ``max(t +
      DISPATCH_LATENCY, done[1, a] + 1)`` (take, job, slot register; or
      right after the previous block);
    * ``buffers == 1`` (the single-buffered dispatcher without a slot
      register the RTL had): the array takes at ``t`` when ``done[1, a] <=
      t`` (in the cycle its last beat leaves), the beats start at ``t + 2``.

    ``h``, ``who`` and ``first`` (as long as ``beats``) take each block's
    tick, array and first beat (unchanged for an absent block); returns
    the tick the last block left, from ``t`` before the first."""
    for k in range(len(present)):
        t += 1
        if present[k]:
            free = done[0] + 1 if buffers == 2 else done[1]  # each array's first tick to take a pass
            t = max(t, free.min())
            a = 0
            while free[a] > t:
                a += 1
            start = max(t + (DISPATCH_LATENCY if buffers == 2 else 2), done[1, a] + 1)
            done[0, a] = done[1, a]
            done[1, a] = start + beats[k] - 1
            who[k] = a
            first[k] = start
        h[k] = t
    return t


def _in_queue_order(a: np.ndarray, n_rows: int, n_cols: int, config: KaleidoConfig) -> np.ndarray:
    """``a``, one value (or row of values) per pair of small groups, padded
    to whole passes of one batch's ``n_rows``/``n_cols`` units (shape
    ``(Gr nr, Gc nc, ...)``), in the shared queue's order: pass by pass,
    row group outer; in a pass, block ``k`` holds small groups
    ``(g nr + k // nc, h nc + k % nc)``."""
    R, C = config.array_rows, config.array_cols
    r, c = config.sub_shape
    Gr, Gc, nr, nc = -(-n_rows // R), -(-n_cols // C), R // r, C // c
    rest = a.shape[2:]
    return a.reshape(Gr, nr, Gc, nc, *rest).swapaxes(1, 2).reshape(-1, *rest)


def block_groups(n_rows: int, n_cols: int, config: KaleidoConfig) -> tuple[np.ndarray, np.ndarray]:
    """The small row and column group of every block of one batch's passes
    (``n_rows``/``n_cols`` units), in the queue's order."""
    R, C = config.array_rows, config.array_cols
    r, c = config.sub_shape
    shape = (-(-n_rows // R) * (R // r), -(-n_cols // C) * (C // c))
    rows, cols = np.indices(shape)
    return _in_queue_order(rows, n_rows, n_cols, config), _in_queue_order(cols, n_rows, n_cols, config)


def block_phase_beats(
    tq: np.ndarray, tk: np.ndarray, config: KaleidoConfig, *, matcher: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """One batch's passes split into ``config.sub_shape`` blocks, in the
    shared queue's order (pass by pass, row group outer; in a pass, block
    ``k`` holds small groups ``(g nr + k // nc, h nc + k % nc)``):
    ``(present, phase)``, bool ``(K,)`` (a block past the head's units is
    absent: it needs no array) and int64 ``(K, 4)``, each block's phase
    beats on its small array (:func:`pass_phase_beats` of
    ``config.sub_config()``; 0 when absent). ``tq``/``tk`` are the units'
    tags in pass order."""
    R, C = config.array_rows, config.array_cols
    r, c = config.sub_shape
    small = pass_phase_beats(tq, tk, config.sub_config(), matcher=matcher)  # (small row groups, small columns, 4)
    shape = (-(-len(tq) // R) * (R // r), -(-len(tk) // C) * (C // c))  # padded to whole passes
    sr, sc = small.shape[:2]
    padded = np.zeros((*shape, 4), dtype=np.int64)
    padded[:sr, :sc] = small
    there = np.zeros(shape, dtype=bool)
    there[:sr, :sc] = True
    return _in_queue_order(there, len(tq), len(tk), config), _in_queue_order(padded, len(tq), len(tk), config)


#: blocks (pairs of small row and column groups) :func:`iter_block_beats` lays out at once
BLOCK_CHUNK = 1 << 20


def iter_block_beats(
    tq: np.ndarray, tk: np.ndarray, config: KaleidoConfig, *, matcher: bool = True
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """:func:`block_phase_beats` of one batch in consecutive pieces of whole
    pass rows (about :data:`BLOCK_CHUNK` blocks each, so memory stays
    bounded on long heads); their concatenation is the batch's."""
    R = config.array_rows
    n_col_units = max(1, len(tk))
    step = R * max(1, BLOCK_CHUNK // (R * n_col_units))  # units of whole pass rows
    for u0 in range(0, len(tq), step):
        yield block_phase_beats(tq[u0 : u0 + step], tk, config, matcher=matcher)


def queue_end(blocks, arrays: int, buffers: int = 2) -> int:
    """The tick of the last beat when the blocks of every batch in turn
    (``blocks``: ``(present, phase)`` pairs of :func:`block_phase_beats`
    in order, or its pieces, :func:`iter_block_beats`) go through
    :func:`queue_ticks`' shared queue of ``arrays`` arrays with no wait
    between batches. The loop over blocks is :func:`queue_ticks`'
    (:func:`_queue_run`), its state carried from piece to piece."""
    if buffers not in (1, 2):
        raise ValueError(f"buffers must be 1 or 2, not {buffers!r}")
    done = np.full((2, arrays), -1, dtype=np.int64)
    t = _queue_start(buffers)
    for present, phase in blocks:
        scratch = np.empty(len(present), dtype=np.int64)  # the blocks' ticks, arrays and beats, not needed here
        t = _queue_run(present, phase.sum(axis=1), done, buffers, t, scratch, scratch, scratch)
    return max(int(done[1].max()), 0)
