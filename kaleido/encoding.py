"""The encodings every layer shares, written once (spec sections 3, 5, 7).

Reuse classes and tags, the PE's phases and slot kinds, the parts of a
product a register adds, the PE decode table and the array-level need rule.
Plain Python enums and numpy-free functions: the golden model, the cycle
model and the testbenches use them directly; the RTL wraps the enums as
Amaranth enums with a shape (:mod:`kaleido.hdl.encoding`) and builds its
decoders from the tables here.

A PE owns one 2x2 pair group: rows ``(i, i')``, columns ``(j, j')``, tiles
T0 = (i, j), T1 = (i, j'), T2 = (i', j), T3 = (i', j'). Per slot it adds
``(enA ? mulA : 0) + (enB ? mulB_shifted : 0)`` to each register, with the
enables decoded from (phase, slot kind, tags) by :func:`register_parts`.
"""

from __future__ import annotations

import enum

__all__ = [
    "Reuse",
    "ABSENT",
    "TAGS",
    "Phase",
    "SlotKind",
    "PvSelect",
    "Part",
    "PeNeed",
    "Need",
    "REGISTER_OF",
    "tile_parts",
    "register_parts",
    "pe_need",
    "array_need",
    "check_accumulators",
]


class Reuse(enum.IntEnum):
    """Two-bit reuse class of a follower value (spec sec. 3)."""

    NONE = 0
    PARTIAL = 1
    FULL = 2


#: tag of an unpaired slot (no follower): the fourth two-bit code
ABSENT = 3

#: every two-bit tag code: the three classes, then ABSENT
TAGS = (*Reuse, ABSENT)


class Phase(enum.IntEnum):
    """The four tiles of a PE's pair group, computed in this order."""

    T0 = 0  # (i, j)
    T1 = 1  # (i, j')
    T2 = 2  # (i', j)
    T3 = 3  # (i', j')


class SlotKind(enum.IntEnum):
    FULL8 = 0  # one channel, full 8x8 product (hi part shifted by 4)
    DUAL_LO = 1  # two channels' low-nibble products, no shift


class PvSelect(enum.IntEnum):
    """P V mode (issue 12, docs/DESIGN.md): the row operand a PE multiplies
    by its column's V value in a slot, carried in the column tag ``k0``.
    The row port holds ``r0 = P[i, anchor]`` and ``r1 = P[i, follower]``;
    ``SUM`` is the pre-add of a FULL follower, ``(P[i,a] + P[i,f]) V[a,c]``."""

    SKIP = 0  # add nothing
    R0 = 1  # P[i, a] V[a, c]
    R1 = 2  # P[i, f] V[f, c]
    SUM = 3  # (P[i, a] + P[i, f]) V[a, c]


class Part(enum.IntFlag):
    """Which product parts a register adds: ``p = p_hi + p_lo``."""

    ZERO = 0
    LO = 1  # p_lo = a * lo(b): multiplier A
    HI = 2  # p_hi = 16 * a * hi(b): multiplier B, shifted
    P = 3


class PeNeed(enum.IntEnum):
    """Per PE and channel, the parts a phase needs (union over registers)."""

    SKIP = 0
    LO = 1
    HI = 2
    FULL = 3


class Need(enum.IntEnum):
    """Array-level need of a channel in a phase (spec sec. 7); the codes are
    the matcher's two-bit input."""

    SKIP = 0  # every PE's need is SKIP
    HALF = 1  # every need is SKIP or LO: may share a DUAL_LO slot
    FULL = 2  # a FULL8 slot


def check_accumulators(accumulators: int) -> int:
    if accumulators not in (3, 4):
        raise ValueError(f"accumulators must be 3 or 4, not {accumulators!r}")
    return accumulators


_F, _PA, _N = Reuse.FULL, Reuse.PARTIAL, Reuse.NONE
_ZERO, _LO, _HI, _P = Part.ZERO, Part.LO, Part.HI, Part.P


def tile_parts(phase: int, q: int, k: int, accumulators: int = 3) -> dict[Phase, Part]:
    """Spec sec. 5 table: ``{tile: Part}`` a PE adds in ``phase`` for row
    follower tag ``q`` and column follower tag ``k`` (ABSENT = 3)."""
    phase = Phase(phase)
    check_accumulators(accumulators)
    if (phase in (Phase.T2, Phase.T3) and q == ABSENT) or (phase in (Phase.T1, Phase.T3) and k == ABSENT):
        return {}  # tile not computed
    qF = q == _F
    # a column follower's own part: nothing reused (FULL), p_lo (PARTIAL), p (NONE)
    own_k: dict[int, Part] = {_F: _ZERO, _PA: _LO, _N: _P}
    # the anchor's product reused for a column follower: p (FULL), p_hi (PARTIAL)
    shared_k: dict[int, Part] = {_F: _P, _PA: _HI, _N: _ZERO}
    if phase == Phase.T0:
        out = {Phase.T0: _P, Phase.T1: shared_k.get(k, _ZERO), Phase.T2: _P if qF else _ZERO}
        if accumulators == 4:
            out[Phase.T3] = shared_k.get(k, _ZERO) if qF else _ZERO
        return out
    if phase == Phase.T1:
        return {Phase.T1: own_k[k], Phase.T3: own_k[k] if qF else _ZERO}
    if phase == Phase.T2:
        return {Phase.T2: _ZERO if qF else _P, Phase.T3: _ZERO if qF else shared_k.get(k, _ZERO)}
    if qF:
        own = _ZERO if accumulators == 4 else shared_k[k]
    else:
        own = own_k[k]
    return {Phase.T3: own}


#: which register holds which tile during each phase, by accumulator count
REGISTER_OF = {
    3: {
        Phase.T0: {Phase.T0: 0, Phase.T1: 1, Phase.T2: 2},
        Phase.T1: {Phase.T1: 0, Phase.T3: 1},
        Phase.T2: {Phase.T2: 0, Phase.T3: 1},
        Phase.T3: {Phase.T3: 0},
    },
    4: {
        Phase.T0: {Phase.T0: 0, Phase.T1: 1, Phase.T2: 2, Phase.T3: 3},
        Phase.T1: {Phase.T1: 0, Phase.T3: 1},
        Phase.T2: {Phase.T2: 0, Phase.T3: 1},
        Phase.T3: {Phase.T3: 0},
    },
}


def register_parts(phase: int, q: int, k: int, accumulators: int = 3) -> tuple[Part, ...]:
    """Per register R0.. the Part it adds: the PE's decode table."""
    regs = [_ZERO] * check_accumulators(accumulators)
    for tile, part in tile_parts(phase, q, k, accumulators).items():
        regs[REGISTER_OF[accumulators][Phase(phase)][tile]] |= part
    return tuple(regs)


def pe_need(phase: int, q: int, k: int, accumulators: int = 3) -> PeNeed:
    """The parts one PE needs of a channel in ``phase``: the union over its
    registers."""
    need = _ZERO
    for part in tile_parts(phase, q, k, accumulators).values():
        need |= part
    return PeNeed(int(need))


def array_need(phase: int, union: int) -> Need:
    """The array-level rule (spec sec. 7): a channel's need in ``phase`` from
    the union (bitwise or) of the :class:`PeNeed` of every present PE.
    SKIP when no PE needs it; HALF when only low parts are needed, in the
    phases whose column operand is a follower (T1, T3: a DUAL_LO slot
    carries two followers' low nibbles); FULL otherwise."""
    if union == PeNeed.SKIP:
        return Need.SKIP
    if union == PeNeed.LO and Phase(phase) in (Phase.T1, Phase.T3):
        return Need.HALF
    return Need.FULL
