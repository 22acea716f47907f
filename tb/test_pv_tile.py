"""The P V tile stage (hdl/pv_tile.py, issue 13) in the Amaranth simulator:
bit-exact O accumulators against golden's ``pv_tile_accumulate``, the
cycle model exactly, partial and odd key tiles, stalls, bad parameters.
The three-simulator runs with stall patterns are in test_blocks.py (block
``pv_tile``)."""

import numpy as np
import pytest

from kaleido.config import KaleidoConfig
from kaleido.golden.core import pv_tile_accumulate, tile_operands
from kaleido.hdl.pv_tile import PvTile
from kaleido.loopnest import tile_boxes
from kaleido.model import pv_tile_beats, pv_tile_cycles
from kaleido.tb.benches import stream_bench
from kaleido.tb.kit import simulate
from kaleido.tb.pv_tile_cases import pv_tile_words, random_key_tile

TILE = (2, 2, 4)
CONFIGS = {
    "b4": KaleidoConfig.one_array(batch=4, split=(5, 3, 4)),
    "b16": KaleidoConfig.one_array(batch=16, split=(4, 6, 2)),
    "F3": KaleidoConfig.one_array(batch=8, split=(3, 2, 7), F=3, P=1),
}
#: query tiles of (rows, key tile shapes): full, partial and odd boxes
WALK = [(1, [(2, 2, 4)]), (6, [(1, 2, 3), (2, 1, 4), (2, 2, 4)]), (3, [(2, 2, 1)]), (5, [(1, 1, 1), (2, 2, 3)])]


def _run(cfg, walk, seed, stalls=("none", "none"), source="random", buffers=None, small=None, tile=TILE):
    """One walk through the stage: expected and RTL totals, RTL and model
    cycles. ``small``: P mostly below 16 (default: with ``pv_pairs``)."""
    rng = np.random.default_rng(seed)
    small = cfg.pv_pairs if small is None else small
    qts = [[random_key_tile(rng, s, rows, cfg.d, source, small_p=small) for s in shapes] for rows, shapes in walk]
    ins, expected = pv_tile_words(cfg, tile, 6, qts)
    bench = lambda be: stream_bench(be, ins, in_stall=stalls[0], out_stall=stalls[1], seed=seed, drain=2000)
    got, cycles = simulate(PvTile(cfg, tile, 6, buffers=buffers), bench)
    model = pv_tile_cycles([(kts[0][1].shape[0], [(V, s, P) for s, P, V in kts]) for kts in qts], cfg, buffers)
    return expected, got, cycles, model


#: key tiles whose passes outlast their fill (48 channels: 12 channel blocks,
#: few keys), so with two buffers each fill hides behind the passes before it;
#: batch 16 (8 units a pass): a key tile's last units may be two-beat pairs
WIDE = KaleidoConfig.one_array(batch=16, split=(16, 16, 16))
RUN_BOUND = [(6, [(1, 1, 2), (2, 2, 2), (2, 1, 4)]), (2, [(1, 1, 1), (2, 2, 4), (2, 2, 3), (2, 1, 1)])]


#: key tiles of 3 and 4 rows and planes: a walk paired along y or t steps
#: two rows or planes and wraps inside the box (the addresses' row and plane
#: strides); odd widths leave the rounded-up word of each row unused
TALL_TILE = (4, 4, 4)
TALL = [(5, [(4, 4, 3), (3, 3, 4), (4, 4, 4)]), (2, [(3, 4, 1), (2, 3, 2)])]


def test_tall_key_tiles_are_exact(seed):
    """Key tiles taller than two rows and planes: bit-exact and exactly
    :func:`pv_tile_cycles` on every channel group's axis."""
    expected, got, cycles, model = _run(CONFIGS["b16"], TALL, seed, tile=TALL_TILE)
    assert got == expected, f"seed {seed}"
    assert cycles == model, f"seed {seed}: RTL {cycles} cycles, model {model}"


