"""Golden-side inputs and expected outputs of the dispatcher blocks, shared
by the Amaranth-simulator tests and the cocotb testbenches."""

from __future__ import annotations

import numpy as np

from kaleido.config import LFSR_SEED
from kaleido.encoding import Need
from kaleido.golden import classify
from kaleido.golden.matcher import channel_needs, match
from kaleido.golden.reuse import effective_values
from kaleido.golden.scheduler import reuse_strings, schedule
from kaleido.hdl.detector import detector_in_layout, detector_out_layout
from kaleido.hdl.matcher import matcher_in_layout, matcher_out_layout
from kaleido.hdl.scheduler import scheduler_in_layout, scheduler_out_layout
from kaleido.loopnest import chunks
from kaleido.tb.driver import Packer
from kaleido.tb.passes import make_workload

__all__ = ["detector_case", "matcher_case", "scheduler_case"]

_NEED_CODE = {Need.SKIP: 0, Need.HALF: 1, Need.FULL: 2}


def detector_case(cfg, rng, n_pairs=200, source="random"):
    """``(in_words, expected_out_words)`` for the reuse detector: random or
    workload-derived pairs, short batches and absent followers included;
    each pair's run-time thresholds are the configuration's ``(F, P)`` or,
    for about half the pairs, a random valid pair."""
    B = cfg.batch
    pack_in, pack_out = Packer(detector_in_layout(B)), Packer(detector_out_layout(B))
    if source == "random":
        a = rng.integers(-128, 128, (n_pairs, B)).astype(np.int8)
        noise = rng.integers(-20, 21, (n_pairs, B)) * (rng.random((n_pairs, B)) < 0.7)
        b = np.clip(a.astype(np.int64) + noise, -128, 127).astype(np.int8)
    else:
        w = make_workload("video", (2, 4, 4), cfg.split, int(rng.integers(1 << 31)))
        tok = w.k
        a = np.resize(tok[0::2, :B], (n_pairs, B)).astype(np.int8)
        b = np.resize(tok[1::2, :B], (n_pairs, B)).astype(np.int8)
    counts = rng.integers(1, B + 1, n_pairs)
    counts[rng.random(n_pairs) < 0.5] = B
    absent = rng.random(n_pairs) < 0.1
    own = rng.random(n_pairs) < 0.5
    fs = rng.integers(1, 10, n_pairs)
    ps = np.array([rng.integers(1, f + 1) for f in fs])
    ins, outs = [], []
    for p in range(n_pairs):
        n = int(counts[p])
        F, P = (cfg.F, cfg.P) if own[p] else (int(fs[p]), int(ps[p]))
        vals = {("count",): n, ("absent",): int(absent[p]), ("full",): F, ("partial",): P}
        for c in range(B):
            vals[("anchor", c)] = a[p, c]
            vals[("follower", c)] = b[p, c]
        ins.append(pack_in(vals))
        cls = classify(a[p, :n], b[p, :n], F, P)
        if absent[p]:
            cls = np.full(n, 3, np.uint8)
        row = np.zeros(B, np.int8)
        col = np.zeros(B, np.int8)
        if not absent[p]:
            row[:n] = effective_values(a[p, :n], b[p, :n], cls, "row")
            col[:n] = effective_values(a[p, :n], b[p, :n], cls, "column")
        full_cls = np.zeros(B, np.uint8)
        full_cls[:n] = cls
        exp = {("string",): int(reuse_strings(cls[None, :], B)[0])}
        for c in range(B):
            exp[("anchor", c)] = a[p, c] if c < n else 0
            exp[("cls", c)] = full_cls[c]
            exp[("row_eff", c)] = row[c]
            exp[("col_eff", c)] = col[c]
        outs.append(pack_out(exp))
    return ins, outs


