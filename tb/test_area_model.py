"""An independent check of the area models (issue 46, item 1): the chip
estimate at the paper's denominator (:func:`kaleido.area.chip_estimate`,
re-exported by ``kaleido.synth.chip``) and the core-level area and overheads
(:func:`kaleido.synth.core.core_area`, ``core_report``), each part derived
by hand from the paper's table 2 (as kaleido/data/chip_16nm.toml holds it)
and transistor counts this file supplies. Nothing here calls the model to
get an expected number."""

import tomllib

import pytest

from kaleido.area import DATA, chip_estimate
from kaleido.synth import chip as synth_chip
from kaleido.synth.core import core_area, core_report

#: synthesis counts supplied by the test, distinct so a block counted the wrong
#: number of times cannot land on another's figure
TRANSISTORS = {
    "baseline_array": 10_000,
    "kaleido_array": 12_500,
    "detector": 501,
    "scheduler": 1_003,
    "matcher": 257,
    "pv_dispatcher": 311,
}

# Chip transistors (the paper's 16,384 arrays; 16,384 / 8 = 2,048 dispatchers of
# 2 detectors, 2 schedulers and 8 matchers: 1,002 + 2,006 + 2,056 = 5,064 each;
# one P V dispatcher per array):
KALEIDO_ARRAYS_T = 16_384 * 12_500  # 204,800,000
DENSE_ARRAYS_T = 16_384 * 10_000  # 163,840,000
DISPATCH_T = 2_048 * 5_064 + 16_384 * 311  # 10,371,072 + 5,095,424 = 15,466,496

# Calibrated: the paper's dense arrays are its Kaleido arrays less its 6.6 % of
# its 94.8 mm^2 chip: 25.1 - 6.2568 = 18.8432 mm^2 over our dense transistors.
PAPER_DENSE = 18.8432
CALIBRATED = {
    "kaleido_mm2": {
        "arrays": PAPER_DENSE * 1.25,  # 12,500 / 10,000 transistors: 23.554
        "dispatchers": PAPER_DENSE * 0.0944,  # 15,466,496 / 163,840,000 = 0.0944 exactly: 1.77879808
        "buffers": 68.4,  # the paper's
        "total": 23.554 + 1.77879808 + 68.4,  # 93.73279808
    },
    "dense_mm2": {"arrays": PAPER_DENSE, "buffers": 68.4, "total": 87.2432},
    "overhead": {
        "arrays": 4.7108 / 87.2432,  # (23.554 - 18.8432) / the dense chip: 5.40 %
        "dispatchers": 1.77879808 / 87.2432,  # 2.04 %
        "total": 6.48959808 / 87.2432,  # 93.73279808 - 87.2432: 7.44 %
    },
}

# Absolute: 28.88 M transistors/mm^2 at 70 % utilisation = 20.216 M per mm^2;
# 96 MB = 805,306,368 bits x 0.07 um^2 / 0.75 = 75,161,927.68 um^2.
SRAM = 75.16192768
ABSOLUTE = {
    "kaleido_mm2": {
        "arrays": 204.8 / 20.216,  # 10.1306
        "dispatchers": 15.466496 / 20.216,  # 0.7651
        "buffers": SRAM,
        "total": (204.8 + 15.466496) / 20.216 + SRAM,
    },
    "dense_mm2": {"arrays": 163.84 / 20.216, "buffers": SRAM, "total": 163.84 / 20.216 + SRAM},
    "overhead": {
        "arrays": (204.8 - 163.84) / 20.216 / (163.84 / 20.216 + SRAM),
        "dispatchers": 15.466496 / 20.216 / (163.84 / 20.216 + SRAM),
        "total": (204.8 - 163.84 + 15.466496) / 20.216 / (163.84 / 20.216 + SRAM),
    },
}


def designs(**changes: int) -> dict:
    return {name: {"transistors": changes.get(name, n)} for name, n in TRANSISTORS.items()}


