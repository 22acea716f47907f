"""One pass's phases on a Kaleido array (spec sec. 7 and 9): the need
table, a group's need words, the matcher as a byte automaton and the slots
of every (row key, column key) pair; :func:`pass_phase_beats` keeps them
per pass, :func:`kaleido.model.qk.array_walk` sums them over a head.

Per channel group, batch and phase, each row group (``array_rows`` row
units, in queue or scheduled order) is summarised by a 4-bit mask per
channel of the follower classes it holds (NONE, PARTIAL, FULL, ABSENT;
padding units hold none), each column group likewise; the lookup table of
spec sec. 7 (:func:`need_table`) turns a (row mask, column mask) pair into
the array-level need, and the matcher (or plain issue) turns a pass's needs
into slots. Issue 16 made it fast without changing a count: masks with
equal table rows (columns) are merged (:func:`phase_plans`), each row
group becomes bit words of the channels where it holds each row class,
each column group the non-SKIP and HALF words under each row class
(:func:`need_words`), so a pass's need words are a few ANDs and ORs of its
row and column keys; slots are evaluated once per distinct (row key,
column key) pair (:func:`pair_slots`), the matcher as a byte-wide automaton
table."""

from __future__ import annotations

import functools

import numpy as np

from ..config import PE_LATENCY, KaleidoConfig, tile_latency
from ..encoding import TAGS, Need, Phase, array_need, pe_need

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


#: cycles from the dense array (``kaleido.hdl.baseline.DenseArray``)
#: accepting a pass's last beat to PE ``(r, c)``'s tile: ``r + c`` (skew
#: and hops), then the MAC PE's product and drain registers, as the Kaleido
#: PE; no beat register (its operands come from the feeder's shift registers)
DENSE_PE_LATENCY = PE_LATENCY


def dense_array_drain(config: KaleidoConfig) -> int:
    """:func:`array_drain` of the dense MAC array of the same shape: ``R - 1
    + C - 1 + DENSE_PE_LATENCY``, the Kaleido array's drain without its
    beat register."""
    return config.array_rows - 1 + config.array_cols - 1 + DENSE_PE_LATENCY


def stream_cycles(beats: int, config: KaleidoConfig) -> int:
    """Cycles from the first beat to the last tile for ``beats`` beats, both
    counted."""
    return beats + array_drain(config)


def group_masks(tags, size):
    """Per group of ``size`` units: uint8 ``(groups, n)`` class masks; the
    padding units that complete the last group hold no class."""
    U, n = tags.shape
    G = -(-U // size)
    bits = np.zeros((G * size, n), dtype=np.uint8)
    bits[:U] = np.left_shift(1, tags.astype(np.uint8))
    return np.bitwise_or.reduce(bits.reshape(G, size, n), axis=1)


def need_words(ns: np.ndarray, half: np.ndarray) -> np.ndarray:
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


def pair_slots(rows: np.ndarray, cols: np.ndarray, lookahead: int | None) -> np.ndarray:
    """Slots of every (row key, column key) pair of one phase: ``rows``
    (``k``, R, lanes) need-word masks of the row classes that need
    something (the channels where a row group holds that class), ``cols``
    (``k``, C, lanes) the columns' need words under each of them; a pair's
    need words are ``OR_k rows[k] & cols[k]`` (:func:`need_words`). Returns
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
def phase_plans(accumulators: int) -> tuple:
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


def distinct_words(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(k, G, lanes)`` words of ``G`` groups: the distinct groups' words
    ``(k, n, lanes)`` and each group's index among them."""
    k, G, L = w.shape
    u, inv = np.unique(w.transpose(1, 0, 2).reshape(G, k * L), axis=0, return_inverse=True)
    return u.reshape(len(u), k, L).transpose(1, 0, 2), inv.ravel()


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
    for phase, (rcls, ccls, need, active) in zip(Phase, phase_plans(cfg.accumulators), strict=True):
        if not len(active):
            continue
        rkey, ckey = rcls[qm], ccls[km]
        held = rkey[None, :, :] == active[:, None, None]
        cneed = need[:, ckey]
        lookahead = min(cfg.lookahead, n_ch) if matcher and bool((cneed == Need.HALF).any()) else None
        rw = need_words(held, held)  # (k, Gr, lanes)
        cw = need_words(cneed != Need.SKIP, cneed == Need.HALF)  # (k, Gc, lanes)
        # the slots of each distinct (row words, column words) pair once, then every pass's by its pair
        (ur, rinv), (uc, cinv) = distinct_words(rw), distinct_words(cw)
        slots = np.maximum(pair_slots(ur, uc, lookahead), 1).astype(np.int64)
        out[:, :, phase] = slots[rinv[:, None], cinv[None, :]]
    return out
