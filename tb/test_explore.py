"""The design exploration of issue 14 (kaleido.explore, kaleido.explore.model,
golden.grouped, golden.passaware, golden.windows): its open cycle model
equals the RTL-matched run_model on the built design's settings, its
quality equals the golden reuse attention, and its ranking keeps the floor."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from kaleido import KaleidoConfig
from kaleido.cli import main as cli_main
from kaleido.config import BEAT_REGISTER
from kaleido.encoding import Need
from kaleido.explore import (
    FLOOR,
    LADDER,
    PAPER,
    Candidate,
    WorkloadSpec,
    aggregate,
    evaluate,
    explore,
    frontier,
    measure,
    merge,
    quality,
    rank,
    write,
)
from kaleido.explore.model import match_slots, pv_timing, qk_timing, softmax_stage_cycles
from kaleido.golden import effective, op_counts, reuse_attention
from kaleido.golden.grouped import check_group_thresholds, grouped_effective, hw_attention
from kaleido.golden.matcher import match
from kaleido.golden.passaware import group_cost, pass_aware_order
from kaleido.golden.windows import window_bound
from kaleido.golden.workloads import synthetic_video
from kaleido.model import attention_stages, pv_cycles, run_model

SMALL = WorkloadSpec(grid=(4, 8, 8), motion="fast", seed=3)


@pytest.fixture(scope="module")
def head():
    return SMALL.load()


@pytest.mark.parametrize(
    "overrides, variant, order, arrays, gap",
    [
        ({}, "full", "lfsr", 1, 0),
        ({"F": 5, "P": 3, "accumulators": 3}, "full", "lfsr", 1, 1),
        ({"group_thresholds": ((5, 3), (6, 4), (4, 4)), "accumulators": 3}, "full", "lfsr", 1, 0),
        ({"F": 6, "P": 4}, "pe-m", "queue", 3, 0),
        ({"array_rows": 2, "array_cols": 2, "accumulators": 4}, "full", "lfsr", 4, 0),
        ({"array_rows": 1, "array_cols": 2, "lookahead": 8}, "pe-m", "queue", 2, 1),
    ],
)
def test_qk_timing_equals_run_model(head, overrides, variant, order, arrays, gap):
    cfg = KaleidoConfig.one_array(split=head.split, **overrides)
    r = run_model(head.q, head.k, head.grid, head.split, cfg, variant=variant, arrays=arrays, pass_gap=gap)
    e = qk_timing(head.q, head.k, head.grid, head.split, cfg, order=order, arrays=arrays, pass_gap=gap)
    assert (e.cycles, e.dense_cycles, e.beats, e.ops["hw"], e.passes) == (
        r.cycles,
        r.dense_cycles,
        r.beats,
        r.ops["hw"],
        r.passes,
    )
    assert e.phase_beats == [r.phases[p]["beats"] for p in ("T0", "T1", "T2", "T3")]
    assert e.utilization == pytest.approx(r.utilization)


def test_pv_and_softmax_equal_the_model(head):
    for F in (5, 6, 9):
        cfg = KaleidoConfig.one_array(split=head.split, F=F, P=min(F, 4))
        pv = pv_cycles(head.v, head.grid, head.split, cfg)
        mine = pv_timing(head.v, head.grid, head.split, cfg)
        assert (mine["cycles"], mine["dense_cycles"]) == (pv.cycles, pv.dense_cycles)
        assert pv_timing(head.v, head.grid, head.split, cfg, (F, F, F))["cycles"] == pv.cycles
    cfg = KaleidoConfig.one_array(split=head.split)
    st = attention_stages(run_model(head.q, head.k, head.grid, head.split, cfg), head.v, head.grid, head.split, cfg)
    assert softmax_stage_cycles(head.n, head.d) == st["stages"]["softmax"]["cycles"]


def _small_p_reference(P, V, grid, split, cfg: KaleidoConfig) -> int:
    """Beats under small-P pairing counted on the golden P V beat stream
    (``golden.pv.pv_pass_beats`` with ``pv_pairs``, what the RTL's
    ``PvDispatcher`` issues)."""
    from kaleido.golden.pv import pv_pass_beats
    from kaleido.loopnest import pv_passes

    pairs = cfg.replace(pv_pairs=True)
    return sum(len(pv_pass_beats(P, V, ps, pairs, cfg.F)) for ps in pv_passes(pairs, grid, split, P.shape[0]))


def test_small_p_pairing_counts_the_golden_beats():
    """``pv_timing``'s small-P pairing (issue 14's ``pv_small`` candidates)
    counts the beats of the golden P V beat stream with small beats paired
    as the RTL pairs them, on a random P mixing small and large values; a
    lower bound pairs fewer, a P with no small value leaves the plain
    count, and the dense comparison is the same rule with reuse off."""
    seed = 1416
    head = WorkloadSpec(grid=(2, 4, 4), motion="fast", seed=seed).load()  # the golden beat loop is slow
    rng = np.random.default_rng(seed)
    shape = (head.n, head.n)
    P = np.where(rng.random(shape) < 0.6, rng.integers(0, 12, shape), rng.integers(0, 128, shape))
    for F in (5, 9):
        cfg = KaleidoConfig.one_array(split=head.split, F=F, P=min(F, 4))
        got = pv_timing(head.v, head.grid, head.split, cfg, p=P, small_p=16)
        assert got["beats"] == _small_p_reference(P, head.v, head.grid, head.split, cfg), f"seed {seed} F {F}"
        plain = pv_timing(head.v, head.grid, head.split, cfg)
        assert got["beats"] < plain["beats"], f"seed {seed} F {F}: pairing saved nothing"
        low = pv_timing(head.v, head.grid, head.split, cfg, p=P, small_p=8)
        assert got["beats"] <= low["beats"] <= plain["beats"], f"seed {seed} F {F}"
        off = KaleidoConfig.one_array(split=head.split, F=9, P=4)
        dense = pv_timing(head.v, head.grid, head.split, off, p=P, small_p=16)
        assert got["dense_small_cycles"] == dense["cycles"], f"seed {seed} F {F}"
        none_small = pv_timing(head.v, head.grid, head.split, cfg, p=np.full_like(P, 127), small_p=16)
        # dense_small is the Kaleido array with reuse off (its beat register); dense_cycles the MAC array's
        plain_dense = plain["dense_cycles"] + BEAT_REGISTER
        assert (none_small["cycles"], none_small["dense_small_cycles"]) == (plain["cycles"], plain_dense)


def test_small_p_pairing_rejects_bad_input(head):
    cfg = KaleidoConfig.one_array(split=head.split)
    P = np.zeros((head.n, head.n), np.int64)
    with pytest.raises(ValueError, match="needs p"):
        pv_timing(head.v, head.grid, head.split, cfg, small_p=16)
    with pytest.raises(ValueError, match="17"):
        pv_timing(head.v, head.grid, head.split, cfg, p=P, small_p=17)
    with pytest.raises(ValueError, match="128..128"):
        pv_timing(head.v, head.grid, head.split, cfg, p=P + 128, small_p=16)
    with pytest.raises(ValueError, match="pv_small"):
        Candidate("x", "small-p", pv_small=0)


def test_match_slots_equals_golden_matcher():
    seed = 14
    rng = np.random.default_rng(seed)
    needs = rng.choice([Need.SKIP, Need.HALF, Need.FULL], size=(200, 16), p=[0.3, 0.5, 0.2]).astype(np.uint8)
    for lookahead in (1, 4, 8):
        got = match_slots(needs, lookahead)
        want = [len(match(list(row), lookahead)) for row in needs]
        assert got.tolist() == want, f"seed {seed}, lookahead {lookahead}"
    assert match_slots(needs, 4, matcher=False).tolist() == (needs != Need.SKIP).sum(axis=1).tolist()


def test_grouped_reuse_equals_uniform_reuse(head):
    for F, P in ((5, 3), (6, 4)):
        for side in ("row", "column"):
            got = grouped_effective(head.q, head.grid, head.split, (F, P), side=side)
            assert np.array_equal(got, effective(head.q, head.grid, head.split, F, P, side=side))
    # with P >= 4 a PARTIAL V is exact, so the P V rule (FULL only) gives the golden reuse attention
    want = reuse_attention(head.q, head.k, head.v, head.grid, head.split, 6, 4, scales=head.scales)
    got = hw_attention(head.q, head.k, head.v, head.grid, head.split, (6, 4), scales=head.scales)
    assert np.allclose(got["output"], want.output)


def test_per_group_thresholds_change_only_their_group(head):
    base = grouped_effective(head.k, head.grid, head.split, (5, 4))
    mixed = grouped_effective(head.k, head.grid, head.split, ((5, 4), (7, 4), (5, 4)))
    d_t, d_x, _ = head.split
    x = slice(d_t, d_t + d_x)
    assert np.array_equal(np.delete(base, np.s_[x], axis=1), np.delete(mixed, np.s_[x], axis=1))
    assert np.array_equal(mixed[:, x], effective(head.k, head.grid, head.split, 7, 4)[:, x])


def test_window_of_two_is_the_pairing(head):
    for F, P in ((5, 3), (6, 4)):
        b = window_bound(head.q, head.k, head.v, head.grid, head.split, 2, (F, P), scales=head.scales)
        assert b["oracle"] == op_counts(head.q, head.k, head.grid, head.split, F, P)["oracle"]
        hw = hw_attention(head.q, head.k, head.v, head.grid, head.split, (F, P), scales=head.scales)
        assert b["vs_int8"]["psnr"] == pytest.approx(hw["vs_int8"]["psnr"])
    longer = window_bound(head.q, head.k, head.v, head.grid, head.split, 4, (6, 4), scales=head.scales)
    assert longer["bound"] > b["bound"]  # fewer anchors, fewer dense anchor x anchor products
    # row-side partial reuse saves only where a row follower is PARTIAL
    assert b["bound_row_partial"] > b["bound"]
    same = window_bound(head.q, head.k, head.v, head.grid, head.split, 2, (6, 6), scales=head.scales)
    assert same["oracle_row_partial"] == same["oracle"]


def test_pass_aware_order_is_a_permutation_inside_windows():
    seed = 7
    rng = np.random.default_rng(seed)
    tags = rng.choice(4, size=(70, 16), p=[0.2, 0.2, 0.55, 0.05]).astype(np.uint8)
    order = pass_aware_order(tags, 4)
    assert sorted(order.tolist()) == list(range(70)), f"seed {seed}"
    windowed = pass_aware_order(tags, 4, window=32)
    for start in range(0, 70, 32):
        assert set(windowed[start : start + 32].tolist()) == set(range(start, min(70, start + 32))), f"seed {seed}"
    greedy = sum(group_cost(tags[order[i : i + 4]]) for i in range(0, 70, 4))
    queue = sum(group_cost(tags[i : i + 4]) for i in range(0, 70, 4))
    assert greedy <= queue, f"seed {seed}: greedy groups cost {greedy}, queue order {queue}"


def test_candidate_numbers_equal_a_direct_model_call(head):
    row = measure(SMALL, PAPER)
    cfg = KaleidoConfig.paper(split=head.split)
    r = run_model(head.q, head.k, head.grid, head.split, cfg, variant="full")
    att = attention_stages(r, head.v, head.grid, head.split, cfg)["attention"]
    assert (row["qk_cycles"], row["qk_dense_cycles"]) == (r.cycles, r.dense_cycles)
    assert (row["attention_cycles"], row["attention_dense_cycles"]) == (att["cycles"], att["dense_cycles"])
    assert row["attention_speedup"] == pytest.approx(att["speedup"])
    hw = hw_attention(head.q, head.k, head.v, head.grid, head.split, (5, 3), (5, 5, 5), scales=head.scales)
    assert row["psnr"] == pytest.approx(hw["vs_int8"]["psnr"])


def test_the_built_core_candidates_are_the_rtl_models(head):
    """``default 16x 1x1 queue, P V 4x4``: Q K^T as the 16 1x1 arrays'
    candidate, P V as the default design's one 4x4 array; with small-P
    pairing, P V is :func:`kaleido.model.pv_cycles` with the head's P (the
    count the RTL's ``PvArray`` matches cycle for cycle)."""
    from kaleido.explore import DEFAULT, candidates
    from kaleido.golden.softmax import head_p

    by_name = {c.name: c for c in candidates()}
    built = measure(SMALL, by_name["default 16x 1x1 queue, P V 4x4"])
    assert built["qk_cycles"] == measure(SMALL, by_name["default 16x 1x1 queue"])["qk_cycles"]
    default = measure(SMALL, DEFAULT)
    assert (built["pv_cycles"], built["pv_dense_cycles"]) == (default["pv_cycles"], default["pv_dense_cycles"])
    paired = measure(SMALL, by_name["default 16x 1x1 queue, P V 4x4 + small-P pairs"])
    cfg = DEFAULT.config(head.split).replace(pv_pairs=True)
    P = head_p(head.q, head.k, head.grid, head.split, cfg.thresholds, scales=head.scales)
    assert paired["pv_cycles"] == pv_cycles(head.v, head.grid, head.split, cfg, P=P).cycles < built["pv_cycles"]
    with pytest.raises(ValueError, match=r"pv_shape must be .* not \(2, 4\)"):
        Candidate("x", "built", pv_shape=(2, 4))


