"""The attention core's tiled walk (issue 13, golden): tile-local reuse is
the head's, the two-pass tiled attention equals the whole-head golden model
bit for bit, its buffers are bounded by the tile, and bad input is named."""

import numpy as np
import pytest

from kaleido.config import CoreConfig, KaleidoConfig
from kaleido.golden.core import core_attention, tile_operands
from kaleido.golden.pv import v_effective
from kaleido.golden.reuse import effective
from kaleido.golden.softmax import fixed_reuse_attention
from kaleido.golden.workloads import random_workload, synthetic_video
from kaleido.loopnest import Box, tile_boxes

CASES = [
    ((4, 8, 8), (2, 4, 4), "slow"),
    ((3, 5, 7), (2, 4, 4), "fast"),  # odd extents: partial tiles and unpaired tokens
    ((1, 6, 10), (2, 2, 4), "slow"),
    ((2, 4, 4), (2, 4, 4), "fast"),  # one tile: the whole head
]


@pytest.mark.parametrize(("grid", "tile", "motion"), CASES)
@pytest.mark.parametrize("thresholds", [(5, 3), (3, 1), (9, 9)])
@pytest.mark.parametrize("s_pass", ["spill", "recompute"])
def test_tiled_attention_is_bit_exact(grid, tile, motion, thresholds, s_pass, seed):
    w = synthetic_video("hunyuan", grid, motion, seed % 1000)
    F, P = thresholds
    core = CoreConfig(tile=tile, s_pass=s_pass)
    out, stats = core_attention(w.q, w.k, w.v, w.grid, w.split, F, P, scales=w.scales, core=core)
    ref = fixed_reuse_attention(w.q, w.k, w.v, w.grid, w.split, F, P, scales=w.scales)["output"]
    assert (out == ref).all()
    n_tiles = len(tile_boxes(grid, tile))
    assert stats.s_tiles == (1 if s_pass == "spill" else 2) * n_tiles * n_tiles


@pytest.mark.parametrize(("grid", "tile", "motion"), CASES)
@pytest.mark.parametrize("v_full", [None, 6])
def test_tiled_attention_per_group_thresholds(grid, tile, motion, v_full, seed):
    """The default design's per-group thresholds (and a V threshold of its
    own): the tiled walk equals the whole head's fixed-point attention on
    the grouped operands, bit for bit (a walk ignoring ``thresholds`` fails
    every case)."""
    from kaleido.config import KaleidoConfig
    from kaleido.golden.grouped import grouped_scores, grouped_v_effective
    from kaleido.golden.softmax import fixed_attention, fixed_softmax

    w = synthetic_video("hunyuan", grid, motion, seed % 1000)
    th = KaleidoConfig.one_array().thresholds
    out, _ = core_attention(
        w.q, w.k, w.v, w.grid, w.split, scales=w.scales, core=CoreConfig(tile=tile), thresholds=th, v_full=v_full
    )
    qs, ks, _ = w.scales
    sm = fixed_softmax(grouped_scores(w.q, w.k, w.grid, w.split, th), qs * ks / np.sqrt(w.q.shape[1]))
    vf = [f for f, _ in th] if v_full is None else v_full
    ref = fixed_attention(sm, grouped_v_effective(w.v, w.grid, w.split, vf))
    assert (out == ref).all(), f"seed {seed}: {(out != ref).sum()} outputs differ"


@pytest.mark.parametrize(("grid", "tile", "motion"), CASES)
def test_tile_local_reuse_is_the_heads(grid, tile, motion, seed):
    w = synthetic_video("hunyuan", grid, motion, seed % 1000)
    heads = {
        "row": effective(w.q, grid, w.split, 5, 3, side="row"),
        "column": effective(w.k, grid, w.split, 5, 3, side="column"),
        "v": v_effective(w.v, grid, w.split, 5),
    }
    src = {"row": w.q, "column": w.k, "v": w.v}
    boxes = tile_boxes(grid, tile)
    assert sorted(np.concatenate([b.tokens for b in boxes]).tolist()) == list(range(w.n))
    for b in boxes:
        for side, whole in heads.items():
            assert (tile_operands(src[side], b, w.split, 5, 3, side) == whole[b.tokens]).all()


