"""The whole loop nest of one head through the golden array (spec sections
7-8): every pass of :func:`kaleido.loopnest.batches` (groups, batches,
scheduler windows, passes), its operands, slot streams and tiles, and S
accumulated as the accumulation buffer would."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ..checks import check_qk
from ..config import LFSR_SEED, KaleidoConfig
from ..encoding import ABSENT, Need, Phase
from ..loopnest import Batch, batches, chunks, pad_units, unit_tags
from .array import array_pass, pass_beats
from .grouped import grouped_effective, grouped_follower_classes
from .matcher import channel_needs, match
from .scheduler import QueueSchedule, reuse_strings, schedule_queue

__all__ = [
    "Pass",
    "pass_operands",
    "unit_order",
    "unit_schedule",
    "iter_passes",
    "batch_passes",
    "scores_by_passes",
    "accumulate_tiles",
]


def pass_operands(Z, Zeff, cls_of, unit_rows, channels):
    """Operands ``(X (U, 2, n) int8, tags (U, n) uint8, present (U,) bool)``
    of a list of units (rows of :func:`kaleido.loopnest.units`, or ``(-1, -1)`` padding) for
    the batch ``channels``; ``cls_of`` is :func:`follower_classes` of ``Z``."""
    U, n = len(unit_rows), len(channels)
    X = np.zeros((U, 2, n), dtype=np.int8)
    tags = np.full((U, n), ABSENT, dtype=np.uint8)
    present = np.zeros(U, dtype=bool)
    for u, (a, f) in enumerate(unit_rows):
        if a < 0:
            continue
        present[u] = True
        X[u, 0] = Z[a, channels]
        if f >= 0:
            X[u, 1] = Zeff[f, channels]
            tags[u] = cls_of[f][channels]
    return X, tags, present


@dataclasses.dataclass(frozen=True)
class Pass:
    """One array pass of the loop nest: per row unit the operands ``A``
    (int8 ``(R, 2, n)``: anchors, then the followers' row-side effective
    values), tags ``q`` (uint8 ``(R, n)``) and ``rows_present``; the same
    per column unit (``B``, ``k``, ``cols_present``, column-side values);
    the four phases' slot streams; and the units' ``(anchor, follower)``
    token indices ``rows`` and ``cols`` (-1 for none). ``batch`` is the
    :class:`kaleido.loopnest.Batch` it belongs to."""

    batch: Batch
    A: np.ndarray
    q: np.ndarray
    rows_present: np.ndarray
    B: np.ndarray
    k: np.ndarray
    cols_present: np.ndarray
    slots: list
    rows: np.ndarray
    cols: np.ndarray

    @property
    def _operands(self) -> tuple:
        return self.A, self.q, self.B, self.k, self.slots

    def beats(self, accumulators: int = 3) -> list:
        """The pass's beat stream (:func:`kaleido.golden.array.pass_beats`)."""
        return pass_beats(
            *self._operands, accumulators=accumulators, rows_present=self.rows_present, cols_present=self.cols_present
        )

    def tiles(self, accumulators: int = 3, acc_width: int | None = None) -> np.ndarray:
        """Each PE's drained tiles, int64 ``(R, C, 4)`` (:func:`array_pass`)."""
        return array_pass(
            *self._operands,
            accumulators=accumulators,
            acc_width=acc_width,
            rows_present=self.rows_present,
            cols_present=self.cols_present,
        )


def unit_order(tags: np.ndarray, config: KaleidoConfig, side: str, seed: int) -> tuple[np.ndarray, int]:
    """The scheduler's order of one batch's units on ``side`` (``"row"``
    over their Q tags, ``"column"`` over their K tags, uint8 ``(U, n)``):
    windows of ``config.window(side)`` reuse strings, the LFSR starting at
    ``seed``; returns ``(permutation, LFSR state)``."""
    q = unit_schedule(tags, config, side, seed)
    return q.order, q.state


def unit_schedule(tags: np.ndarray, config: KaleidoConfig, side: str, seed: int) -> QueueSchedule:
    """:func:`unit_order` with each window's scheduler cycles too (the
    :class:`~kaleido.golden.scheduler.QueueSchedule`)."""
    return schedule_queue(reuse_strings(tags, config.batch), window=config.window(side), seed=seed)


