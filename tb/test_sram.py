"""SRAM macros by size (issue 46, item 2): kaleido/sram.py against hand
computations from kaleido/data/sram_16nm.toml's CACTI figures (written out
here, not read from the module), its errors, its monotonicity, the
buffers the energy model prices against the elaborated cores, and the
sized energy and core area by hand."""

import dataclasses
import math
import tomllib
import types

import numpy as np
import pytest

from kaleido.area import core_area_sized
from kaleido.config import KaleidoConfig
from kaleido.efficiency import SynthFigures, efficiency
from kaleido.energy import CORE_BUFFERS, attention_energy, attention_events, buffer_traffic
from kaleido.sram import DATA, load_sram, port_kind, sram_macro

# tb/test_energy_model.py's head and hand counts (a test module is not
# imported as a library): grid (1, 2, 2), split (2, 2, 1), d = 5, batch 2
GRID, SPLIT = (1, 2, 2), (2, 2, 1)
#: docs/ENERGY.md's 45 nm energies x 0.281
PJ = {"mul_4x8": 0.1 * 0.281, "add_20": 0.065 * 0.281, "acc_write": 0.075 * 0.281, "reg_byte": 0.03 * 0.281}
CASES = {
    "paper-2x2": (
        KaleidoConfig.paper(split=SPLIT, batch=2, array_rows=2, array_cols=2),
        {
            "T0": {"slots": 8, "channels": 8, "beats": 8},
            "T1": {"slots": 1, "channels": 2, "beats": 6},
            "T2": {"slots": 2, "channels": 2, "beats": 7},
            "T3": {"slots": 2, "channels": 2, "beats": 7},
        },
        6,
        20,
        24,
    ),
    "one_array-4x4": (
        KaleidoConfig.one_array(split=SPLIT, batch=2),
        {
            "T0": {"slots": 5, "channels": 5, "beats": 5},
            "T1": {"slots": 1, "channels": 2, "beats": 3},
            "T2": {"slots": 2, "channels": 2, "beats": 4},
            "T3": {"slots": 0, "channels": 0, "beats": 3},
        },
        3,
        10,
        12,
    ),
}


def head() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    q = np.full((4, 5), 16, dtype=np.int8)
    k, v = q.copy(), q.copy()
    k[[1, 3], 0:2] = 24
    q[[2, 3], 2:4] = -16
    v[[2, 3], 2:4] = -16
    return q, k, v


def stubs(case: str):
    cfg, phases, passes, beats, dense_beats = CASES[case]
    result = types.SimpleNamespace(phases=phases, passes=passes)
    return cfg, result, types.SimpleNamespace(beats=beats, dense_beats=dense_beats)


E = 16 / 22  # energy: 22 nm -> 16 nm, 0.8 V at both
A = 0.07 / (146 * 0.022**2)  # area: CACTI's 22 nm cell -> the 0.07 um^2 16 nm cell


def test_data_file_holds_the_cacti_figures():
    """Scale factors and a few of CACTI 7's printed figures (22 nm)."""
    data = tomllib.loads(DATA.read_text())
    assert data["scale"]["energy"] == pytest.approx(E, abs=5e-5)
    assert data["scale"]["area"] == pytest.approx(A, abs=5e-5)
    assert data["axes"] == {
        "capacity_bytes": [1024, 4096, 16384, 65536, 262144, 1048576],
        "width_bits": [16, 32, 64, 128],
    }
    one, two = data["ports"]["1rw"], data["ports"]["1r1w"]
    assert (one["read_pj"][2][1], one["write_pj"][2][1], one["area_mm2"][2][1]) == (1.087, 1.164, 0.003518)
    assert (two["read_pj"][3][0], two["read_pj"][3][2], two["write_pj"][0][5]) == (0.8763, 4.629, 14.05)
    assert "CACTI 7.0" in data["source"]["model"] and "TACO" in data["source"]["model"]


def test_table_point():
    """1 KB of 64-bit words, one port: the table's figures x the scale."""
    m = sram_macro(128, 64, 1, 0)
    assert (m.ports, m.macros) == ("1rw", 1)
    assert m.read_pj == pytest.approx(0.3544 * 0.7273, rel=1e-12)
    assert m.write_pj == pytest.approx(0.7574 * 0.7273, rel=1e-12)
    assert m.area_mm2 == pytest.approx(0.0008617 * 0.9906, rel=1e-12)


