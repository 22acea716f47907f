"""How the efficiency ratios move with the models' assumptions (issue 46,
item 3): each per-event energy of the energy table, and each area figure
(logic density, SRAM bit cell, SRAM array efficiency), halved and doubled
one at a time, the rest kept.

* energy: Kaleido's energy per head over the dense array's, from a head's
  event counts (:func:`kaleido.energy.attention_events`);
* area: the core-level ratio (Kaleido core over the dense core, logic and
  buffers, as :func:`kaleido.synth.core.core_area` counts them) and the chip-level ratios
  at the paper's denominator (:func:`kaleido.area.chip_estimate`, its
  ``calibrated`` estimate, which takes the paper's own area per transistor
  and buffers and so does not move with these figures, and its
  ``absolute`` one, which does).

Rows are ``{"ratio", "assumption", "factor", "value", "baseline"}``; a
factor of 1 is the baseline. A doubled array efficiency can exceed 1: it is
a sensitivity, not a design point.
"""

from __future__ import annotations

import csv
import pathlib
import re
import tempfile
import tomllib

from .area import DATA, chip_estimate
from .energy import EVENTS, EnergyTable

__all__ = ["FACTORS", "AREA_FIGURES", "energy_rows", "area_rows", "write_csv"]

#: the factors each assumption is scaled by
FACTORS = (0.5, 2.0)

#: the area figures of ``kaleido/data/chip_16nm.toml`` swept: (section, key)
AREA_FIGURES = (("logic", "transistors_per_mm2"), ("sram", "bitcell_um2"), ("sram", "array_efficiency"))


def _energy_ratio(events: dict, pj: dict) -> float:
    total = {d: sum(n * pj[k] for s in events.values() for k, n in s[d].items()) for d in ("kaleido", "dense")}
    return total["kaleido"] / total["dense"]


def energy_rows(events: dict, table: EnergyTable, factors=FACTORS) -> list[dict]:
    """Kaleido / dense energy of one head (``events``: ``{stage: {"kaleido":
    {kind: n}, "dense": {kind: n}}}``) with each kind's energy of ``table``
    scaled by each factor."""
    base = _energy_ratio(events, table.pj)
    rows = []
    for kind in EVENTS:
        for f in factors:
            value = _energy_ratio(events, {**table.pj, kind: table.pj[kind] * f})
            rows.append({"ratio": "energy", "assumption": kind, "factor": f, "value": value, "baseline": base})
    return rows


def _scaled_text(text: str, section: str, key: str, factor: float) -> str:
    """The data file's ``text`` with ``[section] key`` scaled by ``factor``."""
    value = tomllib.loads(text)[section][key] * factor
    head, sep, tail = text.partition(f"[{section}]")
    pattern = re.compile(rf"^{re.escape(key)}\s*=\s*\S+", re.MULTILINE)
    if not sep or not pattern.search(tail):
        raise ValueError(f"no {section}.{key} in the area data")
    return head + sep + pattern.sub(f"{key} = {value!r}", tail, count=1)


def _core_mm2(entry: dict, data: dict) -> float:
    """A core's mm^2 as :func:`kaleido.synth.core.core_area` counts it (the
    tools layer may not import the synthesis flow): logic transistors at the
    density and utilisation, buffer bits at the bit cell over the array
    efficiency."""
    logic = entry["transistors"] / (data["logic"]["transistors_per_mm2"] * data["logic"]["utilization"])
    return logic + entry["buffer_bits"] * data["sram"]["bitcell_um2"] / data["sram"]["array_efficiency"] * 1e-6


def _area_ratios(kaleido_core: dict, dense_core: dict, designs: dict, text: str) -> dict[str, float]:
    data = tomllib.loads(text)
    core = _core_mm2(kaleido_core, data) / _core_mm2(dense_core, data)
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / "chip.toml"
        path.write_text(text)
        est = chip_estimate(designs, path)
    if "error" in est:
        raise ValueError(f"chip estimate: {est['error']}")
    out = {"core_area": core}
    for kind in ("calibrated", "absolute"):
        out[f"chip_area_{kind}"] = est[kind]["kaleido_mm2"]["total"] / est[kind]["dense_mm2"]["total"]
    return out


def area_rows(kaleido_core: dict, dense_core: dict, designs: dict, data_path=None, factors=FACTORS) -> list[dict]:
    """Area ratios (Kaleido over dense: ``core_area``, ``chip_area_calibrated``,
    ``chip_area_absolute``) with each of :data:`AREA_FIGURES` scaled by each
    factor. ``kaleido_core``, ``dense_core``: core entries (``transistors``,
    ``buffer_bits``); ``designs``: the blocks' ``{name: {"transistors": n}}``."""
    text = pathlib.Path(DATA if data_path is None else data_path).read_text()
    base = _area_ratios(kaleido_core, dense_core, designs, text)
    rows = []
    for section, key in AREA_FIGURES:
        for f in factors:
            ratios = _area_ratios(kaleido_core, dense_core, designs, _scaled_text(text, section, key, f))
            for name, value in ratios.items():
                rows.append({"ratio": name, "assumption": key, "factor": f, "value": value, "baseline": base[name]})
    return rows


def write_csv(rows: list[dict], path) -> pathlib.Path:
    """``rows`` as CSV (columns ratio, assumption, factor, value, baseline)."""
    path = pathlib.Path(path)
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["ratio", "assumption", "factor", "value", "baseline"])
        writer.writeheader()
        writer.writerows(rows)
    return path
