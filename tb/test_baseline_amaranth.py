"""The dense baseline array computes plain int8 tiles (Amaranth simulator)."""

import numpy as np
from amaranth.sim import Simulator

from kaleido import KaleidoConfig
from kaleido.hdl.baseline import DenseArray
from kaleido.tb.driver import TileDecoder


def test_dense_array_tiles(seed):
    cfg = KaleidoConfig(array_rows=3, array_cols=2)
    R, C = 3, 2
    rng = np.random.default_rng(seed)
    tiles_in = [(rng.integers(-128, 128, (R, n)), rng.integers(-128, 128, (C, n))) for n in (1, 5, 16, 2)]
    dut = DenseArray(cfg)
    decode = TileDecoder(cfg.acc_width)
    got = {(r, c): [] for r in range(R) for c in range(C)}

    async def bench(ctx):
        beats = [(a[:, i], b[:, i], i == a.shape[1] - 1) for a, b in tiles_in for i in range(a.shape[1])]
        for cycle in range(len(beats) + R + C + 1):
            if cycle < len(beats):
                a, b, last = beats[cycle]
                ctx.set(dut.slots.valid, 1)
                ctx.set(dut.slots.payload.ctl.slot, 1)
                ctx.set(dut.slots.payload.ctl.last, int(last))
                for r in range(R):
                    ctx.set(dut.slots.payload.a[r], int(a[r]))
                for c in range(C):
                    ctx.set(dut.slots.payload.b[c], int(b[c]))
            else:
                ctx.set(dut.slots.valid, 0)
            for (r, c), lst in got.items():
                valid, _, value = decode(ctx.get(dut.tiles[r][c].as_value()))
                if valid:
                    lst.append(value)
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    for (r, c), lst in got.items():
        assert lst == [int(a[r].astype(np.int64) @ b[c]) for a, b in tiles_in], (r, c)
