"""The engine's pass former (:class:`kaleido.hdl.pass_former.PassFormer`)
against the loop nest: from sorted memories holding each batch's units in
the order of ``iter_passes(..., scheduler=True)``, it offers exactly that
function's passes (operands, tags, presence, channel count) and their tokens,
batch by batch, reading each batch from its bank; a batch's first pass
waits for ``drained``; with nothing stalled, one pass per cycle."""

from __future__ import annotations

import numpy as np
import pytest
from amaranth.lib import data
from amaranth.sim import Simulator

from kaleido import KaleidoConfig
from kaleido.encoding import ABSENT
from kaleido.golden.loopnest import iter_passes
from kaleido.hdl.pass_former import PassFormer
from kaleido.hdl.scheduling import UNITS_PER_WORD, sorted_unit_layout, unit_groups
from kaleido.tb.passes import make_workload


def sorted_words(passes, cfg, n_tokens, rng):
    """One batch's sorted-memory words ``(rows, cols)`` (lists of ints per
    group) built from its golden passes; padding units and lanes past a
    short batch hold random junk the former must not pass on."""
    lane = sorted_unit_layout(cfg.batch, n_tokens)
    words = data.ArrayLayout(lane, UNITS_PER_WORD)
    groups = unit_groups(len(passes[0].batch.units))
    n = passes[0].batch.count
    out = []
    for units, values, tags, stride in (("rows", "A", "q", groups), ("cols", "B", "k", 1)):
        side = []
        for g in range(groups):
            ps = passes[g * stride]  # row group g: pass (g, 0); column group g: pass (0, g)
            word = []
            for x in range(UNITS_PER_WORD):
                a, f = getattr(ps, units)[x]
                junk = {
                    "anchor_values": rng.integers(-128, 128, cfg.batch).tolist(),
                    "follower_values": rng.integers(-128, 128, cfg.batch).tolist(),
                    "tags": rng.integers(0, 4, cfg.batch).tolist(),
                    "anchor": int(rng.integers(0, n_tokens)),
                    "follower": int(rng.integers(0, n_tokens)),
                    "paired": int(rng.integers(0, 2)),
                }
                if a >= 0:
                    v = getattr(ps, values)[x]
                    junk["anchor_values"][:n] = v[0].tolist()
                    junk["follower_values"][:n] = v[1].tolist()
                    junk["tags"][:n] = getattr(ps, tags)[x].tolist()
                    junk.update(anchor=int(a), follower=int(f) if f >= 0 else junk["follower"], paired=int(f >= 0))
                word.append(junk)
            side.append(words.const(word).as_value().value)
        out.append(side)
    return out


def offered(p, cfg, n):
    """An offered pass (a ``data.Const`` of ``pass_layout``) as golden
    arrays ``(A, q, rows_present, B, k, cols_present)`` over ``n`` channels,
    after checking padding units are absent with zero operands."""
    out = []
    for units in (p.rows, p.cols):
        X = np.zeros((len(units), 2, n), dtype=np.int64)
        T = np.zeros((len(units), n), dtype=np.int64)
        present = np.zeros(len(units), dtype=bool)
        for x, u in enumerate(units):
            present[x] = u.present
            xs = [u.x[c] for c in range(cfg.batch)]
            x1s = [u.x1[c] for c in range(cfg.batch)]
            ts = [int(u.t[c]) for c in range(cfg.batch)]
            if not u.present:
                assert xs == x1s == [0] * cfg.batch and ts == [ABSENT] * cfg.batch, (xs, x1s, ts)
            X[x, 0], X[x, 1], T[x] = xs[:n], x1s[:n], ts[:n]
        out += [X, T, present]
    return out


CASES = [
    ("e1", KaleidoConfig.one_array(split=(4, 7, 5), batch=4), (2, 4, 4)),
    ("e2", KaleidoConfig.one_array(split=(3, 6, 5), batch=4, P=4), (3, 3, 5)),
    ("hunyuan", KaleidoConfig.preset("hunyuan", "one_array", batch=16), (2, 4, 4)),
]


def read_words(ctx, dut, banks, units) -> None:
    """The sorted memories' registered reads of this cycle: the word each
    enabled read addresses, as the banks hold it before this cycle's write,
    into ``units`` (per side) for the next cycle."""
    for side, read in enumerate((dut.sorted_rows, dut.sorted_cols)):
        if ctx.get(read.en):
            bank = banks[ctx.get(read.bank)]
            units[side] = bank[side][ctx.get(read.group)] if bank else 0


