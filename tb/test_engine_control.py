"""The engine's head sequence (:class:`kaleido.hdl.engine_control.EngineControl`)
against docs/ENGINE.md: LOAD until the last input word, RUN until the last
pass is taken, DRAIN until the array has drained, UNLOAD until the last
score is taken; ``cycles`` counts RUN and DRAIN (the compute cycles of
:func:`kaleido.model.engine_cycles`), ``busy`` everything but LOAD; an
event outside its state changes nothing. With two S sets the unload runs
beside the next head."""

from __future__ import annotations

import numpy as np
import pytest
from amaranth.sim import Simulator

from kaleido.hdl.engine_control import EngineControl

EVENTS = ("loaded", "done", "drained", "unloaded")
#: state -> (load, run, unload, busy), and the event that ends it
STATES = {
    "LOAD": ((1, 0, 0, 0), "loaded"),
    "RUN": ((0, 1, 0, 1), "done"),
    "DRAIN": ((0, 0, 0, 1), "drained"),
    "UNLOAD": ((0, 0, 1, 1), "unloaded"),
}
ORDER = ("LOAD", "RUN", "DRAIN", "UNLOAD")


def test_engine_control(seed):
    rng = np.random.default_rng(seed)
    dut = EngineControl(32)
    assert dut.latency == 1

    async def bench(ctx):
        state, compute, last_cycles = "LOAD", 0, 0
        for cycle in range(3000):
            ports = (ctx.get(dut.load), ctx.get(dut.run), ctx.get(dut.unload), ctx.get(dut.busy))
            assert ports == STATES[state][0], f"seed {seed} cycle {cycle}: {state} shows {ports}"
            assert (ctx.get(dut.write_set), ctx.get(dut.read_set)) == (0, 0), f"seed {seed}: one set"
            if state == "LOAD":
                assert ctx.get(dut.cycles) == last_cycles, f"seed {seed}: cycles {ctx.get(dut.cycles)}"
            # random events, each one more likely in its own state
            fire = {e: bool(rng.random() < (0.08 if e == STATES[state][1] else 0.3)) for e in EVENTS}
            for e in EVENTS:
                ctx.set(getattr(dut, e), fire[e])
            if state in ("RUN", "DRAIN"):
                compute += 1
            await ctx.tick()
            if fire[STATES[state][1]]:
                state = ORDER[(ORDER.index(state) + 1) % 4]
                if state == "LOAD":
                    last_cycles, compute = compute, 0

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()


def test_engine_control_two_sets(seed):
    """``s_sets=2``: LOAD -> RUN -> DRAIN -> LOAD, the unload beside them.
    DRAIN hands the head's set to the unload once ``drained`` and no unload
    is under way (or it ends that cycle): ``unload`` rises, ``read_set``
    becomes the old ``write_set`` and ``write_set`` flips; the unload ends
    on ``unloaded``. ``busy``: not in LOAD, or unloading."""
    rng = np.random.default_rng(seed)
    dut = EngineControl(32, s_sets=2)
    phases = {"LOAD": ("loaded", "RUN"), "RUN": ("done", "DRAIN"), "DRAIN": ("drained", "LOAD")}

    async def bench(ctx):
        state, reading, wset, rset, compute, last_cycles, handoffs = "LOAD", 0, 0, 0, 0, 0, 0
        for cycle in range(4000):
            want = (state == "LOAD", state == "RUN", reading, state != "LOAD" or bool(reading), wset, rset)
            got = tuple(ctx.get(getattr(dut, p)) for p in ("load", "run", "unload", "busy", "write_set", "read_set"))
            assert got == tuple(int(x) for x in want), f"seed {seed} cycle {cycle}: {state} reading {reading}: {got}"
            if state == "LOAD":
                assert ctx.get(dut.cycles) == last_cycles, f"seed {seed}: cycles {ctx.get(dut.cycles)}"
            fire = {e: bool(rng.random() < 0.25) for e in EVENTS}
            for e in EVENTS:
                ctx.set(getattr(dut, e), fire[e])
            if state in ("RUN", "DRAIN"):
                compute += 1
            await ctx.tick()
            event, nxt = phases[state]
            end = reading and fire["unloaded"]
            if end:
                reading = 0
            if state == "DRAIN":
                if fire["drained"] and (not reading or end):
                    reading, rset, wset, state = 1, wset, 1 - wset, "LOAD"
                    last_cycles, compute, handoffs = compute, 0, handoffs + 1
            elif fire[event]:
                state = nxt
        assert handoffs > 50, f"seed {seed}: only {handoffs} handoffs"

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()


@pytest.mark.parametrize("width, error", [(0, ValueError), (True, TypeError), (8.0, TypeError)])
def test_engine_control_rejects_bad_width(width, error):
    with pytest.raises(error, match=rf"cycles_width must be .*, not {width!r}"):
        EngineControl(width)


@pytest.mark.parametrize("sets", [0, 3, True, 2.0])
def test_engine_control_rejects_bad_sets(sets):
    with pytest.raises(ValueError, match=rf"s_sets must be 1 or 2, not {sets!r}"):
        EngineControl(32, sets)
