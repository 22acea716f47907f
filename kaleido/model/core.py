"""The whole attention of a head: the stages one after another
(:func:`attention_stages`) and the attention core
(``kaleido.hdl.core.KaleidoAttentionCore``, issue 13, docs/CORE.md "The
core"): its memory port and tile feeder (:func:`load_cycles`,
:func:`tile_feed_cycles`) and its exact cycles (:func:`core_cycles`)."""

from __future__ import annotations

import numpy as np

from ..checks import check_variant
from ..config import BEAT_REGISTER, PE_LATENCY, KaleidoConfig, SoftmaxFormat
from .engine import DENSE_ARRAY_LATENCY, dense_engine_cycles, engine_cycles
from .pv import PvSlots, pv_cycles, pv_tile_run, pv_tile_tail
from .qk import ModelResult
from .softmax import TILE_SOFTMAX_LATENCY, output_scaler_cycles, softmax_cycles


def attention_stages(
    qk: ModelResult, V, grid, split=None, config: KaleidoConfig | None = None, fmt=None, *, P=None, pv=None
) -> dict:
    """Whole attention of a head (issue 12): ``stages`` ``qk`` (``qk``, the
    :func:`run_model` result), ``softmax`` (the softmax unit, then the
    output scaler: :func:`softmax_cycles` + :func:`output_scaler_cycles`,
    ``array_cols`` lanes) and ``pv`` (:func:`pv_cycles`), each with
    ``cycles`` (and ``dense_cycles``) and ``ops`` (``dense``, ``oracle``,
    ``hw``: nibble multiplies; exponentials for the softmax); and
    ``attention``: the totals ``cycles``, ``dense_cycles`` and ``speedup``.
    The stages run one after another (the array does Q K^T, then P V; the
    overlap of a pipelined core is issue 13); the dense array runs the same
    softmax unit. With small-P pairing (``config.pv_pairs``) P V's cycles
    depend on ``P``, the head's P operand
    (:func:`kaleido.golden.softmax.head_p`), which is then required;
    ``pv``: :func:`pv_cycles`' result if already computed (``P`` unused)."""
    config = config or KaleidoConfig()
    fmt = fmt or SoftmaxFormat()
    n, d = V.shape
    lanes = config.array_cols
    pv = pv or pv_cycles(V, grid, split, config, P=P)
    sm = softmax_cycles(n, n, lanes, fmt) + output_scaler_cycles(n, d, lanes)
    stages: dict[str, dict] = {
        "qk": {"cycles": qk.cycles, "dense_cycles": qk.dense_cycles, "ops": dict(qk.ops)},
        "softmax": {"cycles": sm, "dense_cycles": sm, "ops": {k: n * n for k in ("dense", "oracle", "hw")}},
        "pv": {"cycles": pv.cycles, "dense_cycles": pv.dense_cycles, "ops": dict(pv.ops)},
    }
    cycles = sum(int(s["cycles"]) for s in stages.values())
    dense = sum(int(s["dense_cycles"]) for s in stages.values())
    return {
        "stages": stages,
        "attention": {"cycles": cycles, "dense_cycles": dense, "speedup": dense / cycles},
    }


