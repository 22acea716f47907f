"""``kaleido perf``: output files, equality with the model, clear errors."""

import csv
import json

import pytest

from kaleido import KaleidoConfig
from kaleido.cli import main
from kaleido.golden.workloads import save, synthetic_video
from kaleido.model import run_model


def test_perf_json_csv(tmp_path, capsys):
    j, c = tmp_path / "r.json", tmp_path / "r.csv"
    assert (
        main(
            ["perf", "--grid", "2,4,4", "--variant", "pe-m", "--F", "5", "--P", "4", "--json", str(j), "--csv", str(c)]
        )
        == 0
    )
    data = json.loads(j.read_text())
    for key in ("cycles", "dense_cycles", "speedup", "utilization", "ops", "phases"):
        assert key in data
    assert set(data["ops"]) == {"dense", "oracle", "hw"}
    w = synthetic_video("hunyuan", (2, 4, 4), "slow", 0)
    ref = run_model(w.q, w.k, w.grid, w.split, KaleidoConfig(F=5, P=4), variant="pe-m")  # the default's 16 1x1 arrays
    assert data["cycles"] == ref.cycles and data["ops"] == ref.ops
    assert data["config"]["sub_arrays"] == [1, 1] and data["config"]["pass_gap"] == 0
    one = run_model(w.q, w.k, w.grid, w.split, KaleidoConfig.one_array(F=5, P=4), variant="pe-m")
    assert one.cycles != ref.cycles
    assert "quality" in data and data["quality"]["vs_int8"]["psnr"] > 0
    row = next(csv.DictReader(c.open()))
    assert int(row["cycles"]) == ref.cycles
    assert "speedup" in capsys.readouterr().out


def test_perf_whole_attention(tmp_path, capsys):
    """``stages`` (qk, softmax, pv) and ``attention`` totals, each stage
    from its own model function; the table shows them."""
    from kaleido.config import SoftmaxFormat
    from kaleido.golden.softmax import head_p
    from kaleido.model import output_scaler_cycles, pv_cycles, softmax_cycles

    j = tmp_path / "r.json"
    assert main(["perf", "--grid", "2,4,6", "--F", "4", "--P", "2", "--json", str(j)]) == 0
    data = json.loads(j.read_text())
    w = synthetic_video("hunyuan", (2, 4, 6), "slow", 0)
    cfg = KaleidoConfig(F=4, P=2)  # the default's small-P pairing: P V needs the head's P
    st = data["stages"]
    assert set(st) == {"qk", "softmax", "pv"}
    for stage in st.values():
        assert set(stage["ops"]) == {"dense", "oracle", "hw"} and stage["cycles"] > 0
    assert st["qk"]["cycles"] == data["cycles"] and st["qk"]["ops"] == data["ops"]
    pv = pv_cycles(w.v, w.grid, w.split, cfg, P=head_p(w.q, w.k, w.grid, w.split, cfg.thresholds, scales=w.scales))
    assert (st["pv"]["cycles"], st["pv"]["dense_cycles"], st["pv"]["ops"]) == (pv.cycles, pv.dense_cycles, pv.ops)
    assert st["pv"]["ops"]["dense"] == 2 * w.n * w.n * w.d
    assert st["softmax"]["cycles"] == softmax_cycles(w.n, w.n, 4, SoftmaxFormat()) + output_scaler_cycles(w.n, w.d, 4)
    att = data["attention"]
    assert att["cycles"] == sum(s["cycles"] for s in st.values())
    assert att["dense_cycles"] == sum(s["dense_cycles"] for s in st.values())
    assert att["speedup"] == pytest.approx(att["dense_cycles"] / att["cycles"], rel=1e-12)
    out = capsys.readouterr().out
    assert "stage pv" in out and "attention: cycles" in out


def test_perf_small_p_pairing(tmp_path, capsys):
    """``--pv-pairs`` (the default's) against ``--no-pv-pairs``: the P V stage is :func:`pv_cycles` with the head's P
    (computed here on its own path: the fixed-point softmax of the one-pair
    reuse scores), fewer cycles than without; Q K^T and the dense counts
    do not move."""
    import math

    from kaleido.golden.reuse import reuse_scores
    from kaleido.golden.softmax import fixed_softmax
    from kaleido.model import pv_cycles

    runs = {}
    for pairs in (False, True):
        j = tmp_path / f"r{pairs}.json"
        argv = ["perf", "--grid", "2,4,6", "--seed", "3", "--F", "5", "--P", "3", "--quality", "off", "--json", str(j)]
        assert main(argv + (["--pv-pairs"] if pairs else ["--no-pv-pairs"])) == 0
        runs[pairs] = json.loads(j.read_text())
    assert runs[True]["config"]["pv_pairs"] and not runs[False]["config"]["pv_pairs"]
    w = synthetic_video("hunyuan", (2, 4, 6), "slow", 3)
    qs, ks, _ = w.scales
    P = fixed_softmax(reuse_scores(w.q, w.k, w.grid, w.split, 5, 3), qs * ks / math.sqrt(w.d)).p
    pv = pv_cycles(w.v, w.grid, w.split, KaleidoConfig(F=5, P=3), P=P)
    off, on = runs[False]["stages"], runs[True]["stages"]
    assert on["pv"]["cycles"] == pv.cycles < off["pv"]["cycles"]
    assert on["pv"]["dense_cycles"] == off["pv"]["dense_cycles"] and on["qk"] == off["qk"]
    assert runs[True]["attention"]["speedup"] > runs[False]["attention"]["speedup"]
    assert "small-P pairing on P V" in capsys.readouterr().out


