"""The engine's scheduling stage (:class:`kaleido.hdl.scheduling.SchedulingStage`)
against the loop nest: every batch's sorted memories hold the units of
``iter_passes(..., scheduler=True)`` in pass order with their operands, and
each batch completes :func:`kaleido.model.scheduler_cycles` + 2 cycles after
its first unit; two heads through one stage (the schedulers restart)."""

from __future__ import annotations

import numpy as np
import pytest
from amaranth import Elaboratable, Module
from amaranth.lib.memory import Memory
from amaranth.sim import Simulator

from kaleido import KaleidoConfig
from kaleido.encoding import ABSENT
from kaleido.golden.loopnest import iter_passes
from kaleido.hdl.scheduling import UNITS_PER_WORD, SchedulingStage, unit_groups
from kaleido.model import scheduler_cycles
from kaleido.tb.engine_io import engine_words
from kaleido.tb.passes import make_workload


class _Harness(Elaboratable):
    """The stage reading Q and K memories that hold one head's words."""

    def __init__(self, stage: SchedulingStage, config: KaleidoConfig, n_tokens: int):
        self.stage = stage
        self.config = config
        self.n_tokens = n_tokens
        self.q_memory = Memory(shape=8 * config.batch, depth=n_tokens * len(config.batches), init=[])
        self.k_memory = Memory(shape=8 * config.batch, depth=n_tokens * len(config.batches), init=[])

    def elaborate(self, platform):
        m = Module()
        m.submodules.stage = self.stage
        n_batches = len(self.config.batches)
        for name, memory in (("q", self.q_memory), ("k", self.k_memory)):
            m.submodules[name] = memory
            read = getattr(self.stage, name)
            anchor, follower = memory.read_port(domain="comb"), memory.read_port(domain="comb")
            m.d.comb += [
                anchor.addr.eq(read.anchor * n_batches + read.batch),
                follower.addr.eq(read.follower * n_batches + read.batch),
                read.anchor_values.eq(anchor.data),
                read.follower_values.eq(follower.data),
            ]
        return m


def expected_sorted(w, cfg: KaleidoConfig) -> list:
    """Per batch, the row and column units in pass order from the golden
    loop nest: lists of ``(anchor, follower, anchor values, follower values,
    tags)`` (follower -1 when unpaired)."""
    out = []
    by_batch: dict[int, list] = {}
    for ps in iter_passes(w.q, w.k, w.grid, w.split, cfg, scheduler=True):
        by_batch.setdefault(ps.batch.index, []).append(ps)
    for b in sorted(by_batch):
        passes = by_batch[b]
        groups = unit_groups(len(passes[0].batch.units))
        assert len(passes) == groups * groups
        sides = []
        for units, values, tags, stride in (("rows", "A", "q", groups), ("cols", "B", "k", 1)):
            side = []
            for g in range(groups):
                ps = passes[g * stride]  # row group g: pass (g, 0); column group g: pass (0, g)
                for x in range(UNITS_PER_WORD):
                    a, f = getattr(ps, units)[x]
                    if a >= 0:
                        side.append(
                            (int(a), int(f), getattr(ps, values)[x, 0], getattr(ps, values)[x, 1], getattr(ps, tags)[x])
                        )
            sides.append(side)
        out.append(sides)
    return out


def read_group(ctx, stage, b, g) -> None:
    """Address group ``g`` of bank ``b % 2`` on both sorted memories'
    registered read ports (its units are there the next cycle)."""
    for read in (stage.sorted_rows, stage.sorted_cols):
        ctx.set(read.bank, b % 2)
        ctx.set(read.group, g)
        ctx.set(read.en, 1)


def check_group(ctx, stage, b, g, expected, n, batch, label):
    """The units of group ``g`` of batch ``b`` read last cycle (both sides)
    against ``expected``."""
    for side, read, name in zip(expected, (stage.sorted_rows, stage.sorted_cols), ("rows", "cols"), strict=True):
        for p in range(g * UNITS_PER_WORD, min(len(side), (g + 1) * UNITS_PER_WORD)):
            a, f, x, x1, t = side[p]
            unit = ctx.get(read.units)[p % UNITS_PER_WORD]
            got = (
                unit.anchor,
                unit.follower if unit.paired else -1,
                [unit.anchor_values[c] for c in range(batch)],
                [unit.follower_values[c] for c in range(batch)],
                [int(unit.tags[c]) for c in range(batch)],
            )
            want = (
                a,
                f,
                [*x.tolist(), *[0] * (batch - n)],  # lanes past a short batch: zero operands,
                [*x1.tolist(), *[0] * (batch - n)],  # tag NONE (0)
                [*t.tolist(), *[0] * (batch - n)],
            )
            if f < 0:
                assert got[4][:n] == [ABSENT] * n, f"{label}: unpaired unit tags {got[4]}"
            assert got == want, f"{label}: batch {b} {name} unit {p}: RTL {got}, golden {want}"


