"""Golden need derivation and channel matcher (spec sections 7-8): the
array-level need of every channel of a batch in one phase, and the slot
stream the matcher makes of them."""

from __future__ import annotations

import numpy as np

from ..encoding import Need, Phase, array_need, check_accumulators, pe_need

__all__ = ["channel_needs", "match", "match_slots"]

# lookup tables [accumulators][phase, q, k] -> PeNeed, [phase, union] -> Need
_NEED = {
    a: np.array([[[pe_need(p, q, k, a) for k in range(4)] for q in range(4)] for p in Phase], dtype=np.uint8)
    for a in (3, 4)
}
_ARRAY_NEED = np.array([[array_need(p, u) for u in range(4)] for p in Phase], dtype=np.uint8)


def channel_needs(phase, q, k, *, rows_present=None, cols_present=None, accumulators: int = 3) -> list:
    """Array-level :class:`Need` of every channel of a batch in ``phase``.

    ``q`` is uint8 ``(R, n)`` (row pairs' follower classes), ``k`` uint8
    ``(C, n)``; padded (token-less) rows or columns are masked out by the
    boolean ``rows_present`` / ``cols_present``.
    """
    q = np.asarray(q)
    k = np.asarray(k)
    if q.ndim != 2 or k.ndim != 2 or q.shape[1] != k.shape[1]:
        raise ValueError(f"q and k must be (rows, n) and (cols, n) class arrays, not {q.shape!r}, {k.shape!r}")
    need = _NEED[check_accumulators(accumulators)][int(phase)][q[:, None, :], k[None, :, :]]  # (R, C, n)
    if rows_present is not None:
        need = need * np.asarray(rows_present, dtype=np.uint8)[:, None, None]
    if cols_present is not None:
        need = need * np.asarray(cols_present, dtype=np.uint8)[None, :, None]
    union = (
        np.bitwise_or.reduce(need.reshape(-1, need.shape[2]), axis=0) if need.size else np.zeros(q.shape[1], np.uint8)
    )
    return [Need(int(n)) for n in _ARRAY_NEED[int(phase)][union]]


def match(needs, lookahead: int = 4) -> list:
    """Golden matcher (spec sec. 8): the slot stream of one pass and phase.

    SKIP channels are dropped; walking the rest in channel order, a HALF
    head takes the first HALF channel among the next ``lookahead`` remaining
    entries into a DUAL_LO slot ``(head, partner)``; anything else is a
    FULL8 slot ``(c,)``. ``lookahead=None`` means unbounded.
    """
    try:
        needs = [Need(n) for n in needs]
    except ValueError as err:
        raise ValueError(f"needs must be SKIP, HALF or FULL (kaleido.encoding.Need): {err}") from None
    if lookahead is not None and (not isinstance(lookahead, int) or isinstance(lookahead, bool) or lookahead < 0):
        raise ValueError(f"lookahead must be a non-negative integer or None, not {lookahead!r}")
    rest = [c for c, n in enumerate(needs) if n != Need.SKIP]
    slots: list[tuple[int, ...]] = []
    while rest:
        head = rest.pop(0)
        if needs[head] == Need.HALF:
            window = rest if lookahead is None else rest[:lookahead]
            partner = next((c for c in window if needs[c] == Need.HALF), None)
            if partner is not None:
                rest.remove(partner)
                slots.append((head, partner))
                continue
        slots.append((head,))
    return slots


def _pack(mask: np.ndarray) -> np.ndarray:
    """bool ``(..., n)`` -> uint64 with channel ``c`` at bit ``c``."""
    n = mask.shape[-1]
    if n > 64:
        raise ValueError(f"a batch holds at most 64 channels, not {n}")
    out = np.zeros(mask.shape[:-1], dtype=np.uint64)
    for c in range(n):
        out |= mask[..., c].astype(np.uint64) << np.uint64(c)
    return out


def match_slots(needs, lookahead: int) -> np.ndarray:
    """Slot counts of need arrays ``(..., n)`` (:class:`Need` codes):
    :func:`match` vectorised over the leading axes, bit-parallel over the
    channels (at most 64): the head is the lowest pending channel, and it
    merges with the first HALF among the next ``lookahead`` pending ones
    when both are HALF."""
    needs = np.asarray(needs)
    pending = _pack(needs != Need.SKIP)
    half = _pack(needs == Need.HALF)
    slots = np.zeros(pending.shape, dtype=np.int64)
    one = np.uint64(1)
    while True:
        active = pending != 0
        if not active.any():
            return slots
        head = pending & (~pending + one)
        rest = pending & ~head
        window = np.zeros_like(rest)
        r = rest.copy()
        for _ in range(lookahead):
            low = r & (~r + one)
            window |= low
            r &= ~low
        cand = window & half
        partner = cand & (~cand + one)
        dual = ((head & half) != 0) & (partner != 0)
        pending = rest & ~np.where(dual, partner, np.uint64(0))
        slots += active
