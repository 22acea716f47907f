"""The engine's accumulation buffer
(:class:`kaleido.hdl.accumulation_buffer.AccumulationBuffer`) alone, in the
Amaranth simulator, against a reference of its banks (:class:`BankModel`):
per cycle ``hold``, every lane's ``writes``, ``drained`` and ``settled``;
at the end ``S`` (unloaded row-major under random output stalls) equals the
tiles applied in the order the reference takes them, and equals
``grouped_scores`` (the configuration's thresholds) for golden heads.

The driver behaves as the engine's array: it presents each array tick's
tiles until the buffer takes them (a held cycle repeats the tick) and takes
passes only on cycles without ``hold``. Cases: golden passes of two heads
(the first batch overwrites ``S``) at the default 4 banks, at 16 and at one bank
(the FIFO fills, the array is held); random passes on a 2x2 array over few
tokens with 2 banks and 4-entry FIFOs: bursts of a cycle's tiles into one
bank, full FIFOs, and one entry read again while its previous sum is being
written (the forwarding path)."""

from __future__ import annotations

import collections

import numpy as np
import pytest
from amaranth.sim import Simulator, SimulatorContext

from kaleido import KaleidoConfig
from kaleido.config import s_bank
from kaleido.golden.grouped import grouped_scores
from kaleido.golden.loopnest import iter_passes
from kaleido.hdl.accumulation_buffer import AccumulationBuffer, ring_depth
from kaleido.tb.engine_io import decode_scores
from kaleido.tb.passes import make_workload

GOLDEN = [
    ("golden-default-banks", KaleidoConfig.one_array(split=(2, 3, 3), batch=2), (2, 2, 4)),
    ("golden-16-banks", KaleidoConfig.one_array(split=(2, 3, 3), batch=2, s_banks=16), (2, 2, 4)),
    ("golden-1-bank", KaleidoConfig.one_array(split=(1, 3, 2), batch=4, P=4, s_banks=1), (3, 1, 3)),
]
#: a 2x2 array, 2 banks of 4-entry FIFOs over 3 or 4 tokens: bursts and hazards
RANDOM = [
    (
        "random-2-banks",
        KaleidoConfig.one_array(split=(2, 2, 2), batch=2, array_rows=2, array_cols=2, s_banks=2, s_fifo_depth=4),
    ),
    (
        "random-4-banks",
        KaleidoConfig.one_array(split=(2, 2, 2), batch=2, array_rows=2, array_cols=2, s_banks=4, s_fifo_depth=8),
    ),
]


class BankModel:
    """The buffer's banks, cycle by cycle: a cycle's tiles are taken unless
    some bank's FIFO (``len + arrivals > depth``) cannot hold them (``hold``);
    each bank pops one entry a cycle from what it held at the cycle's
    start; ``S`` is updated in pop order (overwrite on ``first``)."""

    def __init__(self, cfg: KaleidoConfig, n: int):
        self.cfg, self.n = cfg, n
        self.fifo: list[collections.deque] = [collections.deque() for _ in range(cfg.s_banks)]
        self.S = np.zeros((n, n), dtype=np.int64)
        self.busy = False  # an entry popped last cycle (its write is this cycle)
        self.in_flight = 0
        self.pops = 0
        self.max_fill = 0
        self.last_pop: list[tuple | None] = [None] * cfg.s_banks  # each bank's entry popped last cycle
        self.forwards = 0  # an entry popped the cycle after itself: its read misses the write

    def hold(self, hits) -> bool:
        """``hits``: this cycle's ``(i, j, value, first)`` in lane order."""
        arrivals = collections.Counter(s_bank(i, j, self.cfg.s_banks) for i, j, _, _ in hits)
        return any(len(self.fifo[b]) + a > self.cfg.s_fifo_depth for b, a in arrivals.items())

    def settled(self) -> bool:
        return self.in_flight == 0 and not self.busy and not any(self.fifo)

    def step(self, hits, take: bool, taken: bool, last_t3: bool) -> None:
        popped = False
        for b, q in enumerate(self.fifo):
            before, self.last_pop[b] = self.last_pop[b], None
            if q:
                i, j, v, first = q.popleft()
                self.forwards += before == (i, j)
                self.last_pop[b] = (i, j)
                total = v if first else int(self.S[i, j]) + v
                half = 1 << (self.cfg.buffer_width() - 1)  # an S entry wraps as the RTL's does
                self.S[i, j] = (total + half) % (2 * half) - half
                popped = True
                self.pops += 1
        self.busy = popped
        if take:
            for i, j, v, first in hits:
                self.fifo[s_bank(i, j, self.cfg.s_banks)].append((i, j, v, first))
            self.max_fill = max([self.max_fill, *(len(q) for q in self.fifo)])
        self.in_flight += int(taken) - int(take and last_t3)


