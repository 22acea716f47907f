"""The whole-core synthesis flow (``kaleido.synth.core``, issue 13 item 5):
buffers leave the logic as black-box macros with their bits counted, small
memories and case tables stay logic, and the area and overhead arithmetic.
The cores themselves run behind ``make synth`` (tens of minutes)."""

import json

import pytest
from amaranth import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from kaleido.synth.core import MACRO_MIN_WORDS, classify_memories, core_report, core_table, synth_core
from kaleido.tb.synth_util import workdir

pytestmark = pytest.mark.toolchain


class TwoMemories(wiring.Component):
    """A 64-word buffer (a macro) written and read through counters, an
    8-word register file (logic) and an adder on their outputs."""

    def __init__(self):
        super().__init__({"din": In(16), "we": In(1), "dout": Out(17)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.big = big = Memory(shape=16, depth=64, init=[])
        m.submodules.small = small = Memory(shape=8, depth=8, init=[])
        waddr, raddr = Signal(6), Signal(6)
        bw, br = big.write_port(), big.read_port()
        sw, sr = small.write_port(), small.read_port(domain="comb")
        m.d.sync += [raddr.eq(raddr + 3)]
        with m.If(self.we):
            m.d.sync += waddr.eq(waddr + 1)
        m.d.comb += [
            bw.addr.eq(waddr),
            bw.data.eq(self.din),
            bw.en.eq(self.we),
            br.addr.eq(raddr),
            sw.addr.eq(waddr[:3]),
            sw.data.eq(self.din[:8]),
            sw.en.eq(self.we),
            sr.addr.eq(raddr[:3]),
            self.dout.eq(br.data + sr.data),
        ]
        return m


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
            "\\comb": (128, 15, 2, 0b01, "\\comb"),
            "$table": (256, 17, 1, 0, "$flatten\\x.$auto$proc_rom.cc:155:do_switch$1"),
        }
    )
    buffers, logic = classify_memories(json.loads(json.dumps(mems)), "core")
    assert sorted(buffers) == ["\\buf", "\\comb"]
    assert sorted(logic) == ["$table", "\\fifo"]
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
    }


def test_core_report_overheads():
    rep = core_report({"kaleido": _entry(1_200_000, 1_000_000), "dense": _entry(1_000_000, 900_000)})
    k, d = rep["kaleido"]["area_mm2"], rep["dense"]["area_mm2"]
    # 28.88 MTr/mm^2 at 70 % utilisation; 0.07 um^2 cells at 75 % efficiency
    assert d["logic"] == pytest.approx(1_000_000 / (28.88e6 * 0.7))
    assert k["buffers"] == pytest.approx(1_000_000 * 0.07 / 0.75 * 1e-6)
    o = rep["overhead"]
    assert o["logic"] == pytest.approx(0.2)
    assert o["total"] == pytest.approx((k["total"] - d["total"]) / d["total"])
    assert o["at_paper_buffers"] == pytest.approx((k["logic"] - d["logic"]) / (d["logic"] + 68.4 / 16384))
    assert o["paper"] == pytest.approx(0.079)
    assert "at_paper_buffers_calibrated" not in o
    # calibrated: the paper's dense array area (25.1 - 0.066 x 94.8 mm^2 over
    # 16,384 arrays) over our dense array's transistors
    pair = {"kaleido": _entry(1_200_000, 1), "dense": _entry(1_000_000, 1)}
    cal = core_report(pair, {"baseline_array": {"transistors": 100_000}})
    f = (25.1 - 0.066 * 94.8) / 16384 / 100_000
    per_array = 68.4 / 16384
    assert cal["overhead"]["at_paper_buffers_calibrated"] == pytest.approx(200_000 * f / (1_000_000 * f + per_array))
    assert any("logic only | 20.0%" in line for line in core_table({"core": rep}))


def test_core_report_prices_the_small_array_core_beside_the_default():
    """The optional 16 1x1-array core gets its own overheads over the same
    dense core, and the table a column for it."""
    entries = {
        "kaleido": _entry(1_200_000, 1_000_000),
        "dense": _entry(1_000_000, 900_000),
        "kaleido_1x1": _entry(1_500_000, 1_000_000),
    }
    rep = core_report(entries, {"baseline_array": {"transistors": 100_000}})
    assert rep["overhead"]["logic"] == pytest.approx(0.2)
    assert rep["overhead_kaleido_1x1"]["logic"] == pytest.approx(0.5)
    assert "at_paper_buffers_calibrated" in rep["overhead_kaleido_1x1"]
    table = core_table({"core": rep})
    assert "| logic only | 20.0% | 50.0% |" in table
    assert any(line.startswith("| kaleido_1x1 | ") for line in table)
    # without the default pair there is no comparison, whatever else ran
    assert "error" in core_report({"kaleido_1x1": entries["kaleido_1x1"], "dense": entries["dense"]})


def test_core_design_puts_the_small_core_on_sixteen_arrays(monkeypatch):
    import kaleido.hdl.core
    from kaleido.config import CoreConfig, KaleidoConfig
    from kaleido.synth.core import core_design

    built = []
    monkeypatch.setattr(kaleido.hdl.core, "KaleidoAttentionCore", lambda cfg, core, **kw: built.append((cfg, kw)))
    for variant in ("kaleido_1x1", "kaleido", "dense"):
        core_design(variant, KaleidoConfig.one_array(), CoreConfig())
    (small, _), (one, _), (dense, kw) = built
    assert small.sub_arrays == (1, 1) and small.n_arrays == 16
    assert one.sub_arrays is None and dense.sub_arrays is None and kw == {"variant": "dense"}


def test_core_report_names_a_missing_core():
    rep = core_report({"kaleido": _entry(1_200_000, 1_000_000)})
    assert "overhead" not in rep and "['dense']" in rep["error"]
    assert any("incomplete" in line for line in core_table({"core": rep}))


class _Picked(Exception):
    pass


def test_make_synth_runs_the_cores_only_on_the_whole_run(monkeypatch):
    """`make synth` runs both cores; `--designs` alone (a block or two, as
    the flow's own tests do) runs none of them; `--cores` picks."""
    from kaleido.synth import flow

    def fake(names, config, root, **kw):
        raise _Picked(kw["cores"])

    monkeypatch.setattr(flow, "run_flow", fake)
    for argv, cores in (
        ([], ("kaleido", "dense")),
        (["--designs", "baseline_pe"], ()),
        (["--designs", "baseline_pe", "--cores", "dense"], ("dense",)),
        (["--cores="], ()),
        (["--cores", "kaleido,dense,kaleido_1x1"], ("kaleido", "dense", "kaleido_1x1")),
    ):
        with pytest.raises(_Picked) as picked:
            flow.main(argv + ["--root", "build/test_synth/picked"])
        assert picked.value.args[0] == cores, argv
    with pytest.raises(SystemExit, match="unknown core 'sparse'"):
        flow.main(["--cores", "sparse"])
