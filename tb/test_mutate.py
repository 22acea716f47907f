"""The mutation harness (issue 19, `make mutate`): every mutant still
applies to the tree exactly once, the harness kills a mutant the tests
catch and spares the unmutated tree."""

import pytest

from kaleido.tb.mutate import MUTANTS, Mutant, apply, run

pytestmark = pytest.mark.toolchain


def test_every_mutant_applies_once(tmp_path):
    names = [m.name for m in MUTANTS]
    assert len(names) == len(set(names)) >= 25
    for m in MUTANTS:
        tree = apply(m, tmp_path / "tree")
        assert m.new in (tree / m.path).read_text()


def test_a_drifted_mutant_is_named(tmp_path):
    with pytest.raises(ValueError, match=r"mutant 'ghost': 'no such text' occurs 0 times in hdl/pe.py"):
        apply(Mutant("ghost", "hdl/pe.py", "no such text", "x", "none"), tmp_path / "tree")


def test_the_harness_kills_and_spares(tmp_path):
    """A detector mutant fails the detector's block test on the Amaranth
    simulator; the same test on an unchanged tree (an identity mutant) passes."""
    args = ["-x", "-q", "-p", "no:cacheprovider", "tb/test_blocks.py", "-k", "detector-amaranth"]
    killed = run(next(m for m in MUTANTS if m.name == "detector_full"), tmp_path / "a", args, jobs=1)
    assert killed["killed"], killed["tail"]
    same = Mutant("identity", "hdl/detector.py", "full = (x9 & full_mask) == 0", "full = (x9 & full_mask) == 0", "none")
    assert not run(same, tmp_path / "b", args, jobs=1)["killed"]


def test_a_hang_is_killed_at_the_timeout(tmp_path):
    """An unchanged tree whose run outlasts the timeout counts as killed
    (a hang), and its pytest process group is gone afterwards."""
    same = Mutant("identity", "hdl/detector.py", "full = (x9 & full_mask) == 0", "full = (x9 & full_mask) == 0", "none")
    args = ["-q", "-p", "no:cacheprovider", "tb/test_blocks.py", "-k", "detector-amaranth"]
    r = run(same, tmp_path / "c", args, jobs=1, timeout=0.5)
    assert r["killed"] and r["tail"] == ["timeout after 0.5 s (a hang)"], r


def test_each_mutant_names_tests_and_proofs_make_test_runs():
    """A mutant's own tests are files of the tree (and their functions in
    them); its proofs are ``make test``'s (in PROOFS, not ``slow``), so a
    mutant they kill is killed in ``make test``. Every file group is named."""
    import pathlib

    from kaleido.tb.formal import PROOFS
    from kaleido.tb.mutate import ROOT

    for m in MUTANTS:
        for test in m.tests:
            path, _, func = test.partition("::")
            assert (ROOT / path).is_file(), (m.name, test)
            assert not func or f"def {func}(" in pathlib.Path(ROOT / path).read_text(), (m.name, test)
        for proof in m.proofs:
            assert proof in PROOFS and not PROOFS[proof].slow, (m.name, proof)
        assert m.suite == ("fast+formal" if m.proofs else "fast")
        assert m.group in {"hdl", "golden", "model", "exploration", "energy/area/efficiency"}, (m.name, m.path)
    # issue 46, item 5: the models, the quality metrics and the bounds are reached
    paths = {m.path for m in MUTANTS}
    for path in ["kaleido/energy.py", "kaleido/area.py", "kaleido/efficiency.py", "synth/core.py"]:
        assert path in paths, path
    assert {"golden/attention.py", "hdl/pv_tile.py", "hdl/mem_port.py", "hdl/accumulation_buffer.py"} <= paths
    queue = next(m for m in MUTANTS if m.name == "array_set_highest_free")
    assert queue.proofs == ("array_set_queue",)


def test_scores_per_group():
    """A kill by a proof counts; a group below the goal shows its rate
    rounded down (18 of 19 is 94.7 %, never 95 %)."""
    from kaleido.tb.mutate import percent_down, scores

    def entry(path, killed, by=None, equivalent=None):
        return {"path": path, "killed": killed, "killed_by": by, "equivalent": equivalent}

    report = {f"h{i}": entry("hdl/x.py", i != 0) for i in range(19)}
    report["q"] = entry("hdl/array_set.py", True, "proof")
    report["e"] = entry("kaleido/energy.py", True, "fast")
    report["eq"] = entry("kaleido/area.py", False, equivalent="no behaviour changes")
    got = scores(report)
    assert got["hdl"]["killed"] == 19 and got["hdl"]["non_equivalent"] == 20 and got["hdl"]["meets_goal"]
    assert got["hdl"]["killed_by_proof"] == ["q"]
    assert got["energy/area/efficiency"] == {
        "mutants": 2,
        "non_equivalent": 1,
        "killed": 1,
        "killed_by_proof": [],
        "rate": 1.0,
        "goal": 0.95,
        "meets_goal": True,
    }
    del report["q"]
    low = scores(report)["hdl"]
    assert not low["meets_goal"] and percent_down(low["rate"]) == "94.7 %"
    assert percent_down(0.94999) == "94.9 %" and list(scores(report))[-1] == "all"


