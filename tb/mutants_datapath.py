"""``make mutate``'s mutants (:mod:`kaleido.tb.mutate`), part 1 of 4: the
RTL datapath. The PE, the decode table every layer shares, the skew, the
detectors and the run-time thresholds, the scheduler, the matcher, the P V
dispatcher and small-P pairing, the banked accumulation buffer and its two
S sets, the core."""

from kaleido.tb.mutant import Mutant

DATAPATH = [
    # the PE: decode, shift, sign, operand selects, P V mode
    Mutant("pe_shift", "hdl/pe.py", "Mux(dual_r, p_b, p_b << 4)", "Mux(dual_r, p_b, p_b << 3)", "PE shift"),
    Mutant(
        "pe_hi_sign",
        "hdl/pe.py",
        "Cat(col.k[4:8], col.k[7])).as_signed())",
        "Cat(col.k[4:8], Const(0, 1))).as_signed())",
        "PE shift",
    ),
    # the Q K^T arrays' PE (hdl/qk_pe.py): multiplier B's operand in DUAL_LO
    Mutant(
        "qk_pe_m1",
        "hdl/qk_pe.py",
        "b_op.eq(Mux(dual, row.r1, row.r0))",
        "b_op.eq(Mux(dual, row.r0, row.r0))",
        "PE decode",
        tests=("tb/test_qk_pe.py",),
    ),
    # the P V array's PE (hdl/pv_pe.py): shift, drain, forwarding of the paired beat's second V
    Mutant(
        "pv_pe_shift",
        "hdl/pv_pe.py",
        "Mux(w.pair_r, w.p_b, w.p_b << 4)",
        "Mux(w.pair_r, w.p_b, w.p_b << 3)",
        "PE shift",
        tests=("tb/test_pv_pe.py",),
    ),
    Mutant(
        "pv_pe_keeps_r0",
        "hdl/pv_pe.py",
        "self.tile.value.eq(new), r0.eq(0)]",
        "self.tile.value.eq(new), r0.eq(new)]",
        "PE decode",
        tests=("tb/test_pv_pe.py",),
    ),
    Mutant(
        "pv_pe_pair_nibble_b",  # half B's P from the low nibble (killed by the pv_pe_pair_products proof too)
        "hdl/pv_pe.py",
        'x_b = KaleidoPE._nibble_operand(m, col.k1, row, 4, "x_b")',
        'x_b = KaleidoPE._nibble_operand(m, col.k1, row, 0, "x_b")',
        "PE decode",
        tests=("tb/test_pv_pe.py",),
    ),
    Mutant(
        "pv_pe_drops_kb",
        "hdl/pv_pe.py",
        "[self.col_out.k1.eq(col.k1), self.col_out.kb.eq(col.kb)]",
        "[self.col_out.k1.eq(col.k1)]",
        "PE decode",
        tests=("tb/test_pv_pe.py",),
    ),
    Mutant(
        "pe_m1",
        "hdl/pe.py",
        "sel_b.eq(Mux(dual, PvSelect.R1, sel_a))",
        "sel_b.eq(Mux(dual, PvSelect.R0, sel_a))",
        "PE decode",
    ),
    Mutant(
        "pe_pv_sum",
        "hdl/pv_dispatcher.py",
        "[pre[r].eq(u.p_a[r] + u.p_f[r]) for r in range(R)]",
        "[pre[r].eq(u.p_a[r] | u.p_f[r]) for r in range(R)]",
        "P V pre-add",
    ),
    Mutant("pe_pv_r0_only", "hdl/pe.py", "Const(int(i == 0), 1)", "Const(int(i == 1), 1)", "PE P V"),
    Mutant(
        "pe_en_b",
        "hdl/pe.py",
        "Mux(dual, parts_b[i][0], parts_a[i][1])",
        "Mux(dual, parts_a[i][0], parts_a[i][1])",
        "PE decode",
    ),
    Mutant("pe_drain_phase", "hdl/pe.py", "self.tile.phase.eq(phase)", "self.tile.phase.eq(0)", "PE drain"),
    # the decode table every layer shares
    Mutant(
        "need_4acc_t3",
        "kaleido/encoding.py",
        "own = _ZERO if accumulators == 4 else shared_k[k]",
        "own = shared_k[k]",
        "dispatcher need rule (4 accumulators)",
    ),
    Mutant(
        "need_t0_t2",
        "kaleido/encoding.py",
        "Phase.T2: _P if qF else _ZERO}",
        "Phase.T2: _P}",
        "dispatcher need rule (3 accumulators)",
    ),
    Mutant(
        "decode_t0",
        "kaleido/encoding.py",
        "out = {Phase.T0: _P, Phase.T1:",
        "out = {Phase.T0: _LO, Phase.T1:",
        "PE decode",
    ),
    Mutant(
        "need_half",
        "kaleido/encoding.py",
        "if union == PeNeed.LO and Phase(phase) in (Phase.T1, Phase.T3):",
        "if union == PeNeed.LO:",
        "dispatcher need rule (3 accumulators)",
    ),
    # the skew
    Mutant(
        "skew_rows",
        "hdl/skew.py",
        'delay(self.rows[r], ROW, r, f"row{r}")',
        'delay(self.rows[r], ROW, r + 1, f"row{r}")',
        "skew",
    ),
    Mutant(
        "skew_cols",
        "hdl/skew.py",
        'delay(self.cols[c], COL, c, f"col{c}")',
        'delay(self.cols[c], COL, 0, f"col{c}")',
        "skew",
    ),
    # the detectors
    Mutant(
        "detector_full",
        "hdl/detector.py",
        "((0xFF << (8 - n)) & 0xFF) if n <= 8 else 0x100",
        "((0xFF << (9 - n)) & 0xFF) if n <= 8 else 0x100",
        "detector compare",
    ),
    Mutant(
        "detector_threshold_swap",
        "hdl/detector.py",
        "full_mask.eq(masks[self.i.payload.full])",
        "full_mask.eq(masks[self.i.payload.partial])",
        "detector compare",
    ),
    Mutant(
        "scheduling_one_group_thresholds",
        "hdl/scheduling.py",
        "pair = thresholds[n.batch_group[n.batch]]",
        "pair = thresholds[0]",
        "run-time thresholds",
    ),
    Mutant(
        "scheduling_thresholds_never_loaded",
        "hdl/scheduling.py",
        "m.d.sync += thresholds.eq(self.thresholds)",
        "m.d.sync += thresholds.eq(thresholds)",
        "run-time thresholds",
    ),
    Mutant(
        "detector_partial_value",
        "hdl/detector.py",
        "Cat(b.as_unsigned()[:4], a.as_unsigned()[4:])",
        "Cat(a.as_unsigned()[:4], a.as_unsigned()[4:])",
        "detector compare",
    ),
    Mutant(
        "detector_string",
        "hdl/detector.py",
        "bits.append(lane & (absent | ~full))",
        "bits.append(lane & ~full)",
        "detector compare",
    ),
    Mutant(
        "detector_ready",
        "hdl/detector.py",
        "m.d.comb += self.i.ready.eq(self.o.ready | ~self.o.valid)",
        "m.d.comb += self.i.ready.eq(self.o.ready)",
        "stream handshake",
    ),
    Mutant(
        "detector_ignores_ready",
        "hdl/detector.py",
        "with m.If(self.o.ready | ~self.o.valid):",
        "with m.If(1):",
        "stream handshake",
    ),
    Mutant(
        "window_full", "hdl/window_detector.py", "full = mag <= full_max", "full = mag < full_max", "detector compare"
    ),
    # the scheduler
    Mutant(
        "scheduler_capacity",
        "hdl/scheduler.py",
        "cap.eq((count + (K - 1)) >> 2)",
        "cap.eq((count + (K - 1)) >> 1)",
        "scheduler capacity",
    ),
    Mutant(
        "scheduler_tie",
        "hdl/scheduler.py",
        "first = ~ob | (oa & (da <= db))",
        "first = ~ob | (oa & (da < db))",
        "scheduler tie-break",
    ),
    Mutant(
        "scheduler_pivots",
        "hdl/scheduler.py",
        "need_piv.eq(Mux(count < K, count, K))",
        "need_piv.eq(Mux(count < K, count, K - 1))",
        "scheduler pivots",
    ),
    # the matcher
    Mutant(
        "matcher_lookahead",
        "hdl/matcher.py",
        'count_below(m, "window", below, L)',
        'count_below(m, "window", below, L + 1)',
        "matcher lookahead",
    ),
    Mutant("matcher_merges_full", "hdl/matcher.py", "cand.eq(rest & half)", "cand.eq(rest)", "matcher merge"),
    Mutant(
        "matcher_head_half",
        "hdl/matcher.py",
        "dual.eq(((head_oh & half) != 0) & (cand != 0) & in_window)",
        "dual.eq((cand != 0) & in_window)",
        "matcher merge",
    ),
    Mutant(
        "matcher_last_single_any",  # a single rest channel ends the job whether or not it is HALF
        "hdl/matcher.py",
        "merges_single = rest_single & ((head_oh & half) != 0) & (cand != 0) if L > 0",
        "merges_single = rest_single & ((head_oh & half) != 0) if L > 0",
        "matcher merge",
        tests=("tb/test_dispatch_amaranth.py", "tb/test_dispatcher_amaranth.py"),
        proofs=("matcher_function",),
    ),
    Mutant(
        "matcher_ready", "hdl/matcher.py", "self.i.ready.eq(~busy | done)", "self.i.ready.eq(~busy)", "stream handshake"
    ),
    # P V
    Mutant("pv_single", "hdl/pv_dispatcher.py", "single = absent | all_full", "single = absent", "P V dispatcher"),
    Mutant(
        "pv_second_select",
        "hdl/pv_dispatcher.py",
        "Mux(full[c], PvSelect.SKIP, PvSelect.R1)",
        "Mux(full[c], PvSelect.R1, PvSelect.R1)",
        "P V dispatcher",
    ),
    Mutant(
        "pv_last",
        "hdl/pv_dispatcher.py",
        "beat.ctl.last.eq(side.last & final)",
        "beat.ctl.last.eq(side.last)",
        "P V dispatcher",
    ),
    # small-P pairing on P V (issue 14, config.pv_pairs): the small-half test, the flush of a held half
    # at a pass's end, pairing a unit's two halves, half B's P nibble in the PE
    Mutant(
        "pv_pair_zero_v",
        "hdl/pv_dispatcher.py",
        "bad.append((v != 0) & big)",
        "bad.append(big)",
        "P V pairing",
    ),
    Mutant(
        "pv_pair_flush",
        "hdl/pv_dispatcher.py",
        "flush.eq(side.last & pend_valid & ~",
        "flush.eq(pend_valid & ~",
        "P V pairing",
    ),
    Mutant("pv_pair_both", "hdl/pv_dispatcher.py", "with m.Elif(s1 & s2):", "with m.Elif(s1 & s2 & 0):", "P V pairing"),
    Mutant(
        "pe_pair_nibble_b",
        "hdl/pe.py",
        'x_b = self._nibble_operand(m, col.k1, row, 4, "x_b")',
        'x_b = self._nibble_operand(m, col.k1, row, 0, "x_b")',
        "P V pairing",
    ),
    # the banked accumulation buffer (issue 13): routing, FIFO full, the read-after-write forward, the hold
    Mutant(
        "s_bank_route",
        "hdl/accumulation_buffer.py",
        "bank.eq(s_bank(i, j, B) if B > 1 else 0)",
        "bank.eq(s_bank(i, i, B) if B > 1 else 0)",
        "accumulation buffer",
    ),
    Mutant(
        "s_fifo_full",
        "hdl/s_bank.py",
        "overflow.eq(count + arrivals > D)",
        "overflow.eq(count + arrivals > D + 1)",
        "accumulation buffer",
    ),
    Mutant(
        "s_fifo_place",
        "hdl/s_bank.py",
        "gap.eq(sum((~self.sel[k] for k in range(i)),",
        "gap.eq(sum((~self.sel[k] for k in range(i - 1)),",
        "accumulation buffer",
    ),
    # the compaction moves an entry without looking at its gap's bit: two entries meet
    Mutant(
        "s_fifo_compact_moves_all",
        "hdl/s_bank.py",
        "moves_in = v_in & g_in[k]",
        "moves_in = v_in",
        "accumulation buffer",
    ),
    # the rotation ignores the write pointer's bit: entries land on the wrong slots
    Mutant(
        "s_fifo_rotate_ignores_pointer",
        "hdl/s_bank.py",
        "valid.eq(Mux(by[k], src[0], cur[s][0])),",
        "valid.eq(cur[s][0]),",
        "accumulation buffer",
    ),
    Mutant(
        "s_fifo_write_under_hold",
        "hdl/s_bank.py",
        "with m.If(take & (arrivals != 0)):",
        "with m.If(arrivals != 0):",
        "accumulation buffer",
    ),
    Mutant(
        "s_rmw_forward",
        "hdl/s_bank.py",
        "Mux(last_valid & (last_offset == s1.offset), last_value, rmw_data)",
        "rmw_data",
        "accumulation buffer",
    ),
    # the S tile's two sets (docs/CORE.md "The S tile's two sets")
    Mutant(
        "s_sets_handoff_wait",
        "hdl/engine_control.py",
        "with m.If(self.drained & (~reading | self.unloaded)):",
        "with m.If(self.drained):",
        "accumulation buffer",
    ),
    Mutant(
        "s_sets_unload_set",
        "hdl/s_bank.py",
        "unload_data = Mux(self.read_set, rds[1].data, rds[0].data)",
        "unload_data = Mux(self.write_set, rds[1].data, rds[0].data)",
        "accumulation buffer",
    ),
    Mutant(
        "core_feed_waits_for_p",
        "hdl/core.py",
        "with m.If(feeder.cmd.ready & pv.fill_idle & ~w.v_ready):",
        "with m.If(feeder.cmd.ready & ~w.v_ready):",
        "core",
    ),
    Mutant(
        "core_feed_waits_for_s",
        "hdl/core.py",
        "with m.If(feeder.cmd.ready & pv.fill_idle & ~w.v_ready):",
        "with m.If(feeder.cmd.ready & pv.fill_idle):",
        "core",
        tests=("tb/test_core.py::test_core_feed_waits_for_the_previous_s_tile",),
    ),
    # the head command's thresholds never reach the engine (it runs its built-in ones)
    Mutant(
        "core_ignores_thresholds",
        "hdl/core.py",
        "m.d.comb += [self.softmax.constant.eq(head.constant), self.engine.thresholds.eq(head.thresholds)]",
        "m.d.comb += [self.softmax.constant.eq(head.constant)]",
        "core",
    ),
    Mutant(
        "s_engine_settled",
        "hdl/engine.py",
        "control.drained.eq(accumulator.settled & arrays.idle),",
        "control.drained.eq(accumulator.drained & arrays.idle),",
        "accumulation buffer",
    ),
]
