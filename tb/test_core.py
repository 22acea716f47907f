"""The attention core (issue 13, docs/CORE.md "The core"): a head from the
memory model through ``KaleidoAttentionCore`` into an O memory; O equals
the tiled golden walk (``golden.core.core_attention`` with the
configuration's thresholds) bit for bit."""

from __future__ import annotations

import dataclasses
import os
import pathlib

import numpy as np
import pytest

from kaleido.config import CoreConfig, KaleidoConfig
from kaleido.golden.workloads import synthetic_video
from kaleido.model import core_cycles
from kaleido.tb.core_benches import PLAIN_TOP
from kaleido.tb.core_io import core_head, core_reference, run_core, simulate_core

SEED = int(os.environ.get("KALEIDO_SEED", "1"))


@pytest.mark.parametrize(
    "grid, tile, split, batch",
    [
        ((2, 2, 4), (2, 2, 4), (4, 4, 4), 4),  # one tile: the whole head
        ((2, 2, 2), (2, 2, 4), (4, 4, 4), 4),  # N = 8: one box, clipped
        ((2, 4, 4), (2, 2, 4), (4, 4, 4), 4),  # two tiles
        pytest.param((3, 3, 5), (2, 2, 4), (4, 8, 4), 4, marks=pytest.mark.slow),  # clipped on every axis, 8 boxes
        ((2, 2, 4), (2, 2, 4), (5, 4, 7), 4),  # channel blocks across array_cols boundaries
    ],
)
def test_core_is_bit_exact(grid, tile, split, batch):
    _check_core(grid, tile, KaleidoConfig.one_array(split=split, batch=batch))


def _check_core(grid, tile, config: KaleidoConfig, pv_buffers: int = 2, s_buffers: int = 2, seed: int = SEED) -> int:
    """One head through the core in the Amaranth simulator: O bit-exact
    against the tiled golden walk, cycles the model's; returns them. A
    core that hangs fails within twice the model's cycles."""
    split = config.split
    core = CoreConfig(tile=tile, port_bytes=4, mem_latency=3, max_tokens=64, pv_buffers=pv_buffers, s_buffers=s_buffers)
    Q, K, V, scales = core_head(grid, split, seed)
    model = core_cycles(Q, K, V, grid, config, core, scales=scales)
    o, cycles = simulate_core(Q, K, V, grid, scales, config, core, limit=2 * model)
    ref = core_reference(Q, K, V, grid, scales, config, core)
    label = "" if config.sub_arrays is None else f" {config.sub_arrays}"
    assert np.array_equal(o, ref), f"seed {seed}{label}: {(o != ref).sum()} of {o.size} outputs differ"
    assert cycles == model, f"seed {seed}{label}: the core took {cycles} cycles, the model says {model}"
    return model


def test_core_with_one_pv_buffer():
    """``CoreConfig(pv_buffers=1)``, the first core's P V stage (each key
    tile's fill waits for the previous one's passes): O bit-exact, cycles
    the model's (the default, two buffers, is checked by every other core
    test). On heads this small the engine's loads and words outlast the
    P V passes, so both take the same cycles; on the 128-token default
    head (``make bench``'s) two buffers take fewer."""
    from kaleido.golden.workloads import synthetic_video

    _check_core((2, 4, 4), (2, 2, 4), KaleidoConfig.one_array(split=(4, 4, 4), batch=4), pv_buffers=1)
    w = synthetic_video("hunyuan", (2, 8, 8), "slow", 1)
    one, two = (core_cycles(w.q, w.k, w.v, w.grid, KaleidoConfig.one_array(), CoreConfig(pv_buffers=b)) for b in (1, 2))
    assert one > two, f"one buffer {one} cycles, two {two}"


def test_core_with_one_s_buffer():
    """``CoreConfig(s_buffers=1)``, the first core's engine (the next tile
    pair loads once the S tile is read): O bit-exact, cycles the model's
    (the default, two S sets, is checked by every other core test, and the
    engine's handoff by ``test_two_s_sets_overlap_the_unload``). Two sets
    take fewer cycles: the S read overlaps the next tile's load and compute."""
    one = _check_core((2, 4, 4), (2, 2, 4), KaleidoConfig.one_array(split=(4, 4, 4), batch=4), s_buffers=1)
    Q, K, V, _ = core_head((2, 4, 4), (4, 4, 4), SEED)
    core = CoreConfig(tile=(2, 2, 4), port_bytes=4, mem_latency=3, max_tokens=64)
    two = core_cycles(Q, K, V, (2, 4, 4), KaleidoConfig.one_array(split=(4, 4, 4), batch=4), core)
    assert two < one, f"two S sets {two} cycles, one {one}"


