"""Hamming-clustering scheduler (paper fig. 16 left, spec sec. 8)."""

from types import SimpleNamespace

from amaranth import Array, Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ..config import CLUSTERS, LFSR_SEED, LFSR_TAPS, LFSR_WIDTH, KaleidoConfig, lfsr_steps, pivot_bits
from ._common import as_config, popcount

__all__ = ["Scheduler", "scheduler_in_layout", "scheduler_out_layout"]


def scheduler_in_layout(batch: int) -> data.StructLayout:
    """One reuse string; ``last`` ends the stream (a short final window)."""
    return data.StructLayout({"string": batch, "last": 1})


def scheduler_out_layout(window: int) -> data.StructLayout:
    """One queue position of the window, in cluster order; ``last`` marks
    the window's final position."""
    return data.StructLayout({"index": range(window), "cluster": range(CLUSTERS), "last": 1})


def _lfsr_leap(state, steps: int):
    """``steps`` steps of the configuration's LFSR as combinational logic."""
    bits = list(state)
    for _ in range(steps):
        fb = bits[LFSR_TAPS[0]]
        for t in LFSR_TAPS[1:]:
            fb = fb ^ bits[t]
        bits = [fb] + bits[:-1]
    return Cat(*bits)


class Scheduler(wiring.Component):
    """Windows of up to ``config.window("row")`` reuse strings (64 on the
    4x4 array) in (``i``), queue positions out in cluster order (``o``).

    Per window: LOAD takes one string per cycle into the string queue (a
    memory with one write port and one registered read port, as a register
    file is built) until a window's worth arrived or ``last``; DRAW takes
    one leap-forward LFSR draw per cycle until ``min(4, m)`` distinct pivots
    below ``m`` are chosen (each pivot's string is read from the queue and
    written a cycle later);
    ASSIGN sends one string per cycle to the nearest (Hamming distance by XOR
    and an adder tree) non-full cluster, ties to the lowest index, in two
    pipeline stages (string read, distances registered, then the argmin and
    the cluster write; issue 20); OUTPUT streams clusters 0..3 (one position
    per cycle). A window therefore takes ``m + draws + (m + 2) + m`` cycles (plus one per
    empty cluster skipped) with no stall. The LFSR state carries over
    windows; it starts at ``LFSR_SEED`` after reset.
    """

    def __init__(self, config: KaleidoConfig | None = None):
        config = as_config(config)
        self._config = config
        self._window = config.window("row")
        super().__init__(
            {
                "i": In(stream.Signature(scheduler_in_layout(config.batch))),
                "o": Out(stream.Signature(scheduler_out_layout(self._window))),
            }
        )

    @property
    def window(self) -> int:
        """Strings per window."""
        return self._window

    def elaborate(self, platform):
        m = Module()
        w = self._registers(m)
        self._outputs(m, w)
        with m.FSM() as fsm:
            with m.State("LOAD"):
                self._load(m, w)
            with m.State("DRAW"):
                self._draw(m, w)
            with m.State("ASSIGN"):
                self._assign(m, w)
            with m.State("SKIP_EMPTY"):
                self._skip_empty(m, w)
            with m.State("OUTPUT"):
                self._output(m, w)
        m.d.comb += [self.i.ready.eq(fsm.ongoing("LOAD")), self.o.valid.eq(fsm.ongoing("OUTPUT"))]
        return m

    def _registers(self, m: Module) -> SimpleNamespace:
        """The window's registers, the delayed cluster write, capacity and pivots: the namespace the states share."""
        B = self._config.batch
        K = CLUSTERS
        WINDOW = self._window
        cap_max = WINDOW // K
        # the string queue: a memory with one write port (LOAD) and one
        # registered read port (DRAW's pivots, ASSIGN's stage 0), as a
        # register file or SRAM macro is built
        m.submodules.queue = queue = Memory(shape=B, depth=WINDOW, init=[])
        q_wr, q_rd = queue.write_port(), queue.read_port()
        clusters = [Array(Signal(range(WINDOW), name=f"c{j}_{i}") for i in range(cap_max)) for j in range(K)]
        fill = Array(Signal(range(cap_max + 1), name=f"fill{j}") for j in range(K))
        pivots = Array(Signal(range(WINDOW), name=f"pivot{j}") for j in range(K))
        pivot_str = [Signal(B, name=f"pivot_str{j}") for j in range(K)]
        n_piv = Signal(range(K + 1))
        count = Signal(range(WINDOW + 1))  # m, strings in the window
        pos = Signal(range(WINDOW + 1))
        lfsr = Signal(LFSR_WIDTH, init=LFSR_SEED)
        out_cluster = Signal(range(K))
        out_pos = Signal(range(cap_max + 1))
        # the ASSIGN pipeline registers: the string read (the queue's read
        # register) and its position (stage 0), its distances to the pivots
        # and its position (stage 1)
        s_r = q_rd.data
        pos_s = Signal(range(WINDOW))
        s_v = Signal()
        dist_r = [Signal(range(B + 1), name=f"dist{j}") for j in range(K)]
        pos_r = Signal(range(WINDOW))
        assign_v = Signal()
        cap_r = Signal(range(cap_max + 1))
        wr_v = Signal()
        wr_cluster = Signal(range(K))
        wr_index = Signal(range(cap_max))
        wr_pos = Signal(range(WINDOW))
        m.d.sync += wr_v.eq(0)
        with m.If(wr_v):
            for j in range(K):
                with m.If(wr_cluster == j):
                    m.d.sync += clusters[j][wr_index].eq(wr_pos)
        # a pivot drawn is written a cycle later, from the queue's read register
        piv_v, piv_j = Signal(), Signal(range(K))
        m.d.sync += piv_v.eq(0)
        with m.If(piv_v):
            for j in range(K):
                with m.If(piv_j == j):
                    m.d.sync += pivot_str[j].eq(q_rd.data)
        has_pivot = [Signal(name=f"has_pivot{j}") for j in range(K)]

        cap = Signal(range(cap_max + 1))
        m.d.comb += cap.eq((count + (K - 1)) >> 2)
        need_piv = Signal(range(K + 1))
        m.d.comb += need_piv.eq(Mux(count < K, count, K))
        w = SimpleNamespace(B=B, K=K, WINDOW=WINDOW, q_wr=q_wr, q_rd=q_rd, clusters=clusters, fill=fill, pivots=pivots)
        w.piv_v, w.piv_j = piv_v, piv_j
        w.pivot_str, w.n_piv, w.count, w.pos, w.lfsr = pivot_str, n_piv, count, pos, lfsr
        w.out_cluster, w.out_pos, w.s_r, w.pos_s, w.s_v, w.dist_r = out_cluster, out_pos, s_r, pos_s, s_v, dist_r
        w.pos_r, w.assign_v, w.cap_r, w.has_pivot, w.cap, w.need_piv = pos_r, assign_v, cap_r, has_pivot, cap, need_piv
        w.wr_v, w.wr_cluster, w.wr_index, w.wr_pos = wr_v, wr_cluster, wr_index, wr_pos
        return w

    def _outputs(self, m: Module, w: SimpleNamespace) -> None:
        """The output stream's payload and ``is_last``, outside the state machine."""
        # The stream outputs are driven outside the FSM body, from
        # fsm.ongoing(): that emits continuous assignments. Decoded inside a
        # state they become always @* blocks, which Icarus under cocotb leaves
        # at X until the state first changes.
        fill, out_cluster, out_pos = w.fill, w.out_cluster, w.out_pos
        later = Const(0)
        for j in range(w.K):
            later = later | ((j > out_cluster) & (fill[j] != 0))
        is_last = Signal()
        m.d.comb += [
            is_last.eq((out_pos + 1 == fill[out_cluster]) & ~later),
            self.o.payload.index.eq(Array(w.clusters)[out_cluster][out_pos]),
            self.o.payload.cluster.eq(out_cluster),
            self.o.payload.last.eq(is_last),
        ]
        w.is_last = is_last

    def _load(self, m: Module, w: SimpleNamespace) -> None:
        """LOAD: one string a cycle into the queue until a window's worth or ``last``."""
        count = w.count
        m.d.comb += [w.q_wr.addr.eq(count), w.q_wr.data.eq(self.i.payload.string), w.q_wr.en.eq(self.i.valid)]
        with m.If(self.i.valid):
            m.d.sync += count.eq(count + 1)
            with m.If(self.i.payload.last | (count == w.WINDOW - 1)):
                m.d.sync += w.n_piv.eq(0)
                m.next = "DRAW"

    def _draw(self, m: Module, w: SimpleNamespace) -> None:
        """DRAW: one leap-forward LFSR draw a cycle until ``min(4, m)`` distinct pivots below ``m``."""
        K, n_piv, pivots, need_piv = w.K, w.n_piv, w.pivots, w.need_piv
        nxt = _lfsr_leap(w.lfsr, lfsr_steps(w.WINDOW))
        idx = nxt[: pivot_bits(w.WINDOW)]
        dup = Const(0)
        for j in range(K):
            dup = dup | ((j < n_piv) & (pivots[j] == idx))
        m.d.sync += w.lfsr.eq(nxt)
        m.d.comb += w.q_rd.addr.eq(idx)  # the pivot's string, written to pivot_str next cycle
        with m.If((idx < w.count) & ~dup):
            m.d.sync += [pivots[n_piv].eq(idx), n_piv.eq(n_piv + 1), w.piv_v.eq(1), w.piv_j.eq(n_piv)]
            with m.If(n_piv + 1 == need_piv):
                m.d.sync += [w.pos.eq(0), w.s_v.eq(0), w.assign_v.eq(0)] + [f.eq(0) for f in w.fill]
                # the window's capacity and pivot count, fixed for ASSIGN (registered: off its path)
                m.d.sync += [w.cap_r.eq(w.cap)] + [w.has_pivot[j].eq(j < need_piv) for j in range(K)]
                m.next = "ASSIGN"

    def _assign(self, m: Module, w: SimpleNamespace) -> None:
        """ASSIGN: each string to its nearest non-full cluster, in three pipeline stages."""
        # Three stages (issue 20): stage 0 reads string ``pos`` out
        # of the queue memory into its read register ``s_r``; stage 1
        # registers its Hamming distance to each pivot (XOR and a
        # balanced adder tree); stage 2 sends the string to its
        # nearest non-full cluster. Distances do not depend on the
        # fills, so the stages never conflict; the window takes two
        # cycles more than one string per cycle (``schedule_cycles``).
        K, pos, count, s_r, s_v, fill = w.K, w.pos, w.count, w.s_r, w.s_v, w.fill
        m.d.comb += w.q_rd.addr.eq(pos)  # stage 0: the queue's read register is s_r
        with m.If(pos < count):
            m.d.sync += [w.pos_s.eq(pos), pos.eq(pos + 1)]
        m.d.sync += s_v.eq(pos < count)
        with m.If(s_v):
            for j in range(K):
                m.d.sync += w.dist_r[j].eq(popcount(s_r ^ w.pivot_str[j]))
            m.d.sync += w.pos_r.eq(w.pos_s)
        m.d.sync += w.assign_v.eq(s_v)
        best = self._nearest(w)
        with m.If(w.assign_v):
            # the cluster entry is written a cycle later (wr_*): only
            # the fill count is on the argmin's path
            m.d.sync += [w.wr_v.eq(1), w.wr_cluster.eq(best), w.wr_pos.eq(w.pos_r)]
            for j in range(K):
                with m.If(best == j):
                    m.d.sync += [w.wr_index.eq(fill[j]), fill[j].eq(fill[j] + 1)]
            with m.If(w.pos_r + 1 == count):
                m.d.sync += [w.out_cluster.eq(0), w.out_pos.eq(0), s_v.eq(0), w.assign_v.eq(0)]
                m.next = "SKIP_EMPTY"

    @staticmethod
    def _nearest(w: SimpleNamespace) -> Value:
        """ASSIGN's argmin: the nearest non-full cluster, ties to the lowest index."""

        # a tournament (pairs, then their winners) instead of a chain
        def pick(a, b):
            (ia, da, oa), (ib, db, ob) = a, b
            first = ~ob | (oa & (da <= db))  # neither ok: the lower index, as the chain did
            return Mux(first, ia, ib), Mux(first, da, db), oa | ob

        K, fill, has_pivot, cap_r = w.K, w.fill, w.has_pivot, w.cap_r
        cands = [(Const(j, range(K)), w.dist_r[j], has_pivot[j] & (fill[j] < cap_r)) for j in range(K)]
        while len(cands) > 1:
            cands = [pick(cands[i], cands[i + 1]) if i + 1 < len(cands) else cands[i] for i in range(0, len(cands), 2)]
        return cands[0][0]

    def _skip_empty(self, m: Module, w: SimpleNamespace) -> None:
        """SKIP_EMPTY: advance to the next cluster that has entries to send."""
        out_cluster, out_pos = w.out_cluster, w.out_pos
        with m.If(out_pos < w.fill[out_cluster]):
            m.next = "OUTPUT"
        with m.Elif(out_cluster == w.K - 1):
            m.d.sync += w.count.eq(0)
            m.next = "LOAD"
        with m.Else():
            m.d.sync += [out_cluster.eq(out_cluster + 1), out_pos.eq(0)]

    def _output(self, m: Module, w: SimpleNamespace) -> None:
        """OUTPUT: one queue position a cycle, cluster by cluster."""
        out_cluster, out_pos = w.out_cluster, w.out_pos
        with m.If(self.o.ready):
            with m.If(w.is_last):
                m.d.sync += w.count.eq(0)
                m.next = "LOAD"
            with m.Elif(out_pos + 1 == w.fill[out_cluster]):
                m.d.sync += [out_cluster.eq(out_cluster + 1), out_pos.eq(0)]
                m.next = "SKIP_EMPTY"
            with m.Else():
                m.d.sync += out_pos.eq(out_pos + 1)