@pytest.mark.parametrize("case", ["fill_bound", "run_bound"])
def test_two_buffers_overlap_the_fill_and_the_model_is_the_rtl(case, seed):
    """``buffers=1`` (fill, then run) and ``buffers=2`` (the next key tile
    fills while the current one runs): both bit-exact, both exactly
    :func:`pv_tile_cycles`, and two buffers take fewer cycles, where the
    fill is the longer stage (``WALK``, 6-row query tiles) and where the
    passes are (``RUN_BOUND``: the next run waits for the array, not the
    fill)."""
    cfg, walk = (CONFIGS["b4"], WALK) if case == "fill_bound" else (WIDE, RUN_BOUND)
    cycles = {}
    for buffers in (1, 2):
        expected, got, cycles[buffers], model = _run(cfg, walk, seed, buffers=buffers)
        assert got == expected, f"seed {seed}, {buffers} buffers"
        assert cycles[buffers] == model, f"seed {seed}, {buffers} buffers: RTL {cycles[buffers]} cycles, model {model}"
    assert cycles[2] < cycles[1], f"seed {seed}: {cycles}"


def test_one_buffer_is_the_first_stage(seed):
    """With one buffer the model is the first stage's closed form: each key
    tile's fill, then its passes (``1 + n + rows n + B - b + PV_TILE_ISSUE -
    1`` cycles a key tile), then the last total's tail."""
    from kaleido.model import PV_TILE_ISSUE, pv_tile_tail

    rng = np.random.default_rng(seed)
    cfg = CONFIGS["b16"]
    walk = [(rows, [(random_key_tile(rng, s, rows, cfg.d, "video")[2], s) for s in shapes]) for rows, shapes in WALK]
    t = -1
    for rows, kts in walk:
        for V, shape in kts:
            n = int(np.prod(shape))
            beats, last = pv_tile_beats(V, shape, rows, cfg)
            t += 1 + n + rows * n + beats - last + PV_TILE_ISSUE - 1
    assert pv_tile_cycles(walk, cfg, buffers=1) == t + last + pv_tile_tail(walk[-1][0], cfg) + 1, f"seed {seed}"


PAIRS = {
    "b4": KaleidoConfig.one_array(batch=4, split=(5, 3, 4), pv_pairs=True),
    "b16": KaleidoConfig.one_array(batch=16, split=(4, 6, 2), pv_pairs=True),
    "2x2": KaleidoConfig.one_array(batch=8, array_rows=2, array_cols=2, split=(2, 3, 2), pv_pairs=True),
}


@pytest.mark.parametrize("name", sorted(PAIRS))
@pytest.mark.parametrize("buffers", [1, 2])
def test_small_p_pairing_is_exact_and_the_model_is_the_rtl(name, buffers, seed):
    """Small-P pairing (``pv_pairs``, issue 14) in the stage: P mostly
    below 16, padded passes and two-half units: every total equals
    golden's, the cycles equal :func:`pv_tile_cycles` with each key tile's
    P, and they are fewer than the same stage's without pairing."""
    cfg = PAIRS[name]
    expected, got, cycles, model = _run(cfg, WALK, seed, buffers=buffers)
    assert got == expected, f"seed {seed}"
    assert cycles == model, f"seed {seed}: RTL {cycles} cycles, model {model}"
    _, _, plain, _ = _run(cfg.replace(pv_pairs=False), WALK, seed, buffers=buffers, small=True)
    assert cycles < plain, f"seed {seed}: pairing {cycles} cycles, without {plain}"


@pytest.mark.parametrize("name", sorted(CONFIGS))
@pytest.mark.parametrize("source", ["random", "video"])
def test_bit_exact_and_the_model_is_the_rtl(name, source, seed):
    """Four query tiles (1 to 6 rows) over full, partial and odd key
    tiles: every total equals golden's, and the cycles equal
    :func:`pv_tile_cycles` exactly."""
    expected, got, cycles, model = _run(CONFIGS[name], WALK, seed, source=source)
    assert got == expected, f"seed {seed}"
    assert cycles == model, f"seed {seed}: RTL {cycles} cycles, model {model}"


#: arrays of other than 4 rows (the core's): the last total's drain depends
#: on the row it comes from, not on ``array_rows`` (issue 19); passes both
#: shorter than the array's rows (padded) and as long or longer
ARRAYS = {
    "1x1": KaleidoConfig.one_array(batch=4, array_rows=1, array_cols=1, split=(2, 1, 2)),
    "1x2": KaleidoConfig.one_array(batch=4, array_rows=1, array_cols=2, split=(3, 2, 2)),
    "2x1": KaleidoConfig.one_array(batch=2, array_rows=2, array_cols=1, split=(1, 1, 1)),
    "2x2": KaleidoConfig.one_array(batch=8, array_rows=2, array_cols=2, split=(2, 3, 2)),
    "3x1": KaleidoConfig.one_array(batch=6, array_rows=3, array_cols=1, split=(2, 2, 1)),
    "4x2": KaleidoConfig.one_array(batch=8, array_rows=4, array_cols=2, split=(2, 3, 2)),
    "5x1": KaleidoConfig.one_array(batch=10, array_rows=5, array_cols=1, split=(2, 2, 1)),
    "6x2": KaleidoConfig.one_array(batch=4, array_rows=6, array_cols=2, split=(2, 2, 1)),
}


