"""``python -m kaleido.tb.formal`` (`make formal`): :func:`kaleido.tb.formal.cli.main`."""

import sys

from kaleido.tb.formal.cli import main

if __name__ == "__main__":
    sys.exit(main())
