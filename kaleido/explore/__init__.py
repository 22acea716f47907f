"""Design exploration (issue 14), apart from the product: the candidates
and their ranking, the op bounds and ceilings (:mod:`.explorer`), the
exploration's cycle model (:mod:`.model`, on the product's
:mod:`kaleido.stage_timing`), the window PE (:mod:`.window_model`,
:mod:`.window_pe`), delta-coded P rows (:mod:`.row_delta`), the cycle
model's reference walk (:mod:`.reference_walk`) and ``kaleido explore``'s
command line (:mod:`.cli`; ``python -m kaleido.explore``).

No product module imports this package (tb/test_layers.py enforces it; the
one allowed edge is :mod:`kaleido.cli` registering ``kaleido explore``);
benches and tests may. Its public API is the explorer's, as
``kaleido.explore`` had it before it became a package.
"""

from __future__ import annotations

from . import explorer
from .cli import add_arguments, main, run
from .explorer import *  # noqa: F403  (the explorer's API is the package's)

__all__ = [*explorer.__all__, "add_arguments", "run", "main"]
