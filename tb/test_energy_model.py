"""An independent check of the energy model (issue 46, item 1): a head of
four tokens whose every event is counted by hand from docs/ENERGY.md's
rules, pinned stage by stage (``qk``, ``pv``, ``softmax``, ``dispatch``,
``io``; Kaleido and dense) and turned into pJ with the document's own
per-event table. Nothing here calls the model to get an expected number:
the counts are literals derived in the comments, the energies a plain sum
of count times the document's figure.

The head: grid (T, H, W) = (1, 2, 2), tokens n = (t*H + y)*W + x, so
token 0 = (y0, x0), 1 = (y0, x1), 2 = (y1, x0), 3 = (y1, x1); split
(2, 2, 1), d = 5, batch 2 (one batch per group: 3 batches).

* t-channels 0, 1 pair along x: units (0, 1), (2, 3). Q equal in a pair:
  row tags FULL. K 16 at the anchors, 24 at the followers (0b0001_0000 /
  0b0001_1000: four leading bits equal, at least P in every design and
  below F): column tags PARTIAL.
* x-channels 2, 3 pair along y: units (0, 2), (1, 3). Q 16 / -16 (the
  sign differs: no leading bit equal): row tags NONE. K equal: FULL.
* y-channel 4 pairs along t, T = 1: four unpaired units (0..3): ABSENT.
* V as Q on the x-channels (16 / -16: not FULL), 16 elsewhere (t: FULL).

The per-PE tables (spec sec. 5, ``encoding.tile_parts``: what each
register adds per phase; mul = nibble multipliers of the union of the
parts, P = 2, LO or HI = 1; acc = registers adding a part; comb = phases
where a register adds a whole P), summed over phases T0..T3:

* 3 accumulators, (q, k) = (FULL, PARTIAL): T0 R0=P R1=HI R2=P (2, 3, 1);
  T1 R0=LO R1=LO (1, 2, 0); T2 nothing; T3 R0=HI (1, 1, 0): (4, 6, 1).
* 3 acc, (NONE, FULL): T0 R0=P R1=P (2, 2, 1); T1 nothing; T2 R0=P R1=P
  (2, 2, 1); T3 nothing: (4, 4, 2).
* (ABSENT, ABSENT), either count: T0 R0=P only (2, 1, 1); T1-T3 not
  computed: (2, 1, 1).
* 4 accumulators, (FULL, PARTIAL): T0 R0=P R1=HI R2=P R3=HI (2, 4, 1); T1
  R0=LO R1=LO (1, 2, 0); T2, T3 nothing: (3, 6, 1).
* 4 acc, (NONE, FULL): as with 3, (4, 4, 2).
* 4 acc with a padding (ABSENT) unit on one side: (FULL, ABSENT) T0 R0=P
  R2=P (2, 2, 1); (ABSENT, PARTIAL) T0 R0=P R1=HI (2, 2, 1), T1 R0=LO
  (1, 1, 0): (3, 3, 1); (NONE, ABSENT) T0 R0=P (2, 1, 1), T2 R0=P
  (2, 1, 1): (4, 2, 2); (ABSENT, FULL) T0 R0=P R1=P (2, 2, 1): (2, 2, 1).
"""

import math
import types

import numpy as np
import pytest

from kaleido.config import KaleidoConfig
from kaleido.energy import EVENTS, EnergyTable, attention_energy, attention_events, load_table
from kaleido.model import pv_cycles, run_model

GRID = (1, 2, 2)
SPLIT = (2, 2, 1)
N, D = 4, 5

#: docs/ENERGY.md's table: 45 nm pJ, then the stated 0.281 scale (DRAM not scaled)
FACTOR = (16 / 45) * (0.8 / 0.9) ** 2  # the document's 0.281
PJ_45 = {
    "mul_8x8": 0.2,
    "mul_4x8": 0.1,
    "add_8": 0.03,
    "add_20": 0.065,
    "acc_write": 0.075,
    "reg_byte": 0.03,
    "sram_read_byte": 1.25,
    "sram_write_byte": 1.25,
}
PJ = {**{k: v * 0.281 for k, v in PJ_45.items()}, "dram_byte": 20.3}


