"""Encoding of golden beats for the RTL and decoding of its drain ports,
shared by the Amaranth-simulator tests and the cocotb testbenches."""

from __future__ import annotations

import numpy as np

from kaleido.golden.pe import Beat, run_beats
from kaleido.hdl.layouts import slot_layout, tile_layout

__all__ = ["encode_beat", "expected_drains", "decode_tile", "stall_pattern"]


def encode_beat(beat: Beat, rows: int, cols: int) -> int:
    """The array's ``slots.payload`` bits for one golden :class:`Beat`."""
    layout = slot_layout(rows, cols)
    value = layout.const({
        "ctl": {"slot": beat.slot, "kind": beat.kind, "phase": beat.phase, "last": beat.last},
        "rows": [{"r0": int(beat.r0[r]), "r1": int(beat.r1[r]), "q0": int(beat.q0[r]),
                  "q1": int(beat.q1[r])} for r in range(rows)],
        "cols": [{"k": int(beat.k[c]), "k0": int(beat.k0[c]), "k1": int(beat.k1[c])}
                 for c in range(cols)],
    })
    return value.as_value().value


def decode_tile(bits: int, acc_width: int):
    """``(valid, phase, value)`` of one PE's drain port bits."""
    layout = tile_layout(acc_width)
    v = layout.from_bits(bits)
    value = int(v.value)
    return int(v.valid), int(v.phase), value


def expected_drains(beats, rows, cols, accumulators, acc_width):
    """Per PE, the golden list of ``(phase, value)`` drains in order."""
    out = {(r, c): [] for r in range(rows) for c in range(cols)}
    for phase, tile in run_beats(beats, rows, cols, accumulators=accumulators, acc_width=acc_width):
        for (r, c), lst in out.items():
            lst.append((int(phase), int(tile[r, c])))
    return out


def stall_pattern(name: str, seed: int):
    """An endless 0/1 iterator: 1 = stall this cycle. ``none``, ``every4``
    (verilog-axis style 1,1,1,0 ready), ``random`` (30 %)."""
    rng = np.random.default_rng(seed)
    i = 0
    while True:
        if name == "none":
            yield 0
        elif name == "every4":
            yield int(i % 4 == 3)
        elif name == "random":
            yield int(rng.random() < 0.3)
        else:
            raise ValueError(f"unknown stall pattern {name!r}")
        i += 1
