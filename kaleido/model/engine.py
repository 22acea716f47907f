"""The integrated engine (``kaleido.hdl.engine.KaleidoEngine``,
docs/ENGINE.md) and the dense engine (``kaleido.hdl.dense_engine.DenseEngine``):
exact cycles of a head, with the accumulation buffer's banks.

Two pipelined stages share a two-bank sorted memory (docs/ENGINE.md):

* scheduling batch ``b`` takes ``W_b + 2`` cycles from its first unit
  (``W_b``: :func:`~kaleido.model.qk.scheduler_cycles`; one cycle for the
  detectors' register, one to see both sorted memories complete); batch
  ``b + 1`` starts the cycle after, or two cycles after batch ``b - 1``'s
  last pass was taken, whichever is later (its bank must be free);
* batch ``b``'s first pass is taken once it is scheduled, the
  dispatcher is free and (from batch 1 on) the array has drained the
  previous batch (``array_drain + 1`` cycles after its last beat: the
  last tile and one cycle to see it), so no two tiles of one ``S``
  entry meet in a cycle; the dispatcher's two pass buffers take the
  batch's second pass a cycle later and every later one the cycle after
  the last beat of the pass two before it, so the passes' beats run back
  to back from ``DISPATCH_LATENCY`` (3) cycles after the first take
  (``run_model(variant="full", dispatcher=True)``);
* after the last pass: the array's drain and one cycle to see the last
  tile taken, ``array_drain + 2`` cycles in all (10 on the 4x4
  array: the PE's product register added one, issue 20), or longer
  while a bank still works through its FIFO.

The accumulation buffer takes each cycle's tiles into per-bank FIFOs
unless one would overflow; then it holds the array and the dispatcher for
a cycle (``held`` counts those cycles), which delays everything downstream
of the pass former in the array's own time. The tiles of every batch are
laid out in that time (:func:`engine_tiles`); the walk
(:func:`_engine_walk`) first assumes no hold and checks every bank's FIFO
with Lindley's recurrence (vectorised), and only if one would overflow
runs the exact event simulation. The head ends when the last tile is
taken and its bank has written the last sum (``settled``), seen a cycle
later."""

from __future__ import annotations

import dataclasses

import numpy as np

from ..checks import check_qk
from ..config import DISPATCH_LATENCY, RMW_LATENCY, KaleidoConfig, s_bank, tile_latency
from ..loopnest import batches, dense_pass_beats
from .qk import check_lockstep, run_scheduled, scheduled_batches
from .queue import block_groups, block_phase_beats, queue_ticks
from .slots import DENSE_PE_LATENCY, pass_phase_beats

#: largest head :func:`engine_cycles` lays out tile by tile
ENGINE_MODEL_TOKENS = 4096


@dataclasses.dataclass
class BatchTiles:
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


def _tile_traffic(rt, ct, gi, gj, last_beat, length: int, last_take: int, cfg: KaleidoConfig) -> BatchTiles:
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
    return BatchTiles(
        length=length,
        last_take=last_take,
        last_tile=int(last_beat[:, 3].max() + tile_latency(r - 1, c - 1)),
        ticks=uk // B,
        banks=uk % B,
        counts=cnt.astype(np.int64),
    )