def test_core_feed_waits_for_the_previous_s_tile():
    """FEED waits for the previous pass-2 tile's S to be all read
    (``v_ready`` low), not only for its P (``fill_idle``): on (2, 4, 6),
    tile (2, 2, 4), seed 1 (the smallest head found where it binds), the
    second query box's tiles end in padding rows that are still being
    read when their last P is in. Starting the next key box's V early
    sets ``v_ready`` before the padding's last word clears it, and the S
    tile behind that V never passes the gate (no finish in 20,000
    cycles). O bit-exact, cycles the model's (its ``v_end`` term)."""
    _check_core((2, 4, 6), (2, 2, 4), KaleidoConfig.one_array(split=(4, 4, 4), batch=4), seed=1)


@pytest.mark.parametrize("sub", [(1, 1), (2, 2)])
def test_core_on_small_arrays(sub):
    """The core with its Q K^T engine on small arrays behind the shared
    queue (issue 14, ``config.sub_arrays``): O bit-exact against the same
    golden walk (the arrays' shape changes no value), cycles the model's
    (``engine_cycles`` per tile with the queue)."""
    grid, tile, split = (2, 4, 4), (2, 2, 4), (4, 4, 4)
    model = _check_core(grid, tile, KaleidoConfig.one_array(split=split, batch=4, sub_arrays=sub))
    Q, K, V, _ = core_head(grid, split, SEED)
    core = CoreConfig(tile=tile, port_bytes=4, mem_latency=3, max_tokens=64)
    assert model != core_cycles(Q, K, V, grid, KaleidoConfig.one_array(split=split, batch=4), core), (
        "the shape cost nothing"
    )


def test_core_with_random_stalls():
    """The memory stalls requests and delays responses at random and the
    write port refuses writes at random: O stays bit-exact, and the stalls
    cost cycles over the model's stall-free count."""
    grid, tile, split = (2, 2, 4), (2, 2, 4), (5, 4, 7)
    config = KaleidoConfig.one_array(split=split, batch=4)
    core = CoreConfig(tile=tile, port_bytes=4, mem_latency=3, max_tokens=64)
    Q, K, V, scales = core_head(grid, split, SEED)
    o, cycles = simulate_core(Q, K, V, grid, scales, config, core, stall_seed=SEED)
    ref = core_reference(Q, K, V, grid, scales, config, core)
    assert np.array_equal(o, ref), f"seed {SEED}: {(o != ref).sum()} of {o.size} outputs differ"
    assert cycles > core_cycles(Q, K, V, grid, config, core), f"seed {SEED}: the stalls cost nothing"


@pytest.mark.parametrize(
    "grid, tile, split, batch",
    [
        ((2, 2, 2), (2, 2, 4), (4, 4, 4), 4),  # N = 8: one box, clipped
        ((2, 2, 4), (2, 2, 4), (5, 4, 7), 4),  # N = 16: channel blocks across array_cols boundaries
        ((2, 4, 4), (2, 2, 4), (4, 4, 4), 4),  # N = 32: two tiles
        ((2, 2, 4), (2, 2, 4), (11, 10, 11), 8),  # Wan-like: no group a multiple of the batch or of array_cols
        pytest.param((3, 3, 5), (2, 2, 4), (4, 8, 4), 4, marks=pytest.mark.slow),  # clipped on every axis
    ],
)
def test_dense_core_is_bit_exact(grid, tile, split, batch):
    """``KaleidoAttentionCore(variant="dense")`` (``DenseEngine``, the P V
    stage on ``DensePvArray``): O bit-exact against ``core_attention`` with
    reuse off; on the reuse core's heads the reuse golden differs, so the
    check tells the variants apart."""
    config = KaleidoConfig.one_array(split=split, batch=batch)
    core = CoreConfig(tile=tile, port_bytes=4, mem_latency=3, max_tokens=64)
    Q, K, V, scales = core_head(grid, split, SEED)
    o, cycles = simulate_core(Q, K, V, grid, scales, config, core, variant="dense")
    ref = core_reference(Q, K, V, grid, scales, config, core, variant="dense")
    assert np.array_equal(o, ref), f"seed {SEED}: {(o != ref).sum()} of {o.size} outputs differ"
    model = core_cycles(Q, K, V, grid, config, core, variant="dense")
    assert cycles == model, f"seed {SEED}: the dense core took {cycles} cycles, the model says {model}"


