"""The dense Q K^T tile engine (issue 13, docs/CORE.md "The dense core"):
the baseline the Kaleido engine is compared with, with the same ports, the
same input order and the same S buffer, and no reuse.

    qk stream -> Q banks (token i in bank i mod R), K banks (token j in bank j mod C)
      dense walk: batch b, row block bi, column block bj -> one pass each:
                  the R Q words and C K words of the block (one read per bank)
                  -> operand shift registers (double-buffered: the next pass's
                  words wait in the banks' read ports) -> one channel a beat
                  -> DenseArray
      AccumulationBuffer (the Kaleido engine's): tiles -> S banks -> s stream (row-major)
    EngineControl: the head sequence (load, run, drain, unload), ``cycles``, ``busy``

Every ``S`` entry is the exact integer ``sum_c Q[i, c] K[j, c]``
(:func:`kaleido.golden.grouped.grouped_scores` with reuse off). Cycles:
:func:`kaleido.model.dense_engine_cycles`.
"""

from __future__ import annotations

from types import SimpleNamespace

from amaranth import Array, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory

from ..config import KaleidoConfig
from ..loopnest import dense_pass_beats
from ._common import as_config
from .accumulation_buffer import AccumulationBuffer
from .baseline import DenseArray
from .encoding import Phase
from .engine import check_engine_tokens, engine_signature
from .engine_control import EngineControl

__all__ = ["DenseEngine", "check_dense_engine"]


def check_dense_engine(config: KaleidoConfig, grid) -> tuple[int, int, int]:
    """Validate a dense engine geometry; returns the grid as a tuple. A
    clear ValueError names the unsupported value."""
    as_config(config)
    return check_engine_tokens(grid, "the dense engine")


