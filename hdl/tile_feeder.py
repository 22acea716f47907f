"""The Q K^T tile engine's front end (issue 13, docs/CORE.md "The tile
feeder"): a query box and a key box of the head loaded from external
memory through the read port into the ``q_tile`` and ``k_tile`` buffers,
then streamed into :class:`~kaleido.hdl.engine.KaleidoEngine` built for
the tile shape, batch by batch.

A box clipped at the grid's edge is padded to the tile shape with zero
tokens: the engine always runs the full tile, the padded tokens' scores
are discarded downstream. Padding never changes a real score: the pairs
of an aligned box of even extents are the head's pairs (tile-local reuse,
docs/CORE.md "Tiles"), an anchor's operand is exact whatever its follower,
and a real follower's anchor is always real.
"""

from __future__ import annotations

from types import SimpleNamespace

from amaranth import Array, Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ..config import CoreConfig, KaleidoConfig
from ._common import as_config
from .mem_port import ADDR_WIDTH, TileLoader, read_request_layout, read_response_layout
from .qk_memory import qk_layout

__all__ = ["TileFeeder", "box_layout", "feed_command_layout"]


def box_layout(tile, max_tokens: int) -> data.StructLayout:
    """One box of the head: ``origin`` (its first token's flat index) and
    its real extents ``t``, ``y``, ``x`` (at most the tile's)."""
    bt, by, bx = tile
    return data.StructLayout(
        {"origin": range(max_tokens), "t": range(1, bt + 1), "y": range(1, by + 1), "x": range(1, bx + 1)}
    )


def feed_command_layout(tile, max_tokens: int) -> data.StructLayout:
    """One tile pair: the query box ``q`` and key box ``k``
    (:func:`box_layout`), the beat addresses of Q's, K's and V's token 0
    (``q_base``, ``k_base``, ``v_base``), ``with_v`` (also load the key
    box of V into ``v_tile``) and the grid's strides in tokens: ``plane``
    (``H W``) and ``row`` (``W``)."""
    box = box_layout(tile, max_tokens)
    return data.StructLayout(
        {
            "q": box,
            "k": box,
            "q_base": ADDR_WIDTH,
            "k_base": ADDR_WIDTH,
            "v_base": ADDR_WIDTH,
            "with_v": 1,
            "plane": range(max_tokens + 1),
            "row": range(max_tokens + 1),
        }
    )