def _batch_tiles(units, perm_r, perm_c, beats, cfg: KaleidoConfig) -> BatchTiles:
    """The tiles of one batch on one array: the passes' beats (row group
    outer) run back to back from tick ``L = DISPATCH_LATENCY``, so pass
    ``k``'s last beat is at ``d_k = L - 1 + beats of passes 0..k`` and its
    phase ``p``'s at ``d_k -
    beats_k + beats_0 + ... + beats_p`` (:func:`_tile_traffic`); pass ``k``
    is taken at tick ``k`` for ``k < 2``, else at ``d_{k-2} + 1`` (a pass
    buffer frees the cycle after its pass's last beat); the batch's length
    is its last beat's tick."""
    R, C = cfg.array_rows, cfg.array_cols
    Gr, Gc, _ = beats.shape
    flat = beats.reshape(Gr * Gc, 4)
    per_pass = flat.sum(axis=1)
    done = DISPATCH_LATENCY - 1 + np.cumsum(per_pass)
    take = np.concatenate([np.arange(min(2, len(done))), done[:-2] + 1])
    last_beat = (done - per_pass)[:, None] + np.cumsum(flat, axis=1)
    gi, gj = np.repeat(np.arange(Gr), Gc), np.tile(np.arange(Gc), Gr)
    rt, ct = _unit_tokens(units, perm_r, R, Gr), _unit_tokens(units, perm_c, C, Gc)
    return _tile_traffic(rt, ct, gi, gj, last_beat, int(done[-1]), int(take[-1]), cfg)


