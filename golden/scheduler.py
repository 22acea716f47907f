"""Golden Hamming-clustering scheduler (paper fig. 16 left, spec sec. 8):
reuse strings, the LFSR pivot draw, the clustering of one window and the
order of a whole queue. Its constants (clusters, LFSR taps, seed and leap)
are the configuration's (:mod:`kaleido.config`); the matcher is
:mod:`kaleido.golden.matcher`."""

from __future__ import annotations

import math
import typing

import numpy as np

from ..config import CLUSTERS, LFSR_SEED, LFSR_TAPS, LFSR_WIDTH, KaleidoConfig, lfsr_steps, pivot_bits
from ..encoding import ABSENT, Reuse

__all__ = [
    "SMALL_QUEUE",
    "reuse_strings",
    "lfsr_step",
    "draw_pivots",
    "schedule",
    "Schedule",
    "schedule_order",
    "schedule_queue",
    "QueueSchedule",
    "schedule_cycles",
    "hamming",
    "WINDOW",
]

#: the paper's scheduler window: 64 strings (the 4x4 array's, :meth:`KaleidoConfig.window`)
WINDOW = KaleidoConfig().window("row")


def reuse_strings(cls, batch: int = 16) -> np.ndarray:
    """Reuse strings of token pairs for one channel batch.

    ``cls`` is uint8 ``(U, n)``: each unit's follower classes over the
    batch's ``n <= batch`` channels (3 = ABSENT for an unpaired unit). Bit
    ``c`` (LSB = the batch's first channel) is 0 where the follower is FULL,
    else 1 (PARTIAL, NONE and ABSENT: an unpaired token reuses nothing);
    bits past a short batch are 0. Returns uint64 ``(U,)``.
    """
    cls = np.asarray(cls)
    if cls.ndim != 2:
        raise ValueError(f"cls must be a (units, channels) array, not shape {cls.shape!r}")
    if not isinstance(batch, int) or not 1 <= batch <= 64:
        raise ValueError(f"batch must be an integer in 1..64, not {batch!r}")
    if cls.shape[1] > batch:
        raise ValueError(f"a batch holds at most {batch} channels, not {cls.shape[1]}")
    if cls.size and (cls.min() < 0 or cls.max() > ABSENT):
        raise ValueError(f"classes must be 0..3, not {int(cls.min())}..{int(cls.max())}")
    bits = (cls != Reuse.FULL).astype(np.uint64)
    weights = np.left_shift(np.uint64(1), np.arange(cls.shape[1], dtype=np.uint64))
    return (bits * weights).sum(axis=1, dtype=np.uint64) if cls.shape[1] else np.zeros(len(cls), np.uint64)


def hamming(a: int, b: int) -> int:
    return bin(int(a) ^ int(b)).count("1")


def lfsr_step(state: int) -> int:
    fb = 0
    for t in LFSR_TAPS:
        fb ^= (state >> t) & 1
    return ((state << 1) | fb) & ((1 << LFSR_WIDTH) - 1)


def draw_pivots(m: int, state: int, window: int = WINDOW):
    """Draw ``min(4, m)`` distinct queue indices below ``m``: each draw
    advances the LFSR by ``LFSR_LEAP`` steps (more for windows above 64, one
    per index bit) and takes its low ``log2(window)`` bits (6 for the RTL's
    64-entry queue),
    rejecting indices ``>= m`` and repeats. Returns ``(pivots, state,
    draws)``; ``draws`` counts draws (one per cycle in the RTL)."""
    if not 1 <= m <= window:
        raise ValueError(f"a window holds 1..{window} strings, not {m!r}")
    bits = pivot_bits(window)
    if bits > LFSR_WIDTH:
        raise ValueError(f"window {window!r} needs more index bits than the {LFSR_WIDTH}-bit LFSR has")
    pivots: list[int] = []
    draws = 0
    while len(pivots) < min(CLUSTERS, m):
        for _ in range(lfsr_steps(window)):
            state = lfsr_step(state)
        draws += 1
        idx = state & ((1 << bits) - 1)
        if idx < m and idx not in pivots:
            pivots.append(idx)
    return pivots, state, draws


