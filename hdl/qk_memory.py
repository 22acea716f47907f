"""The engine's input side: the ``qk`` stream of one head into the Q and K
memories, and the unit reads the scheduling stage makes from them."""

from __future__ import annotations

from amaranth import Module, Signal, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ..config import KaleidoConfig
from ._common import as_config

__all__ = ["QKMemory", "qk_layout", "unit_read_signature"]


def qk_layout(batch: int) -> data.ArrayLayout:
    """One input word: a token's values over one batch (lanes past a short
    batch are ignored)."""
    return data.ArrayLayout(signed(8), batch)


def unit_read_signature(n_tokens: int, n_batches: int, batch: int) -> wiring.Signature:
    """A unit's read of one memory, from the reader's side: the ``anchor``
    and ``follower`` token indices and the ``batch`` out, both tokens'
    values over that batch (:func:`qk_layout`) back in the same cycle."""
    return wiring.Signature(
        {
            "batch": Out(range(n_batches)),
            "anchor": Out(range(n_tokens)),
            "follower": Out(range(n_tokens)),
            "anchor_values": In(qk_layout(batch)),
            "follower_values": In(qk_layout(batch)),
        }
    )


class QKMemory(wiring.Component):
    """Q and K of one head, ``n_tokens x n_batches`` words of ``batch`` int8
    lanes each.

    Parameters
    ----------
    config : KaleidoConfig
        ``config.batch`` lanes per word.
    n_tokens : int
        ``N``, tokens per head.
    n_batches : int
        Channel batches per token (``len(config.batches)``).

    Ports
    -----
    ``qk`` (in stream of :func:`qk_layout`): Q then K, token by token, batch
    by batch within a token (``2 * N * n_batches`` words), taken while
    ``load`` (in) is high. ``loaded`` (out): the head's last word is taken
    this cycle. ``q``, ``k`` (in, :func:`unit_read_signature`): reads of a
    unit's two tokens, combinational (``latency`` 0).
    """

    def __init__(self, config: KaleidoConfig | None = None, n_tokens: int = 32, n_batches: int = 1):
        config = as_config(config)
        for name, value, least in (("n_tokens", n_tokens, 2), ("n_batches", n_batches, 1)):
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"{name} must be an integer, not {value!r}")
            if value < least:
                raise ValueError(f"{name} must be at least {least}, not {value!r}")
        self._config = config
        self._n_tokens = n_tokens
        self._n_batches = n_batches
        read = unit_read_signature(n_tokens, n_batches, config.batch)
        super().__init__(
            {
                "qk": In(stream.Signature(qk_layout(config.batch))),
                "load": In(1),
                "loaded": Out(1),
                "q": In(read),
                "k": In(read),
            }
        )

    @property
    def words(self) -> int:
        """Input words per head: ``2 * N * n_batches``."""
        return 2 * self._n_tokens * self._n_batches

    @property
    def latency(self) -> int:
        """Cycles from a read's addresses to its values: 0 (combinational)."""
        return 0

    def elaborate(self, platform):
        m = Module()
        N, NB, B = self._n_tokens, self._n_batches, self._config.batch
        # each operand is kept twice, one copy per read (the unit's anchor
        # and its follower), so every memory has one write and one read port
        mems = {
            (side, role): Memory(shape=8 * B, depth=N * NB, init=[])
            for side in ("q", "k")
            for role in ("anchor", "follower")
        }
        for (side, role), memory in mems.items():
            m.submodules[f"{side}_{role}_memory"] = memory

        word = Signal(range(self.words + 1))  # words of this head taken so far
        take = self.qk.valid & self.qk.ready
        m.d.comb += [self.qk.ready.eq(self.load), self.loaded.eq(take & (word == self.words - 1))]
        for (side, _), memory in mems.items():
            write = memory.write_port()
            first = side == "q"
            m.d.comb += [
                write.addr.eq(word if first else word - N * NB),
                write.data.eq(self.qk.payload.as_value()),
                write.en.eq(take & ((word < N * NB) if first else (word >= N * NB))),
            ]
        with m.If(take):
            m.d.sync += word.eq(word + 1)
        with m.If(self.loaded):
            m.d.sync += word.eq(0)

        for side, read in (("q", self.q), ("k", self.k)):
            anchor = mems[side, "anchor"].read_port(domain="comb")
            follower = mems[side, "follower"].read_port(domain="comb")
            m.d.comb += [
                anchor.addr.eq(read.anchor * NB + read.batch),
                follower.addr.eq(read.follower * NB + read.batch),
                read.anchor_values.eq(anchor.data),
                read.follower_values.eq(follower.data),
            ]
        return m
