"""Formal checks (tb/formal/, `make formal`): the stream rule on every
output of the dispatcher's blocks, proved by k-induction; and a seeded
violation that the same flow finds."""

import os

import pytest
from amaranth import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from kaleido.tb.formal import PROOFS, Harness, Proof, StreamHolds, checked_steps, covers, run_sby, timed_out
from kaleido.tb.mutate import Mutant

pytestmark = pytest.mark.formal


def _workdir(tmp_path, name):
    """YoWASP tools need relative paths."""
    import os

    root = os.path.relpath(tmp_path / name)
    return root if not root.startswith("..") else os.path.join("build", "formal", tmp_path.name, name)


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=[pytest.mark.slow] if p.slow else []) for n, p in PROOFS.items()]
)
def test_proof(name, tmp_path):
    """Each proof passes (one with a timeout may instead stop there, with no
    counterexample)."""
    passed, log = run_sby(PROOFS[name], _workdir(tmp_path, name))
    assert passed or (PROOFS[name].timeout and timed_out(log)), log


def test_a_timeout_is_reported(tmp_path):
    """A BMC stopped by its timeout is told apart from a failure, with the
    steps it checked."""
    import dataclasses

    # the timeout counts SymbiYosys's own preparation too (about 2 s idle):
    # at 3 s a loaded machine timed out before the design was loaded, and
    # sby then crashed instead of reporting; at 8 s the idle machine is at
    # step 13 of the 20
    # z3: yices may close all 20 steps within the 8 s; since the array's
    # beat register z3 may too, so the depth is 60, far past 8 s
    proof = dataclasses.replace(PROOFS["pass_dispatcher_stream"], name="stopped", timeout=8, solver="z3", depth=60)
    work = _workdir(tmp_path, "stopped")
    passed, log = run_sby(proof, work)
    assert not passed and timed_out(log), log
    assert checked_steps(proof, work) < proof.depth


class _Leaky(wiring.Component):
    """A register stage that withdraws valid on every other cycle (a seeded
    violation of the stream rule)."""

    def __init__(self):
        super().__init__({"i": In(stream.Signature(8)), "o": Out(stream.Signature(8))})

    def elaborate(self, platform):
        m = Module()
        toggle = Signal()
        m.d.sync += toggle.eq(~toggle)
        with m.If(self.i.valid & self.i.ready):
            m.d.sync += self.o.payload.eq(self.i.payload)
        m.d.comb += [self.o.valid.eq(toggle), self.i.ready.eq(1)]
        return m


def test_a_seeded_violation_is_found(tmp_path):
    passed, log = run_sby(
        Proof("leaky", lambda: StreamHolds(_Leaky(), ("o",)), mode="bmc", depth=4), _workdir(tmp_path, "leaky")
    )
    assert not passed and "FAIL" in log, log


def test_report(tmp_path):
    """`make formal`'s report: block -> property -> status, engine, depth, seconds."""
    import json

    from kaleido.tb.formal import main

    out = os.path.join(_workdir(tmp_path, "report"), "report.json")
    assert main(["--only", "detector_stream", "--out", out, "--jobs", "1"]) == 0
    entry = json.load(open(out))["detector"]["stream"]
    assert entry["status"] == "pass" and entry["mode"] == "prove" and entry["depth"] == 8 and entry["seconds"] > 0
    with pytest.raises(SystemExit, match="unknown proof 'nope'"):
        main(["--only", "nope", "--out", out])


def test_report_covers(tmp_path):
    """A cover run's entry names each cover and whether it was reached."""
    import json

    from kaleido.tb.formal import main

    out = os.path.join(_workdir(tmp_path, "report"), "report.json")
    assert main(["--only", "detector_cover", "--out", out, "--jobs", "1"]) == 0
    entry = json.load(open(out))["detector"]["cover"]
    assert entry["status"] == "pass" and entry["mode"] == "cover" and entry["why"]
    assert entry["covers"] == {
        c: "reached" for c in ("class_FULL", "class_PARTIAL", "class_NONE", "class_ABSENT", "stall", "back_to_back")
    }


