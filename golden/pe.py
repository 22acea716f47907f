"""Golden model of the reuse-aware PE, of one array pass and of the whole
loop nest (spec sections 5-8).

A PE owns one 2x2 pair group: rows ``(i, i')``, columns ``(j, j')``, tiles
T0 = (i, j), T1 = (i, j'), T2 = (i', j), T3 = (i', j'). Per slot it adds
``(enA ? mulA : 0) + (enB ? mulB_shifted : 0)`` to each register, with the
enables decoded from (phase, slot kind, tags) by :func:`tile_parts`.
"""

from __future__ import annotations

import enum
import typing

import numpy as np

from ..config import KaleidoConfig
from ._checks import check_qk
from .reuse import ABSENT, Reuse, effective, follower_classes, group_slices, pairs

__all__ = ["Phase", "SlotKind", "Part", "PeNeed", "Need", "tile_parts", "register_parts",
           "pe_need", "channel_needs", "match", "PEModel", "Beat", "pass_beats", "run_beats", "array_pass", "pass_operands",
           "units", "unit_tags", "iter_passes", "accumulate_tiles", "scores_by_passes", "REGISTER_OF"]


class Phase(enum.IntEnum):
    T0 = 0  # (i, j)
    T1 = 1  # (i, j')
    T2 = 2  # (i', j)
    T3 = 3  # (i', j')


class SlotKind(enum.IntEnum):
    FULL8 = 0    # one channel, full 8x8 product (hi part shifted by 4)
    DUAL_LO = 1  # two channels' low-nibble products, no shift


class Part(enum.IntFlag):
    """Which product parts a register adds: ``p = p_hi + p_lo``."""
    ZERO = 0
    LO = 1   # p_lo = a * lo(b): multiplier A
    HI = 2   # p_hi = 16 * a * hi(b): multiplier B, shifted
    P = 3


class PeNeed(enum.IntEnum):
    """Per PE and channel, the parts a phase needs (union over registers)."""
    SKIP = 0
    LO = 1
    HI = 2
    FULL = 3


class Need(str, enum.Enum):
    """Array-level need of a channel in a phase (spec sec. 7)."""
    SKIP = "SKIP"   # every PE's need is SKIP
    HALF = "HALF"   # every need is SKIP or LO: may share a DUAL_LO slot
    FULL = "FULL"   # a FULL8 slot


_F, _PA, _N = Reuse.FULL, Reuse.PARTIAL, Reuse.NONE
_ZERO, _LO, _HI, _P = Part.ZERO, Part.LO, Part.HI, Part.P


def tile_parts(phase, q, k, accumulators: int = 3) -> dict:
    """Spec sec. 5 table: ``{tile: Part}`` a PE adds in ``phase`` for row
    follower class ``q`` and column follower class ``k`` (3 = ABSENT)."""
    phase = Phase(phase)
    if (phase in (Phase.T2, Phase.T3) and q == ABSENT) or (phase in (Phase.T1, Phase.T3) and k == ABSENT):
        return {}  # tile not computed
    qF = q == _F
    if phase == Phase.T0:
        out = {Phase.T0: _P,
               Phase.T1: _P if k == _F else _HI if k == _PA else _ZERO,
               Phase.T2: _P if qF else _ZERO}
        if accumulators == 4:
            out[Phase.T3] = (_P if k == _F else _HI if k == _PA else _ZERO) if qF else _ZERO
        return out
    if phase == Phase.T1:
        return {Phase.T1: {_F: _ZERO, _PA: _LO, _N: _P}[k],
                Phase.T3: {_F: _ZERO, _PA: _LO, _N: _P}[k] if qF else _ZERO}
    if phase == Phase.T2:
        return {Phase.T2: _ZERO if qF else _P,
                Phase.T3: _ZERO if qF else (_P if k == _F else _HI if k == _PA else _ZERO)}
    if qF:
        own = _ZERO if accumulators == 4 else {_F: _P, _PA: _HI, _N: _ZERO}[k]
    else:
        own = {_F: _ZERO, _PA: _LO, _N: _P}[k]
    return {Phase.T3: own}