def test_a_scratch_tree_sees_the_history(tmp_path):
    """The scratch tree has the checkout's history and HEAD, so the
    synthesis report's staleness tests pass on an unchanged tree (they
    failed on every mutant when git found the checkout around build/)."""
    same = Mutant("identity", "hdl/detector.py", "full = (x9 & full_mask) == 0", "full = (x9 & full_mask) == 0", "none")
    args = ["-x", "-q", "-p", "no:cacheprovider", "tb/test_efficiency.py", "-k", "provenance or current"]
    r = run(same, tmp_path / "d", args, jobs=1)
    assert not r["killed"], r["tail"]
    assert r["killed_by"] is None and r["failed"] == [] and r["stages"] == ["fast"]


def test_stages():
    """A mutant's own tests first, then the fast suite, then its proofs
    (the fast suite left out with ``targeted``)."""
    from kaleido.tb.mutate import FAST_SUITE, stages_of

    m = next(m for m in MUTANTS if m.name == "array_set_highest_free")
    stages = stages_of(m, None, False)
    assert [s for s, _ in stages] == ["tests", "fast", "proof"]
    assert stages[0][1][-1] == m.tests[0] and stages[1][1] == FAST_SUITE
    assert stages[2][1][-1] == "tb/test_formal.py::test_proof[array_set_queue]"
    assert "not soak and not slow" in stages[2][1]
    assert [s for s, _ in stages_of(m, None, True)] == ["tests", "proof"]
    assert stages_of(m, ["x"], False) == [("fast", ["x"])]
    fast = dict(stages_of(m, None, False, ("tb/test_a.py::test_b",)))["fast"]
    assert fast[-2:] == ["--deselect=tb/test_a.py::test_b", "tb"]


def test_the_fast_suite_leaves_out_this_file(tmp_path):
    """In a mutated tree the mutant's own ``old`` text is gone, so
    :func:`test_every_mutant_applies_once` fails there whatever the mutant
    does; the fast suite leaves this file out, or every mutant would count
    as killed by it."""
    from kaleido.tb.mutate import FAST_SUITE

    m = next(m for m in MUTANTS if m.name == "array_set_highest_free")
    tree = apply(m, tmp_path / "tree")
    assert (tree / m.path).read_text().count(m.old) == 0
    assert {"--ignore=tb/test_mutate.py", "--ignore=tb/test_lint.py"} <= set(FAST_SUITE) and FAST_SUITE[-1] == "tb"


def test_recorded_durations_order_the_suite_shortest_first(tmp_path):
    """The baseline's durations (tb/conftest.py, :data:`RECORD_ENV`) order a
    later run shortest first (:data:`ORDER_ENV`), tests not recorded last."""
    import json
    import os
    import subprocess
    import sys

    from kaleido.tb.mutant import ORDER_ENV, RECORD_ENV
    from kaleido.tb.mutate import ROOT

    record = tmp_path / "durations.json"
    run = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tb/test_headroom.py"]
    env = {**os.environ, RECORD_ENV: str(record)}
    subprocess.run(run, cwd=ROOT, env=env, check=True, capture_output=True)
    recorded = json.loads(record.read_text())
    assert len(recorded) == 9 and all(k.startswith("tb/test_headroom.py::") for k in recorded)
    last, first = sorted(recorded)[:2]
    order = tmp_path / "order.json"
    order.write_text(json.dumps({last: 2.0, first: 1.0}))
    env = {**os.environ, ORDER_ENV: str(order)}
    out = subprocess.run([*run, "--collect-only"], cwd=ROOT, env=env, check=True, capture_output=True, text=True)
    ids = [line for line in out.stdout.splitlines() if "::" in line]
    assert ids[:2] == [first, last] and set(ids) == set(recorded)


def test_a_second_run_on_the_same_scratch_tree_is_refused(tmp_path):
    """Two runs sharing ``build/mutate/tree`` would delete each other's files
    and count the other's failures as kills: the second exits, named."""
    from kaleido.tb.mutate import main, scratch_lock

    held = scratch_lock(tmp_path)
    try:
        with pytest.raises(SystemExit, match="another make mutate runs in"):
            main(["--only", "pe_shift", "--out", str(tmp_path / "report.json")])
    finally:
        held.close()
