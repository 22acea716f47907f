"""The lane-parallel fixed-point softmax (issue 12; docs/SOFTMAX.md, "RTL:
the softmax unit"): bit for bit what :func:`kaleido.golden.softmax.fixed_softmax`
computes, and the output scaler of :func:`kaleido.golden.softmax.fixed_attention`.

:class:`SoftmaxUnit` keeps no row buffer: the caller sends each row twice,
back to back (the first traversal finds the row's maximum, the second
computes the exponentials), replaying it from the memory that already holds
``S``, so no on-chip buffer grows with the sequence length ``N``.
"""

from __future__ import annotations

from types import SimpleNamespace

from amaranth import Array, Const, Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ..config import CoreConfig, KaleidoConfig, SoftmaxFormat, signed_width
from ._common import as_config

__all__ = [
    "MAX_TOKENS",
    "default_acc_width",
    "SoftmaxUnit",
    "TileSoftmax",
    "OutputScaler",
    "score_beat_layout",
    "p_beat_layout",
    "recip_layout",
    "scaler_in_layout",
    "scaler_out_layout",
    "tile_score_layout",
    "tile_p_layout",
    "tile_recip_layout",
]

#: the longest row (tokens) the row sum ``z`` and the scaler's default
#: accumulator width are sized for
MAX_TOKENS = 32768


def default_acc_width(fmt: SoftmaxFormat) -> int:
    """The output scaler's default accumulator width: ``|acc| <= N p_max
    128`` for rows of up to :data:`MAX_TOKENS` tokens (30 bits at 7-bit P)."""
    return signed_width(MAX_TOKENS * fmt.p_max * 128)


def score_beat_layout(width: int, lanes: int) -> data.StructLayout:
    """One beat of a row of scores: ``values`` (lanes ``count ..`` are
    ignored), ``count`` valid lanes (1 .. ``lanes``; only the last beat of a
    row may be short), ``last`` = the beat ends the row (its traversal)."""
    return data.StructLayout({"values": data.ArrayLayout(signed(width), lanes), "count": range(lanes + 1), "last": 1})


def p_beat_layout(fmt: SoftmaxFormat, lanes: int) -> data.StructLayout:
    """One beat of P: the P operands (lanes ``count ..`` are 0), ``count``,
    ``last``."""
    return data.StructLayout(
        {"values": data.ArrayLayout(unsigned(fmt.p_bits), lanes), "count": range(lanes + 1), "last": 1}
    )


def _z_width(fmt: SoftmaxFormat, max_tokens: int) -> int:
    return (max_tokens * fmt.p_max).bit_length()


def recip_layout(fmt: SoftmaxFormat, max_tokens: int = MAX_TOKENS) -> data.StructLayout:
    """One row's reciprocal ``r = floor(2^recip_bits / z)`` and its sum ``z``."""
    return data.StructLayout({"r": unsigned(fmt.recip_width), "z": unsigned(_z_width(fmt, max_tokens))})


def scaler_in_layout(fmt: SoftmaxFormat, lanes: int, acc_width: int) -> data.StructLayout:
    """One beat of a row of ``P V`` sums and the row's reciprocal."""
    return data.StructLayout(
        {
            "acc": data.ArrayLayout(signed(acc_width), lanes),
            "r": unsigned(fmt.recip_width),
            "count": range(lanes + 1),
            "last": 1,
        }
    )


def scaler_out_layout(fmt: SoftmaxFormat, lanes: int) -> data.StructLayout:
    """One beat of O: ``8 + out_frac_bits`` signed bits per lane (int8 V
    times weights summing to one), lanes ``count ..`` 0."""
    return data.StructLayout(
        {
            "values": data.ArrayLayout(signed(8 + fmt.out_frac_bits), lanes),
            "count": range(lanes + 1),
            "last": 1,
        }
    )


def _check_fmt(fmt) -> SoftmaxFormat:
    if fmt is None:
        return SoftmaxFormat()
    if not isinstance(fmt, SoftmaxFormat):
        raise TypeError(f"fmt must be a SoftmaxFormat, not {fmt!r}")
    return fmt


def _check_count(name: str, value, default: int, low: int = 1) -> int:
    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an integer, not {value!r}")
    if value < low:
        raise ValueError(f"{name} must be at least {low}, not {value!r}")
    return value


def _lane_mask(count, lanes: int) -> list:
    return [Const(i, range(lanes + 1)) < count for i in range(lanes)]