#: which register holds which tile during each phase, by accumulator count
REGISTER_OF = {
    3: {Phase.T0: {Phase.T0: 0, Phase.T1: 1, Phase.T2: 2},
        Phase.T1: {Phase.T1: 0, Phase.T3: 1},
        Phase.T2: {Phase.T2: 0, Phase.T3: 1},
        Phase.T3: {Phase.T3: 0}},
    4: {Phase.T0: {Phase.T0: 0, Phase.T1: 1, Phase.T2: 2, Phase.T3: 3},
        Phase.T1: {Phase.T1: 0, Phase.T3: 1},
        Phase.T2: {Phase.T2: 0, Phase.T3: 1},
        Phase.T3: {Phase.T3: 0}},
}


def register_parts(phase, q, k, accumulators: int = 3) -> tuple:
    """Per register R0.. the Part it adds: the PE's decode table."""
    regs = [_ZERO] * accumulators
    for tile, part in tile_parts(phase, q, k, accumulators).items():
        regs[REGISTER_OF[accumulators][Phase(phase)][tile]] |= part
    return tuple(regs)


def pe_need(phase, q, k, accumulators: int = 3) -> PeNeed:
    need = _ZERO
    for part in tile_parts(phase, q, k, accumulators).values():
        need |= part
    return PeNeed(int(need))


# lookup tables [accumulators][phase, q, k]
_NEED = {a: np.array([[[pe_need(p, q, k, a) for k in range(4)] for q in range(4)] for p in Phase],
                     dtype=np.uint8) for a in (3, 4)}
_REGS = {a: np.array([[[[int(x) for x in register_parts(p, q, k, a)] for k in range(4)]
                       for q in range(4)] for p in Phase], dtype=np.uint8) for a in (3, 4)}


def channel_needs(phase, q, k, *, rows_present=None, cols_present=None,
                  accumulators: int = 3) -> list:
    """Array-level :class:`Need` of every channel of a batch in ``phase``.

    ``q`` is uint8 ``(R, n)`` (row pairs' follower classes), ``k`` uint8
    ``(C, n)``; padded (token-less) rows or columns are masked out by the
    boolean ``rows_present`` / ``cols_present``.
    """
    q = np.asarray(q)
    k = np.asarray(k)
    if q.ndim != 2 or k.ndim != 2 or q.shape[1] != k.shape[1]:
        raise ValueError(f"q and k must be (rows, n) and (cols, n) class arrays, not {q.shape!r}, {k.shape!r}")
    need = _NEED[accumulators][int(phase)][q[:, None, :], k[None, :, :]]  # (R, C, n)
    if rows_present is not None:
        need = need * np.asarray(rows_present, dtype=np.uint8)[:, None, None]
    if cols_present is not None:
        need = need * np.asarray(cols_present, dtype=np.uint8)[None, :, None]
    union = np.bitwise_or.reduce(need.reshape(-1, need.shape[2]), axis=0) if need.size else \
        np.zeros(q.shape[1], np.uint8)
    half_ok = Phase(phase) in (Phase.T1, Phase.T3)
    return [Need.SKIP if u == 0 else Need.HALF if (u == PeNeed.LO and half_ok) else Need.FULL
            for u in union]


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
        raise ValueError(f"needs must be SKIP, HALF or FULL: {err}") from None
    if lookahead is not None and (not isinstance(lookahead, int) or isinstance(lookahead, bool)
                                  or lookahead < 0):
        raise ValueError(f"lookahead must be a non-negative integer or None, not {lookahead!r}")
    rest = [c for c, n in enumerate(needs) if n != Need.SKIP]
    slots = []
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


def _wrap(x: np.ndarray, width: int | None) -> np.ndarray:
    if width is None:
        return x
    m = 1 << width
    return ((x + (m >> 1)) % m) - (m >> 1)


