"""Port layouts shared by the PE, the array and the testbenches. Tags,
slot kinds and phases have the shapes of :mod:`kaleido.hdl.encoding`."""

from amaranth import signed
from amaranth.lib import data

from .encoding import Phase, SlotKind, Tag

__all__ = ["ROW", "COL", "CTL", "tile_layout", "slot_layout"]

#: one row port: two int8 row operands, the P V pre-add ``s = r0 + r1``
#: (sent by the dispatcher once per row, so no PE has an adder in front of
#: its multipliers; read only in P V mode, 0 otherwise) and the row
#: follower's class for each operand
ROW = data.StructLayout({"r0": signed(8), "r1": signed(8), "s": signed(9), "q0": Tag, "q1": Tag})

#: one column port: 8 bits (int8 in FULL8; two low nibbles in DUAL_LO) and
#: the column follower's class for each of the (up to two) channels; ``kb``
#: is the second V value of a paired P V beat (small-P pairing,
#: ``KaleidoConfig.pv_pairs``; 0 otherwise, and synthesis removes it when
#: nothing drives it)
COL = data.StructLayout({"k": 8, "k0": Tag, "k1": Tag, "kb": 8})

#: control that travels with the row operands: ``slot`` = 1 when the beat
#: carries a slot (0: a bubble), ``kind`` 0 = FULL8 / 1 = DUAL_LO, ``phase``
#: T0..T3, ``last`` = the beat ends its phase (drain and register moves),
#: ``pv`` = P V mode (the column tag ``k0`` is a ``PvSelect``; FULL8, T3)
CTL = data.StructLayout({"slot": 1, "kind": SlotKind, "phase": Phase, "last": 1, "pv": 1})


def tile_layout(acc_width: int) -> data.StructLayout:
    """One PE's drain port: ``valid`` pulses one cycle with the phase's tile."""
    return data.StructLayout({"valid": 1, "phase": Phase, "value": signed(acc_width)})


def slot_layout(rows: int, cols: int) -> data.StructLayout:
    """The array's unskewed input beat: control, every row port, every column port."""
    return data.StructLayout({"ctl": CTL, "rows": data.ArrayLayout(ROW, rows), "cols": data.ArrayLayout(COL, cols)})