def test_perf_linear(tmp_path, capsys):
    """``--op linear``: the model of a layer, its JSON and its errors."""
    from kaleido.config import LinearReuse
    from kaleido.golden.workloads import video_activations
    from kaleido.model import linear_cycles

    j = tmp_path / "r.json"
    argv = ["perf", "--op", "linear", "--grid", "2,4,4", "--d-model", "24", "--d-out", "40", "--theta1", "3"]
    assert main([*argv, "--json", str(j)]) == 0
    data = json.loads(j.read_text())
    X, _, _ = video_activations((2, 4, 4), "slow", 0, d_model=24)
    rule = LinearReuse("t", 3.0, 8.0)
    ref = linear_cycles(X, 40, (2, 4, 4), KaleidoConfig(), rule)  # the default's 16 1x1 arrays
    assert (data["cycles"], data["dense_cycles"], data["ops"]) == (ref.cycles, ref.dense_cycles, ref.ops)
    assert ref.cycles != linear_cycles(X, 40, (2, 4, 4), KaleidoConfig.one_array(), rule).cycles
    assert data["layer"] == {"n": 32, "d_in": 24, "d_out": 40, "grid": [2, 4, 4]}
    assert data["rule"]["limits"] == [5, 15] and data["quality"]["vs_int8"]["psnr"] > 30
    assert "linear layer: N=32 d_in=24 d_out=40" in capsys.readouterr().out
    for bad, message in (
        (["--d-out", "0"], "--d-out must be a positive integer, not 0"),
        (["--theta1", "9"], "thresholds must satisfy 0 <= theta1 < theta2 <= 128, not 9.0, 8.0"),
        (["--workload", "x.npz"], "a workload file holds attention heads, not 'x.npz'"),
    ):
        with pytest.raises(SystemExit) as e:
            main(["perf", "--op", "linear", "--grid", "2,4,4", *bad])
        assert e.value.code == 2
        assert message in capsys.readouterr().err


def test_perf_engine(tmp_path, capsys, monkeypatch):
    from kaleido.golden.softmax import head_p
    from kaleido.model import engine_cycles, output_scaler_cycles, pv_cycles, softmax_cycles

    j = tmp_path / "r.json"
    assert main(["perf", "--grid", "2,4,4", "--engine", "--json", str(j)]) == 0
    data = json.loads(j.read_text())
    w = synthetic_video("hunyuan", (2, 4, 4), "slow", 0)
    # the default design: the engine on 16 1x1 arrays behind the shared queue, small-P pairing (issue 14)
    small = engine_cycles(w.q, w.k, w.grid, w.split, KaleidoConfig())
    assert data["engine"] == small.as_dict() and data["config"]["sub_arrays"] == [1, 1]
    assert "engine: compute" in capsys.readouterr().out
    with pytest.raises(SystemExit) as e:
        main(["perf", "--grid", "2,4,4", "--engine", "--array-size", "8"])
    assert e.value.code == 2
    assert "--engine models the engine's one 4x4 array, not 1 x 8x8" in capsys.readouterr().err
    cfg = KaleidoConfig()
    pv = pv_cycles(w.v, w.grid, w.split, cfg, P=head_p(w.q, w.k, w.grid, w.split, cfg.thresholds, scales=w.scales))
    sm = softmax_cycles(w.n, w.n, 4) + output_scaler_cycles(w.n, w.d, 4)
    dense = small.dense_cycles + sm + pv.dense_cycles
    want = {"cycles": small.compute + sm + pv.cycles, "dense_cycles": dense}
    assert {k: data["attention_engine"][k] for k in want} == want
    # one 4x4 array: --sub-arrays 4 (or --design one_array)
    for flags in (["--sub-arrays", "4", "--no-pv-pairs"], ["--design", "one_array"]):
        assert main(["perf", "--grid", "2,4,4", "--engine", *flags, "--json", str(j)]) == 0
        one = json.loads(j.read_text())
        assert one["engine"] == engine_cycles(w.q, w.k, w.grid, w.split, KaleidoConfig.one_array()).as_dict()
        assert one["config"]["sub_arrays"] is None and one["config"]["pass_gap"] == 0
        assert one["engine"]["compute"] != small.compute
        assert one["attention_engine"]["speedup"] < data["attention_engine"]["speedup"]  # 16 1x1 arrays beat one 4x4
    assert "attention with the engine's Q K^T" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["perf", "--grid", "2,4,4", "--arrays", "2"])
    assert "arrays must be 1 and pass_gap 0 or 1, not 2 and 0" in capsys.readouterr().err
    # a head too long for the whole P that pairing needs: named before the model runs
    monkeypatch.setattr("kaleido.cli.PV_PAIRS_TOKENS", 31)
    with pytest.raises(SystemExit):
        main(["perf", "--grid", "2,4,4"])
    assert "computes it for at most 31 tokens: --no-pv-pairs or --design one_array" in capsys.readouterr().err
    assert main(["perf", "--grid", "2,4,4", "--no-pv-pairs", "--quality", "off"]) == 0
    with pytest.raises(SystemExit):
        main(["perf", "--grid", "2,4,4", "--engine", "--sub-arrays", "3x1"])
    assert "sub_arrays (3, 1) must divide the 4x4 pass" in capsys.readouterr().err


