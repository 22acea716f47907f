"""The whole-core synthesis flow (``kaleido.synth.core``, issue 13 item 5):
buffers leave the logic as black-box macros with their bits counted, small
memories and case tables stay logic, and the area and overhead arithmetic.
The cores themselves run behind ``make synth`` (tens of minutes)."""

import json
import shutil

import pytest
from amaranth import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from kaleido.synth.core import (
    MACRO_MIN_WORDS,
    REGFILE_MIN_WORDS,
    classify_memories,
    core_report,
    core_table,
    synth_core,
)
from kaleido.tb.synth_util import Leaf, TwoLeaves, TwoMemories, workdir

pytestmark = pytest.mark.toolchain


def test_a_buffer_becomes_a_macro_and_its_address_logic_stays(tmp_path):
    entry = synth_core("two", TwoMemories(), root=workdir(tmp_path, "synth_core"))
    assert entry["buffers"] == {
        "big": {"words": 64, "width": 16, "bits": 1024, "read_ports": 1, "write_ports": 1, "read": "sync"}
    }
    assert entry["buffer_bits"] == 1024 and entry["logic_memory_bits"] == 64
    # the small memory's 64 bits are flip-flops, and both 6-bit address
    # counters survive (the macro's inputs are kept, not optimised away)
    assert entry["flip_flops"] >= 64 + 6 + 6
    assert entry["flip_flops"] < 1024  # the buffer's bits are not in the logic
    assert entry["transistors"] > 16 * entry["flip_flops"]


def _mems(cells: dict) -> dict:
    """A Yosys ``write_json`` document of module ``core`` with ``cells``:
    ``{name: (words, width, reads, clocked mask, memid)}``."""
    out = {}
    for name, (words, width, reads, clocked, memid) in cells.items():
        out[name] = {
            "type": "$mem_v2",
            "parameters": {
                "SIZE": format(words, "032b"),
                "WIDTH": format(width, "032b"),
                "RD_PORTS": format(reads, "032b"),
                "WR_PORTS": "00000000000000000000000000000001",
                "RD_CLK_ENABLE": format(clocked, f"0{max(reads, 1)}b"),
                "MEMID": memid,
            },
        }
    return {"modules": {"core": {"cells": out}}}


def test_classify_memories():
    mems = _mems(
        {
            "\\buf": (MACRO_MIN_WORDS, 8, 1, 1, "\\buf"),
            "\\fifo": (MACRO_MIN_WORDS - 1, 8, 1, 1, "\\fifo"),
            "\\regfile": (REGFILE_MIN_WORDS, 8, 1, 1, "\\regfile"),
            "\\small": (REGFILE_MIN_WORDS - 1, 8, 1, 1, "\\small"),
            "\\async": (MACRO_MIN_WORDS - 1, 8, 1, 0, "\\async"),
            "\\comb": (128, 15, 2, 0b01, "\\comb"),
            "$table": (256, 17, 1, 0, "$flatten\\x.$auto$proc_rom.cc:155:do_switch$1"),
        }
    )
    buffers, logic = classify_memories(json.loads(json.dumps(mems)), "core")
    # a registered read of REGFILE_MIN_WORDS words is a register-file macro; an
    # asynchronous read needs MACRO_MIN_WORDS
    assert sorted(buffers) == ["\\buf", "\\comb", "\\fifo", "\\regfile"]
    assert sorted(logic) == ["$table", "\\async", "\\small"]
    assert buffers["\\buf"]["read"] == "sync" and buffers["\\comb"]["read"] == "async"
    assert buffers["\\comb"]["bits"] == 128 * 15
    with pytest.raises(ValueError, match="'top'"):
        classify_memories(mems, "top")


def _entry(transistors: int, bits: int) -> dict:
    return {
        "cells": 1,
        "flip_flops": 1,
        "transistors": transistors,
        "gate_depth": 1,
        "buffers": {},
        "buffer_bits": bits,
        "method": "hierarchical",
    }


