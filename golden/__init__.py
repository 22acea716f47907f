"""Bit-exact numpy golden model of channel-wise reuse attention.

Pure numpy: no amaranth or cocotb imports. The RTL tests compare the
hardware against this package, never the other way round.
"""

from .reuse import (ABSENT, DIRECTIONS, Reuse, classify, effective, exact_matmul, lead_eq,
                    pairs, reuse_scores)
from .ops import COSTS, cost_table, op_counts
from .attention import AttentionResult, metrics, reuse_attention, skip_baselines, windowed_classify
from .pe import (Phase, PeNeed, SlotKind, Need, PEModel, array_pass, channel_needs, match,
                 pass_operands, scores_by_passes, tile_parts)

__all__ = [
    "ABSENT", "DIRECTIONS", "Reuse", "classify", "effective", "exact_matmul", "lead_eq", "pairs",
    "reuse_scores", "COSTS", "cost_table", "op_counts", "AttentionResult", "metrics",
    "reuse_attention", "skip_baselines", "windowed_classify", "Phase", "PeNeed", "SlotKind",
    "Need", "PEModel", "array_pass", "channel_needs", "match", "pass_operands",
    "scores_by_passes", "tile_parts",
]