class TileFeeder(wiring.Component):
    """Loads a query box and a key box, then streams them as the engine's
    ``qk`` words: the Q tile then the K tile, each token by token in tile
    order (``(t by + y) bx + x``) and within a token batch by batch
    (``config.batches``), ``2 T n_batches`` words
    for a tile of ``T`` tokens. Tokens outside a clipped box are zeros.

    Ports: ``cmd`` (in, :func:`feed_command_layout`), the read port ``rq``
    (out, requests) and ``rs`` (in, responses, every one taken the cycle it
    arrives), ``qk`` (out, :func:`~kaleido.hdl.qk_memory.qk_layout`),
    ``v_addr``/``v_data`` (a synchronous read of the ``v_tile`` buffer:
    word ``(t by + y) bx + x`` holds V's token ``(t, y, x)`` of the key box
    after a command ``with_v``; valid until the next command's V loads).

    Sequence (exact with a memory of latency ``L`` that never stalls and an
    always-ready ``qk``; :func:`kaleido.model.tile_feed_cycles`): the
    command is taken in cycle 0; each run of a box (a ``(t, y)`` line of
    ``x`` tokens, contiguous in memory) is one :class:`TileLoader` load of
    ``n = x d / port_bytes`` beats taking ``n + L + 1`` cycles, Q's runs
    then K's (then V's) from cycle 1; one cycle to read the first buffer
    word; then one word a cycle. ``cmd.ready`` is high again after the last
    word.
    """

    def __init__(self, config: KaleidoConfig | None = None, core: CoreConfig | None = None):
        config = as_config(config)
        core = core or CoreConfig()
        if config.d % core.port_bytes:
            raise ValueError(f"d = {config.d} must be a multiple of port_bytes = {core.port_bytes}")
        self._config, self._core = config, core
        self.tile = core.tile
        self.tile_tokens = core.tile_tokens
        self.beats_per_row = config.d // core.port_bytes
        self.loader = TileLoader(self.tile_tokens, self.beats_per_row, core.port_bytes)
        super().__init__(
            {
                "cmd": In(stream.Signature(feed_command_layout(self.tile, core.max_tokens))),
                "rq": Out(stream.Signature(read_request_layout())),
                "rs": In(stream.Signature(read_response_layout(core.port_bytes))),
                "qk": Out(stream.Signature(qk_layout(config.batch))),
                "v_addr": In(range(self.tile_tokens)),
                "v_data": Out(8 * config.d),
            }
        )

    def elaborate(self, platform):
        m = Module()
        w = self._buffers(m)
        self._runs(m, w)
        self._words(m, w)
        with m.FSM():
            with m.State("IDLE"):
                self._idle(m, w)
            with m.State("LOAD"):
                self._load(m, w)
            with m.State("WAIT"):
                self._wait(m, w)
            with m.State("READ"):  # the first word is read (address 0)
                m.next = "STREAM"
            with m.State("STREAM"):
                self._stream(m, w)
        return m

    def _buffers(self, m: Module) -> SimpleNamespace:
        """The loader and the q_tile, k_tile, v_tile buffers' write side: the namespace the stages share."""
        cfg, core = self._config, self._core
        T, bpr = self.tile_tokens, self.beats_per_row
        width = 8 * cfg.d
        m.submodules.loader = loader = self.loader
        wiring.connect(m, loader.q, wiring.flipped(self.rq))
        wiring.connect(m, wiring.flipped(self.rs), loader.r)

        # the q_tile and k_tile buffers: one token row a word, written one
        # beat (a granule) at a time, read one word a cycle
        bufs, rds = [], []
        for name in ("q_tile", "k_tile", "v_tile"):
            mem = Memory(shape=unsigned(width), depth=T, init=[])
            m.submodules[name] = mem
            bufs.append(mem.write_port(granularity=8 * core.port_bytes))
            rds.append(mem.read_port())
        side = Signal(2)  # 0: Q, 1: K (loading or streaming), 2: V (loading)
        for s, wp in enumerate(bufs):
            m.d.comb += [
                wp.addr.eq(loader.w.addr),
                wp.data.eq(loader.w.data.replicate(bpr)),
                wp.en.eq(_lane_enable(loader.w.en & (side == s), bpr, loader.w.lane)),
            ]
        return SimpleNamespace(loader=loader, rds=rds, side=side)

    def _runs(self, m: Module, w: SimpleNamespace) -> None:
        """The command register, the side's box and the run being loaded."""
        core = self._core
        bt, by, _ = self.tile
        side = w.side
        cmd = Signal(feed_command_layout(self.tile, core.max_tokens))
        box = Signal(box_layout(self.tile, core.max_tokens))  # the side's box
        m.d.comb += box.eq(Mux(side == 0, cmd.q, cmd.k))
        base = Array([cmd.q_base, cmd.k_base, cmd.v_base])[side]
        ti, yi = Signal(range(bt)), Signal(range(by))  # the run being loaded
        run_token = Signal(range(core.max_tokens))  # its first token
        plane_token = Signal(range(core.max_tokens))  # first token of its t plane
        last_run = (ti == box.t - 1) & (yi == box.y - 1)
        w.cmd, w.box, w.base, w.ti, w.yi = cmd, box, base, ti, yi
        w.run_token, w.plane_token, w.last_run = run_token, plane_token, last_run

    def _words(self, m: Module, w: SimpleNamespace) -> None:
        """The stream's words: the token being streamed, its batch's lanes, the buffers' read ports."""
        cfg = self._config
        bt, by, bx = self.tile
        T, nb = self.tile_tokens, len(cfg.batches)
        rds, box = w.rds, w.box
        # streaming: token (ti, yi, xi) of the tile, batch b
        st, sy, sx = Signal(range(bt)), Signal(range(by)), Signal(range(bx))
        b = Signal(range(nb))
        token = Signal(range(T))
        word = Mux(w.side[0], rds[1].data, rds[0].data)
        lanes = []
        for c0, n in cfg.batches:
            lanes.append(Cat(word[8 * c0 : 8 * (c0 + n)], Const(0, 8 * (cfg.batch - n))))
        real = (st < box.t) & (sy < box.y) & (sx < box.x)
        m.d.comb += self.qk.payload.eq(Mux(real, Array(lanes)[b], 0))
        last_batch = b == nb - 1
        last_token = token == T - 1
        fire = self.qk.valid & self.qk.ready
        # the read address is the token after this cycle's step, so the
        # word of the token being streamed is always on the read port
        next_token = Signal(range(T))
        m.d.comb += next_token.eq(Mux(fire & last_batch, Mux(last_token, 0, token + 1), token))
        for rd in rds[:2]:
            m.d.comb += [rd.addr.eq(next_token), rd.en.eq(1)]
        m.d.comb += [rds[2].addr.eq(self.v_addr), rds[2].en.eq(1), self.v_data.eq(rds[2].data)]
        w.st, w.sy, w.sx, w.b, w.token, w.next_token = st, sy, sx, b, token, next_token
        w.last_batch, w.last_token, w.fire = last_batch, last_token, fire

    def _idle(self, m: Module, w: SimpleNamespace) -> None:
        """IDLE: take a command, then load Q's first run."""
        m.d.comb += self.cmd.ready.eq(1)
        with m.If(self.cmd.valid):
            p = self.cmd.payload
            m.d.sync += [w.cmd.eq(p), w.side.eq(0), w.ti.eq(0), w.yi.eq(0)]
            m.d.sync += [w.run_token.eq(p.q.origin), w.plane_token.eq(p.q.origin)]
            m.next = "LOAD"

    def _load(self, m: Module, w: SimpleNamespace) -> None:
        """LOAD: one loader command a run, ``(t, y)`` lines of the side's box."""
        _, by, bx = self.tile
        loader, box, cmd, ti, yi = w.loader, w.box, w.cmd, w.ti, w.yi
        run_token, plane_token = w.run_token, w.plane_token
        m.d.comb += [
            loader.cmd.valid.eq(1),
            loader.cmd.payload.base.eq(w.base + run_token * self.beats_per_row),
            loader.cmd.payload.count.eq(box.x),
            loader.cmd.payload.offset.eq((ti * by + yi) * bx),
        ]
        with m.If(loader.cmd.ready):
            with m.If(w.last_run):
                m.next = "WAIT"
            with m.Elif(yi == box.y - 1):
                m.d.sync += [ti.eq(ti + 1), yi.eq(0)]
                m.d.sync += [run_token.eq(plane_token + cmd.plane), plane_token.eq(plane_token + cmd.plane)]
            with m.Else():
                m.d.sync += [yi.eq(yi + 1), run_token.eq(run_token + cmd.row)]

    def _wait(self, m: Module, w: SimpleNamespace) -> None:
        """WAIT: the side's last run lands; then the next side's load, or the stream."""
        side, cmd = w.side, w.cmd
        with m.If(w.loader.done):
            with m.If((side == 0) | ((side == 1) & cmd.with_v)):
                m.d.sync += [side.eq(side + 1), w.ti.eq(0), w.yi.eq(0)]
                m.d.sync += [w.run_token.eq(cmd.k.origin), w.plane_token.eq(cmd.k.origin)]
                m.next = "LOAD"
            with m.Else():
                m.d.sync += [side.eq(0), w.token.eq(0), w.b.eq(0), w.st.eq(0), w.sy.eq(0), w.sx.eq(0)]
                m.next = "READ"

    def _stream(self, m: Module, w: SimpleNamespace) -> None:
        """STREAM: one ``qk`` word a transfer, batch by batch, token by token, Q's tile then K's."""
        bt, by, bx = self.tile
        b, st, sy, sx, fire = w.b, w.st, w.sy, w.sx, w.fire
        m.d.comb += self.qk.valid.eq(1)
        with m.If(fire):
            with m.If(~w.last_batch):
                m.d.sync += b.eq(b + 1)
            with m.Else():
                m.d.sync += [b.eq(0), w.token.eq(w.next_token)]
                with m.If(sx != bx - 1):
                    m.d.sync += sx.eq(sx + 1)
                with m.Else():
                    m.d.sync += sx.eq(0)
                    with m.If(sy != by - 1):
                        m.d.sync += sy.eq(sy + 1)
                    with m.Else():
                        m.d.sync += [sy.eq(0), st.eq(Mux(st == bt - 1, 0, st + 1))]
                with m.If(w.last_token):
                    with m.If(w.side == 0):
                        m.d.sync += w.side.eq(1)
                    with m.Else():
                        m.next = "IDLE"


def _lane_enable(enable, n: int, lane):
    """``n`` write-enable bits: bit ``lane`` set when ``enable``."""
    if n == 1:
        return enable
    return Mux(enable, Const(1, n) << lane, 0)
