"""Design exploration (issue 14), apart from the product: the heads
(:mod:`.workloads`), the candidates (:mod:`.candidate`, the sweep's lists
:mod:`.candidate_sets`, an array shape's area :mod:`.shape_area`), one
candidate on one head (:mod:`.measurement`), the sweep (:mod:`.explorer`),
its ranking and cycle budget (:mod:`.ranking`) and report
(:mod:`.report`), the op bounds (:mod:`.op_bounds`), their ceilings
(:mod:`.ceilings`) and their tables and files (:mod:`.bounds_io`), the
exploration's cycle model (:mod:`.model`, on the product's
:mod:`kaleido.stage_timing`), the window PE (:mod:`.window_model`,
:mod:`.window_pe`), delta-coded P rows (:mod:`.row_delta`), the cycle
model's reference walk (:mod:`.reference_walk`) and ``kaleido explore``'s
command line (:mod:`.cli`; ``python -m kaleido.explore``).

No product module imports this package (tb/test_layers.py enforces it; the
one allowed edge is :mod:`kaleido.cli` registering ``kaleido explore``);
benches and tests may. Its public API is the explorer's, as
``kaleido.explore`` had it before it became a package (``FLOOR`` and
``LADDER`` are :mod:`kaleido.calibrate`'s).
"""

from __future__ import annotations

from ..calibrate import FLOOR, LADDER
from .bounds_io import (
    BOUNDS_CSV,
    BOUNDS_FIELDS,
    bound_rows,
    bounds_table,
    fmt_thresholds,
    parse_thresholds,
    read_bounds_csv,
    write_bounds,
    write_bounds_csv,
)
from .candidate import ADAPTIVE, DEFAULT, PAPER, Candidate
from .candidate_sets import (
    SHAPES,
    SMALL_P_BASES,
    built_candidates,
    candidates,
    quick_candidates,
    shape_candidates,
    small_p_candidates,
)
from .ceilings import CALIBRATION_MARGIN, calibrated_ceiling, fixed_ceiling, set_stats, stacked_ceiling
from .cli import add_arguments, main, run
from .explorer import evaluate, explore, merge, rerank
from .measurement import measure, quality
from .op_bounds import BOUND_THRESHOLDS, CALIBRATION, window_bounds
from .ranking import BUDGET_PARTS, aggregate, cycle_budget, frontier, geomean, rank
from .report import budget_table, summary, write
from .shape_area import ARRAYS_PER_DISPATCHER, BLOCK_TRANSISTORS, shape_transistors
from .workloads import HELD_OUT, TUNING, WorkloadSpec, calibration_spec

__all__ = [
    "WorkloadSpec",
    "TUNING",
    "HELD_OUT",
    "Candidate",
    "PAPER",
    "DEFAULT",
    "FLOOR",
    "LADDER",
    "ADAPTIVE",
    "calibration_spec",
    "candidates",
    "SHAPES",
    "shape_candidates",
    "BLOCK_TRANSISTORS",
    "ARRAYS_PER_DISPATCHER",
    "shape_transistors",
    "quick_candidates",
    "quality",
    "measure",
    "evaluate",
    "aggregate",
    "rank",
    "frontier",
    "BUDGET_PARTS",
    "cycle_budget",
    "budget_table",
    "explore",
    "rerank",
    "merge",
    "window_bounds",
    "geomean",
    "set_stats",
    "parse_thresholds",
    "BOUNDS_CSV",
    "bound_rows",
    "BOUND_THRESHOLDS",
    "fmt_thresholds",
    "CALIBRATION",
    "CALIBRATION_MARGIN",
    "calibrated_ceiling",
    "stacked_ceiling",
    "fixed_ceiling",
    "bounds_table",
    "BOUNDS_FIELDS",
    "write_bounds",
    "write_bounds_csv",
    "read_bounds_csv",
    "built_candidates",
    "SMALL_P_BASES",
    "small_p_candidates",
    "summary",
    "write",
    "add_arguments",
    "run",
    "main",
]
