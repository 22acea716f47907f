"""Encoding of golden beats for the RTL and decoding of its drain ports,
shared by the Amaranth-simulator tests and the cocotb testbenches."""

from __future__ import annotations

import numpy as np

from kaleido.encoding import SlotKind
from kaleido.golden.array import Beat, run_beats
from kaleido.golden.pe import pv_row_sum
from kaleido.hdl.layouts import slot_layout, tile_layout

__all__ = [
    "pe_beat",
    "pass_word",
    "Packer",
    "Unpacker",
    "BeatEncoder",
    "encode_beat",
    "row_sum",
    "expected_drains",
    "TileDecoder",
]


def _leaves(layout, base=0, path=()):
    """Yield ``(path, offset, width)`` of every leaf field of a layout."""
    from amaranth import Shape
    from amaranth.lib import data

    if isinstance(layout, data.ArrayLayout):
        size = Shape.cast(layout.elem_shape).width
        for i in range(layout.length):
            yield from _leaves(layout.elem_shape, base + i * size, path + (i,))
    elif isinstance(layout, data.StructLayout):
        for name, field in layout:
            yield from _leaves(field.shape, base + field.offset, path + (name,))
    else:
        yield path, base, Shape.cast(layout).width


class Packer:
    """Packs values into a layout's bits at offsets computed once:
    ``pack({path: value})`` with paths such as ``("rows", 2, "q0")``."""

    def __init__(self, layout):
        self.off = {path: (off, (1 << w) - 1) for path, off, w in _leaves(layout)}

    def __call__(self, values) -> int:
        word = 0
        for path, value in values.items():
            off, mask = self.off[path]
            word |= (int(value) & mask) << off
        return word


class Unpacker:
    """Inverse of :class:`Packer`: bits to ``{path: int}`` (signed fields
    sign-extended)."""

    def __init__(self, layout):
        self.fields = [(path, off, w, _signed_at(layout, path)) for path, off, w in _leaves(layout)]

    def __call__(self, bits: int) -> dict:
        out = {}
        for path, off, w, signed in self.fields:
            v = (bits >> off) & ((1 << w) - 1)
            if signed and v >> (w - 1):
                v -= 1 << w
            out[path] = v
        return out


def _signed_at(layout, path):
    from amaranth import Shape
    from amaranth.lib import data

    for key in path:
        layout = layout.elem_shape if isinstance(layout, data.ArrayLayout) else layout[key].shape
    return Shape.cast(layout).signed


def row_sum(beat: Beat, r: int) -> int:
    """Row port ``r``'s pre-add field ``s``: ``r0 + r1`` in a P V beat (in
    a paired one the nibbles' sums, :func:`kaleido.golden.pe.pv_row_sum`),
    0 otherwise (:data:`kaleido.hdl.layouts.ROW`; the dispatchers send it)."""
    if not beat.pv:
        return 0
    if beat.kind == SlotKind.DUAL_LO:
        return int(pv_row_sum(int(beat.r0[r]) & 0xFF, int(beat.r1[r]) & 0xFF, True))
    return int(beat.r0[r]) + int(beat.r1[r])


def col_kb(beat: Beat, c: int) -> int:
    """Column port ``c``'s second V value ``kb`` (0 unless a paired beat)."""
    return 0 if beat.kb is None else int(beat.kb[c])


class BeatEncoder:
    """Packs golden beats into the array's ``slots.payload`` bits at the
    offsets of :func:`slot_layout`."""

    def __init__(self, rows: int, cols: int):
        self.rows, self.cols = rows, cols
        self.pack = Packer(slot_layout(rows, cols))

    def __call__(self, beat: Beat) -> int:
        values: dict[tuple, int] = {
            ("ctl", name): getattr(beat, name) for name in ("slot", "kind", "phase", "last", "pv")
        }
        for r in range(self.rows):
            for name in ("r0", "r1", "q0", "q1"):
                values[("rows", r, name)] = getattr(beat, name)[r]
            values[("rows", r, "s")] = row_sum(beat, r)
        for c in range(self.cols):
            for name in ("k", "k0", "k1"):
                values[("cols", c, name)] = getattr(beat, name)[c]
            values[("cols", c, "kb")] = col_kb(beat, c)
        return self.pack(values)