class Schedule(typing.NamedTuple):
    """One window's result: ``clusters`` (four lists of queue positions, in
    queue order within each), the ``pivots`` (queue positions), the LFSR
    ``state`` to carry into the next window and the LFSR ``draws`` taken."""

    clusters: list
    pivots: list
    state: int
    draws: int


def schedule(strings, *, seed: int = LFSR_SEED, window: int = WINDOW) -> Schedule:
    """Hamming-clustering scheduler for one window of ``m <= 64`` strings.

    Pivots by :func:`draw_pivots` from the LFSR state ``seed`` (nonzero,
    16 bits). Each string, in queue order, goes to the cluster whose pivot
    string is nearest in Hamming distance (XOR and popcount), ties to the
    lowest cluster index, among the clusters not yet holding ``ceil(m/4)``
    strings. With ``m < 4`` only ``m`` clusters have a pivot; the others stay
    empty.
    """
    strings = [int(s) for s in np.asarray(strings, dtype=np.uint64).ravel()]
    m = len(strings)
    if not isinstance(seed, (int, np.integer)) or not 1 <= int(seed) < (1 << LFSR_WIDTH):
        raise ValueError(f"seed must be a nonzero {LFSR_WIDTH}-bit LFSR state, not {seed!r}")
    pivots, state, draws = draw_pivots(m, int(seed), max(window, m))
    cap = math.ceil(m / CLUSTERS)
    clusters: list[list[int]] = [[] for _ in range(CLUSTERS)]
    for pos, s in enumerate(strings):
        best = min((hamming(s, strings[p]), j) for j, p in enumerate(pivots) if len(clusters[j]) < cap)
        clusters[best[1]].append(pos)
    return Schedule(clusters, pivots, state, draws)


def schedule_cycles(sch: Schedule, m: int) -> int:
    """Cycles the RTL ``Scheduler`` spends on one window of ``m`` strings with
    always-valid input and always-ready output: ``m`` (load) + draws + ``m +
    2`` (assign, three pipeline stages) + one cycle per cluster up to the last
    non-empty one + ``m`` (output)."""
    return _window_cycles(m, sch.draws, max(j for j, c in enumerate(sch.clusters) if c))


def _window_cycles(m, draws, last):
    """:func:`schedule_cycles` from a window's size, LFSR draws and last
    non-empty cluster (integers, or numpy arrays of them, one per window)."""
    return 3 * m + draws + last + 3


#: queues of at most this many windows are scheduled window by window
#: (:func:`schedule`); longer ones vectorised over the windows
SMALL_QUEUE = 2


class QueueSchedule(typing.NamedTuple):
    """A whole queue's schedule (:func:`schedule_queue`): ``order``, the
    permutation of queue positions (clusters concatenated window by
    window); ``state``, the LFSR state after the last window;
    ``window_cycles``, each window's :func:`schedule_cycles`."""

    order: np.ndarray
    state: int
    window_cycles: list[int]


def schedule_order(strings, *, window: int = WINDOW, seed: int = LFSR_SEED, vectorised: bool | None = None):
    """Scheduler over a whole queue: ``(order, state)`` of
    :func:`schedule_queue`."""
    q = schedule_queue(strings, window=window, seed=seed, vectorised=vectorised)
    return q.order, q.state


