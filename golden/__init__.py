"""Bit-exact numpy golden model of channel-wise reuse attention.

Pure numpy: no amaranth, cocotb, RTL or testbench imports (an import-graph
test enforces it). The RTL tests compare the hardware against this
package, never the other way round. One module per concept:

reuse      pairing classes, effective operands, exact scores
ops        operation counts (dense, oracle, hardware)
attention  attention output, quality metrics, skip baselines
softmax    the fixed-point softmax and P V, as the hardware computes them
pe         the PE (a grid of PEs sharing one slot stream)
matcher    need derivation and the channel matcher
array      one array pass: beats and drained tiles
scheduler  the Hamming-clustering scheduler and its LFSR
loopnest   every pass of a head, and S accumulated from their tiles
workloads  synthetic workloads and the .npz exchange format
"""

from ..encoding import ABSENT, Need, PeNeed, Phase, Reuse, SlotKind, tile_parts
from ..loopnest import DIRECTIONS, group_slices, pairs
from .array import array_pass
from .attention import AttentionResult, metrics, reuse_attention, skip_baselines, windowed_classify
from .loopnest import Pass, iter_passes, pass_operands, scores_by_passes
from .matcher import channel_needs, match
from .ops import COSTS, cost_table, op_counts
from .pe import PEModel
from .reuse import classify, effective, exact_matmul, lead_eq, reuse_scores

__all__ = [
    "ABSENT",
    "DIRECTIONS",
    "Reuse",
    "classify",
    "effective",
    "exact_matmul",
    "lead_eq",
    "pairs",
    "group_slices",
    "reuse_scores",
    "COSTS",
    "cost_table",
    "op_counts",
    "AttentionResult",
    "metrics",
    "reuse_attention",
    "skip_baselines",
    "windowed_classify",
    "Phase",
    "PeNeed",
    "SlotKind",
    "Need",
    "PEModel",
    "array_pass",
    "channel_needs",
    "match",
    "Pass",
    "pass_operands",
    "iter_passes",
    "scores_by_passes",
    "tile_parts",
]