def test_log_log_in_capacity():
    """2 KB is half-way (in log) from 1 KB to 4 KB: the geometric mean."""
    m = sram_macro(256, 64, 1, 0)
    assert m.read_pj == pytest.approx(math.sqrt(0.3544 * 1.087) * 0.7273, rel=1e-12)
    assert m.area_mm2 == pytest.approx(math.sqrt(0.0008617 * 0.003518) * 0.9906, rel=1e-12)
    # 9 KB of 128-bit words (the Kaleido operand copy): log4(9216/4096) of the way to 16 KB
    f = math.log(9216 / 4096) / math.log(4)
    assert sram_macro(576, 128).read_pj == pytest.approx(1.293 ** (1 - f) * 4.629**f * 0.7273, rel=1e-12)


def test_log_log_in_width_and_clamp_below():
    """23-bit words, 736 bytes (an S bank): priced at 1 KB (the smallest),
    log2(23/16) of the way from 16- to 32-bit words; 8-bit words of 64
    bytes: the 1 KB 16-bit macro."""
    f = math.log2(23 / 16)
    m = sram_macro(256, 23)
    assert m.read_pj == pytest.approx(0.3857 ** (1 - f) * 0.3455**f * 0.7273, rel=1e-12)
    assert m.write_pj == pytest.approx(0.3244 ** (1 - f) * 0.5354**f * 0.7273, rel=1e-12)
    assert m.area_mm2 == pytest.approx(0.001975 ** (1 - f) * 0.0017**f * 0.9906, rel=1e-12)
    small = sram_macro(64, 8, 1, 0)
    assert (small.read_pj, small.area_mm2) == pytest.approx((0.254 * 0.7273, 0.0008086 * 0.9906), rel=1e-12)


def test_wide_words_are_side_by_side_macros():
    """64 words of 1024 bits (a V tile): 8 macros of 64 x 128 bits = 1 KB."""
    m = sram_macro(64, 1024)
    assert (m.macros, m.macro_width) == (8, 128)
    assert m.read_pj == pytest.approx(8 * 0.8763 * 0.7273, rel=1e-12)
    assert m.write_pj == pytest.approx(8 * 1.378 * 0.7273, rel=1e-12)
    assert m.area_mm2 == pytest.approx(8 * 0.002928 * 0.9906, rel=1e-12)


@pytest.mark.parametrize(
    "args, message",
    [
        ((0, 64), "words must be a positive integer, not 0"),
        ((16, -1), "width must be a positive integer, not -1"),
        ((True, 8), "words must be a positive integer, not True"),
        ((16, 8.0), "width must be a positive integer, not 8.0"),
        ((16, 8, 2, 1), "not 2 read \\+ 1 write"),
        ((16, 8, 0, 0), "not 0 read \\+ 0 write"),
        ((131072, 128), "131072 words x 128 bits \\(2.09715e\\+06 bytes\\) is above the table's largest, 1048576"),
    ],
)
def test_bad_input(args, message):
    with pytest.raises(ValueError, match=message):
        sram_macro(*args)


def test_port_kinds():
    assert (port_kind(1, 1), port_kind(1, 0), port_kind(0, 1)) == ("1r1w", "1rw", "1rw")


@pytest.mark.parametrize("ports", [(1, 0), (1, 1)])
@pytest.mark.parametrize("width", [8, 16, 23, 28, 64, 100, 128, 120, 288, 1024])
def test_bigger_macro_costs_more(ports, width):
    """At every width, read, write and area rise with the words (strictly
    from 1 KB up, flat below the smallest macro), interpolated points too."""
    words = [2**k for k in range(3, 17)] + [3 * 2**k for k in range(3, 15)]
    words = sorted(w for w in words if w * min(width, 128) <= 8 * 2**20)
    ms = [sram_macro(w, width, *ports) for w in words]
    for a, b in zip(ms, ms[1:], strict=False):
        bigger = b.words * b.macro_width > 8 * 1024
        for fig in ("read_pj", "write_pj", "area_mm2"):
            lo, hi = getattr(a, fig), getattr(b, fig)
            assert hi > lo if bigger else hi >= lo, (fig, a.words, b.words)


def test_two_ports_cost_more_area_than_one():
    """At every table point a 1r1w macro is larger than a 1rw one."""
    table = load_sram()
    one, two = table.grid["1rw"]["area_mm2"], table.grid["1r1w"]["area_mm2"]
    assert all(b > a for r1, r2 in zip(one, two, strict=True) for a, b in zip(r1, r2, strict=True))