def test_reuse_off_is_the_dense_baseline():
    row = measure(SMALL, Candidate("off", "thresholds", (9, 9), accumulators=4))
    assert row["psnr"] == float("inf")
    # the same beats; the Kaleido array's drain is one cycle longer (its product register)
    assert row["qk_speedup"] == pytest.approx(1.0, abs=1e-4)
    assert row["attention_speedup"] == pytest.approx(1.0, abs=1e-4)


def test_adaptive_keeps_the_floor_with_the_most_aggressive_rung():
    row = measure(SMALL, Candidate("ad", "adaptive", accumulators=4, adaptive="uniform"))
    assert row["psnr"] >= FLOOR
    chosen = tuple(row["thresholds"][0])
    for fp in LADDER[: LADDER.index(chosen)]:  # every more aggressive rung is below the floor
        assert quality(SMALL, check_group_thresholds(fp), (fp[0],) * 3)[0] < FLOOR
    group = measure(SMALL, Candidate("ag", "adaptive", accumulators=4, adaptive="group"))
    assert group["psnr"] >= FLOOR and group["attention_speedup"] >= row["attention_speedup"]


def test_calibrated_thresholds_come_from_the_other_motion():
    cand = Candidate("cal", "adaptive", accumulators=4, adaptive="group-calibrated")
    row = measure(SMALL, cand)
    other = WorkloadSpec(grid=SMALL.grid, motion="slow", seed=SMALL.seed)
    assert row["calibrated_on"] == other.name
    chosen = measure(other, Candidate("g", "adaptive", accumulators=4, adaptive="group"))
    assert row["thresholds"] == chosen["thresholds"]
    fixed = measure(SMALL, Candidate("f", "x", chosen["thresholds"], accumulators=4))
    assert {k: row[k] for k in fixed} == fixed


