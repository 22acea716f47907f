"""The engine's accumulation buffer (docs/ENGINE.md, "The accumulation
buffer"): the array's tiles into ``S``, kept in ``config.s_banks`` banks
(each a memory with one read and one write port) behind one FIFO per bank;
then ``S`` out row-major.

Every pass the dispatcher takes leaves its tokens in a ring of the passes
in flight; each PE's lane follows the ring through its own pointer (one
step per T3 tile) to find the ``S`` entry of each tile it drains, and
routes the tile to that entry's bank (:func:`kaleido.config.s_bank`). Each
bank's FIFO takes every tile routed to it in a cycle (in lane order) and
gives one a cycle to the bank's two-stage read-modify-write pipeline; when
some FIFO cannot take this cycle's tiles the buffer raises ``hold`` and the
array (and dispatcher) freeze with the tiles on their ports.
"""

from __future__ import annotations

from amaranth import Array, Cat, Module, Mux, Signal, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ..checks import check_s_sets
from ..config import RMW_LATENCY, KaleidoConfig, s_bank, s_bank_offset
from ._common import as_config
from .encoding import Phase
from .layouts import tile_layout

__all__ = [
    "AccumulationBuffer",
    "RING_DEPTH",
    "RMW_LATENCY",
    "bank_entry_layout",
    "pass_tokens_layout",
    "score_layout",
    "token_pair_layout",
    "write_layout",
]

#: passes in flight the ring holds. A pass lasts at least 5 cycles (four
#: phases of at least one beat, one idle beat) and its last tile leaves
#: ``R + C = 8`` cycles after its last beat, so an entry is rewritten 4
#: passes (at least 15 cycles after that beat) later, long after its last tile.
RING_DEPTH = 4


def token_pair_layout(n_tokens: int) -> data.StructLayout:
    """One unit of a pass as the buffer sees it: its anchor and follower
    token indices and whether each is present (a padding unit has neither,
    an unpaired unit no follower)."""
    return data.StructLayout(
        {
            "anchor": range(n_tokens),
            "follower": range(n_tokens),
            "anchor_present": 1,
            "follower_present": 1,
        }
    )


def pass_tokens_layout(rows: int, cols: int, n_tokens: int) -> data.StructLayout:
    """The tokens of one pass: per row unit and per column unit a
    :func:`token_pair_layout`; ``first`` = the pass belongs to the head's
    first batch (its tiles overwrite ``S`` instead of adding to it)."""
    pair = token_pair_layout(n_tokens)
    return data.StructLayout({"rows": data.ArrayLayout(pair, rows), "cols": data.ArrayLayout(pair, cols), "first": 1})


def write_layout(n_tokens: int) -> data.StructLayout:
    """One lane's write this cycle: ``enable`` and the ``S`` entry
    ``address = i * N + j``."""
    return data.StructLayout({"enable": 1, "address": range(n_tokens * n_tokens)})