def test_report_memories(tmp_path):
    """A proof whose memories are mapped to flip-flops says so in its entry
    (the banked buffer's covers: a hold, a full FIFO, a forward, a full
    ring)."""
    import json

    from kaleido.tb.formal import main

    out = os.path.join(_workdir(tmp_path, "report"), "report.json")
    assert main(["--only", "accumulation_buffer_banked_cover", "--out", out, "--jobs", "1"]) == 0
    entry = json.load(open(out))["accumulation_buffer"]["banked_cover"]
    assert entry["memories"] == "flip-flops" and entry["status"] == "pass"
    # ring_full: ring_depth passes in flight, the ring's bound (issue 46 item 4)
    assert {"hold", "fifo_full", "rmw_forwarded", "one_bank_all_lanes", "ring_full"} <= set(entry["steps"])


class _Never(Harness):
    """Covers on a register stage: one reachable, one not (a 2-bit payload
    is never 4)."""

    def check(self, m, dut):
        from amaranth.hdl import Cover

        m.d.comb += [
            Cover(dut.o.valid & (dut.o.payload == 3), "three"),
            Cover(dut.o.valid & (dut.o.payload == 4), "never"),
        ]


class _Reg(wiring.Component):
    def __init__(self):
        super().__init__({"i": In(stream.Signature(2)), "o": Out(stream.Signature(2))})

    def elaborate(self, platform):
        m = Module()
        with m.If(self.o.ready | ~self.o.valid):
            m.d.sync += [self.o.valid.eq(self.i.valid), self.o.payload.eq(self.i.payload)]
        m.d.comb += self.i.ready.eq(self.o.ready | ~self.o.valid)
        return m


def test_an_unreachable_cover_is_found(tmp_path):
    proof = Proof("never", lambda: _Never(_Reg()), mode="cover", depth=3)
    work = _workdir(tmp_path, "never")
    passed, log = run_sby(proof, work)
    assert not passed, log
    assert covers(proof, work) == {"three": 1, "never": None}


