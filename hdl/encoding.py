"""The shared encodings (:mod:`kaleido.encoding`) as Amaranth enums with a
shape, and decoders built from its tables: the RTL writes no encoding or
decode rule of its own."""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence

from amaranth import Cat, Module, Signal, Value
from amaranth.lib import enum as aenum

from .. import encoding

__all__ = [
    "Tag",
    "Phase",
    "SlotKind",
    "PvSelect",
    "Need",
    "decoder",
    "register_parts_decoder",
    "pe_need_decoder",
    "array_need_decoder",
]


def _wrap(source: type[enum.IntEnum] | Sequence[tuple[str, int]], name: str, width: int) -> aenum.EnumMeta:
    """An Amaranth ``IntEnum`` of ``width`` bits with the members of
    ``source`` (an enum, or ``(name, value)`` pairs)."""
    members = [(m.name, int(m.value)) for m in source] if isinstance(source, type) else list(source)
    namespace = aenum.EnumMeta.__prepare__(name, (aenum.IntEnum,))
    for member, value in members:
        namespace[member] = value
    return aenum.EnumMeta(name, (aenum.IntEnum,), namespace, shape=width)


#: two-bit follower tag: the reuse classes, then ABSENT
Tag = _wrap([*((m.name, int(m)) for m in encoding.Reuse), ("ABSENT", encoding.ABSENT)], "Tag", 2)
Phase = _wrap(encoding.Phase, "Phase", 2)
SlotKind = _wrap(encoding.SlotKind, "SlotKind", 1)
PvSelect = _wrap(encoding.PvSelect, "PvSelect", 2)
Need = _wrap(encoding.Need, "Need", 2)


def decoder(m: Module, name: str, index: Value, entries: Sequence[int], width: int) -> Signal:
    """Combinational lookup ``entries[index]`` of ``width``-bit constants: a
    case per entry (Yosys turns the constant table into logic)."""
    out = Signal(width, name=name)
    with m.Switch(index):
        for i, value in enumerate(entries):
            with m.Case(i):
                m.d.comb += out.eq(value)
    return out


def _table(fn: Callable[[int, int, int], int]) -> list[int]:
    """``fn(phase, q, k)`` over the index ``Cat(k, q, phase)``."""
    return [fn(p, q, k) for p in range(4) for q in range(4) for k in range(4)]


def register_parts_decoder(m: Module, name: str, phase: Value, q: Value, k: Value, accumulators: int) -> list[Value]:
    """Per register, the two-bit :class:`~kaleido.encoding.Part` it adds
    (bit 0 p_lo, bit 1 p_hi): :func:`kaleido.encoding.register_parts`."""

    def packed(p: int, qq: int, kk: int) -> int:
        return sum(int(part) << (2 * i) for i, part in enumerate(encoding.register_parts(p, qq, kk, accumulators)))

    bits = decoder(m, name, Cat(k, q, phase), _table(packed), 2 * accumulators)
    return [bits[2 * i : 2 * i + 2] for i in range(accumulators)]


def pe_need_decoder(m: Module, name: str, phase: Value, q: Value, k: Value, accumulators: int) -> Signal:
    """One PE's two-bit :class:`~kaleido.encoding.PeNeed` (bit 0 p_lo, bit 1
    p_hi): :func:`kaleido.encoding.pe_need`."""
    return decoder(
        m, name, Cat(k, q, phase), _table(lambda p, qq, kk: int(encoding.pe_need(p, qq, kk, accumulators))), 2
    )


def array_need_decoder(m: Module, name: str, phase: Value, union: Value) -> Signal:
    """The array-level :class:`Need` of a channel from the union of its PE
    needs: :func:`kaleido.encoding.array_need`."""
    return decoder(m, name, Cat(union, phase), [int(encoding.array_need(p, u)) for p in range(4) for u in range(4)], 2)
