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

from amaranth import Module, Mux, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

__all__ = [
    "MemoryModel",
    "StallingMemoryModel",
    "Lfsr",
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


def _check_image(init, port_bytes: int) -> tuple[list[int] | None, int]:
    """``(beats, depth)`` of a memory model's ``init``: the beats checked,
    or ``None`` and the depth of an outside store (an ``int``)."""
    if isinstance(init, int) and not isinstance(init, bool):
        return None, _check_positive("the store's depth", init)
    beats = [int(x) for x in init]
    if not beats:
        raise ValueError("a memory model needs at least one beat")
    if any(not 0 <= x < 1 << (8 * port_bytes) for x in beats):
        raise ValueError(f"every beat must be an unsigned {8 * port_bytes}-bit value")
    return beats, len(beats)


def _memory_members(port_bytes: int, depth: int, external: bool) -> dict:
    """The members of a memory model: the read port's ``q`` (in) and ``r``
    (out), and with an ``external`` store of ``depth`` beats its read port,
    ``store_addr`` (out) and ``store_data`` (in)."""
    members = {
        "q": In(stream.Signature(read_request_layout())),
        "r": Out(stream.Signature(read_response_layout(port_bytes))),
    }
    if external:
        members.update(store_addr=Out(range(depth)), store_data=In(8 * port_bytes))
    return members


class MemoryModel(wiring.Component):
    """The external memory behind the read port, for simulation: one
    request accepted every cycle, and its beat valid exactly ``latency``
    cycles later (``latency >= 1``). The consumer must take every response
    (``r.ready`` is not looked at): the tile loader always does.

    ``init``: the beats, preloaded (the Verilog memory's initial contents,
    so a simulator needs no testbench traffic to fill it); or an ``int``,
    the depth of a store held *outside* the component, which the simulator
    fills at run time (``tb/core_benches.py``'s Verilog reads a file with
    ``$readmemh``), so the emitted design, and a simulator's build of it,
    do not depend on the data. The component then reads that store through
    ``store_addr`` (out) and ``store_data`` (in): ``store_data`` must be
    word ``store_addr`` of the cycle before, a synchronous read, as the
    preloaded memory's read port gives.
    """

    def __init__(self, port_bytes: int, init, latency: int):
        self._port_bytes = _check_positive("port_bytes", port_bytes)
        self._latency = _check_positive("latency", latency)
        self._init, self._depth = _check_image(init, port_bytes)
        super().__init__(_memory_members(port_bytes, self._depth, self._init is None))

    @property
    def latency(self) -> int:
        """Cycles from an accepted request to its beat."""
        return self._latency

    @property
    def depth(self) -> int:
        """Beats of the memory (preloaded or outside)."""
        return self._depth

    @property
    def external(self) -> bool:
        """Whether the store is outside (``store_addr``/``store_data``)."""
        return self._init is None

    def elaborate(self, platform):
        m = Module()
        W = 8 * self._port_bytes
        m.d.comb += self.q.ready.eq(1)
        if self._init is None:  # the store is outside: its read is the first stage of the latency
            m.d.comb += self.store_addr.eq(self.q.payload.addr)
            data_ = self.store_data
        else:
            m.submodules.mem = mem = Memory(shape=unsigned(W), depth=self._depth, init=self._init)
            rd = mem.read_port()  # one cycle: the first stage of the latency
            m.d.comb += [rd.addr.eq(self.q.payload.addr), rd.en.eq(1)]
            data_ = rd.data
        valid = Signal()
        m.d.sync += valid.eq(self.q.valid)
        v = valid
        for k in range(self._latency - 1):
            d_next, v_next = Signal(W, name=f"data{k}"), Signal(name=f"valid{k}")
            m.d.sync += [d_next.eq(data_), v_next.eq(v)]
            data_, v = d_next, v_next
        m.d.comb += [self.r.valid.eq(v), self.r.payload.data.eq(data_)]
        return m


class Lfsr(wiring.Component):
    """A 32-bit Galois LFSR (taps 0x80200003, period 2^32 - 1) seeded with
    ``seed`` (non-zero), stepping every cycle: ``bits`` is its state, a
    pseudo-random word for simulation models' stalls."""

    def __init__(self, seed: int):
        if not isinstance(seed, int) or not 0 < seed < 1 << 32:
            raise ValueError(f"seed must be a non-zero 32-bit integer, not {seed!r}")
        self._seed = seed
        super().__init__({"bits": Out(32)})

    def elaborate(self, platform):
        m = Module()
        state = Signal(32, init=self._seed)
        m.d.sync += state.eq(Mux(state[0], (state >> 1) ^ 0x80200003, state >> 1))
        m.d.comb += self.bits.eq(state)
        return m


class StallingMemoryModel(wiring.Component):
    """:class:`MemoryModel` with random stalls, for soaks (``init`` as
    there, an outside store included): a request is
    taken only on a cycle the LFSR allows (and while the response FIFO has
    room for every request in flight), and a response leaves its FIFO only
    on a cycle the LFSR allows, so the latency varies from ``latency`` up;
    responses stay in request order. ``stall`` (a 2-bit code ``k``): each
    side stalls on a cycle with probability ``k / 4``."""

    def __init__(self, port_bytes: int, init, latency: int, seed: int, stall: int = 1, depth: int = 8):
        self.model = MemoryModel(port_bytes, init, latency)
        self.lfsr = Lfsr(seed)
        if stall not in (0, 1, 2, 3):
            raise ValueError(f"stall must be 0, 1, 2 or 3 (quarters of cycles stalled), not {stall!r}")
        self._stall, self._depth, self._latency = stall, _check_positive("depth", depth), latency
        self._external = self.model.external
        super().__init__(_memory_members(port_bytes, self.model.depth, self._external))

    def elaborate(self, platform):
        from amaranth.lib.fifo import SyncFIFOBuffered

        m = Module()
        m.submodules.model, m.submodules.lfsr = model, lfsr = self.model, self.lfsr
        if self._external:
            m.d.comb += [self.store_addr.eq(model.store_addr), model.store_data.eq(self.store_data)]
        width = len(self.r.payload.data)
        m.submodules.fifo = fifo = SyncFIFOBuffered(width=width, depth=self._depth + self._latency + 1)
        bits = lfsr.bits
        take = bits[0:2] >= self._stall  # requests: stalled on stall/4 of the cycles
        give = bits[8:10] >= self._stall  # responses
        in_flight = Signal(range(self._depth + self._latency + 2))
        room = in_flight + fifo.r_level < self._depth
        fire = self.q.valid & take & room
        m.d.comb += [
            model.q.valid.eq(fire),
            model.q.payload.eq(self.q.payload),
            self.q.ready.eq(take & room),
            fifo.w_en.eq(model.r.valid),
            fifo.w_data.eq(model.r.payload.data),
            self.r.valid.eq(fifo.r_rdy & give),
            self.r.payload.data.eq(fifo.r_data),
            fifo.r_en.eq(self.r.ready & give),
        ]
        m.d.sync += in_flight.eq(in_flight + fire - model.r.valid)
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