@pytest.mark.parametrize("stall", [False, True], ids=["no-stall", "stall"])
@pytest.mark.parametrize("name, cfg, grid", CASES, ids=[c[0] for c in CASES])
def test_pass_former(name, cfg, grid, stall, seed):
    rng = np.random.default_rng(seed)
    n_tokens = grid[0] * grid[1] * grid[2]
    dut = PassFormer(cfg, grid)
    w = make_workload("video", grid, cfg.split, seed)
    golden = list(iter_passes(w.q, w.k, w.grid, w.split, cfg, scheduler=True))
    n_batches = golden[-1].batch.index + 1
    by_batch = [[ps for ps in golden if ps.batch.index == b] for b in range(n_batches)]
    words = [sorted_words(ps, cfg, n_tokens, rng) for ps in by_batch]
    label = f"seed {seed}"

    async def bench(ctx):
        banks = [None, None]
        taken = []  # (batch, pass payload, tokens, drained, cycle)
        ctx.set(dut.restart, 1)
        await ctx.tick()
        ctx.set(dut.restart, 0)
        ctx.set(dut.run, 1)
        written = done_seen = cycle = 0
        seen = [0, 0]  # batches the stage shows scheduled this cycle and the next
        units = [0, 0]  # the registered reads' words, per side
        while not done_seen:
            # the scheduling side: batch b into bank b % 2 once batch b - 2's passes
            # were all taken, shown scheduled two cycles after its write (as the stage)
            write = written < n_batches and (written < 2 or ctx.get(dut.issued) >= written - 1)
            write = write and (not stall or rng.random() < 0.2)
            ctx.set(dut.scheduled, seen[0])
            drained = not stall or bool(rng.random() < 0.5)
            ctx.set(dut.drained, drained)
            ctx.set(dut.passes.ready, not stall or bool(rng.random() < 0.7))
            for side, read in enumerate((dut.sorted_rows, dut.sorted_cols)):
                ctx.set(read.units.as_value(), units[side])
            read_words(ctx, dut, banks, units)
            if write:
                banks[written % 2] = words[written]
                written += 1
            seen = [seen[1], written]
            if ctx.get(dut.taken):
                taken.append((ctx.get(dut.issued), ctx.get(dut.passes.payload), ctx.get(dut.tokens), drained, cycle))
                assert ctx.get(dut.passes.valid) and ctx.get(dut.passes.ready)
            done_seen = ctx.get(dut.done)
            if done_seen:
                assert len(taken) == len(golden), f"{label}: done after {len(taken)} of {len(golden)} passes"
            cycle += 1
            await ctx.tick()
            assert cycle < 100_000, f"{label}: the pass former hung after {len(taken)} passes"
        assert ctx.get(dut.issued) == n_batches

        assert len(taken) == len(golden)
        for k, (ps, (batch, p, tokens, drained, _)) in enumerate(zip(golden, taken, strict=True)):
            b, n = ps.batch.index, ps.batch.count
            assert batch == b, f"{label}: pass {k} of batch {b} taken as batch {batch}"
            assert p.count == n
            got = offered(p, cfg, n)
            want = [ps.A, ps.q, ps.rows_present, ps.B, ps.k, ps.cols_present]
            for name, g, e in zip(("A", "q", "rows_present", "B", "k", "cols_present"), got, want, strict=True):
                assert np.array_equal(g, e), (
                    f"{label}: pass {k} (batch {b}) {name}: RTL {g.tolist()}, golden {e.tolist()}"
                )
            for units, golden_units in ((tokens.rows, ps.rows), (tokens.cols, ps.cols)):
                for t, (a, f) in zip(units, golden_units, strict=True):
                    assert (t.anchor_present, t.follower_present) == (a >= 0, f >= 0), f"{label}: pass {k}"
                    assert t.anchor == a or a < 0, f"{label}: pass {k}: token {t.anchor}, golden {a}"
                    assert t.follower == f or f < 0, f"{label}: pass {k}: token {t.follower}, golden {f}"
            assert tokens.first == (b == 0)
            first_of_batch = k == 0 or golden[k - 1].batch.index != b
            assert drained or not first_of_batch, f"{label}: batch {b}'s first pass taken before the array drained"
        if not stall:  # back to back: one pass per cycle from cycle 2 (batch 0 is shown scheduled then)
            assert [t[4] for t in taken] == list(range(2, 2 + len(golden)))

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()


def test_pass_former_rejects_bad_parameters():
    with pytest.raises(ValueError, match=r"4x4 array, not 4x8"):
        PassFormer(KaleidoConfig.one_array(array_cols=8), (2, 4, 4))
    with pytest.raises(TypeError, match=r"grid must be three integers"):
        PassFormer(KaleidoConfig.one_array(), (2, 4))