#: seeded bugs for the later properties, beside ``make mutate``'s list
#: (tb/mutate.py): each is one exact replacement, applied by its machinery
FORMAL_MUTANTS = [
    # the detector takes a pair while its register is full and stalled:
    # the register keeps its pair (the stream rule still holds), the new
    # one is lost
    Mutant(
        "detector_drops_pending",
        "hdl/detector.py",
        "m.d.comb += self.i.ready.eq(self.o.ready | ~self.o.valid)",
        "m.d.comb += self.i.ready.eq(1)",
        "stream handshake",
    ),
    # the array's hold no longer freezes the PEs: a tile not yet read leaves
    Mutant(
        "array_ignores_hold",
        "hdl/array.py",
        "m.submodules.core = EnableInserter(~self.hold)(core)",
        "m.submodules.core = core",
        "array drain",
    ),
    # the S tile's two sets: the writes go to the set being unloaded; the
    # read-modify-write reads the set being unloaded
    Mutant(
        "s_sets_writes_read_set",
        "hdl/s_bank.py",
        "writes_here = s1_valid if S == 1 else s1_valid & (self.write_set == k)",
        "writes_here = s1_valid if S == 1 else s1_valid & (self.read_set == k)",
        "accumulation buffer",
    ),
    Mutant(
        "s_sets_rmw_read_set",
        "hdl/s_bank.py",
        "rmw_data = Mux(self.write_set, rds[1].data, rds[0].data)",
        "rmw_data = Mux(self.read_set, rds[1].data, rds[0].data)",
        "accumulation buffer",
    ),
    # the scheduler's argmin no longer skips a full cluster: a window's
    # nearest cluster overflows its capacity
    Mutant(
        "scheduler_ignores_full",
        "hdl/scheduler.py",
        "has_pivot[j] & (fill[j] < cap_r))",
        "has_pivot[j])",
        "scheduler capacity",
    ),
    # the softmax unit takes a row's last beat while the previous row's r
    # waits: the divider restarts under it and r's quotient changes
    Mutant(
        "softmax_divider_overlaps",
        "hdl/softmax.py",
        "(~beat.last | ~reserved | r_taken)",
        "(~beat.last | ~reserved | 1)",
        "softmax handshake",
    ),
    # the pass former offers a batch's first pass before the array drained
    Mutant(
        "pass_former_ignores_drained",
        "hdl/pass_former.py",
        "(~first_of_batch | self.drained)",
        "(~first_of_batch | 1)",
        "pass former handshake",
    ),
    # the pass former steps two column groups: a pass is lost
    Mutant(
        "pass_former_skips_pass",
        "hdl/pass_former.py",
        "col_next.eq(col_group + 1)",
        "col_next.eq(col_group + 2)",
        "pass former walk",
    ),
    # the pass former's registered reads address its position now, not the next one:
    # the words offered are those of the pass before
    Mutant(
        "pass_former_reads_late",
        "hdl/pass_former.py",
        "((self.sorted_rows, row_next), (self.sorted_cols, col_next))",
        "((self.sorted_rows, row_group), (self.sorted_cols, col_group))",
        "pass former reads",
    ),
    # the pass former keeps its reads off on a restart under a waiting pass: the
    # next head's first words are read from the old address
    Mutant(
        "pass_former_read_off_on_restart",
        "hdl/pass_former.py",
        "self.passes.valid & ~self.passes.ready & ~self.restart",
        "self.passes.valid & ~self.passes.ready",
        "pass former reads",
    ),
    # the pass former moves on without a transfer: the offered pass changes under a stall
    Mutant(
        "pass_former_ignores_ready",
        "hdl/pass_former.py",
        "self.taken.eq(self.passes.valid & self.passes.ready)",
        "self.taken.eq(self.passes.valid)",
        "pass former handshake",
    ),
    # the accumulation buffer's hold ignores this cycle's arrivals: a FIFO overflows
    # (make mutate's s_fifo_full, full one entry late, is no overflow: the FIFO pops
    # its head in the cycle it takes the extra entry, see docs/FORMAL.md)
    Mutant(
        "s_fifo_overflow",
        "hdl/s_bank.py",
        "overflow.eq(count + arrivals > D)",
        "overflow.eq(count > D)",
        "accumulation buffer",
    ),
    # the accumulation buffer's lane takes the row follower in T1, T3
    # instead of T2, T3: a tile goes to the wrong entry of S
    Mutant(
        "s_lane_phase",
        "hdl/accumulation_buffer.py",
        "i = Mux(phase[1], row.follower, row.anchor)",
        "i = Mux(phase[0], row.follower, row.anchor)",
        "accumulation buffer",
    ),
    # the pass dispatcher lets the channel at count through: a SKIP channel is issued
    Mutant(
        "dispatcher_count",
        "hdl/dispatcher.py",
        "Mux(c >= job.count, Need.SKIP, need)",
        "Mux(c > job.count, Need.SKIP, need)",
        "pass dispatcher need",
    ),
    # the pass dispatcher takes a pass while both buffers hold open passes: a pass is overwritten
    Mutant(
        "dispatcher_ready_when_full",
        "hdl/dispatcher.py",
        "self.passes.ready.eq(~Mux(wsel, full[1], full[0]))",
        "self.passes.ready.eq(1)",
        "pass dispatcher buffers",
    ),
    # the beats take their operands from the buffer whose jobs are next, not the one whose beats leave
    Mutant(
        "dispatcher_beats_job_buffer",
        "hdl/dispatcher.py",
        "out.eq(Mux(bsel, bufs[1], bufs[0]))",
        "out.eq(Mux(jsel, bufs[1], bufs[0]))",
        "pass dispatcher buffers",
    ),
    # the tile loader requests the beat of the responses received, not of the requests issued
    Mutant(
        "loader_addr",
        "hdl/mem_port.py",
        "self.q.payload.addr.eq(base + issued)",
        "self.q.payload.addr.eq(base + got)",
        "tile loader",
    ),
    # the tile loader's done comes a beat early
    Mutant(
        "loader_done_early",
        "hdl/mem_port.py",
        "last = self.w.en & (got + 1 == beats)",
        "last = self.w.en & (got + 2 == beats)",
        "tile loader",
    ),
    # the memory model answers a cycle early
    Mutant(
        "memory_early",
        "hdl/mem_port.py",
        "for k in range(self._latency - 1):",
        "for k in range(self._latency - 2):",
        "memory model",
    ),
    # the O accumulator's o register loads under a stall: a total not yet taken is overwritten
    Mutant(
        "o_acc_overwrites",
        "hdl/o_accumulator.py",
        "with m.If(o_free):",
        "with m.If(1):",
        "O accumulator handshake",
    ),
    # the tiled softmax takes a final segment's last beat while the previous row's r waits
    Mutant(
        "tile_softmax_divider_overlaps",
        "hdl/softmax.py",
        "(~divides | ~reserved | r_taken)",
        "(~divides | ~reserved | 1)",
        "softmax handshake",
    ),
    # the O accumulator takes a beat while its final total waits in stage R: the total is lost
    Mutant(
        "o_acc_ignores_stall",
        "hdl/o_accumulator.py",
        "self.i.ready.eq(r_moves)",
        "self.i.ready.eq(1)",
        "O accumulator handshake",
    ),
    # the tile feeder streams two of the three batches of a token: 64 qk words, not 96
    Mutant(
        "tile_feeder_short_batch",
        "hdl/tile_feeder.py",
        "last_batch = b == nb - 1",
        "last_batch = b == nb - 2",
        "tile feeder",
    ),
    # the tile feeder loads the tile's whole x extent for a clipped box: more requests than the box has beats
    Mutant(
        "tile_feeder_full_runs",
        "hdl/tile_feeder.py",
        "loader.cmd.payload.count.eq(box.x)",
        "loader.cmd.payload.count.eq(bx)",
        "tile feeder",
    ),
    # the tile feeder steps its stream on valid, not on a transfer: a stalled word changes
    Mutant(
        "tile_feeder_ignores_ready",
        "hdl/tile_feeder.py",
        "with m.If(fire):",
        "with m.If(self.qk.valid):",
        "tile feeder handshake",
    ),
    # the P V stage writes every drained row, a padded one too, into its row FIFO: an extra total
    Mutant(
        "pv_tile_padded_row",
        "hdl/pv_tile.py",
        "fifo.w_en.eq(row_real)",
        "fifo.w_en.eq(row_valid)",
        "P V tile stage",
    ),
    # the small arrays' queue offers a block to the lowest-index array, ready or not: a block
    # goes to a busy array (which does not take it) and is lost
    Mutant(
        "array_set_busy_array",
        "hdl/array_set.py",
        "with m.If(nxt[a]):",
        "with m.If(1):",
        "small arrays",
    ),
    # the queue steps two blocks: a present block is never handed out
    Mutant(
        "array_set_skips_block",
        "hdl/array_set.py",
        "m.d.sync += block.eq(block + 1)",
        "m.d.sync += block.eq(block + 2)",
        "small arrays",
    ),
    # the queue's hold no longer freezes the walk: a block leaves under hold, to no array
    Mutant(
        "array_set_ignores_hold",
        "hdl/array_set.py",
        "handed.eq(staged & ~self.hold & (staged_empty | free))",
        "handed.eq(staged & (staged_empty | free))",
        "small arrays",
    ),
    # the queue picks the highest-index free array, not the lowest (the model's queue_ticks' rule)
    Mutant(
        "array_set_highest_free",
        "hdl/array_set.py",
        "for a in reversed(range(A)):",
        "for a in range(A):",
        "small arrays",
    ),
    # the queue's target register chosen from this cycle's readiness, not the next cycle's: a block offered
    # to a dispatcher that has just filled its buffers
    Mutant(
        "array_set_target_late",
        "hdl/array_set.py",
        "nxt = [Mux(self.hold, d.passes.ready, d.ready_next) for d in dispatchers]",
        "nxt = [d.passes.ready for d in dispatchers]",
        "small arrays",
    ),
    # the dispatcher's next readiness ignores a pass taken this cycle
    Mutant(
        "dispatcher_ready_next_no_take",
        "hdl/dispatcher.py",
        "                take,\n",
        "                0,\n",
        "small arrays",
    ),
    # the queue's stage takes the walk's block while it still holds one that does not leave: a block lost
    Mutant(
        "array_set_stage_overwrites",
        "hdl/array_set.py",
        "stage_free.eq(~staged | handed)",
        "stage_free.eq(1)",
        "small arrays",
    ),
    # issue 46 item 4, the bounds off by one: the small arrays' queue takes a pass while one is still
    # latched (a second pass in a one-pass queue: blocks lost), or waits for the queue to empty (a
    # pass not taken in the cycle its last block enters the stage: one pass fewer than the queue holds)
    Mutant(
        "array_set_takes_while_loaded",
        "hdl/array_set.py",
        "self.passes.ready.eq(~self.hold & (~loaded | (fill & (block == A - 1))))",
        "self.passes.ready.eq(~self.hold)",
        "small arrays",
    ),
    Mutant(
        "array_set_waits_for_empty",
        "hdl/array_set.py",
        "self.passes.ready.eq(~self.hold & (~loaded | (fill & (block == A - 1))))",
        "self.passes.ready.eq(~self.hold & ~loaded)",
        "small arrays",
    ),
    # the accumulation buffer holds one entry early: no bank's FIFO is ever full
    Mutant(
        "s_fifo_holds_early",
        "hdl/s_bank.py",
        "overflow.eq(count + arrivals > D)",
        "overflow.eq(count + arrivals > D - 1)",
        "accumulation buffer",
    ),
    # the pairing dispatcher moves on (its held half, its unit's second half) while its beat is stalled
    Mutant(
        "pv_pair_moves_under_stall",
        "hdl/pv_dispatcher.py",
        "with m.If(self.beats.valid & self.beats.ready):\n            m.d.sync += [second.eq(~final & ~flush)",
        "with m.If(self.beats.valid):\n            m.d.sync += [second.eq(~final & ~flush)",
        "P V pairing",
    ),
]

