"""Cycle-level performance model of ``Q K^T`` on Kaleido arrays (spec
sec. 9): :func:`run_model` (and :func:`linear_cycles`, a linear layer on
the same array) walks the loop nest's batches and passes.

The walk (:func:`array_walk`) takes each phase's slots from
:mod:`kaleido.model.slots` once per distinct (row key, column key) pair
and sums them with the pairs' multiplicities (per array, for the
round-robin deal); the scheduler's order is vectorised over its windows
(:func:`kaleido.golden.scheduler.schedule_order`). A 32,768-token head
takes about 1.5 s instead of 40 to 70 s (``make bench``).
:mod:`kaleido.explore.reference_walk` keeps the walk it replaced; the tests hold
the two equal. Timing is the RTL's (docs/ARRAY.md, docs/DISPATCH.md):

* a phase costs ``max(1, slots)`` beats; passes stream back to back;
* ``pass_gap`` idle beats between passes (0 for the RTL's double-buffered
  ``PassDispatcher`` and for the bare array; 1 for the single-buffered
  dispatcher it replaced); with ``dispatcher`` a pass dispatcher leads the
  array, whose first beat comes ``DISPATCH_LATENCY`` (3) cycles after the
  first pass is taken;
* the last tile leaves ``tile_latency(R - 1, C - 1) = R + C + 1`` cycles
  after the last beat's cycle starts (``kaleido.config.tile_latency``: the
  beat register, the skew, the hops and the PE's product and drain
  registers), so a stream of ``n`` beats occupies ``n + R + C + 1`` cycles;
* passes are dealt to ``arrays`` arrays round-robin; the run ends with the
  slowest array; small arrays go through the shared queue
  (:mod:`kaleido.model.queue`).

The scheduler is assumed to run ahead of the array (the paper pipelines
it with compute): its per-window time (``golden.scheduler.schedule_cycles``,
``3m + draws + clusters + 1`` cycles for ``m`` strings, checked against the RTL)
is far below the passes a window feeds (16 row groups x every column group)
and is not added. :func:`kaleido.model.engine.engine_cycles` is the integrated
engine's exact count, which adds what the engine does not hide.

The dense baseline is an output-stationary MAC array with the same number
of PEs (``R x C`` token pairs per pass, one channel per cycle over the
whole head, same drain): ``ceil(N/R) * ceil(N/C) * d + R + C - 1`` cycles.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..checks import check_qk
from ..config import DISPATCH_LATENCY, LFSR_SEED, KaleidoConfig
from ..encoding import Need, Phase
from ..golden.grouped import grouped_follower_classes, grouped_op_counts
from ..golden.loopnest import unit_order, unit_schedule
from ..loopnest import batches, unit_tags
from .queue import iter_block_beats, queue_end
from .slots import VARIANTS, array_drain, distinct_words, group_masks, need_words, pair_slots, phase_plans

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


def array_walk(tags, n_batches: int, cfg: KaleidoConfig, *, variant: str, arrays: int, pass_gap: int, progress=None):
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
    once per distinct pair (:func:`pair_slots`) and summed with the pairs'
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
    plans = phase_plans(cfg.accumulators)
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
            rw = need_words(held, held)  # (k, Gr, lanes)
            cw = need_words(cneed != Need.SKIP, cneed == Need.HALF)  # (k, Gc, lanes)
            if not len(active):  # nothing needed: every pass one beat
                rw, cw = np.zeros((1, Gr, 1), np.uint32), np.zeros((1, Gc, 1), np.uint32)
            (ur, rinv), (uc, cinv) = distinct_words(rw), distinct_words(cw)
            nr, nc = ur.shape[1], uc.shape[1]
            wr = np.bincount(row_res * nr + rinv, minlength=A * nr).reshape(A, nr).astype(np.float64)
            wc = np.bincount(col_res * nc + cinv, minlength=A * nc).reshape(A, nc).astype(np.float64)
            cc = wc.sum(axis=0)
            dealt = np.zeros((A, A))
            slot_sum = 0.0
            step = max(1, _CHUNK // max(1, nc))
            for r0 in range(0, nr, step):
                rs = slice(r0, r0 + step)
                slots = pair_slots(ur[:, rs], uc, lookahead)
                beats = slots + (slots == 0)
                dealt += wr[:, rs] @ (beats @ wc.T)
                slot_sum += wr[:, rs].sum(axis=0) @ (slots @ cc)
            dealt_int = np.rint(dealt).astype(np.int64).ravel()
            per_array += np.bincount(deal, weights=dealt_int, minlength=A).astype(np.int64)
            total = int(dealt_int.sum())
            batch_total += total
            phase_beats[phase] += total
            phase_slots[phase] += round(slot_sum)
            last += max(1, int(pair_slots(ur[:, rinv[-1:]], uc[:, cinv[-1:]], lookahead)[0, 0]))
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
    dispatcher: bool = False,
    progress=None,
    quality=None,
) -> ModelResult:
    """Model one head ``Q K^T`` (int8 ``(N, d)``) on ``arrays`` Kaleido arrays.

    ``variant`` in :data:`VARIANTS`; ``pass_gap`` idle beats between
    passes and ``dispatcher`` (a pass dispatcher leads the array:
    ``DISPATCH_LATENCY`` cycles to the first beat) as in the module doc; ``progress(done,
    total)`` is called per batch.

    Small arrays (``config.sub_arrays``, the default design; docs/ENGINE.md
    "Small arrays"): each pass's ``r x c`` blocks go, in order, through the
    shared queue of ``config.n_arrays`` arrays (:func:`queue_ticks`: one
    block leaves a cycle, to an array whose dispatcher has a free buffer;
    ``pass_gap`` 0, or 1 for the single-buffered dispatchers that idled one
    beat after each block), the batches back to
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
    sched = scheduled_batches(Q, K, grid, split, cfg, nest, scheduler=use_sched)
    return run_scheduled(
        Q, K, grid, split, cfg, sched, variant=variant, arrays=arrays, pass_gap=pass_gap,
        dispatcher=dispatcher, progress=progress, quality=quality,
    )  # fmt: skip