def load_cycles(beats: int, mem_latency: int) -> int:
    """Cycles the attention core's ``TileLoader`` takes for one load of
    ``beats`` port beats from a memory of latency ``mem_latency`` that never
    stalls: one request per cycle, the last beat written ``mem_latency``
    cycles after its request, so ``beats + mem_latency`` from the command's
    acceptance to ``done`` (docs/CORE.md, "The memory port")."""
    for name, v in (("beats", beats), ("mem_latency", mem_latency)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
            raise ValueError(f"{name} must be a positive integer, not {v!r}")
    return int(beats) + int(mem_latency)


def tile_feed_cycles(q_shape, k_shape, config: KaleidoConfig, core, *, with_v: bool = False) -> int:
    """The cycle, counted from the command's acceptance (cycle 0), in which
    the attention core's ``TileFeeder`` sends its last ``qk`` word for a
    query box of extents ``q_shape`` and a key box of ``k_shape`` (each at
    most ``core.tile``), with a memory of latency ``core.mem_latency`` that
    never stalls and an always-ready engine: every run (a ``(t, y)`` line
    of ``x`` tokens) is one load of ``x d / port_bytes`` beats taking
    :func:`load_cycles` plus one cycle, Q's runs then K's (then, ``with_v``,
    V's over the key box) from cycle 1; the
    last load's ``done`` is followed by one cycle to read the first buffer
    word, then ``2 T n_batches`` words, one a cycle, for a tile of ``T``
    tokens (partial boxes are padded to the tile)."""
    bt, by, bx = core.tile
    bpr = config.d // core.port_bytes
    done = 0
    for shape in (q_shape, k_shape, k_shape) if with_v else (q_shape, k_shape):
        t, y, x = (int(e) for e in shape)
        if not (1 <= t <= bt and 1 <= y <= by and 1 <= x <= bx):
            raise ValueError(f"a box's extents must be within the tile {core.tile}, not {tuple(shape)!r}")
        done += t * y * (load_cycles(x * bpr, core.mem_latency) + 1)
    return done + 1 + 2 * core.tile_tokens * len(config.batches)


def core_cycles(
    Q,
    K,
    V,
    grid,
    config: KaleidoConfig | None = None,
    core=None,
    fmt: SoftmaxFormat | None = None,
    *,
    variant: str = "kaleido",
    scales=None,
) -> int:
    """Exact cycles of ``kaleido.hdl.core.KaleidoAttentionCore`` for one
    head (its ``cycles`` port: from the command to the last O write, both
    counted) with a memory that never stalls and an always-ready write port.

    The walk's stages in max-plus form (docs/CORE.md "The core", "Cycles"):
    the feeder's loads (:func:`tile_feed_cycles`) and its stream into the
    engine once the engine is in LOAD; the engine's compute
    (:func:`engine_cycles` of the padded boxes); the S tile taken one word a
    cycle once the tile's V is in the P V stage (pass 2), the final key
    tile's row ends waiting for the divider; P ``TILE_SOFTMAX_LATENCY``
    cycles after its score, the final tile's last P held until the last
    ``r``; the P V stage's headers once a slot is free (``core.pv_buffers``)
    and its passes after its fill and the previous key tile's passes
    (:func:`pv_tile_run`, as :func:`pv_tile_cycles`);
    the output scaler's two cycles. With two S sets (``core.s_buffers``)
    the engine hands a tile's S to the unload once the previous tile's is
    read, and loads the next tile from the cycle after.

    ``variant="dense"``: the dense core (docs/CORE.md "The dense core"):
    each S tile takes :func:`dense_engine_cycles`, and every P V pair two
    beats (:func:`pv_tile_beats` with V's FULL threshold 9, never), on an
    array whose drain is one cycle shorter (no beat register: its operands
    come from shift registers).

    With small-P pairing (``config.pv_pairs``, not the dense core) the P V
    stage's beats depend on P, so ``scales`` (the head's ``(q, k, v)``
    scales, as the core takes them) is required: each (query, key) tile's
    P is :func:`kaleido.golden.core.query_tile_p`'s."""
    from ..config import CoreConfig

    config = config or KaleidoConfig()
    core = core or CoreConfig()
    fmt = fmt or SoftmaxFormat()
    if core.s_pass != "recompute":
        raise ValueError(
            f"s_pass={core.s_pass!r}: core_cycles models the core, which recomputes S (s_pass='recompute')"
        )
    walk = _CoreWalk(Q, K, V, grid, config, core, fmt, dense=check_variant(variant) == "dense", scales=scales)
    for qi, qb in enumerate(walk.boxes):
        for phase in (0, 1):
            for kb in walk.boxes:
                walk.tile(qi, qb, kb, phase)
    return walk.last_write + 1


class _CoreWalk:
    """The core's walk in time for :func:`core_cycles`: the controller, the
    feeder, the engine, the S unload, the tiled softmax and the P V stage,
    each as the first cycle it can take its next step, advanced one S tile
    at a time (:meth:`tile`, in walk order: query boxes, pass 1 then pass
    2, key boxes)."""

    def __init__(self, Q, K, V, grid, config: KaleidoConfig, core, fmt: SoftmaxFormat, *, dense: bool, scales):
        from ..loopnest import tile_boxes

        self.Q, self.K, self.V, self.config, self.core, self.fmt, self.scales = Q, K, V, config, core, fmt, scales
        self.dense = dense
        # P V: the dense array issues both tokens of every pair (FULL never)
        self.pv_config = config.replace(F=9, P=9, group_thresholds=None, pv_pairs=False) if dense else config
        if self.pv_config.pv_pairs and scales is None:
            raise ValueError("pv_pairs needs scales: with small-P pairing the P V stage's cycles depend on P")
        self.array_latency = DENSE_ARRAY_LATENCY if dense else BEAT_REGISTER + PE_LATENCY
        T, H, W = (int(e) for e in grid)
        self.tt = core.tile_tokens
        self.bpr = config.d // core.port_bytes
        self.words = 2 * self.tt * len(config.batches)
        self.divide = TILE_SOFTMAX_LATENCY + 1 + fmt.recip_width
        self.boxes = tile_boxes((T, H, W), core.tile)
        self.two_sets = core.s_buffers == 2
        self.compute: dict = {}  # (query box, key box) origins -> the engine's compute cycles
        self.pv_runs: dict = {}  # (key box, rows, query box with pairing) -> its P V run
        self.p_tiles: dict = {}  # query box origin -> its P tiles, with pairing
        self.pv = PvSlots(core.pv_buffers)
        # the controller's states: IDLE (0) -> PLANE (1) -> QUERY (2) -> ISSUE (3)
        self.state = 3  # the cycle the controller is in ISSUE
        self.feeder_idle = 0  # the first cycle the feeder takes a command
        self.engine_ready = 0  # the first cycle the engine takes a qk word
        self.pv_ready = 0  # the first cycle the P V stage takes a header
        self.last_final: int | None = None  # the last final-tile row end the divider saw
        self.last_write = 0
        self.prev_end = -1  # the cycle the previous S tile's last word was taken
        self.p_end = -1  # the cycle the previous pass-2 tile's last P entered the P V stage
        self.v_end = -1  # the cycle its S tile's last word was taken (padding may follow the last P)

    def loads(self, q_shape, k_shape, with_v) -> int:
        """The feeder's loads of a tile's runs (:func:`tile_feed_cycles`)."""
        shapes = (q_shape, k_shape, k_shape) if with_v else (q_shape, k_shape)
        return sum(t * y * (load_cycles(x * self.bpr, self.core.mem_latency) + 1) for t, y, x in shapes)

    def corner(self, shape) -> int:
        """The padded index of a box's last token."""
        _, by, bx = self.core.tile
        t, y, x = shape
        return ((t - 1) * by + (y - 1)) * bx + (x - 1)

    def tile(self, qi: int, qb, kb, phase: int) -> None:
        """One S tile: query box ``qb`` (the ``qi``-th), key box ``kb``, pass
        ``phase + 1``."""
        final_k = kb is self.boxes[-1]
        a = max(self.state, self.feeder_idle)  # ISSUE: the feeder takes the command
        w = max(a + self.loads(qb.shape, kb.shape, phase) + 2, self.engine_ready) + self.words - 1  # the last qk word
        self.feeder_idle = w + 1
        done = w + self.engine_compute(qb, kb)
        # the handoff to the unload (DRAIN's last cycle): with two S sets
        # once the previous tile's S is read, then the first read
        handoff = max(done, self.prev_end) if self.two_sets else done
        gate = 0
        if phase:
            gate = self.v_head(kb)
        else:
            self.state = a + 2
        last_fwd, end = self.unload(qb, kb, max(handoff + 2, gate), final=bool(phase and final_k))
        # LOAD: with two S sets the cycle after the handoff, with one the
        # cycle after the last word
        self.engine_ready = handoff + 1 if self.two_sets else end + 1
        self.prev_end = end
        if phase:
            self.pass_two(qi, qb, kb, last_fwd, end, final_k)

    def engine_compute(self, qb, kb) -> int:
        """The engine's compute cycles on a (query box, key box) tile, padded
        (:func:`engine_cycles`; the dense core's :func:`dense_engine_cycles`)."""
        from ..golden.core import pad_box

        key = (qb.origin, kb.origin)
        if key not in self.compute:
            if self.dense:
                self.compute[key] = dense_engine_cycles(self.tt, self.config).compute
            else:
                Qp, Kp = pad_box(self.Q, qb, self.core.tile), pad_box(self.K, kb, self.core.tile)
                self.compute[key] = engine_cycles(Qp, Kp, self.core.tile, self.config.split, self.config).compute
        return self.compute[key]

    def v_head(self, kb) -> int:
        """FEED -> V_HEAD -> V_ROWS, the header, then the key box's V rows:
        the cycle the tile's V is ready (the S tile's first read waits for
        it); the controller is in ISSUE again after NEXT."""
        n = len(kb.tokens)
        # FEED waits for the feeder and for the previous pass-2 tile's P and S
        h = max(self.feeder_idle + 1, self.pv_ready, self.p_end + 2, self.v_end + 2)
        self.state = h + n + 2  # NEXT, then ISSUE
        return h + n + 1  # v_ready

    def unload(self, qb, kb, start: int, *, final: bool) -> tuple[int, int]:
        """The S tile, one word a cycle from ``start``: the cycles of its last
        real score forwarded and of its last word. The final pass-2 tile's
        row ends wait for the divider."""
        from ..golden.core import box_mask

        tt = self.tt
        last_fwd = start + self.corner(qb.shape) * tt + self.corner(kb.shape)
        end = start + tt * tt - 1
        if final:
            jl = self.corner(kb.shape)
            t = start - 1
            for real in box_mask(qb, self.core.tile):
                t_end = t + jl + 1  # the row's last real column
                if real:
                    if self.last_final is not None:
                        t_end = max(t_end, self.last_final + self.divide)
                    self.last_final = t_end
                    last_fwd = t_end
                t = t_end + (tt - 1 - jl)
            end = t
        return last_fwd, end

    def pass_two(self, qi: int, qb, kb, last_fwd: int, end: int, final_k: bool) -> None:
        """A pass-2 tile's P into the P V stage (``TILE_SOFTMAX_LATENCY``
        after its score; the final tile's last P held until the last ``r``),
        its passes (:class:`PvSlots`), and after the final key tile the
        query box's last O write."""
        last_fill = last_fwd + TILE_SOFTMAX_LATENCY
        if final_k:
            last_fill = max(last_fill, last_fwd + self.divide + 1)
        rows = len(qb.tokens)
        run = self.pv_run(qb, kb, rows)
        last_issue = self.pv.issue(last_fill, run)
        self.p_end, self.v_end = last_fill, end
        self.pv_ready = self.pv.free  # the next header: a free buffer, the fill done
        if final_k:
            last_o = last_issue + run[1] + run[2] + pv_tile_tail(rows, self.config, self.array_latency)
            self.last_write = max(self.last_write, last_o + 2)
            if qi + 1 < len(self.boxes):
                self.state += 1  # QUERY

    def pv_run(self, qb, kb, rows: int) -> tuple[int, int, int]:
        """A key tile's P V run (:func:`pv_tile_run`), with small-P pairing
        on its (query, key) tile's P (:func:`kaleido.golden.core.query_tile_p`)."""
        from ..golden.core import query_tile_p

        pairs = self.pv_config.pv_pairs
        bkey = (kb.origin, rows, qb.origin if pairs else None)
        if bkey not in self.pv_runs:
            p = None
            if pairs:
                if qb.origin not in self.p_tiles:
                    self.p_tiles[qb.origin] = query_tile_p(
                        self.Q,
                        self.K,
                        qb,
                        self.boxes,
                        self.config.split,
                        self.scales,
                        thresholds=self.config.thresholds,
                        fmt=self.fmt,
                    )
                p = self.p_tiles[qb.origin][self.boxes.index(kb)]
            self.pv_runs[bkey] = pv_tile_run(self.V[kb.tokens], kb.shape, rows, self.pv_config, p)
        return self.pv_runs[bkey]