class PEModel:
    """Vectorised golden PE: a ``(rows, cols)`` grid of PEs sharing the
    phase and slot stream, as in one array pass.

    ``step`` takes per-row ``r0, r1, q0, q1`` and per-column ``k, k0, k1``
    (``k`` the 8-bit column port as int8). ``end_phase`` drains R0 and
    performs the register moves of spec sec. 5.
    """

    def __init__(self, rows: int, cols: int, accumulators: int = 3, acc_width: int | None = None):
        if accumulators not in (3, 4):
            raise ValueError(f"accumulators must be 3 or 4, not {accumulators!r}")
        self.accumulators = accumulators
        self.acc_width = acc_width
        self.regs = np.zeros((accumulators, rows, cols), dtype=np.int64)

    @staticmethod
    def products(kind, r0, r1, k):
        """``(mulA, mulB_shifted)``: ``mulA = r0 * lo(k)``; ``mulB = (M1 ? r1 :
        r0) * nib``, nib signed ``k[7:4]`` shifted by 4 in FULL8, unsigned and
        unshifted in DUAL_LO."""
        kb = np.asarray(k, dtype=np.int8).view(np.uint8).astype(np.int64)
        mul_a = np.asarray(r0, dtype=np.int64) * (kb & 0xF)
        if SlotKind(kind) == SlotKind.FULL8:
            nib = np.asarray(k, dtype=np.int8).astype(np.int64) >> 4
            return mul_a, (np.asarray(r0, dtype=np.int64) * nib) << 4
        return mul_a, np.asarray(r1, dtype=np.int64) * (kb >> 4)

    def step(self, phase, kind, r0, r1, k, q0, q1, k0, k1):
        mul_a, mul_b = self.products(kind, np.asarray(r0)[:, None], np.asarray(r1)[:, None],
                                     np.asarray(k)[None, :])
        table = _REGS[self.accumulators][int(phase)]
        parts_a = table[np.asarray(q0)[:, None], np.asarray(k0)[None, :]]  # (R, C, regs)
        parts_b = parts_a if SlotKind(kind) == SlotKind.FULL8 else \
            table[np.asarray(q1)[:, None], np.asarray(k1)[None, :]]
        en_a = (parts_a & Part.LO) != 0
        en_b = (parts_b & (Part.HI if SlotKind(kind) == SlotKind.FULL8 else Part.LO)) != 0
        add = np.where(en_a, mul_a[..., None], 0) + np.where(en_b, mul_b[..., None], 0)
        self.regs = _wrap(self.regs + np.moveaxis(add, -1, 0), self.acc_width)

    def end_phase(self, phase) -> np.ndarray:
        phase = Phase(phase)
        r = self.regs
        drained = r[0].copy()
        zero = np.zeros_like(r[0])
        if phase == Phase.T0:
            nxt = [r[1], r[3] if self.accumulators == 4 else zero, r[2]] + \
                  ([zero] if self.accumulators == 4 else [])
        elif phase == Phase.T1:
            nxt = [r[2], r[1], zero] + r[3:].tolist()
        elif phase == Phase.T2:
            nxt = [r[1], zero, r[2]] + r[3:].tolist()
        else:
            nxt = [zero] + list(r[1:])
        self.regs = np.array(nxt, dtype=np.int64)
        return drained


def _check_pass_stream(slots, needs, phase, n):
    seen = set()
    for slot in slots:
        if not isinstance(slot, tuple) or len(slot) not in (1, 2):
            raise ValueError(f"a slot must be (c,) or (c1, c2), not {slot!r}")
        for c in slot:
            if not 0 <= c < n:
                raise ValueError(f"slot {slot!r} names channel {c!r} outside the batch of {n}")
            if c in seen:
                raise ValueError(f"channel {c} appears twice in phase {Phase(phase).name}")
            seen.add(c)
        if len(slot) == 2 and any(needs[c] != Need.HALF for c in slot):
            raise ValueError(f"DUAL_LO slot {slot!r} in phase {Phase(phase).name} pairs channels "
                             f"whose needs are {[needs[c].value for c in slot]}, not both HALF")
    missing = [c for c in range(n) if needs[c] != Need.SKIP and c not in seen]
    if missing:
        raise ValueError(f"phase {Phase(phase).name} slot stream misses needed channels {missing}")