def head() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Q, K, V of the module docstring's head."""
    q = np.full((N, D), 16, dtype=np.int8)
    k, v = q.copy(), q.copy()
    k[[1, 3], 0:2] = 24  # t followers (tokens 1, 3): PARTIAL
    q[[2, 3], 2:4] = -16  # x followers (tokens 2, 3): NONE
    v[[2, 3], 2:4] = -16
    return q, k, v


def full(**counts: int) -> dict[str, int]:
    """Every event kind, zero unless given."""
    assert set(counts) <= set(EVENTS)
    return {kind: counts.get(kind, 0) for kind in EVENTS}


# -- the cycle model's counts the energy model reads, by hand -----------------
#
# A phase's slots: one FULL8 slot per channel some PE needs whole (or HI); two
# channels needing only LO in T1/T3 share a DUAL_LO slot; a phase with no
# slot sends one marker beat. ``channels`` counts the channels in slots.

#: paper design (3 acc) on a 2x2 array: t pass (2 ch): T0 2 slots, T1 1 DUAL_LO
#: (LO, LO), T2 marker, T3 2 (HI); x pass (2 ch): T0 2, T1 marker, T2 2, T3
#: marker; four y passes (1 ch; 4 unpaired units a side on 2 rows and 2 columns):
#: T0 1 slot, T1-T3 markers. Passes 1 + 1 + 4 = 6.
PAPER_2X2 = {
    "T0": {"slots": 2 + 2 + 4, "channels": 2 + 2 + 4, "beats": 2 + 2 + 4},
    "T1": {"slots": 1, "channels": 2, "beats": 1 + 1 + 4},
    "T2": {"slots": 2, "channels": 2, "beats": 1 + 2 + 4},
    "T3": {"slots": 2, "channels": 2, "beats": 2 + 1 + 4},
}
#: one_array design (4 acc) on a 4x4 array: one pass per group, padding units;
#: t: T0 2, T1 1 DUAL_LO, T2 and T3 markers (4 acc: T3 adds nothing); x: T0 2,
#: T1 marker, T2 2, T3 marker; y: T0 1, markers.
ONE_ARRAY_4X4 = {
    "T0": {"slots": 5, "channels": 5, "beats": 5},
    "T1": {"slots": 1, "channels": 2, "beats": 3},
    "T2": {"slots": 2, "channels": 2, "beats": 4},
    "T3": {"slots": 0, "channels": 0, "beats": 3},
}
#: default design: the 4x4 passes on 1x1 arrays, one block per real unit pair:
#: t 2x2 = 4 blocks of (2 FULL8, 1 DUAL_LO, marker, marker) = 5 beats; x 4
#: blocks of (2, marker, 2, marker) = 6 beats; y 4x4 = 16 blocks of (1, three
#: markers) = 4 beats. 24 blocks.
DEFAULT_1X1 = {
    "T0": {"slots": 4 * 2 + 4 * 2 + 16, "channels": 32, "beats": 32},
    "T1": {"slots": 4, "channels": 8, "beats": 4 + 4 + 16},
    "T2": {"slots": 4 * 2, "channels": 8, "beats": 4 + 8 + 16},
    "T3": {"slots": 0, "channels": 0, "beats": 4 + 4 + 16},
}

#: P V beats (``pv_cycles``): per query block, per group's block of C channels,
#: one per unpaired token or pair FULL in every column, two per other pair;
#: dense: one per token. 2x2: t 2 x 1, x 2 x 2, y 4 x 1 = 10 (dense 4 + 4 + 4 =
#: 12) per block, 2 query blocks. 4x4: one query block of the same.
CASES = {
    "paper-2x2": (KaleidoConfig.paper(split=SPLIT, batch=2, array_rows=2, array_cols=2), PAPER_2X2, 6, 20, 24),
    "one_array-4x4": (KaleidoConfig.one_array(split=SPLIT, batch=2), ONE_ARRAY_4X4, 3, 10, 12),
    "default-1x1": (KaleidoConfig(split=SPLIT, batch=2, pv_pairs=False), DEFAULT_1X1, 24, 10, 12),
}