def _valid_lanes(values, count, lanes: int, width: int) -> list:
    """The lanes of a score beat, lanes ``count ..`` replaced by the most
    negative score (so they never win a maximum)."""
    in_lane = _lane_mask(count, lanes)
    return [Mux(in_lane[i], values[i], -(1 << (width - 1))) for i in range(lanes)]


def _beat_max(vals: list):
    """The maximum of a beat's lanes: every pair compared at once (one
    comparator level, where a balanced tree had log2(lanes) in series): a
    lane at least as large as every other is a maximum, and maxima are
    equal, so the OR of the lanes that are maxima is the maximum (timing)."""
    out = Const(0, len(vals[0]))
    for i, v in enumerate(vals):
        top = Const(1)
        for j, w in enumerate(vals):
            if j != i:
                top = top & (v >= w)
        out = out | Mux(top, v.as_unsigned(), 0)
    return out.as_signed()


def _exp_pipeline(m: Module, fmt: SoftmaxFormat, lanes: int, width: int, constant, advance, valid, diffs, tags):
    """The exponential pipeline shared by :class:`SoftmaxUnit` and
    :class:`TileSoftmax`: ``diffs`` (``m - s`` per lane, ``>= 0`` on valid
    lanes) with ``valid`` and ``tags`` (``(name, shape, value)``, carried
    beside the data; ``count`` masks the lanes) into four registered stages,
    all moving when ``advance``: ``d`` | ``d C`` as four partial products
    | ``t`` | ``e``. Returns the last stage's valid, its tags by name and
    the P values (comb, lanes ``count ..`` 0), for the caller's ``p``
    register."""
    shift = fmt.exp_frac_bits - fmt.lut_bits
    t_max = (((1 << width) - 1) * ((1 << fmt.constant_bits) - 1) + (1 << (shift - 1))) >> shift
    lut = Array(Const(v, fmt.lut_width + 1) for v in fmt.exp2_table())

    def stage(name: str, shape, prev_valid, prev_tags, values):
        valid = Signal(name=f"{name}_valid")
        held = [(tag, tshape, Signal(tshape, name=f"{name}_{tag}")) for tag, tshape, _ in prev_tags]
        regs = [Signal(shape, name=f"{name}_{i}") for i in range(len(values))]
        with m.If(advance):
            m.d.sync += valid.eq(prev_valid)
            m.d.sync += [h.eq(v) for (_, _, h), (_, _, v) in zip(held, prev_tags, strict=True)]
            m.d.sync += [r.eq(v) for r, v in zip(regs, values, strict=True)]
        return valid, held, regs

    # d = m - s >= 0 (invalid lanes: anything, masked at the end)
    v1, g1, d1 = stage("d", unsigned(width), valid, tags, diffs)
    # d C as four partial products of halves, registered before they
    # are summed and rounded (timing: a 23 x 24 multiplier spans several
    # DSP blocks and their adders; a half-by-half product fits one)
    hd, hc = (width + 1) // 2, (fmt.constant_bits + 1) // 2
    c_lo, c_hi = constant[:hc], constant[hc:]
    parts = []
    for d in d1:
        d_lo, d_hi = d[:hd], d[hd:]
        parts += [d_lo * c_lo, d_lo * c_hi, d_hi * c_lo, d_hi * c_hi]
    vp, gp, pp = stage("dc", unsigned(hd + hc + 2), v1, g1, parts)
    prods = [
        pp[4 * i] + (pp[4 * i + 1] << hc) + (pp[4 * i + 2] << hd) + (pp[4 * i + 3] << (hd + hc)) for i in range(lanes)
    ]
    v2, g2, t2 = stage("t", range(t_max + 1), vp, gp, [(x + (1 << (shift - 1))) >> shift for x in prods])
    exps = []
    n_bits = fmt.lut_width.bit_length()
    for t in t2:
        n, k = t >> fmt.lut_bits, t[: fmt.lut_bits]
        exps.append(Mux(n <= fmt.lut_width, lut[k] >> n[:n_bits], 0))
    v3, g3, e3 = stage("e", unsigned(fmt.lut_width + 1), v2, g2, exps)
    out_tags = {tag: sig for tag, _, sig in g3}
    mask3 = _lane_mask(out_tags["count"], lanes)
    ps = [Mux(mask3[i], (e3[i] * fmt.p_max + (1 << (fmt.lut_width - 1))) >> fmt.lut_width, 0) for i in range(lanes)]
    return v3, out_tags, ps


