"""Progress bars for the command lines (tqdm)."""

from __future__ import annotations

import sys
from collections.abc import Callable

from tqdm import tqdm

__all__ = ["batch_progress"]


def batch_progress(unit: str = "batch") -> Callable[[int, int], None]:
    """A ``progress(done, total)`` callback (as :func:`kaleido.model.run_model`
    takes) drawing a tqdm bar on stderr; silent when stderr is not a
    terminal. A new callback per run: it holds its own bar."""
    bar: tqdm | None = None

    def update(done: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            bar = tqdm(total=total, unit=unit, file=sys.stderr, disable=None, leave=False, dynamic_ncols=True)
        bar.update(done - bar.n)
        if done >= total:
            bar.close()

    return update