def stubs(case: str) -> tuple[KaleidoConfig, types.SimpleNamespace, types.SimpleNamespace]:
    """The configuration and hand-made stand-ins for ``run_model``'s result
    and ``pv_cycles``' timing (only the fields the energy model reads)."""
    cfg, phases, passes, beats, dense_beats = CASES[case]
    result = types.SimpleNamespace(phases=phases, passes=passes)
    return cfg, result, types.SimpleNamespace(beats=beats, dense_beats=dense_beats)


def shared_stages(slots: int) -> dict[str, dict[str, dict[str, int]]]:
    """``softmax``, ``io`` and ``dispatch``, which depend on the head and
    the matcher's ``slots`` only (n = 4 tokens, d = 5 channels)."""
    softmax = full(
        sram_read_byte=4 * 4 * 2 * 4 + 4 * 5 * 4,  # S (4 B) read twice: 128; O (4 B) read to scale: 80 -> 208
        sram_write_byte=4 * 4 + 4 * 5,  # P 16 bytes, scaled O 20 -> 36
        mul_8x8=2 * 16 + 20,  # exponential and normalisation per score, a scale per output -> 52
        add_20=2 * 16,  # row max and row sum per score -> 32
    )
    io = full(dram_byte=4 * 4 * 5)  # Q, K, V in and O out, a byte each -> 80
    # strings: Q and K, one per unit and batch, units t 2 + x 2 + y 4 -> 16
    # scheduling buffers: unit-channels t 2 x 2 + x 2 x 2 + y 4 x 1 = 12; the walk
    # reads 4 copies a byte each: 48; both sides' unit memories write and read,
    # the sorted memories write, 2 x 12 x 18 bits = 54 bytes each
    dispatch = full(
        add_8=3 * 4 * 5 + 16 * 4 * 2 + slots,  # a compare per Q/K/V value 60; 4 distances of 2 bytes per string 128
        reg_byte=16 * 2,  # a 16-bit string per unit and batch -> 32
        sram_read_byte=48 + 54,
        sram_write_byte=54 + 54,
    )
    return {
        "softmax": {"kaleido": softmax, "dense": softmax},
        "io": {"kaleido": io, "dense": io},
        "dispatch": {"kaleido": dispatch, "dense": full()},
    }