@pytest.mark.parametrize("name", list(ARRAYS))
def test_the_model_is_the_rtl_on_any_array(name, seed):
    """The four query tiles of ``WALK`` (1 to 6 rows: the last total from
    every row of a row block) on arrays of 1 to 6 rows: bit-exact, and the
    cycles equal :func:`pv_tile_cycles` exactly (a model that drains the
    array's last row, not the query tile's, is ``4 - array_rows`` cycles
    off here)."""
    expected, got, cycles, model = _run(ARRAYS[name], WALK, seed)
    assert got == expected, f"seed {seed}"
    assert cycles == model, f"seed {seed}: RTL {cycles} cycles, model {model}"


@pytest.mark.parametrize("rows", [1, 2])
def test_the_model_is_the_rtl_on_one_key_token(rows, seed):
    """The smallest query tiles (one key token; one or two rows) on the
    formal harness's 2x1 array (``tb/formal/registry.py`` ``PV_SMALL``): the
    response proof's bound is the model's, with no slack."""
    expected, got, cycles, model = _run(ARRAYS["2x1"], [(rows, [(1, 1, 1)])], seed)
    assert got == expected, f"seed {seed}"
    assert cycles == model, f"seed {seed}: RTL {cycles} cycles, model {model}"


@pytest.mark.parametrize("stalls", [("random", "none"), ("none", "random"), ("random", "random")])
def test_stalls_change_no_value(stalls, seed):
    """A stalled ``o`` fills the row FIFO; the credits stop passes before it
    overflows, so no drain is lost."""
    expected, got, _, _ = _run(CONFIGS["b4"], WALK, seed, stalls)
    assert got == expected, f"seed {seed}"


def test_golden_is_core_attentions_acc(seed):
    """``pv_tile_accumulate`` of a head's tiles equals ``P V_eff`` summed
    over the key tiles as ``core_attention`` does (its ``acc``, from
    ``tile_operands``): the P of the whole head restricted to one query
    tile."""
    rng = np.random.default_rng(seed)
    grid, split, tile = (3, 3, 5), (4, 6, 2), (2, 2, 4)
    V = rng.integers(-128, 128, (45, 12)).astype(np.int8)
    P = rng.integers(0, 128, (5, 45))
    boxes = tile_boxes(grid, tile)
    got = pv_tile_accumulate(
        [P[:, b.tokens] for b in boxes], [V[b.tokens] for b in boxes], [b.shape for b in boxes], split
    )
    want = sum(P[:, b.tokens] @ tile_operands(V, b, split, 5, 3, "v").astype(np.int64) for b in boxes)
    assert (got == want).all(), f"seed {seed}"


def test_model_counts_padding_and_reuse():
    """A smooth V (all FULL) takes one beat a pair; passes shorter than the
    array's rows are padded."""
    cfg = KaleidoConfig.one_array()
    V = np.zeros((64, 128), np.int8)
    beats, _ = pv_tile_beats(V, (2, 4, 8), 64, cfg)
    assert beats == 16 * 32 * 32  # 16 row blocks, 32 channel blocks, 32 pairs -> 4 passes of 8 one-beat units
    beats, _ = pv_tile_beats(V[:1], (1, 1, 1), 1, cfg)
    assert beats == 32 * 4  # one unpaired unit a block, padded to 4


@pytest.mark.parametrize(
    "make, error, message",
    [
        (lambda: PvTile(rows=0), ValueError, "rows must be at least 1, not 0"),
        (lambda: PvTile(rows=2.0), TypeError, "rows must be an integer, not 2.0"),  # type: ignore[arg-type]
        (
            lambda: PvTile(tile=(2, 3, 4)),
            ValueError,
            r"tile must be three even extents >= 2 .*, not \(2, 3, 4\)",
        ),
        (lambda: PvTile(tile=5), TypeError, "tile must be three even extents"),
        (lambda: PvTile({"d": 3}), TypeError, "config must be a KaleidoConfig"),  # type: ignore[arg-type]
    ],
)
def test_bad_parameters_are_named(make, error, message):
    with pytest.raises(error, match=message):
        make()