def test_ranking_respects_the_floor():
    cands = [
        Candidate("fast-bad", "thresholds", (4, 3), accumulators=4),
        Candidate("slow-good", "thresholds", (7, 4), accumulators=4),
        Candidate("off", "thresholds", (9, 9)),
    ]
    rows = evaluate(cands, {"tuning": (SMALL,)}, jobs=1)
    agg = aggregate(rows)
    assert agg["fast-bad"]["tuning"]["attention_speedup"] > agg["slow-good"]["tuning"]["attention_speedup"]
    assert not agg["fast-bad"]["tuning"]["meets_floor"] and agg["slow-good"]["tuning"]["meets_floor"]
    order = rank(agg)
    assert order.index("slow-good") < order.index("off") < order.index("fast-bad")
    front = frontier(agg)
    assert set(front) == {"fast-bad", "slow-good", "off"}  # each wins on speed or PSNR
    assert [agg[n]["tuning"]["psnr_min"] for n in front] == sorted(agg[n]["tuning"]["psnr_min"] for n in front)


def test_parallel_sweep_equals_serial(tmp_path):
    cands = [PAPER, Candidate("g", "scheduler", (6, 4), accumulators=4, order="greedy", rtl="no")]
    sets = {"tuning": (SMALL,), "held_out": (WorkloadSpec(grid=(2, 6, 8), seed=9),)}
    one = evaluate(cands, sets, jobs=1)
    two = evaluate(cands, sets, jobs=2)
    strip = [{k: v for k, v in r.items() if k != "seconds"} for r in one]
    assert strip == [{k: v for k, v in r.items() if k != "seconds"} for r in two]
    result = {
        "floor_db": FLOOR,
        "sets": {},
        "candidates": [{"name": c.name, "family": c.family, "rtl": c.rtl, "adaptive": c.adaptive} for c in cands],
        "aggregate": aggregate(one),
        "ranking": {"tuning": rank(aggregate(one))},
        "rows": one,
    }
    paths = write(result, str(tmp_path))
    assert all(os.path.exists(p) for p in paths)
    assert json.load(open(paths[0]))["rows"][0]["candidate"] == "paper"
    assert len(open(paths[1]).read().splitlines()) == 1 + len(one)


