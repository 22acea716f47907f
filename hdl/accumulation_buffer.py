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
array (and dispatcher) freeze with the tiles on their ports. Each bank is
an :class:`~kaleido.hdl.s_bank.SBank`, the same module for every bank.
"""

from __future__ import annotations

import math

from amaranth import Array, Cat, Module, Mux, Signal, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..checks import check_s_sets
from ..config import RMW_LATENCY, KaleidoConfig, s_bank, s_bank_offset
from ._common import as_config
from .encoding import Phase
from .layouts import tile_layout
from .s_bank import SBank

__all__ = [
    "AccumulationBuffer",
    "RMW_LATENCY",
    "bank_entry_layout",
    "bank_words",
    "pass_tokens_layout",
    "ring_depth",
    "score_layout",
    "token_pair_layout",
    "write_layout",
]


def ring_depth(config: KaleidoConfig) -> int:
    """Passes in flight a ring holds for one array of ``config.sub_shape``
    (``r x c`` PEs): a pass lasts at least 4 cycles (four phases of at
    least one beat), the dispatcher takes a pass the cycle after the last
    beat of the pass two before it (two pass buffers), and a pass's last
    tile leaves ``r + c + 1`` cycles after its last beat; so pass ``k + m``
    is taken at least ``4 (m - 2) + 1`` cycles after pass ``k``'s last beat,
    and at most ``3 + ceil((r + c + 2) / 4)`` passes are in flight: 4 on a
    1x1 array, 8 (the power of two above 6) on a 4x4 one."""
    r, c = config.sub_shape
    need = 3 + -(-(r + c + 2) // 4)
    return 1 << (need - 1).bit_length()


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


def bank_words(n_tokens: int, banks: int) -> int:
    """Words of one bank: ``N * ceil(N / banks)``."""
    return n_tokens * -(-n_tokens // banks)


def bank_entry_layout(n_tokens: int, banks: int, width: int) -> data.StructLayout:
    """One FIFO entry of a bank: the word ``offset`` in the bank
    (:func:`kaleido.config.s_bank_offset`), the tile ``value`` and
    ``first`` (overwrite instead of add)."""
    words = bank_words(n_tokens, banks)
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
    followers : bool
        Whether tiles of a pass take its units' followers (the Kaleido
        engine: phases T0..T3, a pass's last tile in T3). Off (the dense
        engine): every tile is its pass's only one, at the anchors, and the
        tiles' ``phase`` is not read (no constant input left for synthesis
        to propagate across the module boundary).
    aligned : bool
        Whether every pass covers an array-aligned block of tokens (row
        unit ``y`` holds a token ``= y mod R``, column unit ``x`` one
        ``= x mod C``: the dense engine's). Then a lane ``(r, c)`` only ever
        reaches the banks ``b = r + c (mod g)``, ``g = gcd(R, C, s_banks)``,
        and each bank's FIFO is wired to those lanes only (with ``g = 4``, 4
        of 16): the same behaviour, a quarter of the FIFOs' write crossbar,
        and a hierarchical synthesis sees what a flattened one would infer.
        Needs one array (``sub_shape`` the whole array).

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

    def __init__(
        self,
        config: KaleidoConfig | None = None,
        n_tokens: int = 32,
        s_sets: int = 1,
        *,
        followers: bool = True,
        aligned: bool = False,
    ):
        config = as_config(config)
        self._followers = bool(followers)
        if aligned and config.sub_shape != (config.array_rows, config.array_cols):
            raise ValueError(f"aligned passes need one array, not sub-arrays of {config.sub_shape!r}")
        self._aligned = bool(aligned)
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

    def lane_banks(self, lane: int) -> range:
        """The banks lane ``lane`` (PE ``(lane // C, lane % C)``) can
        reach: all, or with ``aligned`` passes those ``= r + c`` modulo
        ``gcd(R, C, s_banks)``."""
        cfg = self._config
        R, C, B = cfg.array_rows, cfg.array_cols, cfg.s_banks
        if not 0 <= lane < R * C:
            raise ValueError(f"lane {lane!r} is not one of the array's {R * C} PEs")
        g = math.gcd(R, C, B) if self._aligned else 1
        return range((lane // C + lane % C) % g, B, g)

    @property
    def latency(self) -> int:
        """Cycles from a tile taken (with an empty FIFO) to its sum in its
        bank: 1 (into the FIFO) + :data:`RMW_LATENCY`."""
        return 1 + RMW_LATENCY

    def elaborate(self, platform):
        m = Module()
        rings, empty, last_pe_done = self._rings(m)
        m.d.comb += self.drained.eq(Cat(*empty).all())
        lanes = self._lanes(m, rings, last_pe_done)
        banks = self._banks(m, lanes)
        m.d.comb += [
            self.hold.eq(Cat(*(b.full for b in banks)).any()),
            self.settled.eq(self.drained & Cat(*(b.idle for b in banks)).all()),
        ]
        self._unload(m, banks)
        return m

    def _rings(self, m: Module) -> tuple[list, list, list]:
        """A ring of passes in flight per array (one array of the pass's
        shape: one ring; with small arrays, each array's blocks,
        ``config.sub_arrays``, hdl/array_set.py). Returns the rings and, per
        array, ``in_flight == 0`` and ``last_pe_done`` (the array's last
        PE's last tile of a pass taken, driven by :meth:`_lanes`)."""
        cfg, N = self._config, self._n_tokens
        r_sub, c_sub = cfg.sub_shape
        A = cfg.n_arrays
        rings, empty, last_pe_dones = [], [], []
        for a in range(A):
            sfx = f"_{a}" if A > 1 else ""
            ring = Array(
                Signal(pass_tokens_layout(r_sub, c_sub, N), name=f"in_flight{k}{sfx}") for k in range(ring_depth(cfg))
            )
            ring_write = Signal(range(ring_depth(cfg)), name=f"ring_write{sfx}")
            with m.If(self.pass_taken[a]):
                m.d.sync += [ring[ring_write].eq(self.pass_tokens), ring_write.eq(ring_write + 1)]
            # passes taken whose T3 tile has not yet left the array's last PE
            in_flight = Signal(range(ring_depth(cfg) + 1), name=f"in_flight{sfx}")
            last_pe_done = Signal(name=f"last_pe_done{sfx}")
            m.d.sync += in_flight.eq(in_flight + self.pass_taken[a] - last_pe_done)
            rings.append(ring)
            empty.append(in_flight == 0)
            last_pe_dones.append(last_pe_done)
        return rings, empty, last_pe_dones

    def _lanes(self, m: Module, rings: list, last_pe_done: list) -> list[tuple[Signal, Signal, Signal]]:
        """One lane per PE: the ``S`` entry of the tile it drains (its pass
        from its array's ring, one step per T3 tile; with ``followers``
        off, every tile is its pass's only one, at the anchors). Returns
        per lane (``hit``, bank, FIFO entry)."""
        cfg, N, B = self._config, self._n_tokens, self._config.s_banks
        R, C = cfg.array_rows, cfg.array_cols
        r_sub, c_sub = cfg.sub_shape
        entry_layout = bank_entry_layout(N, B, cfg.buffer_width())
        take = ~self.hold
        lanes = []
        for r in range(R):
            for c in range(C):
                tile = self.tiles[r][c]
                # the lane's array and its PE there
                a = (r // r_sub) * (C // c_sub) + c // c_sub
                y, x = r % r_sub, c % c_sub
                ring_read = Signal(range(ring_depth(cfg)), name=f"ring_read{r}_{c}")
                entry = rings[a][ring_read]
                i, j, present = self._tile_entry(tile.phase, entry.rows[y], entry.cols[x])
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
                ends_pass = tile.valid & take
                if self._followers:
                    ends_pass = ends_pass & (tile.phase == Phase.T3)
                with m.If(ends_pass):
                    m.d.sync += ring_read.eq(ring_read + 1)
                if (y, x) == (r_sub - 1, c_sub - 1):
                    m.d.comb += last_pe_done[a].eq(ends_pass)
                lanes.append((hit, bank, word))
        return lanes

    def _tile_entry(self, phase, row, col) -> tuple:
        """A tile's ``S`` entry ``(i, j)`` and whether both its tokens are
        present: T2, T3 take the row follower, T1, T3 the column follower;
        without followers, the anchors."""
        if not self._followers:
            return row.anchor, col.anchor, row.anchor_present & col.anchor_present
        i = Mux(phase[1], row.follower, row.anchor)
        j = Mux(phase[0], col.follower, col.anchor)
        present = Mux(phase[1], row.follower_present, row.anchor_present) & Mux(
            phase[0], col.follower_present, col.anchor_present
        )
        return i, j, present

    def _banks(self, m: Module, lanes: list) -> list[SBank]:
        """Per bank: the lanes routed to it (:class:`~kaleido.hdl.s_bank.SBank`,
        the same module for every bank)."""
        cfg, N, B = self._config, self._n_tokens, self._config.s_banks
        width = cfg.buffer_width()
        entry_layout = bank_entry_layout(N, B, width)
        banks = []
        for b in range(B):
            reach = [lane for k, lane in enumerate(lanes) if b in self.lane_banks(k)]
            bank = SBank(entry_layout, len(reach), cfg.s_fifo_depth, bank_words(N, B), width, self.s_sets)
            m.submodules[f"bank{b}"] = bank
            for k, (hit, lane_bank, word) in enumerate(reach):
                m.d.comb += [bank.sel[k].eq(hit & (lane_bank == b)), bank.entries[k].eq(word)]
            m.d.comb += [bank.take.eq(~self.hold), bank.write_set.eq(self.write_set), bank.read_set.eq(self.read_set)]
            banks.append(bank)
        return banks

    def _unload(self, m: Module, banks: list[SBank]) -> None:
        """``S`` out, row-major: one word a cycle from the banks' read
        ports (synchronous: the first one cycle after ``unload`` rises)."""
        N, B = self._n_tokens, self._config.s_banks
        unload_offset = Signal.like(banks[0].unload_offset)
        unload_advance = Signal()
        # the read ports serve the unload from its first read until its last word is taken
        unloading = Signal()
        out_valid = Signal()
        for bank in banks:
            m.d.comb += [
                bank.unloading.eq(unloading),
                bank.unload_offset.eq(unload_offset),
                bank.unload_advance.eq(unload_advance),
            ]
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
            self.s.payload.value.eq(Array(b.data for b in banks)[out_bank]),
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