#: seeded bugs (tb/mutate.py and FORMAL_MUTANTS) and the proof each must make fail
SEEDED = [
    ("detector_ignores_ready", "detector_stream"),  # drop ready on one port
    ("decode_t0", "pe_full8_product"),  # change one decode entry
    ("matcher_merges_full", "matcher_function"),  # let the matcher merge a FULL channel
    ("detector_drops_pending", "detector_scoreboard"),  # lose a transfer
    # overwrite a tile that has not been read (slow: the 4x4 array in a scratch copy)
    pytest.param("array_ignores_hold", "array_drain", marks=pytest.mark.slow),
    # clusters over capacity (make mutate's list), and an argmin that picks a full cluster
    ("scheduler_capacity", "scheduler_partition"),
    ("scheduler_ignores_full", "scheduler_partition"),
    ("softmax_divider_overlaps", "softmax_stream"),
    # the matcher merges a FULL channel: its jobs' scoreboard (stalls, back-to-back jobs) fails too
    ("matcher_merges_full", "matcher_jobs"),
    # a wrong column operand on PARTIAL lanes (make mutate's list): the tracked pair's result differs
    ("detector_partial_value", "detector_payload"),
    # the pass former: a handshake dropped, a pass lost, a stall that changes the pass
    ("pass_former_ignores_drained", "pass_former_flow"),
    ("pass_former_skips_pass", "pass_former_flow"),
    ("pass_former_ignores_ready", "pass_former_stream"),
    ("pass_former_reads_late", "pass_former_flow"),
    ("pass_former_read_off_on_restart", "pass_former_flow"),
    # the banked accumulation buffer: a FIFO overflows; a lane takes the wrong
    # phase's token; two lanes' tiles in one FIFO slot, a stale word added, a tile in the wrong bank
    ("s_fifo_overflow", "accumulation_buffer_fifo"),
    ("s_lane_phase", "accumulation_buffer_routing"),
    ("s_fifo_place", "accumulation_buffer_sums"),
    ("s_fifo_compact_moves_all", "accumulation_buffer_sums"),
    ("s_fifo_rotate_ignores_pointer", "accumulation_buffer_sums"),
    ("s_rmw_forward", "accumulation_buffer_sums"),
    ("s_bank_route", "accumulation_buffer_sums"),
    ("s_rmw_forward", "accumulation_buffer_sums_short"),  # the fast subset's part of sums catches it too
    # two S sets: the unload reads the write set, the writes go to the read set, the RMW reads the read set
    ("s_sets_unload_set", "accumulation_buffer_sums_two_sets"),
    ("s_sets_writes_read_set", "accumulation_buffer_sums_two_sets"),
    ("s_sets_rmw_read_set", "accumulation_buffer_sums_two_sets"),
    # the pass dispatcher issues a channel past the pass's count
    ("dispatcher_count", "pass_dispatcher_payload"),
    # the two pass buffers: a pass taken into a full buffer; a beat's operands from the next pass
    ("dispatcher_ready_when_full", "pass_dispatcher_framing"),
    ("dispatcher_beats_job_buffer", "pass_dispatcher_payload_two_passes"),
    # the core's stages: a wrong request address, an early done, an early response, a lost total
    ("loader_addr", "tile_loader_flow"),
    ("loader_done_early", "tile_loader_flow"),
    ("memory_early", "memory_model_response"),
    ("memory_early", "tile_loader_response"),  # a load ends a cycle before the model's load_cycles
    ("o_acc_ignores_stall", "o_accumulator_flow"),
    ("tile_softmax_divider_overlaps", "tile_softmax_stream"),
    ("o_acc_overwrites", "o_accumulator_stream"),
    ("o_acc_overwrites", "pv_tile_stream"),  # P V's o is its O accumulator's register
    # the tile feeder: padding not zeroed, a wrong row stride (make mutate's list), a batch
    # lost, extra requests for a clipped box, a stalled word that moves on
    ("tile_feeder_no_padding", "tile_feeder_flow"),
    ("tile_feeder_row_stride", "tile_feeder_flow"),
    ("tile_feeder_short_batch", "tile_feeder_flow"),
    ("tile_feeder_full_runs", "tile_feeder_flow"),
    ("tile_feeder_ignores_ready", "tile_feeder_flow"),
    # the P V stage writes a padded row of a row block into its row FIFO: a total made up (the BMC of
    # depth 20 is slow, but this counterexample is at step 13: 16 s)
    ("pv_tile_padded_row", "pv_tile_scoreboard"),
    # the small arrays' queue: an absent block sent to an array (make mutate's list), a block to a
    # busy array, a block skipped, a block that leaves under hold, the highest-index free array
    ("array_set_no_skip", "array_set_queue"),
    ("array_set_busy_array", "array_set_queue"),
    ("array_set_skips_block", "array_set_queue"),
    ("array_set_ignores_hold", "array_set_queue"),
    ("array_set_highest_free", "array_set_queue"),
    ("array_set_stage_overwrites", "array_set_queue"),
    ("array_set_target_late", "array_set_queue"),
    ("dispatcher_ready_next_no_take", "array_set_queue"),
    # the bounds off by one (issue 46 item 4): the queue's one pass (its ready pinned by the walk),
    # a FIFO that holds one entry early (its full state unreached)
    ("array_set_takes_while_loaded", "array_set_queue"),
    ("array_set_waits_for_empty", "array_set_queue"),
    ("array_set_waits_for_empty", "array_set_cover"),  # pass_behind_last_block unreached
    ("s_fifo_holds_early", "accumulation_buffer_banked_cover"),  # fifo_full unreached
    # small-P pairing: half B's P from the low nibble in the PE; the dispatcher moving on under a stall
    ("pe_pair_nibble_b", "pe_pv_pair_products"),
    ("pv_pe_pair_nibble_b", "pv_pe_pair_products"),
    ("pv_pair_moves_under_stall", "pv_dispatcher_pairs_stream"),
]


