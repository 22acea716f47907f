"""The cycle model against the golden loop nest and the RTL timing rules
(the RTL itself is compared in tb/cocotb_array.py and the Amaranth tests)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kaleido import KaleidoConfig
from kaleido.encoding import Phase
from kaleido.golden.loopnest import iter_passes
from kaleido.golden.workloads import constant_workload, random_workload, synthetic_video
from kaleido.model import VARIANTS, run_model, stream_cycles
from kaleido.tb.strategies import heads


def _loop_beats(Q, K, grid, split, cfg, variant):
    scheduler, matcher = VARIANTS[variant]
    per_phase = [0, 0, 0, 0]
    passes = 0
    for ps in iter_passes(Q, K, grid, split, cfg, matcher=matcher, scheduler=scheduler):
        passes += 1
        for p in Phase:
            per_phase[p] += max(1, len(ps.slots[p]))
    return per_phase, passes


@given(
    heads(max_extent=5, max_group=6),
    st.sampled_from(sorted(VARIANTS)),
    st.sampled_from([3, 4]),
    st.integers(1, 6),
    st.integers(1, 3),
    st.integers(1, 3),
    st.integers(0, 5),
)
def test_model_equals_loop_nest(head, variant, acc, batch, rows, cols, lookahead):
    Q, K, grid, split = head
    cfg = KaleidoConfig.one_array(
        split=split, batch=batch, accumulators=acc, array_rows=rows, array_cols=cols, lookahead=max(1, lookahead)
    )
    per_phase, passes = _loop_beats(Q, K, grid, split, cfg, variant)
    r = run_model(Q, K, grid, split, cfg, variant=variant)
    assert [r.phases[p.name]["beats"] for p in Phase] == per_phase
    assert r.passes == passes and r.beats == sum(per_phase)
    assert r.cycles == stream_cycles(sum(per_phase), cfg)


def test_arrays_round_robin():
    w = synthetic_video("hunyuan", (2, 4, 4), "slow", seed=0)
    cfg = KaleidoConfig.one_array()
    one = run_model(w.q, w.k, w.grid, w.split, cfg, arrays=1)
    two = run_model(w.q, w.k, w.grid, w.split, cfg, arrays=2)
    assert two.beats == one.beats
    assert one.cycles / 2 <= two.cycles < one.cycles
    assert two.dense_cycles < one.dense_cycles


def test_bounds():
    cfg = KaleidoConfig.paper(split=(2, 3, 3))  # three accumulators: r3
    c = constant_workload((4, 4, 4), (2, 3, 3))
    r3 = run_model(c.q, c.k, c.grid, c.split, cfg)
    r4 = run_model(c.q, c.k, c.grid, c.split, cfg.replace(accumulators=4))
    assert r3.ops["hw"] * 2 == r3.ops["dense"] and r4.ops["hw"] * 4 == r4.ops["dense"]
    assert r4.cycles < r3.cycles
    rnd = random_workload((4, 4, 4), (2, 3, 3))
    rr = run_model(rnd.q, rnd.k, rnd.grid, rnd.split, cfg, variant="pe")
    assert rr.speedup < 1.05  # no reuse, no gain (padding may even cost)
    assert 0 < rr.utilization <= 1 and 0 < r3.utilization <= 1


def test_pass_gap():
    """The bare array's passes back to back; one idle beat between passes
    (the single-buffered dispatcher) adds one beat per pass and one at the
    start; a dispatcher in front of back-to-back passes adds its
    ``DISPATCH_LATENCY`` start cycles (take, job, slot register)."""
    w = synthetic_video("hunyuan", (2, 4, 4), "slow", seed=0)
    cfg = KaleidoConfig.one_array()
    a = run_model(w.q, w.k, w.grid, w.split, cfg, variant="pe-m")
    b = run_model(w.q, w.k, w.grid, w.split, cfg, variant="pe-m", pass_gap=1)
    assert b.cycles == a.cycles + a.passes + 1
    d = run_model(w.q, w.k, w.grid, w.split, cfg, variant="pe-m", dispatcher=True)
    assert d.cycles == a.cycles + 3


def test_wrong_arguments():
    w = random_workload((2, 2, 2), (1, 1, 1))
    with pytest.raises(ValueError, match="variant must be one of"):
        run_model(w.q, w.k, w.grid, w.split, variant="turbo")
    with pytest.raises(ValueError, match="arrays must be a positive integer, not 0"):
        run_model(w.q, w.k, w.grid, w.split, arrays=0)
    with pytest.raises(ValueError, match=r"split \(1, 1, 2\) sums to 4, but the head dimension d is 3"):
        run_model(w.q, w.k, w.grid, (1, 1, 2))
    with pytest.raises(TypeError, match="Q must have dtype int8, not int32"):
        run_model(w.q.astype(np.int32), w.k, w.grid, w.split)


def test_tile_traffic_counts_every_score_once_per_batch():
    from kaleido.bench.tiles import tile_traffic

    w = synthetic_video("hunyuan", (2, 3, 5), "fast", seed=2)
    cfg = KaleidoConfig.one_array()
    t = tile_traffic(w, cfg)
    assert t["tiles"] == w.n * w.n * len(cfg.batches)  # each (i, j) once per batch
    assert sum(t["histogram"][1:]) <= t["beats"] + 8 and t["max_per_cycle"] <= 16


def test_core_model_bench_times_both_cores(tmp_path):
    """`make bench`'s core-model entry: the cycles it writes are
    core_cycles' own for both cores, and a bad grid is named."""
    from kaleido.bench.core_model import main as bench_core_model
    from kaleido.config import PRESETS, CoreConfig
    from kaleido.golden.workloads import synthetic_video
    from kaleido.model import core_cycles

    out = bench_core_model(["--grid", "2,4,16", "--out", str(tmp_path / "core_model.json")])
    w = synthetic_video("hunyuan", (2, 4, 16), "slow", 1)
    cfg = KaleidoConfig(split=PRESETS["hunyuan"]["split"])  # the default design: small arrays, small-P pairing
    assert out["tile_pairs"] == 4 and out["design"] == "default"
    kaleido = core_cycles(w.q, w.k, w.v, (2, 4, 16), cfg, CoreConfig(), scales=w.scales)
    assert out["kaleido"]["cycles"] == kaleido
    assert kaleido != core_cycles(w.q, w.k, w.v, (2, 4, 16), KaleidoConfig.one_array(split=cfg.split), CoreConfig())
    dense = core_cycles(w.q, w.k, w.v, (2, 4, 16), cfg, CoreConfig(), variant="dense", scales=w.scales)
    assert out["dense"]["cycles"] == dense
    for bad in ("2,x,16", "4,16"):
        with pytest.raises(SystemExit, match=f"--grid '{bad}'"):
            bench_core_model(["--grid", bad, "--out", str(tmp_path / "bad.json")])


