"""``make mutate``'s mutants (:mod:`kaleido.tb.mutate`), part 4 of 4: issue
46's, each naming the tests aimed at it. The small arrays' queue order
(killed only by a proof), the energy model, the chip calibration and core
areas, the quality metrics, the efficiency figures, the credit and
occupancy bounds."""

from kaleido.tb.mutant import Mutant

TARGETED = [
    # the queue picks the highest-index free array, not the lowest (kaleido.model.queue_ticks' rule): the
    # fast suite spares it, the proof make test runs fails (docs/FORMAL.md; FORMAL_MUTANTS has it too)
    # a pass entry or pass buffer that samples while it is in use (the registers that take no late enable)
    Mutant(
        "array_set_samples_current",  # the walk's current entry samples passes, not the free one
        "hdl/array_set.py",
        "with m.If(sel != i):",
        "with m.If(sel == i):",
        "small arrays",
        tests=("tb/test_engine.py::test_engine_small_arrays_amaranth",),
        proofs=("array_set_queue",),
    ),
    Mutant(
        "dispatcher_samples_beating",  # the buffer whose beats leave samples passes too
        "hdl/dispatcher.py",
        "with m.If(~full[i]):",
        "with m.If(~full[i] | (bsel == i)):",
        "pass dispatcher",
        tests=("tb/test_dispatcher_amaranth.py",),
    ),
    Mutant(
        "array_set_highest_free",
        "hdl/array_set.py",
        "for a in reversed(range(A)):",
        "for a in range(A):",
        "small arrays",
        tests=("tb/test_engine.py::test_engine_small_arrays_amaranth",),
        proofs=("array_set_queue",),
    ),
    # issue 46, item 5: the models that turn activity into joules and transistors into mm^2, the quality
    # metrics, and the credit and occupancy bounds (each killed by the named independent test)
    # -- what issue 43's goals need (tb/test_headroom.py: every figure worked by hand)
    Mutant(
        "headroom_keep_counts_fixed",  # the softmax and io counted as savable compute energy
        "kaleido/headroom.py",
        '"keep_max": (dense / goal - fixed) / compute',
        '"keep_max": (dense / goal) / compute',
        "goal headroom",
        tests=("tb/test_headroom.py",),
    ),
    Mutant(
        "headroom_dense_buffers",  # the logic budget left beside the dense core's buffers, not the design's
        "kaleido/headroom.py",
        'logic_budget_mm2=budget - flat["kaleido_mm2"]["buffers"]',
        'logic_budget_mm2=budget - flat["dense_mm2"]["buffers"]',
        "goal headroom",
        tests=("tb/test_headroom.py",),
    ),
    # -- the energy model (tb/test_energy_model.py: every stage's events and pJ by hand)
    Mutant(
        "energy_drain_no_tile_register",
        "kaleido/energy.py",
        'ev["acc_write"] += tiles * (1 + registers)',
        'ev["acc_write"] += tiles * registers',
        "energy model",
        tests=("tb/test_energy_model.py",),
    ),
    Mutant(
        "energy_scheduling_one_side",  # the scheduling stage's unit and sorted memories of one side only
        "kaleido/energy.py",
        "side = 2 * unit_channels * 18 // 8",
        "side = unit_channels * 18 // 8",
        "energy model",
        tests=("tb/test_energy_model.py",),
    ),
    Mutant(
        "energy_pv_one_add",  # P V's combine dropped: one add per product, not two
        "kaleido/energy.py",
        'ev["add_20"] = 2 * pa["products"]  # the combine and the accumulate',
        'ev["add_20"] = pa["products"]  # the combine and the accumulate',
        "energy model",
        tests=("tb/test_energy_model.py",),
    ),
    Mutant(
        "energy_dense_beats_rows",  # the dense Q K^T's column tiles counted by rows
        "kaleido/energy.py",
        "dense_beats = math.ceil(n / R) * math.ceil(n / C) * d",
        "dense_beats = math.ceil(n / R) * math.ceil(n / R) * d",
        "energy model",
        tests=("tb/test_energy_model.py",),
    ),
    Mutant(
        "energy_softmax_s_once",  # the softmax reads S once, not twice (the row replayed)
        "kaleido/energy.py",
        "n * n * 2 * ACC_ENTRY_BYTES + n * d * ACC_ENTRY_BYTES",
        "n * n * ACC_ENTRY_BYTES + n * d * ACC_ENTRY_BYTES",
        "energy model",
        tests=("tb/test_energy_model.py",),
    ),
    Mutant(
        "energy_savings_swapped",
        "kaleido/energy.py",
        '"savings": dense / kaleido,',
        '"savings": kaleido / dense,',
        "energy model",
        tests=("tb/test_energy_model.py",),
    ),
    # -- the calibrated rows of the results table (issue 43, lever 4)
    Mutant(
        "report_calibrates_on_the_measured_head",  # thresholds chosen on the head they are measured on
        "kaleido/bench/efficiency_report.py",
        "calibration.q, calibration.k, calibration.v, calibration.grid, calibration.split, config,",
        "w.q, w.k, w.v, w.grid, w.split, config,",
        "efficiency",
        tests=("tb/test_efficiency_report.py",),
    ),
    Mutant(
        "config_hardware_design_counts_thresholds",  # a calibrated head no longer runs on the named build
        "kaleido/config.py",
        '{k: v for k, v in fields.items() if k != "group_thresholds"}',
        "fields",
        "efficiency",
        tests=("tb/test_config.py", "tb/test_efficiency_report.py"),
    ),
    # -- the chip calibration and the core areas (tb/test_area_model.py: table 2 and counts by hand)
    Mutant(
        "chip_dense_arrays_overhead_of_arrays",  # the 6.6 % taken of the arrays, not of the chip
        "kaleido/area.py",
        'paper_dense_arrays = paper["arrays_mm2"] - paper["arrays_overhead"] * paper["total_mm2"]',
        'paper_dense_arrays = paper["arrays_mm2"] * (1 - paper["arrays_overhead"])',
        "chip calibration",
        tests=("tb/test_area_model.py",),
    ),
    Mutant(
        "chip_no_matchers",  # a dispatcher's matchers left out
        "kaleido/area.py",
        'for b in ("detector", "scheduler", "matcher"))',
        'for b in ("detector", "scheduler"))',
        "chip calibration",
        tests=("tb/test_area_model.py",),
    ),
    Mutant(
        "chip_dispatch_overhead_of_kaleido",  # the dispatchers' overhead over the Kaleido chip, not the dense
        "kaleido/area.py",
        '"dispatchers": dispatch_mm2 / dense,',
        '"dispatchers": dispatch_mm2 / kaleido,',
        "chip calibration",
        tests=("tb/test_area_model.py",),
    ),
    Mutant(
        "core_area_no_utilization",
        "synth/core.py",
        'entry["transistors"] / (data["logic"]["transistors_per_mm2"] * data["logic"]["utilization"])',
        'entry["transistors"] / data["logic"]["transistors_per_mm2"]',
        "core area",
        tests=("tb/test_area_model.py",),
    ),
    Mutant(
        "core_overhead_over_kaleido",  # the overhead at the paper's buffers over the Kaleido core's logic
        "synth/core.py",
        '"at_paper_buffers": (ka["logic"] - da["logic"]) / (da["logic"] + per_array),',
        '"at_paper_buffers": (ka["logic"] - da["logic"]) / (ka["logic"] + per_array),',
        "core area",
        tests=("tb/test_area_model.py",),
    ),
    # -- the quality metrics (tb/test_quality_metrics.py: negative peaks, constant and zero references)
    Mutant(
        "metrics_peak_no_abs",
        "golden/attention.py",
        "peak = float(np.max(np.abs(ref)))",
        "peak = float(np.max(ref))",
        "quality metrics",
        tests=("tb/test_quality_metrics.py",),
    ),
    Mutant(
        "metrics_max_abs_signed",
        "golden/attention.py",
        '"max_abs": float(np.max(np.abs(diff)))',
        '"max_abs": float(np.max(diff))',
        "quality metrics",
        tests=("tb/test_quality_metrics.py",),
    ),
    Mutant(
        "metrics_cosine_divisor",  # the reference's norm squared, not the two norms
        "golden/attention.py",
        "np.sum(out * ref) / (norms[0] * norms[1])",
        "np.sum(out * ref) / (norms[1] * norms[1])",
        "quality metrics",
        tests=("tb/test_quality_metrics.py",),
    ),
    # -- the efficiency figures (tb/test_efficiency.py: the spec's definitions on a made-up report)
    Mutant(
        "efficiency_clock_ratio_swapped",
        "kaleido/efficiency.py",
        'time_speedup = cycle_speedup * kaleido["mhz"] / dense["mhz"]',
        'time_speedup = cycle_speedup * dense["mhz"] / kaleido["mhz"]',
        "efficiency",
        tests=("tb/test_efficiency.py",),
    ),
    Mutant(
        "efficiency_chip_delta_sign",  # a design's extra logic per array subtracted from one_array's
        "kaleido/efficiency.py",
        'array["transistors"] = array["transistors"] + delta',
        'array["transistors"] = array["transistors"] - delta',
        "efficiency",
        tests=("tb/test_efficiency.py",),
    ),
    Mutant(
        "efficiency_dirty_report_trusted",  # a report measured with uncommitted changes called current
        "kaleido/efficiency.py",
        'return None, f"measured on {commit[:10]} with uncommitted changes"',
        'return False, f"measured on {commit[:10]} with uncommitted changes"',
        "efficiency provenance",
        tests=("tb/test_efficiency.py",),
    ),
    # -- credit and occupancy bounds, each off by one (issue 46, item 4's tests reach each bound exactly)
    Mutant(
        "pv_tile_credit_one_row_early",  # the row credit tightened by one row: passes stop one row early
        "hdl/pv_tile.py",
        "credit_ok = (uc != 0) | (inflight + R <= D)",
        "credit_ok = (uc != 0) | (inflight + R < D)",
        "credit bounds",
        tests=("tb/test_pv_tile.py::test_the_row_credits_bind_exactly",),
    ),
    Mutant(
        "mem_port_room_one_more",  # the stalling memory model takes one request past its depth
        "hdl/mem_port.py",
        "room = in_flight + fifo.r_level < self._depth",
        "room = in_flight + fifo.r_level <= self._depth",
        "credit bounds",
        tests=("tb/test_mem_port.py::test_stalling_model_holds_exactly_depth_requests",),
    ),
    Mutant(
        "buffer_ring_two",  # a ring of 2 passes in flight: a pass's tokens overwritten while in flight
        "hdl/accumulation_buffer.py",
        "return 1 << (need - 1).bit_length()",
        "return 2",
        "credit bounds",
        tests=("tb/test_accumulation_buffer.py::test_the_ring_of_passes_in_flight_in_the_engine",),
    ),
    Mutant(
        "s_fifo_holds_early",  # a bank's FIFO holds the array one entry early: never full (FORMAL_MUTANTS too)
        "hdl/s_bank.py",
        "overflow.eq(count + arrivals > D)",
        "overflow.eq(count + arrivals > D - 1)",
        "credit bounds",
        tests=("tb/test_accumulation_buffer.py",),
        proofs=("accumulation_buffer_banked_cover",),
    ),
]
