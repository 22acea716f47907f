"""The Q K^T arrays' PE (:class:`kaleido.hdl.qk_pe.QkPE`) against the
Kaleido PE it specialises: both on the same random ``Q K^T`` beats (what a
pass dispatcher sends: ``ctl.pv`` = 0, any phase, FULL8 or DUAL_LO, any
operands and row and column tags, slots, bubbles and drains), every cycle
the same tile and the same forwarded fields. The engine and core tests
check the arrays built of it against the golden model, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from kaleido import KaleidoConfig
from kaleido.encoding import Phase, SlotKind
from kaleido.hdl.pe import KaleidoPE
from kaleido.hdl.qk_pe import QkPE
from kaleido.tb.pe_pair import differences

CYCLES = 3000

#: the fields a Q K^T beat carries, forwarded east (row) and south (column)
ROW_FIELDS = ("r0", "r1", "q0", "q1")
COL_FIELDS = ("k", "k0", "k1")
CTL_FIELDS = ("slot", "kind", "phase", "last")


def _beat(rng) -> dict:
    """One random Q K^T beat: a slot or a bubble, sometimes the last of its phase."""
    return {
        "slot": int(rng.random() < 0.8),
        "last": int(rng.random() < 0.15),
        "kind": SlotKind.DUAL_LO if rng.random() < 0.4 else SlotKind.FULL8,
        "phase": Phase(int(rng.integers(0, 4))),
        "r0": int(rng.integers(-128, 128)),
        "r1": int(rng.integers(-128, 128)),
        "q0": int(rng.integers(0, 4)),
        "q1": int(rng.integers(0, 4)),
        "k": int(rng.integers(0, 256)),
        "k0": int(rng.integers(0, 4)),
        "k1": int(rng.integers(0, 4)),
    }


def _drive(ctx, pe, b: dict) -> None:
    for f in CTL_FIELDS:
        ctx.set(getattr(pe.ctl_in, f), b[f])
    ctx.set(pe.ctl_in.pv, 0)
    for f in ROW_FIELDS:
        ctx.set(getattr(pe.row_in, f), b[f])
    for f in COL_FIELDS:
        ctx.set(getattr(pe.col_in, f), b[f])


def _run(cfg: KaleidoConfig, seed: int, pe: type = QkPE) -> list[tuple]:
    """Drive the Kaleido PE and ``pe``; return the cycles where they differ
    (cycle, what, Kaleido PE's, ``pe``'s)."""
    ref, dut = KaleidoPE(cfg), pe(cfg)
    rng = np.random.default_rng(seed)
    compared = [("tile", ref.tile, dut.tile)]
    for port, fields in (("row_out", ROW_FIELDS), ("col_out", COL_FIELDS), ("ctl_out", CTL_FIELDS)):
        compared += [(f"{port}.{f}", getattr(getattr(ref, port), f), getattr(getattr(dut, port), f)) for f in fields]
    return differences(ref, dut, [_beat(rng) for _ in range(CYCLES)], _drive, compared)


@pytest.mark.parametrize("design", ["default", "one_array", "paper"])
def test_qk_pe_equals_the_kaleido_pe_on_qk_beats(design, seed):
    """Four accumulators with and without small-P pairing (a P V feature the
    QkPE ignores), and the paper's three."""
    cfg = KaleidoConfig.preset("hunyuan", design)
    diffs = _run(cfg, seed)
    assert not diffs, f"seed {seed}: {len(diffs)} differences, first {diffs[:3]}"


class _SwappedDual(QkPE):
    """A seeded bug: multiplier B takes ``r0`` in DUAL_LO too."""

    def _operands(self, m):
        w = super()._operands(m)
        w.b_op = self.row_in.r0
        return w


def test_the_comparison_catches_a_wrong_operand(seed):
    """The check above fails on a PE whose DUAL_LO second operand is wrong."""
    diffs = _run(KaleidoConfig.one_array(), seed, _SwappedDual)
    assert any(what == "tile" for _, what, _, _ in diffs), f"seed {seed}: the seeded bug went unseen"
