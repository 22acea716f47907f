"""Paper-reproduction report: ``make report`` -> docs/REPORT.md, with PNG
plots and CSVs in docs/report/.

Every number comes from the golden model and the cycle model (validated
cycle for cycle against the RTL in the test suite) on SYNTHETIC workloads
(docs/WORKLOADS.md). Each figure stands beside the paper's for comparison.

One module per figure group: :mod:`.base` (the report's state, CSVs and
bar plots), :mod:`.ops` (figs. 9 and 18c), :mod:`.variants` (fig. 19, the
designs, the accumulators), :mod:`.block` (fig. 20), :mod:`.sweeps` (figs.
21, 23, 24), :mod:`.cycles` (the phase breakdown, the speedup
decomposition, SCALE-Sim), :mod:`.cost` (energy, efficiency against the
fair dense core), :mod:`.design_space` (the exploration, the ceiling, the
window PE), :mod:`.summary` (the targets) and :mod:`.cli` (``main``).
"""

from __future__ import annotations

from .base import Report, bar_plot, finish_plot, pyplot, save_csv
from .block import fig20
from .cli import main
from .cost import efficiency_section, energy
from .cycles import breakdown, decomposition, scalesim_section
from .design_space import ceiling, exploration, window_pe_section
from .ops import fig9, fig18c
from .summary import targets
from .sweeps import fig21, fig23, fig24
from .variants import COMPARED_DESIGNS, accumulators, designs, fig19

__all__ = [
    "COMPARED_DESIGNS",
    "Report",
    "accumulators",
    "bar_plot",
    "breakdown",
    "ceiling",
    "decomposition",
    "designs",
    "efficiency_section",
    "energy",
    "exploration",
    "fig9",
    "fig18c",
    "fig19",
    "fig20",
    "fig21",
    "fig23",
    "fig24",
    "finish_plot",
    "main",
    "pyplot",
    "save_csv",
    "scalesim_section",
    "targets",
    "window_pe_section",
]
