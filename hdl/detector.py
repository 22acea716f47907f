"""Reuse detector (spec sec. 3, 8): classes, effective operands and the
reuse string of one anchor/follower token pair over one channel batch."""

from amaranth import Array, Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..config import KaleidoConfig
from ._common import as_config
from .encoding import Tag

__all__ = ["ReuseDetector", "THRESHOLD_BITS", "detector_in_layout", "detector_out_layout", "threshold_masks"]


#: bits of a run-time threshold (leading equal bits, 1..9; 9 = never)
THRESHOLD_BITS = 4


def detector_in_layout(batch: int) -> data.StructLayout:
    """``count`` valid channels (a short batch), ``absent`` = no follower;
    ``full``, ``partial``: this pair's thresholds ``F``, ``P`` (leading
    equal bits; 9 or more = never, 0 = always), so each pair (each
    batch's channel group) can have its own."""
    return data.StructLayout(
        {
            "anchor": data.ArrayLayout(signed(8), batch),
            "follower": data.ArrayLayout(signed(8), batch),
            "count": range(batch + 1),
            "absent": 1,
            "full": THRESHOLD_BITS,
            "partial": THRESHOLD_BITS,
        }
    )


def threshold_masks() -> list[int]:
    """Per threshold value ``n`` (0 .. 15), the 9-bit mask whose AND with
    ``Cat(x, 1)`` is zero exactly when the top ``n`` bits of the 8-bit
    ``x`` are: the top ``n`` bits for ``n <= 8``, bit 8 (never zero) above."""
    return [((0xFF << (8 - n)) & 0xFF) if n <= 8 else 0x100 for n in range(1 << THRESHOLD_BITS)]


def detector_out_layout(batch: int) -> data.StructLayout:
    """``anchor``: the anchor's values passed through (0 past ``count``),
    so a consumer has the unit's whole operand set from one transfer."""
    return data.StructLayout(
        {
            "anchor": data.ArrayLayout(signed(8), batch),
            "cls": data.ArrayLayout(Tag, batch),
            "row_eff": data.ArrayLayout(signed(8), batch),
            "col_eff": data.ArrayLayout(signed(8), batch),
            "string": batch,
        }
    )


class ReuseDetector(wiring.Component):
    """Per lane: ``x = anchor ^ follower``; the leading-equal count is at
    least ``n`` exactly when the top ``n`` bits of ``x`` are zero, so FULL /
    PARTIAL are two zero-detects (the leading-zero count of spec sec. 3
    without the encoder) under masks chosen by the pair's run-time
    thresholds ``full`` and ``partial`` (:func:`threshold_masks`; the
    configuration's ``F`` and ``P`` are not read). Lanes past ``count`` give class NONE, zero
    operands and string bit 0; an ``absent`` pair gives class ABSENT, zero
    follower operands and string bits 1 (no reuse) on the valid lanes.

    One pair per cycle through one pipeline register with valid/ready
    (``i`` in, ``o`` out); latency 1.
    """

    def __init__(self, config: KaleidoConfig | None = None):
        config = as_config(config)
        self._config = config
        super().__init__(
            {
                "i": In(stream.Signature(detector_in_layout(config.batch))),
                "o": Out(stream.Signature(detector_out_layout(config.batch))),
            }
        )

    def elaborate(self, platform):
        m = Module()
        cfg = self._config
        B = cfg.batch
        res = Signal(detector_out_layout(B))
        masks = Array(Const(mask, 9) for mask in threshold_masks())
        full_mask, part_mask = Signal(9), Signal(9)
        m.d.comb += [full_mask.eq(masks[self.i.payload.full]), part_mask.eq(masks[self.i.payload.partial])]
        bits = []
        for c in range(B):
            a, b = self.i.payload.anchor[c], self.i.payload.follower[c]
            x = Signal(8, name=f"x{c}")
            m.d.comb += x.eq(a.as_unsigned() ^ b.as_unsigned())
            x9 = Cat(x, Const(1, 1))
            full = (x9 & full_mask) == 0
            part = (x9 & part_mask) == 0
            lane = c < self.i.payload.count
            absent = self.i.payload.absent
            cls = Mux(absent, Tag.ABSENT, Mux(full, Tag.FULL, Mux(part, Tag.PARTIAL, Tag.NONE)))
            col = Mux(full, a, Mux(part, Cat(b.as_unsigned()[:4], a.as_unsigned()[4:]).as_signed(), b))
            m.d.comb += [
                res.anchor[c].eq(Mux(lane, a, 0)),
                res.cls[c].eq(Mux(lane, cls, Tag.NONE)),
                res.row_eff[c].eq(Mux(lane & ~absent, Mux(full, a, b), 0)),
                res.col_eff[c].eq(Mux(lane & ~absent, col, 0)),
            ]
            bits.append(lane & (absent | ~full))
        m.d.comb += res.string.eq(Cat(*bits))
        # pipeline register with valid/ready
        with m.If(self.o.ready | ~self.o.valid):
            m.d.sync += [self.o.valid.eq(self.i.valid), self.o.payload.eq(res)]
        m.d.comb += self.i.ready.eq(self.o.ready | ~self.o.valid)
        return m