@pytest.mark.rtl
def test_dense_core_on_icarus():
    """The emitted dense core bench on Icarus (the fast path: the
    testbench only waits for ``busy`` to fall), one tile: O bit-exact with
    reuse off, ``cycles`` the dense model's."""
    grid = tile = (2, 2, 4)
    split = (5, 4, 7)
    config = KaleidoConfig.one_array(split=split, batch=4)
    core = CoreConfig(tile=tile, port_bytes=4, mem_latency=3, max_tokens=64)
    Q, K, V, scales = core_head(grid, split, SEED)
    res = run_core("icarus", Q, K, V, grid, scales, config, core, variant="dense")
    assert not res["failed"], f"seed {SEED}: the testbench failed, see {res['build_dir']}"
    ref = core_reference(Q, K, V, grid, scales, config, core, variant="dense")
    assert np.array_equal(res["o"], ref), f"seed {SEED}: {(res['o'] != ref).sum()} outputs differ"
    assert res["cycles"] == core_cycles(Q, K, V, grid, config, core, variant="dense"), f"seed {SEED}"


def test_core_and_model_reject_spilling_s():
    """The core recomputes S in pass 2 (the default); ``s_pass="spill"``
    is the golden model's traffic count only, and a core or cycle count
    asked for it says so instead of silently recomputing."""
    from kaleido.hdl.core import KaleidoAttentionCore

    assert CoreConfig().s_pass == "recompute"
    spill = CoreConfig(tile=(2, 2, 4), port_bytes=4, max_tokens=64, s_pass="spill")
    with pytest.raises(ValueError, match="s_pass='spill'"):
        KaleidoAttentionCore(KaleidoConfig.one_array(split=(5, 4, 7), batch=4), spill)
    Q, K, V, _ = core_head((2, 2, 4), (5, 4, 7), SEED)
    with pytest.raises(ValueError, match="s_pass='spill'"):
        core_cycles(Q, K, V, (2, 2, 4), KaleidoConfig.one_array(split=(5, 4, 7), batch=4), spill)


def test_core_with_small_p_pairing():
    """Small-P pairing (``pv_pairs``, issue 14) in the core: O bit-exact
    (the products are the same) and the cycles the model's with each tile's
    P (:func:`kaleido.golden.core.query_tile_p`); the P V stage's beats are
    fewer than without pairing (on a head this small the engine's loads
    outlast the P V stage, so the core's cycles stay the same); the model
    asks for the scales it needs."""
    from kaleido.golden.core import query_tile_p
    from kaleido.loopnest import tile_boxes
    from kaleido.model import pv_tile_run

    grid, tile = (2, 4, 4), (2, 2, 4)
    config = KaleidoConfig.one_array(split=(4, 4, 4), batch=4, pv_pairs=True)
    _check_core(grid, tile, config, pv_buffers=1)
    core = CoreConfig(tile=tile, port_bytes=4, mem_latency=3, max_tokens=64, pv_buffers=1)
    Q, K, V, scales = core_head(grid, config.split, SEED)
    boxes = tile_boxes(grid, tile)
    beats = {True: 0, False: 0}
    for qb in boxes:
        ps = query_tile_p(Q, K, qb, boxes, config.split, scales, thresholds=config.thresholds)
        for kb, p in zip(boxes, ps, strict=True):
            for pairs in beats:
                run = pv_tile_run(V[kb.tokens], kb.shape, len(qb.tokens), config.replace(pv_pairs=pairs), p)
                beats[pairs] += run[0]
    assert beats[True] < beats[False], f"seed {SEED}: {beats}"
    with pytest.raises(ValueError, match="pv_pairs needs scales"):
        core_cycles(Q, K, V, grid, config, core)


