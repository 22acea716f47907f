"""Activation-window detector for the linear layers (issue 17, paper eq. 5;
docs/LINEAR.md): the reuse class of an activation follower from its
window's spread."""

from amaranth import Cat, Module, Mux, Signal, signed
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..config import KaleidoConfig, LinearReuse
from ._common import as_config
from .detector import detector_in_layout, detector_out_layout
from .encoding import Tag

__all__ = ["WindowDetector"]


class WindowDetector(wiring.Component):
    """Per lane: ``|anchor - follower|`` against the rule's integer limits
    (``LinearReuse.limits``: a window of two has standard deviation
    ``|a - b| / 2``, so eq. 5's ``std < theta`` is ``|a - b| <= ceil(2
    theta) - 1``): FULL, PARTIAL or NONE. The ports are
    :class:`~kaleido.hdl.detector.ReuseDetector`'s, so it drops into the
    same scheduling path: ``row_eff`` is the anchor for FULL and the
    follower otherwise (the row side's rule), ``col_eff`` the follower
    (weights are never reused), and the reuse string bit is 1 unless FULL.
    Lanes past ``count`` give NONE, zeros and 0; an ``absent`` pair ABSENT,
    zero operands and 1s. One register, valid/ready; latency 1."""

    def __init__(self, config: KaleidoConfig | None = None, rule: LinearReuse | None = None):
        config = as_config(config)
        self._config = config
        self._rule = rule or LinearReuse()
        super().__init__(
            {
                "i": In(stream.Signature(detector_in_layout(config.batch))),
                "o": Out(stream.Signature(detector_out_layout(config.batch))),
            }
        )

    def elaborate(self, platform):
        m = Module()
        B = self._config.batch
        full_max, partial_max = self._rule.limits
        res = Signal(detector_out_layout(B))
        bits = []
        for c in range(B):
            a, b = self.i.payload.anchor[c], self.i.payload.follower[c]
            diff = Signal(signed(10), name=f"diff{c}")
            mag = Signal(9, name=f"mag{c}")
            m.d.comb += [diff.eq(a - b), mag.eq(Mux(diff < 0, -diff, diff))]
            full = mag <= full_max
            part = mag <= partial_max
            lane = c < self.i.payload.count
            absent = self.i.payload.absent
            cls = Mux(absent, Tag.ABSENT, Mux(full, Tag.FULL, Mux(part, Tag.PARTIAL, Tag.NONE)))
            m.d.comb += [
                res.anchor[c].eq(Mux(lane, a, 0)),
                res.cls[c].eq(Mux(lane, cls, Tag.NONE)),
                res.row_eff[c].eq(Mux(lane & ~absent, Mux(full, a, b), 0)),
                res.col_eff[c].eq(Mux(lane & ~absent, b, 0)),
            ]
            bits.append(lane & (absent | ~full))
        m.d.comb += res.string.eq(Cat(*bits))
        with m.If(self.o.ready | ~self.o.valid):
            m.d.sync += [self.o.valid.eq(self.i.valid), self.o.payload.eq(res)]
        m.d.comb += self.i.ready.eq(self.o.ready | ~self.o.valid)
        return m
