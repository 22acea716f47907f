"""Hamming-clustering scheduler (paper fig. 16 left, spec sec. 8)."""

from amaranth import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
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

    Per window: LOAD takes one string per cycle into the string queue until
    a window's worth arrived or ``last``; DRAW takes one leap-forward LFSR draw
    per cycle until ``min(4, m)`` distinct pivots below ``m`` are chosen;
    ASSIGN sends one string per cycle to the nearest (Hamming distance by XOR
    and an adder tree) non-full cluster, ties to the lowest index; OUTPUT
    streams clusters 0..3 (one position per cycle). A window therefore takes
    ``m + draws + m + m`` cycles with no stall. The LFSR state carries over
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
        B = self._config.batch
        K = CLUSTERS
        WINDOW = self._window
        cap_max = WINDOW // K
        queue = Array(Signal(B, name=f"q{i}") for i in range(WINDOW))
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

        cap = Signal(range(cap_max + 1))
        m.d.comb += cap.eq((count + (K - 1)) >> 2)
        need_piv = Signal(range(K + 1))
        m.d.comb += need_piv.eq(Mux(count < K, count, K))

        # The stream outputs are driven outside the FSM body, from
        # fsm.ongoing(): that emits continuous assignments. Decoded inside a
        # state they become always @* blocks, which Icarus under cocotb leaves
        # at X until the state first changes.
        later = Const(0)
        for j in range(K):
            later = later | ((j > out_cluster) & (fill[j] != 0))
        is_last = Signal()
        m.d.comb += [
            is_last.eq((out_pos + 1 == fill[out_cluster]) & ~later),
            self.o.payload.index.eq(Array(clusters)[out_cluster][out_pos]),
            self.o.payload.cluster.eq(out_cluster),
            self.o.payload.last.eq(is_last),
        ]
        with m.FSM() as fsm:
            with m.State("LOAD"):
                with m.If(self.i.valid):
                    m.d.sync += [queue[count].eq(self.i.payload.string), count.eq(count + 1)]
                    with m.If(self.i.payload.last | (count == WINDOW - 1)):
                        m.d.sync += n_piv.eq(0)
                        m.next = "DRAW"
            with m.State("DRAW"):
                nxt = _lfsr_leap(lfsr, lfsr_steps(WINDOW))
                idx = nxt[: pivot_bits(WINDOW)]
                dup = Const(0)
                for j in range(K):
                    dup = dup | ((j < n_piv) & (pivots[j] == idx))
                m.d.sync += lfsr.eq(nxt)
                with m.If((idx < count) & ~dup):
                    m.d.sync += [pivots[n_piv].eq(idx), n_piv.eq(n_piv + 1)]
                    for j in range(K):
                        with m.If(n_piv == j):
                            m.d.sync += pivot_str[j].eq(queue[idx])
                    with m.If(n_piv + 1 == need_piv):
                        m.d.sync += [pos.eq(0)] + [f.eq(0) for f in fill]
                        m.next = "ASSIGN"
            with m.State("ASSIGN"):
                s = queue[pos]
                best = Const(0, range(K))
                best_d = Const(B + 1, range(B + 2))
                for j in range(K):
                    x = s ^ pivot_str[j]
                    d = Signal(range(B + 1), name=f"dist{j}")
                    m.d.comb += d.eq(popcount(x))  # balanced adder tree
                    ok = (j < need_piv) & (fill[j] < cap)
                    take = ok & (d < best_d)
                    best = Mux(take, j, best)
                    best_d = Mux(take, d, best_d)
                for j in range(K):
                    with m.If(best == j):
                        m.d.sync += [clusters[j][fill[j]].eq(pos), fill[j].eq(fill[j] + 1)]
                m.d.sync += pos.eq(pos + 1)
                with m.If(pos + 1 == count):
                    m.d.sync += [out_cluster.eq(0), out_pos.eq(0)]
                    m.next = "SKIP_EMPTY"
            with m.State("SKIP_EMPTY"):
                # advance to the next cluster that has entries to send
                with m.If(out_pos < fill[out_cluster]):
                    m.next = "OUTPUT"
                with m.Elif(out_cluster == K - 1):
                    m.d.sync += count.eq(0)
                    m.next = "LOAD"
                with m.Else():
                    m.d.sync += [out_cluster.eq(out_cluster + 1), out_pos.eq(0)]
            with m.State("OUTPUT"):
                with m.If(self.o.ready):
                    with m.If(is_last):
                        m.d.sync += count.eq(0)
                        m.next = "LOAD"
                    with m.Elif(out_pos + 1 == fill[out_cluster]):
                        m.d.sync += [out_cluster.eq(out_cluster + 1), out_pos.eq(0)]
                        m.next = "SKIP_EMPTY"
                    with m.Else():
                        m.d.sync += out_pos.eq(out_pos + 1)
        m.d.comb += [self.i.ready.eq(fsm.ongoing("LOAD")), self.o.valid.eq(fsm.ongoing("OUTPUT"))]
        return m