def check_arrays(config: KaleidoConfig, arrays, pass_gap) -> int:
    """The ``pass_gap`` of :func:`run_model` and :func:`linear_cycles`
    (``None``: 0), after checking it and ``arrays``: small arrays
    (``config.sub_arrays``) are one queue of ``config.n_arrays`` arrays
    behind double-buffered dispatchers (``pass_gap`` 0) or the
    single-buffered ones they replaced (1), so they take ``arrays = 1``."""
    if not isinstance(arrays, int) or arrays < 1:
        raise ValueError(f"arrays must be a positive integer, not {arrays!r}")
    if pass_gap is None:
        pass_gap = 0
    if not isinstance(pass_gap, int) or pass_gap < 0:
        raise ValueError(f"pass_gap must be a non-negative integer, not {pass_gap!r}")
    if config.sub_arrays is not None and (arrays != 1 or pass_gap > 1):
        raise ValueError(
            f"with sub_arrays {config.sub_arrays!r} the passes' blocks share one queue of {config.n_arrays} "
            f"arrays behind double-buffered (pass_gap 0) or single-buffered (1) dispatchers: arrays must be 1 "
            f"and pass_gap 0 or 1, not {arrays!r} and {pass_gap!r} (sub_arrays=None models one array of the "
            f"pass's shape with any arrays and pass_gap)"
        )
    return pass_gap


def scheduled_batches(Q, K, grid, split, cfg: KaleidoConfig, nest, *, scheduler: bool):
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


def run_scheduled(
    Q, K, grid, split, cfg: KaleidoConfig, sched, *, variant, arrays, pass_gap, progress, quality, dispatcher=False
) -> ModelResult:
    """:func:`run_model` on the batches of :func:`scheduled_batches`."""
    n_tok, d = Q.shape
    R, C = cfg.array_rows, cfg.array_cols
    dense_cycles = math.ceil(math.ceil(n_tok / R) * math.ceil(n_tok / C) / arrays) * d + R + C - 1
    counts = grouped_op_counts(Q, K, grid, split, cfg.thresholds)
    ordered = [(tq, tk) if perm_r is None else (tq[perm_r], tk[perm_c]) for _, tq, tk, perm_r, perm_c, _ in sched]
    return _timed(ordered, cfg, counts, dense_cycles, variant=variant, arrays=arrays, pass_gap=pass_gap,
                  dispatcher=dispatcher, progress=progress, quality=quality)  # fmt: skip