def test_core_report_overheads():
    rep = core_report({"one_array": _entry(1_200_000, 1_000_000), "dense": _entry(1_000_000, 900_000)})
    k, d = rep["one_array"]["area_mm2"], rep["dense"]["area_mm2"]
    # 28.88 MTr/mm^2 at 70 % utilisation; 0.07 um^2 cells at 75 % efficiency
    assert d["logic"] == pytest.approx(1_000_000 / (28.88e6 * 0.7))
    assert k["buffers"] == pytest.approx(1_000_000 * 0.07 / 0.75 * 1e-6)
    o = rep["overhead_one_array"]
    assert o["logic"] == pytest.approx(0.2)
    assert o["total"] == pytest.approx((k["total"] - d["total"]) / d["total"])
    assert o["at_paper_buffers"] == pytest.approx((k["logic"] - d["logic"]) / (d["logic"] + 68.4 / 16384))
    assert o["paper"] == pytest.approx(0.079)
    assert "at_paper_buffers_calibrated" not in o
    assert rep["missing"] == ["default", "paper"]
    # calibrated: the paper's dense array area (25.1 - 0.066 x 94.8 mm^2 over
    # 16,384 arrays) over our dense array's transistors
    pair = {"one_array": _entry(1_200_000, 1), "dense": _entry(1_000_000, 1)}
    cal = core_report(pair, {"baseline_array": {"transistors": 100_000}})
    f = (25.1 - 0.066 * 94.8) / 16384 / 100_000
    per_array = 68.4 / 16384
    assert cal["overhead_one_array"]["at_paper_buffers_calibrated"] == pytest.approx(
        200_000 * f / (1_000_000 * f + per_array)
    )
    assert any("logic only | 20.0%" in line for line in core_table({"core": rep}))


def test_core_report_prices_every_design_against_the_same_dense_core():
    """Each Kaleido core gets its own overheads over the dense core, and
    the table a column for it, in DESIGNS order."""
    entries = {
        "one_array": _entry(1_200_000, 1_000_000),
        "dense": _entry(1_000_000, 900_000),
        "default": _entry(1_500_000, 1_000_000),
    }
    rep = core_report(entries, {"baseline_array": {"transistors": 100_000}})
    assert rep["overhead_one_array"]["logic"] == pytest.approx(0.2)
    assert rep["overhead_default"]["logic"] == pytest.approx(0.5)
    assert "at_paper_buffers_calibrated" in rep["overhead_default"]
    table = core_table({"core": rep})
    assert "| logic only | 50.0% | 20.0% |" in table
    assert any(line.startswith("| default | hierarchical | ") for line in table)
    # without the dense core there is no comparison, whatever else ran
    assert "error" in core_report({"default": entries["default"], "one_array": entries["one_array"]})


def test_core_report_says_how_a_combinationally_read_buffer_is_counted():
    e = _entry(1_000, 2_048)
    e["buffers"] = {
        "pv.s": {"words": 64, "width": 16, "bits": 1024, "read": "async"},
        "engine.q": {"words": 64, "width": 16, "bits": 1024, "read": "sync"},
    }
    rep = core_report({"one_array": e, "dense": _entry(1_000, 0)})
    assert rep["one_array"]["async_read_buffers"] == ["pv.s"] and rep["one_array"]["async_read_bits"] == 1024
    assert "registered read" in rep["assumptions"]["async_read_buffers"]
    # the buffer's bits are SRAM, not logic, whichever way it is read
    assert rep["one_array"]["area_mm2"]["buffers"] == pytest.approx(2_048 * 0.07 / 0.75 * 1e-6)
    assert any(line.startswith("Buffers: a buffer read combinationally") for line in core_table({"core": rep}))


def test_core_design_builds_each_named_design(monkeypatch):
    import kaleido.hdl.core
    from kaleido.synth.core import CORE_VARIANTS, core_design

    built = []
    monkeypatch.setattr(kaleido.hdl.core, "KaleidoAttentionCore", lambda cfg, core, **kw: built.append((cfg, kw)))
    for key in CORE_VARIANTS:
        core_design(key)
    (default, kd), (one, ko), (paper, kp), (dense, kw) = built
    assert default.sub_arrays == (1, 1) and default.n_arrays == 16 and default.pv_pairs
    assert one.sub_arrays is None and one.accumulators == 4 and paper.accumulators == 3
    assert default.design == "default" and one.design == "one_array" and paper.design == "paper"
    assert [k["variant"] for k in (kd, ko, kp, kw)] == ["kaleido", "kaleido", "kaleido", "dense"]
    with pytest.raises(ValueError, match="unknown core 'kaleido'"):
        core_design("kaleido")


def test_core_report_names_a_missing_core():
    rep = core_report({"one_array": _entry(1_200_000, 1_000_000)})
    assert "overhead_one_array" not in rep and "'dense'" in rep["error"]
    assert any("incomplete" in line for line in core_table({"core": rep}))


class _Picked(Exception):
    pass


