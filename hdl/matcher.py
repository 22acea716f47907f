"""Channel matcher (paper fig. 16 right, spec sec. 8): one pass and phase's
channel needs in, the slot stream out, one slot per cycle."""

from types import SimpleNamespace

from amaranth import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..config import KaleidoConfig
from ._common import as_config, count_below
from .encoding import Need, Phase

__all__ = ["Matcher", "matcher_in_layout", "matcher_out_layout"]


def matcher_in_layout(batch: int) -> data.StructLayout:
    """One job: a phase and each channel's :class:`Need`."""
    return data.StructLayout({"need": data.ArrayLayout(Need, batch), "phase": Phase})


def matcher_out_layout(batch: int) -> data.StructLayout:
    """One slot: ``c1`` (the head) and, in a DUAL_LO slot, ``c2``; ``slot`` 0
    with ``last`` 1 is the marker of a job without needed channels."""
    idx = range(batch)
    return data.StructLayout({"c1": idx, "c2": idx, "dual": 1, "slot": 1, "last": 1, "phase": 2})


class Matcher(wiring.Component):
    """Feature buffer (``pending``: the job's not-yet-issued non-SKIP
    channels, ``half``: which of them are HALF), lookahead buffer (the
    first ``L`` pending channels after the head, by a prefix count) and merge
    unit (the first HALF among them joins a HALF head in a DUAL_LO slot).

    ``i`` accepts a job when idle or in the cycle its last slot leaves, so
    jobs stream back to back; ``o`` is combinational from the state."""

    def __init__(self, config: KaleidoConfig | None = None):
        config = as_config(config)
        self._config = config
        super().__init__(
            {
                "i": In(stream.Signature(matcher_in_layout(config.batch))),
                "o": Out(stream.Signature(matcher_out_layout(config.batch))),
            }
        )

    def elaborate(self, platform):
        m = Module()
        w = self._merge(m)
        self._slot(m, w)
        self._handshake(m, w)
        return m

    def _merge(self, m: Module) -> SimpleNamespace:
        """The feature buffer, the lookahead window and the merge unit: the namespace the stages share."""
        B, L = self._config.batch, self._config.lookahead
        pending = Signal(B)
        half = Signal(B)
        phase = Signal(2)
        busy = Signal()

        # head: lowest pending channel; rest: the others. ``rest`` is a
        # register beside ``pending`` (issue 20): its next value is chosen
        # among carry chains computed in parallel from it (below), so only
        # one carry chain (the merge partner's) lies on the slot's path.
        rest = Signal(B)
        rest2 = Signal(B)
        m.d.comb += rest2.eq(rest & (rest - 1))
        head_oh = Signal(B)
        m.d.comb += head_oh.eq(pending & ~rest)
        # Merge partner: the first HALF among the first L rest channels
        # (the lookahead window). The window is a prefix of ``rest``, so the
        # partner is the lowest HALF of ``rest`` if fewer than L rest
        # channels lie below it: one carry chain (``upto``: the channels up
        # to the lowest HALF) and a saturating count (issue 20), where a
        # prefix count over all channels was a chain of B adders in series.
        cand = Signal(B)
        m.d.comb += cand.eq(rest & half)
        upto = Signal(B)
        m.d.comb += upto.eq(cand ^ (cand - 1))
        partner_oh = Signal(B)
        m.d.comb += partner_oh.eq(cand & upto)
        below = Signal(B)  # rest channels below the partner
        m.d.comb += below.eq(rest & upto & ~cand)
        in_window = Signal()
        m.d.comb += in_window.eq(count_below(m, "window", below, L))
        dual = Signal()
        m.d.comb += dual.eq(((head_oh & half) != 0) & (cand != 0) & in_window)
        # the slot is the job's last when nothing is left after it: no rest,
        # or one rest channel that merges. A single rest channel is always
        # in the window (none lies below it), so it merges when it and the
        # head are HALF: no carry chain of the window on this path, which
        # takes the next job (``i.ready``) and so loads the buffers
        rest_single = Signal()
        m.d.comb += rest_single.eq((rest != 0) & (rest2 == 0))
        merges_single = rest_single & ((head_oh & half) != 0) & (cand != 0) if L > 0 else Const(0, 1)
        slot_last = Signal()
        m.d.comb += slot_last.eq((rest == 0) | merges_single)
        w = SimpleNamespace(pending=pending, half=half, phase=phase, busy=busy, rest=rest, rest2=rest2)
        w.head_oh, w.partner_oh, w.below, w.dual, w.slot_last = head_oh, partner_oh, below, dual, slot_last
        return w

    @staticmethod
    def _encode(onehot, channels: int) -> Value:
        """The index of a one-hot (or zero) vector of ``channels`` bits."""
        # per index bit, the OR of the channels that have it (no priority chain)
        width = max(1, (channels - 1).bit_length())
        bits = []
        for j in range(width):
            members = [onehot[c] for c in range(channels) if (c >> j) & 1]
            bits.append(Cat(*members).any() if members else Const(0, 1))
        return Cat(*bits)

    def _slot(self, m: Module, w: SimpleNamespace) -> None:
        """The slot out (``o``) and the channels left after it (``remaining``, ``next_rest``)."""
        B = self._config.batch
        rest2, dual, partner_oh, head_oh = w.rest2, w.dual, w.partner_oh, w.head_oh
        remaining = Signal(B)
        m.d.comb += remaining.eq(w.rest & ~Mux(dual, partner_oh, 0))
        # ``rest`` after this slot, the channels after the next head: without
        # a merge the head leaves (rest minus its lowest: ``rest2``); with a
        # merge the partner leaves too, and when it was the lowest rest
        # channel (no rest channel below it) the next head is rest2's lowest.
        rest3 = Signal(B)
        m.d.comb += rest3.eq(rest2 & (rest2 - 1))
        next_rest = Signal(B)
        m.d.comb += next_rest.eq(Mux(dual, Mux(w.below == 0, rest3, rest2 & ~partner_oh), rest2))
        m.d.comb += [
            self.o.valid.eq(w.busy),
            self.o.payload.c1.eq(self._encode(head_oh, B)),
            self.o.payload.c2.eq(Mux(dual, self._encode(partner_oh, B), self._encode(head_oh, B))),
            self.o.payload.dual.eq(dual),
            self.o.payload.slot.eq(w.pending != 0),
            self.o.payload.last.eq(w.slot_last),
            self.o.payload.phase.eq(w.phase),
        ]
        w.remaining, w.next_rest = remaining, next_rest

    def _handshake(self, m: Module, w: SimpleNamespace) -> None:
        """The handshakes: a slot taken leaves the buffers, a job taken loads them."""
        B, busy, pending, rest = self._config.batch, w.busy, w.pending, w.rest
        done = self.o.valid & self.o.ready & self.o.payload.last
        m.d.comb += self.i.ready.eq(~busy | done)
        with m.If(self.o.valid & self.o.ready):
            m.d.sync += [pending.eq(w.remaining), rest.eq(w.next_rest)]
            with m.If(self.o.payload.last):
                m.d.sync += busy.eq(0)
        with m.If(self.i.valid & self.i.ready):
            need = self.i.payload.need
            new = Cat(*[need[c] != Need.SKIP for c in range(B)])
            m.d.sync += [
                busy.eq(1),
                w.phase.eq(self.i.payload.phase),
                pending.eq(new),
                rest.eq(new & (new - 1)),
                w.half.eq(Cat(*[need[c] == Need.HALF for c in range(B)])),
            ]