def _reciprocal(m: Module, fmt: SoftmaxFormat, z_width: int, load, z, r_valid, r_taken):
    """The restoring divider shared by :class:`SoftmaxUnit` and
    :class:`TileSoftmax`: ``load`` takes ``z`` and starts ``floor(2^recip_bits
    / z)``, one quotient bit a cycle (``recip_width`` cycles), then sets
    ``r_valid`` (cleared by ``r_taken``). Returns the quotient and the
    divisor (``z``) registers."""
    Q = fmt.recip_width
    numerator = 1 << fmt.recip_bits
    rem0, low = numerator >> Q, numerator & ((1 << Q) - 1)
    rem = Signal(max(z_width + 1, rem0.bit_length()))
    divisor = Signal(z_width)
    bits = Signal(Q)  # the numerator's bits still to bring down, MSB first
    quotient = Signal(Q)
    steps = Signal(range(Q + 1))
    running = Signal()
    trial = Signal(len(rem) + 1)
    m.d.comb += trial.eq((rem << 1) | bits[Q - 1])
    with m.If(r_taken):
        m.d.sync += r_valid.eq(0)
    with m.If(running):
        fits = trial >= divisor
        m.d.sync += [
            rem.eq(Mux(fits, trial - divisor, trial)),
            quotient.eq((quotient << 1) | fits),
            bits.eq(bits << 1),
            steps.eq(steps - 1),
        ]
        with m.If(steps == 1):
            m.d.sync += [running.eq(0), r_valid.eq(1)]
    with m.If(load):
        m.d.sync += [
            divisor.eq(z),
            rem.eq(rem0),
            bits.eq(low),
            quotient.eq(0),
            steps.eq(Q),
            running.eq(1),
        ]
    return quotient, divisor


