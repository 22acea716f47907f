"""pytest runners and cocotb testbenches (``kaleido.tb``)."""