def test_bad_model_input_is_named():
    with pytest.raises(ValueError, match="walk must hold at least one query tile"):
        pv_tile_cycles([])
    with pytest.raises(ValueError, match="grid"):
        pv_tile_beats(np.zeros((8, 128), np.int8), (2, 2, 3), 1)


def test_a_long_stall_on_o_loses_no_drain(seed):
    """``o`` not ready for 1,500 cycles, then ready: the passes of the final
    key tile keep draining rows into the row FIFO; the credits must stop
    new passes before it overflows (a seeded bug with no credits loses
    rows here)."""
    import itertools

    from kaleido.tb.kit import StreamSink, StreamSource, run

    cfg = CONFIGS["b4"]
    rng = np.random.default_rng(seed)
    qts = [[random_key_tile(rng, (2, 2, 4), 6, cfg.d), random_key_tile(rng, (2, 2, 3), 6, cfg.d)]]
    ins, expected = pv_tile_words(cfg, TILE, 6, qts)

    async def bench(be):
        src = StreamSource("i", ins)
        sink = StreamSink("o")
        sink._stall = itertools.chain([1] * 1500, itertools.repeat(0))
        await run(be, sources=[src], sinks=[sink], drain=2000)
        return sink.words

    assert simulate(PvTile(cfg, TILE, 6), bench) == expected, f"seed {seed}"


@pytest.mark.parametrize(
    "name, stalls", [("b4", ("none", "none")), ("b16", ("random", "random")), ("F3", ("none", "none"))]
)
def test_dense_variant_is_the_dense_product(name, stalls, seed):
    """``PvTile(variant="dense")`` (``DensePvArray``: every anchor and
    follower a MAC beat, no reuse): every total equals the exact ``sum over
    key tiles of P V`` (golden with V's reuse off, ``F = 9``), on smooth V
    where the reuse variant's totals differ, with and without stalls."""
    cfg = CONFIGS[name]
    rng = np.random.default_rng(seed)
    qts = [[random_key_tile(rng, s, rows, cfg.d, "video") for s in shapes] for rows, shapes in WALK]
    ins, expected = pv_tile_words(cfg.replace(F=9, P=9), TILE, 6, qts)
    _, with_reuse = pv_tile_words(cfg, TILE, 6, qts)
    assert expected != with_reuse  # the check can tell the variants apart
    bench = lambda be: stream_bench(be, ins, in_stall=stalls[0], out_stall=stalls[1], seed=seed, drain=2000)
    got, _ = simulate(PvTile(cfg, TILE, 6, variant="dense"), bench)
    assert got == expected, f"seed {seed}"


def test_bad_variant_is_named():
    with pytest.raises(ValueError, match="'sparse'"):
        PvTile(variant="sparse")


#: the credit test's walk: query tiles of ``array_rows`` rows (no padded
#: row releases a credit), each one full key tile, so every pass drains
#: four real rows into the row FIFO
CREDIT_TILES = 12


def _credit_run(seed, stall):
    """The stage (``CONFIGS["b4"]``: a 4x4 array, 24 rows of row FIFO and
    credits) over :data:`CREDIT_TILES` one-key-tile query tiles of 4 rows,
    ``o`` stalled by ``stall`` (1 = not ready), white box: each cycle's
    pass start, row FIFO write, pop and level, and the registers that say
    a pass could start. Returns the stage, the cycle log and the totals."""
    import itertools

    from amaranth import Fragment
    from amaranth.sim import Simulator

    from kaleido.tb.formal import sub_internals
    from kaleido.tb.kit import AmaranthBackend, StreamSink, StreamSource, run

    cfg = CONFIGS["b4"]
    rng = np.random.default_rng(seed)
    qts = [[random_key_tile(rng, TILE, cfg.array_rows, cfg.d)] for _ in range(CREDIT_TILES)]
    ins, expected = pv_tile_words(cfg, TILE, 6, qts)
    dut = PvTile(cfg, TILE, 6)
    frag = Fragment.get(dut, None)  # simulated as is, so its registers can be read by name
    sig = sub_internals(frag)
    names = ("uc", "inflight", "running", "b_valid", "array.dispatcher.units__ready")
    names += (
        "rows.w_en",
        "rows.w_rdy",
        "rows.r_en",
        "rows.r_rdy",
        "rows.level",
        "tags.w_en",
        "tags.w_rdy",
        "tags.level",
    )
    log: list[dict[str, int]] = []
    out: dict = {}

    async def bench(ctx):
        be = AmaranthBackend(ctx, dut)
        src, sink = StreamSource("i", ins), StreamSink("o")
        sink._stall = itertools.chain(stall, itertools.repeat(0))
        each = lambda be_, cycle: log.append({n: int(ctx.get(sig[n])) for n in names})
        await run(be, sources=[src], sinks=[sink], drain=300, each_cycle=each)
        out["words"] = sink.words

    sim = Simulator(frag)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return dut, log, out["words"], expected


