"""The core's P V tile stage (issue 13, docs/CORE.md, "The P V tile
stage"): one (query tile, key tile) pair of pass 2. The P tile and the V
tile are held in bounded buffers (``p_tile``, ``v_tile``: two banks each,
every bank an Amaranth ``Memory`` with one write and one read port, with
room for ``buffers`` key tiles: with two, the next key tile fills while
the current one's passes run), the key tile's P V passes run on
:class:`~kaleido.hdl.pv_array.PvArray` with V reuse inside the key tile,
and the array's drains become the beats of an
:class:`~kaleido.hdl.o_accumulator.OAccumulator`, which streams out
``sum over key tiles of P_tile V_tile`` after the final key tile.

**Banks.** An anchor and its follower differ by one in one coordinate, so
their checkerboard parities ``(t + y + x) mod 2`` differ: bank ``b`` holds
the tokens of parity ``b``, and a unit reads its anchor from one bank and
its follower from the other in the same cycle. Within a bank a token's
word is ``((t H + y) W' + x) >> 1`` (``W'`` = the box's ``x`` extent
rounded up to even), unique per bank and below half the tile.
"""

from __future__ import annotations

from types import SimpleNamespace

from amaranth import Array, Cat, Const, Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFO, SyncFIFOBuffered
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ..checks import check_pv_buffers, check_variant
from ..config import CoreConfig, KaleidoConfig, SoftmaxFormat
from ..loopnest import chunks, group_slices, pv_chunk
from ._common import as_config
from .baseline import DensePvArray
from .o_accumulator import OAccumulator, o_acc_layout, o_partial_layout
from .pv_array import PvArray
from .softmax import default_acc_width

__all__ = ["PvTile", "pv_tile_in_layout", "channel_blocks"]

#: the P operand's bits (7-bit P from the tiled softmax)
P_BITS = 7


def channel_blocks(config: KaleidoConfig) -> list[tuple[int, int, int]]:
    """``(first channel, channels, axis)`` of each P V pass's channel block
    in walk order (groups t, x, y; ``array_cols`` channels at a time, never
    crossing a group): the ``group`` index of the stage's output beats."""
    out = []
    for sl, axis in group_slices(config.split):
        for cs in chunks(sl.stop - sl.start, config.array_cols):
            out.append((sl.start + cs.start, cs.stop - cs.start, axis))
    return out


def pv_tile_in_layout(d: int, tile, rows: int) -> data.StructLayout:
    """One beat of the stage's input stream. A key tile is a header beat
    (``shape``: the key tile's box ``(t, y, x)``, ``rows``: the query
    tile's rows, ``first``/``final``: the query tile's first/final key
    tile), then its V tile, one token row ``v`` a beat in the box's
    ``(t, y, x)`` order, then its P tile, one value ``p`` a beat, row by
    row, each row in the same token order. Fields a beat does not use are
    ignored."""
    return data.StructLayout(
        {
            "t": range(tile[0] + 1),
            "y": range(tile[1] + 1),
            "x": range(tile[2] + 1),
            "rows": range(rows + 1),
            "first": 1,
            "final": 1,
            "v": data.ArrayLayout(signed(8), d),
            "p": unsigned(P_BITS),
        }
    )


def _check_tile(tile) -> tuple[int, int, int]:
    try:
        ext = tuple(tile)
    except TypeError:
        raise TypeError(f"tile must be three even extents (t, y, x), not {tile!r}") from None
    if len(ext) != 3 or any(not isinstance(e, int) or isinstance(e, bool) or e < 2 or e % 2 for e in ext):
        raise ValueError(f"tile must be three even extents >= 2 (t, y, x), not {tile!r}")
    return ext  # type: ignore[return-value]


def _parity(t, y, x):
    """A token's bank: its checkerboard parity."""
    return t[0] ^ y[0] ^ x[0]


