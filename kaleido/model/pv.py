"""``P V`` on the array (issue 12, :func:`pv_cycles`: reuse on V, small-P
pairing) and the attention core's P V tile stage (issue 13,
``kaleido.hdl.pv_tile.PvTile``, docs/CORE.md "The P V tile stage":
:func:`pv_tile_cycles`)."""

from __future__ import annotations

import collections
import dataclasses
import math

import numpy as np

from ..checks import check_positive
from ..config import BEAT_REGISTER, PE_LATENCY, KaleidoConfig
from ..loopnest import chunks
from .slots import array_drain, dense_array_drain


@dataclasses.dataclass(frozen=True)
class PvTiming:
    """P V of a head on the array (issue 12, :func:`pv_cycles`): beats and
    cycles with reuse on V and dense (the same array, two beats per token
    pair), and the nibble-multiply counts ``ops`` (``dense``, ``oracle`` =
    FULL and PARTIAL reuse at nibble granularity, ``hw`` = what the array
    multiplies)."""

    beats: int
    cycles: int
    dense_beats: int
    dense_cycles: int
    ops: dict

    @property
    def speedup(self) -> float:
        return self.dense_cycles / self.cycles


def pv_cycles(
    V, grid, split=None, config: KaleidoConfig | None = None, n_queries: int | None = None, *, P=None
) -> PvTiming:
    """Exact cycles of :class:`~kaleido.hdl.pv_array.PvArray` for a head's
    P V with no stalls, from the first unit's transfer to the last tile,
    both counted: ``beats + 1 + array_drain`` (the detector's register,
    then the array's drain, ``R + C + 1``; the dense array's ``R + C``).
    Beats are :func:`kaleido.golden.pv.pv_pass_beats`'s:
    per query block of ``R`` rows, per block of ``C`` channels of a group,
    one per unpaired token and per pair FULL at every channel of the block,
    two per other pair. They do not depend on P or on the query block,
    except with small-P pairing (``config.pv_pairs``), which needs ``P``
    (:func:`pv_pair_block_beats`). ``dense_*`` is the dense array's (no
    reuse, no pairing)."""
    from ..checks import as_int8, check_grid, check_split
    from ..golden.ops import pv_op_counts
    from ..golden.pv import unit_full
    from ..loopnest import group_slices, units

    config = config or KaleidoConfig()
    as_int8("V", V)
    grid = check_grid(grid, V.shape[0])
    split = check_split(config.split if split is None else split, V.shape[1])
    n = V.shape[0] if n_queries is None else n_queries
    R, C = config.array_rows, config.array_cols
    per_block = dense = 0
    for sl, axis in group_slices(split):
        u = units(grid, axis)
        paired = u[:, 1] >= 0
        full = unit_full(V, u, np.arange(sl.start, sl.stop), config.F)
        for cs in chunks(sl.stop - sl.start, C):
            single = ~paired | full[:, cs].all(axis=1)
            per_block += 2 * len(u) - int(single.sum())
            dense += 2 * len(u) - int((~paired).sum())
    q_blocks = math.ceil(n / R)
    beats, dense_beats = q_blocks * per_block, q_blocks * dense
    if config.pv_pairs:
        if P is None:
            raise ValueError("pv_pairs needs P: with small-P pairing the P V cycles depend on P")
        if np.shape(P)[0] != n:
            raise ValueError(f"P must have {n} rows (one per query), not shape {np.shape(P)!r}")
        beats = int(pv_pair_block_beats(V, P, grid, split, config, [config.F] * 3)[0].sum())
    ops = pv_op_counts(V, grid, split, config.F, config.P, n_queries=n)
    return PvTiming(
        beats,
        beats + 1 + array_drain(config),
        dense_beats,
        dense_beats + 1 + dense_array_drain(config),
        {"dense": ops["dense"], "oracle": ops["full_partial"], "hw": ops["full_only"]},
    )


