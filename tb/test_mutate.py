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
