"""One head's stage timings on the cycle model's loop nest (issue 14):
``Q K^T`` (:func:`qk_timing`), ``P V`` (:func:`pv_timing`) and the softmax
unit (:func:`softmax_stage_cycles`), which calibration
(:mod:`kaleido.calibrate`) and the design exploration
(:mod:`kaleido.explore`, which adds its cycle budget) both use.

:func:`kaleido.model.run_model` models the built design. The explorer needs
a few degrees of freedom the RTL does not have, so this module re-walks the
same loop nest (:func:`kaleido.loopnest.batches`, passes row group outer,
column group inner, dealt round-robin to the arrays) with the same timing
(a phase costs ``max(1, slots)`` beats, ``pass_gap`` idle beats per pass,
the last tile ``R + C`` cycles after the last beat) and the same need rule
(:func:`kaleido.model.need_table`), and lets a candidate change:

* the thresholds per channel group (:mod:`kaleido.golden.grouped`);
* the unit order: ``"queue"`` (no scheduler), ``"lfsr"`` (the paper's
  Hamming-clustering scheduler, :func:`kaleido.golden.loopnest.unit_order`)
  or ``"greedy"`` (:func:`kaleido.golden.passaware.pass_aware_order`);
* the issue granularity: ``"array"`` (the RTL: a channel goes to every PE
  if any needs it) or ``"pe"`` (every PE streams only its own slots, the
  pass ends when the slowest PE is done: the bound of any row, column or
  PE issue mask, with no RTL behind it), or ``sub_array=(r, c)``: the
  ``R x C`` pass split by rows and columns over ``r x c`` arrays that
  each stream their own slots and stay in step pass by pass;
* how the passes reach several arrays behind one dispatcher
  (:data:`DISPATCHES`, :func:`deal_passes`): dealt round-robin (the
  model's ``arrays``), taken from a shared pass queue by whichever array
  is free first, or split statically by row group or column group.

With the paper's settings it equals :func:`kaleido.model.run_model` cycle
for cycle (``tb/test_explore.py`` checks it), so the RTL-backed candidates
are measured, and the others differ only in the one thing they change.
P V follows :func:`kaleido.model.pv_cycles` with one FULL threshold per
group and its query blocks dealt to the arrays.
"""

from __future__ import annotations

import dataclasses
import heapq
import math

import numpy as np

from .checks import as_int8, check_grid, check_qk, check_split
from .config import LFSR_SEED, KaleidoConfig, tile_latency
from .encoding import Need, Phase
from .golden.grouped import check_group_thresholds, class_histograms_grouped, grouped_follower_classes
from .golden.loopnest import unit_order
from .golden.matcher import match_slots as golden_match_slots
from .golden.ops import COSTS
from .golden.passaware import pass_aware_order
from .golden.pv import unit_full
from .loopnest import batches, chunks, group_slices, unit_tags, units
from .model import dense_array_drain, group_masks, need_table, output_scaler_cycles, pv_pair_block_beats, softmax_cycles

__all__ = [
    "ORDERS",
    "ISSUES",
    "DISPATCHES",
    "QkTiming",
    "match_slots",
    "pass_beats",
    "qk_passes",
    "deal_passes",
    "check_sub_array",
    "qk_timing",
    "pv_timing",
    "softmax_stage_cycles",
    "SOFTMAX_LANES",
]

ORDERS = ("queue", "lfsr", "greedy")
ISSUES = ("array", "pe")

#: how passes reach the arrays behind one dispatcher (:func:`deal_passes`)
DISPATCHES = ("round-robin", "queue", "rows", "columns")

#: lanes of the softmax unit and output scaler in every candidate (the 4x4
#: array's: one per column); the same unit serves the dense baseline, so it
#: adds the same cycles to both sides of every comparison
SOFTMAX_LANES = 4


