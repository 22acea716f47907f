"""The scheduler's harnesses: its windows (:class:`SchedulerPartition`) and
its partition by k-induction (:class:`SchedulerInvariants`);
:func:`scheduler_window_cycles`, a window's cycles from reset.
"""

from __future__ import annotations

from typing import Any

from amaranth import Array, Const, Module, Mux, Signal, Value
from amaranth.hdl import Assert, Assume, Cover
from amaranth.lib import wiring

from kaleido.config import KaleidoConfig

from .base import (
    Harness,
    fsm_states,
)


class SchedulerPartition(Harness):
    """The scheduler's windows, black-box on its two streams: while a
    window loads (up to ``window`` strings, or ``last``) nothing leaves;
    while it leaves no string is taken; each index leaving is below the
    window's ``m``, not sent before in the window, in a cluster not below
    the previous one's, holding fewer than ``ceil(m / 4)`` entries before
    it; the window's ``last`` leaves with its ``m``-th index (so every
    index below ``m`` appears once: the clusters partition the window).
    Covers: a whole window of ``window`` strings, a window of one string,
    an entry of cluster 3 after clusters 0, 1, 2 got entries (OUTPUT with
    four nonempty clusters), an empty cluster skipped between two nonempty
    ones.

    With ``no_stall``, the source always offers a string and the sink is
    always ready (a stall only repeats a cycle of LOAD or OUTPUT, where the
    scheduler waits for a transfer), which keeps a whole window within a
    depth the solver reaches."""

    def __init__(
        self, dut: wiring.Component, no_stall: bool = False, deep_covers: bool = True, strings: int | None = None
    ):
        self._no_stall, self._deep_covers, self._strings = no_stall, deep_covers, strings
        super().__init__(dut)

    def check(self, m: Module, dut: Any) -> None:
        from kaleido.config import CLUSTERS as K

        W = dut.window
        if self._no_stall:
            m.d.comb += [Assume(dut.i.valid), Assume(dut.o.ready)]
        i_fire, o_fire = dut.i.valid & dut.i.ready, dut.o.valid & dut.o.ready
        o = dut.o.payload
        loading = Signal(init=1)
        count = Signal(range(W + 1))
        if self._strings is not None:  # windows of exactly this many strings
            m.d.comb += Assume(dut.i.payload.last == (count == self._strings - 1))
        seen = Signal(W)
        fills = [Signal(range(W + 1), name=f"fill{j}") for j in range(K)]
        emitted = Signal(range(W + 1))
        prev = Signal(range(K))
        cap = Signal(range(W + 1))
        m.d.comb += cap.eq((count + (K - 1)) >> 2)
        fill = Signal(range(W + 1))
        with m.Switch(o.cluster):
            for j in range(K):
                with m.Case(j):
                    m.d.comb += fill.eq(fills[j])
        with m.If(loading):
            m.d.comb += Assert(~dut.o.valid)
            with m.If(i_fire):
                m.d.sync += count.eq(count + 1)
                with m.If(dut.i.payload.last | (count == W - 1)):
                    m.d.sync += loading.eq(0)
        with m.Else():
            m.d.comb += Assert(~dut.i.ready)
            with m.If(dut.o.valid):
                m.d.comb += [
                    Assert(o.index < count),
                    Assert(((seen >> o.index) & 1) == 0),
                    Assert(fill < cap),
                    Assert(o.cluster >= prev),
                ]
                with m.If(o.last):
                    m.d.comb += Assert(emitted + 1 == count)
            with m.If(o_fire):
                m.d.sync += [seen.eq(seen | (1 << o.index)), emitted.eq(emitted + 1), prev.eq(o.cluster)]
                for j in range(K):
                    with m.If(o.cluster == j):
                        m.d.sync += fills[j].eq(fills[j] + 1)
                with m.If(o.last):
                    m.d.sync += [loading.eq(1), count.eq(0), seen.eq(0), emitted.eq(0), prev.eq(0)]
                    m.d.sync += [f.eq(0) for f in fills]
        self.seen_by_harness = dict(loading=loading, count=count, seen=seen, fills=fills, emitted=emitted, prev=prev)
        if self._deep_covers:  # the longest windows: 57 and 46 cycles from reset
            m.d.comb += [
                Cover(o_fire & o.last & (count == W), "full_window"),
                Cover(o_fire & o.last & (count == 1), "one_string_window"),
            ]
        m.d.comb += [
            Cover(o_fire & o.last & (count == 8), "eight_string_window"),
            Cover(
                o_fire & (o.cluster == K - 1) & (fills[0] != 0) & (fills[1] != 0) & (fills[2] != 0),
                "four_nonempty_clusters",
            ),
            Cover(o_fire & (o.cluster == 2) & (fills[0] != 0) & (fills[1] == 0), "empty_cluster_skipped"),
        ]