def expected_paper_2x2() -> dict:
    """Paper design (3 acc), 2x2 array of Kaleido PEs (each a 2x2 pair group)."""
    # Q K^T, Kaleido. (unit pairs per channel) x (table): t 2 ch x 4 x (4, 6, 1),
    # x 2 x 4 x (4, 4, 2), y 1 x 16 x (2, 1, 1): mul 32+32+32 = 96, acc 48+32+16 =
    # 96, comb 8+16+16 = 40. Drains: 4 phases x 4 PEs x 6 passes = 96.
    # Beats 28 x (4 PEs x 37 + edge 20x2 + 12x2 + 6 = 218 bits) = 6104 bits = 763 B.
    # Operands: t 1 pass x (2+2) units x 2 ch x 18 bits = 144, x 144, y 4 x 4 x 1 x 18
    # = 288: 576 bits = 72 B; drains read and write 96 x 4 B = 384. Q and K
    # (20 B each) written into the anchor and follower copies: 80 B.
    qk = full(mul_4x8=96, add_20=96 + 40 + 96, acc_write=96 + 96 * (1 + 3), reg_byte=763)
    qk.update(sram_read_byte=72 + 384, sram_write_byte=384 + 80)
    # dense: ceil(4/2)^2 tiles x 5 channels = 20 beats, 80 MACs; drains 4 tiles x
    # 4 PEs x 3 batches = 48; beats 20 x (4 x 18 + 8x2 + 8x2 + 2 = 106 bits) = 265 B.
    qk_dense = full(mul_8x8=80, add_20=80 + 48, acc_write=80 + 48 * 2, reg_byte=265)
    qk_dense.update(sram_read_byte=20 * 4 + 48 * 4, sram_write_byte=48 * 4 + 40)  # Q and K into the banks: 40
    # P V, per query row (2 columns): t 2 units x 1 beat x 2 SUM columns = 4
    # products and 4 pre-adds; x 2 units x 2 beats x 2 = 8; y 4 unpaired x 2
    # (one a padding column) = 8: 20 products, 4 pre-adds; 4 rows (2 blocks of
    # 2): 80 and 16. Passes (1 unit each) t 2 + x 2 + y 4 = 8 per block: 2 x 8
    # x 4 PEs = 64 drains. Operands per block: 4 pairs x 2 x (2+2) + 4 unpaired
    # x (2+2) = 48, x 2 blocks = 96. Beats 20 x (4 P V PEs x 41 (r0, r1, s 25;
    # k, k0 10; ctl 6) + edge 25x2 + 10x2 + 6 = 240 bits) = 4800 bits = 600 B.
    pv = full(mul_4x8=2 * 80, add_20=2 * 80 + 64, add_8=16, acc_write=80 + 64 * 2, reg_byte=600)
    pv.update(sram_read_byte=96 + 64 * 4, sram_write_byte=64 * 4)
    # dense P V: 24 beats x 4 PEs = 96 MACs, the same 64 drains, 24 x 106 bits = 318 B
    pv_dense = full(mul_8x8=96, add_20=96 + 64, acc_write=96 + 64 * 2, reg_byte=318)
    pv_dense.update(sram_read_byte=24 * 4 + 64 * 4, sram_write_byte=64 * 4)
    slots = 8 + 1 + 2 + 2
    return {"qk": {"kaleido": qk, "dense": qk_dense}, "pv": {"kaleido": pv, "dense": pv_dense}, **shared_stages(slots)}


