"""Area of a whole chip at the paper's denominator (issue 15, item 3; spec
sec. 13): the paper's configuration (16,384 4x4 arrays, a dispatcher per 8
arrays, 96 MB of SRAM) built from this project's synthesized blocks and an
SRAM bit-cell model (``kaleido/data/chip_16nm.toml``), against a dense chip
with the same buffers and dense arrays. Two ways to turn transistors into
area:

* ``absolute``: a 16 nm logic density and placement utilisation;
* ``calibrated``: our Kaleido/dense transistor ratios applied to the dense
  arrays' area the paper's table implies (its Kaleido arrays minus its
  6.6 % overhead), so only ratios of our synthesis enter.

The softmax unit (the paper's vector unit) is the same in both chips and
not in the paper's table: left out of both. Pure arithmetic on a report's
numbers: :mod:`kaleido.synth.chip` adds it to ``make synth``'s report and
:mod:`kaleido.efficiency` reads it per design.
"""

from __future__ import annotations

import pathlib
import tomllib

__all__ = ["DATA", "NEEDED", "chip_estimate", "core_area_sized"]

DATA = pathlib.Path(__file__).resolve().parent / "data" / "chip_16nm.toml"
#: the synthesized designs the estimate reads
NEEDED = ("baseline_array", "kaleido_array", "detector", "scheduler", "matcher", "pv_dispatcher")


def _positive(data: dict, section: str, key: str) -> float:
    value = data.get(section, {}).get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ValueError(f"{DATA.name}: {section}.{key} must be a positive number, not {value!r}")
    return float(value)


def _chip(arrays_mm2: float, dense_arrays_mm2: float, dispatch_mm2: float, buffers_mm2: float) -> dict:
    """A Kaleido chip and the dense chip with the same buffers: their parts,
    totals and the Kaleido chip's overhead over the dense one."""
    kaleido = arrays_mm2 + dispatch_mm2 + buffers_mm2
    dense = dense_arrays_mm2 + buffers_mm2
    return {
        "kaleido_mm2": {
            "arrays": arrays_mm2,
            "dispatchers": dispatch_mm2,
            "buffers": buffers_mm2,
            "total": kaleido,
        },
        "dense_mm2": {"arrays": dense_arrays_mm2, "buffers": buffers_mm2, "total": dense},
        "overhead": {
            "arrays": (arrays_mm2 - dense_arrays_mm2) / dense,
            "dispatchers": dispatch_mm2 / dense,
            "total": (kaleido - dense) / dense,
        },
    }


def _paper_chip(paper: dict) -> dict:
    """The paper's table 2, as the data file states it."""
    return {
        "kaleido_mm2": {
            "arrays": paper["arrays_mm2"],
            "dispatchers": paper["dispatcher_mm2"],
            "buffers": paper["buffers_mm2"],
            "total": paper["total_mm2"],
        },
        "overhead": {
            "arrays": paper["arrays_overhead"],
            "dispatchers": paper["dispatcher_overhead"],
            "total": paper["arrays_overhead"] + paper["dispatcher_overhead"],
        },
    }


def _chip_transistors(data: dict, tr: dict) -> tuple[int, int, dict, int]:
    """The paper's configuration in our blocks' transistors: arrays,
    dispatchers, ``{kaleido, dense}`` arrays' and the dispatchers' total."""
    arrays = int(_positive(data, "paper", "arrays"))
    disp = data["dispatcher"]
    n_disp = arrays // int(_positive(data, "dispatcher", "arrays_per_dispatcher"))
    per_dispatcher = sum(int(disp[b]) * tr[b] for b in ("detector", "scheduler", "matcher"))
    t_arrays = {"kaleido": arrays * tr["kaleido_array"], "dense": arrays * tr["baseline_array"]}
    t_dispatch = n_disp * per_dispatcher + arrays * int(disp["pv_dispatcher_per_array"]) * tr["pv_dispatcher"]
    return arrays, n_disp, t_arrays, t_dispatch