class Beat(typing.NamedTuple):
    """One unskewed input beat of the array (spec sec. 7): control, per row
    ``r0, r1, q0, q1`` and per column ``k`` (the 8-bit port as uint8),
    ``k0, k1``. ``slot = 0, last = 1`` is the marker of a phase without slots."""
    slot: int
    kind: int
    phase: int
    last: int
    r0: np.ndarray
    r1: np.ndarray
    q0: np.ndarray
    q1: np.ndarray
    k: np.ndarray
    k0: np.ndarray
    k1: np.ndarray


def pass_beats(A, q, B, k, slots, *, accumulators: int = 3, rows_present=None,
               cols_present=None) -> list:
    """The beat stream of one array pass: per phase its slots in order, the
    last carrying ``last = 1``, or one marker beat when the phase has none.
    Arguments as :func:`array_pass`; the slot streams are validated."""
    for name, x in (("A", A), ("B", B)):
        if not isinstance(x, np.ndarray) or x.dtype != np.int8 or x.ndim != 3 or x.shape[1] != 2:
            raise ValueError(f"{name} must be an int8 array of shape (pairs, 2, n), not "
                             f"{getattr(x, 'dtype', type(x).__name__)} {getattr(x, 'shape', '')}")
    R, _, n = A.shape
    C = B.shape[0]
    if B.shape[2] != n or np.shape(q) != (R, n) or np.shape(k) != (C, n):
        raise ValueError(f"shapes disagree: A {A.shape!r}, q {np.shape(q)!r}, B {B.shape!r}, k {np.shape(k)!r}")
    if len(slots) != 4:
        raise ValueError(f"slots must hold four phase streams (T0..T3), not {len(slots)}")
    beats = []
    for phase in Phase:
        needs = channel_needs(phase, q, k, rows_present=rows_present, cols_present=cols_present,
                              accumulators=accumulators)
        _check_pass_stream(slots[phase], needs, phase, n)
        row = A[:, 0 if phase in (Phase.T0, Phase.T1) else 1, :]
        col = B[:, 0 if phase in (Phase.T0, Phase.T2) else 1, :].view(np.uint8)
        if not slots[phase]:
            z8, zr, zc = np.zeros(R, np.int8), np.zeros(R, np.uint8), np.zeros(C, np.uint8)
            beats.append(Beat(0, 0, int(phase), 1, z8, z8, zr, zr, zc, zc, zc))
        for i, slot in enumerate(slots[phase]):
            c1, c2 = slot[0], slot[-1]
            if len(slot) == 1:
                kport, kind = col[:, c1], SlotKind.FULL8
            else:
                kport, kind = ((col[:, c2] & 0xF) << 4 | (col[:, c1] & 0xF)).astype(np.uint8), SlotKind.DUAL_LO
            beats.append(Beat(1, int(kind), int(phase), int(i == len(slots[phase]) - 1),
                              row[:, c1], row[:, c2], q[:, c1], q[:, c2], kport, k[:, c1], k[:, c2]))
    return beats


def run_beats(beats, rows: int, cols: int, *, accumulators: int = 3, acc_width: int | None = None):
    """Golden array: feed ``beats`` through a ``(rows, cols)`` grid of PEs;
    returns the drained tiles as a list of ``(phase, int64 (rows, cols))``
    in drain order (every PE drains once per ``last`` beat)."""
    pe = PEModel(rows, cols, accumulators, acc_width)
    out = []
    for b in beats:
        if b.slot:
            pe.step(b.phase, b.kind, b.r0, b.r1, b.k.view(np.int8), b.q0, b.q1, b.k0, b.k1)
        if b.last:
            out.append((b.phase, pe.end_phase(b.phase)))
    return out


