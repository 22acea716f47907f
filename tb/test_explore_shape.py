"""Array shape and count at 16 PEs behind one dispatcher (issue 14,
kaleido.explore.model's ``deal_passes``, ``sub_array``, ``qk_passes`` and
``qk_cycle_budget``; kaleido.explore's ``shape_candidates``): each policy
against a plain reference, the split pass against its blocks run as small
arrays, the cycle budget adding up, and the PSNR independent of the shape."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from kaleido import KaleidoConfig
from kaleido.cli import main as cli_main
from kaleido.explore import (
    ARRAYS_PER_DISPATCHER,
    BLOCK_TRANSISTORS,
    BUDGET_PARTS,
    DEFAULT,
    PAPER,
    SHAPES,
    Candidate,
    WorkloadSpec,
    budget_table,
    cycle_budget,
    measure,
    shape_candidates,
    shape_transistors,
)
from kaleido.explore.model import (
    DISPATCHES,
    deal_passes,
    match_slots,
    pass_beats,
    qk_cycle_budget,
    qk_passes,
    qk_timing,
)
from kaleido.golden.grouped import grouped_follower_classes
from kaleido.loopnest import batches, unit_tags
from kaleido.model import group_masks, need_table

SMALL = WorkloadSpec(grid=(4, 8, 8), motion="fast", seed=3)


@pytest.fixture(scope="module")
def head():
    return SMALL.load()


def _reference_deal(batch_beats, arrays: int, dispatch: str) -> list[int]:
    """The dispatch policies written out pass by pass."""
    loads = [0] * arrays
    k = row0 = col0 = 0
    for beats in batch_beats:
        Gr, Gc = beats.shape
        for i in range(Gr):
            for j in range(Gc):
                if dispatch == "round-robin":
                    a = k % arrays
                elif dispatch == "queue":
                    a = min(range(arrays), key=lambda x: (loads[x], x))
                elif dispatch == "rows":
                    a = (row0 + i) % arrays
                else:
                    a = (col0 + j) % arrays
                loads[a] += int(beats[i, j])
                k += 1
        row0 += Gr
        col0 += Gc
    return loads


@pytest.mark.parametrize("dispatch", DISPATCHES)
@pytest.mark.parametrize("arrays", [1, 2, 3, 16])
def test_deal_passes_equals_reference(dispatch, arrays):
    seed = 1400 + arrays
    rng = np.random.default_rng(seed)
    batch_beats = [rng.integers(1, 40, size=tuple(rng.integers(1, 7, size=2))) for _ in range(5)]
    loads = np.zeros(arrays, dtype=np.int64)
    first = [0, 0, 0]
    for beats in batch_beats:
        deal_passes(beats, loads, tuple(first), dispatch)
        first = [first[0] + beats.size, first[1] + beats.shape[0], first[2] + beats.shape[1]]
    want = _reference_deal(batch_beats, arrays, dispatch)
    assert loads.tolist() == want, f"seed {seed}, {dispatch}, {arrays} arrays"
    assert loads.sum() == sum(int(b.sum()) for b in batch_beats)


def test_deal_passes_rejects_bad_policy():
    with pytest.raises(ValueError, match="'lottery'"):
        deal_passes(np.ones((2, 2), dtype=np.int64), np.zeros(2, dtype=np.int64), (0, 0, 0), "lottery")


def test_queue_balances_the_arrays(head):
    """The shared pass queue leaves no array more than one pass behind the
    others; round-robin on the same passes is never more balanced."""
    cfg = KaleidoConfig.one_array(split=head.split, array_rows=2, array_cols=2, accumulators=4)
    passes = qk_passes(head.q, head.k, head.grid, head.split, cfg, cfg.thresholds)
    longest = max(int(b.max()) for b in passes[0])
    t = {
        d: qk_timing(head.q, head.k, head.grid, head.split, cfg, arrays=4, dispatch=d, passes=passes)
        for d in DISPATCHES
    }
    q = t["queue"].array_beats
    assert max(q) - min(q) <= longest
    assert t["queue"].cycles <= t["round-robin"].cycles
    # the dispatch moves passes between arrays, never adds or removes a beat
    assert len({x.beats for x in t.values()}) == 1 and len({x.ops["hw"] for x in t.values()}) == 1


def test_sub_array_is_the_blocks_in_step(head):
    """A 4x4 pass split over 2x2 arrays in step lasts, phase by phase, as
    long as its slowest 2x2 block run alone as a 2x2 array's pass."""
    cfg = KaleidoConfig.one_array(split=head.split, accumulators=4)
    small = dataclasses.replace(cfg, array_rows=2, array_cols=2)
    fp = cfg.thresholds
    qcls = grouped_follower_classes(head.q, head.grid, head.split, fp)
    kcls = grouped_follower_classes(head.k, head.grid, head.split, fp)
    seen = 0
    for batch in batches(cfg, head.grid, head.split):
        tq, tk = unit_tags(batch.units, qcls, batch.channels), unit_tags(batch.units, kcls, batch.channels)
        got, _, _ = pass_beats(tq, tk, cfg, sub_array=(2, 2))
        Gr, Gc = got.shape
        want = np.zeros_like(got)
        for phase in range(4):
            per_block = []
            for i in range(0, 4, 2):
                for j in range(0, 4, 2):
                    rows = np.concatenate([tq[r0 + i : r0 + i + 2] for r0 in range(0, Gr * 4, 4)])
                    cols = np.concatenate([tk[c0 + j : c0 + j + 2] for c0 in range(0, Gc * 4, 4)])
                    per_block.append(_phase_slots(rows, cols, small, phase))
            want += np.maximum(np.max(per_block, axis=0), 1)
        assert np.array_equal(got, want)
        seen += got.size
    assert seen