def _timed(
    ordered, cfg: KaleidoConfig, counts, dense_cycles, *, variant, arrays, pass_gap, dispatcher, progress, quality
):
    """The :class:`ModelResult` of every batch's row and column tags in
    pass order (``ordered``): one array's walk, or on small arrays the
    small array's walk for the sums and the shared queue for the cycles
    (:func:`run_model`)."""
    if cfg.sub_arrays is None:
        walk = array_walk(
            ordered, len(ordered), cfg, variant=variant, arrays=arrays, pass_gap=pass_gap, progress=progress
        )
        start = (DISPATCH_LATENCY - pass_gap) if dispatcher else (1 if pass_gap else 0)
        return _result(walk, cfg, counts, dense_cycles, start=start, arrays=arrays, variant=variant, quality=quality)
    sub = cfg.sub_config()
    walk = array_walk(ordered, len(ordered), sub, variant=variant, arrays=1, pass_gap=pass_gap, progress=progress)
    res = _result(walk, sub, counts, dense_cycles, start=0, arrays=cfg.n_arrays, variant=variant, quality=quality)
    _, matcher = VARIANTS[variant]
    blocks = (piece for tq, tk in ordered for piece in iter_block_beats(tq, tk, cfg, matcher=matcher))
    res.cycles = queue_end(blocks, cfg.n_arrays, buffers=2 - pass_gap) + array_drain(sub)
    res.speedup = dense_cycles / res.cycles
    return res


def _result(walk, cfg: KaleidoConfig, counts: dict, dense_cycles: int, *, start, arrays, variant, quality):
    """The :class:`ModelResult` of a :func:`array_walk`: cycles (the
    busiest array's beats and gaps, ``start`` cycles before them, then the
    array's drain), utilization and the ops of ``counts`` (``dense``,
    ``oracle``, ``hw3``/``hw4``)."""
    per_array, phase_beats, phase_slots, n_pass, batch_beats, phase_channels = walk
    cycles = int(per_array.max()) + start + array_drain(cfg)
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
    dispatcher: bool = False,
) -> ModelResult:
    """Model a linear layer ``X W`` (int8 activations ``(N, d_in)``, ``d_out``
    outputs) with reuse on the activations (issue 17,
    :mod:`kaleido.golden.linear`): the ``Q K^T`` array walk with the
    activation units as rows and pairs of output features (tag NONE) as
    columns, batches over ``d_in``; the scheduler orders the rows only.
    Dense: ``ceil(N/R) ceil(d_out/C) d_in + R + C - 1``. Timing as
    :func:`run_model` (``dispatcher=True`` for the RTL's ``DispatchedArray``;
    small arrays, ``config.sub_arrays``, through the shared queue)."""
    from ..golden.linear import LinearReuse, linear_batches, linear_classes, linear_op_counts, weight_units

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
                  dispatcher=dispatcher, progress=None, quality=None)  # fmt: skip


def scheduler_cycles(Q, K, grid, split, config: KaleidoConfig | None = None) -> list[int]:
    """Per batch, the cycles the engine's two schedulers (row side over the
    Q strings, column side over the K strings, fed in lockstep) take:
    per window of 64 strings the slower side's
    :func:`~kaleido.golden.scheduler.schedule_cycles`, each side's LFSR state
    carried across windows and batches."""
    grid, split = check_qk(Q, K, grid, split)
    cfg = config or KaleidoConfig(split=tuple(split))
    check_lockstep(cfg)
    return [W for *_, W in scheduled_batches(Q, K, grid, split, cfg, batches(cfg, grid, split), scheduler=True)]


def check_lockstep(cfg: KaleidoConfig) -> None:
    if cfg.window("column") != cfg.window("row"):
        raise ValueError(
            f"the engine's schedulers run in lockstep: the row and column windows must agree, "
            f"not {cfg.window('row')} and {cfg.window('column')}"
        )
