"""Amaranth RTL of the Kaleido PE, array and dispatcher (``kaleido.hdl``)."""