def test_perf_workload_file(tmp_path):
    w = synthetic_video("wan", (2, 2, 4), "fast", 3)
    save(tmp_path / "w.npz", w)
    j = tmp_path / "r.json"
    assert (
        main(
            [
                "perf",
                "--workload",
                str(tmp_path / "w.npz"),
                "--design",
                "one_array",
                "--accumulators",
                "4",
                "--array-size",
                "2x3",
                "--arrays",
                "2",
                "--json",
                str(j),
            ]
        )
        == 0
    )
    data = json.loads(j.read_text())
    cfg = KaleidoConfig.one_array(split=w.split, accumulators=4, array_rows=2, array_cols=3)
    ref = run_model(w.q, w.k, w.grid, w.split, cfg, arrays=2)
    assert data["cycles"] == ref.cycles and data["workload"]["split"] == [44, 42, 42]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--F", "2", "--P", "3"], "P <= F"),
        (["--workload", "/nonexistent.npz"], "does not exist"),
        (["--array-size", "0x4"], "array_rows must be at least 1, not 0"),
        (["--batch", "0"], "batch must be at least 1"),
        (["--arrays", "0"], "arrays must be a positive integer, not 0"),
        (["--pass-gap", "-1"], "--pass-gap must be >= 0"),
        (["--grid", "4,8"], "grid must be three positive integers"),
        (["--array-size", "4x4x4"], "array size must be N or RxC"),
        (["--variant", "turbo"], "invalid choice: 'turbo'"),
    ],
)
def test_perf_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["perf", "--grid", "2,2,2", *argv])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_perf_run_time_thresholds_keep_the_build(tmp_path, capsys):
    """``--thresholds`` on a named design: the head runs on that design's
    build, so ``efficiency`` is computed at its clock and area; another
    build-time field (P V's ``F``) makes it a custom design."""
    from kaleido.efficiency import SNAPSHOT, load_synth

    synth = load_synth(SNAPSHOT)
    j = tmp_path / "r.json"
    argv = ["perf", "--grid", "2,4,4", "--design", "paper", "--synth-report", str(SNAPSHOT), "--json", str(j)]
    assert main([*argv, "--thresholds", "6,4,5,4,6,4"]) == 0
    out = capsys.readouterr().out
    assert "design paper (run-time thresholds)" in out
    data = json.loads(j.read_text())
    # what the goals need, from this run's own energy and efficiency (kaleido.headroom; tb/test_headroom.py)
    room = data["headroom"]
    assert room["energy"]["measured"] == pytest.approx(data["energy"]["savings"])
    assert room["area"]["core"]["measured"] == pytest.approx(data["efficiency"]["throughput_per_area"]["core"])
    assert f"needs a time speedup of {room['area']['core']['time_needed']:.2f}x" in out
    assert (data["config"]["design"], data["config"]["hardware_design"]) == (None, "paper")
    eff = data["efficiency"]
    assert "error" not in eff, eff
    assert eff["design"] == "paper"
    assert eff["area_ratio"]["core"] == pytest.approx(
        synth.core["paper"]["area_mm2"]["total"] / synth.core["dense"]["area_mm2"]["total"]
    )
    assert main([*argv, "--F", "6", "--thresholds", "6,4,5,4,6,4"]) == 0
    assert "error" in json.loads(j.read_text())["efficiency"]
