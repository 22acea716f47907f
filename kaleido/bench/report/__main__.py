"""``python -m kaleido.bench.report``: :func:`kaleido.bench.report.cli.main`."""

from .cli import main

main()