class SchedulerInvariants(SchedulerPartition):
    """The scheduler's partition (:class:`SchedulerPartition`'s asserts) for
    every window, of any size, after any number of windows, with stalls on
    both streams: proved by k-induction, strengthened by invariants that tie
    the harness's counters to the scheduler's registers (white box).

    In LOAD, DRAW and ASSIGN the harness has seen nothing of the window. In
    ASSIGN, ``F``, the fills' sum, is the strings assigned: the position
    read is ``F + assign_v + s_v``, the one in stage 1 ``F + assign_v``, the
    one in stage 2 ``F``, and ``F < m``. From ASSIGN on, the capacity and the
    pivot flags are the window's, no cluster holds more than the capacity
    and a cluster without a pivot holds nothing; the cluster entries (with
    the write in flight, ``wr_*``, which goes to the cluster's last entry)
    are distinct positions below ``F``. In SKIP_EMPTY and OUTPUT every
    string is assigned (``F = m``), the harness's fills, count and seen
    set are exactly the entries before ``(out_cluster, out_pos)``, a later
    cluster has entries, and OUTPUT reads an entry that exists. Nothing of
    the data (strings, pivots, distances, the LFSR) is constrained: the
    argmin may pick any cluster, so the proof covers every choice it
    could make."""

    white_box = True

    def __init__(self, dut: wiring.Component):
        super().__init__(dut, deep_covers=False)

    def check(self, m: Module, dut: Any) -> None:
        from kaleido.config import CLUSTERS as K

        super().check(m, dut)
        h, r = self.seen_by_harness, self.internal
        W = dut.window
        cap_max = W // K
        state = fsm_states(r["fsm_state"])
        st = {n: r["fsm_state"] == v for n, v in state.items()}
        fill = [r[f"fill{j}"] for j in range(K)]
        count, out_cluster, out_pos = r["count"], r["out_cluster"], r["out_pos"]
        F = Signal(range(W + 1), name="assigned")
        m.d.comb += F.eq(sum(fill))
        m.d.comb += [
            Assert(r["fsm_state"] < len(state)),
            Assert(h["loading"] == st["LOAD"]),
            Assert(h["count"] == count),
        ]
        with m.If(st["LOAD"]):
            m.d.comb += Assert(count < W)
        with m.Else():
            m.d.comb += [Assert(count >= 1), Assert(count <= W)]
        with m.If(st["LOAD"] | st["DRAW"] | st["ASSIGN"]):
            m.d.comb += [Assert(h["seen"] == 0), Assert(h["emitted"] == 0), Assert(h["prev"] == 0)]
            m.d.comb += [Assert(f == 0) for f in h["fills"]]
        with m.If(r["wr_v"]):
            m.d.comb += [Assert(st["ASSIGN"] | st["SKIP_EMPTY"]), Assert(r["wr_pos"] + 1 == F)]
            m.d.comb += Assert(r["wr_index"] + 1 == Array(fill)[r["wr_cluster"]])

        def entry(j: int, i: int) -> Value:
            """Cluster ``j``'s entry ``i``, the write in flight included."""
            pending = r["wr_v"] & (r["wr_cluster"] == j) & (r["wr_index"] == i)
            return Mux(pending, r["wr_pos"], r[f"c{j}_{i}"])

        slots = [(j, i) for j in range(K) for i in range(cap_max)]
        with m.If(st["ASSIGN"] | st["SKIP_EMPTY"] | st["OUTPUT"]):
            m.d.comb += Assert(r["cap_r"] == ((count + (K - 1)) >> 2))
            for j in range(K):
                m.d.comb += [Assert(r[f"has_pivot{j}"] == (count > j)), Assert(fill[j] <= r["cap_r"])]
                with m.If(count <= j):
                    m.d.comb += Assert(fill[j] == 0)
            for n, (j, i) in enumerate(slots):
                with m.If(i < fill[j]):
                    m.d.comb += Assert(entry(j, i) < F)
                    for j2, i2 in slots[n + 1 :]:
                        with m.If(i2 < fill[j2]):
                            m.d.comb += Assert(entry(j, i) != entry(j2, i2))
        with m.If(st["ASSIGN"]):
            pos, s_v, assign_v = r["pos"], r["s_v"], r["assign_v"]
            m.d.comb += [Assert(F < count), Assert(pos <= count), Assert(pos == F + assign_v + s_v)]
            with m.If(s_v):
                m.d.comb += Assert(r["pos_s"] == F + assign_v)
            with m.If(assign_v):
                m.d.comb += Assert(r["pos_r"] == F)
        with m.If(st["SKIP_EMPTY"] | st["OUTPUT"]):
            m.d.comb += [Assert(F == count), Assert(h["prev"] <= out_cluster)]
            sent = Signal(W, name="sent")
            sent_bits: Value = Const(0, W)
            done = Const(0, range(W + 1))
            for j in range(K):
                before = Signal(range(cap_max + 1), name=f"sent_of{j}")
                m.d.comb += before.eq(Mux(j < out_cluster, fill[j], Mux(j == out_cluster, out_pos, 0)))
                m.d.comb += Assert(h["fills"][j] == before)
                done = done + before
                for i in range(cap_max):
                    sent_bits = sent_bits | Mux(i < before, Const(1, W) << entry(j, i), 0)
            m.d.comb += [sent.eq(sent_bits), Assert(h["seen"] == sent), Assert(h["emitted"] == done)]
        with m.If(st["SKIP_EMPTY"]):
            later = Const(0)
            for j in range(K):
                later = later | ((j >= out_cluster) & (fill[j] != 0))
            m.d.comb += [Assert(out_pos == 0), Assert(later)]
        with m.If(st["OUTPUT"]):
            m.d.comb += [Assert(out_pos < Array(fill)[out_cluster]), Assert(~r["wr_v"])]


def scheduler_window_cycles(config: KaleidoConfig, strings: int | None = None) -> int:
    """Cycles of the first window from reset with no stall, of ``strings``
    strings (default: the longest over every size): ``schedule_cycles``
    (at most) with the LFSR's draws from its seed."""
    from kaleido.config import LFSR_SEED
    from kaleido.golden.scheduler import draw_pivots

    W = config.window("row")
    sizes = range(1, W + 1) if strings is None else [strings]
    return max(3 * m + draw_pivots(m, LFSR_SEED, W)[2] + 5 for m in sizes)
