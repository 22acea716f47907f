"""``python -m kaleido.bench.explore``: the design exploration of issue 14
(:mod:`kaleido.explore`; ``make explore``)."""

from __future__ import annotations

import sys

from ..explore import main

if __name__ == "__main__":
    sys.exit(main())