def _phase_slots(tq, tk, cfg, phase):
    """One phase's slots of every pass of a small array alone (no one-beat minimum)."""
    table = need_table(cfg.accumulators)
    qm, km = group_masks(tq, cfg.array_rows), group_masks(tk, cfg.array_cols)
    return match_slots(table[phase][qm[:, None, :], km[None, :, :]], cfg.lookahead)


def test_sub_array_extremes(head):
    """Split (4, 4) is the built array, split (1, 1) is per-PE issue."""
    cfg = KaleidoConfig.one_array(split=head.split, accumulators=4)
    base = qk_timing(head.q, head.k, head.grid, head.split, cfg)
    whole = qk_timing(head.q, head.k, head.grid, head.split, cfg, sub_array=(4, 4))
    assert (whole.cycles, whole.beats) == (base.cycles, base.beats)
    pe = qk_timing(head.q, head.k, head.grid, head.split, cfg, issue="pe")
    one = qk_timing(head.q, head.k, head.grid, head.split, cfg, sub_array=(1, 1))
    assert one.beats == pe.beats and one.phase_beats == pe.phase_beats
    mid = qk_timing(head.q, head.k, head.grid, head.split, cfg, sub_array=(2, 2))
    assert pe.beats <= mid.beats <= base.beats
    with pytest.raises(ValueError, match="3x2"):
        qk_timing(head.q, head.k, head.grid, head.split, cfg, sub_array=(3, 2))
    with pytest.raises(TypeError, match="sub_array"):
        qk_timing(head.q, head.k, head.grid, head.split, cfg, sub_array=(2, 0))


@pytest.mark.parametrize(
    "rows, cols, arrays, dispatch, sub",
    [(4, 4, 1, "round-robin", None), (2, 2, 4, "queue", None), (1, 1, 16, "rows", None), (4, 4, 1, "queue", (2, 4))],
)
def test_cycle_budget_adds_up(head, rows, cols, arrays, dispatch, sub):
    cfg = KaleidoConfig.one_array(split=head.split, accumulators=4, array_rows=rows, array_cols=cols)
    t = qk_timing(head.q, head.k, head.grid, head.split, cfg, arrays=arrays, dispatch=dispatch, sub_array=sub)
    b = qk_cycle_budget(t)
    assert b["work"] + b["issue"] + b["imbalance"] + b["drain"] == pytest.approx(t.cycles, abs=1e-6)
    assert b["issue"] >= 0 and b["imbalance"] >= 0 and 0 < b["work"] < b["dense_work"]
    assert b["dense_work"] * 2 * t.PEs == t.ops["dense"] and t.PEs == 16


def test_shape_candidates():
    cands = shape_candidates()
    names = [c.name for c in cands]
    assert len(names) == len(set(names)) == 2 * len(SHAPES) * (len(DISPATCHES) + 1) - len(SHAPES)
    for c in cands:
        assert c.rows * c.cols * c.arrays == 16
        base = DEFAULT if c.name.startswith("default") else PAPER
        assert (c.thresholds, c.v_full, c.accumulators) == (base.thresholds, base.v_full, base.accumulators)
    with pytest.raises(ValueError, match="sub_array"):
        Candidate("x", "shape", rows=2, cols=2, arrays=4, sub_array=(1, 1))
    with pytest.raises(ValueError, match="dispatch"):
        Candidate("x", "shape", dispatch="random")