def pv_pair_block_beats(V, P, grid, split, config: KaleidoConfig, *fs_lists, bound: int | None = None) -> np.ndarray:
    """Beats of each query block of ``array_rows`` rows under small-P
    pairing (:func:`kaleido.golden.pv.pair_pass`, what the RTL's
    ``PvDispatcher`` issues with ``pv_pairs``), passes as
    :func:`kaleido.loopnest.pv_passes` cuts them: int64 ``(len(fs_lists),
    blocks)``, a row per list of three V FULL thresholds (one per group),
    sharing the P gathers. A half is small when every column selecting an
    operand with V not 0 has it below ``bound`` (default
    :data:`kaleido.config.SMALL_P`, the RTL's) at every row of the block.
    The dispatcher's greedy pairing runs vectorised over the blocks, unit
    by unit."""
    from ..config import SMALL_P
    from ..golden.pv import check_p, unit_full
    from ..loopnest import group_slices, pv_chunk, units

    bound = SMALL_P if bound is None else bound
    if not isinstance(bound, (int, np.integer)) or not 1 <= bound <= SMALL_P:
        raise ValueError(f"bound must be an integer in 1..{SMALL_P} (a 4-bit row operand), not {bound!r}")
    P = check_p(P, V.shape[0])
    R, C = config.array_rows, config.array_cols
    n = P.shape[0]
    nb = math.ceil(n / R)
    rows = np.zeros((nb * R, P.shape[1]), np.int64)
    rows[:n] = P
    out = np.zeros((len(fs_lists), nb), np.int64)
    chunk = pv_chunk(config)
    blocks = rows.reshape(nb, R, P.shape[1])
    for g, (sl, axis) in enumerate(group_slices(split)):
        u = units(grid, axis)
        for k, fs in enumerate(fs_lists):
            full = unit_full(V, u, np.arange(sl.start, sl.stop), fs[g])
            for cs in chunks(sl.stop - sl.start, C):
                chans = np.arange(sl.start + cs.start, sl.start + cs.stop)
                two, s1, s2 = _small_halves(V, blocks, u, chans, full[:, cs], bound)
                for ps in chunks(len(u), chunk):
                    out[k] += pair_occupancy(two[ps], s1[:, ps], s2[:, ps]).sum(axis=1)
    return out


def _small_halves(V, rows: np.ndarray, u: np.ndarray, channels: np.ndarray, full: np.ndarray, bound: int):
    """``(two, s1, s2)`` of small-P pairing for the units ``u`` of one
    channel block (``channels``; ``full``: the units' FULL followers at
    them) and the query blocks ``rows`` (``(blocks, R, keys)`` P):
    ``two`` (units) a unit has two halves; ``s1``, ``s2`` (blocks x units)
    its first / second half is small (:func:`kaleido.golden.pv.pair_pass`)."""
    paired = u[:, 1] >= 0
    pa = rows[:, :, u[:, 0]]
    pf = np.where(paired, rows[:, :, np.maximum(u[:, 1], 0)], 0)
    big_a, big_f, big_s = pa.max(axis=1) >= bound, pf.max(axis=1) >= bound, (pa + pf).max(axis=1) >= bound
    nza = V[u[:, 0]][:, channels] != 0
    nzf = (V[np.maximum(u[:, 1], 0)][:, channels] != 0) & paired[:, None]
    two = paired & ~full.all(axis=1)
    # the first half selects SUM at FULL columns and R0 elsewhere, the second R1 at the others
    s1 = ~(((nza & ~full).any(axis=1) & big_a) | ((nza & full).any(axis=1) & big_s))
    s2 = ~((nzf & ~full).any(axis=1) & big_f)
    return two, s1, s2


