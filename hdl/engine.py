"""Integrated attention-pass engine (issue 7): Q and K of one head in,
the reuse attention scores ``S`` out.

Data path (docs/ENGINE.md)::

    qk stream -> Q / K memories
      scheduling stage, batch bs:
                  unit walk -> 2 x ReuseDetector -> 2 x Scheduler
                  -> sorted unit memories, bank bs % 2 (pass order, 4 units per word)
      pass stage, batch bp (the previous batch, or bs once scheduled):
                  sorted memories, bank bp % 2 -> pass former
                  -> PassDispatcher (matcher) -> KaleidoArray
                  -> 16 accumulate lanes -> S memory
    S memory -> s stream (row-major)

The grid and the channel split are elaboration parameters (like the array
size): unit tables are ROMs built from the loop nest
(:func:`kaleido.loopnest.batches`).
:func:`check_engine` and :func:`check_engine_input` reject a grid, split or
tensor the engine does not support before anything is simulated.
"""

from __future__ import annotations

import numpy as np
from amaranth import Array, Cat, Const, Module, Mux, Signal, signed
from amaranth.hdl import ResetInserter
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ..checks import check_grid, check_qk
from ..config import KaleidoConfig
from ..loopnest import batches
from ._common import as_config
from .array import KaleidoArray
from .detector import ReuseDetector
from .dispatcher import PassDispatcher
from .scheduler import Scheduler

__all__ = ["KaleidoEngine", "check_engine", "check_engine_input", "MAX_TOKENS", "s_layout", "qk_layout"]

#: largest head the engine elaborates (its S memory holds N^2 entries)
MAX_TOKENS = 1024


def check_engine(config: KaleidoConfig, grid) -> tuple[int, int, int]:
    """Validate an engine geometry; returns the grid as a tuple. A clear
    ValueError names the unsupported value."""
    config = as_config(config)
    grid = check_grid(grid)
    n = grid[0] * grid[1] * grid[2]
    if n > MAX_TOKENS:
        raise ValueError(
            f"grid {grid!r} holds {n} tokens; the engine elaborates at most {MAX_TOKENS} "
            "(its accumulation buffer holds N^2 scores)"
        )
    if n < 2:
        raise ValueError(f"grid {grid!r} holds {n} token; the engine needs at least 2")
    if (config.array_rows, config.array_cols) != (4, 4):
        raise ValueError(
            f"the engine drives a 4x4 array (its sorted memories hold 4 units per word), "
            f"not {config.array_rows}x{config.array_cols}"
        )
    return grid


def check_engine_input(Q, K, grid, split, config: KaleidoConfig, engine_grid) -> None:
    """Reject a head the engine built for ``(config, engine_grid)`` cannot
    take: a different grid or split, or tensors that are not int8 ``(N, d)``."""
    engine_grid = check_engine(config, engine_grid)
    grid, split = check_qk(np.asarray(Q), np.asarray(K), grid, split)
    if grid != engine_grid:
        raise ValueError(
            f"grid {grid!r} is not the engine's grid {engine_grid!r} "
            "(the grid is an elaboration parameter: build an engine for it)"
        )
    if tuple(split) != tuple(config.split):
        raise ValueError(f"split {tuple(split)!r} is not the engine's split {tuple(config.split)!r}")


def qk_layout(batch: int) -> data.ArrayLayout:
    """One input word: a token's values over one batch (lanes past a short
    batch are ignored)."""
    return data.ArrayLayout(signed(8), batch)


def s_layout(width: int) -> data.StructLayout:
    return data.StructLayout({"value": signed(width), "last": 1})


def _lane_layout(batch: int, tw: int) -> data.StructLayout:
    """One unit in pass order: anchor values, follower effective values,
    follower tags, anchor/follower token indices and whether it is paired."""
    return data.StructLayout(
        {
            "x": data.ArrayLayout(signed(8), batch),
            "x1": data.ArrayLayout(signed(8), batch),
            "t": data.ArrayLayout(2, batch),
            "a": tw,
            "f": tw,
            "hasf": 1,
        }
    )


def _tok_layout(tw: int) -> data.StructLayout:
    return data.StructLayout({"a": tw, "f": tw, "ap": 1, "fp": 1})


# engine states
LOAD, RUN, DRAIN, OUT = range(4)


