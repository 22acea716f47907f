"""kaleido/sensitivity.py (issue 46, item 3): each efficiency ratio with
each assumption halved and doubled, checked against hand numbers."""

import csv

import pytest

from kaleido.area import DATA
from kaleido.energy import EVENTS, EnergyTable
from kaleido.sensitivity import AREA_FIGURES, FACTORS, area_rows, energy_rows, write_csv


def full(**counts: int) -> dict[str, int]:
    return {kind: counts.get(kind, 0) for kind in EVENTS}


#: Kaleido 10 nibble multiplies (1 pJ) and 2 buffer bytes (10 pJ): 30 pJ; dense
#: 5 MACs (2 pJ) and 4 bytes: 50 pJ; every other energy 1 pJ and unused
EVENTS_STUB = {"qk": {"kaleido": full(mul_4x8=10, sram_read_byte=2), "dense": full(mul_8x8=5, sram_read_byte=4)}}
TABLE = EnergyTable({**dict.fromkeys(EVENTS, 1.0), "mul_8x8": 2.0, "sram_read_byte": 10.0}, 16, 1.0, {}, "hand")


def test_energy_rows_by_hand():
    rows = energy_rows(EVENTS_STUB, TABLE)
    assert [(r["assumption"], r["factor"]) for r in rows] == [(k, f) for k in EVENTS for f in FACTORS]
    got = {(r["assumption"], r["factor"]): r["value"] for r in rows}
    want = {
        ("mul_4x8", 0.5): 25 / 50,
        ("mul_4x8", 2.0): 40 / 50,
        ("mul_8x8", 0.5): 30 / 45,  # 5 x 1 + 40
        ("mul_8x8", 2.0): 30 / 60,
        ("sram_read_byte", 0.5): 20 / 30,
        ("sram_read_byte", 2.0): 50 / 90,
    }
    for key, value in got.items():
        assert value == pytest.approx(want.get(key, 30 / 50)), key
    assert all(r["baseline"] == pytest.approx(0.6) and r["ratio"] == "energy" for r in rows)


# The cores of tb/test_area_model.py: dense 0.1 mm^2 logic + 0.07 buffers,
# Kaleido 0.12 + 0.14; its blocks' counts for the chip.
DENSE_CORE = {"transistors": 2_021_600, "buffer_bits": 750_000}
KALEIDO_CORE = {"transistors": 2_425_920, "buffer_bits": 1_500_000}
BLOCKS = {
    name: {"transistors": n}
    for name, n in [
        ("baseline_array", 10_000),
        ("kaleido_array", 12_500),
        ("detector", 501),
        ("scheduler", 1_003),
        ("matcher", 257),
        ("pv_dispatcher", 311),
    ]
}


def chip_absolute(logic: float, sram: float) -> float:
    """The absolute chip ratio with logic area x ``logic``, SRAM x ``sram``:
    Kaleido 220,266,496 transistors, dense 163,840,000, at 20.216 M/mm^2;
    75.16192768 mm^2 of SRAM (tb/test_area_model.py)."""
    s = 75.16192768 * sram
    return (220.266496 / 20.216 * logic + s) / (163.84 / 20.216 * logic + s)


def test_area_rows_by_hand():
    rows = area_rows(KALEIDO_CORE, DENSE_CORE, BLOCKS)
    got = {(r["ratio"], r["assumption"], r["factor"]): r["value"] for r in rows}
    # (logic scale, SRAM scale) of each (figure, factor): a denser logic is less area
    scales = {
        ("transistors_per_mm2", 0.5): (2, 1),
        ("transistors_per_mm2", 2.0): (0.5, 1),
        ("bitcell_um2", 0.5): (1, 0.5),
        ("bitcell_um2", 2.0): (1, 2),
        ("array_efficiency", 0.5): (1, 2),
        ("array_efficiency", 2.0): (1, 0.5),
    }
    assert {(a, f) for _, a, f in got} == set(scales) == {(k, f) for _, k in AREA_FIGURES for f in FACTORS}
    for (figure, f), (ls, ss) in scales.items():
        core = (0.12 * ls + 0.14 * ss) / (0.1 * ls + 0.07 * ss)
        assert got["core_area", figure, f] == pytest.approx(core, rel=1e-9), (figure, f)
        assert got["chip_area_absolute", figure, f] == pytest.approx(chip_absolute(ls, ss), rel=1e-9)
        # the calibrated chip takes the paper's area per transistor and buffers: unmoved
        assert got["chip_area_calibrated", figure, f] == pytest.approx(93.73279808 / 87.2432, rel=1e-9)
    base = {r["ratio"]: r["baseline"] for r in rows}
    assert base == pytest.approx(
        {
            "core_area": 0.26 / 0.17,
            "chip_area_absolute": chip_absolute(1, 1),
            "chip_area_calibrated": 93.73279808 / 87.2432,
        }
    )


def test_csv_and_errors(tmp_path):
    rows = energy_rows(EVENTS_STUB, TABLE)
    path = write_csv(rows, tmp_path / "s.csv")
    with path.open() as f:
        back = list(csv.DictReader(f))
    assert len(back) == 2 * len(EVENTS) and back[0]["assumption"] == "mul_4x8" and back[0]["factor"] == "0.5"
    assert float(back[0]["value"]) == pytest.approx(0.5)
    bad = tmp_path / "bad.toml"
    bad.write_text(DATA.read_text().replace("bitcell_um2 = 0.07", "cell = 0.07"))
    with pytest.raises((KeyError, ValueError)):
        area_rows(KALEIDO_CORE, DENSE_CORE, BLOCKS, bad)
    missing = {k: v for k, v in BLOCKS.items() if k != "matcher"}
    with pytest.raises(ValueError, match="matcher"):
        area_rows(KALEIDO_CORE, DENSE_CORE, missing)


def test_core_ratio_is_core_areas():
    """The core ratio equals core_area's (kaleido.synth.core) at each scaled
    figure: the sensitivity's own copy of the formula stays that one."""
    import tomllib

    from kaleido.synth.core import core_area

    data = tomllib.loads(DATA.read_text())
    for row in area_rows(KALEIDO_CORE, DENSE_CORE, BLOCKS):
        if row["ratio"] != "core_area":
            continue
        section = dict((k, s) for s, k in AREA_FIGURES)[row["assumption"]]
        scaled = {
            **data,
            section: {**data[section], row["assumption"]: data[section][row["assumption"]] * row["factor"]},
        }
        want = core_area(KALEIDO_CORE, data=scaled)["total"] / core_area(DENSE_CORE, data=scaled)["total"]
        assert row["value"] == pytest.approx(want, rel=1e-12), row