def pair_occupancy(two: np.ndarray, s1: np.ndarray, s2: np.ndarray) -> np.ndarray:
    """Small-P pairing of one pass in every query block at once: the beats
    the dispatcher issues while it holds each unit (int64, blocks x
    units; :func:`kaleido.golden.pv.pair_pass`'s rule). ``two`` (units):
    the unit has two halves; ``s1``, ``s2`` (blocks x units): its first /
    second half is small. A unit's beats are 1 or 2, and the last unit's
    one more when a held half goes out alone first; they sum to the pass's
    beats."""
    nb, n = s1.shape
    occ = np.zeros((nb, n), np.int64)
    pend = np.zeros(nb, bool)
    for j in range(n):
        a1, a2 = s1[:, j], s2[:, j]
        last = j == n - 1
        if last:  # a held half nothing pairs with goes first
            flush = pend & ~(a1 if not two[j] else a1 ^ a2)
            occ[:, j] += flush
            pend = pend & ~flush
        if not two[j]:
            occ[:, j] += 1
            pend = pend & ~a1
        else:
            one = a1 ^ a2
            hold = one & ~pend & (not last)
            occ[:, j] += np.where((a1 & a2) | hold, 1, 2)
            pend = np.where(one, hold, pend)
    return occ


#: the P V tile stage's issue overhead per key tile (``kaleido.hdl.pv_tile.PvTile``:
#: the first unit's read, the dispatcher's register; its first unit enters the
#: array ``PV_TILE_ISSUE - 1`` cycles after the fill's last beat when the array
#: is idle; :func:`pv_tile_cycles`)
PV_TILE_ISSUE = 3


#: the stage's tail after a drained row: the row FIFO (``SyncFIFOBuffered``:
#: the row is written, then moves to its output register, 2 cycles) and the
#: O accumulators (``OAccumulator.latency``, 2 cycles); :func:`pv_tile_cycles`
PV_TILE_TAIL = 4


def pv_tile_tail(rows: int, config: KaleidoConfig, array_latency: int = BEAT_REGISTER + PE_LATENCY) -> int:
    """Cycles from the P V tile stage's last array beat to its last total on
    ``o``: the query tile's last row is row ``r = (rows - 1) mod
    array_rows`` of its last pass, drained (deskewed to the last column)
    at PE ``(r, C - 1)``, ``r + C - 1 + array_latency`` cycles later
    (:func:`kaleido.config.tile_latency` on the Kaleido array; the dense
    array's is :data:`~kaleido.model.engine.DENSE_ARRAY_LATENCY`), then
    :data:`PV_TILE_TAIL`. It depends on the row the last total comes from,
    not on how many rows the array has (issue 19: the model used to wait
    for the array's last row, exact on 4-row arrays only)."""
    r = (rows - 1) % config.array_rows
    return r + config.array_cols - 1 + array_latency + PV_TILE_TAIL


def pv_tile_beats(V, shape, rows: int, config: KaleidoConfig | None = None, P=None) -> tuple[int, int]:
    """Array beats of one key tile in the P V tile stage, and the beats of
    its last two units (:func:`pv_tile_run`'s ``(B, b_penult + b_last)``)."""
    beats, penult, last = pv_tile_run(V, shape, rows, config, P)
    return beats, penult + last


def pv_tile_run(V, shape, rows: int, config: KaleidoConfig | None = None, P=None) -> tuple[int, int, int]:
    """Array beats of one key tile in the P V tile stage, and the beats of
    its second-to-last and of its last unit: per channel block (:func:`kaleido.hdl.pv_tile.channel_blocks`)
    and per block of ``array_rows`` query rows, the passes of :func:`pv_cycles`
    (one beat per unpaired unit and per pair FULL at every channel of the
    block, two per other pair), each pass shorter than ``array_rows`` units
    padded to ``array_rows`` one-beat units. ``V``: the key tile's int8 V
    (keys x d, the box ``shape``'s token order). With small-P pairing
    (``config.pv_pairs``) the beats depend on ``P`` (``rows`` x keys, the
    same order; required): a unit's beats are those the dispatcher issues
    while it holds it (:func:`pair_occupancy`; a padding unit, V = 0, is a
    small half)."""
    from ..checks import as_int8, check_grid
    from ..golden.pv import unit_full
    from ..loopnest import group_slices, pv_chunk, units

    config = config or KaleidoConfig()
    as_int8("V", V)
    shape = check_grid(shape, V.shape[0])
    if config.pv_pairs:
        return _pv_tile_run_pairs(V, shape, check_positive("rows", rows), config, P)
    R, C, chunk = config.array_rows, config.array_cols, pv_chunk(config)
    per_block = 0
    last: list[int] = []
    for sl, axis in group_slices(config.split):
        u = units(shape, axis)
        paired = u[:, 1] >= 0
        full = unit_full(V, u, np.arange(sl.start, sl.stop), config.F)
        for cs in chunks(sl.stop - sl.start, C):
            beats = np.where(~paired | full[:, cs].all(axis=1), 1, 2)
            for ps in chunks(len(u), chunk):
                n = ps.stop - ps.start
                per_block += int(beats[ps].sum()) + max(0, R - n)
                last = (last + [int(b) for b in beats[ps]] + [1] * max(0, R - n))[-2:]
    return math.ceil(check_positive("rows", rows) / R) * per_block, last[0], last[1]


