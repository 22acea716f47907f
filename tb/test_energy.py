"""The energy model (issue 15, docs/ENERGY.md): its event counts equal the
RTL's, counted in the Amaranth simulator from the PEs' own enables; the
table's loading, scaling and errors; the arithmetic of ``attention_energy``
and ``kaleido perf``'s ``energy``."""

import dataclasses
import json
import pathlib
import tomllib

import numpy as np
import pytest

from kaleido.cli import main
from kaleido.config import KaleidoConfig
from kaleido.energy import (
    DEFAULT_TABLE,
    EVENTS,
    attention_energy,
    load_table,
    pv_activity,
    qk_activity,
    qk_tables,
)
from kaleido.golden.ops import COSTS
from kaleido.golden.workloads import synthetic_video
from kaleido.hdl.dispatched_array import DispatchedArray
from kaleido.hdl.pv_array import PvArray
from kaleido.model import pv_cycles, run_model
from kaleido.tb.activity import simulate_activity
from kaleido.tb.benches import dispatched_bench, pv_bench
from kaleido.tb.passes import make_workload, pass_words
from kaleido.tb.pv_cases import pv_head, pv_words

ROOT = pathlib.Path(__file__).resolve().parent.parent
SMALL = KaleidoConfig.paper(batch=4, split=(5, 3, 4))  # the paper's design; 4acc-dual: four accumulators


@pytest.mark.parametrize(
    "cfg, kind, grid, seed",
    [
        (SMALL, "video", (1, 3, 5), 1),  # DUAL_LO slots (the matcher merges 7 pairs), padding units
        (KaleidoConfig.paper(batch=4, split=(5, 3, 4), accumulators=4), "video", (1, 3, 5), 1),
        (SMALL, "random", (2, 3, 4), 0),  # every class, ABSENT tags
        # per-group thresholds, four accumulators (the default design's kind)
        (
            KaleidoConfig.one_array(batch=4, split=(5, 3, 4), group_thresholds=((5, 3), (6, 4), (4, 4))),
            "video",
            (1, 3, 5),
            1,
        ),
    ],
    ids=["3acc-dual", "4acc-dual", "random", "group-4acc"],
)
def test_qk_events_equal_rtl(cfg, kind, grid, seed):
    """``DispatchedArray`` on a whole head: nibble multipliers enabled,
    accumulator adds, lo/hi combines, drains, FULL8 / DUAL_LO slots and
    phase markers, and pass words read, counted per cycle in the RTL, equal
    :func:`kaleido.energy.qk_activity` from the cycle model."""
    w = make_workload(kind, grid, cfg.split, seed)
    words, _ = pass_words(cfg, w)
    _, act = simulate_activity(DispatchedArray(cfg), lambda be: dispatched_bench(be, cfg, words), "passes")
    model = run_model(w.q, w.k, w.grid, w.split, cfg, variant="pe-m", dispatcher=True)
    exp = qk_activity(w.q, w.k, w.grid, w.split, cfg, model)
    rtl = dataclasses.asdict(act)
    keys = ("mul_4x8", "acc_adds", "combines", "tiles", "full8_slots", "dual_slots", "markers")
    assert {k: rtl[k] for k in keys} == {k: exp[k] for k in keys}
    assert act.words == exp["pass_words"] == len(words)
    if kind == "video":
        assert exp["dual_slots"] > 0  # the case exercises DUAL_LO
    assert exp["mul_4x8"] >= model.ops["hw"]  # padding PEs multiply zeros on top of the useful ops


@pytest.mark.parametrize("kind, grid", [("video", (2, 3, 4)), ("random", (1, 5, 3))])
def test_pv_events_equal_rtl(kind, grid):
    """``PvArray`` on a whole head (padding rows and columns included):
    products (non-SKIP selects), pre-adds (SUM), drains and unit words
    equal :func:`kaleido.energy.pv_activity`."""
    P, V = pv_head(kind, grid, SMALL.split, 1)
    words, _ = pv_words(SMALL, P, V, grid, SMALL.split)
    _, act = simulate_activity(PvArray(SMALL), lambda be: pv_bench(be, SMALL, words), "units")
    exp = pv_activity(V, grid, SMALL.split, SMALL, pv_cycles(V, grid, SMALL.split, SMALL))
    assert act.mul_4x8 == 2 * exp["products"]
    assert act.acc_adds == act.combines == exp["products"]
    assert (act.pre_adds, act.tiles, act.full8_slots, act.words) == (
        exp["pre_adds"],
        exp["tiles"],
        exp["beats"],
        exp["unit_words"],
    )
    assert exp["pre_adds"] > 0


