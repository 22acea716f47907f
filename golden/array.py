"""Golden model of one array pass (spec section 7): the beat stream of a
pass's four phase slot streams, and the tiles a grid of PEs drains from it."""

from __future__ import annotations

import typing

import numpy as np

from ..encoding import Need, Phase, SlotKind
from .matcher import channel_needs
from .pe import PEModel

__all__ = ["Beat", "pass_beats", "run_beats", "array_pass"]


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
            raise ValueError(
                f"DUAL_LO slot {slot!r} in phase {Phase(phase).name} pairs channels "
                f"whose needs are {[needs[c].name for c in slot]}, not both HALF"
            )
    missing = [c for c in range(n) if needs[c] != Need.SKIP and c not in seen]
    if missing:
        raise ValueError(f"phase {Phase(phase).name} slot stream misses needed channels {missing}")


class Beat(typing.NamedTuple):
    """One unskewed input beat of the array (spec sec. 7): control, per row
    ``r0, r1, q0, q1`` and per column ``k`` (the 8-bit port as uint8),
    ``k0, k1``. ``slot = 0, last = 1`` is the marker of a phase without slots.
    ``kb`` (per column, uint8, ``None`` = zeros): the second V value of a
    paired P V beat (``pv = 1``, ``kind`` DUAL_LO: small-P pairing)."""

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
    pv: int = 0  # P V mode: k0 is a PvSelect (kaleido.encoding)
    kb: np.ndarray | None = None


def pass_beats(A, q, B, k, slots, *, accumulators: int = 3, rows_present=None, cols_present=None) -> list:
    """The beat stream of one array pass: per phase its slots in order, the
    last carrying ``last = 1``, or one marker beat when the phase has none.
    Arguments as :func:`array_pass`; the slot streams are validated."""
    for name, x in (("A", A), ("B", B)):
        if not isinstance(x, np.ndarray) or x.dtype != np.int8 or x.ndim != 3 or x.shape[1] != 2:
            raise ValueError(
                f"{name} must be an int8 array of shape (pairs, 2, n), not "
                f"{getattr(x, 'dtype', type(x).__name__)} {getattr(x, 'shape', '')}"
            )
    R, _, n = A.shape
    C = B.shape[0]
    if B.shape[2] != n or np.shape(q) != (R, n) or np.shape(k) != (C, n):
        raise ValueError(f"shapes disagree: A {A.shape!r}, q {np.shape(q)!r}, B {B.shape!r}, k {np.shape(k)!r}")
    if len(slots) != 4:
        raise ValueError(f"slots must hold four phase streams (T0..T3), not {len(slots)}")
    beats = []
    for phase in Phase:
        needs = channel_needs(
            phase, q, k, rows_present=rows_present, cols_present=cols_present, accumulators=accumulators
        )
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
            beats.append(
                Beat(
                    1,
                    int(kind),
                    int(phase),
                    int(i == len(slots[phase]) - 1),
                    row[:, c1],
                    row[:, c2],
                    q[:, c1],
                    q[:, c2],
                    kport,
                    k[:, c1],
                    k[:, c2],
                )
            )
    return beats


def run_beats(beats, rows: int, cols: int, *, accumulators: int = 3, acc_width: int | None = None):
    """Golden array: feed ``beats`` through a ``(rows, cols)`` grid of PEs;
    returns the drained tiles as a list of ``(phase, int64 (rows, cols))``
    in drain order (every PE drains once per ``last`` beat)."""
    pe = PEModel(rows, cols, accumulators, acc_width)
    out = []
    for b in beats:
        if b.slot:
            if b.pv and b.kind == SlotKind.DUAL_LO:
                kb = np.zeros(cols, np.int8) if b.kb is None else b.kb.view(np.int8)
                pe.step_pv_pair(b.r0, b.r1, b.k.view(np.int8), kb, b.k0, b.k1)
            elif b.pv:
                pe.step_pv(b.r0, b.r1, b.k.view(np.int8), b.k0)
            else:
                pe.step(b.phase, b.kind, b.r0, b.r1, b.k.view(np.int8), b.q0, b.q1, b.k0, b.k1)
        if b.last:
            out.append((b.phase, pe.end_phase(b.phase)))
    return out


def array_pass(
    A, q, B, k, slots, *, accumulators: int = 3, acc_width: int | None = None, rows_present=None, cols_present=None
) -> np.ndarray:
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
    beats = pass_beats(
        A, q, B, k, slots, accumulators=accumulators, rows_present=rows_present, cols_present=cols_present
    )
    tiles = np.zeros((A.shape[0], B.shape[0], 4), dtype=np.int64)
    for phase, tile in run_beats(beats, A.shape[0], B.shape[0], accumulators=accumulators, acc_width=acc_width):
        tiles[:, :, phase] = tile
    return tiles