def _pv_tile_run_pairs(V, shape, rows: int, config: KaleidoConfig, P) -> tuple[int, int, int]:
    """:func:`pv_tile_run` with small-P pairing: every row block's passes
    in the stage's walk order (channel blocks, row blocks, passes)."""
    from ..config import SMALL_P
    from ..golden.pv import check_p, unit_full
    from ..loopnest import group_slices, pv_chunk, units

    if P is None:
        raise ValueError("pv_pairs needs P: with small-P pairing the P V tile stage's beats depend on P")
    P = check_p(P, V.shape[0])
    if P.shape[0] != rows:
        raise ValueError(f"P must have {rows} rows (the query tile's), not shape {P.shape!r}")
    R, C, chunk = config.array_rows, config.array_cols, pv_chunk(config)
    nb = math.ceil(rows / R)
    blocks = np.zeros((nb * R, P.shape[1]), np.int64)
    blocks[:rows] = P
    blocks = blocks.reshape(nb, R, P.shape[1])
    total = 0
    last: list[int] = []
    for sl, axis in group_slices(config.split):
        u = units(shape, axis)
        full = unit_full(V, u, np.arange(sl.start, sl.stop), config.F)
        for cs in chunks(sl.stop - sl.start, C):
            chans = np.arange(sl.start + cs.start, sl.start + cs.stop)
            two, s1, s2 = _small_halves(V, blocks, u, chans, full[:, cs], SMALL_P)
            occ = []
            for ps in chunks(len(u), chunk):
                pad = max(0, R - (ps.stop - ps.start))  # padding units: unpaired, V = 0, so small
                occ.append(
                    pair_occupancy(
                        np.concatenate([two[ps], np.zeros(pad, bool)]),
                        np.concatenate([s1[:, ps], np.ones((nb, pad), bool)], axis=1),
                        np.concatenate([s2[:, ps], np.ones((nb, pad), bool)], axis=1),
                    )
                )
            flat = np.concatenate(occ, axis=1).reshape(-1)  # row block by row block, as the walk issues them
            total += int(flat.sum())
            last = (last + [int(b) for b in flat[-2:]])[-2:]
    return total, last[0], last[1]


def _pv_run_issue(last_fill: int, run: tuple[int, int, int], prev: tuple[int, int, int] | None) -> int:
    """The cycle the P V tile stage issues a key tile's last unit: its
    passes start once its fill's last beat is in (``last_fill``) and the
    previous key tile's last unit has issued (``prev``: that cycle and its
    last two units' beats, or ``None``). A unit issues as the one before it
    enters the array, and the array takes a unit when it has spent the
    previous one's beats: the previous run's last unit enters ``b_penult``
    cycles after its issue, and the array is free ``b_last`` cycles later.
    The first unit issues the cycle after ``last_fill`` at the earliest and
    enters the array the cycle after it issues; from then on each unit
    issues as the one before it enters, so the last issues ``B - b`` cycles
    after the first enters (``b``: the last two units' beats; every key tile
    has at least three units, one per channel group). From an empty
    pipeline (``prev`` long done) this is ``last_fill + B - b +
    PV_TILE_ISSUE - 1``."""
    beats, penult, last = run
    if prev is None:
        first_in = last_fill + PV_TILE_ISSUE - 1
    else:
        p_issue, p_penult, p_last = prev
        entered = p_issue + p_penult
        first_in = max(max(last_fill + 1, entered) + 1, entered + p_last)
    return first_in + beats - penult - last