@pytest.mark.parametrize("acc", [3, 4])
def test_multiplier_table_is_the_cost_table(acc):
    """The nibble multipliers the decode table enables are the hardware
    cost table of spec sec. 9."""
    assert (qk_tables(acc)["mul"] == COSTS[f"hw{acc}"]).all()


def test_default_table_scaled_and_packaged():
    raw = tomllib.loads(DEFAULT_TABLE.read_text())
    t = load_table()
    assert set(t.pj) == set(EVENTS) and t.node_nm == 16
    assert t.factor == raw["scale"]["factor"] == pytest.approx((16 / 45) * (0.8 / 0.9) ** 2, abs=5e-4)
    for kind in EVENTS:
        e = raw["events"][kind]
        assert e["source"], kind
        assert t.pj[kind] == pytest.approx(e["pj"] * (t.factor if e["scaled"] else 1))
    assert t.pj["dram_byte"] == raw["events"]["dram_byte"]["pj"]  # off chip: not scaled
    # the data file ships with the package
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    setup = pyproject["tool"]["setuptools"]
    assert "kaleido.data" in setup["packages"] and "*.toml" in setup["package-data"]["kaleido.data"]


def _write(tmp_path, edit):
    data = DEFAULT_TABLE.read_text()
    path = tmp_path / "t.toml"
    path.write_text(edit(data))
    return path


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda s: s.replace("pj = 0.2\n", "pj = -0.2\n", 1), "events.mul_8x8.pj must be positive, not -0.2"),
        (lambda s: s.replace("pj = 0.2\n", 'pj = "x"\n', 1), "events.mul_8x8.pj must be a number, not 'x'"),
        (lambda s: s.replace("[events.add_8]", "[events.add_9]"), "unknown event kind(s) ['add_9']"),
        (lambda s: s.replace("scaled = false", 'scaled = "no"'), "events.dram_byte.scaled must be true or false"),
        (lambda s: s.replace("factor = 0.281", "factor = 0"), "scale.factor must be positive, not 0"),
        (lambda s: s.replace("to_nm = 16", "to_nm = 1.5"), "scale.to_nm must be a positive integer, not 1.5"),
        (lambda s: s + "\n[[[", "is not valid TOML"),
    ],
)
def test_bad_table_names_the_value(tmp_path, edit, message):
    with pytest.raises(ValueError) as err:
        load_table(_write(tmp_path, edit))
    assert message in str(err.value)


def test_missing_event_named(tmp_path):
    def drop(s):
        head, _, tail = s.partition("[events.sram_write_byte]")
        return head + tail.partition("\n[")[1] + tail.partition("\n[")[2]

    with pytest.raises(ValueError, match="event 'sram_write_byte' is missing"):
        load_table(_write(tmp_path, drop))


def test_attention_energy_adds_up():
    """Totals are the sums of the stages and of the kinds; the dense Q K^T
    does one 8x8 MAC per token pair and channel; Kaleido's ``Q K^T``
    multiplies what the model's op count says, plus padding."""
    w = synthetic_video("hunyuan", (2, 4, 4), "slow", 0)
    cfg = KaleidoConfig.one_array(split=w.split)
    r = run_model(w.q, w.k, w.grid, w.split, cfg)
    e = attention_energy(w.q, w.k, w.v, w.grid, w.split, cfg, r)
    assert e["kaleido_pj"] == pytest.approx(sum(v["kaleido"] for v in e["by_stage"].values()))
    assert e["kaleido_pj"] == pytest.approx(sum(v["kaleido"] for v in e["by_kind"].values()))
    assert e["dense_pj"] == pytest.approx(sum(v["dense"] for v in e["by_kind"].values()))
    assert e["savings"] == pytest.approx(e["dense_pj"] / e["kaleido_pj"])
    ev = e["events"]
    assert ev["qk"]["dense"]["mul_8x8"] == w.n * w.n * w.d
    assert ev["qk"]["kaleido"]["mul_4x8"] == r.ops["hw"]  # 32 tokens: no padding units
    assert ev["softmax"]["kaleido"] == ev["softmax"]["dense"] and ev["io"]["kaleido"] == ev["io"]["dense"]
    assert not any(ev["dispatch"]["dense"].values())


def test_more_reuse_saves_more_energy():
    """A constant head (every follower FULL) saves more Q K^T energy than a
    random one (little reuse); both save some, because a pass reads each
    operand once for the four tiles of a pair group (half the dense array's
    operand reads)."""
    out = {}
    for kind in ("constant", "random"):
        w = make_workload(kind, (2, 4, 4), (16, 8, 8), 0)
        cfg = KaleidoConfig.one_array(split=w.split)
        r = run_model(w.q, w.k, w.grid, w.split, cfg)
        out[kind] = attention_energy(w.q, w.k, w.v, w.grid, w.split, cfg, r)["qk_savings"]
    assert out["constant"] > out["random"] + 0.1 and out["random"] > 1, out