def _batch_blocks(units, perm_r, perm_c, tq, tk, cfg: KaleidoConfig) -> BatchTiles:
    """:func:`_batch_tiles` on ``config.n_arrays`` small arrays
    (``config.sub_arrays``): each pass's blocks through the shared queue
    (:func:`queue_ticks`), each block's phases on its array
    (:func:`block_phase_beats`)."""
    r, c = cfg.sub_shape
    rows, cols = block_groups(len(perm_r), len(perm_c), cfg)
    present, phase = block_phase_beats(tq, tk, cfg)
    Gr, Gc = -(-len(perm_r) // cfg.array_rows), -(-len(perm_c) // cfg.array_cols)
    nr, nc = cfg.array_rows // r, cfg.array_cols // c
    _, _, takes, length, first = queue_ticks(present, phase.sum(axis=1), cfg.n_arrays)
    last_beat = first[:, None] - 1 + np.cumsum(phase, axis=1)
    rt, ct = _unit_tokens(units, perm_r, r, Gr * nr), _unit_tokens(units, perm_c, c, Gc * nc)
    return _tile_traffic(rt, ct, rows[present], cols[present], last_beat[present], length, int(takes[-1]), cfg)


def engine_tiles(Q, K, grid, split, config: KaleidoConfig | None = None) -> list[BatchTiles]:
    """Per batch of a head on the engine, the accumulation buffer's traffic
    (:func:`_batch_tiles`) in the scheduled pass order."""
    grid, split = check_qk(Q, K, grid, split)
    cfg = config or KaleidoConfig(split=tuple(split))
    return _engine_tiles(scheduled_batches(Q, K, grid, split, cfg, batches(cfg, grid, split), scheduler=True), cfg)


def _engine_tiles(sched, cfg: KaleidoConfig) -> list[BatchTiles]:
    """:func:`engine_tiles` of the batches of :func:`scheduled_batches`."""
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


def _engine_walk(tiles: list[BatchTiles], W: list[int], cfg: KaleidoConfig, *, holds: bool) -> dict | None:
    """The engine's batch recurrence (docs/ENGINE.md) over the buffer's
    traffic. ``holds=False``: assume the buffer never holds the array and
    check it with :func:`_bank_lindley` per bank (``None`` if some FIFO
    would overflow); ``holds=True``: the exact event simulation over the
    array ticks with tiles (:func:`_held_batch`)."""
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
        H, H_take, H_free = 0, None, None  # held cycles in this batch: in all, by its last take, by its end
        if holds and len(bt.ticks):
            H, H_take, H_free = _held_batch(bt, first, occ, ts, D)
        else:
            wall.append((first + bt.ticks, bt.banks, bt.counts))
        held += H
        a_last[b] = first + bt.last_take + (H if H_take is None else H_take)
        last_tile = first + bt.last_tile + H
        free = first + bt.length + H
        # the next batch's first pass waits for the last tile, and (small
        # arrays) for the queue to hand out this batch's last block
        ready = max(last_tile + 1, first + bt.length + (H if H_free is None else H_free))
    if holds:
        last_pop = max((t + o - 1 for o, t in zip(occ, ts, strict=True) if o > 0), default=-1)
    else:
        pop = _unheld_last_pop(wall, B, D)
        if pop is None:
            return None
        last_pop = pop
    # the cycles port: drained (the last tile taken, seen a cycle later) and
    # settled (the last pop's write, seen a cycle later), then one cycle
    compute = max(last_tile + 2, last_pop + RMW_LATENCY + 1, ready + 1)
    return {"compute": compute, "stall": stall, "held": held, "free": free}


def _held_batch(
    bt: BatchTiles, first: int, occ: list[int], ts: list[int], D: int
) -> tuple[int, int | None, int | None]:
    """The exact event simulation of one batch whose first pass is taken at
    cycle ``first``: a tick whose tiles some FIFO cannot take is held (the
    array, the dispatcher and their tiles wait) until every FIFO they go to
    has room, ``max(0, entries + arrivals - depth)`` cycles (a non-empty
    FIFO loses one entry a cycle). Each bank's FIFO is kept lazily as
    ``occ`` entries at cycle ``ts`` (changed in place). Returns the held
    cycles ``(in all, before the first tick past the last take, before the
    first tick past the batch's end)``, ``None`` for a tick that never
    comes."""
    H = 0  # held cycles so far in this batch
    H_take = H_free = None
    # tiles sorted by tick, then bank
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
    return H, H_take, H_free


def _unheld_last_pop(wall: list, B: int, D: int) -> int | None:
    """The cycle of the last pop of any bank when the array is never held
    (``wall``: per batch, its tiles' cycles, banks and counts), or ``None``
    if some bank's FIFO would overflow (:func:`_bank_lindley`)."""
    last_pop = -1
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
    return last_pop


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
    """Exact cycle count of the integrated engine for one head: the two
    pipelined stages, the array and the accumulation buffer of the module
    docstring (docs/ENGINE.md). ``method="auto"`` first assumes no hold and
    checks every bank's FIFO (Lindley's recurrence), running the exact event
    simulation only if one would overflow; ``method="events"`` always runs
    it.

    Loading takes one cycle per input word (``2 N n_batches``), output one
    per score (``N^2``) plus one (the banks' synchronous read). ``speedup`` is the dense array's cycles over
    ``compute``; ``array_speedup`` the array alone, as :func:`run_model`
    reports it.

    Small arrays (``config.sub_arrays``, docs/ENGINE.md): each batch's
    blocks go through the shared queue (:func:`queue_ticks`), and the next
    batch (and the end) also waits for the queue to empty. ``passes``,
    ``array_cycles`` and ``array_speedup`` stay one array of the pass's
    shape's (:func:`run_model` of ``config.replace(sub_arrays=None)``,
    ``dispatcher=True``; :func:`run_model` of the small arrays counts their
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
    check_lockstep(cfg)
    # the scheduler once: its orders for the passes (run_model's walk) and the tiles, its cycles
    sched = list(scheduled_batches(Q, K, grid, split, cfg, batches(cfg, grid, split), scheduler=True))
    one = cfg.replace(sub_arrays=None)
    res = run_scheduled(
        Q,
        K,
        grid,
        split,
        one,
        sched,
        variant="full",
        arrays=1,
        pass_gap=0,
        dispatcher=True,
        progress=None,
        quality=None,
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


#: the dense array's latency from its edge: ``DENSE_PE_LATENCY`` (the
#: Kaleido array's: ``BEAT_REGISTER + PE_LATENCY``)
DENSE_ARRAY_LATENCY = DENSE_PE_LATENCY


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


def _dense_tiles(n_tokens: int, cfg: KaleidoConfig) -> BatchTiles:
    """The accumulation buffer's traffic of a whole head on the dense
    engine, as one :class:`BatchTiles` (the walk never waits between
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
    return BatchTiles(
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