def test_core_with_run_time_thresholds():
    """The head command's Q K^T thresholds (``head_layout``'s
    ``thresholds``, e.g. ``kaleido calibrate``'s) drive the engine's
    run-time port: O is the golden walk's with those thresholds, not the
    configuration's, and the cycles are the model's for a configuration
    with them (P V keeps ``config.F``)."""
    grid, tile = (2, 4, 4), (2, 2, 4)
    config = KaleidoConfig.one_array(split=(4, 4, 4), batch=4)
    th = ((4, 2), (5, 3), (3, 2))
    core = CoreConfig(tile=tile, port_bytes=4, mem_latency=3, max_tokens=64)
    Q, K, V, scales = core_head(grid, config.split, SEED)
    o, cycles = simulate_core(Q, K, V, grid, scales, config, core, thresholds=th)
    ref = core_reference(Q, K, V, grid, scales, config, core, thresholds=th)
    assert not np.array_equal(ref, core_reference(Q, K, V, grid, scales, config, core)), "the thresholds changed no O"
    assert np.array_equal(o, ref), f"seed {SEED}: {(o != ref).sum()} of {o.size} outputs differ"
    model = core_cycles(Q, K, V, grid, config.replace(group_thresholds=th), core)
    assert model != core_cycles(Q, K, V, grid, config, core), "the thresholds changed no cycle"
    assert cycles == model, f"seed {SEED}: the core took {cycles} cycles, the model says {model}"
    with pytest.raises(ValueError, match="thresholds must be an"):
        simulate_core(Q, K, V, grid, scales, config, core, thresholds=(4, 2, 1))


def test_core_rejects_an_unknown_variant():
    from kaleido.hdl.core import KaleidoAttentionCore

    with pytest.raises(ValueError, match="'sparse'"):
        KaleidoAttentionCore(KaleidoConfig.one_array(), CoreConfig(), variant="sparse")
    Q, K, V, scales = core_head((2, 2, 2), (4, 4, 4), SEED)
    with pytest.raises(ValueError, match="'sparse'"):
        core_reference(
            Q, K, V, (2, 2, 2), scales, KaleidoConfig.one_array(split=(4, 4, 4)), CoreConfig(), variant="sparse"
        )


@pytest.mark.rtl
@pytest.mark.parametrize(
    "sim, grid, config",
    [
        ("icarus", (2, 2, 4), KaleidoConfig.one_array(split=(5, 4, 7), batch=4)),
        ("verilator", (3, 3, 5), KaleidoConfig(split=(16, 16, 16), batch=16)),  # the default design
    ],
    ids=["icarus", "verilator"],
)
def test_core_fast_path(sim, grid, config):
    """The emitted core bench on each simulator as ``make sim`` runs it
    (Icarus under cocotb, the testbench only waiting for ``busy`` to fall;
    Verilator as a plain binary whose Verilog top level does the same; the
    cocotb path on Verilator runs in ``make soak`` and ``make bench``): O
    bit-exact, ``cycles`` the model's. Icarus runs
    one tile; Verilator a head clipped on every axis (8 boxes) on the
    default design (Q K^T on 16 1x1 arrays, small-P pairing on P V) with 48
    channels, where the P V stage's passes
    outlast the engine's next tile, so its two buffers save cycles (the
    one-buffer model's count differs: this checks the two-buffer timing of
    ``core_cycles`` against the RTL where it matters). On Verilator a
    second head (other data and thresholds) then runs on the same build:
    the image and the command are read at run time."""
    tile, split = (2, 2, 4), config.split
    core = CoreConfig(tile=tile, port_bytes=4, mem_latency=3, max_tokens=64)
    Q, K, V, scales = core_head(grid, split, SEED)
    harness = "binary" if sim == "verilator" else "cocotb"  # make sim's on each
    res = run_core(sim, Q, K, V, grid, scales, config, core, cxx_opt="-O0", harness=harness)
    assert not res["failed"], f"seed {SEED}: the testbench failed, see {res['build_dir']}"
    ref = core_reference(Q, K, V, grid, scales, config, core)
    assert np.array_equal(res["o"], ref), f"seed {SEED}: {(res['o'] != ref).sum()} outputs differ"
    assert res["cycles"] == core_cycles(Q, K, V, grid, config, core, scales=scales), f"seed {SEED}"
    if sim == "icarus":
        return
    one = core_cycles(Q, K, V, grid, config, dataclasses.replace(core, pv_buffers=1), scales=scales)
    assert one > res["cycles"], f"seed {SEED}: one P V buffer {one} cycles, two {res['cycles']}"
    # another head of the same size: the same build, not rebuilt (the data is read at run time)
    built = pathlib.Path(res["build_dir"]) / "obj" / f"V{PLAIN_TOP}"  # the binary
    stamp = built.stat().st_mtime_ns
    thresholds = ((6, 4), (5, 3), (7, 4))
    Q2, K2, V2, scales2 = core_head(grid, split, SEED + 1)
    again = run_core(
        sim, Q2, K2, V2, grid, scales2, config, core, cxx_opt="-O0", thresholds=thresholds, harness="binary"
    )
    assert again["build_dir"] == res["build_dir"] and built.stat().st_mtime_ns == stamp, "rebuilt"
    ref2 = core_reference(Q2, K2, V2, grid, scales2, config, core, thresholds=thresholds)
    assert not np.array_equal(ref2, ref), f"seed {SEED + 1}: the second head's O is the first's"
    assert not again["failed"], f"seed {SEED + 1}: the testbench failed, see {again['build_dir']}"
    assert np.array_equal(again["o"], ref2), f"seed {SEED + 1}: {(again['o'] != ref2).sum()} outputs differ"