def iter_passes(Q, K, grid, split, config: KaleidoConfig | None = None, *, matcher=True, order=None, scheduler=False):
    """Yield every array pass of the loop nest as a :class:`Pass`.

    Passes take consecutive groups of ``array_rows`` row units and
    ``array_cols`` column units in queue order (``order`` may give another
    unit order per channel group). ``scheduler=True`` orders, per batch, the
    row units by the Hamming-clustering scheduler over their Q reuse strings
    and the column units over their K strings (:func:`unit_order`; one
    LFSR per side, its state carried across windows and batches).
    ``matcher=False`` issues every needed channel as a FULL8 slot."""
    cfg = config or KaleidoConfig(split=tuple(split))
    grid, split = check_qk(Q, K, grid, split)
    Qe = grouped_effective(Q, grid, split, cfg.thresholds, side="row")
    Ke = grouped_effective(K, grid, split, cfg.thresholds, side="column")
    qcls = grouped_follower_classes(Q, grid, split, cfg.thresholds)
    kcls = grouped_follower_classes(K, grid, split, cfg.thresholds)
    state = {"row": LFSR_SEED, "column": LFSR_SEED}
    for batch in batches(cfg, grid, split):
        u, ch = batch.units, batch.channels
        rows_u = cols_u = u if order is None else u[order[batch.group]]
        if scheduler:
            perm_r, state["row"] = unit_order(unit_tags(u, qcls, ch), cfg, "row", state["row"])
            perm_c, state["column"] = unit_order(unit_tags(u, kcls, ch), cfg, "column", state["column"])
            rows_u, cols_u = u[perm_r], u[perm_c]
        yield from batch_passes(batch, (Q, Qe, qcls, rows_u), (K, Ke, kcls, cols_u), cfg, matcher=matcher)


def batch_passes(batch: Batch, rows: tuple, cols: tuple, config: KaleidoConfig, *, matcher=True):
    """The passes of one batch, row group outer, column group inner: ``rows``
    and ``cols`` are ``(Z, Zeff, cls_of, units)`` of each side (operands,
    effective operands, :func:`follower_classes`-style per-token classes
    and the units in pass order); ``matcher=False`` issues every needed
    channel as a FULL8 slot. ``iter_passes`` (``Q K^T``) and
    :func:`kaleido.golden.linear.linear_passes` (``X W``) share it."""
    R, C = config.array_rows, config.array_cols
    ch = batch.channels
    zr, zr_eff, cls_r, rows_u = rows
    zc, zc_eff, cls_c, cols_u = cols
    for rs in chunks(len(rows_u), R):
        rsel = pad_units(rows_u[rs], R)
        A, qt, rp = pass_operands(zr, zr_eff, cls_r, rsel, ch)
        for cs in chunks(len(cols_u), C):
            csel = pad_units(cols_u[cs], C)
            B, kt, cp = pass_operands(zc, zc_eff, cls_c, csel, ch)
            slots = []
            for phase in Phase:
                needs = channel_needs(phase, qt, kt, rows_present=rp, cols_present=cp, accumulators=config.accumulators)
                slots.append(
                    match(needs, config.lookahead)
                    if matcher
                    else [(c,) for c, nd in enumerate(needs) if nd != Need.SKIP]
                )
            yield Pass(batch, A, qt, rp, B, kt, cp, slots, rsel, csel)


def scores_by_passes(
    Q, K, grid, split, config: KaleidoConfig | None = None, *, matcher=True, order=None, scheduler=False
):
    """Run the whole loop nest (:func:`iter_passes`) through
    :func:`array_pass` and accumulate ``S`` as the accumulation buffer
    would; returns ``(S, stats)`` with the number of passes, slots per
    phase and array beats (``max(1, slots)`` per phase, docs/ARRAY.md).
    Equals ``reuse_scores`` exactly, with or without scheduler and matcher."""
    cfg = config or KaleidoConfig(split=tuple(split))
    n_tok = Q.shape[0]
    S = np.zeros((n_tok, n_tok), dtype=np.int64)
    stats: dict[str, Any] = {"passes": 0, "slots": [0, 0, 0, 0], "beats": 0}
    for ps in iter_passes(Q, K, grid, split, cfg, matcher=matcher, order=order, scheduler=scheduler):
        for phase in Phase:
            stats["slots"][phase] += len(ps.slots[phase])
            stats["beats"] += max(1, len(ps.slots[phase]))
        stats["passes"] += 1
        accumulate_tiles(S, ps.tiles(cfg.accumulators, cfg.acc_width), ps.rows, ps.cols)
    return S, stats


def accumulate_tiles(S, tiles, rsel, csel):
    """Add a pass's tiles ``(R, C, 4)`` into ``S`` (the accumulation buffer),
    dropping tiles of absent tokens."""
    for r, (ai, fi) in enumerate(rsel):
        for c, (aj, fj) in enumerate(csel):
            for phase, (ti, tj) in enumerate(((ai, aj), (ai, fj), (fi, aj), (fi, fj))):
                if ti >= 0 and tj >= 0:
                    S[ti, tj] += tiles[r, c, phase]