#: seeded bugs whose k-induction proof fails in its step case (a white-box
#: invariant breaks), also run as a BMC from reset, where a failure is a
#: real counterexample trace: (mutant, proof, depth)
SEEDED_TRACES = [
    ("pass_former_skips_pass", "pass_former_flow", 3),
    ("matcher_merges_full", "matcher_jobs", 4),
    # the tile feeder: a box's second run (t, y + 1) at the wrong token (the run-token invariant,
    # step 2); a clipped box's run loaded whole (the loader's beats, step 2)
    ("tile_feeder_row_stride", "tile_feeder_flow", 4),
    ("tile_feeder_full_runs", "tile_feeder_flow", 4),
    # the small arrays' queue: a block to a busy array, a block skipped, a block gone under hold
    # (the step case fails at depth 2; from reset each needs a pass and a block handed first: step 2)
    ("array_set_busy_array", "array_set_queue", 6),
    ("array_set_skips_block", "array_set_queue", 4),
    ("array_set_ignores_hold", "array_set_queue", 4),
    # a window of 8 strings from reset: the LFSR's 11 draws, then ASSIGN overfills a cluster
    # (a BMC from reset runs on yices: 11 s; 255 to 379 s on z3, when it was `slow`)
    ("scheduler_ignores_full", "scheduler_partition", 28),
]