def test_core_bench_emission_cache_follows_the_source(tmp_path):
    """``emit_core_bench`` reuses a file emitted from the same parameters
    and source: the source digest moves with any RTL or configuration
    module and not with others; the parameters' key with the head's size
    and configuration and not with its data."""
    from kaleido.config import SoftmaxFormat
    from kaleido.tb.core_benches import CoreBench, source_digest

    for folder, name in (("kaleido", "config.py"), ("hdl", "core.py"), ("tb", "test_x.py")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / name).write_text("x = 1\n")
    before = source_digest(tmp_path)
    (tmp_path / "tb" / "test_x.py").write_text("x = 2\n")
    assert source_digest(tmp_path) == before  # not the RTL's
    for path in (tmp_path / "hdl" / "core.py", tmp_path / "kaleido" / "config.py"):
        path.write_text(path.read_text() + "# changed\n")
        assert source_digest(tmp_path) != before, path
        before = source_digest(tmp_path)
    core, fmt = CoreConfig(tile=(2, 2, 4), port_bytes=4, mem_latency=3, max_tokens=64), SoftmaxFormat()
    config = KaleidoConfig.one_array(split=(5, 4, 7), batch=4)
    key = CoreBench(100, 256, config, core, fmt, external=True).key
    assert CoreBench([1] * 100, 256, config, core, fmt, external=True).key == key  # the data is not in it
    assert CoreBench(101, 256, config, core, fmt, external=True).key != key
    assert CoreBench(100, 256, config.replace(F=6, P=3), core, fmt, external=True).key != key
    assert CoreBench(100, 256, config, core, fmt, stall_seed=3, external=True).key != key


@pytest.mark.parametrize(
    "argv, match",
    [
        (["--harness", "gpi"], r"--harness takes binary, cocotb, not 'gpi'"),
        (["--harness", ","], r"--harness takes binary, cocotb, not ','"),
        (["--repeat", "0"], r"--repeat must be at least 1, not 0"),
        (["--grid", "4,16"], r"--grid must be three positive integers T,H,W, not '4,16'"),
        (["--cocotb-grid", "2,x,8"], r"--cocotb-grid must be three positive integers T,H,W, not '2,x,8'"),
    ],
)
def test_core_sim_bench_rejects_bad_arguments(argv, match, tmp_path):
    """``make bench``'s simulation-speed bench stops with a message naming
    the bad value, before it builds or simulates anything."""
    from kaleido.tb.core_sim_bench import main as bench

    with pytest.raises(SystemExit, match=match):
        bench([*argv, "--out", str(tmp_path / "core_sim.json")])
    assert not (tmp_path / "core_sim.json").exists()