CASES = [
    ("e1", KaleidoConfig.one_array(split=(4, 7, 5), batch=4), (2, 4, 4)),
    ("e2", KaleidoConfig.one_array(split=(3, 6, 5), batch=4, P=4), (3, 3, 5)),
    ("windows", KaleidoConfig.one_array(split=(2, 3, 3), batch=4), (4, 8, 8)),
    ("hunyuan", KaleidoConfig.preset("hunyuan", "one_array", batch=16), (2, 4, 4)),
]


@pytest.mark.parametrize("name, cfg, grid", CASES, ids=[c[0] for c in CASES])
def test_scheduling_stage(name, cfg, grid, seed):
    """Two heads; the bank of batch ``b + 2`` is released a random number of
    cycles after batch ``b`` completes, so the stage also waits for it."""
    rng = np.random.default_rng(seed)
    n = grid[0] * grid[1] * grid[2]
    n_batches = len(cfg.batches)
    stage = SchedulingStage(cfg, grid)
    assert stage.latency == 2  # docs/ENGINE.md: detectors' register + seeing both memories complete
    dut = _Harness(stage, cfg, n)
    heads = [make_workload(kind, grid, cfg.split, seed + h) for h, kind in enumerate(("video", "random"))]

    async def bench(ctx):
        for h, w in enumerate(heads):
            label = f"seed {seed} head {h}"
            words = engine_words(w.q, w.k, cfg)
            for memory, part in ((dut.q_memory, words[: n * n_batches]), (dut.k_memory, words[n * n_batches :])):
                for address, word in enumerate(part):
                    ctx.set(memory.data[address], word)
            expected = expected_sorted(w, cfg)
            W = scheduler_cycles(w.q, w.k, w.grid, w.split, cfg)
            ctx.set(stage.issued, 0)
            ctx.set(stage.restart, 1)  # the head's last input word
            await ctx.tick()
            ctx.set(stage.restart, 0)
            ctx.set(stage.run, 1)
            # cycle 0: the first after restart; batch b starts at start[b]
            start, done, release = [0] * n_batches, [0] * n_batches, [1 << 30] * n_batches
            cycle = b = 0
            to_read: list[int] = []  # complete batches whose banks are still to be read back
            reading: tuple[int, int] | None = None  # (batch, groups addressed so far)
            while b < n_batches or to_read or reading or ctx.get(stage.issued) < n_batches:
                if reading and reading[1]:
                    rb = reading[0]
                    check_group(ctx, stage, rb, reading[1] - 1, expected[rb], cfg.batches[rb][1], cfg.batch, label)
                if b < n_batches and ctx.get(stage.scheduled) == b + 1:
                    done[b] = cycle
                    to_read.append(b)
                    b += 1
                if reading is None and to_read:
                    reading = (to_read.pop(0), 0)
                if reading:
                    rb, g = reading
                    if g < max(unit_groups(len(side)) for side in expected[rb]):
                        read_group(ctx, stage, rb, g)
                        reading = (rb, g + 1)
                    else:
                        # the bank read back: released after none, a few cycles, or longer than
                        # a batch's scheduling (then batch rb + 2 waits); batches in order
                        delay = int(rng.choice([0, int(rng.integers(1, 12)), int(rng.integers(50, 600))]))
                        release[rb] = max(release[rb - 1] if rb else 0, cycle + delay)
                        reading = None
                issued = sum(1 for k in range(b) if release[k] <= cycle)
                ctx.set(stage.issued, issued)
                cycle += 1
                await ctx.tick()
                assert cycle < 100_000, f"{label}: the stage hung at batch {b}"
            for k in range(n_batches):
                # docs/ENGINE.md: done_b = s_b + W_b + 2; s_{b+1} = done_b + 1,
                # or the cycle after batch b - 1's bank is released
                if k:
                    start[k] = done[k - 1] + 1
                    if k >= 2:
                        start[k] = max(start[k], release[k - 2] + 1)
                assert done[k] == start[k] + W[k] + 2, (
                    f"{label}: batch {k} complete at cycle {done[k]}, model {start[k] + W[k] + 2}"
                )
            ctx.set(stage.run, 0)
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()


def test_scheduling_stage_rejects_bad_parameters():
    with pytest.raises(ValueError, match=r"4 units per word.* not 8x4"):
        SchedulingStage(KaleidoConfig.one_array(array_rows=8), (2, 4, 4))
    with pytest.raises(TypeError, match=r"config must be a KaleidoConfig, not 'x'"):
        SchedulingStage("x", (2, 4, 4))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"at least 1, not \(0, 4, 4\)"):
        SchedulingStage(KaleidoConfig.one_array(), (0, 4, 4))