class PvSlots:
    """The P V tile stage's key-tile buffers in time, for
    :func:`pv_tile_cycles` and :func:`core_cycles` alike: ``free`` is the
    first cycle a header may be taken (its slot free: the key tile
    ``buffers`` before has issued its last unit; and the previous fill
    done), ``issue(last_fill, run)`` a key tile's last issue
    (:func:`_pv_run_issue`) once its fill's last beat is ``last_fill``."""

    def __init__(self, buffers: int):
        self.issues: collections.deque[int] = collections.deque(maxlen=buffers)
        self.prev: tuple[int, int, int] | None = None  # the last key tile's (issue, b_penult, b_last)
        self.free = 0

    def issue(self, last_fill: int, run: tuple[int, int, int]) -> int:
        last = _pv_run_issue(last_fill, run, self.prev)
        self.prev = (last, run[1], run[2])
        self.issues.append(last)
        full = len(self.issues) == self.issues.maxlen
        self.free = max(last_fill + 1, self.issues[0] + 1 if full else 0)
        return last


def pv_tile_cycles(walk, config: KaleidoConfig | None = None, buffers: int | None = None) -> int:
    """Exact cycles of the P V tile stage (``kaleido.hdl.pv_tile.PvTile``)
    with no stalls, for query tiles walked back to back: ``walk`` holds one
    ``(rows, key_tiles)`` per query tile, ``key_tiles`` one ``(V, shape)``
    per key tile (``(V, shape, P)`` with small-P pairing,
    ``config.pv_pairs``). Counted from the first transfer on ``i`` to the
    last on ``o``, both counted.

    ``buffers`` (default ``CoreConfig().pv_buffers``): the key tiles the
    stage holds. A key tile's header is taken once its buffer is free (the
    key tile ``buffers`` before it has issued its last unit) and the
    previous fill is done; its ``1 + n + rows n`` fill beats (``n`` keys)
    follow one a cycle; its units issue once the fill is in and the previous
    key tile's last unit has issued (:func:`_pv_run_issue`). With one
    buffer: a key tile of ``n`` keys takes ``1 + n + rows n`` fill beats, one a
    cycle; its units then issue one per beat (:func:`pv_tile_beats`: ``B``
    beats, ``b`` of them the last two units'; a unit issues as the one
    before it enters the dispatcher), so the last unit issues ``B - b +
    PV_TILE_ISSUE - 1`` cycles after the last fill beat and ``i`` takes the
    next key tile's header the cycle after. The final key tile's last
    total leaves ``b + r + C + 2 + PV_TILE_TAIL`` cycles after its last unit
    issues, ``r = (rows - 1) mod array_rows`` the row of the pass it comes
    from (``r + C + 2``: ``tile_latency(r, C - 1)``, the drain of that row;
    row ``r`` of a pass drains ``r`` cycles after row 0, whatever the
    array's rows).
    Checked equal to the RTL in ``tb/test_pv_tile.py``."""
    from ..checks import check_pv_buffers
    from ..config import CoreConfig

    config = config or KaleidoConfig()
    buffers = check_pv_buffers(CoreConfig().pv_buffers if buffers is None else buffers)
    tiles = list(walk)
    if not tiles:
        raise ValueError("walk must hold at least one query tile, not none")
    slots = PvSlots(buffers)
    last = 0
    for rows, key_tiles in tiles:
        key_tiles = list(key_tiles)
        if not key_tiles:
            raise ValueError("key_tiles must hold at least one key tile, not none")
        for V, shape, *p in key_tiles:
            n = int(np.prod(shape))
            run = pv_tile_run(V, shape, rows, config, p[0] if p else None)
            last = slots.issue(slots.free + n + rows * n, run) + run[1] + run[2]
    return last + pv_tile_tail(tiles[-1][0], config) + 1