def array_pass(A, q, B, k, slots, *, accumulators: int = 3, acc_width: int | None = None,
               rows_present=None, cols_present=None) -> np.ndarray:
    """Golden model of one array pass for one channel batch.

    Parameters
    ----------
    A : int8 ``(R, 2, n)``: each row pair's anchor values and follower's
        effective (row-side) values over the batch's ``n`` channels.
    q : uint8 ``(R, n)``: the row followers' classes (3 = ABSENT).
    B : int8 ``(C, 2, n)``, k : uint8 ``(C, n)``: the same for column pairs
        (column-side effective values).
    slots : four slot streams, one per phase T0..T3, each a list of
        ``(c,)`` (FULL8) or ``(c1, c2)`` (DUAL_LO) tuples; validated against
        the needs of spec sec. 7.

    Returns int64 ``(R, C, 4)``: each PE's drained tiles T0..T3.
    """
    beats = pass_beats(A, q, B, k, slots, accumulators=accumulators, rows_present=rows_present,
                       cols_present=cols_present)
    tiles = np.zeros((A.shape[0], B.shape[0], 4), dtype=np.int64)
    for phase, tile in run_beats(beats, A.shape[0], B.shape[0], accumulators=accumulators,
                                 acc_width=acc_width):
        tiles[:, :, phase] = tile
    return tiles


# ---------------------------------------------------------------------------
# The loop nest: groups -> batches -> passes -> phases
# ---------------------------------------------------------------------------

def units(grid, axis):
    """Row/column units of one channel group, ordered by anchor index: int64
    ``(U, 2)`` of (anchor, follower) with follower -1 when unpaired."""
    anchors, followers, unpaired = pairs(grid, axis)
    u = np.concatenate([np.stack([anchors, followers], 1),
                        np.stack([unpaired, np.full_like(unpaired, -1)], 1)])
    return u[np.argsort(u[:, 0], kind="stable")]


def unit_tags(u, cls, channels) -> np.ndarray:
    """uint8 ``(U, n)``: each unit's follower class at ``channels`` (rows of
    :func:`follower_classes` ``cls``), ABSENT for an unpaired unit."""
    return np.where((u[:, 1] >= 0)[:, None], cls[np.maximum(u[:, 1], 0)][:, channels],
                    ABSENT).astype(np.uint8)


