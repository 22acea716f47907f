"""The attention core's external memory port (issue 13, docs/CORE.md
"The memory port"): a request/response read port, a fixed-latency model of
the memory behind it for simulation, and the tile loader that moves a tile
of token rows into an on-chip buffer.

The port is the simplest one a chip's memory controller offers: one
request stream (a beat address, one beat = ``port_bytes`` bytes) and one
response stream, responses in request order. Its two parameters are the
configuration's ``CoreConfig.port_bytes`` (bandwidth) and
``CoreConfig.mem_latency`` (cycles from an accepted request to its beat).
AXI4 would add bursts, IDs and a write channel's three streams; a bridge
from this port to AXI4 is a fixed adapter and is left to integration.
"""

from __future__ import annotations

from amaranth import Module, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

__all__ = [
    "MemoryModel",
    "TileLoader",
    "buffer_write_layout",
    "load_command_layout",
    "read_request_layout",
    "read_response_layout",
]

#: beat addresses are this wide: 2^32 beats of external memory
ADDR_WIDTH = 32


def read_request_layout() -> data.StructLayout:
    """One read request: the beat address."""
    return data.StructLayout({"addr": ADDR_WIDTH})


def read_response_layout(port_bytes: int) -> data.StructLayout:
    """One response beat: ``port_bytes`` bytes, byte 0 in the low bits."""
    return data.StructLayout({"data": 8 * port_bytes})


def load_command_layout(words: int) -> data.StructLayout:
    """One load: ``count`` buffer words from beat address ``base`` into the
    buffer from word ``offset``."""
    return data.StructLayout({"base": ADDR_WIDTH, "count": range(words + 1), "offset": range(words)})


def buffer_write_layout(words: int, beats_per_word: int, port_bytes: int) -> data.StructLayout:
    """One beat into the buffer: word ``addr``, beat ``lane`` of the word
    (a write-enable granule of ``port_bytes`` bytes) and the ``data``."""
    return data.StructLayout(
        {"en": 1, "addr": range(words), "lane": range(max(2, beats_per_word)), "data": 8 * port_bytes}
    )


def _check_positive(name: str, value) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be a positive integer, not {value!r}")
    return value


class MemoryModel(wiring.Component):
    """The external memory behind the read port, for simulation: ``init``
    beats preloaded (emitted as the Verilog memory's initial contents, so a
    simulator needs no testbench traffic to fill it), one request accepted
    every cycle, and its beat valid exactly ``latency`` cycles later
    (``latency >= 1``). The consumer must take every response (``r.ready``
    is not looked at): the tile loader always does.
    """

    def __init__(self, port_bytes: int, init, latency: int):
        self._port_bytes = _check_positive("port_bytes", port_bytes)
        self._latency = _check_positive("latency", latency)
        self._init = [int(x) for x in init]
        if not self._init:
            raise ValueError("a memory model needs at least one beat")
        if any(not 0 <= x < 1 << (8 * port_bytes) for x in self._init):
            raise ValueError(f"every beat must be an unsigned {8 * port_bytes}-bit value")
        super().__init__(
            {
                "q": In(stream.Signature(read_request_layout())),
                "r": Out(stream.Signature(read_response_layout(port_bytes))),
            }
        )

    @property
    def latency(self) -> int:
        """Cycles from an accepted request to its beat."""
        return self._latency

    def elaborate(self, platform):
        m = Module()
        W = 8 * self._port_bytes
        m.submodules.mem = mem = Memory(shape=unsigned(W), depth=len(self._init), init=self._init)
        rd = mem.read_port()  # one cycle: the first stage of the latency
        m.d.comb += [self.q.ready.eq(1), rd.addr.eq(self.q.payload.addr), rd.en.eq(1)]
        valid = Signal()
        m.d.sync += valid.eq(self.q.valid)
        data_, v = rd.data, valid
        for k in range(self._latency - 1):
            d_next, v_next = Signal(W, name=f"data{k}"), Signal(name=f"valid{k}")
            m.d.sync += [d_next.eq(data_), v_next.eq(v)]
            data_, v = d_next, v_next
        m.d.comb += [self.r.valid.eq(v), self.r.payload.data.eq(data_)]
        return m


class TileLoader(wiring.Component):
    """Moves ``count`` token rows from external memory into an on-chip
    buffer of ``words`` rows of ``beats_per_word`` beats each.

    ``cmd`` takes a :func:`load_command_layout`: the rows are contiguous in
    memory from beat ``base``; row ``k`` goes to buffer word ``offset + k``.
    The loader issues one read request per cycle while ``q.ready``, takes
    every response the cycle it arrives and writes it through ``w`` (a
    :func:`buffer_write_layout`, for a write port with one granule per
    beat). ``done`` is high in the cycle the last beat is written. With a
    memory of latency ``L`` that never stalls, a load of ``n`` beats takes
    ``n + L`` cycles from the command's acceptance to ``done``
    (:func:`kaleido.model.load_cycles`); ``cmd.ready`` is high again the
    cycle after ``done``.
    """

    def __init__(self, words: int, beats_per_word: int, port_bytes: int):
        self._words = _check_positive("words", words)
        self._beats = _check_positive("beats_per_word", beats_per_word)
        self._port_bytes = _check_positive("port_bytes", port_bytes)
        super().__init__(
            {
                "cmd": In(stream.Signature(load_command_layout(words))),
                "q": Out(stream.Signature(read_request_layout())),
                "r": In(stream.Signature(read_response_layout(port_bytes))),
                "w": Out(buffer_write_layout(words, beats_per_word, port_bytes)),
                "done": Out(1),
            }
        )

    @property
    def buffer_layout(self) -> tuple[int, int, int]:
        """``(words, beats_per_word, port_bytes)``."""
        return self._words, self._beats, self._port_bytes

    def elaborate(self, platform):
        m = Module()
        words, B = self._words, self._beats
        total = words * B
        busy = Signal()
        base = Signal(ADDR_WIDTH)
        beats = Signal(range(total + 1))  # beats of this load
        issued = Signal(range(total + 1))
        got = Signal(range(total + 1))
        word = Signal(range(words))  # buffer word of the next response
        lane = Signal(range(max(2, B)))

        m.d.comb += self.cmd.ready.eq(~busy)
        with m.If(self.cmd.valid & self.cmd.ready):
            cmd = self.cmd.payload
            m.d.sync += [
                busy.eq(cmd.count != 0),
                base.eq(cmd.base),
                beats.eq(cmd.count * B),
                issued.eq(0),
                got.eq(0),
                word.eq(cmd.offset),
                lane.eq(0),
            ]

        m.d.comb += [self.q.valid.eq(busy & (issued < beats)), self.q.payload.addr.eq(base + issued)]
        with m.If(self.q.valid & self.q.ready):
            m.d.sync += issued.eq(issued + 1)

        m.d.comb += [
            self.r.ready.eq(1),
            self.w.en.eq(busy & self.r.valid),
            self.w.addr.eq(word),
            self.w.lane.eq(lane),
            self.w.data.eq(self.r.payload.data),
        ]
        last = self.w.en & (got + 1 == beats)
        m.d.comb += self.done.eq(last)
        with m.If(self.w.en):
            m.d.sync += got.eq(got + 1)
            if B == 1:
                m.d.sync += word.eq(word + 1)
            else:
                with m.If(lane == B - 1):
                    m.d.sync += [lane.eq(0), word.eq(word + 1)]
                with m.Else():
                    m.d.sync += lane.eq(lane + 1)
        with m.If(last):
            m.d.sync += busy.eq(0)
        return m
