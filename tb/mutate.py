"""``make mutate`` (issue 19): seeded bugs, each applied to a scratch copy
of the tree and run against the fast suite; killed or survived, in
``build/mutate/report.json``.

A mutant is one exact text replacement in one file. It must match exactly
once, so a mutant that drifts from the code fails loudly instead of
silently testing nothing (``tb/test_mutate.py`` checks every mutant
applies, in the default suite). An equivalent mutant (one no test can
kill, because it does not change behaviour) names its reason and is left
out of the kill rate.

A mutant runs in stages, stopping at the first that fails (issue 46, item
5): its own ``tests`` (part of the fast suite, so a kill there is a kill
by the fast suite, only sooner), the whole fast suite, then its
``proofs``: the formal proofs ``make test`` runs (``tb/test_formal.py``'s
``test_proof``, not ``slow``), which the fast suite leaves out. A mutant
only a proof fails is killed in ``make test`` and reported ``killed_by:
"proof"``. Scores are per file group (:func:`group_of`), against the goal
of :data:`GOAL` each.

``python -m kaleido.tb.mutate [--only NAME,...] [--jobs N] [--targeted] [--merge]``
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time

__all__ = ["Mutant", "MUTANTS", "GOAL", "apply", "run", "group_of", "scores", "stages_of", "percent_down", "FAST_SUITE"]

ROOT = pathlib.Path(__file__).resolve().parent.parent

#: the fast suite, stopping at the first failure; a test running past
#: ``TEST_TIMEOUT`` seconds fails (pytest-timeout): a mutant that makes a
#: simulation wait forever is killed there, not hours later at its cycle limit.
#: ``tb/test_mutate.py`` is left out: in a mutated tree the mutant's own text
#: is gone, so its check that every mutant applies fails on every mutant (a
#: false kill, not a test of the mutant)
TEST_TIMEOUT = 600
FAST_SUITE = [
    "-x",
    "-q",
    "-p",
    "no:cacheprovider",
    f"--timeout={TEST_TIMEOUT}",
    "-m",
    "not rtl and not soak and not slow and not formal",
    "--ignore=tb/test_mutate.py",
    "tb",
]
#: a mutant's proofs, with ``make test``'s marks (pyproject.toml's default
#: ``-m`` leaves out only ``soak`` and ``slow``)
PROOF_SUITE = ["-x", "-q", "-p", "no:cacheprovider", f"--timeout={TEST_TIMEOUT}", "-m", "not soak and not slow"]

#: the kill rate each file group should reach
GOAL = 0.95

#: file groups, the first prefix that matches a mutant's path
GROUPS = (
    ("hdl/", "hdl"),
    ("golden/", "golden"),
    ("kaleido/energy.py", "energy/area/efficiency"),
    ("kaleido/area.py", "energy/area/efficiency"),
    ("kaleido/efficiency.py", "energy/area/efficiency"),
    ("kaleido/sensitivity.py", "energy/area/efficiency"),
    ("synth/", "energy/area/efficiency"),
    ("kaleido/explore/", "exploration"),
    ("kaleido/calibrate.py", "exploration"),
    ("kaleido/", "model"),
)


def group_of(path: str) -> str:
    """The file group of a mutated file (:data:`GROUPS`)."""
    return next((g for prefix, g in GROUPS if path.startswith(prefix)), "other")


@dataclasses.dataclass(frozen=True)
class Mutant:
    """Replace ``old`` by ``new`` in ``path`` (relative to the root).
    ``tests``: pytest paths or node ids of the fast suite aimed at it, run
    first; ``proofs``: :data:`kaleido.tb.formal.PROOFS` names, not slow, run
    by ``make test``, tried when the fast suite spares it."""

    name: str
    path: str
    old: str
    new: str
    area: str
    equivalent: str | None = None
    tests: tuple[str, ...] = ()
    proofs: tuple[str, ...] = ()

    @property
    def group(self) -> str:
        return group_of(self.path)

    @property
    def suite(self) -> str:
        return "fast+formal" if self.proofs else "fast"


MUTANTS = [
    # the PE: decode, shift, sign, operand selects, P V mode
    Mutant("pe_shift", "hdl/pe.py", "Mux(dual_r, p_b, p_b << 4)", "Mux(dual_r, p_b, p_b << 3)", "PE shift"),
    Mutant(
        "pe_hi_sign",
        "hdl/pe.py",
        "Cat(col.k[4:8], col.k[7])).as_signed())",
        "Cat(col.k[4:8], Const(0, 1))).as_signed())",
        "PE shift",
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
        "place = place + self.sel[k]",
        "place = place",
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
    Mutant("model_bank_free", "kaleido/model/engine.py", "a_last[b - 2] + 2)", "a_last[b - 2] + 3)", "engine timing"),
    Mutant(
        "model_pass_gap_start",
        "kaleido/model/qk.py",
        "(1 if pass_gap else 0) + array_drain(cfg)",
        "0 + array_drain(cfg)",
        "array timing",
    ),
    Mutant(
        "model_pv_tile_four_rows",  # issue 19: the old model, exact on 4-row arrays only
        "kaleido/model/pv.py",
        "return r + config.array_cols - 1 + array_latency",
        "return r + config.array_rows - 4 + config.array_cols - 1 + array_latency",
        "P V timing",
    ),
    Mutant(
        "model_pv_run_busy_array",  # two buffers: the next run's first unit ignores the array's last two-beat unit
        "kaleido/model/pv.py",
        "first_in = max(max(last_fill + 1, entered) + 1, entered + p_last)",
        "first_in = max(last_fill + 1, entered) + 1",
        "P V timing",
    ),
    Mutant(
        "model_pv_drain",
        "kaleido/model/pv.py",
        "        beats + 1 + array_drain(config),",
        "        beats + array_drain(config),",
        "P V timing",
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
        "kaleido/explore/explorer.py",
        's["qk_imbalance"] += r["qk_imbalance_cycles"] + r["qk_drain_cycles"]',
        's["qk_imbalance"] += r["qk_imbalance_cycles"]',
        "exploration",
    ),
    Mutant(
        "explore_shape_cost_schedulers",
        "kaleido/explore/explorer.py",
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
        "kaleido/explore/explorer.py",
        '"meets_floor": min(psnr) >= floor,',
        '"meets_floor": min(psnr) >= floor - 10,',
        "exploration",
    ),
    # the tiled softmax's row state (issue 13)
    Mutant(
        "tile_softmax_forward",
        "hdl/softmax.py",
        "m.d.comb += row_m.eq(Mux(m_fwd_valid & (m_fwd_row == r_row), m_fwd, m_rd.data))",
        "m.d.comb += row_m.eq(m_rd.data)",
        "softmax row state",
    ),
    Mutant(
        "tile_softmax_first_z",
        "hdl/softmax.py",
        "z_row.eq(Mux(z_inside, z_acc, Mux(out.first, 0, z_old)) + beat_sum),",
        "z_row.eq(Mux(z_inside, z_acc, z_old) + beat_sum),",
        "softmax row state",
    ),
    Mutant(
        "pv_tile_follower_bank",
        "hdl/pv_tile.py",
        "p_f = Mux(b_valid, Mux(b_bank, p_rd[0].data, p_rd[1].data), 0)",
        "p_f = Mux(b_valid, Mux(b_bank, p_rd[1].data, p_rd[0].data), 0)",
        "P V tile stage",
    ),
    Mutant(
        "pv_tile_fill_over_running",  # two buffers: the fill takes a header into the buffer still running
        "hdl/pv_tile.py",
        "m.d.comb += self.i.ready.eq((state != IDLE) | fslot_free)",
        "m.d.comb += self.i.ready.eq(1)",
        "P V tile stage",
    ),
    Mutant(
        "pv_tile_no_padding",
        "hdl/pv_tile.py",
        "pass_last = ~((~exh_next & (uc_next < chunk)) | (uc_next < R))",
        "pass_last = ~(~exh_next & (uc_next < chunk))",
        "P V tile stage",
    ),
    Mutant(
        "tile_feeder_no_padding",
        "hdl/tile_feeder.py",
        "self.qk.payload.eq(Mux(real, Array(lanes)[b], 0))",
        "self.qk.payload.eq(Array(lanes)[b])",
        "tile feeder",
    ),
    Mutant(
        "tile_feeder_row_stride",
        "hdl/tile_feeder.py",
        "m.d.sync += [yi.eq(yi + 1), run_token.eq(run_token + cmd.row)]",
        "m.d.sync += [yi.eq(yi + 1), run_token.eq(run_token + cmd.row + 1)]",
        "tile feeder",
    ),
    Mutant(
        "dense_engine_wrong_last",
        "hdl/dense_engine.py",
        "beat.ctl.last.eq(cur_left == 1)",
        "beat.ctl.last.eq(cur_left == 2)",
        "dense engine",
    ),
    Mutant(
        "dense_engine_walk_off_by_one",
        "hdl/dense_engine.py",
        "m.d.sync += [fj.eq(0), k_word.eq(0), fi.eq(fi + 1), q_word.eq(q_word + NB)]",
        "m.d.sync += [fj.eq(0), k_word.eq(0), fi.eq(fi + 1), q_word.eq(q_word + NB - 1)]",
        "dense engine",
    ),
    Mutant(
        "dense_pv_follower_operand",
        "hdl/baseline.py",
        "beat.b[c].eq(Mux(second, unit.v_f[c], unit.v_a[c]))",
        "beat.b[c].eq(Mux(second, unit.v_a[c], unit.v_a[c]))",
        "dense engine",
    ),
    Mutant(
        "dense_engine_model_latency",
        "kaleido/model/engine.py",
        "DENSE_PE_LATENCY = PE_LATENCY",
        "DENSE_PE_LATENCY = PE_LATENCY + 1",
        "dense engine",
    ),
    # small arrays behind the shared queue (issue 14): the skipped block, the ring per array, the model's wait
    Mutant(
        "array_set_no_skip",
        "hdl/array_set.py",
        "m.d.comb += empty.eq(~(any_row & any_col))",
        "m.d.comb += empty.eq(0)",
        "small arrays",
    ),
    Mutant(
        "buffer_one_ring",
        "hdl/accumulation_buffer.py",
        "entry = rings[a][ring_read]",
        "entry = rings[0][ring_read]",
        "small arrays",
    ),
    Mutant(
        "model_queue_trailing",
        "kaleido/model/engine.py",
        "ready = max(last_tile + 1, first + bt.length + (H if H_free is None else H_free))",
        "ready = last_tile + 1",
        "small arrays",
    ),
    # the queue picks the highest-index free array, not the lowest (kaleido.model.queue_ticks' rule): the
    # fast suite spares it, the proof make test runs fails (docs/FORMAL.md; FORMAL_MUTANTS has it too)
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
        "RING_DEPTH = 4",
        "RING_DEPTH = 2",
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


def apply(mutant: Mutant, dest: str | os.PathLike, root: pathlib.Path = ROOT) -> pathlib.Path:
    """A scratch copy of the tree at ``dest`` with ``mutant`` applied;
    raises ``ValueError`` unless ``old`` occurs exactly once."""
    dest = pathlib.Path(dest)
    text = (root / mutant.path).read_text()
    if text.count(mutant.old) != 1:
        raise ValueError(
            f"mutant {mutant.name!r}: {mutant.old!r} occurs {text.count(mutant.old)} times in {mutant.path}"
        )
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(
        root,
        dest,
        symlinks=True,
        ignore=shutil.ignore_patterns(
            "build",
            ".git",
            ".venv",
            "__pycache__",
            ".pytest_cache",
            ".hypothesis",
            "*.egg-info",
            # tool caches another test process may be writing meanwhile (a race in copytree)
            ".mypy_cache",
            ".ruff_cache",
        ),
    )
    (dest / mutant.path).write_text(text.replace(mutant.old, mutant.new))
    return dest


def _git_clone(tree: pathlib.Path, root: pathlib.Path) -> None:
    """Give the scratch ``tree`` a git repository of its own sharing
    ``root``'s objects, at ``root``'s HEAD, its index that commit: the
    tests that read the history or compare the tree with HEAD (the
    synthesis report's staleness, ``tb/test_efficiency.py``) see the
    checkout's history and the mutated file as a change. Without it git
    finds the checkout around ``build/`` and looks for ``build/.../hdl`` in
    its history: a provenance test fails on every mutant, a false kill."""
    if not (root / ".git").exists():
        return
    git = ["git", "-c", "advice.detachedHead=false"]
    subprocess.run([*git, "clone", "-q", "--bare", "--shared", str(root), str(tree / ".git")], check=True)
    head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
    for args in (["config", "core.bare", "false"], ["update-ref", "--no-deref", "HEAD", head.stdout.strip()]):
        subprocess.run([*git, "-C", str(tree), *args], check=True)
    subprocess.run([*git, "-C", str(tree), "read-tree", "HEAD"], check=True)


def _failed(output: str) -> list[str]:
    """The tests pytest names as failed (its short summary, ``-ra``)."""
    out = []
    for line in output.splitlines():
        for tag in ("FAILED ", "ERROR "):
            if line.startswith(tag):
                out.append(line[len(tag) :].split(" - ")[0].strip())
    return out


def stages_of(
    mutant: Mutant, args: list[str] | None, targeted: bool, deselect: tuple[str, ...] = ()
) -> list[tuple[str, list[str]]]:
    """The runs a mutant goes through, in order: its own tests, the fast
    suite (``args`` instead when given; left out with ``targeted`` when the
    mutant names tests; without the tests ``deselect`` names), its proofs."""
    if args is not None:
        return [("fast", list(args))]
    stages = []
    if mutant.tests:
        stages.append(("tests", [*FAST_SUITE[:-1], *mutant.tests]))
    if not (targeted and mutant.tests):
        stages.append(("fast", [*FAST_SUITE[:-1], *(f"--deselect={d}" for d in deselect), FAST_SUITE[-1]]))
    if mutant.proofs:
        stages.append(("proof", [*PROOF_SUITE, *(f"tb/test_formal.py::test_proof[{p}]" for p in mutant.proofs)]))
    return stages


def run(
    mutant: Mutant,
    work: str | os.PathLike,
    args: list[str] | None = None,
    jobs: int = 2,
    timeout: float = 7200,
    targeted: bool = False,
    deselect: tuple[str, ...] = (),
) -> dict:
    """Apply ``mutant`` in ``work`` and run its stages there (:func:`stages_of`;
    ``args`` instead when given); killed when pytest fails, ``killed_by``
    the stage (``"fast"`` for its own tests or the fast suite, ``"proof"``),
    ``failed`` the tests that failed. ``timeout`` (seconds) bounds each
    stage as a backstop: past it the run counts as a hang, killed. It must
    exceed the whole suite's time on the machine, or a survivor would be
    counted killed; single hung tests are caught by ``TEST_TIMEOUT``.
    ``targeted``: a mutant with ``tests`` skips the whole fast suite (a
    quick check; a survivor then has ``fast_suite: "targeted"``).
    ``deselect``: tests of the fast suite left out (ones that fail on the
    unchanged tree, which would kill every mutant), named in the result."""
    tree = apply(mutant, work)
    _git_clone(tree, ROOT)
    env = {**os.environ, "PYTHONPATH": str(tree), "KALEIDO_SEED": os.environ.get("KALEIDO_SEED", "1")}
    t0 = time.time()
    killed, killed_by, failed, tail, ran = False, None, [], [], []
    for stage, stage_args in stages_of(mutant, args, targeted, deselect):
        ran.append(stage)
        cmd = [sys.executable, "-m", "pytest", *(["-n", str(jobs)] if jobs > 1 else []), *stage_args]
        proc = subprocess.Popen(
            cmd, cwd=tree, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
        )
        try:
            output, _ = proc.communicate(timeout=timeout)
            killed, tail = proc.returncode != 0, output.strip().splitlines()[-3:]
            failed = _failed(output) if killed else []
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # pytest and its xdist workers
            proc.communicate()
            killed, tail, failed = True, [f"timeout after {timeout:g} s (a hang)"], []
        if killed:
            killed_by = "proof" if stage == "proof" else "fast"
            break
    return {
        "killed": killed,
        "killed_by": killed_by,
        "failed": failed,
        "stages": ran,
        "fast_suite": "targeted" if targeted and mutant.tests and "fast" not in ran else "whole",
        "deselected": list(deselect) if "fast" in ran else [],
        "seconds": round(time.time() - t0, 1),
        "area": mutant.area,
        "group": mutant.group,
        "suite": mutant.suite,
        "path": mutant.path,
        "equivalent": mutant.equivalent,
        "tail": tail,
    }


def percent_down(rate: float) -> str:
    """A rate in percent, rounded down to 0.1 (94.96 % is not 95.0 %)."""
    return f"{math.floor(rate * 1000) / 10:.1f} %"


def scores(report: dict) -> dict:
    """Per file group: mutants, non-equivalent ones, killed, killed only by
    a proof, the rate and whether it meets :data:`GOAL`; and ``all``."""
    groups: dict = {}
    for name, r in report.items():
        group = r.get("group") or group_of(r["path"])
        for key in (group, "all"):
            g = groups.setdefault(key, {"mutants": 0, "non_equivalent": 0, "killed": 0, "killed_by_proof": []})
            g["mutants"] += 1
            if not r["equivalent"]:
                g["non_equivalent"] += 1
                g["killed"] += bool(r["killed"])
                if r["killed"] and r.get("killed_by") == "proof":
                    g["killed_by_proof"].append(name)
    for g in groups.values():
        g["rate"] = g["killed"] / max(1, g["non_equivalent"])
        g["goal"] = GOAL
        g["meets_goal"] = g["killed"] >= GOAL * g["non_equivalent"]
    return dict(sorted(groups.items(), key=lambda kv: (kv[0] == "all", kv[0])))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="comma-separated mutant names (default: all)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument(
        "--timeout", type=float, default=7200, help="seconds per stage; past it the mutant is a hang: killed"
    )
    ap.add_argument(
        "--targeted",
        action="store_true",
        help="a mutant with its own tests runs those and its proofs, not the whole fast suite (a quick check)",
    )
    ap.add_argument("--merge", action="store_true", help="keep the other mutants' results of an earlier --out")
    ap.add_argument(
        "--deselect",
        action="append",
        default=[],
        help="a fast-suite test to leave out (one failing on the unchanged tree); repeatable, named in the report",
    )
    ap.add_argument("--out", default="build/mutate/report.json")
    args = ap.parse_args(argv)
    names = [n for n in args.only.split(",") if n]
    known = {m.name: m for m in MUTANTS}
    for n in names:
        if n not in known:
            raise SystemExit(f"unknown mutant {n!r}; known: {sorted(known)}")
    todo = [known[n] for n in names] if names else MUTANTS
    report: dict = {}
    if args.merge and os.path.exists(args.out):
        with open(args.out) as f:
            report = {k: v for k, v in json.load(f)["mutants"].items() if k in known}
    work = pathlib.Path(args.out).parent / "tree"
    for m in todo:
        report[m.name] = r = run(
            m, work, jobs=args.jobs, timeout=args.timeout, targeted=args.targeted, deselect=tuple(args.deselect)
        )
        verdict = f"killed ({r['killed_by']})" if r["killed"] else "SURVIVED"
        by = r["failed"][0] if r["failed"] else ""
        print(f"{m.name:36s} {verdict:15s} {r['seconds']:7.1f} s  {m.group}: {m.area}  {by}", flush=True)
    shutil.rmtree(work, ignore_errors=True)
    groups = scores(report)
    summary = {**groups["all"], "groups": {k: v for k, v in groups.items() if k != "all"}}
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"summary": summary, "mutants": report}, f, indent=2)
    print(f"score per file group (goal {GOAL:.0%} each; killed by a proof = killed in make test):")
    for key, g in groups.items():
        mark = "" if g["meets_goal"] else f"  BELOW the {GOAL:.0%} goal"
        proof = f", {len(g['killed_by_proof'])} only by a proof" if g["killed_by_proof"] else ""
        rate = percent_down(g["rate"])
        print(f"  {key:24s} {g['killed']:3d} of {g['non_equivalent']:3d} killed  {rate:>7s}{proof}{mark}")
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
