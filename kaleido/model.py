"""Cycle-level performance model of Kaleido arrays (spec sec. 9).

Vectorised over passes: per channel group, batch and phase, each row group
(``array_rows`` row units, in queue or scheduled order) is summarised by a
4-bit mask per channel of the follower classes it holds (NONE, PARTIAL,
FULL, ABSENT; padding units hold none), each column group likewise; the
lookup table of spec sec. 7 (:func:`need_table`) turns a (row mask, column
mask) pair into the array-level need, and the matcher (or plain issue)
turns a pass's needs into slots. Issue 16 made it fast without changing a
count: masks with equal table rows (columns) are merged, each row group
becomes bit words of the channels where it holds each row class, each
column group the non-SKIP and HALF words under each row class, so a
pass's need words are a few ANDs and ORs of its row and column keys; slots
are evaluated once per distinct (row key, column key) pair, the matcher as
a byte-wide automaton table (:func:`_slot_table`), and summed with the
pairs' multiplicities (per array, for the round-robin deal); the
scheduler's order is vectorised over its windows
(:func:`kaleido.golden.scheduler.schedule_order`). A 32,768-token head
takes about 1.5 s instead of 40 to 70 s (``make bench``).
:mod:`kaleido.explore.reference_walk` keeps the walk it replaced; the tests hold
the two equal. Timing is the RTL's (docs/ARRAY.md, docs/DISPATCH.md):

* a phase costs ``max(1, slots)`` beats; passes stream back to back;
* ``pass_gap`` idle beats per pass (1 for the RTL's single-buffered
  ``PassDispatcher``, plus 1 at the start; 0 for the bare array);
* the last tile leaves ``tile_latency(R - 1, C - 1) = R + C`` cycles
  after the last beat's cycle starts (``kaleido.config.tile_latency``: the
  skew, the hops and the PE's product and drain registers), so a stream of
  ``n`` beats occupies ``n + R + C`` cycles;
* passes are dealt to ``arrays`` arrays round-robin; the run ends with the
  slowest array.

The scheduler is assumed to run ahead of the array (the paper pipelines
it with compute): its per-window time (``golden.scheduler.schedule_cycles``,
``3m + draws + clusters + 1`` cycles for ``m`` strings, checked against the RTL)
is far below the passes a window feeds (16 row groups x every column group)
and is not added. :func:`engine_cycles` is the integrated engine's exact
count, which adds what the engine does not hide (it pipelines scheduling
with the passes, but batch 0's scheduling, the drain at each batch
boundary and a batch scheduled slower than the previous one's passes
show; docs/ENGINE.md).

The dense baseline is an output-stationary MAC array with the same number
of PEs (``R x C`` token pairs per pass, one channel per cycle over the
whole head, same drain): ``ceil(N/R) * ceil(N/C) * d + R + C - 1`` cycles.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import math
from collections.abc import Iterator

import numba
import numpy as np

from .checks import check_qk, check_variant
from .config import LFSR_SEED, PE_LATENCY, RMW_LATENCY, KaleidoConfig, SoftmaxFormat, s_bank, tile_latency
from .encoding import TAGS, Need, Phase, array_need, pe_need
from .golden.grouped import grouped_follower_classes, grouped_op_counts
from .golden.loopnest import unit_order, unit_schedule
from .loopnest import batches, chunks, dense_pass_beats, unit_tags

__all__ = [
    "VARIANTS",
    "ModelResult",
    "run_model",
    "stream_cycles",
    "array_drain",
    "queue_ticks",
    "need_table",
    "EngineTiming",
    "engine_cycles",
    "engine_tiles",
    "DenseEngineTiming",
    "dense_engine_cycles",
    "DENSE_PE_LATENCY",
    "DENSE_FIRST_TAKE",
    "ENGINE_MODEL_TOKENS",
    "pass_phase_beats",
    "scheduler_cycles",
    "linear_cycles",
    "PvTiming",
    "pv_cycles",
    "pv_pair_block_beats",
    "load_cycles",
    "tile_feed_cycles",
    "core_cycles",
    "group_masks",
    "attention_stages",
    "SOFTMAX_LATENCY",
    "softmax_cycles",
    "output_scaler_cycles",
    "TILE_SOFTMAX_LATENCY",
    "tile_softmax_cycles",
    "pv_tile_beats",
    "pv_tile_cycles",
    "pv_tile_run",
    "pv_tile_tail",
    "PV_TILE_ISSUE",
    "PV_TILE_TAIL",
]

#: paper variants: (scheduler, matcher)
VARIANTS = {"pe": (False, False), "pe-sh": (True, False), "pe-m": (False, True), "full": (True, True)}


@functools.cache
def need_table(accumulators: int = 3) -> np.ndarray:
    """uint8 ``[phase, row mask, column mask]`` -> array-level :class:`Need`
    (:func:`kaleido.encoding.array_need` of the union of the PE needs); a
    mask is a 4-bit set of the follower tags present. Computed once per
    ``accumulators`` (read-only: every caller shares it)."""
    table = np.zeros((4, 16, 16), dtype=np.uint8)
    for phase in Phase:
        for a in range(16):
            for b in range(16):
                union = 0
                for q in TAGS:
                    for k in TAGS:
                        if (a >> q) & 1 and (b >> k) & 1:
                            union |= int(pe_need(phase, q, k, accumulators))
                table[phase, a, b] = array_need(phase, union)
    table.setflags(write=False)
    return table


def array_drain(config: KaleidoConfig) -> int:
    """Cycles from the array accepting its last beat to the last PE's tile
    valid: :func:`kaleido.config.tile_latency` of PE ``(R - 1, C - 1)``."""
    return tile_latency(config.array_rows - 1, config.array_cols - 1)


def stream_cycles(beats: int, config: KaleidoConfig) -> int:
    """Cycles from the first beat to the last tile for ``beats`` beats, both
    counted."""
    return beats + array_drain(config)


def _lanes(ns: np.ndarray, half: np.ndarray) -> np.ndarray:
    """bool ``(..., n)`` non-SKIP and HALF channels (``n <= 64``) -> the
    walk's need words ``(..., lanes)``: per byte of 8 channels a 16-bit
    field, the non-SKIP bits high, the HALF bits low (channel ``c`` at bit
    ``c mod 8`` of its byte's field); one uint32 lane for up to 16 channels,
    else uint64 lanes of 32 channels."""
    n = ns.shape[-1]
    dtype = np.uint32 if n <= 16 else np.uint64
    per_lane = 2 if n <= 16 else 4  # bytes
    c = np.arange(n)
    byte, bit = c // 8, c % 8
    lane = byte // per_lane
    shift = (16 * (byte % per_lane) + bit).astype(dtype)
    out = np.zeros((*ns.shape[:-1], int(lane.max()) + 1 if n else 1), dtype=dtype)
    for ln in range(out.shape[-1]):
        at = lane == ln
        words = (ns[..., at].astype(dtype) << (shift[at] + dtype(8))) | (half[..., at].astype(dtype) << shift[at])
        out[..., ln] = np.bitwise_or.reduce(words, axis=-1) if at.any() else 0
    return out


@functools.lru_cache(maxsize=8)
def _slot_table(lookahead: int | None) -> np.ndarray:
    """The golden matcher (:func:`kaleido.golden.matcher.match`) as an
    automaton over one byte of channels: uint16 indexed by ``(state << 16) |
    (non-SKIP bits << 8) | HALF bits`` -> ``(state' << 4) | slots`` (the
    byte's non-SKIP channels less its DUAL_LO slots).

    Each HALF head pairs with the first HALF after it when at most
    ``lookahead - 1`` (FULL) channels lie between (the entries after a head
    are never taken by an earlier head's partner, so the window is the next
    ``lookahead`` non-SKIP channels). State 0: no HALF head waiting; ``1 +
    m``: one waits with ``m`` FULL channels after it. ``None``: no matcher,
    one slot per non-SKIP channel. The walk clips ``lookahead`` to the
    batch (a longer window never ends inside it)."""
    L = 0 if lookahead is None else lookahead
    idx = np.arange((L + 1) << 16, dtype=np.int64)
    state = idx >> 16
    ns = (idx >> 8) & 0xFF
    half = idx & 0xFF & ns
    slots = np.zeros_like(idx)
    for c in range(8):
        is_half = ((half >> c) & 1).astype(bool)
        is_full = ((ns >> c) & 1).astype(bool) & ~is_half
        waiting = state > 0
        slots += is_full | (is_half & ~waiting)
        state = np.where(
            is_half,
            np.where(waiting, 0, 1 if L > 0 else 0),
            np.where(is_full & waiting, np.where(state < L, state + 1, 0), state),
        )
    return ((state << 4) | slots).astype(np.uint16)


def _pair_slots(rows: np.ndarray, cols: np.ndarray, lookahead: int | None) -> np.ndarray:
    """Slots of every (row key, column key) pair of one phase: ``rows``
    (``k``, R, lanes) need-word masks of the row classes that need
    something (the channels where a row group holds that class), ``cols``
    (``k``, C, lanes) the columns' need words under each of them; a pair's
    need words are ``OR_k rows[k] & cols[k]`` (:func:`_lanes`). Returns
    uint16 ``(R, C)``: one slot per non-SKIP channel less the matcher's
    DUAL_LO slots (``lookahead`` None: no matcher)."""
    k, R, n_lanes = rows.shape
    C = cols.shape[1]
    slots = np.zeros((R, C), dtype=np.uint16)
    if not k:
        return slots
    table = _slot_table(lookahead)
    state = None
    for ln in range(n_lanes):
        word = rows[0, :, None, ln] & cols[0, None, :, ln]
        tmp = np.empty_like(word)
        for j in range(1, k):
            np.bitwise_and(rows[j, :, None, ln], cols[j, None, :, ln], out=tmp)
            word |= tmp
        if lookahead is None:
            ns_mask = word.dtype.type(0xFF00FF00FF00FF00 & np.iinfo(word.dtype).max)
            slots += np.bitwise_count(word & ns_mask).astype(np.uint16)
            continue
        for b in range(word.itemsize // 2):
            field = (word >> word.dtype.type(16 * b)) & word.dtype.type(0xFFFF) if b else word & word.dtype.type(0xFFFF)
            idx = field.astype(np.intp)
            if state is not None:
                idx |= state << 16
            v = table[idx]
            slots += v & np.uint16(15)
            state = (v >> np.uint16(4)).astype(np.intp)
    return slots


def _mask_classes(t: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """Masks with equal rows (``axis`` 0) or columns (1) of a phase's need
    table are one class: ``(class of each mask (16,), a representative mask
    per class)``."""
    rows = t if axis == 0 else t.T
    _, first, inverse = np.unique(rows, axis=0, return_index=True, return_inverse=True)
    return inverse.ravel(), first


@functools.cache
def _phase_plans(accumulators: int) -> tuple:
    """Per phase, the need table reduced to its mask classes:
    ``(row class of each mask, column class of each mask, the Need of each
    (kept row class, column class), the kept row classes)``; a row class
    whose every column class is SKIP is not kept. Computed once per
    ``accumulators`` (read-only arrays, shared by every caller)."""
    table = need_table(accumulators)
    plans = []
    for phase in Phase:
        t = table[phase]
        rcls, rrep = _mask_classes(t, 0)
        ccls, crep = _mask_classes(t, 1)
        reduced = t[rrep][:, crep]  # [row class, column class] -> Need
        kept = [k for k in range(len(rrep)) if (reduced[k] != Need.SKIP).any()]
        plan = (rcls, ccls, reduced[kept], np.array(kept, dtype=np.int64))
        for a in plan:
            a.setflags(write=False)
        plans.append(plan)
    return tuple(plans)


#: key pairs evaluated at once (temporaries stay in cache)
_CHUNK = 1 << 17


@dataclasses.dataclass
class ModelResult:
    cycles: int
    dense_cycles: int
    speedup: float
    utilization: float
    ops: dict
    phases: dict
    passes: int
    beats: int
    arrays: int
    variant: str
    quality: dict | None = None
    #: per batch: (sum over its passes of beats + pass_gap, the last pass's beats + pass_gap)
    batch_beats: list | None = None

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def group_masks(tags, size):
    """Per group of ``size`` units: uint8 ``(groups, n)`` class masks; the
    padding units that complete the last group hold no class."""
    U, n = tags.shape
    G = -(-U // size)
    bits = np.zeros((G * size, n), dtype=np.uint8)
    bits[:U] = np.left_shift(1, tags.astype(np.uint8))
    return np.bitwise_or.reduce(bits.reshape(G, size, n), axis=1)


def _walk(tags, n_batches: int, cfg: KaleidoConfig, *, variant: str, arrays: int, pass_gap: int, progress=None):
    """The array's beats over a loop nest given, per batch, the row and
    column units' tags in pass order (``(tq, tk)``, uint8 ``(U, n)``):
    ``(per_array, phase_beats, phase_slots, passes, batch_beats,
    phase_channels)`` (channels: the non-SKIP channels the slots carry). Passes
    are row group outer, column group inner, dealt round-robin: pass ``(i,
    j)`` of a batch goes to array ``(passes before + i Gc + j) mod arrays``.

    Per phase, a row group is reduced to its key, the channels at which it
    holds each class of row mask (masks with equal need-table rows are one
    class), a column group to its need words under each row class; a (row
    key, column key) pair fixes the pass's needs, so slots are evaluated
    once per distinct pair (:func:`_pair_slots`) and summed with the pairs'
    multiplicities per array (the ``arrays`` residues of rows and columns).
    The sums are exact: float64 products of integers below 2**53."""
    _, use_match = VARIANTS[variant]
    R, C = cfg.array_rows, cfg.array_cols
    A = arrays
    per_array = np.zeros(A, dtype=np.int64)
    phase_beats = [0, 0, 0, 0]
    phase_slots = [0, 0, 0, 0]
    phase_channels = [0, 0, 0, 0]
    n_pass = 0
    batch_beats = []
    plans = _phase_plans(cfg.accumulators)
    deal = ((np.arange(A)[:, None] + np.arange(A)[None, :]) % A).ravel()  # (row residue, column residue) -> array
    for index, (tq, tk) in enumerate(tags):
        n_ch = tq.shape[1]
        qm = group_masks(tq, R)  # (Gr, n)
        km = group_masks(tk, C)  # (Gc, n)
        Gr, Gc = len(qm), len(km)
        if 64 * Gr * Gc >= 1 << 53:
            raise ValueError(f"{Gr} x {Gc} passes in one batch exceed the model's exact float64 sums")
        row_res = (n_pass + np.arange(Gr, dtype=np.int64) * Gc) % A
        col_res = np.arange(Gc, dtype=np.int64) % A
        batch_total = pass_gap * Gr * Gc
        last = pass_gap
        for phase, (rcls, ccls, need, active) in zip(Phase, plans, strict=True):
            rkey, ckey = rcls[qm], ccls[km]
            held = rkey[None, :, :] == active[:, None, None]  # (k, Gr, n)
            cneed = need[:, ckey]  # (k, Gc, n)
            matcher = use_match and bool((cneed == Need.HALF).any())
            lookahead = min(cfg.lookahead, n_ch) if matcher else None
            # non-SKIP channels: a sum over channels, row and column counts apart
            phase_channels[phase] += int(
                np.einsum("kc,kc->", held.sum(axis=1, dtype=np.int64), (cneed != Need.SKIP).sum(axis=1, dtype=np.int64))
            )
            rw = _lanes(held, held)  # (k, Gr, lanes)
            cw = _lanes(cneed != Need.SKIP, cneed == Need.HALF)  # (k, Gc, lanes)
            if not len(active):  # nothing needed: every pass one beat
                rw, cw = np.zeros((1, Gr, 1), np.uint32), np.zeros((1, Gc, 1), np.uint32)
            (ur, rinv), (uc, cinv) = _distinct_words(rw), _distinct_words(cw)
            nr, nc = ur.shape[1], uc.shape[1]
            wr = np.bincount(row_res * nr + rinv, minlength=A * nr).reshape(A, nr).astype(np.float64)
            wc = np.bincount(col_res * nc + cinv, minlength=A * nc).reshape(A, nc).astype(np.float64)
            cc = wc.sum(axis=0)
            dealt = np.zeros((A, A))
            slot_sum = 0.0
            step = max(1, _CHUNK // max(1, nc))
            for r0 in range(0, nr, step):
                rs = slice(r0, r0 + step)
                slots = _pair_slots(ur[:, rs], uc, lookahead)
                beats = slots + (slots == 0)
                dealt += wr[:, rs] @ (beats @ wc.T)
                slot_sum += wr[:, rs].sum(axis=0) @ (slots @ cc)
            dealt_int = np.rint(dealt).astype(np.int64).ravel()
            per_array += np.bincount(deal, weights=dealt_int, minlength=A).astype(np.int64)
            total = int(dealt_int.sum())
            batch_total += total
            phase_beats[phase] += total
            phase_slots[phase] += round(slot_sum)
            last += max(1, int(_pair_slots(ur[:, rinv[-1:]], uc[:, cinv[-1:]], lookahead)[0, 0]))
        # pass_gap idle beats per pass: the passes per array
        passes = np.outer(np.bincount(row_res, minlength=A), np.bincount(col_res, minlength=A)).ravel()
        per_array += pass_gap * np.bincount(deal, weights=passes, minlength=A).astype(np.int64)
        batch_beats.append((batch_total, last))
        n_pass += Gr * Gc
        if progress:
            progress(index + 1, n_batches)
    return per_array, phase_beats, phase_slots, n_pass, batch_beats, phase_channels


def run_model(
    Q,
    K,
    grid,
    split,
    config: KaleidoConfig | None = None,
    *,
    variant="full",
    arrays: int = 1,
    pass_gap: int | None = None,
    progress=None,
    quality=None,
) -> ModelResult:
    """Model one head ``Q K^T`` (int8 ``(N, d)``) on ``arrays`` Kaleido arrays.

    ``variant`` in :data:`VARIANTS`; ``pass_gap`` idle beats per pass (see
    module doc; ``None``: 0 on one array of the pass's shape, 1 on small
    arrays); ``progress(done, total)`` is called per batch.

    Small arrays (``config.sub_arrays``, the default design; docs/ENGINE.md
    "Small arrays"): each pass's ``r x c`` blocks go, in order, through the
    shared queue of ``config.n_arrays`` arrays (:func:`queue_ticks`: one
    block leaves a cycle, to an array that is free; the array idles one
    beat after each block, so ``pass_gap`` must be 1), the batches back to
    back (the array alone: no scheduler or drain between batches, as with
    one array). Each block costs its small array's phases
    (:func:`pass_phase_beats` of ``config.sub_config()``). ``cycles`` is
    the last block's last beat plus the small array's drain; ``passes``,
    ``beats``, ``phases`` and ``utilization`` count blocks and their beats
    (the sixteen arrays' beats summed); ``dense_cycles`` is the dense array
    of the pass's shape (the same PEs). ``arrays`` must be 1: the queue is
    the design's arrays.
    """
    grid, split = check_qk(Q, K, grid, split)
    cfg = config or KaleidoConfig(split=tuple(split))
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {sorted(VARIANTS)}, not {variant!r}")
    pass_gap = check_arrays(cfg, arrays, pass_gap)
    use_sched, _ = VARIANTS[variant]
    nest = batches(cfg, grid, split)
    sched = _scheduled_batches(Q, K, grid, split, cfg, nest, scheduler=use_sched)
    return _run_scheduled(
        Q, K, grid, split, cfg, sched, variant=variant, arrays=arrays, pass_gap=pass_gap,
        progress=progress, quality=quality,
    )  # fmt: skip


def check_arrays(config: KaleidoConfig, arrays, pass_gap) -> int:
    """The ``pass_gap`` of :func:`run_model` and :func:`linear_cycles`
    (``None``: 0 on one array of the pass's shape, 1 on small arrays),
    after checking it and ``arrays``: small arrays (``config.sub_arrays``)
    are one queue of ``config.n_arrays`` arrays, each idle one beat after a
    block, so they take ``arrays = 1`` and ``pass_gap = 1`` only."""
    if not isinstance(arrays, int) or arrays < 1:
        raise ValueError(f"arrays must be a positive integer, not {arrays!r}")
    if pass_gap is None:
        pass_gap = 0 if config.sub_arrays is None else 1
    if not isinstance(pass_gap, int) or pass_gap < 0:
        raise ValueError(f"pass_gap must be a non-negative integer, not {pass_gap!r}")
    if config.sub_arrays is not None and (arrays, pass_gap) != (1, 1):
        raise ValueError(
            f"with sub_arrays {config.sub_arrays!r} the passes' blocks share one queue of {config.n_arrays} "
            f"arrays, each idle one beat after a block: arrays must be 1 and pass_gap 1, not {arrays!r} and "
            f"{pass_gap!r} (sub_arrays=None models one array of the pass's shape with any arrays and pass_gap)"
        )
    return pass_gap


def _scheduled_batches(Q, K, grid, split, cfg: KaleidoConfig, nest, *, scheduler: bool):
    """Per batch of ``nest``: ``(batch, tq, tk, perm_r, perm_c, W)``, the row
    and column units' tags in queue order, the scheduler's order of each
    side (:func:`unit_schedule`, one LFSR per side carried across batches;
    ``None`` without the scheduler) and ``W``, the cycles the engine's two
    schedulers take on the batch (:func:`scheduler_cycles`; ``None``
    without the scheduler, or when the two sides' windows differ and so
    cannot run in lockstep)."""
    qcls = grouped_follower_classes(Q, grid, split, cfg.thresholds)
    kcls = grouped_follower_classes(K, grid, split, cfg.thresholds)
    state = {"row": LFSR_SEED, "column": LFSR_SEED}
    lockstep = cfg.window("row") == cfg.window("column")
    for batch in nest:
        ch = batch.channels
        tq, tk = unit_tags(batch.units, qcls, ch), unit_tags(batch.units, kcls, ch)
        perm_r = perm_c = W = None
        if scheduler:
            rows = unit_schedule(tq, cfg, "row", state["row"])
            cols = unit_schedule(tk, cfg, "column", state["column"])
            perm_r, state["row"], perm_c, state["column"] = rows.order, rows.state, cols.order, cols.state
            if lockstep:  # per window the slower side
                W = sum(map(max, rows.window_cycles, cols.window_cycles))
        yield batch, tq, tk, perm_r, perm_c, W


def _run_scheduled(
    Q, K, grid, split, cfg: KaleidoConfig, sched, *, variant, arrays, pass_gap, progress, quality
) -> ModelResult:
    """:func:`run_model` on the batches of :func:`_scheduled_batches`."""
    n_tok, d = Q.shape
    R, C = cfg.array_rows, cfg.array_cols
    dense_cycles = math.ceil(math.ceil(n_tok / R) * math.ceil(n_tok / C) / arrays) * d + R + C - 1
    counts = grouped_op_counts(Q, K, grid, split, cfg.thresholds)
    ordered = [(tq, tk) if perm_r is None else (tq[perm_r], tk[perm_c]) for _, tq, tk, perm_r, perm_c, _ in sched]
    return _timed(ordered, cfg, counts, dense_cycles, variant=variant, arrays=arrays, pass_gap=pass_gap,
                  progress=progress, quality=quality)  # fmt: skip


def _timed(ordered, cfg: KaleidoConfig, counts, dense_cycles, *, variant, arrays, pass_gap, progress, quality):
    """The :class:`ModelResult` of every batch's row and column tags in
    pass order (``ordered``): one array's walk, or on small arrays the
    small array's walk for the sums and the shared queue for the cycles
    (:func:`run_model`)."""
    if cfg.sub_arrays is None:
        walk = _walk(ordered, len(ordered), cfg, variant=variant, arrays=arrays, pass_gap=pass_gap, progress=progress)
        return _result(
            walk, cfg, counts, dense_cycles, pass_gap=pass_gap, arrays=arrays, variant=variant, quality=quality
        )
    sub = cfg.sub_config()
    walk = _walk(ordered, len(ordered), sub, variant=variant, arrays=1, pass_gap=pass_gap, progress=progress)
    res = _result(walk, sub, counts, dense_cycles, pass_gap=pass_gap, arrays=cfg.n_arrays, variant=variant,
                  quality=quality)  # fmt: skip
    _, matcher = VARIANTS[variant]
    blocks = (piece for tq, tk in ordered for piece in iter_block_beats(tq, tk, cfg, matcher=matcher))
    res.cycles = queue_end(blocks, cfg.n_arrays) + array_drain(sub)
    res.speedup = dense_cycles / res.cycles
    return res


def _result(walk, cfg: KaleidoConfig, counts: dict, dense_cycles: int, *, pass_gap, arrays, variant, quality):
    """The :class:`ModelResult` of a :func:`_walk`: cycles (``pass_gap``'s
    start beat, then the array's drain), utilization and the ops of
    ``counts`` (``dense``, ``oracle``, ``hw3``/``hw4``)."""
    per_array, phase_beats, phase_slots, n_pass, batch_beats, phase_channels = walk
    cycles = int(per_array.max()) + (1 if pass_gap else 0) + array_drain(cfg)
    total_beats = int(per_array.sum())
    hw = counts["hw4" if cfg.accumulators == 4 else "hw3"]
    return ModelResult(
        cycles=cycles,
        dense_cycles=dense_cycles,
        speedup=dense_cycles / cycles,
        utilization=hw / (2 * cfg.array_rows * cfg.array_cols * total_beats) if total_beats else 0.0,
        ops={"dense": counts["dense"], "oracle": counts["oracle"], "hw": hw},
        phases={
            p.name: {"beats": phase_beats[p], "slots": phase_slots[p], "channels": phase_channels[p]} for p in Phase
        },
        passes=n_pass,
        beats=total_beats,
        arrays=arrays,
        variant=variant,
        quality=quality,
        batch_beats=batch_beats,
    )


def linear_cycles(
    X,
    d_out: int,
    grid,
    config: KaleidoConfig | None = None,
    rule=None,
    *,
    variant: str = "full",
    arrays: int = 1,
    pass_gap: int | None = None,
) -> ModelResult:
    """Model a linear layer ``X W`` (int8 activations ``(N, d_in)``, ``d_out``
    outputs) with reuse on the activations (issue 17,
    :mod:`kaleido.golden.linear`): the ``Q K^T`` array walk with the
    activation units as rows and pairs of output features (tag NONE) as
    columns, batches over ``d_in``; the scheduler orders the rows only.
    Dense: ``ceil(N/R) ceil(d_out/C) d_in + R + C - 1``. Timing as
    :func:`run_model` (``pass_gap=1`` for the RTL's ``DispatchedArray``;
    small arrays, ``config.sub_arrays``, through the shared queue)."""
    from .golden.linear import LinearReuse, linear_batches, linear_classes, linear_op_counts, weight_units

    cfg = config or KaleidoConfig()
    rule = rule or LinearReuse()
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {sorted(VARIANTS)}, not {variant!r}")
    pass_gap = check_arrays(cfg, arrays, pass_gap)
    _, xcls = linear_classes(X, grid, rule)
    n_tok, d_in = X.shape
    wu = weight_units(int(d_out))
    wcls = np.zeros((int(d_out), d_in), dtype=np.uint8)  # NONE
    nest = linear_batches(cfg, d_in, tuple(grid), rule)
    use_sched, _ = VARIANTS[variant]
    state = LFSR_SEED

    def tags():
        nonlocal state
        for batch in nest:
            ch = batch.channels
            tq = unit_tags(batch.units, xcls, ch)
            if use_sched:
                perm, state = unit_order(tq, cfg, "row", state)
                tq = tq[perm]
            yield tq, unit_tags(wu, wcls, ch)

    R, C = cfg.array_rows, cfg.array_cols
    dense_cycles = math.ceil(math.ceil(n_tok / R) * math.ceil(d_out / C) / arrays) * d_in + R + C - 1
    counts = linear_op_counts(X, grid, int(d_out), rule)
    return _timed(list(tags()), cfg, counts, dense_cycles, variant=variant, arrays=arrays, pass_gap=pass_gap,
                  progress=None, quality=None)  # fmt: skip


# ---------------------------------------------------------------------------
# The integrated engine (hdl/engine.py, docs/ENGINE.md)
# ---------------------------------------------------------------------------


def scheduler_cycles(Q, K, grid, split, config: KaleidoConfig | None = None) -> list[int]:
    """Per batch, the cycles the engine's two schedulers (row side over the
    Q strings, column side over the K strings, fed in lockstep) take:
    per window of 64 strings the slower side's
    :func:`~kaleido.golden.scheduler.schedule_cycles`, each side's LFSR state
    carried across windows and batches."""
    grid, split = check_qk(Q, K, grid, split)
    cfg = config or KaleidoConfig(split=tuple(split))
    _check_lockstep(cfg)
    return [W for *_, W in _scheduled_batches(Q, K, grid, split, cfg, batches(cfg, grid, split), scheduler=True)]


def _check_lockstep(cfg: KaleidoConfig) -> None:
    if cfg.window("column") != cfg.window("row"):
        raise ValueError(
            f"the engine's schedulers run in lockstep: the row and column windows must agree, "
            f"not {cfg.window('row')} and {cfg.window('column')}"
        )


#: largest head :func:`engine_cycles` lays out tile by tile
ENGINE_MODEL_TOKENS = 4096


def pass_phase_beats(tq: np.ndarray, tk: np.ndarray, config: KaleidoConfig, *, matcher: bool = True) -> np.ndarray:
    """One batch's passes on the array (scheduler order as given; the
    matcher on unless ``matcher=False``): int64 ``(Gr, Gc, 4)``, the beats
    of each phase of pass (row group, column group), ``max(1, slots)``. The
    same reduction as :func:`run_model`'s walk, kept per pass instead of
    summed; the tests hold the two equal (``batch_beats``)."""
    cfg = config
    R, C = cfg.array_rows, cfg.array_cols
    n_ch = tq.shape[1]
    qm, km = group_masks(tq, R), group_masks(tk, C)
    Gr, Gc = len(qm), len(km)
    out = np.ones((Gr, Gc, 4), dtype=np.int64)
    for phase, (rcls, ccls, need, active) in zip(Phase, _phase_plans(cfg.accumulators), strict=True):
        if not len(active):
            continue
        rkey, ckey = rcls[qm], ccls[km]
        held = rkey[None, :, :] == active[:, None, None]
        cneed = need[:, ckey]
        lookahead = min(cfg.lookahead, n_ch) if matcher and bool((cneed == Need.HALF).any()) else None
        rw = _lanes(held, held)  # (k, Gr, lanes)
        cw = _lanes(cneed != Need.SKIP, cneed == Need.HALF)  # (k, Gc, lanes)
        # the slots of each distinct (row words, column words) pair once, then every pass's by its pair
        (ur, rinv), (uc, cinv) = _distinct_words(rw), _distinct_words(cw)
        slots = np.maximum(_pair_slots(ur, uc, lookahead), 1).astype(np.int64)
        out[:, :, phase] = slots[rinv[:, None], cinv[None, :]]
    return out


def _distinct_words(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(k, G, lanes)`` words of ``G`` groups: the distinct groups' words
    ``(k, n, lanes)`` and each group's index among them."""
    k, G, L = w.shape
    u, inv = np.unique(w.transpose(1, 0, 2).reshape(G, k * L), axis=0, return_inverse=True)
    return u.reshape(len(u), k, L).transpose(1, 0, 2), inv.ravel()


@dataclasses.dataclass
class _BatchTiles:
    """One batch's accumulation-buffer traffic, in the array's own time
    from the batch's first pass taken (tick 0): ``last_take`` (its last
    pass's tick), ``last_tile`` (the last PE's last T3 tile), ``ticks``
    (sorted ticks with tiles for ``S``) and ``banks``/``counts`` (sparse:
    per tile tick and bank, tiles routed there)."""

    length: int
    last_take: int
    last_tile: int
    ticks: np.ndarray
    banks: np.ndarray
    counts: np.ndarray


def _unit_tokens(units, perm, size: int, groups: int) -> np.ndarray:
    """The (anchor, follower) tokens of the units in ``perm`` order, in
    ``groups`` groups of ``size`` (padding: -1): int64 ``(groups, size, 2)``."""
    toks = np.full((groups * size, 2), -1, dtype=np.int64)
    toks[: len(perm)] = units[perm]
    return toks.reshape(groups, size, 2)


def _tile_traffic(rt, ct, gi, gj, last_beat, length: int, last_take: int, cfg: KaleidoConfig) -> _BatchTiles:
    """The buffer's traffic of passes (or blocks) on arrays of ``r x c``
    PEs: pass ``k`` holds row group ``gi[k]`` of ``rt`` (``(groups, r, 2)``
    tokens) and column group ``gj[k]`` of ``ct``, its phase ``p``'s last
    beat at tick ``last_beat[k, p]``; PE ``(y, x)``'s tile comes
    ``tile_latency(y, x)`` later, for ``S[i, j]`` (row unit ``y``'s anchor
    or follower, column unit ``x``'s), routed to bank
    :func:`~kaleido.config.s_bank`; tiles of absent tokens go nowhere."""
    B = cfg.s_banks
    r, c = rt.shape[1], ct.shape[1]
    lat = np.add.outer(np.arange(r), np.arange(c)) + tile_latency(0, 0)  # (r, c)
    keys = []
    for p in range(4):
        ii = rt[gi][:, :, p >> 1][:, :, None]  # (passes, r, 1)
        jj = ct[gj][:, :, p & 1][:, None, :]  # (passes, 1, c)
        ok = (ii >= 0) & (jj >= 0)
        when = last_beat[:, p][:, None, None] + lat[None, :, :]
        key = when * B + s_bank(ii, jj, B)
        keys.append(key[ok])
    allkeys = np.concatenate(keys) if keys else np.zeros(0, dtype=np.int64)
    uk, cnt = np.unique(allkeys, return_counts=True)
    return _BatchTiles(
        length=length,
        last_take=last_take,
        last_tile=int(last_beat[:, 3].max() + tile_latency(r - 1, c - 1)),
        ticks=uk // B,
        banks=uk % B,
        counts=cnt.astype(np.int64),
    )


def _batch_tiles(units, perm_r, perm_c, beats, cfg: KaleidoConfig) -> _BatchTiles:
    """The tiles of one batch on one array: pass ``k`` (row group outer) is
    taken at tick ``T_k`` (every pass its beats and one idle beat); its
    phase ``p``'s last beat is at ``T_k + 1 + beats_0 + ... + beats_p``
    (:func:`_tile_traffic`)."""
    R, C = cfg.array_rows, cfg.array_cols
    Gr, Gc, _ = beats.shape
    flat = beats.reshape(Gr * Gc, 4)
    length = flat.sum(axis=1) + 1
    take = np.concatenate([[0], np.cumsum(length)[:-1]])
    last_beat = take[:, None] + 1 + np.cumsum(flat, axis=1)
    gi, gj = np.repeat(np.arange(Gr), Gc), np.tile(np.arange(Gc), Gr)
    rt, ct = _unit_tokens(units, perm_r, R, Gr), _unit_tokens(units, perm_c, C, Gc)
    return _tile_traffic(rt, ct, gi, gj, last_beat, int(length.sum()), int(take[-1]), cfg)


def queue_ticks(present: np.ndarray, beats: np.ndarray, arrays: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The shared queue of :class:`~kaleido.hdl.array_set.ArraySet` over
    one batch's blocks in order (``present``: bool ``(K,)``, ``beats``:
    their total beats ``(K,)``), in the arrays' time from the batch's first
    pass taken (tick 0): block ``k`` leaves at ``h_k = max(h_{k-1} + 1,
    earliest free array)`` (``h_{-1} = 0``; an absent block needs no
    array), to the lowest-index array free by then, which is free again
    ``beats + 1`` later. Returns ``(h, array, pass_take, length)``:
    each block's tick and array (-1: absent), the tick each pass is taken
    (the tick its predecessor's last block leaves; ``K / arrays`` passes)
    and the tick after the last block."""
    n = len(beats)
    h = np.zeros(n, dtype=np.int64)
    who = np.full(n, -1, dtype=np.int64)
    _queue_run(present, beats, np.zeros(arrays, dtype=np.int64), 0, h, who)
    takes = np.concatenate([[0], h[arrays - 1 : -1 : arrays]]) if n else np.zeros(1, dtype=np.int64)
    return h, who, takes, int(h[-1]) + 1 if n else 1


@numba.njit(cache=True)
def _queue_run(present: np.ndarray, beats: np.ndarray, free: np.ndarray, t: int, h: np.ndarray, who: np.ndarray) -> int:
    """The shared queue over blocks in order (numba: one compiled loop;
    the recurrence is sequential and has no numpy form): each block a tick
    after the one before, a present one (``present``) no earlier than the
    earliest free array, to the lowest-index array free by then, which is
    then busy for its ``beats`` and one idle tick. ``free`` (each array's
    free tick) changes in place; ``h`` and ``who`` (as long as ``beats``)
    take each block's tick and array (``who`` stays as given for an absent
    block); returns the tick the last block left, from ``t`` before the
    first."""
    for k in range(len(present)):
        t += 1
        if present[k]:
            earliest = free[0]
            for i in range(1, len(free)):
                earliest = min(earliest, free[i])
            t = max(t, earliest)
            a = 0
            while free[a] > t:
                a += 1
            free[a] = t + beats[k] + 1
            who[k] = a
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


def _block_groups(n_rows: int, n_cols: int, config: KaleidoConfig) -> tuple[np.ndarray, np.ndarray]:
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


def queue_end(blocks, arrays: int) -> int:
    """The tick of the last beat when the blocks of every batch in turn
    (``blocks``: ``(present, phase)`` pairs of :func:`block_phase_beats`
    in order, or its pieces, :func:`iter_block_beats`) go through
    :func:`queue_ticks`' shared queue of ``arrays`` arrays with no wait
    between batches: block ``k`` leaves at ``h_k = max(h_{k-1} + 1,
    earliest free array)`` and its beats end at ``h_k + 1 + beats``. Which
    array takes a block does not change any tick (every array free by
    ``h_k`` stays free for later blocks). The loop over blocks is
    :func:`queue_ticks`' (:func:`_queue_run`), its state carried from piece
    to piece."""
    free = np.zeros(arrays, dtype=np.int64)
    t = 0
    for present, phase in blocks:
        scratch = np.empty(len(present), dtype=np.int64)  # the blocks' ticks and arrays, not needed here
        t = _queue_run(present, phase.sum(axis=1), free, t, scratch, scratch)
    return int(free.max())


def _batch_blocks(units, perm_r, perm_c, tq, tk, cfg: KaleidoConfig) -> _BatchTiles:
    """:func:`_batch_tiles` on ``config.n_arrays`` small arrays
    (``config.sub_arrays``): each pass's blocks through the shared queue
    (:func:`queue_ticks`), each block's phases on its array
    (:func:`block_phase_beats`)."""
    r, c = cfg.sub_shape
    rows, cols = _block_groups(len(perm_r), len(perm_c), cfg)
    present, phase = block_phase_beats(tq, tk, cfg)
    Gr, Gc = -(-len(perm_r) // cfg.array_rows), -(-len(perm_c) // cfg.array_cols)
    nr, nc = cfg.array_rows // r, cfg.array_cols // c
    h, _, takes, length = queue_ticks(present, phase.sum(axis=1), cfg.n_arrays)
    last_beat = h[:, None] + 1 + np.cumsum(phase, axis=1)
    rt, ct = _unit_tokens(units, perm_r, r, Gr * nr), _unit_tokens(units, perm_c, c, Gc * nc)
    return _tile_traffic(rt, ct, rows[present], cols[present], last_beat[present], length, int(takes[-1]), cfg)


def engine_tiles(Q, K, grid, split, config: KaleidoConfig | None = None) -> list[_BatchTiles]:
    """Per batch of a head on the engine, the accumulation buffer's traffic
    (:func:`_batch_tiles`) in the scheduled pass order."""
    grid, split = check_qk(Q, K, grid, split)
    cfg = config or KaleidoConfig(split=tuple(split))
    return _engine_tiles(_scheduled_batches(Q, K, grid, split, cfg, batches(cfg, grid, split), scheduler=True), cfg)


def _engine_tiles(sched, cfg: KaleidoConfig) -> list[_BatchTiles]:
    """:func:`engine_tiles` of the batches of :func:`_scheduled_batches`."""
    out = []
    for batch, tq, tk, perm_r, perm_c, _ in sched:
        units_ = np.asarray(batch.units, dtype=np.int64)
        if cfg.n_arrays > 1:
            out.append(_batch_blocks(units_, perm_r, perm_c, tq[perm_r], tk[perm_c], cfg))
        else:
            beats = pass_phase_beats(tq[perm_r], tk[perm_c], cfg)
            out.append(_batch_tiles(units_, perm_r, perm_c, beats, cfg))
    return out


def _bank_lindley(times: np.ndarray, counts: np.ndarray, depth: int) -> tuple[bool, int]:
    """One bank's FIFO over its arrivals (sorted distinct ``times``, tiles
    ``counts``) when the array is never held: a FIFO holding ``o`` entries
    at the start of a cycle gives one to the pipeline (if ``o > 0``) and
    takes that cycle's tiles, so ``u_i`` = entries left after cycle
    ``t_i``'s pop, before its arrivals, follows Lindley's recurrence
    ``u_i = max(0, u_{i-1} + c_{i-1} - (t_i - t_{i-1}))``, vectorised as
    ``P_i - min_{j <= i} P_j`` over the increments' prefix sums ``P``. Returns
    ``(fits, last_pop)``: whether every cycle's ``o + c <= depth`` (no hold)
    and the cycle of the bank's last pop."""
    a = np.empty(len(times), dtype=np.int64)
    a[0] = 0
    a[1:] = counts[:-1] - np.diff(times)
    P = np.cumsum(a)
    u = P - np.minimum(np.minimum.accumulate(P), 0)
    pre = np.empty_like(u)
    pre[0] = -1  # empty before the first arrival
    pre[1:] = u[:-1] + a[1:]
    occ = np.where(pre >= 0, u + 1, 0)
    fits = bool((occ + counts <= depth).all())
    return fits, int(times[-1] + u[-1] + counts[-1])


def _engine_walk(tiles: list[_BatchTiles], W: list[int], cfg: KaleidoConfig, *, holds: bool) -> dict | None:
    """The engine's batch recurrence (docs/ENGINE.md) over the buffer's
    traffic. ``holds=False``: assume the buffer never holds the array and
    check it with :func:`_bank_lindley` per bank (``None`` if some FIFO
    would overflow); ``holds=True``: the exact event simulation over the
    array ticks with tiles: a tick whose tiles some FIFO cannot take is held
    (the array, the dispatcher and their tiles wait) until every FIFO they
    go to has room, ``max(0, entries + arrivals - depth)`` cycles (a
    non-empty FIFO loses one entry a cycle)."""
    B, D = cfg.s_banks, cfg.s_fifo_depth
    nb = len(W)
    s_start, a_last, sched_done = [0] * nb, [0] * nb, [0] * nb
    free = 0  # the dispatcher could take the next pass at this cycle (no drain wait)
    ready = 0  # the previous batch drained (its last tile taken a cycle before)
    stall = held = 0
    occ, ts = [0] * B, [0] * B  # each bank's FIFO: its entries at cycle ts
    wall = []  # (times, banks, counts) per batch, for the no-hold check
    last_tile = 0
    for b in range(nb):
        if b:
            s_start[b] = sched_done[b - 1] + 1
            if b >= 2:
                s_start[b] = max(s_start[b], a_last[b - 2] + 2)
        sched_done[b] = s_start[b] + W[b] + 2
        first = max(sched_done[b], ready if b else 0)
        stall += first - free
        bt = tiles[b]
        H = 0  # held cycles so far in this batch
        H_take = H_free = None
        if holds and len(bt.ticks):
            # tiles sorted by tick, then bank; each bank's FIFO kept lazily as
            # (entries, at cycle): it loses one a cycle while non-empty
            ticks, banks_, counts = bt.ticks.tolist(), bt.banks.tolist(), bt.counts.tolist()
            n, e = len(ticks), 0
            while e < n:
                x, end = ticks[e], e
                while end < n and ticks[end] == x:
                    end += 1
                if H_take is None and x > bt.last_take:
                    H_take = H
                if H_free is None and x > bt.length:
                    H_free = H
                t = first + x + H
                # held until every bank this tick's tiles go to can take them
                wait = 0
                for k in range(e, end):
                    o = max(occ[banks_[k]] - (t - ts[banks_[k]]), 0)
                    wait = max(wait, o + counts[k] - D)
                H += wait
                t += wait
                for k in range(e, end):
                    bank = banks_[k]
                    occ[bank] = max(occ[bank] - (t - ts[bank]) - 1, 0) + counts[k]
                    ts[bank] = t + 1
                e = end
        else:
            wall.append((first + bt.ticks, bt.banks, bt.counts))
        held += H
        a_last[b] = first + bt.last_take + (H if H_take is None else H_take)
        last_tile = first + bt.last_tile + H
        free = first + bt.length + H
        # the next batch's first pass waits for the last tile, and (small
        # arrays) for the queue to hand out this batch's last block
        ready = max(last_tile + 1, first + bt.length + (H if H_free is None else H_free))
    last_pop = -1
    if holds:
        last_pop = max((t + o - 1 for o, t in zip(occ, ts, strict=True) if o > 0), default=-1)
    else:
        times = np.concatenate([w[0] for w in wall])
        banks = np.concatenate([w[1] for w in wall])
        counts = np.concatenate([w[2] for w in wall])
        order = np.lexsort((times, banks))
        times, banks, counts = times[order], banks[order], counts[order]
        starts = np.searchsorted(banks, np.arange(B + 1))
        for k in range(B):
            lo, hi = starts[k], starts[k + 1]
            if lo == hi:
                continue
            fits, pop = _bank_lindley(times[lo:hi], counts[lo:hi], D)
            if not fits:
                return None
            last_pop = max(last_pop, pop)
    # the cycles port: drained (the last tile taken, seen a cycle later) and
    # settled (the last pop's write, seen a cycle later), then one cycle
    compute = max(last_tile + 2, last_pop + RMW_LATENCY + 1, ready + 1)
    return {"compute": compute, "stall": stall, "held": held, "free": free}


@dataclasses.dataclass
class EngineTiming:
    """Cycle budget of one head on :class:`kaleido.hdl.engine.KaleidoEngine`
    with an always-valid ``qk`` and an always-ready ``s`` stream.

    ``compute`` is the engine's ``cycles`` port; ``total`` = ``load`` +
    ``compute`` + ``output``. ``schedule`` and ``passes`` are the two
    pipeline stages' busy cycles (they overlap); ``stall`` counts
    the cycles the dispatcher waited with nothing to take: for the
    scheduler (batch 0's scheduling included) or for the array to drain at
    a batch boundary."""

    load: int
    schedule: int
    passes: int
    stall: int
    held: int
    compute: int
    output: int
    total: int
    dense_cycles: int
    array_cycles: int
    speedup: float
    array_speedup: float
    batches: int

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def engine_cycles(Q, K, grid, split, config: KaleidoConfig | None = None, *, method: str = "auto") -> EngineTiming:
    """Exact cycle count of the integrated engine for one head.

    Two pipelined stages share a two-bank sorted memory (docs/ENGINE.md):

    * scheduling batch ``b`` takes ``W_b + 2`` cycles from its first unit
      (``W_b``: :func:`scheduler_cycles`; one cycle for the detectors'
      register, one to see both sorted memories complete); batch ``b + 1``
      starts the cycle after, or two cycles after batch ``b - 1``'s last
      pass was taken, whichever is later (its bank must be free);
    * batch ``b``'s first pass is taken once it is scheduled, the
      dispatcher is free and (from batch 1 on) the array has drained the
      previous batch (``array_drain + 1`` cycles after its last beat: the
      last tile and one cycle to see it), so no two tiles of one ``S``
      entry meet in a cycle; then every pass costs its beats plus one idle
      beat (``run_model(variant="full", pass_gap=1)``), so the dispatcher
      is free again ``sum_b`` cycles after the batch's first pass;
    * after the last pass: the array's drain and one cycle to see the last
      tile taken, ``array_drain + 2`` cycles in all (10 on the 4x4
      array: the PE's product register added one, issue 20), or longer
      while a bank still works through its FIFO.

    The accumulation buffer (docs/ENGINE.md) takes each cycle's tiles into
    per-bank FIFOs unless one would overflow; then it holds the array and
    the dispatcher for a cycle (``held`` counts those cycles), which delays
    everything downstream of the pass former in the array's own time. The
    tiles of every batch are laid out in that time (:func:`engine_tiles`);
    ``method="auto"`` first assumes no hold and checks every bank's FIFO
    with Lindley's recurrence (vectorised), and only if one would overflow
    runs the exact event simulation (``method="events"`` always runs it).
    The head ends when the last tile is taken and its bank has written the
    last sum (``settled``), seen a cycle later.

    Loading takes one cycle per input word (``2 N n_batches``), output one
    per score (``N^2``) plus one (the banks' synchronous read). ``speedup`` is the dense array's cycles over
    ``compute``; ``array_speedup`` the array alone, as :func:`run_model`
    reports it.

    Small arrays (``config.sub_arrays``, docs/ENGINE.md): each batch's
    blocks go through the shared queue (:func:`queue_ticks`), and the next
    batch (and the end) also waits for the queue to empty. ``passes``,
    ``array_cycles`` and ``array_speedup`` stay one array of the pass's
    shape's (:func:`run_model` of ``config.replace(sub_arrays=None)``,
    ``pass_gap=1``; :func:`run_model` of the small arrays counts their
    queue alone); ``compute`` and ``speedup`` are the small arrays'."""
    grid, split = check_qk(Q, K, grid, split)
    cfg = config or KaleidoConfig(split=tuple(split))
    n_tok = Q.shape[0]
    if n_tok > ENGINE_MODEL_TOKENS:
        raise ValueError(
            f"engine_cycles lays out every tile of a head ({n_tok} tokens: {n_tok * n_tok:,} entries per batch); "
            f"it takes at most {ENGINE_MODEL_TOKENS} tokens (the engine elaborates at most 1024)"
        )
    if method not in ("auto", "events"):
        raise ValueError(f"method must be 'auto' or 'events', not {method!r}")
    _check_lockstep(cfg)
    # the scheduler once: its orders for the passes (run_model's walk) and the tiles, its cycles
    sched = list(_scheduled_batches(Q, K, grid, split, cfg, batches(cfg, grid, split), scheduler=True))
    one = cfg.replace(sub_arrays=None)
    res = _run_scheduled(
        Q, K, grid, split, one, sched, variant="full", arrays=1, pass_gap=1, progress=None, quality=None
    )
    W = [b[-1] for b in sched]
    nb = len(W)
    tiles = _engine_tiles(sched, cfg)
    walk = _engine_walk(tiles, W, cfg, holds=False) if method == "auto" else None
    if walk is None:  # some FIFO would overflow: the exact event simulation
        walk = _engine_walk(tiles, W, cfg, holds=True)
    assert walk is not None  # the event simulation always answers
    compute, stall = walk["compute"], walk["stall"]
    load, output = 2 * n_tok * nb, n_tok * n_tok + 1
    return EngineTiming(
        load=load,
        schedule=sum(w + 2 for w in W),
        passes=res.beats,
        stall=stall,
        held=walk["held"],
        compute=compute,
        output=output,
        total=load + compute + output,
        dense_cycles=res.dense_cycles,
        array_cycles=res.cycles,
        speedup=res.dense_cycles / compute,
        array_speedup=res.speedup,
        batches=nb,
    )


#: cycles from the dense array (``kaleido.hdl.baseline.DenseArray``)
#: accepting a pass's last beat to PE ``(r, c)``'s tile: ``r + c`` (skew
#: and hops), then the MAC PE's product and drain registers, as the Kaleido PE
DENSE_PE_LATENCY = PE_LATENCY

#: the dense engine's first pass is taken in its second RUN cycle (the
#: first reads the Q and K banks)
DENSE_FIRST_TAKE = 1


@dataclasses.dataclass
class DenseEngineTiming:
    """Cycle budget of one head on ``kaleido.hdl.dense_engine.DenseEngine``
    with an always-valid ``qk`` and an always-ready ``s`` (the fields of
    :class:`EngineTiming` that apply): ``beats`` the array's beats
    (bubbles included), ``held`` the cycles the accumulation buffer held
    the array, ``compute`` the engine's ``cycles`` port, ``total`` =
    ``load + compute + output``."""

    load: int
    beats: int
    held: int
    compute: int
    output: int
    total: int

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def _dense_tiles(n_tokens: int, cfg: KaleidoConfig) -> _BatchTiles:
    """The accumulation buffer's traffic of a whole head on the dense
    engine, as one :class:`_BatchTiles` (the walk never waits between
    batches: an ``S`` entry always goes through one PE and one bank FIFO,
    in order). Pass ``k`` (batch outer, row block, column block inner) of
    ``L_k`` beats (:func:`~kaleido.loopnest.dense_pass_beats`) is taken at
    tick ``T_k = L_0 + ... + L_{k-1}`` (the cycle before its first beat);
    its last beat is at ``T_k + L_k`` and PE ``(r, c)``'s tile, for ``S[bi R
    + r, bj C + c]``, ``r + c + DENSE_PE_LATENCY`` later."""
    R, C, B = cfg.array_rows, cfg.array_cols, cfg.s_banks
    rb, cb = -(-n_tokens // R), -(-n_tokens // C)
    L = np.repeat(np.array([dense_pass_beats(n, cfg) for _, n in cfg.batches], dtype=np.int64), rb * cb)
    take = np.concatenate([[0], np.cumsum(L)[:-1]])
    last_beat = (take + L).reshape(-1, rb, cb)  # (batch, bi, bj)
    i = np.arange(rb)[:, None] * R + np.arange(R)[None, :]  # (bi, r)
    j = np.arange(cb)[:, None] * C + np.arange(C)[None, :]  # (bj, c)
    lat = np.add.outer(np.arange(R), np.arange(C)) + DENSE_PE_LATENCY  # (r, c)
    when = last_beat[:, :, :, None, None] + lat[None, None, None, :, :]  # (batch, bi, bj, r, c)
    ii, jj = i[None, :, None, :, None], j[None, None, :, None, :]
    ok = np.broadcast_to((ii < n_tokens) & (jj < n_tokens), when.shape)
    key = when * B + s_bank(ii, jj, B)
    uk, cnt = np.unique(key[ok], return_counts=True)
    return _BatchTiles(
        length=int(L.sum()),
        last_take=int(take[-1]),
        last_tile=int(take[-1] + L[-1] + R + C - 2 + DENSE_PE_LATENCY),
        ticks=uk // B,
        banks=uk % B,
        counts=cnt.astype(np.int64),
    )


def dense_engine_cycles(
    n_tokens: int, config: KaleidoConfig | None = None, *, method: str = "auto"
) -> DenseEngineTiming:
    """Exact cycle count of the dense engine
    (``kaleido.hdl.dense_engine.DenseEngine``) for a head of ``n_tokens``
    tokens; data-independent. The passes follow back to back from
    :data:`DENSE_FIRST_TAKE` (no scheduler, no drain wait between batches),
    their tiles into the same accumulation buffer as the Kaleido engine's,
    with the same holds and the same end (:func:`_engine_walk`: the last
    tile taken and the last bank write, each seen a cycle later).
    ``method`` as :func:`engine_cycles`'s."""
    cfg = config or KaleidoConfig()
    if not isinstance(n_tokens, int) or isinstance(n_tokens, bool):
        raise TypeError(f"n_tokens must be an integer, not {n_tokens!r}")
    if not 2 <= n_tokens <= ENGINE_MODEL_TOKENS:
        raise ValueError(f"n_tokens must be in 2..{ENGINE_MODEL_TOKENS}, not {n_tokens!r}")
    if method not in ("auto", "events"):
        raise ValueError(f"method must be 'auto' or 'events', not {method!r}")
    tiles = _dense_tiles(n_tokens, cfg)
    # _engine_walk takes batch 0's first pass W + 2 cycles into RUN (its scheduling)
    W = [DENSE_FIRST_TAKE - 2]
    walk = _engine_walk([tiles], W, cfg, holds=False) if method == "auto" else None
    if walk is None:
        walk = _engine_walk([tiles], W, cfg, holds=True)
    assert walk is not None
    load, output = 2 * n_tokens * len(cfg.batches), n_tokens * n_tokens + 1
    return DenseEngineTiming(
        load=load,
        beats=tiles.length,
        held=walk["held"],
        compute=walk["compute"],
        output=output,
        total=load + walk["compute"] + output,
    )


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
    then the array's drain, ``R + C``). Beats are :func:`kaleido.golden.pv.pv_pass_beats`'s:
    per query block of ``R`` rows, per block of ``C`` channels of a group,
    one per unpaired token and per pair FULL at every channel of the block,
    two per other pair. They do not depend on P or on the query block,
    except with small-P pairing (``config.pv_pairs``), which needs ``P``
    (:func:`pv_pair_block_beats`). ``dense_*`` is the dense array's (no
    reuse, no pairing)."""
    from .checks import as_int8, check_grid, check_split
    from .golden.ops import pv_op_counts
    from .golden.pv import unit_full
    from .loopnest import group_slices, units

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
        dense_beats + 1 + array_drain(config),
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
    from .config import SMALL_P
    from .golden.pv import check_p, unit_full
    from .loopnest import group_slices, pv_chunk, units

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


def attention_stages(
    qk: ModelResult, V, grid, split=None, config: KaleidoConfig | None = None, fmt=None, *, P=None, pv=None
) -> dict:
    """Whole attention of a head (issue 12): ``stages`` ``qk`` (``qk``, the
    :func:`run_model` result), ``softmax`` (the softmax unit, then the
    output scaler: :func:`softmax_cycles` + :func:`output_scaler_cycles`,
    ``array_cols`` lanes) and ``pv`` (:func:`pv_cycles`), each with
    ``cycles`` (and ``dense_cycles``) and ``ops`` (``dense``, ``oracle``,
    ``hw``: nibble multiplies; exponentials for the softmax); and
    ``attention``: the totals ``cycles``, ``dense_cycles`` and ``speedup``.
    The stages run one after another (the array does Q K^T, then P V; the
    overlap of a pipelined core is issue 13); the dense array runs the same
    softmax unit. With small-P pairing (``config.pv_pairs``) P V's cycles
    depend on ``P``, the head's P operand
    (:func:`kaleido.golden.softmax.head_p`), which is then required;
    ``pv``: :func:`pv_cycles`' result if already computed (``P`` unused)."""
    config = config or KaleidoConfig()
    fmt = fmt or SoftmaxFormat()
    n, d = V.shape
    lanes = config.array_cols
    pv = pv or pv_cycles(V, grid, split, config, P=P)
    sm = softmax_cycles(n, n, lanes, fmt) + output_scaler_cycles(n, d, lanes)
    stages: dict[str, dict] = {
        "qk": {"cycles": qk.cycles, "dense_cycles": qk.dense_cycles, "ops": dict(qk.ops)},
        "softmax": {"cycles": sm, "dense_cycles": sm, "ops": {k: n * n for k in ("dense", "oracle", "hw")}},
        "pv": {"cycles": pv.cycles, "dense_cycles": pv.dense_cycles, "ops": dict(pv.ops)},
    }
    cycles = sum(int(s["cycles"]) for s in stages.values())
    dense = sum(int(s["dense_cycles"]) for s in stages.values())
    return {
        "stages": stages,
        "attention": {"cycles": cycles, "dense_cycles": dense, "speedup": dense / cycles},
    }


#: the RTL softmax unit's pipeline (``kaleido.hdl.softmax.SoftmaxUnit.latency``):
#: cycles from a beat's transfer on ``s`` to its P beat on ``p``
SOFTMAX_LATENCY = 5


def _positive(name: str, value) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be a positive integer, not {value!r}")
    return value


def softmax_cycles(n_tokens: int, n_rows: int, lanes: int, fmt: SoftmaxFormat | None = None) -> int:
    """Exact cycles of the RTL softmax unit (``kaleido.hdl.softmax.SoftmaxUnit``)
    for ``n_rows`` rows of ``n_tokens`` scores with no stalls: from the
    first transfer on ``s`` to the last transfer on ``p`` or ``r``, both
    counted (docs/SOFTMAX.md, "RTL: the softmax unit").

    Each row is ``B = ceil(n_tokens / lanes)`` beats, sent twice, one beat
    a cycle; a row's ``r`` leaves ``D = SOFTMAX_LATENCY + 1 + recip_width``
    cycles after its last beat (the P pipeline, the row-sum register, the
    divider), and the next row's last beat waits for it
    (one divider), so rows start ``max(2B, D)`` cycles apart:
    ``2B + (n_rows - 1) max(2B, D) + D``."""
    fmt = fmt or SoftmaxFormat()
    beats = -(-_positive("n_tokens", n_tokens) // _positive("lanes", lanes))
    divide = SOFTMAX_LATENCY + 1 + fmt.recip_width
    return 2 * beats + (_positive("n_rows", n_rows) - 1) * max(2 * beats, divide) + divide


def output_scaler_cycles(n_rows: int, d: int, lanes: int) -> int:
    """Exact cycles of the RTL output scaler (``kaleido.hdl.softmax.OutputScaler``)
    for ``n_rows`` rows of ``d`` channels with no stalls, counted as in
    :func:`softmax_cycles`: ``n_rows ceil(d / lanes)`` beats, one a cycle,
    each out two cycles after it is taken (its products, then the rounding)."""
    return _positive("n_rows", n_rows) * -(-_positive("d", d) // _positive("lanes", lanes)) + 2


def load_cycles(beats: int, mem_latency: int) -> int:
    """Cycles the attention core's ``TileLoader`` takes for one load of
    ``beats`` port beats from a memory of latency ``mem_latency`` that never
    stalls: one request per cycle, the last beat written ``mem_latency``
    cycles after its request, so ``beats + mem_latency`` from the command's
    acceptance to ``done`` (docs/CORE.md, "The memory port")."""
    for name, v in (("beats", beats), ("mem_latency", mem_latency)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
            raise ValueError(f"{name} must be a positive integer, not {v!r}")
    return int(beats) + int(mem_latency)


def tile_feed_cycles(q_shape, k_shape, config: KaleidoConfig, core, *, with_v: bool = False) -> int:
    """The cycle, counted from the command's acceptance (cycle 0), in which
    the attention core's ``TileFeeder`` sends its last ``qk`` word for a
    query box of extents ``q_shape`` and a key box of ``k_shape`` (each at
    most ``core.tile``), with a memory of latency ``core.mem_latency`` that
    never stalls and an always-ready engine: every run (a ``(t, y)`` line
    of ``x`` tokens) is one load of ``x d / port_bytes`` beats taking
    :func:`load_cycles` plus one cycle, Q's runs then K's (then, ``with_v``,
    V's over the key box) from cycle 1; the
    last load's ``done`` is followed by one cycle to read the first buffer
    word, then ``2 T n_batches`` words, one a cycle, for a tile of ``T``
    tokens (partial boxes are padded to the tile)."""
    bt, by, bx = core.tile
    bpr = config.d // core.port_bytes
    done = 0
    for shape in (q_shape, k_shape, k_shape) if with_v else (q_shape, k_shape):
        t, y, x = (int(e) for e in shape)
        if not (1 <= t <= bt and 1 <= y <= by and 1 <= x <= bx):
            raise ValueError(f"a box's extents must be within the tile {core.tile}, not {tuple(shape)!r}")
        done += t * y * (load_cycles(x * bpr, core.mem_latency) + 1)
    return done + 1 + 2 * core.tile_tokens * len(config.batches)


#: the RTL tiled softmax's pipeline (``kaleido.hdl.softmax.TileSoftmax.latency``):
#: cycles from an exp beat's transfer on ``s`` to its P beat on ``p``
TILE_SOFTMAX_LATENCY = 6


def tile_softmax_cycles(walk, lanes: int, fmt: SoftmaxFormat | None = None) -> int:
    """Exact cycles of the RTL tiled softmax (``kaleido.hdl.softmax.TileSoftmax``)
    with no stalls, for query tiles walked back to back: ``walk`` holds one
    ``(rows, keys)`` per query tile, ``keys`` the key count of each of its
    key tiles in walk order. Counted from the first transfer on ``s`` to
    the last transfer on ``p`` or ``r``, both counted (docs/SOFTMAX.md,
    "RTL: the tiled softmax").

    A query tile sends every row's segment of every key tile twice (pass 1,
    then pass 2), ``b_j = ceil(keys_j / lanes)`` beats a segment, one beat a
    cycle; the row state's forwarding never stalls. Only the divider does:
    the last beat of a final-key-tile segment waits until the previous row's
    ``r`` leaves, ``D = TILE_SOFTMAX_LATENCY + 1 + recip_width`` cycles after
    that row's last beat, so for one query tile of ``R`` rows and final
    segments of ``b_T`` beats: ``R (2 sum_j b_j - b_T) + b_T + (R - 1)
    max(b_T, D) + D``."""
    fmt = fmt or SoftmaxFormat()
    lanes = _positive("lanes", lanes)
    divide = TILE_SOFTMAX_LATENCY + 1 + fmt.recip_width
    tiles = list(walk)
    if not tiles:
        raise ValueError("walk must hold at least one query tile, not none")
    t = -1  # the cycle the last beat was taken in
    last_div: int | None = None  # ... and the last final-key-tile segment's last beat
    end = 0
    for rows, keys in tiles:
        rows = _positive("rows", rows)
        keys = list(keys)
        if not keys:
            raise ValueError("keys must hold at least one key tile's key count, not none")
        beats = [-(-_positive("keys", k) // lanes) for k in keys]
        t += rows * sum(beats)  # pass 1
        t += rows * sum(beats[:-1])  # pass 2 before the final key tile
        for _ in range(rows):
            t += beats[-1]
            if last_div is not None:
                t = max(t, last_div + divide)
            last_div = t
        end = max(end, t + TILE_SOFTMAX_LATENCY, t + divide)
    return end + 1


# -- the P V tile stage (issue 13, docs/CORE.md "The P V tile stage") -------

#: the P V tile stage's issue overhead per key tile (``kaleido.hdl.pv_tile.PvTile``:
#: the first unit's read, the dispatcher's register; its first unit enters the
#: array ``PV_TILE_ISSUE - 1`` cycles after the fill's last beat when the array
#: is idle; :func:`pv_tile_cycles`)
PV_TILE_ISSUE = 3
#: the stage's tail after a drained row: the row FIFO (``SyncFIFOBuffered``:
#: the row is written, then moves to its output register, 2 cycles) and the
#: O accumulators (``OAccumulator.latency``, 2 cycles); :func:`pv_tile_cycles`
PV_TILE_TAIL = 4


def pv_tile_tail(rows: int, config: KaleidoConfig, pe_latency: int = PE_LATENCY) -> int:
    """Cycles from the P V tile stage's last array beat to its last total on
    ``o``: the query tile's last row is row ``r = (rows - 1) mod
    array_rows`` of its last pass, drained (deskewed to the last column)
    at PE ``(r, C - 1)`` (:func:`kaleido.config.tile_latency`, the dense
    array's PE ``pe_latency`` instead of :data:`PE_LATENCY`), then
    :data:`PV_TILE_TAIL`. It depends on the row the last total comes from,
    not on how many rows the array has (issue 19: the model used to wait
    for the array's last row, exact on 4-row arrays only)."""
    r = (rows - 1) % config.array_rows
    return tile_latency(r, config.array_cols - 1) - (PE_LATENCY - pe_latency) + PV_TILE_TAIL


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
    from .checks import as_int8, check_grid
    from .golden.pv import unit_full
    from .loopnest import group_slices, pv_chunk, units

    config = config or KaleidoConfig()
    as_int8("V", V)
    shape = check_grid(shape, V.shape[0])
    if config.pv_pairs:
        return _pv_tile_run_pairs(V, shape, _positive("rows", rows), config, P)
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
    return math.ceil(_positive("rows", rows) / R) * per_block, last[0], last[1]


def _pv_tile_run_pairs(V, shape, rows: int, config: KaleidoConfig, P) -> tuple[int, int, int]:
    """:func:`pv_tile_run` with small-P pairing: every row block's passes
    in the stage's walk order (channel blocks, row blocks, passes)."""
    from .config import SMALL_P
    from .golden.pv import check_p, unit_full
    from .loopnest import group_slices, pv_chunk, units

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


class _PvSlots:
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
    total leaves ``b + r + C + 1 + PV_TILE_TAIL`` cycles after its last unit
    issues, ``r = (rows - 1) mod array_rows`` the row of the pass it comes
    from (``r + C + 1``: ``tile_latency(r, C - 1)``, the drain of that row;
    row ``r`` of a pass drains ``r`` cycles after row 0, whatever the
    array's rows).
    Checked equal to the RTL in ``tb/test_pv_tile.py``."""
    from .checks import check_pv_buffers
    from .config import CoreConfig

    config = config or KaleidoConfig()
    buffers = check_pv_buffers(CoreConfig().pv_buffers if buffers is None else buffers)
    tiles = list(walk)
    if not tiles:
        raise ValueError("walk must hold at least one query tile, not none")
    slots = _PvSlots(buffers)
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


# -- the attention core (issue 13, docs/CORE.md "The core") ------------------


def core_cycles(
    Q,
    K,
    V,
    grid,
    config: KaleidoConfig | None = None,
    core=None,
    fmt: SoftmaxFormat | None = None,
    *,
    variant: str = "kaleido",
    scales=None,
) -> int:
    """Exact cycles of ``kaleido.hdl.core.KaleidoAttentionCore`` for one
    head (its ``cycles`` port: from the command to the last O write, both
    counted) with a memory that never stalls and an always-ready write port.

    The walk's stages in max-plus form (docs/CORE.md "The core", "Cycles"):
    the feeder's loads (:func:`tile_feed_cycles`) and its stream into the
    engine once the engine is in LOAD; the engine's compute
    (:func:`engine_cycles` of the padded boxes); the S tile taken one word a
    cycle once the tile's V is in the P V stage (pass 2), the final key
    tile's row ends waiting for the divider; P ``TILE_SOFTMAX_LATENCY``
    cycles after its score, the final tile's last P held until the last
    ``r``; the P V stage's headers once a slot is free (``core.pv_buffers``)
    and its passes after its fill and the previous key tile's passes
    (:func:`pv_tile_run`, as :func:`pv_tile_cycles`);
    the output scaler's two cycles. With two S sets (``core.s_buffers``)
    the engine hands a tile's S to the unload once the previous tile's is
    read, and loads the next tile from the cycle after.

    ``variant="dense"``: the dense core (docs/CORE.md "The dense core"):
    each S tile takes :func:`dense_engine_cycles`, and every P V pair two
    beats (:func:`pv_tile_beats` with V's FULL threshold 9, never), on an
    array whose drain is one cycle shorter (the MAC PE has no product
    register).

    With small-P pairing (``config.pv_pairs``, not the dense core) the P V
    stage's beats depend on P, so ``scales`` (the head's ``(q, k, v)``
    scales, as the core takes them) is required: each (query, key) tile's
    P is :func:`kaleido.golden.core.query_tile_p`'s."""
    from .config import CoreConfig
    from .golden.core import box_mask, pad_box, query_tile_p
    from .loopnest import tile_boxes

    config = config or KaleidoConfig()
    core = core or CoreConfig()
    fmt = fmt or SoftmaxFormat()
    if core.s_pass != "recompute":
        raise ValueError(
            f"s_pass={core.s_pass!r}: core_cycles models the core, which recomputes S (s_pass='recompute')"
        )
    dense = check_variant(variant) == "dense"
    # P V: the dense array issues both tokens of every pair (FULL never)
    pv_config = config.replace(F=9, P=9, group_thresholds=None, pv_pairs=False) if dense else config
    if pv_config.pv_pairs and scales is None:
        raise ValueError("pv_pairs needs scales: with small-P pairing the P V stage's cycles depend on P")
    p_tiles: dict = {}  # query box origin -> its P tiles, with pairing
    pe_latency = DENSE_PE_LATENCY if dense else PE_LATENCY
    T, H, W = (int(e) for e in grid)
    tile = core.tile
    bt, by, bx = tile
    tt = core.tile_tokens
    bpr = config.d // core.port_bytes
    words = 2 * tt * len(config.batches)
    divide = TILE_SOFTMAX_LATENCY + 1 + fmt.recip_width
    boxes = tile_boxes((T, H, W), tile)

    def loads(q_shape, k_shape, with_v):
        shapes = (q_shape, k_shape, k_shape) if with_v else (q_shape, k_shape)
        return sum(t * y * (load_cycles(x * bpr, core.mem_latency) + 1) for t, y, x in shapes)

    def corner(shape):  # the padded index of a box's last token
        t, y, x = shape
        return ((t - 1) * by + (y - 1)) * bx + (x - 1)

    compute: dict = {}
    pv_runs: dict = {}
    pv = _PvSlots(core.pv_buffers)
    # the controller's states: IDLE (0) -> PLANE (1) -> QUERY (2) -> ISSUE (3)
    state = 3  # the cycle the controller is in ISSUE
    feeder_idle = 0  # the first cycle the feeder takes a command
    engine_ready = 0  # the first cycle the engine takes a qk word
    pv_ready = 0  # the first cycle the P V stage takes a header
    last_final = None  # the last final-tile row end the divider saw
    last_write = 0
    two_sets = core.s_buffers == 2
    prev_end = -1  # the cycle the previous S tile's last word was taken
    p_end = -1  # the cycle the previous pass-2 tile's last P entered the P V stage
    v_end = -1  # the cycle its S tile's last word was taken (padding may follow the last P)
    tiles = []  # (qb, kb, phase), in walk order
    for qi, qb in enumerate(boxes):
        for phase in (0, 1):
            for kb in boxes:
                tiles.append((qi, qb, kb, phase))
    for qi, qb, kb, phase in tiles:
        final_k = kb is boxes[-1]
        a = max(state, feeder_idle)  # ISSUE: the feeder takes the command
        w = max(a + loads(qb.shape, kb.shape, phase) + 2, engine_ready) + words - 1  # the last qk word
        feeder_idle = w + 1
        key = (qb.origin, kb.origin)
        if key not in compute:
            Qp, Kp = pad_box(Q, qb, tile), pad_box(K, kb, tile)
            if dense:
                compute[key] = dense_engine_cycles(tt, config).compute
            else:
                compute[key] = engine_cycles(Qp, Kp, tile, config.split, config).compute
        # the handoff to the unload (DRAIN's last cycle): with two S sets
        # once the previous tile's S is read, then the first read
        handoff = max(w + compute[key], prev_end) if two_sets else w + compute[key]
        first_s = handoff + 2
        gate = 0
        if phase:  # FEED -> V_HEAD -> V_ROWS: the header, then the key box's V rows
            n = len(kb.tokens)
            # FEED waits for the feeder and for the previous pass-2 tile's P and S
            h = max(feeder_idle + 1, pv_ready, p_end + 2, v_end + 2)
            gate = h + n + 1  # v_ready
            state = h + n + 2  # NEXT, then ISSUE
        else:
            state = a + 2
        # the S tile, one word a cycle from its first; the final pass-2
        # tile's row ends wait for the divider
        start = max(first_s, gate)
        rows = len(qb.tokens)
        last_fwd = start + corner(qb.shape) * tt + corner(kb.shape)
        end = start + tt * tt - 1
        if phase and final_k:
            jl = corner(kb.shape)
            t = start - 1
            for real in box_mask(qb, tile):
                t_end = t + jl + 1  # the row's last real column
                if real:
                    if last_final is not None:
                        t_end = max(t_end, last_final + divide)
                    last_final = t_end
                    last_fwd = t_end
                t = t_end + (tt - 1 - jl)
            end = t
        # LOAD: with two S sets the cycle after the handoff, with one the
        # cycle after the last word
        engine_ready = handoff + 1 if two_sets else end + 1
        prev_end = end
        if phase:
            last_fill = last_fwd + TILE_SOFTMAX_LATENCY
            if final_k:
                last_fill = max(last_fill, last_fwd + divide + 1)
            bkey = (kb.origin, rows, qb.origin if pv_config.pv_pairs else None)
            if bkey not in pv_runs:
                p = None
                if pv_config.pv_pairs:
                    if qb.origin not in p_tiles:
                        p_tiles[qb.origin] = query_tile_p(
                            Q, K, qb, boxes, config.split, scales, thresholds=config.thresholds, fmt=fmt
                        )
                    p = p_tiles[qb.origin][boxes.index(kb)]
                pv_runs[bkey] = pv_tile_run(V[kb.tokens], kb.shape, rows, pv_config, p)
            run = pv_runs[bkey]
            last_issue = pv.issue(last_fill, run)
            p_end, v_end = last_fill, end
            pv_ready = pv.free  # the next header: a free buffer, the fill done
            if final_k:
                last_o = last_issue + run[1] + run[2] + pv_tile_tail(rows, config, pe_latency)
                last_write = max(last_write, last_o + 2)
                if qi + 1 < len(boxes):
                    state += 1  # QUERY
    return last_write + 1
