"""Formal checks (tb/formal.py, `make formal`): the stream rule on every
output of the dispatcher's blocks, proved by k-induction; and a seeded
violation that the same flow finds."""

import os

import pytest
from amaranth import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from kaleido.tb.formal import PROOFS, Proof, StreamHolds, run_sby

pytestmark = pytest.mark.formal


def _workdir(tmp_path, name):
    """YoWASP tools need relative paths."""
    import os

    root = os.path.relpath(tmp_path / name)
    return root if not root.startswith("..") else os.path.join("build", "formal", tmp_path.name, name)


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=[pytest.mark.slow] if p.slow else []) for n, p in PROOFS.items()]
)
def test_proof(name, tmp_path):
    passed, log = run_sby(PROOFS[name], _workdir(tmp_path, name))
    assert passed, log


class _Leaky(wiring.Component):
    """A register stage that withdraws valid on every other cycle (a seeded
    violation of the stream rule)."""

    def __init__(self):
        super().__init__({"i": In(stream.Signature(8)), "o": Out(stream.Signature(8))})

    def elaborate(self, platform):
        m = Module()
        toggle = Signal()
        m.d.sync += toggle.eq(~toggle)
        with m.If(self.i.valid & self.i.ready):
            m.d.sync += self.o.payload.eq(self.i.payload)
        m.d.comb += [self.o.valid.eq(toggle), self.i.ready.eq(1)]
        return m


def test_a_seeded_violation_is_found(tmp_path):
    passed, log = run_sby(
        Proof("leaky", lambda: StreamHolds(_Leaky(), ("o",)), mode="bmc", depth=4), _workdir(tmp_path, "leaky")
    )
    assert not passed and "FAIL" in log, log


def test_report(tmp_path):
    """`make formal`'s report: block -> property -> status, engine, depth, seconds."""
    import json

    from kaleido.tb.formal import main

    out = os.path.join(_workdir(tmp_path, "report"), "report.json")
    assert main(["--only", "detector_stream", "--out", out, "--jobs", "1"]) == 0
    entry = json.load(open(out))["detector"]["stream"]
    assert entry["status"] == "pass" and entry["mode"] == "prove" and entry["depth"] == 8 and entry["seconds"] > 0
    with pytest.raises(SystemExit, match="unknown proof 'nope'"):
        main(["--only", "nope", "--out", out])


#: seeded bugs (tb/mutate.py) and the proof each must make fail
SEEDED = [
    ("detector_ignores_ready", "detector_stream"),  # drop ready on one port
    ("decode_t0", "pe_full8_product"),  # change one decode entry
    ("matcher_merges_full", "matcher_function"),  # let the matcher merge a FULL channel
]


@pytest.mark.parametrize(("mutant", "proof"), SEEDED)
def test_seeded_bug_fails_its_proof(mutant, proof, tmp_path):
    """Each seeded bug, applied to a scratch copy of the tree, makes its
    named property fail (and the same proof passes on the tree itself:
    test_proof)."""
    import subprocess
    import sys

    from kaleido.tb.mutate import MUTANTS, apply

    tree = apply(next(m for m in MUTANTS if m.name == mutant), tmp_path / "tree")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "kaleido.tb.formal",
            "--only",
            proof,
            "--out",
            "build/formal/report.json",
            "--jobs",
            "1",
        ],
        cwd=tree,
        env={**os.environ, "PYTHONPATH": str(tree)},
        capture_output=True,
        text=True,
    )
    assert out.returncode == 1, out.stdout + out.stderr
    assert f"{proof}" in out.stdout and " fail " in out.stdout, out.stdout