def pe_beat(slot, kind, phase, last, r0, r1, q0, q1, k, k0, k1, pv=0, kb=0) -> Beat:
    """A golden :class:`Beat` for a single PE (every field an array of one)."""

    def one(x, t):
        return np.array([x], dtype=t)

    return Beat(
        slot,
        kind,
        phase,
        last,
        one(r0, np.int8),
        one(r1, np.int8),
        one(q0, np.uint8),
        one(q1, np.uint8),
        one(k & 0xFF, np.uint8),
        one(k0, np.uint8),
        one(k1, np.uint8),
        pv,
        one(kb & 0xFF, np.uint8),
    )


def pass_word(pack, A, q, rp, B, k, cp):
    """The ``PassDispatcher``'s input bits for one golden pass (``pack`` a
    :class:`Packer` of ``pass_layout``). A short batch (``A.shape[2]`` below
    the configured batch) sets ``count`` and leaves the rest zero."""
    vals = {("count",): A.shape[2]}
    for side, X, T, pres in (("rows", A, q, rp), ("cols", B, k, cp)):
        for u in range(X.shape[0]):
            vals[(side, u, "present")] = int(pres[u])
            for c in range(X.shape[2]):
                vals[(side, u, "x", c)] = X[u, 0, c]
                vals[(side, u, "x1", c)] = X[u, 1, c]
                vals[(side, u, "t", c)] = T[u, c]
    return pack(vals)


def encode_beat(beat: Beat, rows: int, cols: int) -> int:
    """The array's ``slots.payload`` bits for one golden :class:`Beat`,
    through amaranth's own layout constant (the reference for
    :class:`BeatEncoder`)."""
    layout = slot_layout(rows, cols)
    value = layout.const(
        {
            "ctl": {"slot": beat.slot, "kind": beat.kind, "phase": beat.phase, "last": beat.last, "pv": beat.pv},
            "rows": [
                {
                    "r0": int(beat.r0[r]),
                    "r1": int(beat.r1[r]),
                    "s": row_sum(beat, r),
                    "q0": int(beat.q0[r]),
                    "q1": int(beat.q1[r]),
                }
                for r in range(rows)
            ],
            "cols": [
                {"k": int(beat.k[c]), "k0": int(beat.k0[c]), "k1": int(beat.k1[c]), "kb": col_kb(beat, c)}
                for c in range(cols)
            ],
        }
    )
    return value.as_value().value


class TileDecoder:
    """``(valid, phase, value)`` of one PE's drain-port bits, by plain bit
    slicing at the offsets of :func:`tile_layout` (fast enough to run every
    cycle for every PE)."""

    def __init__(self, acc_width: int):
        fields = dict(tile_layout(acc_width))
        self._v = fields["valid"].offset
        self._p = fields["phase"].offset
        self._x = fields["value"].offset
        self._w = acc_width

    def __call__(self, bits: int):
        value = (bits >> self._x) & ((1 << self._w) - 1)
        if value >> (self._w - 1):
            value -= 1 << self._w
        return (bits >> self._v) & 1, (bits >> self._p) & 3, value


def expected_drains(beats, rows, cols, accumulators, acc_width):
    """Per PE, the golden list of ``(phase, value)`` drains in order."""
    out = {(r, c): [] for r in range(rows) for c in range(cols)}
    for phase, tile in run_beats(beats, rows, cols, accumulators=accumulators, acc_width=acc_width):
        for (r, c), lst in out.items():
            lst.append((int(phase), int(tile[r, c])))
    return out