def test_core_buffers_are_the_elaborated_cores():
    """Each buffer the energy model prices is a memory of that shape and
    ports in the elaborated default-design core and dense core."""
    from kaleido.synth.core import core_design
    from kaleido.tb.core_buffers import memories

    for design, key in (("kaleido", "default"), ("dense", "dense")):
        mems = {m["path"]: m for m in memories(core_design(key))}
        for role, (inst, words, width, rd, wr) in CORE_BUFFERS[design].items():
            m = mems[inst]
            assert (m["depth"], m["width"], m["read_ports"], m["write_ports"]) == (words, width, rd, wr), role


@pytest.mark.parametrize("case", list(CASES))
def test_traffic_sums_to_the_events(case):
    """Per stage and design the buffers' bytes are the events' SRAM bytes."""
    cfg, result, pv = stubs(case)
    events = attention_events(*head(), GRID, SPLIT, cfg, result, pv)
    traffic = buffer_traffic(*head(), GRID, SPLIT, cfg, result, pv)
    for stage, designs in events.items():
        for design, ev in designs.items():
            rw = traffic[stage][design].values()
            assert sum(r for r, _ in rw) == ev["sram_read_byte"], (stage, design)
            assert sum(w for _, w in rw) == ev["sram_write_byte"], (stage, design)


def test_paper_case_traffic_by_hand():
    """The paper 2x2 case (tb/test_energy_model.py's hand counts): Q K^T
    reads 72 operand bytes (the sorted memories) and 96 drains x 4 B of S,
    and writes Q and K (20 B each) into the two copies (80 B; the dense
    banks 40 B); the scheduling stage (dispatch) reads 48 B from the copies
    and 54 from the unit memories, writes 54 into each of the unit and
    sorted memories; P V reads 96 operand
    bytes, P of the 2 rows and V of the 2 columns half each, and 64 drains
    of O; dense P V 24 beats x 2 bytes of P and of V; the softmax reads S
    twice (128 B), O (80 B), writes P (16 B) and scaled O (20 B)."""
    cfg, result, pv = stubs("paper-2x2")
    t = buffer_traffic(*head(), GRID, SPLIT, cfg, result, pv)
    assert t["qk"]["kaleido"] == {"qk_operands": [72, 0], "qk_copies": [0, 80], "s_acc": [384, 384]}
    assert t["qk"]["dense"] == {"qk_operands": [80, 40], "s_acc": [192, 192]}
    assert t["dispatch"]["kaleido"] == {"qk_copies": [48, 0], "unit_memory": [54, 54], "qk_operands": [0, 54]}
    assert t["pv"]["kaleido"] == {"p_tile": [48, 0], "v_tile": [48, 0], "o_acc": [256, 256]}
    assert t["pv"]["dense"] == {"p_tile": [48, 0], "v_tile": [48, 0], "o_acc": [256, 256]}
    assert t["softmax"]["kaleido"] == {"s_acc": [128, 0], "p_tile": [0, 16], "o_acc": [80, 20]}


def test_sized_energy_by_hand():
    """The paper case's Q K^T under the sized model: the non-SRAM events at
    the document's energies (tb/test_energy_model.py), the operand bytes at
    the 16 x 1204 sorted memory's read per byte (ten 120.4-bit macros of
    240.8 bytes, each priced as the table's smallest, 1 KB, between its
    64- and 128-bit rows), Q and K at the 576 x 128 copy's write per byte,
    S at the 1024 x 23 bank's (the default 4 banks)."""
    cfg, result, pv = stubs("paper-2x2")
    got = attention_energy(*head(), GRID, SPLIT, cfg, result, None, pv, sram_model="sized")
    u = math.log2(120.4 / 64)
    operand = 10 * 0.4303 ** (1 - u) * 0.8763**u * 0.7273 / (1204 / 8)  # pJ per byte of a 1204-bit word
    f = math.log(9216 / 4096) / math.log(4)
    copy_write = 3.392 ** (1 - f) * 5.105**f * 0.7273 / 16
    w = math.log2(23 / 16)
    c = math.log(1024 * 23 / 8 / 1024) / math.log(4)  # 2,944 bytes between the 1 KB and 4 KB columns
    s_read = (0.3857 ** (1 - c) * 1.0**c) ** (1 - w) * (0.3455 ** (1 - c) * 1.126**c) ** w * 0.7273 / (23 / 8)
    s_write = (0.3244 ** (1 - c) * 0.6141**c) ** (1 - w) * (0.5354 ** (1 - c) * 0.9039**c) ** w * 0.7273 / (23 / 8)
    # 96 x mul_4x8, 232 x add_20, 480 x acc_write, 763 x reg_byte (test_paper_qk_energy_in_figures)
    logic = 96 * PJ["mul_4x8"] + 232 * PJ["add_20"] + 480 * PJ["acc_write"] + 763 * PJ["reg_byte"]
    want = logic + 72 * operand + 80 * copy_write + 384 * (s_read + s_write)
    assert got["by_stage"]["qk"]["kaleido"] == pytest.approx(want, rel=1e-9)
    assert got["by_kind"]["sram_read_byte"]["kaleido"] > 0
    flat = attention_energy(*head(), GRID, SPLIT, cfg, result, None, pv)
    assert got["sram"]["flat"] == flat["sram"]["flat"] == {k: flat[k] for k in got["sram"]["flat"]}
    assert got["sram"]["sized"] == {k: got[k] for k in got["sram"]["sized"]}
    assert got["sram"]["buffers"]["kaleido"]["qk_operands"]["read_pj_per_byte"] == pytest.approx(operand, rel=1e-9)
    with pytest.raises(ValueError, match="sram_model must be one of \\['flat', 'sized'\\], not 'cacti'"):
        attention_energy(*head(), GRID, SPLIT, cfg, result, None, pv, sram_model="cacti")


