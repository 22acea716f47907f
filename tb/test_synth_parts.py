"""A block's Fmax by parts (synth/parts.py; docs/SYNTH.md "Fmax by
parts"): which parts a design has, that each part's wrapper and stubs
register exactly the ports' bits, and that the block takes its slowest
part's Fmax."""

from __future__ import annotations

import os
import shutil

import pytest
from amaranth import Module
from amaranth.back import verilog
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from kaleido.synth import flow
from kaleido.synth.hier import Cache, split_modules
from kaleido.synth.parts import SINK_FAN_IN, parts, ports, register_stub, wrapper
from kaleido.tb.synth_util import Leaf, TwoLeaves, TwoMemories, workdir


class SameInputs(wiring.Component):
    """Two :class:`Leaf`\\ s on the same inputs, their sums registered: the
    stubs of the two see the same bits."""

    def __init__(self):
        super().__init__({"a": In(8), "b": In(8), "y": Out(10)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.left = left = Leaf()
        m.submodules.right = right = Leaf()
        m.d.comb += [left.a.eq(self.a), left.b.eq(self.b), right.a.eq(self.a), right.b.eq(self.b)]
        m.d.sync += self.y.eq(left.y + right.y)
        return m


class Doubler(wiring.Component):
    """A child without a clock: its output is its input, doubled."""

    def __init__(self):
        super().__init__({"a": In(8), "y": Out(9)})

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.y.eq(self.a * 2)
        return m


class WithDoubler(wiring.Component):
    """A :class:`Leaf` and a :class:`Doubler` on its sum, registered."""

    def __init__(self):
        super().__init__({"a": In(8), "b": In(8), "y": Out(10)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.leaf = leaf = Leaf()
        m.submodules.double = double = Doubler()
        m.d.comb += [leaf.a.eq(self.a), leaf.b.eq(self.b), double.a.eq(leaf.y[:8])]
        m.d.sync += self.y.eq(double.y)
        return m


def _text(design) -> str:
    return verilog.convert(design, name="two", emit_src=False)


def test_equal_modules_are_one_part_and_a_changed_one_its_own():
    assert [p.name for p in parts(_text(TwoLeaves()))] == ["two", "\\two.left"]
    assert [p.name for p in parts(_text(TwoLeaves(extra=1)))] == ["two", "\\two.left", "\\two.right"]


def test_a_module_without_a_clock_stays_in_its_parent():
    found = parts(_text(WithDoubler()))
    assert [p.name for p in found] == ["two", "\\two.leaf"]
    top = found[0].source
    assert "module \\two.double " in top  # whole
    assert "(* keep *) reg [3:0] sink;" in top  # the leaf, stubbed


def test_ports_are_read_with_their_widths():
    mods = split_modules(_text(TwoLeaves()))
    got = {(p.direction, p.name, p.width) for p in ports(mods["\\two.left"])}
    assert got == {("input", "a", 8), ("input", "b", 8), ("output", "y", 9), ("input", "clk", 1), ("input", "rst", 1)}
    assert wrapper(mods["\\two.left"])[0].startswith("module wrapped(")
    assert register_stub(mods["\\two.left"])[0] == mods["\\two.left"].lines[0]  # the child's own name and ports


def test_a_module_without_a_clock_is_named():
    mods = split_modules("module comb(a, y);\n  input a;\n  output y;\n  assign y = a;\nendmodule\n")
    with pytest.raises(ValueError, match="module comb has no clk port"):
        ports(mods["comb"])


def _flip_flops(work: str, source: str) -> int:
    from kaleido.synth.tools import flip_flop_count, parse_stat_json, read_commands, run_tool, tool_path

    os.makedirs(work, exist_ok=True)
    with open(os.path.join(work, "part.v"), "w") as f:
        f.write(source)
    script = f"{read_commands('part.v', 'wrapped')} synth -flatten -top wrapped; tee -o stat.json stat -json"
    run_tool([tool_path("yosys"), "-p", script], work, "yosys.log")
    return flip_flop_count(parse_stat_json(open(os.path.join(work, "stat.json")).read(), "wrapped"))


@pytest.mark.toolchain
def test_every_port_bit_is_registered_once_and_stubs_are_not_merged(tmp_path):
    """A leaf's part: its 9 flip-flops, 16 input and 9 output bits of
    wrapper. The top's part: its own 10, the wrapper's 16 + 10, and each
    stub a sink bit per four input bits and its 9 output bits, two stubs
    on the same inputs kept apart (the parent's fan-out to both stays)."""
    root = workdir(tmp_path, "parts")
    shutil.rmtree(root, ignore_errors=True)
    top, leaf = parts(_text(SameInputs()))
    assert leaf.name == "\\two.left"
    assert _flip_flops(os.path.join(root, "leaf"), leaf.source) == 9 + 16 + 9
    assert _flip_flops(os.path.join(root, "top"), top.source) == 10 + (16 + 10) + 2 * (16 // SINK_FAN_IN + 9)


def test_the_block_takes_its_slowest_part_and_a_shared_part_is_routed_once(monkeypatch, tmp_path):
    speeds = iter([120.0, 80.0, 95.0, 130.0])
    routed = []

    def fake(work, source):
        routed.append(source)
        return {"fmax_mhz": next(speeds), "critical_path": {"delay_ns": 1.0}, "seconds": {"ecp5": 1.0, "nextpnr": 2.0}}

    monkeypatch.setattr(flow, "_fmax_flow", fake)
    shutil.rmtree(workdir(tmp_path, "cache"), ignore_errors=True)  # a relative work dir may outlive tmp_path
    cache = Cache(workdir(tmp_path, "cache"))
    got = flow._fmax_by_parts(workdir(tmp_path, "slowest"), _text(TwoLeaves(extra=1)), cache)
    assert got["fmax_mhz"] == 80.0 and got["critical_path"]["part"] == "left"
    assert got["fmax_parts"] == {"top": 120.0, "left": 80.0, "right": 95.0}
    assert got["fmax_method"] == "parts" and got["seconds"] == {"ecp5": 3.0, "nextpnr": 6.0}
    # another design with the same left leaf: only its own top is routed
    again = flow._fmax_by_parts(workdir(tmp_path, "again"), _text(TwoLeaves()), cache)
    assert len(routed) == 4 and again["fmax_parts"] == {"top": 130.0, "left": 80.0}
    assert again["seconds"]["nextpnr"] == 2.0


@pytest.mark.toolchain
def test_parts_place_and_route(tmp_path):
    """Every part of a two-level design through ECP5 place and route."""
    got = flow._fmax_by_parts(workdir(tmp_path, "pnr"), _text(TwoLeaves(extra=1)))
    assert set(got["fmax_parts"]) == {"top", "left", "right"}
    assert got["fmax_mhz"] == min(got["fmax_parts"].values()) > 50


@pytest.mark.toolchain
def test_a_macro_block_counts_its_buffer_as_a_macro_and_a_plain_one_as_flip_flops(tmp_path):
    """``MACRO_BLOCKS``' flow (``macros``): the 64-word buffer is a macro,
    out of the flip-flops; without it the whole memory is flip-flops. Without
    ``ice40`` the iCE40 figures are absent, and the table shows them as -."""
    text = verilog.convert(TwoMemories(), name="two", emit_src=False)
    got = {}
    for macros in (True, False):
        entry = flow.synth_design(
            "two", "two", None, workdir(tmp_path, f"m{macros}"), fmax=False, text=text, ice40=False, macros=macros
        )
        got[macros] = entry
    assert got[True]["buffer_bits"] == 1024 and got[True]["flip_flops"] < 1024
    assert got[False]["flip_flops"] >= 1024 + 64 and "buffers" not in got[False]
    assert got[True]["luts"] is None and got[True]["carries"] is None
    line = flow._table({"designs": {"two": got[True]}})[-1]
    assert line.endswith("| - | - | - |")