def test_data_file_holds_table_2():
    """kaleido/data/chip_16nm.toml: the paper's table 2 and the stated
    16 nm figures this file's hand numbers start from."""
    data = tomllib.loads(DATA.read_text())
    paper = data["paper"]
    assert (paper["arrays"], paper["dispatchers"], paper["buffer_mb"]) == (16_384, 2_048, 96)
    assert (paper["arrays_mm2"], paper["dispatcher_mm2"], paper["buffers_mm2"]) == (25.1, 1.3, 68.4)
    assert (paper["total_mm2"], paper["arrays_overhead"], paper["dispatcher_overhead"]) == (94.8, 0.066, 0.013)
    disp = data["dispatcher"]
    assert (disp["arrays_per_dispatcher"], disp["detector"], disp["scheduler"], disp["matcher"]) == (8, 2, 2, 8)
    assert disp["pv_dispatcher_per_array"] == 1
    assert (data["logic"]["transistors_per_mm2"], data["logic"]["utilization"]) == (28.88e6, 0.7)
    assert (data["sram"]["bitcell_um2"], data["sram"]["array_efficiency"]) == (0.07, 0.75)
    assert 25.1 - 0.066 * 94.8 == pytest.approx(PAPER_DENSE, abs=1e-12)


def assert_parts(got: dict, want: dict, where: str) -> None:
    for side, parts in want.items():
        for part, value in parts.items():
            assert got[side][part] == pytest.approx(value, rel=1e-9), f"{where} {side} {part}"


def test_chip_estimate_by_hand():
    """Every part of both estimates, the transistor sums and the paper's
    own figures, from the counts above."""
    est = chip_estimate(designs())
    assert est["transistors"] == {
        "kaleido_arrays": KALEIDO_ARRAYS_T,
        "dense_arrays": DENSE_ARRAYS_T,
        "dispatchers": DISPATCH_T,
    }
    assert DISPATCH_T == 15_466_496 == round(0.0944 * DENSE_ARRAYS_T)
    assert_parts(est["calibrated"], CALIBRATED, "calibrated")
    assert_parts(est["absolute"], ABSOLUTE, "absolute")
    assert est["calibrated"]["kaleido_mm2"]["dispatchers"] == pytest.approx(1.77879808, rel=1e-9)
    assert est["calibrated"]["overhead"]["total"] == pytest.approx(0.0743851, abs=1e-7)  # 7.44 %
    assert est["paper"] == {
        "kaleido_mm2": {"arrays": 25.1, "dispatchers": 1.3, "buffers": 68.4, "total": 94.8},
        "overhead": {"arrays": 0.066, "dispatchers": 0.013, "total": pytest.approx(0.079)},
    }
    a = est["assumptions"]
    assert (a["arrays"], a["dispatchers"], a["pv_dispatcher_per_array"], a["buffer_mb"]) == (16_384, 2_048, 1, 96)
    assert a["dispatcher_blocks"] == {"detector": 2, "scheduler": 2, "matcher": 8}
    assert a["sram_mm2_per_mb"] == pytest.approx(SRAM / 96, rel=1e-9)
    assert synth_chip.chip_estimate(designs()) == est  # the synthesis flow's name for it


@pytest.mark.parametrize("block", ["detector", "scheduler", "matcher", "pv_dispatcher"])
def test_each_dispatcher_block_counted_its_times(block):
    """One more transistor in one block adds its multiplicity on the chip:
    2,048 x 2 (detector, scheduler), 2,048 x 8 (matcher), 16,384 x 1 (P V)."""
    times = {"detector": 4_096, "scheduler": 4_096, "matcher": 16_384, "pv_dispatcher": 16_384}[block]
    est = chip_estimate(designs(**{block: TRANSISTORS[block] + 1}))
    assert est["transistors"]["dispatchers"] == DISPATCH_T + times
    want = (DISPATCH_T + times) / DENSE_ARRAYS_T * PAPER_DENSE
    assert est["calibrated"]["kaleido_mm2"]["dispatchers"] == pytest.approx(want, rel=1e-9)