def bank_entry_layout(n_tokens: int, banks: int, width: int) -> data.StructLayout:
    """One FIFO entry of a bank: the word ``offset`` in the bank
    (:func:`kaleido.config.s_bank_offset`), the tile ``value`` and
    ``first`` (overwrite instead of add)."""
    words = n_tokens * -(-n_tokens // banks)
    return data.StructLayout({"offset": range(max(2, words)), "value": signed(width), "first": 1})


def score_layout(width: int) -> data.StructLayout:
    """One output word: a score and ``last`` on the final one."""
    return data.StructLayout({"value": signed(width), "last": 1})


class AccumulationBuffer(wiring.Component):
    """``S[i, j] (+)= tile`` for every tile of the array, then ``S`` out.

    Parameters
    ----------
    config : KaleidoConfig
        The array size, the tile width (``acc_width``), the bank count
        ``s_banks`` and the FIFO depth ``s_fifo_depth`` (at least
        ``array_rows * array_cols``); ``S`` entries are
        ``config.buffer_width()`` bits.
    n_tokens : int
        ``N``, the head's tokens: the banks hold ``N^2`` entries between them
        (``N * ceil(N / s_banks)`` words each).
    s_sets : int
        Copies of ``S``: 1, or 2 (each bank two memories, one read and one
        write port each: tiles go to set ``write_set`` while set
        ``read_set`` unloads; docs/CORE.md "The S tile's two sets").

    Ports
    -----
    ``tiles`` (in, ``R x C`` of :func:`~kaleido.hdl.layouts.tile_layout`):
    the array's drain ports; a tile is taken on a cycle with ``valid`` and
    not ``hold``. ``hold`` (out): some bank's FIFO cannot take this cycle's
    tiles; the array must present the same tiles again next cycle (the
    engine freezes the array and the dispatcher). ``pass_tokens`` (in,
    :func:`pass_tokens_layout` of ``config.sub_shape``) and ``pass_taken``
    (in, one bit per array, ``config.n_arrays``): the tokens of the pass
    (with small arrays, the block, hdl/array_set.py) an array's dispatcher
    takes this cycle (at most one a cycle, never while ``hold``); each
    array has its own ring, and the lanes of its PEs follow it.
    ``drained`` (out): every pass taken so far has had its last tile (its T3
    tile at the last PE) taken. ``settled`` (out): drained, and every tile is
    in ``S`` (FIFOs and pipelines empty). ``S`` needs no clearing between
    heads: the head's first batch overwrites it. ``unload`` (in; with one
    set only while settled): stream ``S`` out. ``write_set``, ``read_set``
    (in, with two sets): the set the tiles go to and the set ``unload``
    streams (the engine's control swaps them only while settled and not
    unloading). ``s`` (out stream of :func:`score_layout`):
    ``S`` row-major, ``N^2`` words, the first one cycle after ``unload``
    rises (the banks' read ports are synchronous). ``unloaded`` (out): the
    last score is taken this cycle.

    ``writes`` (out, ``R x C`` of :func:`write_layout`): each lane's tile
    taken this cycle (``enable``) and its ``S`` entry ``i * N + j``. Within a
    batch the tiles of one cycle never share an entry (docs/ENGINE.md); a
    testbench monitors this port for collisions.

    A tile taken in cycle ``t`` enters its bank's FIFO; a bank takes one
    entry a cycle from its FIFO (from ``t + 1`` on), reads the entry's word,
    and writes the sum :data:`RMW_LATENCY` - 1 cycles later; a word written
    in the cycle it is read again is forwarded.
    """

    def __init__(self, config: KaleidoConfig | None = None, n_tokens: int = 32, s_sets: int = 1):
        config = as_config(config)
        self.s_sets = check_s_sets(s_sets)
        if not isinstance(n_tokens, int) or isinstance(n_tokens, bool):
            raise TypeError(f"n_tokens must be an integer, not {n_tokens!r}")
        if n_tokens < 2:
            raise ValueError(f"n_tokens must be at least 2, not {n_tokens!r}")
        R, C = config.array_rows, config.array_cols
        if config.s_fifo_depth < R * C:
            raise ValueError(
                f"s_fifo_depth {config.s_fifo_depth!r} is below the array's {R * C} PEs "
                "(one cycle's tiles may all go to one bank)"
            )
        self._config = config
        self._n_tokens = n_tokens
        super().__init__(
            {
                "tiles": In(tile_layout(config.acc_width)).array(R, C),
                "hold": Out(1),
                "pass_tokens": In(pass_tokens_layout(*config.sub_shape, n_tokens)),
                "pass_taken": In(config.n_arrays),
                "drained": Out(1),
                "settled": Out(1),
                "unload": In(1),
                "s": Out(stream.Signature(score_layout(config.buffer_width()))),
                "unloaded": Out(1),
                "write_set": In(1),
                "read_set": In(1),
                "writes": Out(write_layout(n_tokens)).array(R, C),
            }
        )

    @property
    def n_tokens(self) -> int:
        """``N``: ``S`` is ``N x N``."""
        return self._n_tokens

    @property
    def banks(self) -> int:
        """``config.s_banks``."""
        return self._config.s_banks

    @property
    def latency(self) -> int:
        """Cycles from a tile taken (with an empty FIFO) to its sum in its
        bank: 1 (into the FIFO) + :data:`RMW_LATENCY`."""
        return 1 + RMW_LATENCY

    def elaborate(self, platform):
        m = Module()
        cfg = self._config
        R, C, N = cfg.array_rows, cfg.array_cols, self._n_tokens
        B, D = cfg.s_banks, cfg.s_fifo_depth
        L = R * C
        width = cfg.buffer_width()
        words = N * -(-N // B)
        entry_layout = bank_entry_layout(N, B, width)

        # ---- a ring of passes in flight per array ---------------------------
        # (one array of the pass's shape: one ring; with small arrays, each
        # array's blocks, ``config.sub_arrays``, hdl/array_set.py)
        r_sub, c_sub = cfg.sub_shape
        A = cfg.n_arrays
        rings, in_flights, last_pe_dones = [], [], []
        for a in range(A):
            sfx = f"_{a}" if A > 1 else ""
            ring = Array(
                Signal(pass_tokens_layout(r_sub, c_sub, N), name=f"in_flight{k}{sfx}") for k in range(RING_DEPTH)
            )
            ring_write = Signal(range(RING_DEPTH), name=f"ring_write{sfx}")
            with m.If(self.pass_taken[a]):
                m.d.sync += [ring[ring_write].eq(self.pass_tokens), ring_write.eq(ring_write + 1)]
            # passes taken whose T3 tile has not yet left the array's last PE
            in_flight = Signal(range(RING_DEPTH + 1), name=f"in_flight{sfx}")
            last_pe_done = Signal(name=f"last_pe_done{sfx}")
            m.d.sync += in_flight.eq(in_flight + self.pass_taken[a] - last_pe_done)
            rings.append(ring)
            in_flights.append(in_flight)
            last_pe_dones.append(last_pe_done)
        m.d.comb += self.drained.eq(Cat(*(f == 0 for f in in_flights)).all())
        take = ~self.hold

        # ---- one lane per PE: the tile's entry, bank and word --------------
        lane_bank, lane_entry, lane_hit = [], [], []
        for r in range(R):
            for c in range(C):
                tile = self.tiles[r][c]
                # the lane's array and its PE there
                a = (r // r_sub) * (C // c_sub) + c // c_sub
                y, x = r % r_sub, c % c_sub
                ring_read = Signal(range(RING_DEPTH), name=f"ring_read{r}_{c}")
                entry = rings[a][ring_read]
                row, col = entry.rows[y], entry.cols[x]
                phase = tile.phase
                # T2, T3 take the row follower; T1, T3 the column follower
                i = Mux(phase[1], row.follower, row.anchor)
                j = Mux(phase[0], col.follower, col.anchor)
                present = Mux(phase[1], row.follower_present, row.anchor_present) & Mux(
                    phase[0], col.follower_present, col.anchor_present
                )
                hit = Signal(name=f"hit{r}_{c}")
                bank = Signal(range(B), name=f"bank{r}_{c}")
                word = Signal(entry_layout, name=f"word{r}_{c}")
                m.d.comb += [
                    hit.eq(tile.valid & present),
                    bank.eq(s_bank(i, j, B) if B > 1 else 0),
                    word.offset.eq(s_bank_offset(i, j, N, B)),
                    word.value.eq(tile.value),
                    word.first.eq(entry.first),
                ]
                write = self.writes[r][c]
                m.d.comb += [write.address.eq(i * N + j), write.enable.eq(hit & take)]
                with m.If(tile.valid & (phase == Phase.T3) & take):
                    m.d.sync += ring_read.eq(ring_read + 1)
                if (y, x) == (r_sub - 1, c_sub - 1):
                    m.d.comb += last_pe_dones[a].eq(tile.valid & (phase == Phase.T3) & take)
                lane_bank.append(bank)
                lane_entry.append(word)
                lane_hit.append(hit)

        # ---- per bank: routing, FIFO, read-modify-write pipeline ------------
        full = []
        idle = []
        read_data = []
        unload_offset = Signal(range(max(2, words)))
        unload_advance = Signal()
        # the read ports serve the unload from its first read until its last word is taken
        unloading = Signal()
        out_valid = Signal()
        S = self.s_sets
        for b in range(B):
            # one memory per set; the read-modify-write uses the write set's
            # ports, the unload the read set's read port
            mems = [Memory(shape=signed(width), depth=words, init=[]) for _ in range(S)]
            for k, mem in enumerate(mems):
                m.submodules[f"bank{b}" + (f"_set{k}" if S > 1 else "")] = mem
            rds = [mem.read_port() for mem in mems]
            wrs = [mem.write_port() for mem in mems]
            # the slots as one signal (one process writes them: a third of
            # the buffer's Verilog, and a faster Verilator build and run)
            slots = Signal(data.ArrayLayout(entry_layout, D), name=f"fifo{b}")
            wr_ptr = Signal(range(D), name=f"fifo{b}_wr")
            rd_ptr = Signal(range(D), name=f"fifo{b}_rd")
            count = Signal(range(D + 1), name=f"fifo{b}_count")
            # lanes routed here, and each one's place after the lower lanes'
            sel = [Signal(name=f"sel{b}_{k}") for k in range(L)]
            m.d.comb += [sel[k].eq(lane_hit[k] & (lane_bank[k] == b)) for k in range(L)]
            arrivals = Signal(range(L + 1), name=f"arrivals{b}")
            m.d.comb += arrivals.eq(sum(s for s in sel))
            overflow = Signal(name=f"overflow{b}")
            m.d.comb += overflow.eq(count + arrivals > D)
            full.append(overflow)
            place = 0
            # the outer test changes no value (every lane's write needs an
            # arrival) but is the simulation's fast path: without it every
            # slot tests every lane every cycle, half of Verilator's time
            with m.If(take & (arrivals != 0)):
                for k in range(L):
                    with m.If(sel[k]):
                        m.d.sync += slots[(wr_ptr + place)[: max(1, (D - 1).bit_length())]].eq(lane_entry[k])
                    place = place + sel[k]
            pop = Signal(name=f"pop{b}")
            m.d.comb += pop.eq(count != 0)
            head = slots[rd_ptr]
            m.d.sync += [
                wr_ptr.eq(wr_ptr + Mux(take, arrivals, 0)),
                rd_ptr.eq(rd_ptr + pop),
                count.eq(count - pop + Mux(take, arrivals, 0)),
            ]
            # stage 1: the word read; stage 2: add (or overwrite) and write
            s1 = Signal(entry_layout, name=f"rmw{b}")
            s1_valid = Signal(name=f"rmw{b}_valid")
            m.d.sync += [s1.eq(head), s1_valid.eq(pop)]
            last_offset = Signal.like(s1.offset, name=f"written{b}_offset")
            last_value = Signal(signed(width), name=f"written{b}_value")
            last_valid = Signal(name=f"written{b}_valid")
            old = Signal(signed(width), name=f"old{b}")
            # the read in s1's first cycle missed the write of that cycle: forward it
            if S == 1:
                rmw_data, unload_data = rds[0].data, rds[0].data
            else:
                rmw_data = Mux(self.write_set, rds[1].data, rds[0].data)
                unload_data = Mux(self.read_set, rds[1].data, rds[0].data)
            m.d.comb += old.eq(Mux(last_valid & (last_offset == s1.offset), last_value, rmw_data))
            new = Signal(signed(width), name=f"new{b}")
            m.d.comb += new.eq(Mux(s1.first, s1.value, old + s1.value))
            for k, (rd, wr) in enumerate(zip(rds, wrs, strict=True)):
                # this set's read port serves the unload (with one set: while unloading)
                serves_unload = unloading if S == 1 else unloading & (self.read_set == k)
                writes_here = s1_valid if S == 1 else s1_valid & (self.write_set == k)
                m.d.comb += [
                    rd.addr.eq(Mux(serves_unload, unload_offset, head.offset)),
                    rd.en.eq(Mux(serves_unload, unload_advance, 1)),
                    wr.addr.eq(s1.offset),
                    wr.data.eq(new),
                    wr.en.eq(writes_here),
                ]
            m.d.sync += [last_valid.eq(s1_valid), last_offset.eq(s1.offset), last_value.eq(new)]
            idle.append((count == 0) & ~s1_valid)
            read_data.append(unload_data)
        m.d.comb += [
            self.hold.eq(Cat(*full).any()),
            self.settled.eq(self.drained & Cat(*idle).all()),
        ]

        # ---- S out, row-major ----------------------------------------------
        ui = Signal(range(N), name="unload_i")
        uj = Signal(range(N), name="unload_j")
        issued = Signal()  # the last word has been read
        out_bank = Signal(range(B), name="out_bank")
        out_last = Signal()
        m.d.comb += [
            unloading.eq(self.unload | out_valid),
            unload_advance.eq(~out_valid | self.s.ready),
            unload_offset.eq(s_bank_offset(ui, uj, N, B)),
            self.s.valid.eq(out_valid),
            self.s.payload.value.eq(Array(read_data)[out_bank]),
            self.s.payload.last.eq(out_last),
            self.unloaded.eq(self.s.valid & self.s.ready & self.s.payload.last),
        ]
        final = (ui == N - 1) & (uj == N - 1)
        with m.If(self.unloaded):
            m.d.sync += [out_valid.eq(0), issued.eq(0), ui.eq(0), uj.eq(0)]
        with m.Elif(unload_advance):
            m.d.sync += out_valid.eq(self.unload & ~issued)
            with m.If(self.unload & ~issued):
                m.d.sync += [
                    out_bank.eq(s_bank(ui, uj, B) if B > 1 else 0),
                    out_last.eq(final),
                    issued.eq(final),
                    uj.eq(Mux(uj == N - 1, 0, uj + 1)),
                    ui.eq(Mux(uj == N - 1, ui + 1, ui)),
                ]
        return m