def tokens_value(rows, cols, first):
    """A pass's tokens as the ``pass_tokens`` port takes them (-1: absent)."""
    pair = lambda a, f: {
        "anchor": max(int(a), 0),
        "follower": max(int(f), 0),
        "anchor_present": int(a >= 0),
        "follower_present": int(f >= 0),
    }
    return {"rows": [pair(a, f) for a, f in rows], "cols": [pair(a, f) for a, f in cols], "first": int(first)}


def golden_passes(cfg, grid, heads):
    """Per head: its passes as ``(rows, cols, first, tiles (R, C, 4))`` and
    the expected ``S``."""
    out = []
    for w in heads:
        passes = [
            (ps.rows, ps.cols, ps.batch.index == 0, ps.tiles(cfg.accumulators, cfg.acc_width))
            for ps in iter_passes(w.q, w.k, w.grid, w.split, cfg, scheduler=True)
        ]
        out.append((passes, grouped_scores(w.q, w.k, w.grid, w.split, cfg.thresholds)))
    return out


def random_passes(cfg, n, rng, count):
    """``count`` random passes over ``n`` tokens: tokens drawn from a few
    values (so entries repeat in consecutive pops), some absent; the first
    ``count // 3`` passes are a first batch (they overwrite). Expected ``S``:
    ``None`` (the reference's order decides where a first batch's tiles of
    one entry meet)."""
    R, C = cfg.array_rows, cfg.array_cols
    lim = 1 << (cfg.acc_width - 1)
    passes = []
    for k in range(count):
        rows = [tuple(int(x) for x in rng.integers(-1, n, 2)) for _ in range(R)]
        cols = [tuple(int(x) for x in rng.integers(-1, n, 2)) for _ in range(C)]
        if rng.random() < 0.4:  # a burst: every token a multiple of the bank count, so every tile in bank 0
            B = cfg.s_banks
            rows = [tuple(B * (t // B) if t >= 0 else t for t in pair) for pair in rows]
            cols = [tuple(B * (t // B) if t >= 0 else t for t in pair) for pair in cols]
        tiles = rng.integers(-lim, lim, (R, C, 4))
        passes.append((rows, cols, k < count // 3, tiles))
    return [(passes, None)]


def _present(ctx: SimulatorContext, dut: AccumulationBuffer, now: dict, R: int, C: int) -> list[tuple]:
    """Drive this tick's tiles ``now`` on the buffer's ports; returns their ``(i, j, value, first)`` in lane order."""
    hits = []
    for r in range(R):
        for c in range(C):
            phase, value, entry, first = now.get((r, c), (0, 0, None, False))
            tile = dut.tiles[r][c]
            ctx.set(tile.valid, (r, c) in now)
            ctx.set(tile.phase, phase)
            ctx.set(tile.value, value)
            if entry is not None:
                hits.append((*entry, value, first))
    return hits


def _check_writes(
    ctx: SimulatorContext,
    dut: AccumulationBuffer,
    cfg: KaleidoConfig,
    n: int,
    now: dict,
    take: bool,
    label: str,
    cycle: int,
) -> None:
    """Each PE's write port addresses its tile's entry this cycle, and only when the tiles are taken."""
    R, C = cfg.array_rows, cfg.array_cols
    for r in range(R):
        for c in range(C):
            write = dut.writes[r][c]
            got = ctx.get(write.address) if ctx.get(write.enable) else None
            entry = now[(r, c)][2] if (r, c) in now else None
            want = entry[0] * n + entry[1] if (entry is not None and take) else None
            assert got == want, f"{label}: cycle {cycle} PE ({r}, {c}): writes {got}, expected {want}"


def _schedule(tiles: collections.defaultdict, tick: int, ps: tuple, R: int, C: int) -> int:
    """Put a pass taken at ``tick`` into ``tiles`` (per array tick, per PE); returns its last PE's T3 tick."""
    rows, cols, first, values = ps
    for r in range(R):
        for c in range(C):
            for phase in range(4):
                i = rows[r][phase >> 1]
                j = cols[c][phase & 1]
                entry = (i, j) if i >= 0 and j >= 0 else None
                # one-beat phases: phase p of PE (r, c) drains r + c + p + 2 ticks after the take
                at = tick + 2 + r + c + phase
                tiles[at][(r, c)] = (phase, int(values[r, c, phase]), entry, first)
    return tick + 2 + (R - 1) + (C - 1) + 3


async def _drive_head(
    ctx: SimulatorContext,
    dut: AccumulationBuffer,
    cfg: KaleidoConfig,
    n: int,
    passes: list,
    rng: np.random.Generator,
    gaps: tuple[int, int],
    label: str,
) -> tuple[BankModel, int, int]:
    """Drive one head's ``passes`` until settled, against a :class:`BankModel`; returns it, cycles, held cycles."""
    R, C = cfg.array_rows, cfg.array_cols
    tokens_layout = dut.pass_tokens.shape()
    ref = BankModel(cfg, n)
    # per array tick, per PE: (phase, value, (i, j) or None, first)
    tiles: collections.defaultdict = collections.defaultdict(dict)
    tick = k = 0
    next_take = 0
    last_t3 = -1  # tick of the latest pass's T3 tile at the last PE
    cycle = held = 0
    while k < len(passes) or tick <= last_t3 or not ref.settled():
        assert ctx.get(dut.drained) == (ref.in_flight == 0), f"{label}: cycle {cycle}: drained"
        assert ctx.get(dut.settled) == ref.settled(), f"{label}: cycle {cycle}: settled"
        now = tiles.get(tick, {})
        hits = _present(ctx, dut, now, R, C)
        hold = ref.hold(hits)
        assert ctx.get(dut.hold) == hold, f"{label}: cycle {cycle}: hold {ctx.get(dut.hold)}, reference {hold}"
        take = not hold
        ps = passes[k] if k < len(passes) else None
        boundary = ps is not None and k and passes[k - 1][2] != ps[2]
        taken = take and ps is not None and tick >= next_take and (not boundary or ref.in_flight == 0)
        ctx.set(dut.pass_taken, taken)
        _check_writes(ctx, dut, cfg, n, now, take, label, cycle)
        if taken and ps is not None:  # taken implies a pass (for mypy)
            rows, cols, first, _ = ps
            ctx.set(dut.pass_tokens, tokens_layout.const(tokens_value(rows, cols, first)))
            last_t3 = _schedule(tiles, tick, ps, R, C)
            next_take = tick + int(rng.integers(*gaps))
            k += 1
        last = (R - 1, C - 1) in now and now[(R - 1, C - 1)][0] == 3
        ref.step(hits, take, taken, last)
        held += hold
        if take:
            tiles.pop(tick, None)
            tick += 1
        cycle += 1
        await ctx.tick()
        assert cycle < 200_000
    ctx.set(dut.pass_taken, 0)
    for row in dut.tiles:
        for tile in row:
            ctx.set(tile.valid, 0)
    assert ctx.get(dut.settled)
    return ref, cycle, held


async def _unload(
    ctx: SimulatorContext, dut: AccumulationBuffer, n: int, rng: np.random.Generator, label: str
) -> list[int]:
    """Unload ``S`` under random output stalls (the first word a cycle after unload rises); returns its words."""
    ctx.set(dut.unload, 1)
    values: list[int] = []
    first_cycle = True
    while True:
        ready = bool(rng.random() < 0.7)
        ctx.set(dut.s.ready, ready)
        valid = ctx.get(dut.s.valid)
        assert valid != first_cycle, f"{label}: s.valid {valid} in unload cycle {len(values)}"
        first_cycle = False
        last = ctx.get(dut.s.payload.last)
        assert ctx.get(dut.unloaded) == (valid and ready and last)
        if valid and ready:
            values.append(ctx.get(dut.s.payload.value.as_unsigned()))
            assert last == (len(values) == n * n), f"{label}: last on word {len(values)} of {n * n}"
        await ctx.tick()
        if valid and ready and last:
            break
    ctx.set(dut.unload, 0)
    await ctx.tick()
    assert not ctx.get(dut.s.valid)
    return values


def run_buffer(cfg, n, heads, seed, gaps=(5, 9)):
    """Drive ``heads`` (from :func:`golden_passes` / :func:`random_passes`)
    through one buffer; returns the reference's statistics."""
    rng = np.random.default_rng(seed)
    dut = AccumulationBuffer(cfg, n)
    stats = {"held": 0, "max_fill": 0, "cycles": 0, "forwards": 0}

    async def bench(ctx):
        for h, (passes, expect) in enumerate(heads):
            label = f"seed {seed} head {h}"
            ref, cycles, held = await _drive_head(ctx, dut, cfg, n, passes, rng, gaps, label)
            stats["held"] += held
            stats["max_fill"] = max(stats["max_fill"], ref.max_fill)
            stats["forwards"] += ref.forwards
            stats["cycles"] += cycles
            values = await _unload(ctx, dut, n, rng, label)
            S = decode_scores(values, n, cfg.buffer_width())
            bad = [(tuple(e), int(S[tuple(e)]), int(ref.S[tuple(e)])) for e in np.argwhere(S != ref.S)]
            assert not bad, f"{label}: (entry, RTL, reference) differ: {bad[:4]}"
            if expect is not None:
                assert np.array_equal(S, expect), f"{label}: {(S != expect).sum()} scores differ from grouped_scores"

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return stats


@pytest.mark.parametrize("name, cfg, grid", GOLDEN, ids=[c[0] for c in GOLDEN])
def test_accumulation_buffer_golden(name, cfg, grid, seed):
    n = grid[0] * grid[1] * grid[2]
    heads = [make_workload(kind, grid, cfg.split, seed + h) for h, kind in enumerate(("video", "random"))]
    stats = run_buffer(cfg, n, golden_passes(cfg, grid, heads), seed)
    if cfg.s_banks == 1:  # one bank takes one tile a cycle: the array is held
        assert stats["held"] > 0, f"seed {seed}: {stats}"


@pytest.mark.parametrize("name, cfg", RANDOM, ids=[c[0] for c in RANDOM])
def test_accumulation_buffer_random(name, cfg, seed):
    rng = np.random.default_rng(seed)
    n = 4
    stats = run_buffer(cfg, n, random_passes(cfg, n, rng, 60), seed, gaps=(5, 7))
    # the FIFOs filled up and held the array; entries were read back to back (forwarded)
    assert stats["held"] > 0 and stats["forwards"] > 0, f"seed {seed}: {stats}"
    if cfg.s_fifo_depth == cfg.array_rows * cfg.array_cols:
        assert stats["max_fill"] == cfg.s_fifo_depth, f"seed {seed}: {stats}"


def test_accumulation_buffer_rejects_bad_parameters():
    with pytest.raises(TypeError, match=r"n_tokens must be an integer, not 2.5"):
        AccumulationBuffer(KaleidoConfig.one_array(), 2.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"n_tokens must be at least 2, not 1"):
        AccumulationBuffer(KaleidoConfig.one_array(), 1)
    with pytest.raises(ValueError, match=r"s_fifo_depth 8 is below the array's 16 PEs"):
        AccumulationBuffer(KaleidoConfig.one_array(s_fifo_depth=8), 4)
    with pytest.raises(ValueError, match=r"s_banks must be a power of two from 1 to 1024, not 3"):
        KaleidoConfig.one_array(s_banks=3)
    with pytest.raises(TypeError, match=r"s_fifo_depth must be an integer, not 'x'"):
        KaleidoConfig.one_array(s_fifo_depth="x")
    assert [ring_depth(KaleidoConfig.one_array(sub_arrays=s)) for s in ((1, 1), (2, 2), (4, 4))] == [4, 8, 8]
    with pytest.raises(ValueError, match=r"aligned passes need one array, not sub-arrays of \(1, 1\)"):
        AccumulationBuffer(KaleidoConfig(), 4, aligned=True)
    with pytest.raises(ValueError, match=r"lane 16 is not one of the array's 16 PEs"):
        AccumulationBuffer(KaleidoConfig.one_array(), 4).lane_banks(16)


@pytest.mark.parametrize("banks", [1, 2, 4, 8, 16, 32])
def test_aligned_lanes_reach_exactly_their_banks(banks):
    """With aligned passes (the dense engine's: blocks of R x C tokens) the
    banks a lane is wired to are exactly those its tiles can reach, counted
    here over every block of a 64-token head with the config's s_bank;
    unaligned, every lane reaches every bank."""
    cfg = KaleidoConfig.one_array(s_banks=banks)
    R, C, n = cfg.array_rows, cfg.array_cols, 64
    aligned = AccumulationBuffer(cfg, n, followers=False, aligned=True)
    free = AccumulationBuffer(cfg, n)
    for lane in range(R * C):
        r, c = divmod(lane, C)
        reached = {s_bank(bi * R + r, bj * C + c, banks) for bi in range(n // R) for bj in range(n // C)}
        assert set(aligned.lane_banks(lane)) == reached, f"lane {lane}"
        assert list(free.lane_banks(lane)) == list(range(banks))


#: engine heads for the ring: the default 4x4 array (a pass of one-beat
#: phases lasts 5 cycles, its last tile leaves the last PE 8 after its last
#: beat) and four 2x2 arrays (a ring each)
RING_CASES = [
    ("video", KaleidoConfig.one_array(split=(2, 3, 3), batch=2), 4),
    # slow (40 s): the 4x4 array is the case a smaller ring fails
    pytest.param(
        "video", KaleidoConfig.one_array(split=(4, 7, 5), batch=4, sub_arrays=(2, 2)), 3, marks=pytest.mark.slow
    ),
]


@pytest.mark.parametrize("kind, cfg, most", RING_CASES, ids=["4x4", "2x2-arrays"])
def test_the_ring_of_passes_in_flight_in_the_engine(kind, cfg, most, seed):
    """The ring's bound (issue 46 item 4): the buffer keeps the tokens of
    the last :func:`~kaleido.hdl.accumulation_buffer.ring_depth` passes
    taken (8 on 4x4 and 2x2 arrays), and nothing holds the dispatcher when
    the ring is full: the buffer's proofs (``accumulation_buffer_routing``,
    ``sums``) assume the array never has more passes in flight (taken, last
    T3 tile not yet out of the last PE), and their covers reach a full ring
    (``ring_full``). Here, white box in the whole engine (the dispatcher's
    two pass buffers and the array's timing), each array's in-flight count
    never exceeds the depth and peaks at ``most`` on this head (the bound,
    ``3 + ceil((r + c + 2) / 4)``, takes passes of four beats, the shortest).
    ``S`` stays exact. A ring of 2 overwrites a pass in flight on the 4x4
    array and fails here (and every engine test)."""
    from amaranth import Fragment
    from amaranth.sim import Simulator as Sim

    from kaleido.hdl.engine import KaleidoEngine
    from kaleido.tb.benches import engine_bench
    from kaleido.tb.engine_io import engine_words
    from kaleido.tb.formal import sub_internals
    from kaleido.tb.kit import AmaranthBackend

    grid = (2, 2, 4)
    w = make_workload(kind, grid, cfg.split, seed)
    dut = KaleidoEngine(cfg, grid)
    frag = Fragment.get(dut, None)  # simulated as is, so the buffer's counts can be read by name
    sig = sub_internals(frag)
    A = cfg.n_arrays
    counts = [sig[f"accumulator.in_flight{f'_{a}' if A > 1 else ''}"] for a in range(A)]
    peak = [0] * A
    out: dict = {}

    def each(be, cycle):
        for a, c in enumerate(counts):
            v = int(be._ctx.get(c))
            assert v <= ring_depth(cfg), f"seed {seed}: cycle {cycle}: array {a} has {v} passes in flight"
            peak[a] = max(peak[a], v)

    async def bench(ctx):
        res = await engine_bench(AmaranthBackend(ctx, dut), engine_words(w.q, w.k, cfg), dut.s_width, each_cycle=each)
        out["S"] = decode_scores(res.values, dut.n_tokens, dut.s_width)

    sim = Sim(frag)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    ref = grouped_scores(w.q, w.k, grid, cfg.split, cfg.thresholds)
    assert np.array_equal(out["S"], ref), f"seed {seed}: {(out['S'] != ref).sum()} scores differ"
    assert max(peak) == most, f"seed {seed}: passes in flight peaked at {peak}, expected {most}"