def test_every_data_figure_is_read(tmp_path):
    """Another data file, each figure changed: the hand numbers follow.
    4 arrays a dispatcher (4,096 dispatchers), 2 P V dispatchers an array,
    50 % utilisation, a 0.14 um^2 cell at 70 %, 48 MB; the paper's dense
    arrays 30 - 0.1 x 100 = 20 mm^2, its buffers 50."""
    text = DATA.read_text()
    for old, new in [
        ("arrays_per_dispatcher = 8", "arrays_per_dispatcher = 4"),
        ("pv_dispatcher_per_array = 1", "pv_dispatcher_per_array = 2"),
        ("utilization = 0.7", "utilization = 0.5"),
        ("bitcell_um2 = 0.07", "bitcell_um2 = 0.14"),
        ("array_efficiency = 0.75", "array_efficiency = 0.7"),
        ("buffer_mb = 96", "buffer_mb = 48"),
        ("arrays_mm2 = 25.1", "arrays_mm2 = 30.0"),
        ("total_mm2 = 94.8", "total_mm2 = 100.0"),
        ("arrays_overhead = 0.066", "arrays_overhead = 0.1"),
        ("buffers_mm2 = 68.4", "buffers_mm2 = 50.0"),
    ]:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    path = tmp_path / "chip.toml"
    path.write_text(text)
    est = chip_estimate(designs(), path)
    dispatch_t = 4_096 * 5_064 + 16_384 * 2 * 311  # 20,742,144 + 10,190,848 = 30,932,992
    assert est["transistors"]["dispatchers"] == dispatch_t == 30_932_992
    cal = est["calibrated"]
    assert cal["dense_mm2"] == pytest.approx({"arrays": 20.0, "buffers": 50.0, "total": 70.0})
    assert cal["kaleido_mm2"]["arrays"] == pytest.approx(25.0)
    assert cal["kaleido_mm2"]["dispatchers"] == pytest.approx(20.0 * 30_932_992 / 163_840_000)
    ab = est["absolute"]
    assert ab["kaleido_mm2"]["arrays"] == pytest.approx(204.8 / 14.44)  # 28.88 x 0.5 M per mm^2
    assert ab["kaleido_mm2"]["buffers"] == pytest.approx(48 * 2**20 * 8 * 0.14 / 0.7 * 1e-6)  # 80.53 mm^2


def test_core_area_by_hand():
    """1,010,800 transistors at 20.216 M/mm^2 = 0.05 mm^2; 1,500,000 bits x
    0.07 um^2 / 0.75 = 0.14 mm^2."""
    data = tomllib.loads(DATA.read_text())
    entry = {"transistors": 1_010_800, "buffer_bits": 1_500_000}
    want = {"logic": 0.05, "buffers": 0.14, "total": 0.19}
    assert core_area(entry, data=data) == pytest.approx(want, rel=1e-12)
    assert core_area(entry, DATA) == pytest.approx(want, rel=1e-12)


def core_entry(transistors: int, bits: int) -> dict:
    buffer = {"words": bits // 10, "width": 10, "bits": bits, "read_ports": 1, "write_ports": 1, "read": "sync"}
    return {"transistors": transistors, "buffer_bits": bits, "buffers": {"s": buffer}}


def test_core_overheads_by_hand():
    """The dense core 2,021,600 transistors (0.1 mm^2) and 750,000 bits
    (0.07 mm^2); a Kaleido core 2,425,920 (0.12) and 1,500,000 (0.14); the
    paper's buffers per array 68.4 / 16,384; calibrated: the paper's dense
    array 18.8432 / 16,384 mm^2 over 10,000 transistors of ours."""
    entries = {"dense": core_entry(2_021_600, 750_000), "paper": core_entry(2_425_920, 1_500_000)}
    report = core_report(entries, {"baseline_array": {"transistors": 10_000}}, DATA)
    for key, want in [("dense", (0.1, 0.07)), ("paper", (0.12, 0.14))]:
        area = report[key]["area_mm2"]
        assert (area["logic"], area["buffers"], area["total"]) == pytest.approx((*want, sum(want)), rel=1e-12)
    per_array = 68.4 / 16_384  # 0.0041748 mm^2
    per_t = 18.8432 / 16_384 / 10_000
    over = report["overhead_paper"]
    assert over["total"] == pytest.approx((0.26 - 0.17) / 0.17, rel=1e-12)  # 52.9 %
    assert over["logic"] == pytest.approx(0.2, rel=1e-12)
    assert over["at_paper_buffers"] == pytest.approx(0.02 / (0.1 + per_array), rel=1e-12)  # 19.2 %
    calibrated = 404_320 * per_t / (2_021_600 * per_t + per_array)
    assert over["at_paper_buffers_calibrated"] == pytest.approx(calibrated, rel=1e-12)
    assert over["paper"] == pytest.approx(0.079)
    assert report["assumptions"]["paper_buffer_mm2_per_array"] == pytest.approx(per_array, rel=1e-12)
    assert report["assumptions"]["calibrated_mm2_per_transistor"] == pytest.approx(per_t, rel=1e-12)