def _workload_needs(cfg, rng, n_jobs):
    """``(phase, needs)`` of the first passes of a synthetic video head."""
    from kaleido.golden.loopnest import iter_passes

    w = make_workload("video", (2, 4, 4), cfg.split, int(rng.integers(1 << 31)))
    jobs = []
    for ps in iter_passes(w.q, w.k, w.grid, w.split, cfg):
        for phase in range(4):
            needs = channel_needs(
                phase,
                ps.q,
                ps.k,
                rows_present=ps.rows_present,
                cols_present=ps.cols_present,
                accumulators=cfg.accumulators,
            )
            jobs.append((phase, needs + [Need.SKIP] * (cfg.batch - len(needs))))
        if len(jobs) >= n_jobs:
            return jobs
    return jobs


def matcher_case(cfg, rng, n_jobs=60, source="random"):
    """``(in_words, expected_out_words)``: jobs from random class patterns
    (through :func:`channel_needs`) and random need lists, empty jobs too;
    or (``source="workload"``) the jobs of a synthetic video head's passes."""
    B = cfg.batch
    pack_in, pack_out = Packer(matcher_in_layout(B)), Packer(matcher_out_layout(B))
    ins, outs = [], []
    jobs = _workload_needs(cfg, rng, n_jobs) if source == "workload" else None
    for j in range(n_jobs if jobs is None else len(jobs)):
        phase = int(rng.integers(4))
        if jobs is not None:
            phase, needs = jobs[j]
        elif j % 3 == 0:
            q = rng.integers(0, 4, (cfg.array_rows, B)).astype(np.uint8)
            k = rng.integers(0, 4, (cfg.array_cols, B)).astype(np.uint8)
            needs = channel_needs(phase, q, k, accumulators=cfg.accumulators)
        elif j % 7 == 1:
            needs = [Need.SKIP] * B
        else:
            needs = [list(Need)[int(x)] for x in rng.choice(3, B, p=[0.3, 0.4, 0.3])]
        vals = {("phase",): phase, **{("need", c): _NEED_CODE[n] for c, n in enumerate(needs)}}
        ins.append(pack_in(vals))
        slots = match(needs, cfg.lookahead)
        if not slots:
            outs.append(pack_out({("c1",): 0, ("c2",): 0, ("dual",): 0, ("slot",): 0, ("last",): 1, ("phase",): phase}))
        for i, s in enumerate(slots):
            outs.append(
                pack_out(
                    {
                        ("c1",): s[0],
                        ("c2",): s[-1],
                        ("dual",): int(len(s) == 2),
                        ("slot",): 1,
                        ("last",): int(i == len(slots) - 1),
                        ("phase",): phase,
                    }
                )
            )
    return ins, outs


def scheduler_case(cfg, rng, n_strings=64 * 3 + 21, source="random"):
    """``(in_words, expected_out_words)``: whole windows and a short final
    one, the LFSR state carried from the reset seed."""
    B = cfg.batch
    pack_in, pack_out = Packer(scheduler_in_layout(B)), Packer(scheduler_out_layout(cfg.window("row")))
    if source == "random":
        kinds = rng.integers(0, 1 << B, 5)
        strings = [int(kinds[int(rng.integers(5))]) ^ (1 << int(rng.integers(B))) for _ in range(n_strings)]
    else:
        w = make_workload("video", (4, 8, 8), cfg.split, int(rng.integers(1 << 31)))
        from kaleido.golden.reuse import follower_classes
        from kaleido.loopnest import pairs

        a, f, _ = pairs(w.grid, 2)
        cls = follower_classes(w.k, w.grid, w.split, cfg.F, cfg.P)[f][:, :B]
        strings = [int(s) for s in reuse_strings(cls, B)][:n_strings]
    ins = [pack_in({("string",): s, ("last",): int(i == len(strings) - 1)}) for i, s in enumerate(strings)]
    outs, state = [], LFSR_SEED
    window = cfg.window("row")
    for win in chunks(len(strings), window):
        sch = schedule(strings[win], seed=state, window=window)
        state = sch.state
        flat = [(j, p) for j, c in enumerate(sch.clusters) for p in c]
        outs += [
            pack_out({("index",): p, ("cluster",): j, ("last",): int(i == len(flat) - 1)})
            for i, (j, p) in enumerate(flat)
        ]
    return ins, outs