def test_an_unaligned_tile_breaks_reuse():
    """Why tile extents are even: a box of odd x extent splits x-pairs,
    and its tile-local reuse differs from the head's (the check can fail)."""
    w = synthetic_video("hunyuan", (2, 4, 6), "slow", 0)
    idx = np.arange(w.n).reshape(2, 4, 6)
    box = Box((0, 0, 1), (2, 4, 3), idx[:, :, 1:4].ravel())
    whole = effective(w.k, w.grid, w.split, 5, 3, side="column")
    assert (tile_operands(w.k, box, w.split, 5, 3, "column") != whole[box.tokens]).any()
    with pytest.raises(ValueError, match=r"tile must be three even extents >= 2 \(t, y, x\), not \(2, 4, 3\)"):
        tile_boxes((2, 4, 6), (2, 4, 3))


def test_buffers_are_bounded_by_the_tile():
    """Peak S and O entries do not grow with N; the buffer table is the
    configuration's alone."""
    core = CoreConfig(tile=(2, 2, 4), s_pass="recompute")
    spill = CoreConfig(tile=(2, 2, 4), s_pass="spill")
    peaks = set()
    for grid in [(2, 2, 4), (4, 4, 8), (4, 8, 8)]:
        w = random_workload(grid, (16, 56, 56), 0)
        _, stats = core_attention(w.q, w.k, w.v, w.grid, w.split, scales=w.scales, core=core)
        peaks.add((stats.peak_s, stats.peak_o))
        n_tiles = w.n // core.tile_tokens
        assert stats.bytes_read == n_tiles * (core.tile_tokens + 3 * w.n) * w.d
        assert stats.bytes_written == 2 * w.n * w.d
        _, st2 = core_attention(w.q, w.k, w.v, w.grid, w.split, scales=w.scales, core=spill)
        assert st2.bytes_read == n_tiles * (core.tile_tokens + 2 * w.n) * w.d + 3 * w.n * w.n
        assert st2.bytes_written == 2 * w.n * w.d + 3 * w.n * w.n
    assert peaks == {(core.tile_tokens**2, core.tile_tokens * 128)}
    buf = core.buffers(KaleidoConfig.one_array())
    assert buf["s_tile"]["words"] == core.s_buffers * core.tile_tokens**2 and buf["s_tile"]["banks"] == 16
    assert buf["k_tiles"]["bits"] == 2 * core.tile_tokens * 128 * 8
    assert buf["o_acc"]["width"] == 30  # 32768 * 127 * 128 < 2^29, plus a sign
    assert all(b["bits"] == b["words"] * b["width"] for b in buf.values())


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"tile": (2, 4, 5)}, r"tile must be three even extents >= 2 \(t, y, x\), not \(2, 4, 5\)"),
        ({"tile": (0, 4, 4)}, "tile must be three even extents"),
        ({"port_bytes": 0}, "port_bytes must be a positive integer, not 0"),
        ({"mem_latency": 0}, "mem_latency must be a positive integer, not 0"),
        ({"max_tokens": 40000}, "max_tokens must be at most 32768, not 40000"),
        ({"s_pass": "online"}, "s_pass must be 'spill' or 'recompute', not 'online'"),
    ],
)
def test_bad_core_config_is_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        CoreConfig(**kwargs)


def test_a_head_beyond_the_core_is_named():
    w = random_workload((2, 4, 4), (16, 56, 56), 0)
    with pytest.raises(ValueError, match="the head has 32 tokens; the core addresses at most 16"):
        core_attention(w.q, w.k, w.v, w.grid, w.split, scales=w.scales, core=CoreConfig(tile=(2, 2, 2), max_tokens=16))
    with pytest.raises(ValueError, match="V must have the shape of Q"):
        core_attention(w.q, w.k, w.v[:5], w.grid, w.split, scales=w.scales)