class SoftmaxUnit(wiring.Component):
    """Row softmax of integer scores, ``lanes`` scores per beat.

    Parameters
    ----------
    config : KaleidoConfig
        Scores are ``config.buffer_width()`` signed bits (the accumulation
        buffer's entries); ``lanes`` defaults to ``config.array_cols``.
    fmt : SoftmaxFormat
    lanes : int
    max_tokens : int
        The longest row; sizes the row sum ``z`` (a longer row wraps it).

    Ports
    -----
    ``constant`` (in, ``fmt.constant_bits``): the head's constant ``C``
    (:func:`~kaleido.golden.softmax.head_constant`), held stable while a
    head streams. ``s`` (in stream, :func:`score_beat_layout`): every row
    twice, back to back; the first traversal finds the maximum ``m`` (taken
    every cycle), the second computes the exponentials. ``p`` (out stream,
    :func:`p_beat_layout`): one beat per beat of the second traversal, with
    its ``count`` and ``last``. ``r`` (out stream, :func:`recip_layout`):
    one word per row, from a restoring divider (one quotient bit per cycle,
    ``fmt.recip_width`` cycles) that starts as the row's last P beat enters
    the ``p`` register.

    First traversal: a balanced comparator tree takes the beat's maximum
    into a register, folded into the row's maximum the next cycle; ``m`` is
    that maximum with a pending beat folded in, so no cycle is lost between
    the traversals. Pipeline of the second traversal, one beat per cycle
    (the whole pipeline stalls while ``p`` is full and not taken):
    accept (``d = m - s``) | ``t = round(d C / 2^(exp_frac_bits - lut_bits))``
    | ``e = LUT[t mod 2^lut_bits] >> (t div 2^lut_bits)`` | ``p``, ``z +=``.
    A beat accepted in cycle ``a`` is valid on ``p`` from cycle ``a +``
    :attr:`latency`. The divider serves one row at a time: the last beat of
    a row is not accepted until the previous row's ``r`` is taken (or is
    taken in the same cycle); a row's ``r`` is valid :attr:`row_latency`
    cycles after its last beat is accepted.
    """

    def __init__(
        self,
        config: KaleidoConfig | None = None,
        fmt: SoftmaxFormat | None = None,
        lanes: int | None = None,
        *,
        max_tokens: int = MAX_TOKENS,
    ):
        config = as_config(config)
        self._fmt = _check_fmt(fmt)
        self._lanes = _check_count("lanes", lanes, config.array_cols)
        self._max_tokens = _check_count("max_tokens", max_tokens, MAX_TOKENS)
        self._width = config.buffer_width()
        super().__init__(
            {
                "constant": In(unsigned(self._fmt.constant_bits)),
                "s": In(stream.Signature(score_beat_layout(self._width, self._lanes))),
                "p": Out(stream.Signature(p_beat_layout(self._fmt, self._lanes))),
                "r": Out(stream.Signature(recip_layout(self._fmt, self._max_tokens))),
            }
        )

    @property
    def lanes(self) -> int:
        return self._lanes

    @property
    def fmt(self) -> SoftmaxFormat:
        return self._fmt

    @property
    def score_width(self) -> int:
        return self._width

    @property
    def latency(self) -> int:
        """Cycles from a second-traversal beat's transfer on ``s`` to its P
        beat on ``p``: 5."""
        return 5

    @property
    def row_latency(self) -> int:
        """Cycles from the transfer of a row's last beat on ``s`` to its
        ``r`` on ``r``: :attr:`latency`, one cycle for the row-sum register,
        then ``fmt.recip_width`` divider steps."""
        return self.latency + 1 + self._fmt.recip_width

    def elaborate(self, platform):
        m = Module()
        fmt, lanes, W = self._fmt, self._lanes, self._width
        z_width = _z_width(fmt, self._max_tokens)

        beat = self.s.payload
        second = Signal()  # 0: the max traversal, 1: the exponential traversal
        first = Signal(init=1)  # the next max-traversal beat starts a row
        row_max = Signal(signed(W))

        # ---- handshakes ------------------------------------------------------
        advance = Signal()  # the exponential pipeline moves
        reserved = Signal()  # the divider belongs to a row (last beat taken, r not yet taken)
        r_taken = Signal()
        m.d.comb += [
            advance.eq(~self.p.valid | self.p.ready),
            r_taken.eq(self.r.valid & self.r.ready),
            self.s.ready.eq(~second | (advance & (~beat.last | ~reserved | r_taken))),
        ]
        take = self.s.valid & self.s.ready
        with m.If(r_taken):
            m.d.sync += reserved.eq(0)
        with m.If(take & second & beat.last):
            m.d.sync += reserved.eq(1)
        with m.If(take & beat.last):
            m.d.sync += second.eq(~second)

        # ---- first traversal: the row's maximum -------------------------------
        lane_vals = _valid_lanes(beat.values, beat.count, lanes, W)

        # the beat's maximum is registered (pending) and folded into row_max
        # the next cycle; m is row_max with the pending beat folded in, so the
        # second traversal may start the cycle after the first one ends
        pending = Signal()
        pending_first = Signal()
        beat_max = Signal(signed(W))
        row_m = Signal(signed(W))
        m.d.comb += row_m.eq(Mux(pending & (pending_first | (beat_max > row_max)), beat_max, row_max))
        m.d.sync += [pending.eq(take & ~second), row_max.eq(row_m)]
        with m.If(take & ~second):
            m.d.sync += [beat_max.eq(_beat_max(lane_vals)), pending_first.eq(first), first.eq(beat.last)]

        # ---- second traversal: the exponential pipeline -------------------------
        v3, tags, ps = _exp_pipeline(
            m,
            fmt,
            lanes,
            W,
            self.constant,
            advance,
            take & second,
            [row_m - beat.values[i] for i in range(lanes)],
            [("count", range(lanes + 1), beat.count), ("last", 1, beat.last)],
        )
        l3 = tags["last"]
        out = self.p.payload
        with m.If(advance):
            m.d.sync += [self.p.valid.eq(v3), out.count.eq(tags["count"]), out.last.eq(l3)]
            m.d.sync += [out.values[i].eq(ps[i]) for i in range(lanes)]

        # ---- the row sum and the divider ---------------------------------------
        # The row sum adds the P beat from the output register, the cycle
        # after it is loaded (``p_new``): the lane sum and the accumulator
        # are off the path through the exponential and P's rounding (timing,
        # issue 20's follow-up); the divider starts one cycle later.
        p_new = Signal()
        p_new_last = Signal()
        m.d.sync += [p_new.eq(advance & v3), p_new_last.eq(l3)]
        z_acc = Signal(z_width)
        beat_sum = Signal(z_width)
        z_row = Signal(z_width)
        m.d.comb += [beat_sum.eq(sum(out.values[i] for i in range(lanes))), z_row.eq(z_acc + beat_sum)]
        load = p_new & p_new_last
        with m.If(p_new):
            m.d.sync += z_acc.eq(Mux(p_new_last, 0, z_row))

        quotient, divisor = _reciprocal(m, fmt, z_width, load, z_row, self.r.valid, r_taken)
        m.d.comb += [self.r.payload.r.eq(quotient), self.r.payload.z.eq(divisor)]
        return m