def match_slots(needs: np.ndarray, lookahead: int, matcher: bool = True) -> np.ndarray:
    """Slot counts of need arrays ``(..., n)`` (:class:`Need` codes): the
    golden matcher vectorised (:func:`kaleido.golden.matcher.match_slots`),
    or one slot per non-SKIP channel with ``matcher=False``."""
    needs = np.asarray(needs)
    if not matcher or not (needs == Need.HALF).any():
        return (needs != Need.SKIP).sum(axis=-1, dtype=np.int64)
    return golden_match_slots(needs, lookahead)


def check_sub_array(sub_array, config: KaleidoConfig) -> tuple[int, int]:
    """``sub_array`` as ``(r, c)``: positive integers dividing the
    configuration's ``(array_rows, array_cols)``."""
    R, C = config.array_rows, config.array_cols
    if (
        not isinstance(sub_array, (tuple, list))
        or len(sub_array) != 2
        or not all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) and x >= 1 for x in sub_array)
    ):
        raise TypeError(f"sub_array must be two positive integers (rows, columns), not {sub_array!r}")
    r, c = int(sub_array[0]), int(sub_array[1])
    if R % r or C % c:
        raise ValueError(f"sub_array {r}x{c} must divide the {R}x{C} pass")
    return r, c


def pass_beats(
    tq: np.ndarray,
    tk: np.ndarray,
    config: KaleidoConfig,
    *,
    matcher: bool = True,
    issue: str = "array",
    sub_array=None,
) -> tuple[np.ndarray, list[int], list[int]]:
    """Beats of every pass of one batch, int64 ``(row groups, column
    groups)``, from the row and column units' tags in pass order, and the
    beats and slots of each phase summed over the passes. ``issue`` in
    :data:`ISSUES`; ``sub_array=(r, c)`` (with ``issue="array"``): the pass's
    ``r x c`` blocks each issue their own slots and a phase lasts as long as
    its slowest block's (``(1, 1)`` is ``issue="pe"``, ``(R, C)`` the
    RTL)."""
    if issue not in ISSUES:
        raise ValueError(f"issue must be one of {ISSUES}, not {issue!r}")
    R, C = config.array_rows, config.array_cols
    if sub_array is not None and issue != "array":
        raise ValueError(f"sub_array {sub_array!r} needs issue='array', not {issue!r}")
    gr, gc = (1, 1) if issue == "pe" else (check_sub_array(sub_array, config) if sub_array is not None else (R, C))
    table = need_table(config.accumulators)
    if (gr, gc) == (R, C):
        qm, km = group_masks(tq, R), group_masks(tk, C)
    else:
        qm, km = group_masks(tq, gr), group_masks(tk, gc)
        qm = np.concatenate([qm, np.zeros((-len(qm) % (R // gr), qm.shape[1]), np.uint8)])
        km = np.concatenate([km, np.zeros((-len(km) % (C // gc), km.shape[1]), np.uint8)])
    Gr, Gc = -(-len(tq) // R), -(-len(tk) // C)
    beats = np.zeros((Gr, Gc), dtype=np.int64)
    phase_beats, phase_slots = [0, 0, 0, 0], [0, 0, 0, 0]
    for phase in Phase:
        slots = np.zeros((len(qm), len(km)), dtype=np.int64)
        step = max(1, (1 << 22) // max(1, len(km) * qm.shape[1]))
        for r0 in range(0, len(qm), step):
            needs = table[phase][qm[r0 : r0 + step, None, :], km[None, :, :]]
            slots[r0 : r0 + step] = match_slots(needs, config.lookahead, matcher)
        if (gr, gc) != (R, C):
            slots = slots.reshape(Gr, R // gr, Gc, C // gc).max(axis=(1, 3))
        b = np.maximum(slots, 1)
        beats += b
        phase_beats[phase] += int(b.sum())
        phase_slots[phase] += int(slots.sum())
    return beats, phase_beats, phase_slots


@dataclasses.dataclass
class QkTiming:
    """Q K^T of one head on ``arrays`` arrays: ``cycles`` and the dense
    array's ``dense_cycles`` (same PEs), the array ``beats`` (idle beats
    included), per-phase ``phase_beats``, the nibble multiplies ``ops``
    (``dense``, ``hw``) and ``utilization`` (``hw / (2 R C beats)``)."""

    cycles: int
    dense_cycles: int
    beats: int
    phase_beats: list
    ops: dict
    utilization: float
    passes: int
    #: beats (idle beats included) of each array, for the cycle budget
    array_beats: list = dataclasses.field(default_factory=list)
    #: cycles from the last beat to the last tile (and the pass gap's one)
    drain: int = 0
    PEs: int = 16

    @property
    def speedup(self) -> float:
        return self.dense_cycles / self.cycles


def deal_passes(beats: np.ndarray, loads: np.ndarray, first: tuple[int, int, int], dispatch: str) -> None:
    """Add one batch's passes (``beats``, ``(row groups, column groups)``,
    row group outer, column group inner) to the arrays' ``loads`` (int64,
    one per array, changed in place). ``first``: the passes, row groups and
    column groups of the batches before. ``dispatch`` in :data:`DISPATCHES`:

    * ``"round-robin"``: pass ``k`` (counted over the head) to array ``k mod
      arrays`` (:func:`kaleido.model.run_model`'s ``arrays``);
    * ``"queue"``: every pass, in order, to the array that is free first
      (the least loaded, ties to the lowest index): a shared pass queue;
    * ``"rows"`` / ``"columns"``: row group (column group) ``g``, counted
      over the head, to array ``g mod arrays``: a static split of the passes
      by rows (each array keeps its rows of Q for the batch) or by columns.
    """
    if dispatch not in DISPATCHES:
        raise ValueError(f"dispatch must be one of {DISPATCHES}, not {dispatch!r}")
    arrays = len(loads)
    n_pass, n_row, n_col = first
    Gr, Gc = beats.shape
    flat = beats.ravel()
    if dispatch == "queue":
        heap = [(int(x), k) for k, x in enumerate(loads)]
        heapq.heapify(heap)
        for b in flat.tolist():
            load, k = heap[0]
            heapq.heapreplace(heap, (load + b, k))
        for load, k in heap:
            loads[k] = load
        return
    if dispatch == "round-robin":
        idx = (n_pass + np.arange(flat.size)) % arrays
    elif dispatch == "rows":
        idx = np.repeat((n_row + np.arange(Gr)) % arrays, Gc)
    else:
        idx = np.tile((n_col + np.arange(Gc)) % arrays, Gr)
    loads += np.bincount(idx, weights=flat, minlength=arrays).astype(np.int64)


def qk_passes(
    Q,
    K,
    grid,
    split,
    config: KaleidoConfig,
    thresholds,
    *,
    order: str = "lfsr",
    matcher: bool = True,
    issue: str = "array",
    window: int | None = None,
    sub_array=None,
) -> tuple[list, list]:
    """The beats of every pass of one head's ``Q K^T``, one int64 array
    ``(row groups, column groups)`` per batch in loop-nest order (before
    any dispatch), and the beats of each phase: what :func:`qk_timing`
    deals to the arrays (arguments as there)."""
    grid, split = check_qk(Q, K, grid, split)
    fp = check_group_thresholds(thresholds)
    R, C = config.array_rows, config.array_cols
    qcls = grouped_follower_classes(Q, grid, split, fp)
    kcls = grouped_follower_classes(K, grid, split, fp)
    state = {"row": LFSR_SEED, "column": LFSR_SEED}
    phase_beats = [0, 0, 0, 0]
    out = []
    for batch in batches(config, grid, split):
        tq, tk = unit_tags(batch.units, qcls, batch.channels), unit_tags(batch.units, kcls, batch.channels)
        if order == "lfsr":
            perm_r, state["row"] = unit_order(tq, config, "row", state["row"])
            perm_c, state["column"] = unit_order(tk, config, "column", state["column"])
            tq, tk = tq[perm_r], tk[perm_c]
        elif order == "greedy":
            tq, tk = tq[pass_aware_order(tq, R, window)], tk[pass_aware_order(tk, C, window)]
        beats, pb, _ = pass_beats(tq, tk, config, matcher=matcher, issue=issue, sub_array=sub_array)
        phase_beats = [a + b for a, b in zip(phase_beats, pb, strict=True)]
        out.append(beats)
    return out, phase_beats


def qk_timing(
    Q,
    K,
    grid,
    split,
    config: KaleidoConfig | None = None,
    thresholds=None,
    *,
    order: str = "lfsr",
    matcher: bool = True,
    issue: str = "array",
    arrays: int = 1,
    pass_gap: int = 0,
    window: int | None = None,
    dispatch: str = "round-robin",
    sub_array=None,
    passes: tuple[list, list] | None = None,
) -> QkTiming:
    """Model one head's ``Q K^T`` (see module doc). ``thresholds``: three
    ``(F, P)`` pairs (t, x, y) or one, default the configuration's
    (``config.thresholds``);
    ``window``: the greedy order's window in units (default the batch);
    ``dispatch``: how passes reach the ``arrays`` (:func:`deal_passes`);
    ``sub_array=(r, c)``: each ``R x C`` pass split over ``r x c`` arrays
    in step (:func:`pass_beats`; they drain as ``r x c`` arrays);
    ``passes``: :func:`qk_passes` of the same head and settings, if already
    computed (the dispatch policies share them)."""
    grid, split = check_qk(Q, K, grid, split)
    cfg = config or KaleidoConfig(split=tuple(split))
    fp = check_group_thresholds(cfg.thresholds if thresholds is None else thresholds)
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, not {order!r}")
    if not isinstance(arrays, int) or arrays < 1:
        raise ValueError(f"arrays must be a positive integer, not {arrays!r}")
    if not isinstance(pass_gap, int) or pass_gap < 0:
        raise ValueError(f"pass_gap must be a non-negative integer, not {pass_gap!r}")
    if dispatch not in DISPATCHES:
        raise ValueError(f"dispatch must be one of {DISPATCHES}, not {dispatch!r}")
    R, C = cfg.array_rows, cfg.array_cols
    sub = None if sub_array is None else check_sub_array(sub_array, cfg)
    if passes is None:
        passes = qk_passes(
            Q, K, grid, split, cfg, fp, order=order, matcher=matcher, issue=issue, window=window, sub_array=sub
        )
    batch_beats, phase_beats = passes
    per_array = np.zeros(arrays, dtype=np.int64)
    n_pass = n_row = n_col = 0
    for beats in batch_beats:
        deal_passes(beats + pass_gap, per_array, (n_pass, n_row, n_col), dispatch)
        n_pass += beats.size
        n_row += beats.shape[0]
        n_col += beats.shape[1]
    n_tok, d = Q.shape
    dr, dc = (R, C) if sub is None else sub
    drain = (1 if pass_gap else 0) + tile_latency(dr - 1, dc - 1)
    cycles = int(per_array.max()) + drain
    dense_cycles = math.ceil(math.ceil(n_tok / R) * math.ceil(n_tok / C) / arrays) * d + R + C - 1
    hq = class_histograms_grouped(Q, grid, split, fp)
    hk = class_histograms_grouped(K, grid, split, fp)
    kind = "hw4" if cfg.accumulators == 4 else "hw3"
    ops = {k: int(np.einsum("cq,ck,qk->", hq, hk, COSTS[k])) for k in ("dense", kind)}
    ops["hw"] = ops.pop(kind)
    beats_total = int(per_array.sum())
    return QkTiming(
        cycles=cycles,
        dense_cycles=dense_cycles,
        beats=beats_total,
        phase_beats=phase_beats,
        ops=ops,
        utilization=ops["hw"] / (2 * R * C * beats_total) if beats_total else 0.0,
        passes=n_pass,
        array_beats=per_array.tolist(),
        drain=drain,
        PEs=R * C * arrays,
    )


def pv_timing(
    V,
    grid,
    split,
    config: KaleidoConfig | None = None,
    v_full=None,
    *,
    arrays: int = 1,
    p: np.ndarray | None = None,
    small_p: int | None = None,
) -> dict:
    """P V of one head (:func:`kaleido.model.pv_cycles`'s rule) with one FULL
    threshold per group (``v_full``: one or three, default the
    configuration's ``F``), the query blocks dealt to ``arrays`` arrays
    (round-robin; more than one array is an estimate, the RTL ``PvArray``
    is one array). Returns ``cycles``, ``dense_cycles``, ``beats``,
    ``dense_beats``.

    ``small_p`` (with ``p``, the head's P operand, ``(n, N)`` in
    ``0..127``): the **small-P pairing** candidate (issue 14; built in
    ``PvArray`` as ``KaleidoConfig.pv_pairs``, whose bound is 16). A beat
    whose row operands (``r0``, ``r1`` or ``r0 + r1``, as its selects use
    them, at columns where V is not 0) are below ``small_p`` at every row
    of its query block is *small*; the dispatcher pairs small beats
    greedily, one unit a cycle and one held back
    (:func:`kaleido.model.pv_pair_block_beats`, exact against the RTL at
    16), and the cycles depend on P. ``dense_small_cycles`` is the dense
    array with the same pairing (no reuse), for comparison."""
    as_int8("V", V)
    cfg = config or KaleidoConfig()
    grid = check_grid(grid, V.shape[0])
    split = check_split(split, V.shape[1])
    fs = [cfg.F] * 3 if v_full is None else v_full
    fs = [int(fs)] * 3 if isinstance(fs, (int, np.integer)) else [int(f) for f in fs]
    check_group_thresholds([(f, f) for f in fs])
    if not isinstance(arrays, (int, np.integer)) or arrays < 1:
        raise ValueError(f"arrays must be a positive integer, not {arrays!r}")
    R, C = cfg.array_rows, cfg.array_cols
    drain = tile_latency(R - 1, C - 1)
    dense_drain = dense_array_drain(cfg)
    if small_p is not None:
        if p is None:
            raise ValueError("small_p needs p, the head's P operand")
        if not isinstance(small_p, (int, np.integer)) or not 1 <= small_p <= 16:
            raise ValueError(f"small_p must be an integer in 1..16 (a 4-bit row operand), not {small_p!r}")
        beats, dense_small = pv_pair_block_beats(V, p, grid, split, cfg, fs, [9, 9, 9], bound=int(small_p))
        plain = pv_timing(V, grid, split, cfg, fs, arrays=arrays)

        def dealt(per_block: np.ndarray) -> int:  # round-robin to arrays; the slowest array ends
            return int(max(per_block[k::arrays].sum() for k in range(min(arrays, len(per_block)))))

        return {
            **plain,
            "cycles": dealt(beats) + 1 + drain,
            "beats": dealt(beats),
            "dense_small_cycles": dealt(dense_small) + 1 + drain,
        }
    per_block = dense = 0
    for (sl, axis), F in zip(group_slices(split), fs, strict=True):
        u = units(grid, axis)
        paired = u[:, 1] >= 0
        full = unit_full(V, u, np.arange(sl.start, sl.stop), F)
        for cs in chunks(sl.stop - sl.start, C):
            single = ~paired | full[:, cs].all(axis=1)
            per_block += 2 * len(u) - int(single.sum())
            dense += 2 * len(u) - int((~paired).sum())
    blocks = math.ceil(math.ceil(V.shape[0] / R) / arrays)
    return {
        "cycles": blocks * per_block + 1 + drain,
        "dense_cycles": blocks * dense + 1 + dense_drain,
        "beats": blocks * per_block,
        "dense_beats": blocks * dense,
    }


def softmax_stage_cycles(n: int, d: int) -> int:
    """The softmax unit and output scaler on a head of ``n`` tokens and ``d``
    channels with :data:`SOFTMAX_LANES` lanes (as
    :func:`kaleido.model.attention_stages` on the 4x4 array)."""
    return softmax_cycles(n, n, SOFTMAX_LANES) + output_scaler_cycles(n, d, SOFTMAX_LANES)