def schedule_queue(
    strings, *, window: int = WINDOW, seed: int = LFSR_SEED, vectorised: bool | None = None
) -> QueueSchedule:
    """Scheduler over a whole queue: windows of ``window`` strings in order,
    the LFSR state carried across; returns the :class:`QueueSchedule`
    (order, final state and each window's cycles), so a cycle model needs
    no second run of the scheduler for the cycles.

    Exactly :func:`schedule` window after window (tb/test_golden_dispatch.py
    holds the two equal, cycles included), vectorised over the windows: the
    pivot draws depend on the LFSR alone, so they are drawn first, one
    window after another; then every window assigns its strings at once,
    position by position (nearest pivot with room, ties to the lowest
    cluster).
    ``vectorised``: ``None`` (default) runs :func:`schedule` window by window
    on queues of at most :data:`SMALL_QUEUE` windows (faster there: a tile of
    the core is one window) and the vectorised walk on longer ones; ``True``
    or ``False`` forces one (the test holds both equal to :func:`schedule`)."""
    strings = np.asarray(strings, dtype=np.uint64).ravel()
    n = len(strings)
    if not isinstance(seed, (int, np.integer)) or not 1 <= int(seed) < (1 << LFSR_WIDTH):
        raise ValueError(f"seed must be a nonzero {LFSR_WIDTH}-bit LFSR state, not {seed!r}")
    state = int(seed)
    if n == 0:
        return QueueSchedule(np.zeros(0, dtype=np.int64), state, [])
    if vectorised not in (None, True, False):
        raise ValueError(f"vectorised must be None, True or False, not {vectorised!r}")
    if vectorised is None:  # a window or two: :func:`schedule` itself is faster than the vector set-up
        vectorised = n > SMALL_QUEUE * window
    if not vectorised:
        picked: list[int] = []
        cycles: list[int] = []
        for w0 in range(0, n, window):
            sch = schedule(strings[w0 : w0 + window], seed=state, window=window)
            state = sch.state
            picked += [w0 + pos for cluster in sch.clusters for pos in cluster]
            cycles.append(schedule_cycles(sch, min(window, n - w0)))
        return QueueSchedule(np.asarray(picked, dtype=np.int64), state, cycles)
    starts = np.arange(0, n, window)
    sizes = np.minimum(window, n - starts)
    n_win = len(starts)
    pivots = np.zeros((n_win, CLUSTERS), dtype=np.int64)
    has_pivot = np.zeros((n_win, CLUSTERS), dtype=bool)
    draws = np.zeros(n_win, dtype=np.int64)
    for w, m in enumerate(sizes):
        drawn, state, draws[w] = draw_pivots(int(m), state, max(window, int(m)))
        pivots[w, : len(drawn)] = drawn
        has_pivot[w, : len(drawn)] = True
    flat = np.zeros(n_win * window, dtype=np.uint64)
    flat[:n] = strings
    queue = flat.reshape(n_win, window)
    rows = np.arange(n_win)
    pivot_strings = queue[rows[:, None], pivots]  # (windows, clusters)
    far = 1 << 16  # beyond any distance (at most 64 bits)
    dist = np.bitwise_count(queue[:, :, None] ^ pivot_strings[:, None, :]).astype(np.int64)
    dist += np.where(has_pivot, 0, 2 * far)[:, None, :]
    cap = -(-sizes // CLUSTERS)
    held = np.zeros((n_win, CLUSTERS), dtype=np.int64)
    cluster = np.full((n_win, window), CLUSTERS, dtype=np.int64)
    for pos in range(window):
        live = pos < sizes
        j = np.argmin(dist[:, pos, :] + np.where(held >= cap[:, None], far, 0), axis=1)
        cluster[live, pos] = j[live]
        held[rows[live], j[live]] += 1
    local = np.argsort(cluster, axis=1, kind="stable")  # clusters in order, queue order within; padding last
    order = (local + starts[:, None]).ravel()
    keep = (np.arange(window)[None, :] < sizes[:, None]).ravel()
    last = np.where(held > 0, np.arange(CLUSTERS), -1).max(axis=1)  # the last non-empty cluster
    return QueueSchedule(order[keep].astype(np.int64), state, _window_cycles(sizes, draws, last).tolist())
