"""Two PEs side by side on the same beats (tb/test_qk_pe.py,
tb/test_pv_pe.py): a specialised PE against the Kaleido PE it replaces."""

from __future__ import annotations

from collections.abc import Callable

from amaranth import Module
from amaranth.sim import Simulator

__all__ = ["differences"]


def differences(ref, dut, beats: list[dict], drive: Callable, compared: list[tuple]) -> list[tuple]:
    """Drive ``ref`` and ``dut`` with ``drive(ctx, pe, beat)`` for each of
    ``beats``, one a cycle; after each tick compare every ``(what, ref
    signal, dut signal)`` of ``compared``. Returns ``(cycle, what, ref's,
    dut's)`` for every difference."""
    m = Module()
    m.submodules.ref, m.submodules.dut = ref, dut
    diffs: list[tuple] = []

    async def bench(ctx):
        for cycle, beat in enumerate(beats):
            for pe in (ref, dut):
                drive(ctx, pe, beat)
            await ctx.tick()
            for what, a, b in compared:
                va, vb = ctx.get(a), ctx.get(b)
                if va != vb:
                    diffs.append((cycle, what, va, vb))

    sim = Simulator(m)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return diffs
