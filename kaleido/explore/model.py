"""The exploration's cycle model (issue 14): the product's stage timings
(:mod:`kaleido.stage_timing`: ``Q K^T`` with the explorer's degrees of
freedom, ``P V``, the softmax unit), re-exported here for the research
code, and where a ``Q K^T``'s cycles go (:func:`qk_cycle_budget`)."""

from __future__ import annotations

from ..stage_timing import (
    DISPATCHES,
    ISSUES,
    ORDERS,
    SOFTMAX_LANES,
    QkTiming,
    check_sub_array,
    deal_passes,
    match_slots,
    pass_beats,
    pv_timing,
    qk_passes,
    qk_timing,
    softmax_stage_cycles,
)

__all__ = [
    "ORDERS",
    "ISSUES",
    "DISPATCHES",
    "QkTiming",
    "match_slots",
    "pass_beats",
    "qk_passes",
    "deal_passes",
    "check_sub_array",
    "qk_cycle_budget",
    "qk_timing",
    "pv_timing",
    "softmax_stage_cycles",
    "SOFTMAX_LANES",
]


def qk_cycle_budget(t: QkTiming) -> dict:
    """Where a ``Q K^T``'s cycles go, in cycles of the whole machine (its
    ``PEs``, two nibble multiplies each a beat), summing to ``t.cycles``:

    * ``work``: the hardware's nibble multiplies at two per PE a cycle
      (``ops["hw"] / (2 PEs)``, the op bound);
    * ``issue``: the arrays' beats beyond that (slots issued to PEs that do
      not need them, phases of one idle beat, pass gaps), averaged over
      the arrays;
    * ``imbalance``: the busiest array's beats beyond the average;
    * ``drain``: the last tile's latency (and the pass gap's cycle).

    ``dense_work`` is the dense array's ``ops["dense"] / (2 PEs)``."""
    arrays = len(t.array_beats)
    work = t.ops["hw"] / (2 * t.PEs)
    mean = sum(t.array_beats) / arrays
    return {
        "work": work,
        "issue": mean - work,
        "imbalance": max(t.array_beats) - mean,
        "drain": t.drain,
        "dense_work": t.ops["dense"] / (2 * t.PEs),
    }