class OutputScaler(wiring.Component):
    """``O = (acc * r + 2^(shift - 1)) >> shift``, ``shift = recip_bits -
    out_frac_bits`` (floor shift, as Python's ``>>``), per lane: the last
    step of :func:`~kaleido.golden.softmax.fixed_attention`.

    Parameters
    ----------
    config : KaleidoConfig
        ``lanes`` defaults to ``config.array_cols``.
    fmt : SoftmaxFormat
    lanes : int
    acc_width : int
        Width of the ``P V`` sums; the default holds ``|acc| <= N p_max 128``
        for rows of up to :data:`MAX_TOKENS` tokens.

    Ports: ``i`` (in stream, :func:`scaler_in_layout`), ``o`` (out stream,
    :func:`scaler_out_layout`), one beat out per beat in, valid two cycles
    after the transfer (:attr:`latency`). The output is ``8 +
    out_frac_bits`` bits: enough when ``acc`` is a row of ``p V`` with int8
    ``V`` and ``r`` that row's reciprocal (``|O| <= 2^(7 + out_frac_bits)``);
    other inputs wrap.
    """

    def __init__(
        self,
        config: KaleidoConfig | None = None,
        fmt: SoftmaxFormat | None = None,
        lanes: int | None = None,
        acc_width: int | None = None,
    ):
        config = as_config(config)
        self._fmt = _check_fmt(fmt)
        self._lanes = _check_count("lanes", lanes, config.array_cols)
        self._acc_width = _check_count("acc_width", acc_width, default_acc_width(self._fmt), 2)
        super().__init__(
            {
                "i": In(stream.Signature(scaler_in_layout(self._fmt, self._lanes, self._acc_width))),
                "o": Out(stream.Signature(scaler_out_layout(self._fmt, self._lanes))),
            }
        )

    @property
    def lanes(self) -> int:
        return self._lanes

    @property
    def acc_width(self) -> int:
        return self._acc_width

    @property
    def latency(self) -> int:
        """Cycles from a beat's transfer on ``i`` to its result on ``o``: 2
        (the products, then the rounding)."""
        return 2

    def elaborate(self, platform):
        m = Module()
        fmt, lanes = self._fmt, self._lanes
        shift = fmt.recip_bits - fmt.out_frac_bits
        beat, out = self.i.payload, self.o.payload
        # two stages (timing): the products are registered, then rounded,
        # shifted and masked; the whole pipeline moves when ``o`` can
        advance = Signal()
        m.d.comb += [advance.eq(~self.o.valid | self.o.ready), self.i.ready.eq(advance)]
        valid1, last1 = Signal(), Signal()
        count1 = Signal.like(beat.count)
        products = [Signal.like(beat.acc[i] * beat.r, name=f"product{i}") for i in range(lanes)]
        mask = _lane_mask(count1, lanes)
        with m.If(advance):
            m.d.sync += [valid1.eq(self.i.valid), count1.eq(beat.count), last1.eq(beat.last)]
            m.d.sync += [products[i].eq(beat.acc[i] * beat.r) for i in range(lanes)]
            m.d.sync += [self.o.valid.eq(valid1), out.count.eq(count1), out.last.eq(last1)]
            for i in range(lanes):
                scaled = (products[i] + (1 << (shift - 1))) >> shift
                m.d.sync += out.values[i].eq(Mux(mask[i], scaled, 0))
        return m


def tile_score_layout(width: int, lanes: int, rows: int) -> data.StructLayout:
    """One beat of a segment of a query tile's scores (one row against one
    key tile): ``values``, ``count`` and ``last`` as in
    :func:`score_beat_layout` (``last`` ends the segment); ``row``, the row
    in the query tile (``0 .. rows - 1``); ``phase`` (0: max, 1: exp);
    ``first`` and ``final``: the segment's key tile is the query tile's
    first or final one. ``row``, ``phase``, ``first`` and ``final`` are the
    segment's and must stay the same on all its beats."""
    return data.StructLayout(
        {
            "values": data.ArrayLayout(signed(width), lanes),
            "count": range(lanes + 1),
            "last": 1,
            "row": range(rows),
            "phase": 1,
            "first": 1,
            "final": 1,
        }
    )


def tile_p_layout(fmt: SoftmaxFormat, lanes: int, rows: int) -> data.StructLayout:
    """One beat of P of a segment: :func:`p_beat_layout` with the segment's
    ``row``, ``first`` and ``final`` (what the P V accumulator needs: the
    first key tile initialises a row's O, the final one completes it)."""
    return data.StructLayout(
        {
            "values": data.ArrayLayout(unsigned(fmt.p_bits), lanes),
            "count": range(lanes + 1),
            "last": 1,
            "row": range(rows),
            "first": 1,
            "final": 1,
        }
    )