def chip_estimate(designs: dict, data_path=None) -> dict:
    """The chip estimate from synthesized ``designs`` (``{name: {"transistors":
    n, ...}}``, as in ``report["designs"]``). A design missing (its flow
    failed) gives ``{"error": ...}`` naming it instead of numbers."""
    missing = [n for n in NEEDED if not designs.get(n, {}).get("transistors")]
    if missing:
        return {"error": f"designs without a transistor count: {missing}"}
    path = pathlib.Path(DATA if data_path is None else data_path)
    data = tomllib.loads(path.read_text())
    tr = {n: int(designs[n]["transistors"]) for n in NEEDED}
    paper, disp = data["paper"], data["dispatcher"]
    arrays, n_disp, t_arrays, t_dispatch = _chip_transistors(data, tr)
    mm2_per_transistor = 1 / (_positive(data, "logic", "transistors_per_mm2") * _positive(data, "logic", "utilization"))
    bits = _positive(data, "paper", "buffer_mb") * 2**20 * 8
    sram_mm2 = bits * _positive(data, "sram", "bitcell_um2") / _positive(data, "sram", "array_efficiency") * 1e-6
    absolute = _chip(
        t_arrays["kaleido"] * mm2_per_transistor,
        t_arrays["dense"] * mm2_per_transistor,
        t_dispatch * mm2_per_transistor,
        sram_mm2,
    )
    # the paper's dense arrays: its Kaleido arrays less its 6.6 % (of its Kaleido chip) overhead
    paper_dense_arrays = paper["arrays_mm2"] - paper["arrays_overhead"] * paper["total_mm2"]
    per_dense_transistor = paper_dense_arrays / t_arrays["dense"]
    calibrated = _chip(
        t_arrays["kaleido"] * per_dense_transistor,
        paper_dense_arrays,
        t_dispatch * per_dense_transistor,
        paper["buffers_mm2"],
    )
    return {
        "assumptions": {
            "arrays": arrays,
            "dispatchers": n_disp,
            "dispatcher_blocks": {b: int(disp[b]) for b in ("detector", "scheduler", "matcher")},
            "pv_dispatcher_per_array": int(disp["pv_dispatcher_per_array"]),
            "buffer_mb": paper["buffer_mb"],
            "logic": data["logic"]["source"],
            "sram": data["sram"]["source"],
            "sram_mm2_per_mb": sram_mm2 / paper["buffer_mb"],
        },
        "transistors": {
            "kaleido_arrays": t_arrays["kaleido"],
            "dense_arrays": t_arrays["dense"],
            "dispatchers": t_dispatch,
        },
        "absolute": absolute,
        "calibrated": calibrated,
        "paper": _paper_chip(paper),
    }


def core_area_sized(entry: dict, data_path=None, sram_table=None) -> dict:
    """mm^2 of a core entry of ``make synth``'s core report (``transistors``
    and ``buffers``: ``{name: {"words", "width", "read_ports",
    "write_ports"}}``) with each buffer a macro of its own size
    (:func:`kaleido.sram.sram_macro`) instead of
    :func:`kaleido.synth.core.core_area`'s bits at the bit cell: ``logic``
    (the same), ``buffers``, ``total`` and ``by_buffer`` (each buffer's
    macro as counted)."""
    from .sram import sram_macro

    path = pathlib.Path(DATA if data_path is None else data_path)
    data = tomllib.loads(path.read_text())
    logic = entry["transistors"] / (
        _positive(data, "logic", "transistors_per_mm2") * _positive(data, "logic", "utilization")
    )
    by_buffer = {
        name: sram_macro(b["words"], b["width"], b["read_ports"], b["write_ports"], sram_table).as_dict()
        for name, b in entry.get("buffers", {}).items()
    }
    buffers = sum(m["area_mm2"] for m in by_buffer.values())
    return {"logic": logic, "buffers": buffers, "total": logic + buffers, "by_buffer": by_buffer}
