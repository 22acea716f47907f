"""Run golden beat streams through the Amaranth simulator (the fast inner
loop); the cocotb testbenches do the same on the emitted Verilog."""

from __future__ import annotations

from amaranth.sim import Simulator

from kaleido.hdl.array import KaleidoArray
from kaleido.tb.driver import BeatEncoder, stall_pattern

__all__ = ["simulate_array"]


def simulate_array(config, beats, *, in_stall="none", out_stall="none", seed=0, with_cycles=False):
    """Drive ``beats`` into a :class:`KaleidoArray`, with bubbles on the
    input (``in_stall``) and ``hold`` on the output (``out_stall``); return
    ``(drains, timing)``: per PE the ``(phase, value)`` drains in order, and
    per PE the cycle offsets (not counting held cycles) between each ``last``
    acceptance and its tile. ``with_cycles`` also returns the cycles from
    the first beat to the last tile (held cycles not counted)."""
    last_tile = [None]
    dut = KaleidoArray(config)
    R, C = config.array_rows, config.array_cols
    drains = {(r, c): [] for r in range(R) for c in range(C)}
    lat = {(r, c): [] for r in range(R) for c in range(C)}
    encode = BeatEncoder(R, C)
    words = [encode(b) for b in beats]

    async def bench(ctx):
        bubbles = stall_pattern(in_stall, seed)
        holds = stall_pattern(out_stall, seed + 1)
        last_accepts = []
        i = cycle = 0
        idle = 0
        while i < len(words) or idle < R + C + 2:
            hold = next(holds)
            ctx.set(dut.hold, hold)
            valid = i < len(words) and not next(bubbles)
            ctx.set(dut.slots.valid, valid)
            if valid:
                ctx.set(dut.slots.payload.as_value(), words[i])
            if not hold:
                for r, c in drains:
                    t = dut.tiles[r][c]
                    if ctx.get(t.valid):
                        drains[(r, c)].append((ctx.get(t.phase), ctx.get(t.value)))
                        lat[(r, c)].append(cycle - last_accepts[len(drains[(r, c)]) - 1])
                        last_tile[0] = cycle
                if valid:
                    if beats[i].last:
                        last_accepts.append(cycle)
                    i += 1
                    idle = 0
                elif i >= len(words):
                    idle += 1
                cycle += 1
            await ctx.tick()
        return None

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    if with_cycles:
        return drains, lat, last_tile[0] + 1
    return drains, lat


def simulate_pe(config, beats):
    """Drive golden beats (one PE: arrays of length 1) into a
    :class:`KaleidoPE`, one per cycle; return the drains ``(phase, value)``."""
    from kaleido.hdl.layouts import COL, CTL, ROW
    from kaleido.hdl.pe import KaleidoPE
    from kaleido.tb.driver import Packer, TileDecoder

    dut = KaleidoPE(config)
    pack_row, pack_col, pack_ctl = Packer(ROW), Packer(COL), Packer(CTL)
    decode = TileDecoder(config.acc_width)
    out = []

    async def bench(ctx):
        for b in beats:
            ctx.set(
                dut.row_in.as_value(),
                pack_row({("r0",): b.r0[0], ("r1",): b.r1[0], ("q0",): b.q0[0], ("q1",): b.q1[0]}),
            )
            ctx.set(dut.col_in.as_value(), pack_col({("k",): b.k[0], ("k0",): b.k0[0], ("k1",): b.k1[0]}))
            ctx.set(
                dut.ctl_in.as_value(),
                pack_ctl({("slot",): b.slot, ("kind",): b.kind, ("phase",): b.phase, ("last",): b.last}),
            )
            await ctx.tick()
            valid, phase, value = decode(ctx.get(dut.tile.as_value()))
            if valid:
                out.append((phase, value))

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return out


def simulate_stream(dut, words, *, in_stall="none", out_stall="none", seed=0, max_cycles=200000, ports=("i", "o")):
    """Push ``words`` through ``dut.i`` (valid dropped on stalled cycles) and
    collect ``dut.o`` payloads (ready dropped on stalled cycles); returns
    ``(outputs, cycles)``. Stops once every input went in and the output was
    idle for 300 cycles."""
    out = []
    cycles = [0]
    src, dst = (getattr(dut, p) for p in ports)

    async def bench(ctx):
        bubbles = stall_pattern(in_stall, seed)
        holds = stall_pattern(out_stall, seed + 1)
        i = idle = 0
        while (i < len(words) or idle < 300) and cycles[0] < max_cycles:
            valid = i < len(words) and not next(bubbles)
            ready = not next(holds)
            ctx.set(src.valid, valid)
            if valid:
                ctx.set(src.payload.as_value(), words[i])
            ctx.set(dst.ready, ready)
            await ctx.delay(1e-9)  # let combinational ready/valid settle
            if valid and ctx.get(src.ready):
                i += 1
            if ready and ctx.get(dst.valid):
                out.append(ctx.get(dst.payload.as_value()))
                idle = 0
            elif i >= len(words):
                idle += 1
            cycles[0] += 1
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return out, cycles[0]


def simulate_engine(
    config, grid, Q, K, *, in_stall="none", out_stall="none", seed=0, max_cycles=2_000_000, head_grid=None
):
    """One head through a :class:`KaleidoEngine` built for ``grid`` in the
    Amaranth simulator; returns ``(S, compute_cycles, total_cycles)``.
    ``head_grid`` is the head's own grid (default: the engine's); a head
    the engine cannot take is rejected before anything is built."""
    from kaleido.hdl.engine import KaleidoEngine, check_engine_input
    from kaleido.tb.engine_io import decode_scores, engine_words

    check_engine_input(Q, K, grid if head_grid is None else head_grid, config.split, config, grid)
    dut = KaleidoEngine(config, grid)
    words = engine_words(Q, K, config)
    values, res = [], {}

    async def bench(ctx):
        bubbles = stall_pattern(in_stall, seed)
        holds = stall_pattern(out_stall, seed + 1)
        i = cycle = 0
        done = False
        while not done and cycle < max_cycles:
            valid = i < len(words) and not next(bubbles)
            ready = not next(holds)
            ctx.set(dut.qk.valid, valid)
            if valid:
                ctx.set(dut.qk.payload.as_value(), words[i])
            ctx.set(dut.s.ready, ready)
            await ctx.delay(1e-9)
            if valid and ctx.get(dut.qk.ready):
                i += 1
            if ready and ctx.get(dut.s.valid):
                values.append(ctx.get(dut.s.payload.value.as_unsigned()))
                if ctx.get(dut.s.payload.last):
                    done = True
                    res["cycles"] = ctx.get(dut.cycles)
            # monitor: the accumulate lanes never write one S entry twice in a cycle
            hits = [ctx.get(a) for we, a in dut.acc_ports if ctx.get(we)]
            if len(hits) != len(set(hits)):
                raise AssertionError(
                    f"cycle {cycle}: two accumulate lanes write S entries {sorted(hits)} "
                    "in the same cycle (one update would be lost)"
                )
            cycle += 1
            await ctx.tick()
        res["total"] = cycle

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    if "cycles" not in res:
        raise RuntimeError(f"engine produced {len(values)} scores in {max_cycles} cycles and did not finish")
    return decode_scores(values, dut.n_tokens, dut.s_width), res["cycles"], res["total"]
