"""The attention core (issue 13, docs/CORE.md "The core"): one head's
``O = softmax(Q K^T) V`` with reuse, tile by tile, from external memory
to external memory, every on-chip buffer bounded by the configuration.

    read port -> TileFeeder (q_tile, k_tile, v_tile)
                   qk -> KaleidoEngine (the tile shape) -> s -> router
                   router (drops padding; rows, passes, key tiles) -> TileSoftmax
                   TileSoftmax p -> PvTile (V rows from v_tile first) -> o
                   TileSoftmax r -> r rows;  token rows (from the router)
    PvTile o + r + token -> OutputScaler -> write port (one channel block a beat)

The walk (``golden.core.core_attention`` with ``s_pass = "recompute"``):
for each query box, pass 1 runs every key box's S tile into the softmax's
row maxima; pass 2 runs them again, with the key box's V, for P and P V;
the final key box's reciprocals scale O. ``variant="dense"`` builds the
baseline beside it: the same blocks and buffers with the
:class:`~kaleido.hdl.dense_engine.DenseEngine` and the dense P V array
(docs/CORE.md "The dense core").
"""

from __future__ import annotations

from types import SimpleNamespace

from amaranth import Array, Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ..checks import check_qkv, check_variant
from ..config import CoreConfig, KaleidoConfig, SoftmaxFormat
from ._common import as_config
from .dense_engine import DenseEngine
from .engine import KaleidoEngine
from .mem_port import ADDR_WIDTH, read_request_layout, read_response_layout
from .pv_tile import PvTile, channel_blocks
from .scheduling import thresholds_layout
from .softmax import OutputScaler, TileSoftmax, default_acc_width
from .tile_feeder import TileFeeder

__all__ = ["KaleidoAttentionCore", "head_layout", "write_request_layout", "check_core", "check_core_input"]


def check_core(config: KaleidoConfig, core: CoreConfig) -> None:
    """A token row of Q, K and V must be whole read beats, and pass 2
    recomputes S (``s_pass="spill"`` is the golden model's only: docs/CORE.md)."""
    if core.s_pass != "recompute":
        raise ValueError(
            f"s_pass={core.s_pass!r}: the core recomputes S in pass 2 (s_pass='recompute'); "
            "spilling S is modelled by the golden model only (docs/CORE.md)"
        )
    if config.d % core.port_bytes:
        raise ValueError(f"d = {config.d} must be a multiple of port_bytes = {core.port_bytes}")


def check_core_input(Q, K, V, grid, split, config: KaleidoConfig, core: CoreConfig) -> tuple:
    """Reject a head the core built for ``(config, core)`` cannot take,
    before anything is built or simulated: Q, K, V not int8 ``(N, d)`` of
    one shape, a grid that does not hold ``N`` tokens, a split that is not
    ``d``'s or not the configuration's, ``N`` beyond ``core.max_tokens``.
    Returns ``(grid, split)``."""
    import numpy as np

    config = as_config(config)
    check_core(config, core)
    grid, split = check_qkv(np.asarray(Q), np.asarray(K), np.asarray(V), grid, split)
    n = grid[0] * grid[1] * grid[2]
    if n > core.max_tokens:
        raise ValueError(f"the head has {n} tokens; the core addresses at most {core.max_tokens} (max_tokens)")
    if tuple(split) != tuple(config.split):
        raise ValueError(f"split {tuple(split)!r} is not the core's split {tuple(config.split)!r}")
    return grid, split


def head_layout(core: CoreConfig, fmt: SoftmaxFormat) -> data.StructLayout:
    """One head: its grid ``t``, ``h``, ``w``; the beat addresses of Q's,
    K's and V's token 0 (read port) and O's block 0 (write port); the
    softmax constant ``constant``
    (:func:`~kaleido.golden.softmax.head_constant`); the head's Q K^T reuse
    ``thresholds`` (:func:`~kaleido.hdl.scheduling.thresholds_layout`:
    ``(F, P)`` per channel group, e.g. ``kaleido calibrate``'s), which the
    engine's run-time ``thresholds`` port takes for every tile of the head
    (the dense core ignores them; P V's FULL threshold stays
    ``config.F``)."""
    n = range(core.max_tokens + 1)
    return data.StructLayout(
        {
            "t": n,
            "h": n,
            "w": n,
            "q_base": ADDR_WIDTH,
            "k_base": ADDR_WIDTH,
            "v_base": ADDR_WIDTH,
            "o_base": ADDR_WIDTH,
            "constant": unsigned(fmt.constant_bits),
            "thresholds": thresholds_layout(),
        }
    )