def _queue_cycles(Q, K, grid, split, cfg, matcher):
    """The default design's small arrays the plain way: every (row unit,
    column unit) pass of the golden loop nest on the 1x1 array (no
    scheduler), laid out as the blocks of each 4x4 pass in order, dealt one
    a cycle to the lowest-index array with a free pass buffer (two per
    dispatcher, each free from the cycle after its block's last beat), the
    block's beats three cycles after it is taken or right after the array's
    previous block; the first block leaves the queue's stage two cycles
    after the first pass is taken (latch, stage); the batches back to
    back. Returns (cycles, beats, blocks)."""
    from kaleido.model import array_drain

    sub = cfg.sub_config()
    R, C = cfg.array_rows, cfg.array_cols
    beats = {}
    for ps in iter_passes(Q, K, grid, split, sub, matcher=matcher):
        beats.setdefault(id(ps.batch), []).append(sum(max(1, len(ps.slots[p])) for p in Phase))
    last = [[-1, -1] for _ in range(cfg.n_arrays)]  # per array: the last beats of its two latest blocks
    t, end, total, blocks = 1, 0, 0, 0
    for b in beats:  # in loop-nest order
        n = int(np.sqrt(len(beats[b])))
        grid_beats = np.array(beats[b]).reshape(n, n)
        for g in range(-(-n // R)):
            for h in range(-(-n // C)):
                for k in range(R * C):
                    i, j = g * R + k // C, h * C + k % C
                    t += 1
                    if i < n and j < n:
                        while all(older >= t for older, _ in last):
                            t += 1
                        a = next(x for x in range(len(last)) if last[x][0] < t)
                        first = max(t + 3, last[a][1] + 1)
                        last[a] = [last[a][1], first + int(grid_beats[i, j]) - 1]
                        end = max(end, last[a][1])
                        total += int(grid_beats[i, j])
                        blocks += 1
    return end + array_drain(sub), total, blocks


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("variant", ["pe", "pe-m"])
def test_small_arrays_equal_the_plain_queue(seed, variant, monkeypatch):
    """The default design (``sub_arrays=(1, 1)``): ``run_model``'s cycles,
    beats and blocks equal the golden loop nest's passes on a 1x1 array
    put through the shared queue the plain way (:func:`_queue_cycles`),
    on heads whose unit counts leave absent blocks, also laid out in
    pieces; the dense cycles and ops are one 4x4 array's."""
    rng = np.random.default_rng(seed)
    grid = tuple(int(x) for x in rng.integers(2, 5, size=3))
    w = synthetic_video("hunyuan", grid, "slow", seed)
    cfg = KaleidoConfig(split=w.split, batch=8)
    r = run_model(w.q, w.k, w.grid, w.split, cfg, variant=variant)
    cycles, beats, blocks = _queue_cycles(w.q, w.k, w.grid, w.split, cfg, VARIANTS[variant][1])
    assert (r.cycles, r.beats, r.passes, r.arrays) == (cycles, beats, blocks, 16), f"seed {seed} grid {grid}"
    assert r.speedup == r.dense_cycles / r.cycles
    monkeypatch.setattr("kaleido.model.queue.BLOCK_CHUNK", 24)  # a batch's blocks in several pieces: the same
    assert run_model(w.q, w.k, w.grid, w.split, cfg, variant=variant).as_dict() == r.as_dict()
    one = run_model(w.q, w.k, w.grid, w.split, KaleidoConfig.one_array(split=w.split, batch=8), variant=variant)
    assert r.dense_cycles == one.dense_cycles and r.ops == one.ops


def test_small_arrays_arguments():
    """Small arrays are one queue: ``pass_gap`` 0 (the default: double-buffered
    dispatchers) or 1 (single-buffered ones, slower), and another
    ``arrays`` or ``pass_gap`` is refused by name."""
    w = synthetic_video("hunyuan", (2, 4, 4), "slow", 0)
    cfg = KaleidoConfig(split=w.split)
    default = run_model(w.q, w.k, w.grid, w.split, cfg).cycles
    assert default == run_model(w.q, w.k, w.grid, w.split, cfg, pass_gap=0).cycles
    assert default < run_model(w.q, w.k, w.grid, w.split, cfg, pass_gap=1).cycles
    for kw, bad in (({"pass_gap": 2}, "not 1 and 2"), ({"arrays": 2}, "not 2 and 0")):
        with pytest.raises(ValueError, match=f"arrays must be 1 and pass_gap 0 or 1, {bad}"):
            run_model(w.q, w.k, w.grid, w.split, cfg, **kw)
    one = KaleidoConfig.one_array(split=w.split)
    assert (
        run_model(w.q, w.k, w.grid, w.split, one).cycles < run_model(w.q, w.k, w.grid, w.split, one, pass_gap=1).cycles
    )
