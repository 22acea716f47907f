"""The P V array's PE (:class:`kaleido.hdl.pv_pe.PvPE`) against the Kaleido
PE it specialises: both on the same random ``P V`` beats (what the P V
dispatcher sends: ``ctl.pv`` = 1, phase T3, FULL8 or, paired, DUAL_LO; any
selects, operands, slots, bubbles and drains), every cycle the same tile
and the same forwarded fields the P V beats use. The whole P V path, the
PvPE inside it, is checked against the golden model by tb/test_pv.py and
the core's tests."""

from __future__ import annotations

import numpy as np
import pytest
from amaranth import Module
from amaranth.sim import Simulator

from kaleido import KaleidoConfig
from kaleido.encoding import Phase, PvSelect, SlotKind
from kaleido.hdl.pe import KaleidoPE
from kaleido.hdl.pv_pe import PvPE
from kaleido.tb.pe_pair import differences

CYCLES = 3000


def _beat(rng, pairs: bool) -> dict:
    """One random P V beat: a slot or a bubble, sometimes the last of its unit."""
    paired = pairs and rng.random() < 0.5
    return {
        "slot": int(rng.random() < 0.8),
        "last": int(rng.random() < 0.2),
        "kind": SlotKind.DUAL_LO if paired else SlotKind.FULL8,
        "r0": int(rng.integers(-128, 128)),
        "r1": int(rng.integers(-128, 128)),
        "s": int(rng.integers(-256, 256)),
        "k": int(rng.integers(0, 256)),
        "kb": int(rng.integers(0, 256)) if pairs else 0,
        "k0": int(rng.integers(0, 4)),
        "k1": int(rng.integers(0, 4)) if pairs else 0,
    }


def _drive(ctx, pe, b: dict) -> None:
    ctx.set(pe.ctl_in.slot, b["slot"])
    ctx.set(pe.ctl_in.last, b["last"])
    ctx.set(pe.ctl_in.kind, b["kind"])
    ctx.set(pe.ctl_in.phase, Phase.T3)
    ctx.set(pe.ctl_in.pv, 1)
    for f in ("r0", "r1", "s"):
        ctx.set(getattr(pe.row_in, f), b[f])
    for f in ("k", "kb", "k0", "k1"):
        ctx.set(getattr(pe.col_in, f), b[f])


def _run(cfg: KaleidoConfig, seed: int) -> list[tuple]:
    """Drive both PEs; return the cycles where they differ (cycle, what, generic, pv)."""
    ref, pv = KaleidoPE(cfg), PvPE(cfg)
    rng = np.random.default_rng(seed)
    fields = [("row_out", f) for f in ("r0", "r1", "s")] + [("col_out", f) for f in ("k", "k0")]
    if cfg.pv_pairs:
        fields += [("col_out", "k1"), ("col_out", "kb")]
    compared = [("tile", ref.tile, pv.tile), ("ctl", ref.ctl_out, pv.ctl_out)]
    compared += [(f"{port}.{f}", getattr(getattr(ref, port), f), getattr(getattr(pv, port), f)) for port, f in fields]
    return differences(ref, pv, [_beat(rng, cfg.pv_pairs) for _ in range(CYCLES)], _drive, compared)


@pytest.mark.parametrize("design", ["one_array", "default"])
def test_pv_pe_equals_the_kaleido_pe_on_pv_beats(design, seed):
    """``one_array`` (unpaired) and ``default`` (small-P pairing)."""
    cfg = KaleidoConfig.preset("hunyuan", design)
    diffs = _run(cfg, seed)
    assert not diffs, f"seed {seed}: {len(diffs)} differences, first {diffs[:3]}"


def test_pv_pe_drains_what_it_accumulated():
    """By hand: two FULL8 slots then a drain: (r0 x V) + (SUM x V), R0
    cleared after it, the tile two cycles after the ``last`` beat."""
    cfg = KaleidoConfig.one_array()
    m = Module()
    m.submodules.pv = pv = PvPE(cfg)
    seen: list[tuple[int, int]] = []

    async def bench(ctx):
        beats = [
            (1, 0, PvSelect.R0, 3, -7, 4, -100),  # r0 x k = 3 x -100
            (1, 1, PvSelect.SUM, 3, -7, -4, 55),  # s x k = -4 x 55, last
            (1, 1, PvSelect.R1, 3, -7, 0, 2),  # r1 x k = -7 x 2, last: R0 was cleared
            (0, 0, PvSelect.SKIP, 0, 0, 0, 0),
            (0, 0, PvSelect.SKIP, 0, 0, 0, 0),
            (0, 0, PvSelect.SKIP, 0, 0, 0, 0),
        ]
        for cycle, (slot, last, sel, r0, r1, s, k) in enumerate(beats):
            ctx.set(pv.ctl_in.slot, slot)
            ctx.set(pv.ctl_in.last, last)
            ctx.set(pv.ctl_in.phase, Phase.T3)
            ctx.set(pv.ctl_in.pv, 1)
            ctx.set(pv.col_in.k0, sel)
            ctx.set(pv.col_in.k, k & 0xFF)
            ctx.set(pv.row_in.r0, r0)
            ctx.set(pv.row_in.r1, r1)
            ctx.set(pv.row_in.s, s)
            await ctx.tick()
            if ctx.get(pv.tile.valid):
                seen.append((cycle, ctx.get(pv.tile.value)))

    sim = Simulator(m)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    # the beat of cycle c is in the product register after tick c, the tile after tick c + 1
    assert seen == [(2, 3 * -100 + -4 * 55), (3, -7 * 2)]
