"""The tile feeder's harness (white box): :class:`TileFeederFlow`."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from amaranth import Array, Cat, Module, Mux, Signal, Value
from amaranth.hdl import Assert, Assume, Cover
from amaranth.lib import wiring

from kaleido.config import KaleidoConfig

from .base import (
    StreamPorts,
    fsm_states,
    tuple_internals,
)


class TileFeederFlow(StreamPorts):
    """The tile feeder (white box: its FSM, run and stream counters and its
    tile loader's counters are tied to the harness's by invariants, so the
    k-induction starts from a real state).

    Assumed: ``cmd`` keeps the stream rule and its boxes lie in the head
    (extents ``1 ..`` the tile's, every token of a box below
    ``max_tokens``); a response comes only for a request taken and not yet
    answered (the memory's contract; its latency is free). Proved: the
    stream rule on ``rq`` and ``qk``; ``rs`` always ready; ``cmd.ready``
    exactly while no command is in progress. Scoreboard: the ``k``-th read
    request of a command reads the beat the harness's own walk of the boxes
    gives (Q's runs, then K's, then V's ``with_v``; run ``(t, y)`` of a box
    at token ``origin + t plane + y row``, ``x bpr`` beats), there are
    exactly ``E = (|Q box| + |K box| (1 + with_v)) bpr`` of them, and every
    one is answered before the first ``qk`` word; the ``qk`` words of a
    command are exactly ``2 T n_batches`` (the padded tiles: the command
    ends with the last), and a word of a token outside its box (padding) is
    zero. Bounded response: the first word is on ``qk`` exactly 2 cycles
    after the last response, and then ``qk.valid`` stays high until the
    last word (an always-ready engine takes one a cycle). Covers: each FSM
    state, a padded word (a clipped box), a V request."""

    white_box = True
    takes_all = ("rs",)

    def __init__(self, dut: wiring.Component, config: KaleidoConfig, core: Any):
        self._cfg, self._core = config, core
        super().__init__(dut)

    def flow(self, m: Module, dut: Any) -> None:
        """The command's contract, then the harness's walks of the read
        requests (:meth:`requests`) and of the ``qk`` words
        (:meth:`words`), and the feeder's state tied to them
        (:meth:`invariants`)."""
        core = self._core
        bt, by, bx = core.tile
        top = core.max_tokens
        r = self.internal
        bits = {"ti": bt, "st": bt, "sy": by}
        r.update(tuple_internals(self.fragment, {k: max(1, (n - 1).bit_length()) for k, n in bits.items()}))
        state = fsm_states(r["fsm_state"])
        in_state = {name: r["fsm_state"] == code for name, code in state.items()}
        L = r["loader.busy"]
        W = 10  # wide enough for every count and position here

        c_fire = dut.cmd.valid & dut.cmd.ready
        rq_fire, rs_fire, qk_fire = dut.rq.valid & dut.rq.ready, dut.rs.valid, dut.qk.valid & dut.qk.ready
        # the command's contract: boxes of real extents inside the head
        p = dut.cmd.payload

        def in_head(c: Any) -> Value:
            ok = []
            for box in (c.q, c.k):
                for ext, most in ((box.t, bt), (box.y, by), (box.x, bx)):
                    ok += [ext >= 1, ext <= most]
                ok.append(box.origin + (box.t - 1) * c.plane + (box.y - 1) * c.row + box.x - 1 < top)
            return Cat(*ok).all()

        with m.If(dut.cmd.valid):
            m.d.comb += Assume(in_head(p))

        active = Signal(name="ref_active")
        hc = Signal.like(p, name="ref_cmd")
        with m.If(c_fire):
            m.d.sync += [active.eq(1), hc.eq(p)]
        with m.If(active):
            m.d.comb += Assert(in_head(hc))  # the command kept (an invariant)
        m.d.comb += Assert(dut.cmd.ready == ~active)
        s = SimpleNamespace(r=r, state=state, in_state=in_state, L=L, W=W, hc=hc, active=active)
        s.c_fire, s.rq_fire, s.rs_fire, s.qk_fire = c_fire, rq_fire, rs_fire, qk_fire
        self.requests(m, dut, s)
        self.words(m, dut, s)
        self.invariants(m, dut, s)

    def requests(self, m: Module, dut: Any, s: SimpleNamespace) -> None:
        """The read requests: the harness's walk of the boxes (side, run
        ``(t, y)``, beat), each request's address, their count ``E``, the
        responses; ``s`` gains the walk (``side_box``, ``pos``, ...)."""
        bt, by, bx = self._core.tile
        bpr, W, hc, active = dut.beats_per_row, s.W, s.hc, s.active
        c_fire, rq_fire, rs_fire = s.c_fire, s.rq_fire, s.rs_fire

        def side_box(side: Value) -> Any:
            """The box of side ``side`` (0: Q, else K)."""
            b = Signal(hc.q.shape(), name=f"ref_box{len(boxes)}")
            m.d.comb += b.eq(Mux(side == 0, hc.q, hc.k))
            boxes.append(b)
            return b

        boxes: list[Any] = []
        q_beats, k_beats = Signal(W, name="ref_q_beats"), Signal(W, name="ref_k_beats")
        m.d.comb += [
            q_beats.eq(hc.q.t * hc.q.y * hc.q.x * bpr),
            k_beats.eq(hc.k.t * hc.k.y * hc.k.x * bpr),
        ]
        E = Signal(W, name="ref_beats")
        m.d.comb += E.eq(q_beats + k_beats + Mux(hc.with_v, k_beats, 0))

        def pos(side: Value, t: Value, y: Value, beat: Value, tag: str) -> Signal:
            """The flat number of beat ``beat`` of run ``(t, y)`` of side ``side`` in the command's walk."""
            b = side_box(side)
            prefix = Array([0, q_beats, q_beats + k_beats, q_beats + 2 * k_beats])[side]
            out = Signal(W, name=f"ref_pos_{tag}")
            m.d.comb += out.eq(prefix + (t * b.y + y) * (b.x * bpr) + beat)
            return out

        # the harness's walk of the requests: side, run (t, y), beat
        sides = Signal(2, name="ref_sides")
        m.d.comb += sides.eq(2 + hc.with_v)
        asked, got = Signal(W, name="ref_asked"), Signal(W, name="ref_got")
        rside, rt, ry = Signal(2, name="ref_rside"), Signal(range(bt), name="ref_rt"), Signal(range(by), name="ref_ry")
        rbeat = Signal(range(bx * bpr), name="ref_rbeat")
        rbox = side_box(rside)
        m.d.comb += Assume(~dut.rs.valid | (asked != got))
        with m.If(c_fire):
            m.d.sync += [asked.eq(0), got.eq(0), rside.eq(0), rt.eq(0), ry.eq(0), rbeat.eq(0)]
        with m.If(rq_fire):
            m.d.sync += [asked.eq(asked + 1), rbeat.eq(rbeat + 1)]
            with m.If(rbeat + 1 == rbox.x * bpr):
                m.d.sync += [rbeat.eq(0), ry.eq(ry + 1)]
                with m.If(ry + 1 == rbox.y):
                    m.d.sync += [ry.eq(0), rt.eq(rt + 1)]
                    with m.If(rt + 1 == rbox.t):
                        m.d.sync += [rt.eq(0), rside.eq(rside + 1)]
        with m.If(rs_fire):
            m.d.sync += got.eq(got + 1)
        base = Array([hc.q_base, hc.k_base, hc.v_base, hc.v_base])[rside]
        token = rbox.origin + rt * hc.plane + ry * hc.row
        expected = Signal(32, name="ref_addr")
        m.d.comb += expected.eq(base + token * bpr + rbeat)
        m.d.comb += [Assert(got <= asked), Assert(asked <= E)]
        m.d.comb += Assert(asked == pos(rside, rt, ry, rbeat, "asked"))
        with m.If(active & (rside < sides)):
            m.d.comb += [Assert(rt < rbox.t), Assert(ry < rbox.y), Assert(rbeat < rbox.x * bpr)]
        with m.Elif(active):
            m.d.comb += [Assert(rside == sides), Assert(rt == 0), Assert(ry == 0), Assert(rbeat == 0)]
        with m.If(dut.rq.valid):
            m.d.comb += [Assert(active), Assert(asked < E), Assert(dut.rq.payload.addr == expected)]
        s.side_box, s.pos, s.E, s.sides = side_box, pos, E, sides
        s.asked, s.got, s.rside = asked, got, rside

    def words(self, m: Module, dut: Any, s: SimpleNamespace) -> None:
        """The ``qk`` words: the harness's walk of the padded tiles, a
        padded word zero, and the bounded response; ``s`` gains the walk."""
        core = self._core
        bt, by, bx = core.tile
        T, nb = core.tile_tokens, len(self._cfg.batches)
        words_total = 2 * T * nb
        W, side_box, active = s.W, s.side_box, s.active
        c_fire, rs_fire, qk_fire = s.c_fire, s.rs_fire, s.qk_fire
        asked, got, E = s.asked, s.got, s.E

        # the qk words: the harness's walk of the padded tiles
        ws = Signal(name="ref_wside")
        wt, wy, wx = (
            Signal(range(bt), name="ref_wt"),
            Signal(range(by), name="ref_wy"),
            Signal(range(bx), name="ref_wx"),
        )
        wb = Signal(range(max(nb, 2)), name="ref_wb")
        words = Signal(W, name="ref_words")
        wbox = side_box(ws)
        last_word = (ws == 1) & (wt == bt - 1) & (wy == by - 1) & (wx == bx - 1) & (wb == nb - 1)
        with m.If(c_fire):
            m.d.sync += [ws.eq(0), wt.eq(0), wy.eq(0), wx.eq(0), wb.eq(0), words.eq(0)]
        with m.If(qk_fire):
            m.d.sync += [words.eq(words + 1), wb.eq(wb + 1)]
            with m.If(wb == nb - 1):
                m.d.sync += [wb.eq(0), wx.eq(wx + 1)]
                with m.If(wx == bx - 1):
                    m.d.sync += [wx.eq(0), wy.eq(wy + 1)]
                    with m.If(wy == by - 1):
                        m.d.sync += [wy.eq(0), wt.eq(wt + 1)]
                        with m.If(wt == bt - 1):
                            m.d.sync += [wt.eq(0), ws.eq(1)]
            with m.If(last_word):
                m.d.sync += active.eq(0)
        flat = Signal(W, name="ref_word_pos")
        m.d.comb += flat.eq(ws * (T * nb) + ((wt * by + wy) * bx + wx) * nb + wb)
        with m.If(active):
            m.d.comb += [Assert(words == flat), Assert(wb < nb)]
        with m.If(qk_fire & last_word):
            m.d.comb += Assert(words == words_total - 1)
        padded = ~((wt < wbox.t) & (wy < wbox.y) & (wx < wbox.x))
        with m.If(dut.qk.valid):
            m.d.comb += [Assert(active), Assert(asked == E), Assert(got == E)]
            with m.If(padded):
                m.d.comb += Assert(dut.qk.payload.as_value() == 0)
        # bounded response: the first word 2 cycles after the last response, then a word every cycle
        last_resp, streaming = Signal(name="ref_last_response"), Signal(name="ref_streaming")
        m.d.sync += last_resp.eq(rs_fire & (got + 1 == E))
        with m.If(last_resp):
            m.d.sync += streaming.eq(1)
        with m.If(qk_fire & last_word):
            m.d.sync += streaming.eq(0)
        m.d.comb += Assert(dut.qk.valid == streaming)
        s.ws, s.wt, s.wy, s.wx, s.wb, s.words = ws, wt, wy, wx, wb, words
        s.padded, s.last_resp, s.streaming = padded, last_resp, streaming

    def invariants(self, m: Module, dut: Any, s: SimpleNamespace) -> None:
        """The feeder's FSM, run and stream counters and its loader's
        counters are the harness's walks' (the k-induction's strengthening);
        the covers."""
        _, by, bx = self._core.tile
        bpr, r, state, in_state, L = dut.beats_per_row, s.r, s.state, s.in_state, s.L
        side_box, pos, hc, active, sides, E = s.side_box, s.pos, s.hc, s.active, s.sides, s.E
        asked, got, rside, padded = s.asked, s.got, s.rside, s.padded
        words, ws, wt, wy, wx, wb = s.words, s.ws, s.wt, s.wy, s.wx, s.wb
        streaming, last_resp = s.streaming, s.last_resp

        # invariants: the feeder's state is the harness's
        S, ti, yi = r["side"], r["ti"], r["yi"]
        box = side_box(S)
        lb, iss, lg = r["loader.beats"], r["loader.issued"], r["loader.got"]
        run_len = box.x * bpr
        here = pos(S, ti, yi, 0, "run")
        m.d.comb += Assert(Cat(*in_state.values()).any())  # no unnamed encoding
        m.d.comb += Assert(in_state["IDLE"] == ~active)
        with m.If(in_state["IDLE"]):
            m.d.comb += Assert(~L)
        with m.Else():
            m.d.comb += Assert(r["cmd"] == hc.as_value())
        with m.If(in_state["LOAD"] | in_state["WAIT"]):
            m.d.comb += [Assert(S < sides), Assert(ti < box.t), Assert(yi < box.y)]
            m.d.comb += [Assert(r["plane_token"] == box.origin + ti * hc.plane)]
            m.d.comb += [Assert(r["run_token"] == box.origin + ti * hc.plane + yi * hc.row)]
            m.d.comb += [Assert(~streaming), Assert(~last_resp)]
        with m.If(L):
            m.d.comb += [Assert(lb == run_len), Assert(iss <= lb), Assert(lg <= iss), Assert(lg < lb)]
        with m.If(in_state["LOAD"]):
            with m.If(L):
                m.d.comb += [Assert((ti != 0) | (yi != 0)), Assert(asked == here - run_len + iss)]
                m.d.comb += Assert(got == here - run_len + lg)
            with m.Else():
                m.d.comb += [Assert(asked == here), Assert(got == here)]
        with m.If(in_state["WAIT"]):
            m.d.comb += [Assert(L), Assert(ti == box.t - 1), Assert(yi == box.y - 1)]
            m.d.comb += [Assert(asked == here + iss), Assert(got == here + lg)]
        with m.If(in_state["READ"] | in_state["STREAM"]):
            m.d.comb += [Assert(~L), Assert(asked == E), Assert(got == E)]
        m.d.comb += [Assert(in_state["READ"] == last_resp), Assert(in_state["STREAM"] == streaming)]
        with m.If(in_state["READ"]):
            m.d.comb += [Assert(words == 0), Assert(S == 0), Assert(r["token"] == 0), Assert(r["b"] == 0)]
            m.d.comb += [Assert(r["st"] == 0), Assert(r["sy"] == 0), Assert(r["sx"] == 0)]
        with m.If(in_state["STREAM"]):
            m.d.comb += [Assert(S == ws), Assert(r["b"] == wb), Assert(r["st"] == wt), Assert(r["sy"] == wy)]
            m.d.comb += [Assert(r["sx"] == wx), Assert(r["token"] == (wt * by + wy) * bx + wx)]
        with m.If(in_state["LOAD"] | in_state["WAIT"] | in_state["READ"]):
            m.d.comb += [Assert(words == 0), Assert(ws == 0), Assert(wt == 0), Assert(wy == 0), Assert(wx == 0)]
            m.d.comb += Assert(wb == 0)
        with m.If(~active):
            m.d.comb += Assert(asked == got)

        m.d.comb += [Cover(in_state[s], f"state_{s}") for s in state]
        m.d.comb += [
            Cover(dut.qk.valid & padded, "padded_word"),
            Cover(dut.rq.valid & (rside == 2), "v_request"),
        ]
