"""``make mutate``'s mutants (:mod:`kaleido.tb.mutate`), part 3 of 4: the
later stages. The tiled softmax's row state, the P V tile, the tile
feeder, the dense engine, the small arrays behind the shared queue."""

from kaleido.tb.mutant import Mutant

STAGES = [
    # the tiled softmax's row state (issue 13)
    Mutant(
        "tile_softmax_forward",
        "hdl/softmax.py",
        "m.d.comb += row_m.eq(Mux(m_fwd_valid & (m_fwd_row == r_row), m_fwd, m_rd.data))",
        "m.d.comb += row_m.eq(m_rd.data)",
        "softmax row state",
        tests=("tb/test_tile_softmax.py",),
    ),
    Mutant(
        "tile_softmax_first_z",
        "hdl/softmax.py",
        "z_row.eq(Mux(z_inside, z_acc, Mux(out.first, 0, z_old)) + beat_sum),",
        "z_row.eq(Mux(z_inside, z_acc, z_old) + beat_sum),",
        "softmax row state",
        tests=("tb/test_tile_softmax.py",),
    ),
    Mutant(
        "pv_tile_follower_bank",
        "hdl/pv_tile.py",
        "p_f = Mux(b_valid, Mux(b_bank, p_rd[0].data, p_rd[1].data), 0)",
        "p_f = Mux(b_valid, Mux(b_bank, p_rd[1].data, p_rd[0].data), 0)",
        "P V tile stage",
        tests=("tb/test_pv_tile.py",),
    ),
    Mutant(
        "pv_tile_fill_over_running",  # two buffers: the fill takes a header into the buffer still running
        "hdl/pv_tile.py",
        "m.d.comb += self.i.ready.eq((state != IDLE) | fslot_free)",
        "m.d.comb += self.i.ready.eq(1)",
        "P V tile stage",
        tests=("tb/test_pv_tile.py",),
    ),
    Mutant(
        "pv_tile_block_binary",  # the one-hot channel block register takes the block's index instead
        "hdl/pv_tile.py",
        "b_blk.eq(1 << w.blk if one_hot else w.blk),",
        "b_blk.eq(w.blk),",
        "P V tile stage",
        tests=("tb/test_pv_tile.py",),
    ),
    Mutant(
        "pv_tile_no_padding",
        "hdl/pv_tile.py",
        "pass_last = ~((~exh_next & (uc_next < chunk)) | (uc_next < R))",
        "pass_last = ~(~exh_next & (uc_next < chunk))",
        "P V tile stage",
        tests=("tb/test_pv_tile.py",),
    ),
    Mutant(
        "pv_tile_row_stride",  # a walk paired along y steps one row, not two
        "hdl/pv_tile.py",
        "row_next = w_row + Mux(axis == 1, We << 1, We)",
        "row_next = w_row + We",
        "P V tile stage",
        tests=("tb/test_pv_tile.py",),
    ),
    Mutant(
        "tile_feeder_no_padding",
        "hdl/tile_feeder.py",
        "self.qk.payload.eq(Mux(real, Array(lanes)[b], 0))",
        "self.qk.payload.eq(Array(lanes)[b])",
        "tile feeder",
        tests=("tb/test_tile_feeder.py",),
    ),
    Mutant(
        "tile_feeder_row_stride",
        "hdl/tile_feeder.py",
        "m.d.sync += [yi.eq(yi + 1), run_token.eq(run_token + cmd.row)]",
        "m.d.sync += [yi.eq(yi + 1), run_token.eq(run_token + cmd.row + 1)]",
        "tile feeder",
        tests=("tb/test_tile_feeder.py",),
    ),
    Mutant(
        "dense_engine_wrong_last",
        "hdl/dense_engine.py",
        "beat.ctl.last.eq(cur_left == 1)",
        "beat.ctl.last.eq(cur_left == 2)",
        "dense engine",
        tests=("tb/test_dense_engine.py",),
    ),
    Mutant(
        "dense_engine_walk_off_by_one",
        "hdl/dense_engine.py",
        "m.d.sync += [fj.eq(0), k_word.eq(0), fi.eq(fi + 1), q_word.eq(q_word + NB)]",
        "m.d.sync += [fj.eq(0), k_word.eq(0), fi.eq(fi + 1), q_word.eq(q_word + NB - 1)]",
        "dense engine",
        tests=("tb/test_dense_engine.py",),
    ),
    Mutant(
        "dense_pv_follower_operand",
        "hdl/baseline.py",
        "beat.b[c].eq(Mux(second, unit.v_f[c], unit.v_a[c]))",
        "beat.b[c].eq(Mux(second, unit.v_a[c], unit.v_a[c]))",
        "dense engine",
        tests=("tb/test_pv_tile.py",),
    ),
    Mutant(
        "dense_engine_model_latency",
        "kaleido/model/slots.py",
        "DENSE_PE_LATENCY = PE_LATENCY",
        "DENSE_PE_LATENCY = PE_LATENCY + 1",
        "dense engine",
        tests=("tb/test_dense_engine.py",),
    ),
    # small arrays behind the shared queue (issue 14): the skipped block, the ring per array, the model's wait
    Mutant(
        "array_set_no_skip",
        "hdl/array_set.py",
        "m.d.comb += empty.eq(~(any_row & any_col))",
        "m.d.comb += empty.eq(0)",
        "small arrays",
        tests=("tb/test_engine.py::test_engine_small_arrays_amaranth",),
    ),
    Mutant(
        "buffer_one_ring",
        "hdl/accumulation_buffer.py",
        "entry = rings[a][ring_read]",
        "entry = rings[0][ring_read]",
        "small arrays",
        tests=("tb/test_accumulation_buffer.py", "tb/test_engine.py::test_engine_small_arrays_amaranth"),
    ),
    # the model's queue without the RTL's stage: every block a tick early
    Mutant(
        "model_queue_no_stage",
        "kaleido/model/queue.py",
        "return QUEUE_LATENCY - 1 if buffers == 2 else 0",
        "return 0",
        "small arrays",
        tests=("tb/test_model.py", "tb/test_engine.py"),
    ),
    Mutant(
        "model_queue_trailing",
        "kaleido/model/engine.py",
        "ready = max(last_tile + 1, first + bt.length + (H if H_free is None else H_free))",
        "ready = last_tile + 1",
        "small arrays",
        tests=("tb/test_model.py", "tb/test_engine.py"),
    ),
]