def _fails(mutant, proof, tmp_path, bmc=0):
    """``mutant`` applied to a scratch copy of the tree makes ``proof`` fail
    (run as a BMC of depth ``bmc`` from reset if given); returns the run's
    output."""
    import subprocess
    import sys

    from kaleido.tb.mutate import MUTANTS, apply

    tree = apply(next(m for m in [*MUTANTS, *FORMAL_MUTANTS] if m.name == mutant), tmp_path / "tree")
    out = subprocess.run(
        [sys.executable, "-m", "kaleido.tb.formal", "--only", proof, "--out", "build/formal/report.json", "--jobs", "1"]
        + (["--bmc", str(bmc)] if bmc else []),
        cwd=tree,
        env={**os.environ, "PYTHONPATH": str(tree)},
        capture_output=True,
        text=True,
    )
    assert out.returncode == 1, out.stdout + out.stderr
    assert f"{proof}" in out.stdout and " fail " in out.stdout, out.stdout
    return out.stdout


@pytest.mark.parametrize(("mutant", "proof"), SEEDED)
def test_seeded_bug_fails_its_proof(mutant, proof, tmp_path):
    """Each seeded bug, applied to a scratch copy of the tree, makes its
    named property fail (and the same proof passes on the tree itself:
    test_proof)."""
    _fails(mutant, proof, tmp_path)


@pytest.mark.parametrize(("mutant", "proof", "depth"), SEEDED_TRACES)
def test_seeded_bug_has_a_trace(mutant, proof, depth, tmp_path):
    """The seeded bug is real: a BMC from reset finds a counterexample
    trace (``FAIL``, not a step case that fails to close)."""
    assert "DONE (FAIL" in _fails(mutant, proof, tmp_path, bmc=depth)