def test_the_row_credits_bind_exactly(seed):
    """The P V stage's in-flight credit (``inflight``: rows of the row FIFO
    reserved by passes in flight, ``array_rows`` a pass) binds at its bound
    and never past it (issue 46 item 4). ``o`` stalled for 900 cycles, then
    ready one cycle in 30, then always: the harness counts the rows
    reserved itself (``array_rows`` per pass started, minus the rows popped
    from the row FIFO; no row is padded) and checks that

    * no pass starts unless its rows fit: reserved + R <= ``fifo_rows``
      (``D`` = 24) at every start, and the count never exceeds ``D``;
    * the bound is reached: ``D`` rows reserved, the row FIFO full (level
      ``D``), and never written while full;
    * the stage stops at the bound, not one before: in every cycle where a
      pass could start (a key tile running, no unit of the pass issued, the
      array free) it starts exactly when reserved + R <= ``D``, so after
      the stall the next pass starts in the cycle after the pop that frees
      the R-th row, not a pop earlier or later;
    * the totals are golden's, and the RTL's ``inflight`` is the count;
    * the pass tags' FIFO (``D // R + 1`` deep) is never written full and
      holds at most ``D // R`` tags (one per pass holding credits); it is
      sized by the credits, not reached (its level here peaks at 2: a
      pass's tag leaves with its last drained row).

    Tightening the credit by one row (``<= D - 1``) or loosening it
    (``<= D + 1``) fails this test."""
    stall = [1] * 900 + ([0] + [1] * 29) * 80
    dut, log, got, expected = _credit_run(seed, stall)
    R, D = CONFIGS["b4"].array_rows, dut.fifo_rows
    assert D == 24
    reserved = 0
    starts = resumed = 0
    for t, c in enumerate(log):
        assert c["inflight"] == reserved, f"cycle {t}: inflight {c['inflight']}, {reserved} rows reserved"
        assert reserved <= D, f"cycle {t}: {reserved} rows reserved, the FIFO holds {D}"
        assert not (c["rows.w_en"] and not c["rows.w_rdy"]), f"cycle {t}: a drained row written to a full FIFO"
        assert not (c["tags.w_en"] and not c["tags.w_rdy"]), f"cycle {t}: a pass tag written to a full FIFO"
        assert c["tags.level"] <= D // R, f"cycle {t}: {c['tags.level']} tags, more passes than credits allow"
        start = t + 1 < len(log) and c["uc"] == 0 and log[t + 1]["uc"] != 0
        could = c["running"] and c["uc"] == 0 and (not c["b_valid"] or c["array.dispatcher.units__ready"])
        if could:
            assert start == (reserved + R <= D), (
                f"cycle {t}: {reserved} rows reserved, a pass {'started' if start else 'did not start'}"
            )
            resumed += start and t > 0 and log[t - 1]["rows.r_en"] and log[t - 1]["rows.r_rdy"] and reserved == D - R
        else:
            assert not start, f"cycle {t}: a pass started that could not"
        starts += start
        reserved += R * start - (c["rows.r_en"] and c["rows.r_rdy"])
    levels = [c["rows.level"] for c in log]
    assert max(c["inflight"] for c in log) == D, "the credits never all reserved"
    assert max(levels) == D, f"the row FIFO's level reached {max(levels)}, not its {D} rows"
    # a blocked stage restarted by the pop that freed the R-th row, more than once
    assert resumed >= 5, f"only {resumed} restarts at the bound"
    assert got == expected, f"seed {seed}"