def test_core_sim_bench_writes_one_csv_line_a_run():
    """The speed bench's CSV: a header, then one line per run of each row
    with that run's seconds and rate, in the rows' order."""
    import csv
    import io

    from kaleido.tb.core_sim_bench import GOAL, runs_csv

    row = {"harness": "binary", "simulator": "verilator", "tokens": 8, "cycles": 100, "model_cycles": 100}
    rows = [
        {**row, "bit_exact": True, "run_seconds": [0.5, 0.25], "runs_cycles_per_s": [200, 400]},
        {**row, "harness": "cocotb", "bit_exact": False, "run_seconds": [1.0], "runs_cycles_per_s": [100]},
    ]
    got = list(csv.DictReader(io.StringIO(runs_csv(rows))))
    assert [(r["harness"], r["run"], r["run_seconds"], r["sim_cycles_per_s"]) for r in got] == [
        ("binary", "1", "0.5", "200"),
        ("binary", "2", "0.25", "400"),
        ("cocotb", "1", "1.0", "100"),
    ]
    assert [r["bit_exact"] for r in got] == ["True", "True", "False"]
    assert {r["goal_cycles_per_s"] for r in got} == {str(GOAL)}


@pytest.mark.parametrize(
    "argv, match",
    [
        (["--grid", "0,4,4"], r"at least 1, not \(0, 4, 4\)"),
        (["--grid", "64,32,32"], r"65536 tokens; the core addresses at most 32768"),
        (["--grid", "2,4,x"], r"--grid must be comma-separated integers, not '2,4,x'"),
        (["--preset", "sora"], r"--preset must be one of \['hunyuan', 'wan'\], not 'sora'"),
        (["--sim", "xcelium"], r"--sim must be one of \('icarus', 'verilator'\), not 'xcelium'"),
        (["--tile", "2,3,8"], r"tile must be three even extents >= 2"),
        (["--port-bytes", "48"], r"d = 128 must be a multiple of port_bytes = 48"),
        (["--latency", "0"], r"mem_latency must be a positive integer, not 0"),
        (["--sub-arrays", "2x2x2"], r"--sub-arrays must be N or RxC, not '2x2x2'"),
        (["--design", "fast"], r"--design must be one of \['default', 'one_array', 'paper'\], not 'fast'"),
        (["--sub-arrays", "3"], r"sub_arrays \(3, 3\) must divide the 4x4 pass"),
        (["--s-buffers", "3"], r"s_buffers must be 1 or 2, not 3"),
        (["--thresholds", "no_such_file.json"], r"thresholds must be a calibration JSON file .* not 'no_such_file"),
        (["--thresholds", "7,4,9"], r"thresholds must be 2 or 6 integers"),
        (["--calibrate", "--thresholds", "5,4"], r"--calibrate chooses the thresholds: drop --thresholds '5,4'"),
    ],
)
def test_demo_rejects_bad_arguments(argv, match):
    """``make sim`` with a bad grid, preset, simulator, tile or port stops
    with a message naming the value, before anything is emitted or built."""
    from kaleido.tb.demo import main as demo

    with pytest.raises(SystemExit, match=match):
        demo(argv)


def test_demo_calibrates_on_the_other_motion():
    """``make sim CALIBRATE=1``: the head's thresholds are chosen on the same
    layer seeing the fast motion, not on the (slow) head it runs."""
    import argparse

    from kaleido.calibrate import calibrate
    from kaleido.tb.demo import run_thresholds

    grid, seed, config = (2, 8, 8), 2, KaleidoConfig()
    args = argparse.Namespace(thresholds=None, calibrate=True, preset="hunyuan", seed=seed)
    heads = {m: synthetic_video("hunyuan", grid, m, seed) for m in ("slow", "fast")}
    chosen = {m: calibrate(h.q, h.k, h.v, h.grid, h.split, config, scales=h.scales) for m, h in heads.items()}
    assert chosen["slow"]["thresholds"] != chosen["fast"]["thresholds"], f"seed {seed}: the motions agree"
    assert run_thresholds(args, grid, config) == tuple(tuple(p) for p in chosen["fast"]["thresholds"])
    assert run_thresholds(argparse.Namespace(thresholds=None, calibrate=False), grid, config) is None