def tile_recip_layout(fmt: SoftmaxFormat, rows: int, max_tokens: int = MAX_TOKENS) -> data.StructLayout:
    """One row's reciprocal ``r``, its sum ``z`` and its ``row`` in the query tile."""
    return data.StructLayout(
        {"r": unsigned(fmt.recip_width), "z": unsigned(_z_width(fmt, max_tokens)), "row": range(rows)}
    )


class TileSoftmax(wiring.Component):
    """The softmax of a query tile walked over key tiles (issue 13,
    docs/SOFTMAX.md, "RTL: the tiled softmax"): the row state (maximum
    ``m``, sum ``z``) of every row of the query tile in two memories of
    ``rows`` words, each with one synchronous read port and one write port.

    Parameters
    ----------
    config : KaleidoConfig
        Scores are ``config.buffer_width()`` signed bits; ``lanes``
        defaults to ``config.array_cols``.
    fmt : SoftmaxFormat
    lanes : int
    rows : int
        Rows of a query tile (the row-state memories' depth); defaults to
        ``CoreConfig().tile_tokens``.
    max_tokens : int
        The longest row (all key tiles); sizes ``z``.

    Ports
    -----
    ``constant`` (in): the head's ``C``, as for :class:`SoftmaxUnit`.
    ``s`` (in stream, :func:`tile_score_layout`): segments, one row against
    one key tile each. Pass 1 (``phase`` 0) sends every row's segment of
    every key tile; pass 2 (``phase`` 1) sends them again. ``first``
    marks the first key tile of the query tile (a max segment initialises
    the row's ``m``, an exp segment its ``z``), ``final`` the last one (an
    exp segment's end starts the divider). ``p`` (out stream,
    :func:`tile_p_layout`): one beat per exp beat. ``r`` (out stream,
    :func:`tile_recip_layout`): one word per exp segment of the final key
    tile, in order.

    A max beat's maximum is registered as it is taken and folded into the
    row's ``m`` the next cycle (stage ``R``), written at the segment's end.
    An exp beat reads ``m`` as it is taken and, in stage ``R``, enters the
    exponential pipeline of :class:`SoftmaxUnit` with ``d = m - s``; its P
    beat is on ``p`` :attr:`latency` cycles after it was taken. The cycle
    after a P beat enters the ``p`` register, its lane sum is added to the
    row's ``z`` (read from memory on the segment's first beat, 0 on the
    first key tile) and written at the segment's end. Each memory forwards
    its last write (row and value) to a read of the same row, so a row that
    comes back before its write lands never sees a stale word and never
    waits. One divider, as in :class:`SoftmaxUnit`: the last beat of a
    final-key-tile exp segment is not taken until the previous ``r`` is
    taken (or is taken in the same cycle); ``r`` is valid
    :attr:`row_latency` cycles after that beat is taken.
    """

    def __init__(
        self,
        config: KaleidoConfig | None = None,
        fmt: SoftmaxFormat | None = None,
        lanes: int | None = None,
        rows: int | None = None,
        *,
        max_tokens: int = MAX_TOKENS,
    ):
        config = as_config(config)
        self._fmt = _check_fmt(fmt)
        self._lanes = _check_count("lanes", lanes, config.array_cols)
        self._rows = _check_count("rows", rows, CoreConfig().tile_tokens)
        self._max_tokens = _check_count("max_tokens", max_tokens, MAX_TOKENS)
        self._width = config.buffer_width()
        super().__init__(
            {
                "constant": In(unsigned(self._fmt.constant_bits)),
                "s": In(stream.Signature(tile_score_layout(self._width, self._lanes, self._rows))),
                "p": Out(stream.Signature(tile_p_layout(self._fmt, self._lanes, self._rows))),
                "r": Out(stream.Signature(tile_recip_layout(self._fmt, self._rows, self._max_tokens))),
            }
        )

    @property
    def lanes(self) -> int:
        return self._lanes

    @property
    def rows(self) -> int:
        return self._rows

    @property
    def fmt(self) -> SoftmaxFormat:
        return self._fmt

    @property
    def score_width(self) -> int:
        return self._width

    @property
    def latency(self) -> int:
        """Cycles from an exp beat's transfer on ``s`` to its P beat on
        ``p``: 6 (stage ``R``, where ``m`` is read, then the five of
        :class:`SoftmaxUnit`)."""
        return 6

    @property
    def row_latency(self) -> int:
        """Cycles from the transfer of a final-key-tile exp segment's last
        beat to its ``r``: :attr:`latency`, the row-sum register, then
        ``fmt.recip_width`` divider steps."""
        return self.latency + 1 + self._fmt.recip_width

    def elaborate(self, platform):
        m = Module()
        w = self._memories(m)
        self._stage_r(m, w)
        self._row_max(m, w)
        self._exponentials(m, w)
        self._row_sum(m, w)
        self._divider(m, w)
        return m

    def _memories(self, m: Module) -> SimpleNamespace:
        """The row_max and row_sum memories and their ports: the namespace the stages share."""
        fmt, W, rows = self._fmt, self._width, self._rows
        z_width = _z_width(fmt, self._max_tokens)
        m.submodules.row_max = row_max = Memory(shape=signed(W), depth=rows, init=[])
        m.submodules.row_sum = row_sum = Memory(shape=unsigned(z_width), depth=rows, init=[])
        m_rd, m_wr = row_max.read_port(), row_max.write_port()
        z_rd, z_wr = row_sum.read_port(), row_sum.write_port()
        return SimpleNamespace(z_width=z_width, m_rd=m_rd, m_wr=m_wr, z_rd=z_rd, z_wr=z_wr)

    def _stage_r(self, m: Module, w: SimpleNamespace) -> None:
        """The handshakes and stage R: the beat taken last cycle, beside its row's word of row_max."""
        lanes, W, rows = self._lanes, self._width, self._rows
        beat = self.s.payload
        # ---- handshakes ------------------------------------------------------
        advance = Signal()  # the exponential pipeline moves
        reserved = Signal()  # the divider belongs to a row (last beat taken, r not yet taken)
        r_taken = Signal()
        # stage R: the beat taken last cycle, beside its row's word of row_max
        r_valid, r_exp, r_last, r_start = Signal(), Signal(), Signal(), Signal()
        r_first, r_final = Signal(), Signal()
        r_row = Signal(range(rows))
        r_count = Signal(range(lanes + 1))
        r_values = [Signal(signed(W), name=f"r_value{i}") for i in range(lanes)]
        r_beat_max = Signal(signed(W))
        r_moves = Signal()  # stage R takes the next beat (a max beat leaves at once)
        divides = beat.phase & beat.final & beat.last
        m.d.comb += [
            advance.eq(~self.p.valid | self.p.ready),
            r_taken.eq(self.r.valid & self.r.ready),
            r_moves.eq(~r_valid | ~r_exp | advance),
            self.s.ready.eq(r_moves & (~divides | ~reserved | r_taken)),
        ]
        take = self.s.valid & self.s.ready
        with m.If(r_taken):
            m.d.sync += reserved.eq(0)
        with m.If(take & divides):
            m.d.sync += reserved.eq(1)
        inside = Signal()  # a segment's beats were taken, its last one not yet
        with m.If(take):
            m.d.sync += inside.eq(~beat.last)
        with m.If(r_moves):
            m.d.sync += [
                r_valid.eq(take),
                r_exp.eq(beat.phase),
                r_last.eq(beat.last),
                r_start.eq(~inside),
                r_first.eq(beat.first),
                r_final.eq(beat.final),
                r_row.eq(beat.row),
                r_count.eq(beat.count),
                r_beat_max.eq(_beat_max(_valid_lanes(beat.values, beat.count, lanes, W))),
            ]
            m.d.sync += [r.eq(beat.values[i]) for i, r in enumerate(r_values)]
        m.d.comb += [w.m_rd.addr.eq(beat.row), w.m_rd.en.eq(take)]
        w.advance, w.r_taken, w.r_valid, w.r_exp, w.r_last = advance, r_taken, r_valid, r_exp, r_last
        w.r_start, w.r_first, w.r_final, w.r_row = r_start, r_first, r_final, r_row
        w.r_count, w.r_values, w.r_beat_max = r_count, r_values, r_beat_max

    def _row_max(self, m: Module, w: SimpleNamespace) -> None:
        """Pass 1: the segment's maximum folded into the row's m (row_max, its last write forwarded)."""
        W, rows = self._width, self._rows
        m_rd, m_wr, r_row, r_start, r_beat_max = w.m_rd, w.m_wr, w.r_row, w.r_start, w.r_beat_max
        # ---- row_max: the last write forwarded --------------------------------
        # A read misses only the write of the cycle it is issued in, and that
        # is the memory's last write: the bypass holds it (row and value)
        m_fwd_valid = Signal()
        m_fwd_row = Signal(range(rows))
        m_fwd = Signal(signed(W))
        row_m = Signal(signed(W))  # the row's m as stage R sees it
        m.d.comb += row_m.eq(Mux(m_fwd_valid & (m_fwd_row == r_row), m_fwd, m_rd.data))

        # ---- pass 1: fold the segment's maximum into m -------------------------
        seg_max = Signal(signed(W))  # the maximum so far of the segment in R
        base = Signal(signed(W))
        folded = Signal(signed(W))
        m.d.comb += [
            base.eq(Mux(r_start, row_m, seg_max)),
            folded.eq(Mux((r_start & w.r_first) | (r_beat_max > base), r_beat_max, base)),
        ]
        fold = w.r_valid & ~w.r_exp
        with m.If(fold):
            m.d.sync += seg_max.eq(folded)
        m.d.comb += [m_wr.addr.eq(r_row), m_wr.data.eq(folded), m_wr.en.eq(fold & w.r_last)]
        with m.If(fold & w.r_last):
            m.d.sync += [m_fwd_valid.eq(1), m_fwd_row.eq(r_row), m_fwd.eq(folded)]
        w.row_m = row_m

    def _exponentials(self, m: Module, w: SimpleNamespace) -> None:
        """Pass 2: the exponential pipeline from stage R into the p register; the row's z read."""
        fmt, lanes, W, rows = self._fmt, self._lanes, self._width, self._rows
        out, advance, row_m, r_values = self.p.payload, w.advance, w.row_m, w.r_values
        # ---- pass 2: the exponential pipeline, from stage R ----------------------
        v3, tags, ps = _exp_pipeline(
            m,
            fmt,
            lanes,
            W,
            self.constant,
            advance,
            w.r_valid & w.r_exp,
            [row_m - r_values[i] for i in range(lanes)],
            [
                ("count", range(lanes + 1), w.r_count),
                ("last", 1, w.r_last),
                ("row", range(rows), w.r_row),
                ("first", 1, w.r_first),
                ("final", 1, w.r_final),
            ],
        )
        with m.If(advance):
            m.d.sync += [self.p.valid.eq(v3)]
            m.d.sync += [out.values[i].eq(ps[i]) for i in range(lanes)]
            m.d.sync += [out[name].eq(tags[name]) for name in ("count", "last", "row", "first", "final")]
        # the row's z is read as the beat enters the p register
        m.d.comb += [w.z_rd.addr.eq(tags["row"]), w.z_rd.en.eq(advance & v3)]
        w.v3 = v3

    def _row_sum(self, m: Module, w: SimpleNamespace) -> None:
        """The row sum z, the cycle after the P beat is loaded (row_sum, its last write forwarded)."""
        lanes, rows, z_width = self._lanes, self._rows, w.z_width
        out, z_rd, z_wr = self.p.payload, w.z_rd, w.z_wr
        # ---- the row sum, the cycle after the P beat is loaded ------------------
        p_new = Signal()
        m.d.sync += p_new.eq(w.advance & w.v3)
        z_fwd_valid = Signal()
        z_fwd_row = Signal(range(rows))
        z_fwd = Signal(z_width)
        z_old = Signal(z_width)  # the row's z before this segment
        m.d.comb += z_old.eq(Mux(z_fwd_valid & (z_fwd_row == out.row), z_fwd, z_rd.data))
        z_inside = Signal()  # a segment's P beats were summed, its last one not yet
        z_acc = Signal(z_width)
        z_row = Signal(z_width)
        beat_sum = Signal(z_width)
        m.d.comb += [
            beat_sum.eq(sum(out.values[i] for i in range(lanes))),
            z_row.eq(Mux(z_inside, z_acc, Mux(out.first, 0, z_old)) + beat_sum),
        ]
        with m.If(p_new):
            m.d.sync += [z_acc.eq(z_row), z_inside.eq(~out.last)]
        m.d.comb += [z_wr.addr.eq(out.row), z_wr.data.eq(z_row), z_wr.en.eq(p_new & out.last)]
        with m.If(p_new & out.last):
            m.d.sync += [z_fwd_valid.eq(1), z_fwd_row.eq(out.row), z_fwd.eq(z_row)]
        w.p_new, w.z_row = p_new, z_row

    def _divider(self, m: Module, w: SimpleNamespace) -> None:
        """The divider: the row's reciprocal after its final segment, with its row."""
        out = self.p.payload
        # ---- the divider -----------------------------------------------------------
        load = w.p_new & out.last & out.final
        quotient, divisor = _reciprocal(m, self._fmt, w.z_width, load, w.z_row, self.r.valid, w.r_taken)
        div_row = Signal(range(self._rows))
        with m.If(load):
            m.d.sync += div_row.eq(out.row)
        m.d.comb += [self.r.payload.r.eq(quotient), self.r.payload.z.eq(divisor), self.r.payload.row.eq(div_row)]
