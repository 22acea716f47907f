"""kaleido.headroom: what issue 43's goals need, against figures worked by hand."""

from __future__ import annotations

import pytest

from kaleido.headroom import area_headroom, energy_headroom, headroom, headroom_line

# a head whose every figure is round, at 1 pJ a multiply, 2 a write, 10 a DRAM byte: dense 250 pJ (Q K^T 100,
# 20 of them writes; P V 100, 40 writes; softmax 10, io 40), Kaleido 205 (Q K^T 60, P V 90, dispatch 5)
PJ = {"mul_8x8": 1.0, "sram_write_byte": 2.0, "dram_byte": 10.0}


def _ev(mul: float = 0, write: float = 0, dram: float = 0) -> dict:
    return {"mul_8x8": mul, "sram_write_byte": write / 2, "dram_byte": dram / 10}


EVENTS = {
    "qk": {"kaleido": _ev(40, 20), "dense": _ev(80, 20)},
    "softmax": {"kaleido": _ev(10), "dense": _ev(10)},
    "pv": {"kaleido": _ev(50, 40), "dense": _ev(60, 40)},
    "dispatch": {"kaleido": _ev(5), "dense": _ev()},
    "io": {"kaleido": _ev(dram=40), "dense": _ev(dram=40)},
}
OPS = {"qk": {"dense": 1000, "oracle": 400, "hw": 500}, "pv": {"dense": 200, "oracle": 150, "hw": 180}}
# a core twice the dense core's area (0.4 against 0.2 mm^2) at 1.5x in time; its chip 1.25x
EFF = {
    "time_speedup": 1.5,
    "area_ratio": {"core": 2.0, "chip": 1.25},
    "core_sram": {
        "flat": {
            "kaleido_mm2": {"logic": 0.3, "buffers": 0.1, "total": 0.4},
            "dense_mm2": {"logic": 0.05, "buffers": 0.15, "total": 0.2},
        }
    },
}


def test_energy_headroom_by_hand():
    e = energy_headroom(EVENTS, PJ, OPS, goal=1.3)
    assert e["measured"] == pytest.approx(250 / 205)
    # the scalable 80 + 60 pJ at a dense op's cost: 80 * 500/1000 + 60 * 180/200 = 94 pJ, plus 110 unscaled
    assert e["ceiling"]["hw"] == pytest.approx(250 / (94 + 110))
    assert e["ceiling"]["oracle"] == pytest.approx(250 / (32 + 45 + 110))
    assert e["fixed_share"] == pytest.approx(110 / 250)
    assert e["keep"] == pytest.approx({"hw": 94 / 140, "oracle": 77 / 140})
    # 1.3x less: at most 250 / 1.3 pJ, 110 of them unscaled
    assert e["keep_max"] == pytest.approx((250 / 1.3 - 110) / 140)


def test_energy_goal_beyond_the_unscaled_energy():
    # 250 / 110 less leaves exactly the softmax, the writes and io: no compute energy at all
    assert energy_headroom(EVENTS, PJ, OPS, goal=250 / 110)["keep_max"] == pytest.approx(0.0)
    assert energy_headroom(EVENTS, PJ, OPS, goal=2.5)["keep_max"] < 0


def test_area_headroom_by_hand():
    a = area_headroom(EFF)
    core, chip = a["core"], a["chip"]
    assert core["measured"] == pytest.approx(0.75)
    assert core["time_needed"] == pytest.approx(2.4)  # 1.2 x 2.0
    assert core["area_ratio_max"] == pytest.approx(1.25)  # 1.5 / 1.2
    assert core["area_budget_mm2"] == pytest.approx(0.25)  # 0.2 x 1.25
    assert core["logic_budget_mm2"] == pytest.approx(0.15)  # less its 0.1 mm^2 of buffers
    assert (core["logic_mm2"], core["dense_logic_mm2"]) == (0.3, 0.05)
    assert chip == pytest.approx({"goal": 1.5, "measured": 1.2, "time_needed": 1.875, "area_ratio_max": 1.0})
    assert area_headroom(EFF, {"per_mm2_core": 1.5})["core"]["area_budget_mm2"] == pytest.approx(0.2)


def test_headroom_and_its_line():
    room = headroom({"events": EVENTS, "table": {"pj": PJ}, "ops": OPS}, EFF)
    assert set(room) == {"energy", "area"}
    line = headroom_line(room)
    assert "58.8%" in line and "2.40x" in line and "1.88x" in line  # (250 / 1.3 - 110) / 140
    assert set(headroom({"events": EVENTS, "table": {"pj": PJ}, "ops": OPS}, {"error": "x"})) == {"energy"}


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: energy_headroom({"qk": EVENTS["qk"]}, PJ, OPS), r"missing \['pv'\]"),
        (lambda: energy_headroom(EVENTS, PJ, {**OPS, "pv": {"dense": 0, "oracle": 0, "hw": 0}}), "'pv': dense ops"),
        (lambda: energy_headroom(EVENTS, PJ, OPS, goal=0), "goal must be positive, not 0"),
        (lambda: area_headroom({**EFF, "core_sram": None}), "core_sram"),
        (lambda: area_headroom(EFF, {"per_mm2_chip": -1}), "per_mm2_chip must be positive, not -1"),
    ],
)
def test_bad_input_is_named(call, match):
    with pytest.raises(ValueError, match=match):
        call()