@pytest.mark.parametrize(
    "change, match",
    [
        (lambda q, k, v, g: (q.astype(np.int16), k, v, g), r"Q must have dtype int8, not int16"),
        (lambda q, k, v, g: (q, k, v[:-1], g), r"V must have the shape of Q"),
        (lambda q, k, v, g: (q, k, v, (2, 2, 2)), r"grid"),
        (lambda q, k, v, g: (q[:, :-1], k[:, :-1], v[:, :-1], g), r"split"),
    ],
)
def test_core_input_is_checked(change, match):
    """A head the core cannot take is rejected with a message naming the
    value: dtype, shapes, a grid that does not hold the tokens, a split
    that is not d's; and N beyond ``max_tokens``."""
    from kaleido.hdl.core import check_core_input

    grid, split = (2, 2, 4), (4, 4, 4)
    config = KaleidoConfig.one_array(split=split, batch=4)
    core = CoreConfig(tile=(2, 2, 4), port_bytes=4, max_tokens=64)
    Q, K, V, _ = core_head(grid, split, SEED)
    q, k, v, g = change(Q, K, V, grid)
    with pytest.raises((ValueError, TypeError), match=match):
        check_core_input(q, k, v, g, split, config, core)
    with pytest.raises(ValueError, match="the core addresses at most 8"):
        check_core_input(Q, K, V, grid, split, config, CoreConfig(tile=(2, 2, 4), port_bytes=4, max_tokens=8))


@pytest.mark.soak
def test_core_soak():
    """``make soak``: a 256-token head of the default configuration (about
    1.3 million cycles without stalls) through the core on Verilator with
    random stalls on both memory ports and random read latency: O
    bit-exact, and at least 10^6 cycles simulated."""
    grid = (2, 8, 16)
    config, core = KaleidoConfig.one_array(), CoreConfig(max_tokens=4096)
    w = synthetic_video("hunyuan", grid, "fast", SEED % 1000)
    res = run_core("verilator", w.q, w.k, w.v, grid, w.scales, config, core, stall_seed=SEED)
    assert not res["failed"], f"seed {SEED}: the testbench failed, see {res['build_dir']}"
    ref = core_reference(w.q, w.k, w.v, grid, w.scales, config, core)
    wrong = int((res["o"] != ref).sum())
    print(f"core soak, seed {SEED}: {res['cycles']:,} cycles, {wrong} mismatches")
    assert wrong == 0, f"seed {SEED}: {wrong} outputs differ"
    assert res["cycles"] >= 1_000_000, f"seed {SEED}: only {res['cycles']} cycles"


def test_core_memories_have_at_most_two_ports():
    """Every on-chip memory of the default core is an Amaranth ``Memory``
    with at most two ports (one write and one read, or two reads of a
    ROM), and the memories hold the same bits for any head size the
    configuration addresses: N is a run-time value."""
    from kaleido.hdl.core import KaleidoAttentionCore
    from kaleido.tb.core_buffers import memories

    for cfg in (KaleidoConfig(), KaleidoConfig.one_array()):  # 16 1x1 arrays or one 4x4: the same memories
        mems = memories(KaleidoAttentionCore(cfg, CoreConfig()))
        crowded = [m["path"] for m in mems if m["read_ports"] + m["write_ports"] > 2]
        assert not crowded, f"{cfg.design}: memories with more than two ports: {crowded}"
        assert len(mems) >= 30
        total = sum(m["bits"] for m in mems)
        assert total < 1_200_000, f"{cfg.design}: {total} bits of on-chip memory"  # 1,185,438 (docs/CORE.md)


def test_dense_core_has_the_same_buffers():
    """The dense core's memories (default configuration) have at most two
    ports, and outside the engine they are the Kaleido core's, one for one
    (the feeder's tiles, the softmax's row state, the P V stage's P and V
    tiles and O accumulators, the FIFOs, the r and token banks); in the
    engine the same S banks, and Q and K once each (``R + C`` banks) where
    the Kaleido engine keeps two copies and its scheduling memories."""
    from kaleido.hdl.core import KaleidoAttentionCore
    from kaleido.tb.core_buffers import memories

    cfg, core = KaleidoConfig.one_array(), CoreConfig()
    kaleido, dense = (memories(KaleidoAttentionCore(cfg, core, variant=v)) for v in ("kaleido", "dense"))
    crowded = [m["path"] for m in dense if m["read_ports"] + m["write_ports"] > 2]
    assert not crowded, f"memories with more than two ports: {crowded}"

    def shared(mems):
        keep = ("core.engine.accumulator.",)
        return sorted(
            (m["path"], m["depth"], m["width"])
            for m in mems
            if not m["path"].startswith("core.engine.") or m["path"].startswith(keep)
        )

    assert shared(dense) == shared(kaleido)
    banks = [m for m in dense if m["path"].startswith(("core.engine.q_bank", "core.engine.k_bank"))]
    n_batches = len(cfg.batches)
    assert len(banks) == cfg.array_rows + cfg.array_cols
    assert sum(m["bits"] for m in banks) == 2 * core.tile_tokens * n_batches * 8 * cfg.batch
    assert len(shared(dense)) + len(banks) == len(dense)