def test_bad_input_names_the_value(capsys):
    with pytest.raises(ValueError, match="'sideways'"):
        Candidate("x", "scheduler", order="sideways")
    with pytest.raises(ValueError, match="'warp'"):
        WorkloadSpec(motion="warp")
    with pytest.raises(ValueError, match="10"):
        check_group_thresholds(((5, 3), (10, 3), (5, 3)))
    with pytest.raises(ValueError, match="32"):
        Candidate("x", "shape", rows=4, cols=4, arrays=2)
    with pytest.raises(ValueError, match="'per-row'"):
        qk_timing(*_tiny(), issue="per-row")
    with pytest.raises(SystemExit) as err:
        cli_main(["explore", "--jobs", "0"])
    assert err.value.code == 2 and "--jobs must be a positive integer, not 0" in capsys.readouterr().err
    with pytest.raises(SystemExit) as err:
        cli_main(["explore", "--candidate", "warp drive"])
    assert err.value.code == 2 and "unknown candidate 'warp drive'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as err:
        cli_main(["explore", "--summarize", "--out", "/nonexistent/explore"])
    assert err.value.code == 2 and "'/nonexistent/explore/results.json' does not exist" in capsys.readouterr().err


def _tiny():
    w = synthetic_video("hunyuan", (2, 4, 4), "slow", 0)
    return w.q, w.k, w.grid, w.split