class DenseEngine(wiring.Component):
    """One head ``S = Q K^T`` (exact, no reuse) for a fixed ``grid`` and
    ``config``, with :class:`~kaleido.hdl.engine.KaleidoEngine`'s ports.

    Parameters
    ----------
    config : KaleidoConfig
        The array size, the batches (``split``, ``batch``), the S banks.
    grid : (int, int, int)
        ``(T, H, W)``: only ``N = T H W`` matters (no reuse, no geometry).
    s_sets : int
        Copies of ``S`` in the accumulation buffer: 1, or 2 (the next head
        loads and computes while this one's ``S`` streams out; as the
        Kaleido engine's).

    Ports
    -----
    ``qk`` (in stream of :func:`~kaleido.hdl.qk_memory.qk_layout`): Q then
    K, token by token, batch by batch within a token (``config.batches``),
    ``2 N n_batches`` words. ``s`` (out stream of
    :func:`~kaleido.hdl.engine.s_layout`): ``S`` row-major, ``N^2`` words,
    ``last`` on the final one. ``cycles``: compute cycles of the last head
    (as the Kaleido engine's). ``busy``: a head is in flight.
    ``thresholds``: present for port compatibility, ignored.

    Memories: ``q_bank{r}`` (``ceil(N / R) n_batches`` words) and
    ``k_bank{c}`` (``ceil(N / C) n_batches`` words) of ``8 batch`` bits,
    one write and one synchronous read port each; the S banks of the
    :class:`~kaleido.hdl.accumulation_buffer.AccumulationBuffer`.

    The walk: for every batch ``b``, row block ``bi`` and column block
    ``bj``, one pass of :func:`~kaleido.loopnest.dense_pass_beats` beats (channel ``k`` of
    the batch on beat ``k``) on the :class:`~kaleido.hdl.baseline.DenseArray`;
    PE ``(r, c)`` drains ``S[bi R + r, bj C + c]``'s partial sum for the
    batch into the buffer (batch 0 overwrites, the rest add; one entry
    always goes through one PE and one bank FIFO, in order). A pass is
    taken when its operands move from the banks' read ports into the shift
    registers, the cycle before its first beat; the next pass's read is
    issued in the same cycle, so passes follow back to back.
    """

    def __init__(self, config: KaleidoConfig | None = None, grid=(2, 4, 4), s_sets: int = 1):
        config = as_config(config)
        self._grid = check_dense_engine(config, grid)
        self._config = config
        self.n_tokens = self._grid[0] * self._grid[1] * self._grid[2]
        self.s_width = config.buffer_width()
        self.accumulator = AccumulationBuffer(config, self.n_tokens, s_sets, followers=False, aligned=True)
        self.control = EngineControl(32, s_sets)
        super().__init__(engine_signature(config))

    @property
    def grid(self) -> tuple[int, int, int]:
        """``(T, H, W)`` the engine is built for."""
        return self._grid

    def elaborate(self, platform):
        m = Module()
        w = self._parts(m)
        self._load(m, w)
        self._walk_state(w)
        self._fetch(m, w)
        self._beats(m, w)
        self._buffer(m, w)
        self._head(m, w)
        return m

    def _parts(self, m: Module) -> SimpleNamespace:
        """The array, the accumulation buffer, the control, the Q and K banks: the namespace the stages share."""
        cfg = self._config
        R, C, B, N = cfg.array_rows, cfg.array_cols, cfg.batch, self.n_tokens
        table = cfg.batches
        NB = len(table)
        row_blocks, col_blocks = -(-N // R), -(-N // C)
        m.submodules.array = array = DenseArray(cfg)
        m.submodules.accumulator = acc = self.accumulator
        m.submodules.control = control = self.control

        # ---- the banks: token i of Q in bank i mod R, word (i // R) NB + b
        q_banks = [Memory(shape=8 * B, depth=row_blocks * NB, init=[]) for _ in range(R)]
        k_banks = [Memory(shape=8 * B, depth=col_blocks * NB, init=[]) for _ in range(C)]
        for r, mem in enumerate(q_banks):
            m.submodules[f"q_bank{r}"] = mem
        for c, mem in enumerate(k_banks):
            m.submodules[f"k_bank{c}"] = mem
        w = SimpleNamespace(R=R, C=C, B=B, N=N, table=table, NB=NB, row_blocks=row_blocks, col_blocks=col_blocks)
        w.array, w.acc, w.control, w.hold = array, acc, control, acc.hold
        w.q_banks, w.k_banks = q_banks, k_banks
        return w

    def _load(self, m: Module, w: SimpleNamespace) -> None:
        """The load: Q then K, token by token, batch by batch, into the banks; ``loaded`` on the last word."""
        R, C, N, NB = w.R, w.C, w.N, w.NB
        words = 2 * N * NB
        word = Signal(range(words + 1))
        side_k = Signal()  # loading K
        lane = Signal(range(max(R, C)))  # the token's bank
        base = Signal(range(max(w.row_blocks, w.col_blocks) * NB + 1))  # the token's first word in its bank
        lb = Signal(range(NB))  # the batch within the token
        take = self.qk.valid & self.qk.ready
        loaded = Signal()
        m.d.comb += [self.qk.ready.eq(w.control.load), loaded.eq(take & (word == words - 1))]
        for side, banks in ((0, w.q_banks), (1, w.k_banks)):
            for x, mem in enumerate(banks):
                wr = mem.write_port()
                m.d.comb += [
                    wr.addr.eq(base + lb),
                    wr.data.eq(self.qk.payload.as_value()),
                    wr.en.eq(take & (side_k == side) & (lane == x)),
                ]
        with m.If(take):
            m.d.sync += [word.eq(word + 1), lb.eq(lb + 1)]
            with m.If(lb == NB - 1):
                m.d.sync += [lb.eq(0), lane.eq(lane + 1)]
                with m.If(lane == Mux(side_k, C - 1, R - 1)):
                    m.d.sync += [lane.eq(0), base.eq(base + NB)]
                with m.If(word == N * NB - 1):  # Q's last word: K next
                    m.d.sync += [side_k.eq(1), lane.eq(0), base.eq(0)]
        with m.If(loaded):
            m.d.sync += [word.eq(0), side_k.eq(0), lane.eq(0), base.eq(0), lb.eq(0)]
        w.loaded = loaded

    def _walk_state(self, w: SimpleNamespace) -> None:
        """The walk's registers (fetch position, fetched pass, pass on the array) and its handshakes."""
        cfg, R, C, B, NB = self._config, w.R, w.C, w.B, w.NB
        row_blocks, col_blocks = w.row_blocks, w.col_blocks
        # ---- the walk's fetch position: batch fb, row block fi, column block fj
        fb = Signal(range(NB))
        fi = Signal(range(row_blocks))
        fj = Signal(range(col_blocks))
        q_word = Signal(range(row_blocks * NB + 1))  # fi * NB
        k_word = Signal(range(col_blocks * NB + 1))  # fj * NB
        fetching = Signal()  # passes remain to fetch
        # the fetched pass waiting in the banks' read ports
        nxt_valid = Signal()
        nxt_i = Signal.like(fi)
        nxt_j = Signal.like(fj)
        nxt_first = Signal()
        nxt_beats = Signal(range(dense_pass_beats(B, cfg) + 1))
        nxt_count = Signal(range(B + 1))
        nxt_final = Signal()
        # the pass on the array: operands in shift registers, beats left
        cur_left = Signal(range(dense_pass_beats(B, cfg) + 1))
        cur_count = Signal(range(B + 1))  # channels still to send
        cur_q = [Signal(8 * B, name=f"cur_q{r}") for r in range(R)]
        cur_k = [Signal(8 * B, name=f"cur_k{c}") for c in range(C)]

        # consume: the fetched pass moves onto the array; fetch: the next pass is read from the banks
        beat_taken = (cur_left != 0) & ~w.hold
        free = (cur_left == 0) | ((cur_left == 1) & beat_taken)
        consume = nxt_valid & free & ~w.hold
        fetch = w.control.run & fetching & (~nxt_valid | consume)
        final_pass = (fb == NB - 1) & (fi == row_blocks - 1) & (fj == col_blocks - 1)
        w.fb, w.fi, w.fj, w.q_word, w.k_word, w.fetching = fb, fi, fj, q_word, k_word, fetching
        w.nxt_valid, w.nxt_i, w.nxt_j, w.nxt_first = nxt_valid, nxt_i, nxt_j, nxt_first
        w.nxt_beats, w.nxt_count, w.nxt_final = nxt_beats, nxt_count, nxt_final
        w.cur_left, w.cur_count, w.cur_q, w.cur_k = cur_left, cur_count, cur_q, cur_k
        w.beat_taken, w.consume, w.fetch, w.final_pass = beat_taken, consume, fetch, final_pass

    def _fetch(self, m: Module, w: SimpleNamespace) -> None:
        """The fetch: the banks' reads of the next pass, the walk's step (column block, row block, batch)."""
        NB, row_blocks, col_blocks = w.NB, w.row_blocks, w.col_blocks
        fb, fi, fj, q_word, k_word, fetch = w.fb, w.fi, w.fj, w.q_word, w.k_word, w.fetch
        beats_of = Array(dense_pass_beats(n, self._config) for _, n in w.table)
        count_of = Array(n for _, n in w.table)
        q_reads = [mem.read_port() for mem in w.q_banks]
        k_reads = [mem.read_port() for mem in w.k_banks]
        m.d.comb += [rd.addr.eq(q_word + fb) for rd in q_reads] + [rd.en.eq(fetch) for rd in q_reads]
        m.d.comb += [rd.addr.eq(k_word + fb) for rd in k_reads] + [rd.en.eq(fetch) for rd in k_reads]

        with m.If(fetch):
            m.d.sync += [
                w.nxt_i.eq(fi),
                w.nxt_j.eq(fj),
                w.nxt_first.eq(fb == 0),
                w.nxt_beats.eq(beats_of[fb]),
                w.nxt_count.eq(count_of[fb]),
                w.nxt_final.eq(w.final_pass),
                fj.eq(fj + 1),
                k_word.eq(k_word + NB),
            ]
            with m.If(fj == col_blocks - 1):
                m.d.sync += [fj.eq(0), k_word.eq(0), fi.eq(fi + 1), q_word.eq(q_word + NB)]
                with m.If(fi == row_blocks - 1):
                    m.d.sync += [fi.eq(0), q_word.eq(0), fb.eq(fb + 1)]
                    with m.If(fb == NB - 1):
                        m.d.sync += [fb.eq(0), w.fetching.eq(0)]
        with m.If(fetch):
            m.d.sync += w.nxt_valid.eq(1)
        with m.Elif(w.consume):
            m.d.sync += w.nxt_valid.eq(0)
        w.q_reads, w.k_reads = q_reads, k_reads

    def _beats(self, m: Module, w: SimpleNamespace) -> None:
        """The beats: channel k of the batch on beat k, then bubbles, into the array."""
        R, C, array = w.R, w.C, w.array
        cur_left, cur_count, cur_q, cur_k = w.cur_left, w.cur_count, w.cur_q, w.cur_k
        with m.If(w.consume):
            m.d.sync += [cur_left.eq(w.nxt_beats), cur_count.eq(w.nxt_count)]
            m.d.sync += [cur_q[r].eq(w.q_reads[r].data) for r in range(R)]
            m.d.sync += [cur_k[c].eq(w.k_reads[c].data) for c in range(C)]
        with m.Elif(w.beat_taken):
            m.d.sync += [cur_left.eq(cur_left - 1), cur_count.eq(Mux(cur_count == 0, 0, cur_count - 1))]
            m.d.sync += [cur_q[r].eq(cur_q[r] >> 8) for r in range(R)]
            m.d.sync += [cur_k[c].eq(cur_k[c] >> 8) for c in range(C)]
        beat = array.slots.payload
        m.d.comb += [
            array.slots.valid.eq(cur_left != 0),
            array.hold.eq(w.hold),
            beat.ctl.slot.eq(cur_count != 0),
            beat.ctl.last.eq(cur_left == 1),
        ]
        m.d.comb += [beat.a[r].eq(cur_q[r][:8]) for r in range(R)]
        m.d.comb += [beat.b[c].eq(cur_k[c][:8]) for c in range(C)]

    def _buffer(self, m: Module, w: SimpleNamespace) -> None:
        """The accumulation buffer: the consumed pass's tokens; every drain is a T3 tile."""
        R, C, N, acc = w.R, w.C, w.N, w.acc
        tokens = acc.pass_tokens
        for side, units, block, size in (("rows", R, w.nxt_i, R), ("cols", C, w.nxt_j, C)):
            for x in range(units):
                pair = getattr(tokens, side)[x]
                tok = block * size + x
                present = tok < N
                m.d.comb += [
                    pair.anchor.eq(tok),
                    pair.follower.eq(tok),
                    pair.anchor_present.eq(present),
                    pair.follower_present.eq(present),
                ]
        m.d.comb += [tokens.first.eq(w.nxt_first), acc.pass_taken.eq(w.consume)]
        for r in range(R):
            for c in range(C):
                tile = w.array.tiles[r][c]
                m.d.comb += [
                    acc.tiles[r][c].valid.eq(tile.valid),
                    acc.tiles[r][c].value.eq(tile.value),
                    acc.tiles[r][c].phase.eq(Phase.T3),
                ]
        wiring.connect(m, acc.s, wiring.flipped(self.s))

    def _head(self, m: Module, w: SimpleNamespace) -> None:
        """The head sequence: the walk's start, the control's handshakes, ``cycles`` and ``busy``."""
        acc, control = w.acc, w.control
        with m.If(w.loaded):
            m.d.sync += [w.fb.eq(0), w.fi.eq(0), w.fj.eq(0), w.q_word.eq(0), w.k_word.eq(0), w.fetching.eq(1)]
        m.d.comb += [
            acc.unload.eq(control.unload),
            acc.write_set.eq(control.write_set),
            acc.read_set.eq(control.read_set),
            control.loaded.eq(w.loaded),
            control.done.eq(w.consume & w.nxt_final),
            control.drained.eq(acc.settled),
            control.unloaded.eq(acc.unloaded),
            self.cycles.eq(control.cycles),
            self.busy.eq(control.busy),
        ]