def test_core_area_sized_by_hand():
    """Logic at 28.88 M transistors/mm^2 x 0.7, an S bank and a V tile at
    their macros' areas (the flat count: bits x 0.07 / 0.75 um^2)."""
    entry = {
        "transistors": 2_021_600,  # 0.1 mm^2
        "buffers": {
            "s": {"words": 256, "width": 23, "read_ports": 1, "write_ports": 1},
            "v": {"words": 64, "width": 1024, "read_ports": 1, "write_ports": 1},
        },
    }
    got = core_area_sized(entry)
    w = math.log2(23 / 16)
    s = 0.001975 ** (1 - w) * 0.0017**w * 0.9906
    v = 8 * 0.002928 * 0.9906
    assert got["logic"] == pytest.approx(0.1, rel=1e-12)
    assert (got["buffers"], got["total"]) == pytest.approx((s + v, 0.1 + s + v), rel=1e-12)
    assert got["by_buffer"]["v"]["macros"] == 8


def test_efficiency_core_area_both_ways():
    """efficiency's core area ratio: the report's flat areas, or each
    core's buffers as macros (here one 1 KB 64-bit 1r1w macro in the Kaleido
    core, two in the dense core) beside the same logic."""
    fmax = dict.fromkeys(("kaleido_array", "detector", "scheduler", "matcher", "pv_dispatcher"), 100.0)
    fmax.update(tile_softmax=100.0, output_scaler=100.0, o_accumulator=100.0, baseline_array=100.0)
    fmax.update(dispatched_array=100.0, pv_tile=100.0, dense_pv_tile=100.0)
    tr = {"baseline_array": 1000, "kaleido_array": 2000, "detector": 100, "scheduler": 200, "matcher": 50}
    designs = {n: {"fmax_mhz": f, "transistors": tr.get(n, 10)} for n, f in fmax.items()}
    buf = {"words": 128, "width": 64, "read_ports": 1, "write_ports": 1}
    cores = {
        "dense": {"transistors": 9000, "area_mm2": {"total": 0.2}},
        "one_array": {"transistors": 10000, "area_mm2": {"total": 0.3}},
    }
    bare = SynthFigures(designs, cores, {"report": "made-up", "stale": False, "why": "test"})
    cores = {k: dict(v) for k, v in cores.items()}
    cores["one_array"]["buffers"] = {"a": buf}
    cores["dense"]["buffers"] = {"a": buf, "b": buf}
    synth = dataclasses.replace(bare, core=cores)
    macro = 0.001827 * 0.9906
    logic = {k: cores[k]["transistors"] / (28.88e6 * 0.7) for k in ("one_array", "dense")}
    sized = (logic["one_array"] + macro) / (logic["dense"] + 2 * macro)
    flat = efficiency("one_array", 1.5, None, synth)
    assert flat["area_ratio"]["core"] == pytest.approx(0.3 / 0.2)
    assert flat["core_sram"]["sized"]["ratio"] == pytest.approx(sized, rel=1e-9)
    eff = efficiency("one_array", 1.5, None, synth, sram_model="sized")
    assert eff["area_ratio"]["core"] == pytest.approx(sized, rel=1e-9)
    assert eff["sram_model"] == "sized"
    with pytest.raises(ValueError, match="needs the cores' buffers"):
        efficiency("one_array", 1.5, None, bare, sram_model="sized")
    with pytest.raises(ValueError, match="sram_model must be 'flat' or 'sized', not 'x'"):
        efficiency("one_array", 1.5, None, synth, sram_model="x")
