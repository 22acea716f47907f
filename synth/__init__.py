"""Yosys synthesis flow (``kaleido.synth``)."""
