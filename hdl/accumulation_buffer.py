"""The engine's accumulation buffer (docs/ENGINE.md, "The accumulation
buffer"): the array's tiles into ``S`` through one read-modify-write lane
per PE, then ``S`` out row-major.

Every pass the dispatcher takes leaves its tokens in a ring of the passes
in flight; each PE's lane follows the ring through its own pointer (one
step per T3 tile) to find the ``S`` entry of each tile it drains.
"""

from __future__ import annotations

from amaranth import Array, Module, Mux, Signal, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ..config import KaleidoConfig
from ._common import as_config
from .encoding import Phase
from .layouts import tile_layout

__all__ = [
    "AccumulationBuffer",
    "RING_DEPTH",
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


def score_layout(width: int) -> data.StructLayout:
    """One output word: a score and ``last`` on the final one."""
    return data.StructLayout({"value": signed(width), "last": 1})


class AccumulationBuffer(wiring.Component):
    """``S[i, j] (+)= tile`` for every tile of the array, then ``S`` out.

    Parameters
    ----------
    config : KaleidoConfig
        The array size and the tile width (``acc_width``); ``S`` entries are
        ``config.buffer_width()`` bits.
    n_tokens : int
        ``N``, the head's tokens: ``S`` holds ``N^2`` entries.

    Ports
    -----
    ``tiles`` (in, ``R x C`` of :func:`~kaleido.hdl.layouts.tile_layout`):
    the array's drain ports. ``pass_tokens`` (in,
    :func:`pass_tokens_layout`) and ``pass_taken`` (in): the tokens of the
    pass the dispatcher takes this cycle. ``drained`` (out): every pass
    taken so far has had its last tile (its T3 tile at the last PE). ``S``
    needs no clearing between heads: the head's first batch overwrites it.
    ``unload`` (in): stream ``S`` out. ``s`` (out stream of
    :func:`score_layout`): ``S`` row-major, ``N^2`` words. ``unloaded``
    (out): the last score is taken this cycle.

    ``writes`` (out, ``R x C`` of :func:`write_layout`): each lane's write
    this cycle. Within a batch the writes of one cycle never share an
    entry (docs/ENGINE.md); a testbench monitors this port for collisions.

    A tile is added in the cycle it leaves its PE (``latency`` 0); the
    buffer never stalls the array.
    """

    def __init__(self, config: KaleidoConfig | None = None, n_tokens: int = 32):
        config = as_config(config)
        if not isinstance(n_tokens, int) or isinstance(n_tokens, bool):
            raise TypeError(f"n_tokens must be an integer, not {n_tokens!r}")
        if n_tokens < 2:
            raise ValueError(f"n_tokens must be at least 2, not {n_tokens!r}")
        self._config = config
        self._n_tokens = n_tokens
        R, C = config.array_rows, config.array_cols
        super().__init__(
            {
                "tiles": In(tile_layout(config.acc_width)).array(R, C),
                "pass_tokens": In(pass_tokens_layout(R, C, n_tokens)),
                "pass_taken": In(1),
                "drained": Out(1),
                "unload": In(1),
                "s": Out(stream.Signature(score_layout(config.buffer_width()))),
                "unloaded": Out(1),
                "writes": Out(write_layout(n_tokens)).array(R, C),
            }
        )

    @property
    def n_tokens(self) -> int:
        """``N``: ``S`` is ``N x N``."""
        return self._n_tokens

    @property
    def latency(self) -> int:
        """Cycles from a tile on ``tiles`` to its sum in ``S``: 0 (written
        at the end of the cycle it arrives)."""
        return 0

    def elaborate(self, platform):
        m = Module()
        cfg = self._config
        R, C, N = cfg.array_rows, cfg.array_cols, self._n_tokens
        m.submodules.scores = scores = Memory(shape=signed(cfg.buffer_width()), depth=N * N, init=[])

        # ---- the ring of passes in flight --------------------------------
        ring = Array(Signal(pass_tokens_layout(R, C, N), name=f"in_flight{k}") for k in range(RING_DEPTH))
        ring_write = Signal(range(RING_DEPTH))
        with m.If(self.pass_taken):
            m.d.sync += [ring[ring_write].eq(self.pass_tokens), ring_write.eq(ring_write + 1)]
        # passes taken whose T3 tile has not yet left the last PE
        in_flight = Signal(range(RING_DEPTH + 1))
        last_pe_done = Signal()
        m.d.sync += in_flight.eq(in_flight + self.pass_taken - last_pe_done)
        m.d.comb += self.drained.eq(in_flight == 0)

        # ---- one accumulate lane per PE ----------------------------------
        for r in range(R):
            for c in range(C):
                tile = self.tiles[r][c]
                ring_read = Signal(range(RING_DEPTH), name=f"ring_read{r}_{c}")
                entry = ring[ring_read]
                row, col = entry.rows[r], entry.cols[c]
                phase = tile.phase
                # T2, T3 take the row follower; T1, T3 the column follower
                i = Mux(phase[1], row.follower, row.anchor)
                j = Mux(phase[0], col.follower, col.anchor)
                present = Mux(phase[1], row.follower_present, row.anchor_present) & Mux(
                    phase[0], col.follower_present, col.anchor_present
                )
                write = self.writes[r][c]
                m.d.comb += [write.address.eq(i * N + j), write.enable.eq(tile.valid & present)]
                read_port, write_port = scores.read_port(domain="comb"), scores.write_port()
                m.d.comb += [
                    read_port.addr.eq(write.address),
                    write_port.addr.eq(write.address),
                    write_port.en.eq(write.enable),
                    write_port.data.eq(Mux(entry.first, tile.value, read_port.data + tile.value)),
                ]
                with m.If(tile.valid & (phase == Phase.T3)):
                    m.d.sync += ring_read.eq(ring_read + 1)
                if (r, c) == (R - 1, C - 1):
                    m.d.comb += last_pe_done.eq(tile.valid & (phase == Phase.T3))

        # ---- S out, row-major ----------------------------------------------
        out_address = Signal(range(N * N))
        out_port = scores.read_port(domain="comb")
        m.d.comb += [
            out_port.addr.eq(out_address),
            self.s.valid.eq(self.unload),
            self.s.payload.value.eq(out_port.data),
            self.s.payload.last.eq(out_address == N * N - 1),
            self.unloaded.eq(self.s.valid & self.s.ready & self.s.payload.last),
        ]
        with m.If(self.s.valid & self.s.ready):
            m.d.sync += out_address.eq(Mux(self.s.payload.last, 0, out_address + 1))
        return m