def write_request_layout(config: KaleidoConfig, fmt: SoftmaxFormat) -> data.StructLayout:
    """One write of O: ``count`` consecutive values (one channel block, at
    most ``array_cols``) from element address ``addr`` (O's token ``n``,
    channel ``c`` at ``o_base + n d + c``, row-major), ``data``: the values
    of ``8 + out_frac_bits`` bits each, the first in the low bits."""
    C = config.array_cols
    return data.StructLayout({"addr": ADDR_WIDTH, "data": C * (8 + fmt.out_frac_bits), "count": range(C + 1)})


class _BoxWalk:
    """Registers walking the boxes of a grid in ``t``, ``y``, ``x`` order:
    the box's corner, its first token's flat index and its extents
    (clipped at the edge), ``first`` and ``final``."""

    def __init__(self, m: Module, name: str, tile, max_tokens: int, grid, plane):
        self.tile = tile
        n = range(max_tokens + 1)
        self.t0, self.y0, self.x0 = (Signal(n, name=f"{name}_{a}0") for a in "tyx")
        self.origin = Signal(range(max_tokens), name=f"{name}_origin")
        self.line = Signal(range(max_tokens), name=f"{name}_line")  # token of (t0, y0, 0)
        self.plane0 = Signal(range(max_tokens), name=f"{name}_plane")  # token of (t0, 0, 0)
        T, H, W = grid
        bt, by, bx = tile
        self.ext: list = []
        for lo, size, full in ((self.t0, T, bt), (self.y0, H, by), (self.x0, W, bx)):
            left = Signal(n, name=f"{name}_left{len(self.ext)}")
            m.d.comb += left.eq(size - lo)
            self.ext.append(Mux(left >= full, full, left))
        self.first = (self.t0 == 0) & (self.y0 == 0) & (self.x0 == 0)
        self.final = (self.t0 + bt >= T) & (self.y0 + by >= H) & (self.x0 + bx >= W)
        self._grid, self._plane = grid, plane

    def restart(self) -> list:
        return [s.eq(0) for s in (self.t0, self.y0, self.x0, self.origin, self.line, self.plane0)]

    def advance(self, m: Module) -> None:
        """Step to the next box (``m.d.sync``; call under a condition)."""
        T, H, W = self._grid
        bt, by, bx = self.tile
        with m.If(self.x0 + bx < W):
            m.d.sync += [self.x0.eq(self.x0 + bx), self.origin.eq(self.origin + bx)]
        with m.Elif(self.y0 + by < H):
            nxt = self.line + W * by
            m.d.sync += [self.x0.eq(0), self.y0.eq(self.y0 + by), self.line.eq(nxt), self.origin.eq(nxt)]
        with m.Else():
            nxt = self.plane0 + self._plane * bt
            m.d.sync += [self.x0.eq(0), self.y0.eq(0), self.t0.eq(self.t0 + bt)]
            m.d.sync += [self.plane0.eq(nxt), self.line.eq(nxt), self.origin.eq(nxt)]

    def box(self) -> dict:
        return {"origin": self.origin, "t": self.ext[0], "y": self.ext[1], "x": self.ext[2]}


