"""The whole attention of a head: the stages one after another
(:func:`attention_stages`) and the attention core
(``kaleido.hdl.core.KaleidoAttentionCore``, issue 13, docs/CORE.md "The
core"): its memory port and tile feeder (:func:`load_cycles`,
:func:`tile_feed_cycles`) and its exact cycles (:func:`core_cycles`)."""

from __future__ import annotations

import numpy as np

from ..checks import check_variant
from ..config import PE_LATENCY, KaleidoConfig, SoftmaxFormat
from .engine import DENSE_PE_LATENCY, dense_engine_cycles, engine_cycles
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
    array whose drain is one cycle shorter (the MAC PE has no product
    register).

    With small-P pairing (``config.pv_pairs``, not the dense core) the P V
    stage's beats depend on P, so ``scales`` (the head's ``(q, k, v)``
    scales, as the core takes them) is required: each (query, key) tile's
    P is :func:`kaleido.golden.core.query_tile_p`'s."""
    from ..config import CoreConfig
    from ..golden.core import box_mask, pad_box, query_tile_p
    from ..loopnest import tile_boxes

    config = config or KaleidoConfig()
    core = core or CoreConfig()
    fmt = fmt or SoftmaxFormat()
    if core.s_pass != "recompute":
        raise ValueError(
            f"s_pass={core.s_pass!r}: core_cycles models the core, which recomputes S (s_pass='recompute')"
        )
    dense = check_variant(variant) == "dense"
    # P V: the dense array issues both tokens of every pair (FULL never)
    pv_config = config.replace(F=9, P=9, group_thresholds=None, pv_pairs=False) if dense else config
    if pv_config.pv_pairs and scales is None:
        raise ValueError("pv_pairs needs scales: with small-P pairing the P V stage's cycles depend on P")
    p_tiles: dict = {}  # query box origin -> its P tiles, with pairing
    pe_latency = DENSE_PE_LATENCY if dense else PE_LATENCY
    T, H, W = (int(e) for e in grid)
    tile = core.tile
    bt, by, bx = tile
    tt = core.tile_tokens
    bpr = config.d // core.port_bytes
    words = 2 * tt * len(config.batches)
    divide = TILE_SOFTMAX_LATENCY + 1 + fmt.recip_width
    boxes = tile_boxes((T, H, W), tile)

    def loads(q_shape, k_shape, with_v):
        shapes = (q_shape, k_shape, k_shape) if with_v else (q_shape, k_shape)
        return sum(t * y * (load_cycles(x * bpr, core.mem_latency) + 1) for t, y, x in shapes)

    def corner(shape):  # the padded index of a box's last token
        t, y, x = shape
        return ((t - 1) * by + (y - 1)) * bx + (x - 1)

    compute: dict = {}
    pv_runs: dict = {}
    pv = PvSlots(core.pv_buffers)
    # the controller's states: IDLE (0) -> PLANE (1) -> QUERY (2) -> ISSUE (3)
    state = 3  # the cycle the controller is in ISSUE
    feeder_idle = 0  # the first cycle the feeder takes a command
    engine_ready = 0  # the first cycle the engine takes a qk word
    pv_ready = 0  # the first cycle the P V stage takes a header
    last_final = None  # the last final-tile row end the divider saw
    last_write = 0
    two_sets = core.s_buffers == 2
    prev_end = -1  # the cycle the previous S tile's last word was taken
    p_end = -1  # the cycle the previous pass-2 tile's last P entered the P V stage
    v_end = -1  # the cycle its S tile's last word was taken (padding may follow the last P)
    tiles = []  # (qb, kb, phase), in walk order
    for qi, qb in enumerate(boxes):
        for phase in (0, 1):
            for kb in boxes:
                tiles.append((qi, qb, kb, phase))
    for qi, qb, kb, phase in tiles:
        final_k = kb is boxes[-1]
        a = max(state, feeder_idle)  # ISSUE: the feeder takes the command
        w = max(a + loads(qb.shape, kb.shape, phase) + 2, engine_ready) + words - 1  # the last qk word
        feeder_idle = w + 1
        key = (qb.origin, kb.origin)
        if key not in compute:
            Qp, Kp = pad_box(Q, qb, tile), pad_box(K, kb, tile)
            if dense:
                compute[key] = dense_engine_cycles(tt, config).compute
            else:
                compute[key] = engine_cycles(Qp, Kp, tile, config.split, config).compute
        # the handoff to the unload (DRAIN's last cycle): with two S sets
        # once the previous tile's S is read, then the first read
        handoff = max(w + compute[key], prev_end) if two_sets else w + compute[key]
        first_s = handoff + 2
        gate = 0
        if phase:  # FEED -> V_HEAD -> V_ROWS: the header, then the key box's V rows
            n = len(kb.tokens)
            # FEED waits for the feeder and for the previous pass-2 tile's P and S
            h = max(feeder_idle + 1, pv_ready, p_end + 2, v_end + 2)
            gate = h + n + 1  # v_ready
            state = h + n + 2  # NEXT, then ISSUE
        else:
            state = a + 2
        # the S tile, one word a cycle from its first; the final pass-2
        # tile's row ends wait for the divider
        start = max(first_s, gate)
        rows = len(qb.tokens)
        last_fwd = start + corner(qb.shape) * tt + corner(kb.shape)
        end = start + tt * tt - 1
        if phase and final_k:
            jl = corner(kb.shape)
            t = start - 1
            for real in box_mask(qb, tile):
                t_end = t + jl + 1  # the row's last real column
                if real:
                    if last_final is not None:
                        t_end = max(t_end, last_final + divide)
                    last_final = t_end
                    last_fwd = t_end
                t = t_end + (tt - 1 - jl)
            end = t
        # LOAD: with two S sets the cycle after the handoff, with one the
        # cycle after the last word
        engine_ready = handoff + 1 if two_sets else end + 1
        prev_end = end
        if phase:
            last_fill = last_fwd + TILE_SOFTMAX_LATENCY
            if final_k:
                last_fill = max(last_fill, last_fwd + divide + 1)
            bkey = (kb.origin, rows, qb.origin if pv_config.pv_pairs else None)
            if bkey not in pv_runs:
                p = None
                if pv_config.pv_pairs:
                    if qb.origin not in p_tiles:
                        p_tiles[qb.origin] = query_tile_p(
                            Q, K, qb, boxes, config.split, scales, thresholds=config.thresholds, fmt=fmt
                        )
                    p = p_tiles[qb.origin][boxes.index(kb)]
                pv_runs[bkey] = pv_tile_run(V[kb.tokens], kb.shape, rows, pv_config, p)
            run = pv_runs[bkey]
            last_issue = pv.issue(last_fill, run)
            p_end, v_end = last_fill, end
            pv_ready = pv.free  # the next header: a free buffer, the fill done
            if final_k:
                last_o = last_issue + run[1] + run[2] + pv_tile_tail(rows, config, pe_latency)
                last_write = max(last_write, last_o + 2)
                if qi + 1 < len(boxes):
                    state += 1  # QUERY
    return last_write + 1