def test_make_synth_runs_the_cores_only_on_the_whole_run(monkeypatch):
    """`make synth` runs every core; `--designs` alone (a block or two, as
    the flow's own tests do) runs none of them; `--cores` picks; `--flatten`
    moves a core to the flattened flow."""
    from kaleido.synth import flow

    def fake(names, root, **kw):
        raise _Picked(kw["cores"], kw["flatten"])

    monkeypatch.setattr(flow, "run_flow", fake)
    for argv, cores, flatten in (
        ([], ("default", "one_array", "paper", "dense"), ()),
        (["--flatten=dense"], ("default", "one_array", "paper"), ("dense",)),
        (["--designs", "baseline_pe"], (), ()),
        (["--designs", "baseline_pe", "--cores", "dense"], ("dense",), ()),
        (["--designs", "baseline_pe", "--cores", "one_array"], ("one_array",), ()),
        (["--cores="], (), ()),
        (["--cores", "default,dense", "--flatten", "dense"], ("default",), ("dense",)),
    ):
        with pytest.raises(_Picked) as picked:
            flow.main(argv + ["--root", "build/test_synth/picked"])
        assert picked.value.args == (cores, flatten), argv
    with pytest.raises(SystemExit, match="unknown core 'sparse'"):
        flow.main(["--cores", "sparse"])


def _verilog(design) -> str:
    from amaranth.back import verilog

    return verilog.convert(design, name="two", emit_src=False)


def test_equal_modules_hash_equal_and_a_changed_one_does_not():
    from kaleido.synth.hier import instance_counts, module_hashes, module_source, split_modules, top_module

    mods = split_modules(_verilog(TwoLeaves()))
    assert sorted(mods) == ["\\two.left", "\\two.right", "two"]
    assert top_module(mods) == "two" and instance_counts(mods, "two") == {"two": 1, "\\two.left": 1, "\\two.right": 1}
    h = module_hashes(mods)
    assert h["\\two.left"] == h["\\two.right"] != h["two"]
    changed = module_hashes(split_modules(_verilog(TwoLeaves(extra=1))))
    assert changed["\\two.left"] == h["\\two.left"] and changed["\\two.right"] != h["\\two.right"]
    # a parent's hash covers its children: the top's own text is the same
    assert _verilog(TwoLeaves(extra=1)).split("module")[1] == _verilog(TwoLeaves()).split("module")[1]
    assert changed["two"] != h["two"]
    src = module_source(mods, "two")
    assert (
        src.count("(* blackbox *)") == 2 and "module kaleido_top" in src and "assign" not in src.split("kaleido_top")[0]
    )


def _hier(root: str, texts: dict, jobs: int = 1) -> tuple:
    import concurrent.futures as cf

    from kaleido.synth.core import CoreRun
    from kaleido.synth.hier import Cache

    cache = Cache(f"{root}/cache")
    with cf.ProcessPoolExecutor(jobs) as pool:
        run = CoreRun(tuple(texts), root, pool, cache, verilog=texts)
        out = run.collect()
    return out, cache, run


def test_hierarchical_sum_equals_the_flattened_design_and_the_cache_reuses_modules(tmp_path):
    """Nothing crosses TwoLeaves' module boundaries, so the sum of its
    modules' figures is the flattened design's; a rerun synthesizes
    nothing; a changed leaf re-synthesizes that leaf and the top only."""
    root = workdir(tmp_path, "hier")
    shutil.rmtree(root, ignore_errors=True)  # a relative work dir may outlive tmp_path
    out, cache, run = _hier(root, {"two": _verilog(TwoLeaves())})
    hier = out["entries"]["two"]
    flat = synth_core("flat", TwoLeaves(), root=workdir(tmp_path, "flat"))
    assert hier["method"] == "hierarchical" and (hier["modules"], hier["distinct_modules"]) == (3, 2)
    own = {f["flip_flops"]: f for f in run.jobs.values()}  # the top's 10, each leaf's 9
    assert sorted(own) == [9, 10]
    assert hier["transistors"] == own[10]["transistors"] + 2 * own[9]["transistors"]
    assert hier["cells"] == own[10]["cells"] + 2 * own[9]["cells"]  # the instances themselves not counted
    assert hier["flip_flops"] == flat["flip_flops"] == 9 + 9 + 10
    # by part: each instance's own logic, adding up to the total
    parts = hier["parts"]
    assert sorted(parts) == ["(top)", "left", "right"]
    assert parts["(top)"] == {"instances": 1, "transistors": own[10]["transistors"], "flip_flops": 10}
    assert parts["left"] == parts["right"] == {"instances": 1, "transistors": own[9]["transistors"], "flip_flops": 9}
    assert sum(p["transistors"] for p in parts.values()) == hier["transistors"]
    # ABC maps each module alone: within a few per cent of the flattened design
    assert abs(hier["transistors"] - flat["transistors"]) < 0.05 * flat["transistors"]
    assert (cache.hits, cache.misses) == (0, 2)
    again, cache, _ = _hier(root, {"two": _verilog(TwoLeaves())})
    assert (cache.hits, cache.misses) == (2, 0) and again["entries"]["two"] == hier
    changed, cache, _ = _hier(root, {"two": _verilog(TwoLeaves(extra=1))})
    assert (cache.hits, cache.misses) == (1, 2)  # the unchanged leaf only
    assert changed["entries"]["two"]["flip_flops"] == hier["flip_flops"] + 9


