"""The O accumulators of a query tile (issue 13, docs/CORE.md, "The O
accumulators"): ``acc[row, channel] += (P V)[row, channel]`` over the key
tiles, in the ``o_acc`` buffer, an Amaranth ``Memory`` with one
synchronous read port and one write port, sized by the tile (rows x
channel groups), never by ``N``."""

from __future__ import annotations

from amaranth import Module, Mux, Signal, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ..config import CoreConfig, KaleidoConfig, SoftmaxFormat
from ._common import as_config
from .softmax import default_acc_width

__all__ = ["OAccumulator", "o_partial_layout", "o_acc_layout"]


def o_partial_layout(width: int, lanes: int, rows: int, groups: int) -> data.StructLayout:
    """One beat of partial ``P V`` sums: one key tile's sums for ``lanes``
    channels (channel group ``group``) of query-tile row ``row``;
    ``count`` valid lanes (1 .. ``lanes``); ``first``/``final``: the key
    tile is the query tile's first (the sums start the accumulator) or
    final one (the total leaves on ``o``)."""
    return data.StructLayout(
        {
            "values": data.ArrayLayout(signed(width), lanes),
            "count": range(lanes + 1),
            "row": range(rows),
            "group": range(groups),
            "first": 1,
            "final": 1,
        }
    )


def o_acc_layout(width: int, lanes: int, rows: int, groups: int) -> data.StructLayout:
    """One beat of a row's accumulated ``P V`` (lanes ``count ..`` as
    accumulated: the caller ignores them), with its ``row`` and ``group``."""
    return data.StructLayout(
        {
            "acc": data.ArrayLayout(signed(width), lanes),
            "count": range(lanes + 1),
            "row": range(rows),
            "group": range(groups),
        }
    )


def _check_count(name: str, value, default: int) -> int:
    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an integer, not {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be at least 1, not {value!r}")
    return value


class OAccumulator(wiring.Component):
    """``acc += partial`` per (row, channel group) of a query tile across
    its key tiles.

    Parameters
    ----------
    config : KaleidoConfig
        ``lanes`` defaults to ``config.array_cols``, ``channels`` to
        ``config.d``, ``in_width`` to ``config.acc_width`` (a PE's drain).
    lanes, rows, channels : int
        Channels a beat; rows of a query tile (default
        ``CoreConfig().tile_tokens``); channels of a row (``ceil(channels /
        lanes)`` groups).
    in_width, acc_width : int
        Widths of a partial sum and of the accumulator (default 30 bits:
        ``|acc| <= N p_max 128`` for 32,768 tokens, as the output scaler's).

    Ports: ``i`` (in stream, :func:`o_partial_layout`), ``o`` (out stream,
    :func:`o_acc_layout`): one beat per ``final`` beat, :attr:`latency`
    cycles after it is taken. The buffer holds ``rows * groups`` words of
    ``lanes * acc_width`` bits, one read port (the word of a beat is read
    as the beat is taken) and one write port (the sum is written the next
    cycle, stage ``R``; a final beat's total goes to ``o`` instead). The
    hazard rule is the tiled softmax's: the last write (address, word) is
    forwarded to a read of the same address, so a word that comes straight
    back never stalls.
    """

    def __init__(
        self,
        config: KaleidoConfig | None = None,
        lanes: int | None = None,
        rows: int | None = None,
        channels: int | None = None,
        *,
        in_width: int | None = None,
        acc_width: int | None = None,
    ):
        config = as_config(config)
        self._lanes = _check_count("lanes", lanes, config.array_cols)
        self._rows = _check_count("rows", rows, CoreConfig().tile_tokens)
        self._channels = _check_count("channels", channels, config.d)
        self._in_width = _check_count("in_width", in_width, config.acc_width)
        self._acc_width = _check_count("acc_width", acc_width, default_acc_width(SoftmaxFormat()))
        if self._acc_width < self._in_width:
            raise ValueError(f"acc_width {self._acc_width!r} is narrower than in_width {self._in_width!r}")
        self._groups = -(-self._channels // self._lanes)
        super().__init__(
            {
                "i": In(stream.Signature(o_partial_layout(self._in_width, self._lanes, self._rows, self._groups))),
                "o": Out(stream.Signature(o_acc_layout(self._acc_width, self._lanes, self._rows, self._groups))),
            }
        )

    @property
    def lanes(self) -> int:
        return self._lanes

    @property
    def rows(self) -> int:
        return self._rows

    @property
    def groups(self) -> int:
        return self._groups

    @property
    def words(self) -> int:
        """Words of the ``o_acc`` buffer: ``rows * groups``."""
        return self._rows * self._groups

    @property
    def latency(self) -> int:
        """Cycles from a final beat's transfer on ``i`` to its total on
        ``o``: 2 (stage ``R``, then the ``o`` register)."""
        return 2

    def elaborate(self, platform):
        m = Module()
        lanes, groups, W = self._lanes, self._groups, self._acc_width
        beat, out = self.i.payload, self.o.payload
        word = data.ArrayLayout(signed(W), lanes)
        m.submodules.o_acc = o_acc = Memory(shape=word, depth=self.words, init=[])
        rd, wr = o_acc.read_port(), o_acc.write_port()

        # stage R: the beat taken last cycle, beside its word
        r_valid, r_first, r_final = Signal(), Signal(), Signal()
        r_row = Signal.like(beat.row)
        r_group = Signal.like(beat.group)
        r_count = Signal.like(beat.count)
        r_addr = Signal(range(self.words))
        r_values = [Signal(signed(self._in_width), name=f"r_value{k}") for k in range(lanes)]
        o_free = ~self.o.valid | self.o.ready
        r_moves = Signal()
        m.d.comb += [r_moves.eq(~r_valid | ~r_final | o_free), self.i.ready.eq(r_moves)]
        take = self.i.valid & self.i.ready
        addr = beat.row * groups + beat.group
        with m.If(r_moves):
            m.d.sync += [
                r_valid.eq(take),
                r_first.eq(beat.first),
                r_final.eq(beat.final),
                r_row.eq(beat.row),
                r_group.eq(beat.group),
                r_count.eq(beat.count),
                r_addr.eq(addr),
            ]
            m.d.sync += [r.eq(beat.values[k]) for k, r in enumerate(r_values)]
        m.d.comb += [rd.addr.eq(addr), rd.en.eq(take)]

        # the last write, forwarded (a read misses only the write of its own cycle)
        fwd_valid = Signal()
        fwd_addr = Signal(range(self.words))
        fwd = Signal(word)
        old = Signal(word)
        m.d.comb += old.eq(Mux(fwd_valid & (fwd_addr == r_addr), fwd, rd.data))
        total = Signal(word)
        m.d.comb += [total[k].eq(Mux(r_first, 0, old[k]) + r_values[k]) for k in range(lanes)]

        m.d.comb += [wr.addr.eq(r_addr), wr.data.eq(total), wr.en.eq(r_valid & ~r_final)]
        with m.If(r_valid & ~r_final):
            m.d.sync += [fwd_valid.eq(1), fwd_addr.eq(r_addr), fwd.eq(total)]
        with m.If(o_free):
            m.d.sync += [
                self.o.valid.eq(r_valid & r_final),
                out.acc.eq(total),
                out.count.eq(r_count),
                out.row.eq(r_row),
                out.group.eq(r_group),
            ]
        return m