def test_merge_adds_candidates_and_reranks():
    a = explore_small([PAPER])
    b = explore_small([Candidate("F7", "thresholds", (7, 4), accumulators=4, rtl="config")])
    both = merge(a, b)
    assert {c["name"] for c in both["candidates"]} == {"paper", "F7"}
    assert both["ranking"]["tuning"][0] == "F7"  # the paper's (5,3) is below the floor
    again = merge(both, explore_small([Candidate("F7", "thresholds", (7, 7), accumulators=4, rtl="config")]))
    assert len([r for r in again["rows"] if r["candidate"] == "F7"]) == 1
    assert again["rows"][-1]["thresholds"] == [[7, 7]] * 3


def explore_small(cands):
    return explore(cands, {"tuning": (SMALL,)}, jobs=1, bounds=False)


def test_a_quick_run_never_replaces_the_full_one(tmp_path, monkeypatch):
    """``--quick`` writes to build/explore/quick by default: make report
    reads build/explore/results.json, which a quick look must not replace."""
    monkeypatch.chdir(tmp_path)
    assert cli_main(["explore", "--quick", "--candidate", "paper", "--no-bounds", "--jobs", "1"]) == 0
    assert (tmp_path / "build" / "explore" / "quick" / "results.json").exists()
    assert not (tmp_path / "build" / "explore" / "results.json").exists()
