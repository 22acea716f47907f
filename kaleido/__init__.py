"""Kaleido: channel-wise reuse attention accelerator (arXiv 2607.13770).

Sub-packages
------------
kaleido.config   the one frozen configuration object, read by every part
kaleido.golden   bit-exact numpy golden model and synthetic workloads
kaleido.hdl      Amaranth RTL
kaleido.tb       pytest runners and cocotb testbenches
kaleido.synth    Yosys flow
"""

from .config import PRESETS, KaleidoConfig

__all__ = ["KaleidoConfig", "PRESETS"]
__version__ = "0.1.0"