def expected_4x4(mul: int, acc: int, comb: int, passes: int, beats: int, slots: int, edge_bits: int) -> dict:
    """A 4x4 pass (one array, or blocks on small arrays whose PEs and edge
    give ``edge_bits`` per beat), 4 accumulators: ``passes`` x 4 phases x
    PEs drains; operands of the whole 4x4 passes: t 1 pass x (4+4) units x 2
    ch x 18 bits = 288, x 288, y 8 x 1 x 18 = 144: 720 bits = 90 B."""
    pes = {726: 16, 75: 1}[edge_bits]  # 16 x 37 + 20x4 + 12x4 + 6 = 726; 1 x 37 + 20 + 12 + 6 = 75
    tiles = 4 * pes * passes
    qk = full(mul_4x8=mul, add_20=acc + comb + tiles, acc_write=acc + tiles * (1 + 4), reg_byte=beats * edge_bits // 8)
    qk.update(sram_read_byte=90 + tiles * 4, sram_write_byte=tiles * 4 + 80)  # Q, K into the two copies: 80
    # dense: 1 tile x 5 channels = 5 beats, 80 MACs; drains 16 PEs x 3 batches = 48;
    # 5 x (16 x 18 + 8x4 + 8x4 + 2 = 354 bits) = 1770 bits = 221 B
    qk_dense = full(mul_8x8=80, add_20=80 + 48, acc_write=80 + 48 * 2, reg_byte=221)
    qk_dense.update(sram_read_byte=5 * 8 + 48 * 4, sram_write_byte=48 * 4 + 40)  # Q, K into the banks: 40
    # P V per query row (4 columns): t 2 units x 1 beat x 4 SUM (2 padding columns
    # are FULL) = 8 products, 8 pre-adds; x 2 units x 2 beats x 4 less the 2
    # padding columns' SKIP in the second beat = 12 products, and those 2 x 2 = 4
    # SUM pre-adds; y 4 x 4 = 16: 36 products, 12 pre-adds; 4 rows: 144 and 48.
    # Drains 8 passes x 16 PEs = 128; operands 4 pairs x 2 x 8 + 4 x 8 = 96;
    # beats 10 x (16 P V PEs x 41 + edge 25x4 + 10x4 + 6 = 802 bits) = 8020
    # bits = 1002 B (the P V array is the whole 4x4 pass, unpaired).
    pv = full(mul_4x8=2 * 144, add_20=2 * 144 + 128, add_8=48, acc_write=144 + 128 * 2, reg_byte=1002)
    pv.update(sram_read_byte=96 + 128 * 4, sram_write_byte=128 * 4)
    # dense: 12 beats x 16 PEs = 192 MACs; 12 x 354 bits = 531 B
    pv_dense = full(mul_8x8=192, add_20=192 + 128, acc_write=192 + 128 * 2, reg_byte=531)
    pv_dense.update(sram_read_byte=12 * 8 + 128 * 4, sram_write_byte=128 * 4)
    return {"qk": {"kaleido": qk, "dense": qk_dense}, "pv": {"kaleido": pv, "dense": pv_dense}, **shared_stages(slots)}


def expected(case: str) -> dict:
    if case == "paper-2x2":
        return expected_paper_2x2()
    if case == "one_array-4x4":
        # padding: t and x have 2 units a side on 4 rows/columns, 2 ABSENT units
        # each. t per channel 4 x ((F,PA) 3 + (F,A) 2 + (A,PA) 3 + (A,A) 2) = 40
        # mul, 4 x (6 + 2 + 3 + 1) = 48 acc, 4 x (1+1+1+1) = 16 comb; x per
        # channel 4 x ((N,F) 4 + (N,A) 4 + (A,F) 2 + 2) = 48, 4 x (4+2+2+1) = 36,
        # 4 x (2+2+1+1) = 24; y 16 x (2, 1, 1). Totals: mul 80 + 96 + 32 = 208,
        # acc 96 + 72 + 16 = 184, comb 32 + 48 + 16 = 96. 3 passes, 15 beats.
        return expected_4x4(208, 184, 96, passes=3, beats=15, slots=8, edge_bits=726)
    # default: 1x1 arrays, no padding (a block is one unit a side): t 2 ch x 4 x
    # (3, 6, 1), x 2 x 4 x (4, 4, 2), y 16 x (2, 1, 1): mul 24 + 32 + 32 = 88,
    # acc 48 + 32 + 16 = 96, comb 8 + 16 + 16 = 40; 24 blocks, 108 beats.
    return expected_4x4(88, 96, 40, passes=24, beats=108, slots=44, edge_bits=75)


@pytest.mark.parametrize("case", list(CASES))
def test_events_by_hand(case):
    """Every stage's event dictionary, both designs, equals the hand count."""
    cfg, result, pv = stubs(case)
    got = attention_events(*head(), GRID, SPLIT, cfg, result, pv)
    want = expected(case)
    assert set(got) == set(want)
    for stage in want:
        for design in ("kaleido", "dense"):
            assert got[stage][design] == want[stage][design], (case, stage, design)


@pytest.mark.parametrize("case", list(CASES))
def test_cycle_model_gives_the_hand_counts(case):
    """The stand-ins are the cycle model's own counts of this head (derived
    by hand above), so the pinned events are the model's on a real run."""
    cfg, result, pv = stubs(case)
    q, k, v = head()
    got = run_model(q, k, GRID, SPLIT, cfg)
    assert (got.phases, got.passes) == (result.phases, result.passes)
    timing = pv_cycles(v, GRID, SPLIT, cfg)
    assert (timing.beats, timing.dense_beats) == (pv.beats, pv.dense_beats)
    if not cfg.pv_pairs:  # without the timing the model computes the same one
        assert attention_events(q, k, v, GRID, SPLIT, cfg, got) == expected(case)


def joules(events: dict[str, int]) -> float:
    return sum(n * PJ[kind] for kind, n in events.items())


def test_default_table_is_the_documented_one():
    """kaleido/data/energy_45nm.toml holds docs/ENERGY.md's figures and
    scale: 45 nm pJ x 0.281 = (16/45)(0.8/0.9)^2, DRAM unscaled."""
    assert FACTOR == pytest.approx(0.281, abs=5e-4)
    table = load_table()
    assert table.pj == pytest.approx(PJ, rel=1e-12)
    assert table.pj["mul_4x8"] == pytest.approx(0.0281) and table.pj["sram_read_byte"] == pytest.approx(0.35125)


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("which", ["hand", "default"])
def test_energy_by_hand(case, which):
    """pJ per stage, per kind, totals and savings: count x the document's
    energy, summed (``which``: a hand-made table, or the shipped one)."""
    cfg, result, pv = stubs(case)
    table = EnergyTable(dict(PJ), 16, 0.281, {}, "hand") if which == "hand" else None
    got = attention_energy(*head(), GRID, SPLIT, cfg, result, table, pv)
    want = expected(case)
    for stage, designs in want.items():
        for design, events in designs.items():
            assert got["by_stage"][stage][design] == pytest.approx(joules(events), rel=1e-12), (stage, design)
    for kind in EVENTS:
        for design in ("kaleido", "dense"):
            total = sum(want[s][design][kind] for s in want) * PJ[kind]
            assert got["by_kind"][kind][design] == pytest.approx(total, rel=1e-12), (kind, design)
    kaleido = sum(joules(d["kaleido"]) for d in want.values())
    dense = sum(joules(d["dense"]) for d in want.values())
    assert (got["kaleido_pj"], got["dense_pj"]) == pytest.approx((kaleido, dense), rel=1e-12)
    assert got["savings"] == pytest.approx(dense / kaleido, rel=1e-12)
    qk = joules(want["qk"]["dense"]) / joules(want["qk"]["kaleido"])
    assert got["qk_savings"] == pytest.approx(qk, rel=1e-12)
    assert math.isfinite(qk) and got["events"] == want


def test_paper_qk_energy_in_figures():
    """One stage written out in pJ, no helper: the paper case's Q K^T."""
    cfg, result, pv = stubs("paper-2x2")
    got = attention_energy(*head(), GRID, SPLIT, cfg, result, None, pv)["by_stage"]["qk"]
    # 96 x 0.1 + 232 x 0.065 + 480 x 0.075 + 763 x 0.03 + (456 + 464) x 1.25 = 1233.57 pJ at 45 nm
    assert got["kaleido"] == pytest.approx(1233.57 * 0.281, rel=1e-9)
    # 80 x 0.2 + 128 x 0.065 + 176 x 0.075 + 265 x 0.03 + (272 + 232) x 1.25 = 675.47
    assert got["dense"] == pytest.approx(675.47 * 0.281, rel=1e-9)


def test_dense_qk_on_a_non_square_array():
    """The dense ``Q K^T`` on a 2x4 array, where rows and columns tile the
    tokens differently (the cases above are square): ceil(4/2) x ceil(4/4)
    = 2 tiles x 5 channels = 10 beats of 8 MACs; drains 4 x 4 PEs' worth x
    3 batches = 48; beats 10 x (8 x 18 + 8x2 + 8x4 + 2 = 194 bits) = 242 B
    (rounded down); reads 10 x (2 + 4) bytes and the drains' 48 x 4."""
    cfg = KaleidoConfig.paper(split=SPLIT, batch=2, array_rows=2, array_cols=4)
    _, result, pv = stubs("paper-2x2")  # the Kaleido side's stand-ins: only the dense Q K^T is pinned here
    got = attention_events(*head(), GRID, SPLIT, cfg, result, pv)["qk"]["dense"]
    want = full(mul_8x8=80, add_20=80 + 48, acc_write=80 + 48 * 2, reg_byte=242)
    want.update(sram_read_byte=10 * 6 + 48 * 4, sram_write_byte=48 * 4 + 40)
    assert got == want