def test_psnr_does_not_depend_on_the_shape():
    """The reuse decisions are per token pair and channel (the thresholds);
    the shape only decides which slots travel together, and a PE computes
    the same products whatever else its array is issued: one PSNR."""
    small = dataclasses.replace(SMALL, grid=(2, 4, 4))
    rows = [measure(small, c) for c in (DEFAULT, *[c for c in shape_candidates() if c.name.startswith("default")][:6])]
    assert len({r["psnr"] for r in rows}) == 1
    assert len({r["qk_cycles"] for r in rows}) > 1


def test_attention_budget_is_one_over_speedup():
    """The whole-attention budget adds up to the cycles over the dense
    cycles, part by part (a part counted twice or left out breaks it)."""
    small = dataclasses.replace(SMALL, grid=(2, 4, 4))
    cand = next(c for c in shape_candidates() if c.name == "default 4x 2x2 queue")
    rows = [{"candidate": c.name, "set": "tuning", **measure(small, c)} for c in (DEFAULT, cand)]
    rows.append({"candidate": "old", "set": "tuning", "attention_cycles": 1})  # no budget: left out
    b = cycle_budget(rows)
    assert sorted(b) == sorted([DEFAULT.name, cand.name])
    for r in rows[:2]:
        x = b[r["candidate"]]
        assert x["total"] == pytest.approx(r["attention_cycles"] / r["attention_dense_cycles"])
        assert x["total"] == pytest.approx(sum(x[k] for k in BUDGET_PARTS))
        assert x["qk_dense"] + x["pv_dense"] + x["softmax"] == pytest.approx(1.0)
    lines = budget_table({"rows": rows})
    assert any(line.startswith(f"| {cand.name} |") for line in lines)


def test_shape_transistors():
    """The cost estimate: one 4x4 array is the array, its matcher and P V
    dispatcher and an eighth of two detectors and two 64-string schedulers;
    smaller arrays multiply the per-array blocks and shrink the schedulers."""
    b = {k: 1000 * (i + 1) for i, k in enumerate(BLOCK_TRANSISTORS)}
    one = shape_transistors(4, 4, 1, blocks=b)
    shared = (2 * b["detector"] + 2 * b["scheduler 64"]) / ARRAYS_PER_DISPATCHER
    assert one["total"] == b["array 4x4"] + b["matcher"] + b["pv_dispatcher 4x4"] + shared
    assert one["ports"] == 8 and one["vs_dense"] == one["total"] / b["dense array 4x4"]
    wide = shape_transistors(2, 4, 2, blocks=b)
    assert wide["arrays"] == 2 * b["array 2x4"] and wide["pv_dispatchers"] == 2 * b["pv_dispatcher 2x4"]
    assert wide["shared"] == (2 * b["detector"] + b["scheduler 32"] + b["scheduler 64"]) / ARRAYS_PER_DISPATCHER
    split = shape_transistors(4, 4, 1, (2, 2), blocks=b)
    assert (split["arrays"], split["matchers"], split["pv_dispatchers"], split["shared"], split["ports"]) == (
        4 * b["array 2x2"],
        4 * b["matcher"],
        b["pv_dispatcher 4x4"],
        shared,
        16,
    )
    assert shape_transistors(1, 1, 16)["ports"] == 32
    for rows, cols, arrays in [(4, 4, 1), *SHAPES]:
        x = shape_transistors(rows, cols, arrays)
        assert x["total"] == pytest.approx(sum(x[k] for k in ("arrays", "matchers", "pv_dispatchers", "shared")))
    with pytest.raises(ValueError, match="16 PEs"):
        shape_transistors(2, 2, 2)
    with pytest.raises(ValueError, match="3x4"):
        shape_transistors(4, 4, 1, (3, 4))


def test_a_run_without_the_paper_prints_its_best(tmp_path, monkeypatch, capsys):
    """``kaleido explore --candidate X`` without ``paper`` (as the shape
    study's second run) finishes and reports X (it raised KeyError)."""
    monkeypatch.chdir(tmp_path)
    assert cli_main(["explore", "--quick", "--candidate", "acc4", "--no-bounds", "--jobs", "1"]) == 0
    out = capsys.readouterr().out
    assert "acc4: tuning attention" in out and "paper:" not in out