def test_a_failing_module_names_its_core_and_the_other_core_finishes(tmp_path):
    """A module Yosys fails on fails its core (named with the module, the
    tool's exit and log tail); a core without it still gets its figures."""
    import os
    import stat

    from kaleido.synth.flow import tool_path

    fake = tmp_path / "yosys"
    fake.write_text(
        "#!/bin/sh\nif grep -q boom_marker module.v 2>/dev/null; then echo 'fake yosys: boom'; exit 3; fi\n"
        f'exec {tool_path("yosys")} "$@"\n'
    )
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    good = _verilog(TwoLeaves())
    bad = good.replace("endmodule", "  // boom_marker\nendmodule", 1)  # the top module only
    root = workdir(tmp_path, "fail")
    shutil.rmtree(root, ignore_errors=True)
    os.environ["KALEIDO_YOSYS"] = str(fake)
    try:
        out, _, _ = _hier(root, {"good": good, "bad": bad})
    finally:
        del os.environ["KALEIDO_YOSYS"]
    assert sorted(out["entries"]) == ["good"] and out["entries"]["good"]["flip_flops"] == 28
    fail = out["failures"]["core:bad"]
    assert fail["module"] == "two" and fail["returncode"] == 3 and fail["tail"][-1] == "fake yosys: boom"


def test_parts_star_the_indices_so_copies_add_up():
    from kaleido.synth.hier import part_name

    assert part_name("engine.arrays.dispatcher12.matcher") == "engine.arrays.dispatcher*.matcher"
    assert part_name("pv.array.array.core.pe_1_2") == "pv.array.array.core.pe_*_*"
    assert part_name("") == "(top)"


def test_parts_table_keeps_the_big_parts_and_sums_the_rest():
    from kaleido.synth.core import parts_rows

    def core(parts: dict) -> dict:
        return {
            "transistors": sum(t for _, t in parts.values()),
            "parts": {p: {"instances": n, "transistors": t, "flip_flops": 0} for p, (n, t) in parts.items()},
        }

    # bank* is 80 % of the Kaleido core; tiny is 1 % of each core: summed
    cores = {
        "one_array": core({"bank*": (4, 800), "pe_*_*": (16, 190), "tiny": (1, 10)}),
        "dense": core({"bank*": (4, 300), "pe_*_*": (16, 196), "tiny": (1, 4)}),
    }
    lines = parts_rows(cores)
    assert lines[3:] == [
        "| part | one_array | dense |",
        "|---|---|---|",
        "| `bank*` | 800 (4) | 300 (4) |",
        "| `pe_*_*` | 190 (16) | 196 (16) |",
        "| every other part | 10 | 4 |",
        "| **total** | **1,000** | **500** |",
    ]
    assert parts_rows({"dense": {"transistors": 1}}) == []


class IndexedLeaves(wiring.Component):
    """Two :class:`Leaf` instances named ``leaf0`` and ``leaf1``: one part."""

    def __init__(self):
        super().__init__({"a": In(8), "b": In(8), "y": Out(10)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.leaf0 = l0 = Leaf()
        m.submodules.leaf1 = l1 = Leaf()
        m.d.comb += [l0.a.eq(self.a), l0.b.eq(self.b), l1.a.eq(self.b), l1.b.eq(self.a)]
        m.d.sync += self.y.eq(l0.y + l1.y)
        return m


def test_a_parts_instances_add_up():
    from amaranth.back import verilog

    from kaleido.synth.hier import split_modules, sum_hierarchy

    mods = split_modules(verilog.convert(IndexedLeaves(), name="two", emit_src=False))
    own = {"two": 100, "\\two.leaf0": 7, "\\two.leaf1": 11}
    figures = {
        n: {"cells": 1, "flip_flops": 1, "transistors": t, "logic_memory_bits": 0, "gate_depth": 1, "buffers": {}}
        for n, t in own.items()
    }
    parts = sum_hierarchy(mods, "two", figures)["parts"]
    assert parts == {
        "(top)": {"instances": 1, "transistors": 100, "flip_flops": 1},
        "leaf*": {"instances": 2, "transistors": 18, "flip_flops": 2},
    }