class KaleidoEngine(wiring.Component):
    """One head ``S = Q_eff K_eff^T`` for a fixed ``grid`` and ``config``.

    Ports
    -----
    ``qk`` (in stream of :func:`qk_layout`): Q then K, each token by token
    (flat order ``(t*H + y)*W + x``) and within a token batch by batch
    (``config.batches`` order): ``2 * N * n_batches`` words.
    ``s`` (out stream of :func:`s_layout`): ``S`` row-major, ``N^2`` words,
    ``last`` on the final one. ``cycles``: compute cycles of the last head
    (from the first cycle after the final input word to the cycle before
    the first output word). ``busy``: a head is in flight.

    Timing (exact, always-valid ``qk``, always-ready ``s``): docs/ENGINE.md
    and :func:`kaleido.model.engine_cycles`.
    """

    def __init__(self, config: KaleidoConfig | None = None, grid=(2, 4, 4)):
        config = as_config(config)
        self._grid = check_engine(config, grid)
        self._config = config
        self.n_tokens = self._grid[0] * self._grid[1] * self._grid[2]
        self.s_width = config.buffer_width()
        self.batch_table = batches(config, self._grid)
        super().__init__(
            {
                "qk": In(stream.Signature(qk_layout(config.batch))),
                "s": Out(stream.Signature(s_layout(self.s_width))),
                "cycles": Out(32),
                "busy": Out(1),
            }
        )

    @property
    def grid(self):
        return self._grid

    def elaborate(self, platform):
        m = Module()
        cfg = self._config
        B, R, C = cfg.batch, cfg.array_rows, cfg.array_cols
        N = self.n_tokens
        #: (write enable, S address) of every accumulate lane, for testbench monitors
        self.acc_ports = []
        NB = len(self.batch_table)
        TW = max(1, (N - 1).bit_length())
        lane_l = _lane_layout(B, TW)
        tok_l = _tok_layout(TW)
        LW = lane_l.size

        # ---- elaboration-time tables -------------------------------------
        group_off, rom_init = {}, []
        for t in self.batch_table:
            if t.group not in group_off:
                group_off[t.group] = len(rom_init)
                rom_init += [a | (max(f, 0) << TW) | (int(f >= 0) << (2 * TW)) for a, f in t.units.tolist()]
        u_max = max(len(t.units) for t in self.batch_table)
        g_max = -(-u_max // 4)
        b_off = Array(Const(group_off[t.group], range(len(rom_init) + 1)) for t in self.batch_table)
        b_units = Array(Const(len(t.units), range(u_max + 1)) for t in self.batch_table)
        b_groups = Array(Const(-(-len(t.units) // 4), range(g_max + 1)) for t in self.batch_table)
        b_count = Array(Const(t.count, range(B + 1)) for t in self.batch_table)
        total_passes = sum((-(-len(t.units) // 4)) ** 2 for t in self.batch_table)
        WINDOW = cfg.window("row")

        # ---- memories ------------------------------------------------------
        m.submodules.unit_rom = unit_rom = Memory(shape=2 * TW + 1, depth=len(rom_init), init=rom_init)
        m.submodules.qmem = qmem = Memory(shape=8 * B, depth=N * NB, init=[])
        m.submodules.kmem = kmem = Memory(shape=8 * B, depth=N * NB, init=[])
        unit_w = 18 * B  # x, x1, t of one unit in anchor order
        m.submodules.urow = urow = Memory(shape=unit_w, depth=u_max, init=[])
        m.submodules.ucol = ucol = Memory(shape=unit_w, depth=u_max, init=[])
        # sorted memories, two banks (batch parity): batch b+1 is scheduled
        # while batch b's passes run
        m.submodules.srow = srow = Memory(shape=4 * LW, depth=2 * g_max, init=[])
        m.submodules.scol = scol = Memory(shape=4 * LW, depth=2 * g_max, init=[])
        m.submodules.smem = smem = Memory(shape=signed(self.s_width), depth=N * N, init=[])

        m.submodules.det_q = det_q = ReuseDetector(cfg)
        m.submodules.det_k = det_k = ReuseDetector(cfg)
        # every head starts both LFSRs at the seed, as the golden loop nest
        # does: the schedulers are reset on the head's last input word
        head_start = Signal()
        sch_row, sch_col = Scheduler(cfg), Scheduler(cfg)
        m.submodules.sch_row = ResetInserter(head_start)(sch_row)
        m.submodules.sch_col = ResetInserter(head_start)(sch_col)
        m.submodules.dispatcher = disp = PassDispatcher(cfg)
        m.submodules.array = array = KaleidoArray(cfg)
        m.d.comb += array.hold.eq(0)
        wiring.connect(m, disp.beats, array.slots)

        state = Signal(range(4), init=LOAD)
        bs = Signal(range(NB))  # the batch being scheduled
        bp = Signal(range(NB))  # the batch whose passes run
        s_run = Signal()  # the scheduling side is busy with batch bs
        scheduled = Signal(range(NB + 1))  # batches whose sorted memories are complete
        issued = Signal(range(NB + 1))  # batches whose passes were all taken
        cycles = Signal(32)
        m.d.comb += [self.cycles.eq(cycles), self.busy.eq(state != LOAD)]
        with m.If((state == RUN) | (state == DRAIN)):
            m.d.sync += cycles.eq(cycles + 1)
        U = b_units[bs]
        Up = b_units[bp]

        # ---- LOAD: Q then K into their memories ----------------------------
        in_cnt = Signal(range(2 * N * NB + 1))
        qw, kw = qmem.write_port(), kmem.write_port()
        take_in = self.qk.valid & self.qk.ready
        m.d.comb += [
            self.qk.ready.eq(state == LOAD),
            qw.addr.eq(in_cnt),
            kw.addr.eq(in_cnt - N * NB),
            qw.data.eq(self.qk.payload.as_value()),
            kw.data.eq(self.qk.payload.as_value()),
            qw.en.eq(take_in & (in_cnt < N * NB)),
            kw.en.eq(take_in & (in_cnt >= N * NB)),
            head_start.eq(take_in & (in_cnt == 2 * N * NB - 1)),
        ]

        # ---- SCHED: unit walk -> detectors -> schedulers -> sorted memories -
        u = Signal(range(u_max + 1))
        u_out = Signal(range(u_max + 1))
        rom_w = unit_rom.read_port(domain="comb")
        m.d.comb += rom_w.addr.eq(b_off[bs] + u)
        wa, wf, whasf = rom_w.data[:TW], rom_w.data[TW : 2 * TW], rom_w.data[2 * TW]
        reads = {}
        for name, mem in (("q", qmem), ("k", kmem)):
            ra, rf = mem.read_port(domain="comb"), mem.read_port(domain="comb")
            m.d.comb += [ra.addr.eq(wa * NB + bs), rf.addr.eq(wf * NB + bs)]
            reads[name] = (ra.data, rf.data)
        walk = (state == RUN) & s_run & (u < U)
        for det, name in ((det_q, "q"), (det_k, "k")):
            m.d.comb += [
                det.i.valid.eq(walk),
                det.i.payload.anchor.eq(reads[name][0]),
                det.i.payload.follower.eq(reads[name][1]),
                det.i.payload.count.eq(b_count[bs]),
                det.i.payload.absent.eq(~whasf),
            ]
        with m.If(walk & det_q.i.ready):
            m.d.sync += u.eq(u + 1)
        both = sch_row.i.ready & sch_col.i.ready
        m.d.comb += [
            sch_row.i.valid.eq(det_q.o.valid & sch_col.i.ready),
            sch_col.i.valid.eq(det_k.o.valid & sch_row.i.ready),
            sch_row.i.payload.string.eq(det_q.o.payload.string),
            sch_col.i.payload.string.eq(det_k.o.payload.string),
            sch_row.i.payload.last.eq(u_out + 1 == U),
            sch_col.i.payload.last.eq(u_out + 1 == U),
            det_q.o.ready.eq(both),
            det_k.o.ready.eq(both),
        ]
        take_s = det_q.o.valid & both
        for det, mem, eff in ((det_q, urow, "row_eff"), (det_k, ucol, "col_eff")):
            wp = mem.write_port()
            o = det.o.payload
            m.d.comb += [
                wp.addr.eq(u_out),
                wp.en.eq(take_s),
                wp.data.eq(Cat(o.anchor.as_value(), getattr(o, eff).as_value(), o.cls.as_value())),
            ]
        with m.If(take_s):
            m.d.sync += u_out.eq(u_out + 1)

        sorted_ptrs = []
        for sch, umem, smem_side, side in ((sch_row, urow, srow, "row"), (sch_col, ucol, scol, "col")):
            p = Signal(range(u_max + 1), name=f"{side}_p")
            w0 = Signal(range(u_max + WINDOW), name=f"{side}_w0")
            unit = Signal(range(u_max + WINDOW), name=f"{side}_unit")
            m.d.comb += [sch.o.ready.eq(1), unit.eq(w0 + sch.o.payload.index)]
            ur = umem.read_port(domain="comb")
            rom_s = unit_rom.read_port(domain="comb")
            m.d.comb += [ur.addr.eq(unit), rom_s.addr.eq(b_off[bs] + unit)]
            lane = Signal(lane_l, name=f"{side}_lane")
            m.d.comb += lane.as_value().eq(Cat(ur.data, rom_s.data))
            wp = smem_side.write_port(granularity=LW)
            m.d.comb += [wp.addr.eq(Mux(bs[0], g_max, 0) + (p >> 2)), wp.data.eq(Cat(*[lane.as_value()] * 4))]
            with m.If(sch.o.valid):
                m.d.comb += wp.en.eq(1 << p[:2])
                m.d.sync += p.eq(p + 1)
                with m.If(sch.o.payload.last):
                    m.d.sync += w0.eq(w0 + WINDOW)
            sorted_ptrs.append((p, w0))

        # ---- PASSES: pass former -> dispatcher; pass tokens into a ring ------
        rg = Signal(range(g_max + 1))
        cg = Signal(range(g_max + 1))
        done_passes = Signal(range(total_passes + 1))  # T3 tiles seen at the last PE
        G = b_groups[bp]
        rr, rc = srow.read_port(domain="comb"), scol.read_port(domain="comb")
        bank = Mux(bp[0], g_max, 0)
        m.d.comb += [rr.addr.eq(bank + rg), rc.addr.eq(bank + cg)]
        pw = disp.passes.payload
        # passes in flight: a pass lasts at least 5 cycles (four phases of at
        # least one beat, one idle beat) and its last tile leaves R + C - 1 = 7
        # cycles after its last beat, so a ring entry is rewritten 4 passes
        # (>= 15 cycles after that beat) later, long after its last tile
        RING = 4
        ring = Array(
            Signal(
                data.StructLayout({"rows": data.ArrayLayout(tok_l, R), "cols": data.ArrayLayout(tok_l, C), "first": 1}),
                name=f"ring{i}",
            )
            for i in range(RING)
        )
        wr = Signal(range(RING))
        info = Signal.like(ring[0])
        for side, word, base, ports, n_units in (("rows", rr.data, rg, pw.rows, R), ("cols", rc.data, cg, pw.cols, C)):
            for x in range(n_units):
                ln = data.View(lane_l, word[x * LW : (x + 1) * LW])
                present = (base * 4 + x) < Up
                port = ports[x]
                m.d.comb += [
                    port.present.eq(present),
                    port.x.eq(Mux(present, ln.x.as_value(), 0)),
                    port.x1.eq(Mux(present, ln.x1.as_value(), 0)),
                    # a padding unit: every tag ABSENT (3), as golden pass_operands
                    port.t.eq(Mux(present, ln.t.as_value(), (1 << 2 * B) - 1)),
                ]
                tok = getattr(info, side)[x]
                m.d.comb += [tok.a.eq(ln.a), tok.f.eq(ln.f), tok.ap.eq(present), tok.fp.eq(present & ln.hasf)]
        # A batch's first pass waits until the array has drained the previous
        # batch: within a batch two passes never put tiles on the same S entry
        # (consecutive passes share a row group and differ in columns, or
        # differ in rows), but the next batch's first pass may cover the
        # previous batch's last tokens, and their tiles could land on the
        # same entry in the same cycle (two writes, one lost).
        issued_passes = Signal(range(total_passes + 1))
        first_of_batch = (rg == 0) & (cg == 0)
        m.d.comb += [
            pw.count.eq(b_count[bp]),
            info.first.eq(bp == 0),
            disp.passes.valid.eq(
                (state == RUN) & (scheduled > bp) & (issued == bp) & (~first_of_batch | (done_passes == issued_passes))
            ),
        ]
        take_pass = disp.passes.valid & disp.passes.ready
        last_pass = (rg + 1 == G) & (cg + 1 == G)
        with m.If(take_pass):
            m.d.sync += [ring[wr].eq(info), wr.eq(wr + 1), issued_passes.eq(issued_passes + 1)]
            with m.If(cg + 1 == G):
                m.d.sync += [cg.eq(0), rg.eq(rg + 1)]
            with m.Else():
                m.d.sync += cg.eq(cg + 1)

        # ---- accumulate lanes: one per PE, S[i, j] (+)= tile ---------------
        for r in range(R):
            for c in range(C):
                t = array.tiles[r][c]
                ptr = Signal(range(RING), name=f"ptr{r}_{c}")
                ent = ring[ptr]
                rt, ct = ent.rows[r], ent.cols[c]
                ph = t.phase
                i = Mux(ph[1], rt.f, rt.a)
                j = Mux(ph[0], ct.f, ct.a)
                ok = Mux(ph[1], rt.fp, rt.ap) & Mux(ph[0], ct.fp, ct.ap)
                addr = Signal(range(N * N), name=f"acc_addr{r}_{c}")
                we = Signal(name=f"acc_we{r}_{c}")
                self.acc_ports.append((we, addr))
                m.d.comb += [addr.eq(i * N + j), we.eq(t.valid & ok)]
                rp, wp = smem.read_port(domain="comb"), smem.write_port()
                m.d.comb += [
                    rp.addr.eq(addr),
                    wp.addr.eq(addr),
                    wp.en.eq(we),
                    wp.data.eq(Mux(ent.first, t.value, rp.data + t.value)),
                ]
                with m.If(t.valid & (ph == 3)):
                    m.d.sync += ptr.eq(ptr + 1)
                    if (r, c) == (R - 1, C - 1):
                        m.d.sync += done_passes.eq(done_passes + 1)

        # ---- OUT: S row-major ------------------------------------------------
        o_addr = Signal(range(N * N))
        ro = smem.read_port(domain="comb")
        m.d.comb += [
            ro.addr.eq(o_addr),
            self.s.valid.eq(state == OUT),
            self.s.payload.value.eq(ro.data),
            self.s.payload.last.eq(o_addr == N * N - 1),
        ]

        # ---- control ---------------------------------------------------------
        sched_reset = [u.eq(0), u_out.eq(0)] + [s_.eq(0) for pair in sorted_ptrs for s_ in pair]
        (pr, _), (pc, _) = sorted_ptrs

        with m.Switch(state):
            with m.Case(LOAD):
                with m.If(take_in):
                    m.d.sync += in_cnt.eq(in_cnt + 1)
                    with m.If(in_cnt == 2 * N * NB - 1):
                        m.d.sync += [
                            state.eq(RUN),
                            bs.eq(0),
                            bp.eq(0),
                            s_run.eq(1),
                            scheduled.eq(0),
                            issued.eq(0),
                            rg.eq(0),
                            cg.eq(0),
                            in_cnt.eq(0),
                            cycles.eq(0),
                            done_passes.eq(0),
                            issued_passes.eq(0),
                        ] + sched_reset
            with m.Case(RUN):
                # scheduling side: batch bs done -> the next one, once its bank
                # is free (batch bs - 1's passes all taken)
                with m.If(s_run & (pr == U) & (pc == U)):
                    m.d.sync += [s_run.eq(0), scheduled.eq(scheduled + 1)] + sched_reset
                    with m.If(bs != NB - 1):
                        m.d.sync += bs.eq(bs + 1)
                with m.If(~s_run & (scheduled == bs) & (scheduled != NB) & (issued + 1 >= bs)):
                    m.d.sync += s_run.eq(1)
                # pass side: the last pass of batch bp taken -> the next batch
                with m.If(take_pass & last_pass):
                    m.d.sync += [issued.eq(issued + 1), rg.eq(0), cg.eq(0)]
                    with m.If(bp == NB - 1):
                        m.d.sync += state.eq(DRAIN)
                    with m.Else():
                        m.d.sync += bp.eq(bp + 1)
            with m.Case(DRAIN):
                with m.If(done_passes == total_passes):
                    m.d.sync += [state.eq(OUT), o_addr.eq(0)]
            with m.Case(OUT):
                with m.If(self.s.valid & self.s.ready):
                    m.d.sync += o_addr.eq(o_addr + 1)
                    with m.If(self.s.payload.last):
                        m.d.sync += state.eq(LOAD)
        return m