@pytest.mark.slow
def test_core_fifos_under_a_long_write_stall():
    """The core's two control FIFOs (issue 46 item 4), white box, on three
    query boxes (grid (2, 2, 12)) with the write port refusing every write
    for the first 8,000 cycles: ``o_rows`` (the query boxes whose O is
    pending, one per parity bank of ``tokens`` and ``recips``) fills to its
    2 entries and is never written full; ``tags`` (the tiles between the
    feeder's command and the router) peaks at 3 of its 4 (the feeder's
    tile and the engine's two S sets): a bound sized, never reached. O
    stays bit-exact: the third box's tokens never overwrite the first
    box's bank while its O is pending. With ``o_rows`` 3 deep the level
    still peaks at 2 (the P V stage's back-pressure stops the third box
    first, 12,300 cycles either way), so no test can reach a third entry;
    with 1 deep ``test_core_is_bit_exact`` fails on cycles."""
    from amaranth import Fragment, Module
    from amaranth.lib import wiring
    from amaranth.lib.wiring import Out
    from amaranth.sim import Simulator

    from kaleido.config import SoftmaxFormat
    from kaleido.tb.core_benches import CoreBench
    from kaleido.tb.core_io import core_command, decode_o
    from kaleido.tb.formal import sub_internals

    class HeldBits(wiring.Component):
        """The bench's stall bits, left to the testbench (``bits[4:6] == 0``: no write taken)."""

        def __init__(self) -> None:
            super().__init__({"bits": Out(32)})

        def elaborate(self, platform):
            return Module()

    grid, split = (2, 2, 12), (4, 4, 4)
    config = KaleidoConfig.one_array(split=split, batch=4)
    core = CoreConfig(tile=(2, 2, 4), port_bytes=4, mem_latency=3, max_tokens=64)
    fmt = SoftmaxFormat()
    Q, K, V, scales = core_head(grid, split, SEED)
    n, d = Q.shape
    C = config.array_cols
    image, cmd = core_command(Q, K, V, grid, scales, config, core, fmt, None)
    dut = CoreBench(image, n * d, config, core, fmt)
    dut.stalls = HeldBits()  # the bench's write stalls, from the testbench instead of an LFSR
    frag = Fragment.get(dut, None)
    sig = sub_internals(frag)
    names = ("core.o_rows.level", "core.o_rows.w_en", "core.o_rows.w_rdy", "core.tags.level")
    peak = {k: 0 for k in names}
    out: list = []

    async def bench(ctx):
        ctx.set(dut.stalls.bits, 0)
        ctx.set(dut.cmd.payload, cmd)
        ctx.set(dut.cmd.valid, 1)
        await ctx.tick()
        ctx.set(dut.cmd.valid, 0)
        cycle = 0
        while ctx.get(dut.busy):
            if cycle == 8000:
                ctx.set(dut.stalls.bits, 0xFFFF_FFFF)
            got = {k: int(ctx.get(sig[k])) for k in names}
            assert not (got["core.o_rows.w_en"] and not got["core.o_rows.w_rdy"]), f"cycle {cycle}"
            peak.update({k: max(peak[k], got[k]) for k in names})
            await ctx.tick()
            cycle += 1
            assert cycle < 100_000
        out.append(decode_o([ctx.get(dut.o_banks[e % C].data[e // C]) for e in range(n * d)], n, d, dut.width))

    sim = Simulator(frag)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    ref = core_reference(Q, K, V, grid, scales, config, core)
    assert np.array_equal(out[0], ref), f"seed {SEED}: {(out[0] != ref).sum()} of {out[0].size} outputs differ"
    assert peak["core.o_rows.level"] == 2, peak
    assert peak["core.tags.level"] == 3, peak