class KaleidoAttentionCore(wiring.Component):
    """One head's attention from external memory to external memory.

    Parameters: ``config`` (the array and the reuse design), ``core``
    (:class:`~kaleido.config.CoreConfig`: the tile, the read port's width
    and latency, the largest head), ``fmt`` (the softmax's formats),
    ``variant``: ``"kaleido"`` (the :class:`~kaleido.hdl.engine.KaleidoEngine`
    and the P V stage on :class:`~kaleido.hdl.pv_array.PvArray`, with
    reuse) or ``"dense"`` (the baseline: the
    :class:`~kaleido.hdl.dense_engine.DenseEngine` and the P V stage on
    :class:`~kaleido.hdl.baseline.DensePvArray`, no reuse; every other
    block and buffer the same; docs/CORE.md "The dense core").

    Ports: ``cmd`` (in stream, :func:`head_layout`): one head; the read
    port ``rq`` (out) / ``rs`` (in) of :mod:`kaleido.hdl.mem_port`; the
    write port ``wq`` (out stream, :func:`write_request_layout`); ``busy``;
    ``cycles``: the last head's cycles, from its command to its last
    write, both counted.
    """

    def __init__(
        self,
        config: KaleidoConfig | None = None,
        core: CoreConfig | None = None,
        fmt: SoftmaxFormat | None = None,
        variant: str = "kaleido",
    ):
        config = as_config(config)
        core = core or CoreConfig()
        fmt = fmt or SoftmaxFormat()
        check_core(config, core)
        self.variant = check_variant(variant)
        self._config, self._core, self._fmt = config, core, fmt
        T = core.tile_tokens
        self.feeder = TileFeeder(config, core)
        self.engine: KaleidoEngine | DenseEngine = (
            KaleidoEngine(config, core.tile, core.s_buffers)
            if variant == "kaleido"
            else DenseEngine(config, core.tile, core.s_buffers)
        )
        self.softmax = TileSoftmax(config, fmt, lanes=1, rows=T, max_tokens=core.max_tokens)
        self.pv = PvTile(config, core.tile, rows=T, variant=variant, buffers=core.pv_buffers)
        self.scaler = OutputScaler(config, fmt, lanes=config.array_cols, acc_width=default_acc_width(fmt))
        self.blocks = len(channel_blocks(config))
        super().__init__(
            {
                "cmd": In(stream.Signature(head_layout(core, fmt))),
                "rq": Out(stream.Signature(read_request_layout())),
                "rs": In(stream.Signature(read_response_layout(core.port_bytes))),
                "wq": Out(stream.Signature(write_request_layout(config, fmt))),
                "busy": Out(1),
                "cycles": Out(32),
            }
        )

    def elaborate(self, platform):
        m = Module()
        m.submodules.feeder = feeder = self.feeder
        m.submodules.engine = engine = self.engine
        m.submodules.softmax = self.softmax
        m.submodules.pv = self.pv
        m.submodules.scaler = self.scaler
        wiring.connect(m, feeder.rq, wiring.flipped(self.rq))
        wiring.connect(m, wiring.flipped(self.rs), feeder.rs)
        wiring.connect(m, feeder.qk, engine.qk)
        w = self._walks(m)
        self._tags(m, w)
        self._router(m, w)
        self._reciprocals(m, w)
        self._p_into_pv(m, w)
        self._o_out(m, w)
        self._controller(m, w)
        return m

    def _walks(self, m: Module) -> SimpleNamespace:
        """The head's registers and the query and key box walks; returns
        the namespace the other stages share."""
        core = self._core
        T = core.tile_tokens
        head = Signal(head_layout(core, self._fmt))
        plane = Signal(range(core.max_tokens + 1))
        grid = (head.t, head.h, head.w)
        m.d.comb += [self.softmax.constant.eq(head.constant), self.engine.thresholds.eq(head.thresholds)]
        qw = _BoxWalk(m, "q", core.tile, core.max_tokens, grid, plane)
        kw = _BoxWalk(m, "k", core.tile, core.max_tokens, grid, plane)
        q_rows = Signal(range(T + 1))
        m.d.comb += q_rows.eq(qw.ext[0] * qw.ext[1] * qw.ext[2])
        phase = Signal()  # 0: pass 1 (row maxima), 1: pass 2 (P, P V)
        q_par = Signal()  # the query box's parity: the r and token rows' bank
        return SimpleNamespace(head=head, plane=plane, qw=qw, kw=kw, q_rows=q_rows, phase=phase, q_par=q_par)

    def _tags(self, m: Module, w: SimpleNamespace) -> None:
        """The tiles in flight, in order: what the router needs of each S
        tile (``w.tags``, the FIFO; ``w.tag``, its head)."""
        core = self._core
        bt, by, bx = core.tile
        ext = data.ArrayLayout(range(max(bt, by, bx) + 1), 3)
        tag_layout = data.StructLayout(
            {"phase": 1, "first": 1, "final": 1, "par": 1, "q": ext, "k": ext, "origin": range(core.max_tokens)}
        )
        m.submodules.tags = tags = SyncFIFO(width=tag_layout.size, depth=4)
        tag_in, tag = Signal(tag_layout), Signal(tag_layout)
        m.d.comb += [tags.w_data.eq(tag_in), tag.eq(tags.r_data)]
        m.d.comb += [
            tag_in.phase.eq(w.phase),
            tag_in.first.eq(w.kw.first),
            tag_in.final.eq(w.kw.final),
            tag_in.par.eq(w.q_par),
            tag_in.origin.eq(w.qw.origin),
        ]
        m.d.comb += [tag_in.q[a].eq(w.qw.ext[a]) for a in range(3)] + [tag_in.k[a].eq(w.kw.ext[a]) for a in range(3)]
        w.tags, w.tag = tags, tag

    def _router(self, m: Module, w: SimpleNamespace) -> None:
        """The engine's padded S tile -> the softmax's segments; each real
        row's token into ``tokens`` (``w.tokens``, ``w.recips``: two banks
        each, the query box's parity, read combinationally)."""
        core, tag, tags = self._core, w.tag, w.tags
        T = core.tile_tokens
        bt, by, bx = core.tile
        softmax = self.softmax
        it, iy, ix = Signal(range(bt), name="it"), Signal(range(by), name="iy"), Signal(range(bx), name="ix")
        jt, jy, jx = Signal(range(bt), name="jt"), Signal(range(by), name="jy"), Signal(range(bx), name="jx")
        k_row = Signal(range(T))  # the real row's index in the query box
        # row i's token offset from the query box's first token, and those
        # of its (t, y, 0) and (t, 0, 0)
        off = Signal(range(core.max_tokens), name="i_off")
        off_line = Signal(range(core.max_tokens), name="i_line")
        off_plane = Signal(range(core.max_tokens), name="i_plane")
        v_ready = Signal()  # the pass-2 tile at the head has its V in the P V stage
        real_row = (it < tag.q[0]) & (iy < tag.q[1]) & (ix < tag.q[2])
        real_col = (jt < tag.k[0]) & (jy < tag.k[1]) & (jx < tag.k[2])
        forward = real_row & real_col
        gate = tags.r_rdy & (~tag.phase | v_ready)
        s_in = self.engine.s
        beat = softmax.s.payload
        m.d.comb += [
            softmax.s.valid.eq(s_in.valid & gate & forward),
            s_in.ready.eq(gate & (~forward | softmax.s.ready)),
            beat.values[0].eq(s_in.payload.value),
            beat.count.eq(1),
            beat.last.eq((jt == tag.k[0] - 1) & (jy == tag.k[1] - 1) & (jx == tag.k[2] - 1)),
            beat.row.eq(k_row),
            beat.phase.eq(tag.phase),
            beat.first.eq(tag.first),
            beat.final.eq(tag.final),
        ]
        m.submodules.tokens = tokens = Memory(shape=range(core.max_tokens), depth=2 * T, init=[])
        m.submodules.recips = recips = Memory(shape=unsigned(self._fmt.recip_width), depth=2 * T, init=[])
        tok_w, rec_w = tokens.write_port(), recips.write_port()
        w.rec_w = rec_w
        s_fire = s_in.valid & s_in.ready
        m.d.comb += [
            tok_w.addr.eq(Cat(k_row, tag.par)),
            tok_w.data.eq(tag.origin + off),
            tok_w.en.eq(s_fire & real_row & (jt == 0) & (jy == 0) & (jx == 0) & ~tag.phase & tag.first),
        ]
        with m.If(s_fire):
            with m.If(s_in.payload.last):
                m.d.sync += [it.eq(0), iy.eq(0), ix.eq(0), jt.eq(0), jy.eq(0), jx.eq(0), k_row.eq(0)]
                m.d.sync += [off.eq(0), off_line.eq(0), off_plane.eq(0)]
                m.d.comb += tags.r_en.eq(1)
                with m.If(tag.phase):
                    m.d.sync += v_ready.eq(0)
            with m.Else():
                self._route_step(m, w, (it, iy, ix), (jt, jy, jx), (off, off_line, off_plane), k_row, real_row)
        final_start = s_fire & tag.phase & tag.final & (it == 0) & (iy == 0) & (ix == 0) & (jt == 0)
        final_start &= (jy == 0) & (jx == 0)
        w.tokens, w.recips, w.v_ready, w.final_start = tokens, recips, v_ready, final_start

    def _route_step(self, m: Module, w: SimpleNamespace, i: tuple, j: tuple, offs: tuple, k_row, real_row) -> None:
        """The router's next S entry (``m.d.sync``; under a taken beat that
        is not the tile's last): the next column, or the next row."""
        bt, by, bx = self._core.tile
        (it, iy, ix), (jt, jy, jx), (off, off_line, off_plane) = i, j, offs
        with m.If(jx != bx - 1):
            m.d.sync += jx.eq(jx + 1)
        with m.Else():
            m.d.sync += jx.eq(0)
            with m.If(jy != by - 1):
                m.d.sync += jy.eq(jy + 1)
            with m.Else():
                m.d.sync += jy.eq(0)
                with m.If(jt != bt - 1):
                    m.d.sync += jt.eq(jt + 1)
                with m.Else():  # the row's last column: the next row
                    m.d.sync += jt.eq(0)
                    with m.If(real_row):
                        m.d.sync += k_row.eq(k_row + 1)
                    with m.If(ix != bx - 1):
                        m.d.sync += [ix.eq(ix + 1), off.eq(off + 1)]
                    with m.Else():
                        m.d.sync += ix.eq(0)
                        with m.If(iy != by - 1):
                            nxt = off_line + w.head.w
                            m.d.sync += [iy.eq(iy + 1), off_line.eq(nxt), off.eq(nxt)]
                        with m.Else():
                            nxt = off_plane + w.plane
                            m.d.sync += [iy.eq(0), it.eq(it + 1), off_plane.eq(nxt), off_line.eq(nxt)]
                            m.d.sync += off.eq(nxt)

    def _reciprocals(self, m: Module, w: SimpleNamespace) -> None:
        """The reciprocals of the final key tile's rows into ``recips``
        (``w.r_rows``, ``w.r_count``: how many the query box has, and has
        received)."""
        T, softmax = self._core.tile_tokens, self.softmax
        r_par, r_rows, r_count = Signal(), Signal(range(T + 1)), Signal(range(T + 1))
        r_fire = softmax.r.valid & softmax.r.ready
        m.d.comb += [
            softmax.r.ready.eq(1),
            w.rec_w.addr.eq(Cat(softmax.r.payload.row, r_par)),
            w.rec_w.data.eq(softmax.r.payload.r),
            w.rec_w.en.eq(r_fire),
        ]
        with m.If(w.final_start):  # the final pass-2 tile of a query box begins
            m.d.sync += [r_par.eq(w.tag.par), r_rows.eq(w.tag.q[0] * w.tag.q[1] * w.tag.q[2]), r_count.eq(0)]
        with m.Elif(r_fire):
            m.d.sync += r_count.eq(r_count + 1)
        w.r_rows, w.r_count = r_rows, r_count

    def _p_into_pv(self, m: Module, w: SimpleNamespace) -> None:
        """P into the P V stage, or (``w.v_phase``) the controller's V rows
        first; a query box's last P waits for all its reciprocals."""
        p, pv = self.softmax.p, self.pv
        v_phase = Signal()  # the controller drives the P V stage's input
        hold_last = p.payload.final & p.payload.last & (p.payload.row == w.r_rows - 1) & (w.r_count != w.r_rows)
        pv_in = pv.i.payload
        v_valid = Signal()
        m.d.comb += [
            pv.i.valid.eq(Mux(v_phase, v_valid, p.valid & ~hold_last)),
            p.ready.eq(~v_phase & pv.i.ready & ~hold_last),
            pv_in.p.eq(p.payload.values[0]),
            pv_in.v.eq(self.feeder.v_data),
        ]
        w.v_phase, w.v_valid, w.pv_in = v_phase, v_valid, pv_in

    def _o_out(self, m: Module, w: SimpleNamespace) -> None:
        """O: the P V totals, scaled by their row's r, to the write port
        (``w.o_rows``: the query boxes' parities and rows, in order;
        ``w.w_fire``: a write taken)."""
        cfg, T, C, nb = self._config, self._core.tile_tokens, self._config.array_cols, self.blocks
        scaler = self.scaler
        m.submodules.o_rows = o_rows = SyncFIFO(width=1 + (T + 1).bit_length(), depth=2)
        o_count = Signal(range(T * nb + 1))
        o = self.pv.o
        o_par = o_rows.r_data[0]
        o_n = o_rows.r_data[1:]
        rec_r, tok_r = w.recips.read_port(domain="comb"), w.tokens.read_port(domain="comb")
        m.d.comb += [rec_r.addr.eq(Cat(o.payload.row, o_par)), tok_r.addr.eq(Cat(o.payload.row, o_par))]
        sin = scaler.i.payload
        m.d.comb += [
            scaler.i.valid.eq(o.valid & o_rows.r_rdy),
            o.ready.eq(scaler.i.ready & o_rows.r_rdy),
            sin.r.eq(rec_r.data),
            sin.count.eq(o.payload.count),
            sin.last.eq(0),
        ]
        m.d.comb += [sin.acc[c].eq(o.payload.acc[c]) for c in range(C)]
        o_fire = o.valid & o.ready
        with m.If(o_fire):
            with m.If(o_count == o_n * nb - 1):
                m.d.sync += o_count.eq(0)
                m.d.comb += o_rows.r_en.eq(1)
            with m.Else():
                m.d.sync += o_count.eq(o_count + 1)
        addr0 = Signal(ADDR_WIDTH)
        first_channel = Array(Const(c0, range(cfg.d)) for c0, _, _ in channel_blocks(cfg))
        m.d.comb += addr0.eq(w.head.o_base + tok_r.data * cfg.d + first_channel[o.payload.group])
        addr1, addr2 = Signal(ADDR_WIDTH), Signal(ADDR_WIDTH)
        with m.If(scaler.i.ready):  # the scaler's two stages advance together
            m.d.sync += [addr1.eq(addr0), addr2.eq(addr1)]
        m.d.comb += [
            self.wq.valid.eq(scaler.o.valid),
            scaler.o.ready.eq(self.wq.ready),
            self.wq.payload.addr.eq(addr2),
            self.wq.payload.data.eq(Cat(*scaler.o.payload.values)),
            self.wq.payload.count.eq(scaler.o.payload.count),
        ]
        w.o_rows, w.w_fire = o_rows, self.wq.valid & self.wq.ready

    def _controller(self, m: Module, w: SimpleNamespace) -> None:
        """The walk over query and key boxes: the feeder's commands, the
        V rows of each pass-2 key box, the O writes still to come, and the
        cycle counter."""
        core, nb, feeder = self._core, self.blocks, self.feeder
        T = core.tile_tokens
        bt, by, bx = core.tile
        w.o_left = o_left = Signal(range(core.max_tokens * nb + 1))  # O writes still to come
        w.o_add = o_add = Signal.like(o_left)
        m.d.sync += o_left.eq(o_left + o_add - w.w_fire)
        fc = feeder.cmd.payload
        for field, walk in (("q", w.qw), ("k", w.kw)):
            m.d.comb += [fc[field][name].eq(value) for name, value in walk.box().items()]
        m.d.comb += [
            fc.q_base.eq(w.head.q_base),
            fc.k_base.eq(w.head.k_base),
            fc.v_base.eq(w.head.v_base),
            fc.with_v.eq(w.phase),
            fc.plane.eq(w.plane),
            fc.row.eq(w.head.w),
        ]
        # V rows of the key box, read from v_tile one cycle ahead
        vt, vy, vx = Signal(range(bt), name="vt"), Signal(range(by), name="vy"), Signal(range(bx), name="vx")
        v_word, v_line, v_plane = (Signal(range(T), name=n) for n in ("v_word", "v_line", "v_plane"))
        v_next = Signal(range(T))
        m.d.comb += [feeder.v_addr.eq(v_next), v_next.eq(v_word)]
        kw = w.kw
        w.v_last = (vt == kw.ext[0] - 1) & (vy == kw.ext[1] - 1) & (vx == kw.ext[2] - 1)
        w.v = SimpleNamespace(t=vt, y=vy, x=vx, word=v_word, line=v_line, plane=v_plane, next=v_next)
        cycles = Signal(32)
        m.d.comb += self.cycles.eq(cycles)
        with m.FSM():
            self._head_states(m, w, cycles)
            self._pass_states(m, w)
        with m.If(~self.cmd.ready):
            m.d.sync += cycles.eq(cycles + 1)
        m.d.comb += self.busy.eq(~self.cmd.ready)

    def _head_states(self, m: Module, w: SimpleNamespace, cycles: Signal) -> None:
        """IDLE (a head's command), PLANE, and QUERY (a new query box: its
        O writes, pass 1 from key box 0)."""
        with m.State("IDLE"):
            m.d.comb += self.cmd.ready.eq(1)
            with m.If(self.cmd.valid):
                m.d.sync += [w.head.eq(self.cmd.payload), cycles.eq(1), w.q_par.eq(1)]
                m.d.sync += w.qw.restart()
                m.next = "PLANE"
        with m.State("PLANE"):
            m.d.sync += w.plane.eq(w.head.h * w.head.w)
            m.next = "QUERY"
        with m.State("QUERY"):
            m.d.comb += [w.o_rows.w_en.eq(w.o_rows.w_rdy), w.o_rows.w_data.eq(Cat(~w.q_par, w.q_rows))]
            with m.If(w.o_rows.w_rdy):
                m.d.comb += w.o_add.eq(w.q_rows * self.blocks)
                m.d.sync += [w.q_par.eq(~w.q_par), w.phase.eq(0)] + w.kw.restart()
                m.next = "ISSUE"

    def _pass_states(self, m: Module, w: SimpleNamespace) -> None:
        """ISSUE (a key box's command to the feeder), FEED, V_HEAD, V_ROWS
        (pass 2: the key box's V into the P V stage), NEXT (the next key
        box, pass or query box) and DRAIN (the last O writes)."""
        feeder, pv, kw, v = self.feeder, self.pv, w.kw, w.v
        with m.State("ISSUE"):
            m.d.comb += [feeder.cmd.valid.eq(w.tags.w_rdy), w.tags.w_en.eq(feeder.cmd.ready & w.tags.w_rdy)]
            with m.If(feeder.cmd.ready & w.tags.w_rdy):
                with m.If(w.phase):
                    m.next = "FEED"
                with m.Else():
                    m.next = "NEXT"
        with m.State("FEED"):
            # the feeder has V once it is idle again; the P V stage takes
            # a header once the previous pass-2 tile's P is all in, and
            # this tile's V may be flagged (v_ready) once that tile's S
            # is all read (its padding ends after its last P). With one
            # S set both hold by then; with two the engine takes this
            # tile's Q K, and the feeder is idle, while they still come
            with m.If(feeder.cmd.ready & pv.fill_idle & ~w.v_ready):
                m.d.sync += [v.t.eq(0), v.y.eq(0), v.x.eq(0), v.word.eq(0), v.line.eq(0), v.plane.eq(0)]
                m.next = "V_HEAD"
        with m.State("V_HEAD"):
            pv_in = w.pv_in
            m.d.comb += [w.v_phase.eq(1), w.v_valid.eq(1)]
            m.d.comb += [pv_in.t.eq(kw.ext[0]), pv_in.y.eq(kw.ext[1]), pv_in.x.eq(kw.ext[2])]
            m.d.comb += [pv_in.rows.eq(w.q_rows), pv_in.first.eq(kw.first), pv_in.final.eq(kw.final)]
            with m.If(pv.i.ready):
                m.next = "V_ROWS"
        with m.State("V_ROWS"):
            m.d.comb += [w.v_phase.eq(1), w.v_valid.eq(1)]
            with m.If(pv.i.ready):
                self._v_row_step(m, w)
        with m.State("NEXT"):
            with m.If(~kw.final):
                kw.advance(m)
                m.next = "ISSUE"
            with m.Elif(~w.phase):
                m.d.sync += [w.phase.eq(1)] + kw.restart()
                m.next = "ISSUE"
            with m.Elif(~w.qw.final):
                w.qw.advance(m)
                m.next = "QUERY"
            with m.Else():
                m.next = "DRAIN"
        with m.State("DRAIN"):
            with m.If((w.o_left == 0) | ((w.o_left == 1) & w.w_fire)):
                m.next = "IDLE"

    def _v_row_step(self, m: Module, w: SimpleNamespace) -> None:
        """One V row taken: the key box's last (V ready, NEXT), or the next
        row's ``v_tile`` word (read a cycle ahead: ``v.next``)."""
        bt, by, bx = self._core.tile
        kw, v = w.kw, w.v
        with m.If(w.v_last):
            m.d.sync += w.v_ready.eq(1)
            m.next = "NEXT"
        with m.Elif(v.x != kw.ext[2] - 1):
            m.d.sync += [v.x.eq(v.x + 1), v.word.eq(v.word + 1)]
            m.d.comb += v.next.eq(v.word + 1)
        with m.Elif(v.y != kw.ext[1] - 1):
            m.d.sync += [v.x.eq(0), v.y.eq(v.y + 1), v.line.eq(v.line + bx), v.word.eq(v.line + bx)]
            m.d.comb += v.next.eq(v.line + bx)
        with m.Else():
            nxt = v.plane + by * bx
            m.d.sync += [v.x.eq(0), v.y.eq(0), v.t.eq(v.t + 1), v.plane.eq(nxt), v.line.eq(nxt), v.word.eq(nxt)]
            m.d.comb += v.next.eq(nxt)