def pass_operands(Z, Zeff, cls_of, unit_rows, channels):
    """Operands ``(X (U, 2, n) int8, tags (U, n) uint8, present (U,) bool)``
    of a list of units (rows of :func:`units`, or ``(-1, -1)`` padding) for
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


def iter_passes(Q, K, grid, split, config: KaleidoConfig | None = None, *, matcher=True,
                order=None, scheduler=False):
    """Yield every array pass of the loop nest as a dict with ``A, q,
    rows_present, B, k, cols_present, slots, rows, cols`` (``rows``/``cols``:
    the units' ``(anchor, follower)`` token indices, -1 for none).

    Passes take consecutive groups of ``array_rows`` row units and
    ``array_cols`` column units in queue order (``order`` may give another
    unit order per group). ``scheduler=True`` orders, per batch, the row
    units by the Hamming-clustering scheduler over their Q reuse strings and
    the column units over their K strings (windows of ``16 * array_rows``
    and ``16 * array_cols`` strings: a cluster holds four passes' units;
    one LFSR per side, its state carried across windows and batches).
    ``matcher=False`` issues every needed channel as a FULL8 slot."""
    from .dispatch import LFSR_SEED, reuse_strings, schedule_order
    cfg = config or KaleidoConfig(split=tuple(split))
    grid, split = check_qk(Q, K, grid, split)
    F, P = cfg.F, cfg.P
    Qe = effective(Q, grid, split, F, P, side="row")
    Ke = effective(K, grid, split, F, P, side="column")
    starts = np.cumsum((0,) + split)
    qcls = follower_classes(Q, grid, split, F, P)
    kcls = follower_classes(K, grid, split, F, P)
    state = {"row": LFSR_SEED, "col": LFSR_SEED}

    def scheduled(u, cls, channels, side, per_cluster):
        tags = unit_tags(u, cls, channels)
        perm, state[side] = schedule_order(reuse_strings(tags, cfg.batch), window=4 * per_cluster,
                                           seed=state[side])
        return u[perm]

    for g, (sl, axis) in enumerate(group_slices(split)):
        u = units(grid, axis)
        rows_u = cols_u = u if order is None else u[order[g]]
        for c0 in range(starts[g], starts[g + 1], cfg.batch):
            channels = np.arange(c0, min(c0 + cfg.batch, starts[g + 1]))
            if scheduler:
                rows_u = scheduled(u, qcls, channels, "row", 4 * cfg.array_rows)
                cols_u = scheduled(u, kcls, channels, "col", 4 * cfg.array_cols)
            for r0 in range(0, len(rows_u), cfg.array_rows):
                rsel = _pad(rows_u[r0:r0 + cfg.array_rows], cfg.array_rows)
                A, qt, rp = pass_operands(Q, Qe, qcls, rsel, channels)
                for c0u in range(0, len(cols_u), cfg.array_cols):
                    csel = _pad(cols_u[c0u:c0u + cfg.array_cols], cfg.array_cols)
                    B, kt, cp = pass_operands(K, Ke, kcls, csel, channels)
                    slots = []
                    for phase in Phase:
                        needs = channel_needs(phase, qt, kt, rows_present=rp, cols_present=cp,
                                              accumulators=cfg.accumulators)
                        slots.append(match(needs, cfg.lookahead) if matcher else
                                     [(c,) for c, nd in enumerate(needs) if nd != Need.SKIP])
                    yield {"A": A, "q": qt, "rows_present": rp, "B": B, "k": kt,
                           "cols_present": cp, "slots": slots, "rows": rsel, "cols": csel}


def scores_by_passes(Q, K, grid, split, config: KaleidoConfig | None = None, *, matcher=True,
                     order=None, scheduler=False):
    """Run the whole loop nest (:func:`iter_passes`) through
    :func:`array_pass` and accumulate ``S`` as the accumulation buffer
    would; returns ``(S, stats)`` with the number of passes, slots per
    phase and array beats (``max(1, slots)`` per phase, docs/ARRAY.md).
    Equals ``reuse_scores`` exactly, with or without scheduler and matcher."""
    cfg = config or KaleidoConfig(split=tuple(split))
    n_tok = Q.shape[0]
    S = np.zeros((n_tok, n_tok), dtype=np.int64)
    stats = {"passes": 0, "slots": [0, 0, 0, 0]}
    stats["beats"] = 0
    for ps in iter_passes(Q, K, grid, split, cfg, matcher=matcher, order=order, scheduler=scheduler):
        for phase in Phase:
            stats["slots"][phase] += len(ps["slots"][phase])
            stats["beats"] += max(1, len(ps["slots"][phase]))
        tiles = array_pass(ps["A"], ps["q"], ps["B"], ps["k"], ps["slots"],
                           accumulators=cfg.accumulators, acc_width=cfg.acc_width,
                           rows_present=ps["rows_present"], cols_present=ps["cols_present"])
        stats["passes"] += 1
        accumulate_tiles(S, tiles, ps["rows"], ps["cols"])
    return S, stats


def _pad(rows, size):
    if len(rows) == size:
        return rows
    return np.concatenate([rows, np.full((size - len(rows), 2), -1, dtype=np.int64)])


def accumulate_tiles(S, tiles, rsel, csel):
    """Add a pass's tiles ``(R, C, 4)`` into ``S`` (the accumulation buffer),
    dropping tiles of absent tokens."""
    for r, (ai, fi) in enumerate(rsel):
        for c, (aj, fj) in enumerate(csel):
            for phase, (ti, tj) in enumerate(((ai, aj), (ai, fj), (fi, aj), (fi, fj))):
                if ti >= 0 and tj >= 0:
                    S[ti, tj] += tiles[r, c, phase]