class PvTile(wiring.Component):
    """P V of one query tile's rows against its key tiles, into the O
    accumulators.

    Parameters
    ----------
    config : KaleidoConfig
        The array (``array_rows`` x ``array_cols``), ``split``, ``batch``
        (units a pass: :func:`kaleido.loopnest.pv_chunk`), ``F``.
    tile : (int, int, int)
        The largest key tile (even extents; default ``CoreConfig().tile``).
    rows : int
        The largest query tile (default ``CoreConfig().tile_tokens``).
    variant : str
        The P V array: ``"kaleido"`` (:class:`~kaleido.hdl.pv_array.PvArray`,
        V reuse) or ``"dense"`` (:class:`~kaleido.hdl.baseline.DensePvArray`:
        every unit's anchor and follower as two MAC beats, no reuse: the
        exact ``sum P V``; :func:`kaleido.model.pv_tile_cycles` does not
        apply, ``core_cycles(..., variant="dense")`` models it in the core).
    buffers : int
        Key tiles the P and V buffers hold (default
        ``CoreConfig().pv_buffers``, 2): with 2 a key tile's fill goes to
        one buffer while the other's passes run; with 1 (the first core's
        stage) the fill waits for the passes.

    Ports: ``i`` (in stream, :func:`pv_tile_in_layout`): per key tile a
    header, the V tile, the P tile; ``fill_idle`` (out): the next beat on
    ``i`` is taken as a header (the previous key tile's P is all in);
    ``o`` (out stream,
    :func:`~kaleido.hdl.o_accumulator.o_acc_layout`, ``group`` = the
    channel block of :func:`channel_blocks`): after the final key tile,
    one beat per (row, channel block) of the query tile.

    A key tile's header is taken only into a free buffer: with every
    buffer full or running, ``i`` is not ready; a buffer is free again once
    its last unit has been read, so a fill overwrites nothing still needed.
    A filled buffer's passes start as soon as the previous key tile's last
    unit has issued. A pass shorter than
    ``array_rows`` units is padded to ``array_rows`` units (unpaired, V =
    0), so passes end at least ``array_rows`` beats apart and the
    drained rows, deskewed, reach the row FIFO one a cycle. A pass starts
    only when the row FIFO has room for its rows (credits), so a stalled
    ``o`` never loses a drain. Cycles: :func:`kaleido.model.pv_tile_cycles`.
    """

    def __init__(
        self,
        config: KaleidoConfig | None = None,
        tile=None,
        rows: int | None = None,
        *,
        variant: str = "kaleido",
        buffers: int | None = None,
    ):
        config = as_config(config)
        self._config = config
        self._variant = check_variant(variant)
        self._buffers = check_pv_buffers(CoreConfig().pv_buffers if buffers is None else buffers)
        self._tile = _check_tile(CoreConfig().tile if tile is None else tile)
        if rows is None:
            rows = CoreConfig().tile_tokens
        if not isinstance(rows, int) or isinstance(rows, bool):
            raise TypeError(f"rows must be an integer, not {rows!r}")
        if rows < 1:
            raise ValueError(f"rows must be at least 1, not {rows!r}")
        self._rows = rows
        self._blocks = channel_blocks(config)
        R, C = config.array_rows, config.array_cols
        self._fifo_rows = R * (3 + -(-(C + 8) // R))
        self._oacc = OAccumulator(config, C, rows, C * len(self._blocks), in_width=config.acc_width)
        acc_width = default_acc_width(SoftmaxFormat())  # the O accumulators' default
        super().__init__(
            {
                "i": In(stream.Signature(pv_tile_in_layout(config.d, self._tile, rows))),
                "o": Out(stream.Signature(o_acc_layout(acc_width, C, rows, len(self._blocks)))),
                "fill_idle": Out(1),
            }
        )

    @property
    def blocks(self) -> list[tuple[int, int, int]]:
        return list(self._blocks)

    @property
    def buffers(self) -> int:
        """Key tiles the P and V buffers hold."""
        return self._buffers

    @property
    def row_blocks(self) -> int:
        return -(-self._rows // self._config.array_rows)

    @property
    def half(self) -> int:
        """Words of a bank per row block: half the tile's tokens."""
        t, y, x = self._tile
        return t * y * x // 2

    @property
    def fifo_rows(self) -> int:
        """Depth of the drained-row FIFO (and the credits a pass reserves
        ``array_rows`` of)."""
        return self._fifo_rows

    def elaborate(self, platform):
        m = Module()
        w = self._banks(m)
        self._headers(m, w)
        self._fill(m, w)
        self._walk(m, w)
        self._stage_b(m, w)
        self._tags(m, w)
        self._walk_step(m, w)
        self._fill_fsm(m, w)
        self._units(m, w)
        self._drains(m, w)
        self._output(m, w)
        return m

    def _addr(self, lin):
        """A token's word in a bank: its linear index ``(t H + y) We + x``
        (``We`` = W rounded up to even) halved; the walks keep the index in
        registers, stepped by adds (no multiplier between a walk and a
        buffer's address)."""
        a_bits = max(1, (self.half - 1).bit_length())
        return (lin >> 1)[:a_bits]

    def _banks(self, m: Module) -> SimpleNamespace:
        """Two banks each of P and V, one write and one read port per bank,
        NB key tiles (slots) deep: slot k's words at k half (V), k rbs half
        (P); returns the namespace the other stages share."""
        R, d = self._config.array_rows, self._config.d
        rbs, half = self.row_blocks, self.half
        NB = self._buffers
        v_word = data.ArrayLayout(signed(8), d)
        v_banks = [Memory(shape=v_word, depth=NB * half, init=[]) for _ in range(2)]
        p_banks = [Memory(shape=unsigned(R * P_BITS), depth=NB * rbs * half, init=[]) for _ in range(2)]
        for b in range(2):
            m.submodules[f"v_tile{b}"] = v_banks[b]
            m.submodules[f"p_tile{b}"] = p_banks[b]
        v_wr = [mem.write_port() for mem in v_banks]
        p_wr = [mem.write_port(granularity=P_BITS) for mem in p_banks]
        v_rd = [mem.read_port() for mem in v_banks]
        p_rd = [mem.read_port() for mem in p_banks]
        # a token's linear index is below lin_max (its word: :meth:`_addr`)
        lin_max = (self._tile[0] + 3) * (self._tile[1] + 2) * (self._tile[2] + 2)
        return SimpleNamespace(v_wr=v_wr, p_wr=p_wr, v_rd=v_rd, p_rd=p_rd, lin_max=lin_max)

    def _header(self, k: int, plane_max: int) -> tuple:
        """Slot ``k``'s header registers: T, H, W, rows, first, final, plane."""
        ext = (Signal(range(e + 1), name=f"{n}{k}") for e, n in zip(self._tile, ("T", "H", "W"), strict=True))
        return (
            *ext,
            Signal(range(self._rows + 1), name=f"rows{k}"),
            Signal(name=f"first{k}"),
            Signal(name=f"final{k}"),
            Signal(range(plane_max + 1), name=f"plane{k}"),
        )

    def _headers(self, m: Module, w: SimpleNamespace) -> None:
        """The key tiles' headers, one per slot; the fill writes slot
        ``fslot``, the passes read slot ``rslot``; ``full``: a slot holds a
        key tile whose passes have not all issued."""
        NB = self._buffers
        # a plane's words: H * (W rounded up to even), taken with the header
        plane_max = self._tile[1] * (self._tile[2] + 1)
        slots = [self._header(k, plane_max) for k in range(NB)]
        fslot = Signal(range(max(NB, 2)))
        rslot = Signal(range(max(NB, 2)))
        full = Signal(NB)
        # the fill's own copy of its key tile's box and rows (its addresses)
        fT, fH, fW = (Signal(range(e + 1), name=f"f{n}") for e, n in zip(self._tile, ("T", "H", "W"), strict=True))
        f_rows = Signal(range(self._rows + 1))
        # the running slot's header
        T, H, W = Signal.like(fT, name="T"), Signal.like(fH, name="H"), Signal.like(fW, name="W")
        n_rows = Signal.like(f_rows, name="n_rows")
        first_kt, final_kt = Signal(), Signal()
        plane = Signal(range(plane_max + 1))
        run_hdr = Cat(T, H, W, n_rows, first_kt, final_kt, plane)
        if NB == 1:
            m.d.comb += run_hdr.eq(Cat(*slots[0]))
        else:
            m.d.comb += run_hdr.eq(Mux(rslot, Cat(*slots[1]), Cat(*slots[0])))
        We = Signal(range(self._tile[2] + 2))
        m.d.comb += We.eq(W + W[0])
        running = Signal()
        m.d.comb += running.eq(full.bit_select(rslot, 1) if NB > 1 else full[0])
        w.slots, w.fslot, w.rslot, w.full = slots, fslot, rslot, full
        w.fT, w.fH, w.fW, w.f_rows = fT, fH, fW, f_rows
        w.T, w.H, w.W, w.n_rows, w.first_kt, w.final_kt, w.plane = T, H, W, n_rows, first_kt, final_kt, plane
        w.We, w.running = We, running

    def _fill(self, m: Module, w: SimpleNamespace) -> None:
        """The fill's registers and write ports: header, V rows, P values
        (into slot ``fslot``); its state machine is :meth:`_fill_fsm`."""
        R, rbs, half, NB = self._config.array_rows, self.row_blocks, self.half, self._buffers
        beat = self.i.payload
        fT, fH, fW, fslot, full = w.fT, w.fH, w.fW, w.fslot, w.full
        IDLE, VFILL, PFILL = range(3)
        state = Signal(range(3))
        # unnamed like ``ft`` and ``fy`` (the tracer finds no name in this
        # line): the Verilog as before the split, where ``fx`` was a closure's
        # cell and its tracer found none either
        ft, fy, fx = Signal.like(fT), Signal.like(fH), Signal.like(fW, name="$like")
        frb = Signal(range(max(rbs, 2)))
        fr = Signal(range(max(R, 2)))
        fx_end, fy_end, ft_end = fx + 1 == fW, fy + 1 == fH, ft + 1 == fT
        tok_end = fx_end & fy_end & ft_end
        fslot_free = ~(full.bit_select(fslot, 1) if NB > 1 else full[0])
        m.d.comb += self.i.ready.eq((state != IDLE) | fslot_free)
        m.d.comb += self.fill_idle.eq(state == IDLE)
        take = self.i.valid & self.i.ready
        fbank = _parity(ft, fy, fx)
        f_lin = Signal(range(w.lin_max))  # (ft fH + fy) fWe + fx
        faddr = self._addr(f_lin)
        for b in range(2):
            m.d.comb += [
                w.v_wr[b].addr.eq(fslot * half + faddr),
                w.v_wr[b].data.eq(beat.v),
                w.v_wr[b].en.eq(take & (state == VFILL) & (fbank == b)),
                w.p_wr[b].addr.eq((fslot * rbs + frb) * half + faddr),
                w.p_wr[b].data.eq(Cat(*([beat.p] * R))),
                w.p_wr[b].en.eq(Mux(take & (state == PFILL) & (fbank == b), 1 << fr, 0)),
            ]
        w.state, w.ft, w.fy, w.fx, w.frb, w.fr, w.f_lin = state, ft, fy, fx, frb, fr, f_lin
        w.fx_end, w.fy_end, w.ft_end, w.tok_end, w.take = fx_end, fy_end, ft_end, tok_end, take

    def _step_fill(self, m: Module, w: SimpleNamespace) -> None:
        """The fill's next token (x fastest) and its linear index."""
        fx, fy, ft, f_lin = w.fx, w.fy, w.ft, w.f_lin
        m.d.sync += [fx.eq(fx + 1), f_lin.eq(f_lin + 1)]
        with m.If(w.tok_end):
            m.d.sync += f_lin.eq(0)
        with m.Elif(w.fx_end):
            m.d.sync += f_lin.eq(f_lin + 1 + w.fW[0])
        with m.If(w.fx_end):
            m.d.sync += [fx.eq(0), fy.eq(fy + 1)]
            with m.If(w.fy_end):
                m.d.sync += [fy.eq(0), ft.eq(ft + 1)]
                with m.If(w.ft_end):
                    m.d.sync += ft.eq(0)

    def _walk(self, m: Module, w: SimpleNamespace) -> None:
        """The walk's registers and next values: channel blocks, row
        blocks, passes of units; the row FIFO's credits."""
        R, chunk = self._config.array_rows, pv_chunk(self._config)
        nb, rbs = len(self._blocks), self.row_blocks
        T, H, W, We, plane, n_rows = w.T, w.H, w.W, w.We, w.plane, w.n_rows
        blk = Signal(range(max(nb, 2)))
        rb = Signal(range(max(rbs, 2)))
        uc = Signal(range(max(chunk, R) + 1))
        wt, wy, wx = Signal.like(T), Signal.like(H), Signal.like(W)
        exh = Signal()  # the (block, row block)'s units are all issued
        pass_first = Signal(init=1)  # the current pass is its (block, row block)'s first
        axis = Signal(range(3))
        m.d.comb += axis.eq(Array(Const(a, range(3)) for _, _, a in self._blocks)[blk])
        st, sy, sx = 1 + (axis == 0), 1 + (axis == 1), 1 + (axis == 2)
        nx, ny, nt = wx + sx, wy + sy, wt + st
        x_wrap, y_wrap = nx >= W, ny >= H
        w_last = x_wrap & y_wrap & (nt >= T)
        along = Mux(axis == 0, wt + 1 < T, Mux(axis == 1, wy + 1 < H, wx + 1 < W))
        paired = Signal()
        m.d.comb += paired.eq(along)
        a_bank = _parity(wt, wy, wx)
        # the walk's linear index, and those of its row and plane starts
        w_lin, w_row, w_plane = (Signal(range(w.lin_max), name=n) for n in ("w_lin", "w_row", "w_plane"))
        step = Mux(axis == 0, plane, Mux(axis == 1, We, 1))  # to the unit's follower
        a_addr, f_addr = self._addr(w_lin), self._addr(w_lin + step)
        row_next = w_row + Mux(axis == 1, We << 1, We)
        plane_next = w_plane + Mux(axis == 0, plane << 1, plane)

        real = ~exh & (uc < chunk)
        exh_next = exh | (real & w_last)
        uc_next = uc + 1
        pass_last = ~((~exh_next & (uc_next < chunk)) | (uc_next < R))
        block_last = pass_last & exh_next
        rb_last = (rb + 1) * R >= n_rows  # the query tile's last row block
        run_last = block_last & rb_last & (blk == nb - 1)

        left = n_rows - rb * R  # rows of the query tile from this row block on

        # credits: rows of the row FIFO reserved by passes in flight
        D = self._fifo_rows
        inflight = Signal(range(D + 1))
        credit_ok = (uc != 0) | (inflight + R <= D)
        w.blk, w.rb, w.uc, w.wt, w.wy, w.wx, w.exh, w.pass_first = blk, rb, uc, wt, wy, wx, exh, pass_first
        w.sx, w.nx, w.ny, w.nt, w.x_wrap, w.y_wrap, w.paired, w.a_bank = sx, nx, ny, nt, x_wrap, y_wrap, paired, a_bank
        w.w_lin, w.w_row, w.w_plane, w.a_addr, w.f_addr = w_lin, w_row, w_plane, a_addr, f_addr
        w.row_next, w.plane_next, w.real, w.exh_next, w.uc_next = row_next, plane_next, real, exh_next, uc_next
        w.pass_last, w.block_last, w.rb_last, w.run_last, w.left = pass_last, block_last, rb_last, run_last, left
        w.inflight, w.credit_ok = inflight, credit_ok

    def _stage_b(self, m: Module, w: SimpleNamespace) -> None:
        """Stage B: the unit read from the buffers (the array, ``issue``)."""
        cfg = self._config
        R, rbs, half = cfg.array_rows, self.row_blocks, self.half
        b_valid = Signal()
        b_pad, b_absent, b_bank, b_last = Signal(), Signal(), Signal(), Signal()
        # the unit's channel block: one-hot on the Kaleido tile (its V lanes
        # feed the P V dispatcher's detector), an index on the dense one
        one_hot = self._variant == "kaleido"
        b_blk = Signal(len(self._blocks) if one_hot else w.blk.shape(), name="b_blk")
        b_rows = Signal(range(R + 1))  # rows of the unit's row block in the query tile (the rest read as P = 0)
        arr = PvArray(cfg) if self._variant == "kaleido" else DensePvArray(cfg)
        m.submodules.array = arr
        b_free = ~b_valid | arr.units.ready
        issue = w.running & b_free & w.credit_ok
        for b in range(2):
            a_here = w.a_bank == b
            m.d.comb += [
                w.v_rd[b].addr.eq(w.rslot * half + Mux(a_here, w.a_addr, w.f_addr)),
                w.p_rd[b].addr.eq((w.rslot * rbs + w.rb) * half + Mux(a_here, w.a_addr, w.f_addr)),
                w.v_rd[b].en.eq(issue),
                w.p_rd[b].en.eq(issue),
            ]
        with m.If(b_free):
            m.d.sync += b_valid.eq(issue)
        with m.If(issue):
            m.d.sync += [
                b_pad.eq(~w.real),
                b_absent.eq(~w.real | ~w.paired),
                b_bank.eq(w.a_bank),
                b_last.eq(w.pass_last),
                b_blk.eq(1 << w.blk if one_hot else w.blk),
                b_rows.eq(Mux(w.left > R, R, w.left)),
            ]
        w.b_valid, w.b_pad, w.b_absent, w.b_bank, w.b_last = b_valid, b_pad, b_absent, b_bank, b_last
        w.b_blk, w.b_rows, w.arr, w.issue = b_blk, b_rows, arr, issue

    def _tags(self, m: Module, w: SimpleNamespace) -> None:
        """The pass tags, in pass order: (row block, channel block, first,
        final, rows)."""
        R, nb, rbs = self._config.array_rows, len(self._blocks), self.row_blocks
        D = self._fifo_rows
        tag_layout = data.StructLayout(
            {"rb": range(max(rbs, 2)), "blk": range(max(nb, 2)), "first": 1, "final": 1, "nrows": range(R + 1)}
        )
        m.submodules.tags = tags = SyncFIFO(width=tag_layout.size, depth=D // R + 1)
        tag_in = Signal(tag_layout)
        m.d.comb += [
            tag_in.rb.eq(w.rb),
            tag_in.blk.eq(w.blk),
            tag_in.first.eq(w.first_kt & w.pass_first),
            tag_in.final.eq(w.final_kt & w.block_last),
            tag_in.nrows.eq(Mux(w.left > R, R, w.left)),
            tags.w_data.eq(tag_in),
            tags.w_en.eq(w.issue & w.pass_last),
        ]
        w.tag_layout, w.tags = tag_layout, tags

    def _walk_step(self, m: Module, w: SimpleNamespace) -> None:
        """The walk's registers on an issue; the slots' ``full`` bits."""
        NB = self._buffers
        wt, wy, wx, w_lin, w_row, w_plane = w.wt, w.wy, w.wx, w.w_lin, w.w_row, w.w_plane
        rb, blk, rslot, row_next, plane_next = w.rb, w.blk, w.rslot, w.row_next, w.plane_next
        with m.If(w.issue):
            m.d.sync += w.uc.eq(w.uc_next)
            with m.If(w.real):
                m.d.sync += [wx.eq(w.nx), w_lin.eq(w_lin + w.sx)]
                with m.If(w.x_wrap):
                    m.d.sync += [wx.eq(0), wy.eq(w.ny), w_lin.eq(row_next), w_row.eq(row_next)]
                    with m.If(w.y_wrap):
                        m.d.sync += [wy.eq(0), wt.eq(w.nt)]
                        m.d.sync += [w_lin.eq(plane_next), w_row.eq(plane_next), w_plane.eq(plane_next)]
                m.d.sync += w.exh.eq(w.exh_next)
            with m.If(w.pass_last):
                m.d.sync += [w.uc.eq(0), w.pass_first.eq(0)]
                with m.If(w.block_last):
                    m.d.sync += [wt.eq(0), wy.eq(0), wx.eq(0), w.exh.eq(0), w.pass_first.eq(1), rb.eq(rb + 1)]
                    m.d.sync += [w_lin.eq(0), w_row.eq(0), w_plane.eq(0)]
                    with m.If(w.rb_last):
                        m.d.sync += [rb.eq(0), blk.eq(blk + 1)]
                    with m.If(w.run_last):
                        m.d.sync += [blk.eq(0), rslot.eq(Mux(rslot == NB - 1, 0, rslot + 1))]
        fill_done = Signal()
        for k in range(NB):
            with m.If(w.issue & w.run_last & (rslot == k)):
                m.d.sync += w.full[k].eq(0)
            with m.If(fill_done & (w.fslot == k)):
                m.d.sync += w.full[k].eq(1)
        w.fill_done = fill_done

    def _fill_fsm(self, m: Module, w: SimpleNamespace) -> None:
        """The fill's state machine: a header into slot ``fslot``, then its
        V tile, then its P tile."""
        R, NB = self._config.array_rows, self._buffers
        beat = self.i.payload
        IDLE, VFILL, PFILL = range(3)
        state, fslot, frb, fr = w.state, w.fslot, w.frb, w.fr
        with m.If(w.take):
            with m.Switch(state):
                with m.Case(IDLE):
                    for k, (sT, sH, sW, s_rows, s_first, s_final, s_plane) in enumerate(w.slots):
                        with m.If(fslot == k):
                            m.d.sync += [
                                sT.eq(beat.t),
                                sH.eq(beat.y),
                                sW.eq(beat.x),
                                s_rows.eq(beat.rows),
                                s_first.eq(beat.first),
                                s_final.eq(beat.final),
                                s_plane.eq(beat.y * (beat.x + beat.x[0])),
                            ]
                    m.d.sync += [
                        w.fT.eq(beat.t),
                        w.fH.eq(beat.y),
                        w.fW.eq(beat.x),
                        w.f_rows.eq(beat.rows),
                        w.ft.eq(0),
                        w.fy.eq(0),
                        w.fx.eq(0),
                        w.f_lin.eq(0),
                        state.eq(VFILL),
                    ]
                with m.Case(VFILL):
                    self._step_fill(m, w)
                    with m.If(w.tok_end):
                        m.d.sync += [state.eq(PFILL), frb.eq(0), fr.eq(0)]
                with m.Case(PFILL):
                    self._step_fill(m, w)
                    with m.If(w.tok_end):
                        m.d.sync += fr.eq(fr + 1)
                        with m.If(fr == R - 1):
                            m.d.sync += [fr.eq(0), frb.eq(frb + 1)]
                        with m.If((frb * R + fr + 1) == w.f_rows):
                            # the walk's registers are at their start: reset
                            # or the previous key tile's last issue left them so
                            m.d.comb += w.fill_done.eq(1)
                            m.d.sync += [state.eq(IDLE), fslot.eq(Mux(fslot == NB - 1, 0, fslot + 1))]

    def _units(self, m: Module, w: SimpleNamespace) -> None:
        """Stage B -> the array's units."""
        R = self._config.array_rows
        arr, p_rd, v_rd = w.arr, w.p_rd, w.v_rd
        b_valid, b_bank, b_absent, b_rows = w.b_valid, w.b_bank, w.b_absent, w.b_rows
        u = arr.units.payload
        # zero while no unit is held: the read ports hold no word before the
        # first read (X on a four-state simulator), and the payload reaches
        # the dispatcher's registers even when not valid
        p_a = Mux(b_valid, Mux(b_bank, p_rd[1].data, p_rd[0].data), 0)
        p_f = Mux(b_valid, Mux(b_bank, p_rd[0].data, p_rd[1].data), 0)
        v_a = Mux(b_valid, Mux(b_bank, v_rd[1].data.as_value(), v_rd[0].data.as_value()), 0)
        v_f = Mux(b_valid, Mux(b_bank, v_rd[0].data.as_value(), v_rd[1].data.as_value()), 0)
        m.d.comb += [arr.units.valid.eq(b_valid), arr.hold.eq(0)]
        for r in range(R):
            m.d.comb += [
                u.p_a[r].eq(Mux(r < b_rows, p_a[r * P_BITS : (r + 1) * P_BITS], 0)),
                u.p_f[r].eq(Mux(b_absent | (r >= b_rows), 0, p_f[r * P_BITS : (r + 1) * P_BITS])),
            ]
        if self._variant == "kaleido":
            self._lanes_one_hot(m, w, v_a, v_f)
        else:
            self._lanes_indexed(m, w, v_a, v_f)

    def _lanes_indexed(self, m: Module, w: SimpleNamespace, v_a, v_f) -> None:
        """The block's V lanes by the block index ``b_blk`` (the dense tile:
        its clock is set by the O accumulator, and the one-hot select placed
        its tile slower, 72.7 against 80.5 MHz, docs/EFFICIENCY.md)."""
        u, b_absent = w.arr.units.payload, w.b_absent
        with m.Switch(w.b_blk):
            for k, (start, count, _) in enumerate(self._blocks):
                with m.Case(k):
                    # ``absent`` and ``last`` in the same process as the V lanes: a
                    # field driven alone from a register becomes an ``always @*``
                    # that no event wakes at time 0 in the emitted Verilog (X on Icarus)
                    m.d.comb += [u.absent.eq(b_absent), u.last.eq(w.b_last)]
                    for c in range(count):
                        lo = (start + c) * 8
                        m.d.comb += [
                            u.v_a[c].eq(Mux(w.b_pad, 0, v_a[lo : lo + 8])),
                            u.v_f[c].eq(Mux(b_absent, 0, v_f[lo : lo + 8])),
                        ]

    def _lanes_one_hot(self, m: Module, w: SimpleNamespace, v_a, v_f) -> None:
        """The block's V lanes selected by the one-hot ``b_blk``: an AND-OR,
        not a decoder and mux tree, in front of the P V dispatcher's detector
        (the Kaleido tile's critical path with an index: 73.8 -> 77.2 MHz).
        ``absent`` and ``last`` in the same statements as the V lanes (see
        :meth:`_lanes_indexed`)."""
        u, b_absent = w.arr.units.payload, w.b_absent
        m.d.comb += [u.absent.eq(b_absent), u.last.eq(w.b_last)]
        for c in range(max(count for _, count, _ in self._blocks)):
            lanes_a, lanes_f = 0, 0
            for k, (start, count, _) in enumerate(self._blocks):
                if c < count:
                    lo = (start + c) * 8
                    lanes_a = lanes_a | Mux(w.b_blk[k], v_a[lo : lo + 8], 0)
                    lanes_f = lanes_f | Mux(w.b_blk[k], v_f[lo : lo + 8], 0)
            m.d.comb += [u.v_a[c].eq(Mux(w.b_pad, 0, lanes_a)), u.v_f[c].eq(Mux(b_absent, 0, lanes_f))]

    def _drains(self, m: Module, w: SimpleNamespace) -> None:
        """The drains: deskew each PE row (lane c waits C - 1 - c cycles),
        then the row draining this cycle (``row_valid``, ``row_r``,
        ``row_vals``)."""
        cfg = self._config
        R, C = cfg.array_rows, cfg.array_cols
        arr = w.arr
        aligned = []
        for r in range(R):
            lanes = []
            for c in range(C):
                val = arr.tiles[r][c].value
                for s in range(C - 1 - c):
                    nxt = Signal(signed(cfg.acc_width), name=f"skew_{r}_{c}_{s}")
                    m.d.sync += nxt.eq(val)
                    val = nxt
                lanes.append(val)
            aligned.append((arr.tiles[r][C - 1].valid, lanes))
        row_valid = Signal()
        row_r = Signal(range(max(R, 2)))
        row_vals = Signal(data.ArrayLayout(signed(cfg.acc_width), C))
        for r, (valid, lanes) in enumerate(aligned):
            with m.If(valid):
                m.d.comb += [row_valid.eq(1), row_r.eq(r)]
                m.d.comb += [row_vals[c].eq(v) for c, v in enumerate(lanes)]
        w.row_valid, w.row_r, w.row_vals = row_valid, row_r, row_vals

    def _output(self, m: Module, w: SimpleNamespace) -> None:
        """The drained rows -> the row FIFO (tagged by the pass tags) -> the
        O accumulators -> ``o``; the credits the drains release."""
        cfg = self._config
        R, C, nb = cfg.array_rows, cfg.array_cols, len(self._blocks)
        D = self._fifo_rows
        tags, row_valid, row_r = w.tags, w.row_valid, w.row_r
        oacc = self._oacc
        m.submodules.o_acc = oacc
        part = o_partial_layout(cfg.acc_width, C, self._rows, nb)
        m.submodules.rows = fifo = SyncFIFOBuffered(width=part.size, depth=D)
        head = Signal(w.tag_layout)
        m.d.comb += head.eq(tags.r_data)
        row_real = row_valid & (row_r < head.nrows)
        row_w = Signal(part, name="w")
        counts = Array(Const(count, range(C + 1)) for _, count, _ in self._blocks)
        m.d.comb += [
            row_w.values.eq(w.row_vals),
            row_w.count.eq(counts[head.blk]),
            row_w.row.eq(head.rb * R + row_r),
            row_w.group.eq(head.blk),
            row_w.first.eq(head.first),
            row_w.final.eq(head.final),
            fifo.w_data.eq(row_w),
            fifo.w_en.eq(row_real),
            tags.r_en.eq(row_valid & (row_r == R - 1)),
        ]
        pop = fifo.r_rdy & oacc.i.ready
        m.d.comb += [oacc.i.valid.eq(fifo.r_rdy), oacc.i.payload.eq(fifo.r_data), fifo.r_en.eq(oacc.i.ready)]
        released = pop + (row_valid & ~row_real)
        m.d.sync += w.inflight.eq(w.inflight + Mux(w.issue & (w.uc == 0), R, 0) - released)
        wiring.connect(m, oacc.o, wiring.flipped(self.o))
