"""``make mutate``'s mutants (:mod:`kaleido.tb.mutate`), part 2 of 4: the
cycle model (the S hold, engine, array and P V timing), its fast paths
(issue 16) and the design exploration (issue 14)."""

from kaleido.tb.mutant import Mutant

MODEL = [
    # the cycle model's accumulation buffer: the S occupancy, the FIFO's hold
    Mutant(
        "model_s_lindley",
        "kaleido/model/engine.py",
        "occ = np.where(pre >= 0, u + 1, 0)",
        "occ = np.where(pre >= 0, u, 0)",
        "engine timing",
    ),
    Mutant(
        "model_s_hold",
        "kaleido/model/engine.py",
        "wait = max(wait, o + counts[k] - D)",
        "wait = max(wait, o + counts[k] - D - 1)",
        "engine timing",
    ),
    # the cycle model
    Mutant(
        "model_bank_free",
        "kaleido/model/engine.py",
        "a_last[b - 2] + 2)",
        "a_last[b - 2] + 3)",
        "engine timing",
        tests=("tb/test_model.py", "tb/test_engine.py"),
    ),
    Mutant(
        "model_pass_gap_start",
        "kaleido/model/qk.py",
        "start = (DISPATCH_LATENCY - pass_gap) if dispatcher",
        "start = (DISPATCH_LATENCY - 1 - pass_gap) if dispatcher",
        "array timing",
    ),
    Mutant(
        "model_pv_tile_four_rows",  # issue 19: the old model, exact on 4-row arrays only
        "kaleido/model/pv.py",
        "return r + config.array_cols - 1 + array_latency",
        "return r + config.array_rows - 4 + config.array_cols - 1 + array_latency",
        "P V timing",
        tests=("tb/test_pv.py", "tb/test_pv_tile.py"),
    ),
    Mutant(
        "model_pv_run_busy_array",  # two buffers: the next run's first unit ignores the array's last two-beat unit
        "kaleido/model/pv.py",
        "first_in = max(max(last_fill + 1, entered) + 1, entered + p_last)",
        "first_in = max(last_fill + 1, entered) + 1",
        "P V timing",
        tests=("tb/test_pv.py", "tb/test_pv_tile.py"),
    ),
    Mutant(
        "model_pv_drain",
        "kaleido/model/pv.py",
        "        beats + 1 + array_drain(config),",
        "        beats + array_drain(config),",
        "P V timing",
        tests=("tb/test_pv.py", "tb/test_pv_tile.py"),
    ),
    # issue 16's fast paths: the matcher automaton's window, the vectorised scheduler's room rule
    Mutant(
        "model_matcher_window",
        "kaleido/model/slots.py",
        "np.where(state < L, state + 1, 0)",
        "np.where(state <= L, state + 1, 0)",
        "array timing",
    ),
    Mutant(
        "scheduler_room",
        "golden/scheduler.py",
        "np.where(held >= cap[:, None], far, 0)",
        "np.where(held > cap[:, None], far, 0)",
        "scheduler",
    ),
    # the design exploration (issue 14)
    Mutant(
        "explore_round_robin",
        "kaleido/stage_timing.py",
        "idx = (n_pass + np.arange(flat.size)) % arrays",
        "idx = np.arange(flat.size) % arrays",
        "exploration timing",
    ),
    Mutant(
        "explore_queue_first_free",
        "kaleido/stage_timing.py",
        "heapq.heapreplace(heap, (load + b, k))",
        "heapq.heapreplace(heap, (load + b, (k + 1) % arrays))",
        "exploration timing",
    ),
    Mutant(
        "explore_rows_dispatch",
        "kaleido/stage_timing.py",
        "idx = np.repeat((n_row + np.arange(Gr)) % arrays, Gc)",
        "idx = np.repeat((n_pass + np.arange(Gr)) % arrays, Gc)",
        "exploration timing",
    ),
    Mutant(
        "explore_split_slowest_block",
        "kaleido/stage_timing.py",
        "slots = slots.reshape(Gr, R // gr, Gc, C // gc).max(axis=(1, 3))",
        "slots = slots.reshape(Gr, R // gr, Gc, C // gc).max(axis=3).min(axis=1)",
        "exploration timing",
    ),
    Mutant(
        "explore_budget_imbalance",
        "kaleido/explore/model.py",
        '"imbalance": max(t.array_beats) - mean,',
        '"imbalance": max(t.array_beats) - min(t.array_beats),',
        "exploration timing",
    ),
    Mutant(
        "explore_budget_drain",
        "kaleido/explore/ranking.py",
        's["qk_imbalance"] += r["qk_imbalance_cycles"] + r["qk_drain_cycles"]',
        's["qk_imbalance"] += r["qk_imbalance_cycles"]',
        "exploration",
    ),
    Mutant(
        "explore_shape_cost_schedulers",
        "kaleido/explore/shape_area.py",
        'b[f"scheduler {16 * rows}"] + b[f"scheduler {16 * cols}"]',
        '2 * b[f"scheduler {16 * rows}"]',
        "exploration",
    ),
    Mutant("explore_adaptive_floor", "kaleido/calibrate.py", "if p >= floor:", "if p >= floor - 3:", "exploration"),
    Mutant(
        "model_uniform_op_counts",
        "kaleido/model/qk.py",
        "counts = grouped_op_counts(Q, K, grid, split, cfg.thresholds)",
        "counts = grouped_op_counts(Q, K, grid, split, (cfg.F, cfg.P))",
        "model thresholds",
    ),
    Mutant("calibrate_group_floor", "kaleido/calibrate.py", "if p < floor:", "if p < floor - 3:", "exploration"),
    Mutant(
        "explore_rank_floor",
        "kaleido/explore/ranking.py",
        '"meets_floor": min(psnr) >= floor,',
        '"meets_floor": min(psnr) >= floor - 10,',
        "exploration",
        tests=("tb/test_explore.py",),
    ),
]