def test_perf_reports_energy(tmp_path, capsys):
    from kaleido.golden.softmax import head_p

    j = tmp_path / "r.json"
    assert main(["perf", "--grid", "2,4,4", "--json", str(j), "--csv", str(tmp_path / "r.csv")]) == 0
    data = json.loads(j.read_text())
    e = data["energy"]
    assert {"kaleido_pj", "dense_pj", "savings", "by_stage", "by_kind"} <= set(e)
    assert set(e["by_stage"]) == {"qk", "softmax", "pv", "dispatch", "io"} and set(e["by_kind"]) == set(EVENTS)
    w = synthetic_video("hunyuan", (2, 4, 4), "slow", 0)
    cfg = KaleidoConfig(split=w.split)  # the default: 16 1x1 arrays, small-P pairing
    P = head_p(w.q, w.k, w.grid, w.split, cfg.thresholds, scales=w.scales)
    pv = pv_cycles(w.v, w.grid, w.split, cfg, P=P)
    r = run_model(w.q, w.k, w.grid, w.split, cfg)
    ref = attention_energy(w.q, w.k, w.v, w.grid, w.split, cfg, r, pv=pv)
    assert e["kaleido_pj"] == pytest.approx(ref["kaleido_pj"]) and e["savings"] == pytest.approx(ref["savings"])
    with pytest.raises(ValueError, match="pv_pairs needs P"):
        attention_energy(w.q, w.k, w.v, w.grid, w.split, cfg, r)
    out = capsys.readouterr().out
    assert "energy: Kaleido" in out and "energy qk" in out and "by kind" in out


def test_perf_energy_table_option(tmp_path, capsys):
    """``--energy-table``: a table with every energy doubled doubles both
    totals; a bad table is a clear error (exit 2) naming it."""
    doubled = _write(tmp_path, lambda s: s.replace("factor = 0.281", "factor = 0.562"))
    j1, j2 = tmp_path / "a.json", tmp_path / "b.json"
    assert main(["perf", "--grid", "2,4,4", "--json", str(j1)]) == 0
    assert main(["perf", "--grid", "2,4,4", "--json", str(j2), "--energy-table", str(doubled)]) == 0
    a, b = (json.loads(p.read_text())["energy"] for p in (j1, j2))
    on_chip = {k: v for k, v in a["by_kind"].items() if k != "dram_byte"}
    assert b["kaleido_pj"] - a["kaleido_pj"] == pytest.approx(sum(v["kaleido"] for v in on_chip.values()))
    with pytest.raises(SystemExit) as err:
        main(["perf", "--grid", "2,4,4", "--energy-table", str(tmp_path / "none.toml")])
    assert err.value.code == 2
    assert "none.toml' does not exist" in capsys.readouterr().err


def test_padding_is_counted():
    """A head whose unit lists do not fill the last group: the Kaleido
    array multiplies more than the useful op count (padding PEs), exactly
    the padding's T0/T1/T2 cost."""
    w = make_workload("random", (1, 3, 5), SMALL.split, 0)
    r = run_model(w.q, w.k, w.grid, w.split, SMALL)
    got = qk_activity(w.q, w.k, w.grid, w.split, SMALL, r)["mul_4x8"]
    assert got > r.ops["hw"]
    assert np.issubdtype(type(got), np.integer) or isinstance(got, int)


def test_small_arrays_events():
    """On the default's 16 1x1 arrays the Q K^T events are the blocks': a
    tile per accumulator and block, the beats and slots of ``run_model``'s
    blocks, no multiplies of padding (so no more than one 4x4 array's), and
    the operand bytes of the 4x4 passes (the engine reads each pass once and
    splits it), equal to one array's."""
    from kaleido.energy import qk_activity

    w = synthetic_video("hunyuan", (2, 3, 5), "fast", 2)  # 15 units a side: 4x4 passes pad
    small, one = KaleidoConfig(split=w.split), KaleidoConfig.one_array(split=w.split)
    rs, ro = (run_model(w.q, w.k, w.grid, w.split, c) for c in (small, one))
    s, o = qk_activity(w.q, w.k, w.grid, w.split, small, rs), qk_activity(w.q, w.k, w.grid, w.split, one, ro)
    assert s["tiles"] == 4 * rs.passes and s["pass_words"] == rs.passes
    assert s["beats"] == sum(p["beats"] for p in rs.phases.values()) == rs.beats  # passes back to back
    assert s["operand_bytes"] == o["operand_bytes"]
    assert s["mul_4x8"] < o["mul_4x8"] and s["acc_adds"] < o["acc_adds"]
