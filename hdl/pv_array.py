"""P V dispatcher feeding the Kaleido array: contraction units in, tiles
out (issue 12)."""

from amaranth import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..config import KaleidoConfig
from ._common import as_config
from .array import KaleidoArray
from .layouts import tile_layout
from .pv_dispatcher import PvDispatcher, pv_unit_layout
from .pv_pe import PvPE

__all__ = ["PvArray", "pv_array_signature"]


def pv_array_signature(config: KaleidoConfig) -> dict:
    """The ports of a P V array (:class:`PvArray`, and the dense one):
    ``units`` in, ``hold``, ``tiles`` out."""
    R, C = config.array_rows, config.array_cols
    return {
        "units": In(stream.Signature(pv_unit_layout(R, C))),
        "hold": In(1),
        "tiles": Out(tile_layout(config.acc_width)).array(R, C),
    }


class PvArray(wiring.Component):
    """:class:`PvDispatcher` -> :class:`KaleidoArray` in P V mode. ``units``
    (``pv_unit_layout``) is the stream of a head's P V passes, unit by unit;
    ``hold`` stalls the array (and so the dispatcher); ``tiles`` as the
    array's: each pass drains one partial ``O`` tile (phase T3), PE ``(r,
    c)`` ``r + c + 1`` cycles after the pass's last beat. Cycle count:
    :func:`kaleido.model.pv_cycles`."""

    def __init__(self, config: KaleidoConfig | None = None):
        config = as_config(config)
        self._config = config
        super().__init__(pv_array_signature(config))

    def elaborate(self, platform):
        m = Module()
        cfg = self._config
        m.submodules.dispatcher = disp = PvDispatcher(cfg)
        m.submodules.array = array = KaleidoArray(cfg, pe=PvPE)
        wiring.connect(m, wiring.flipped(self.units), disp.units)
        wiring.connect(m, disp.beats, array.slots)
        m.d.comb += array.hold.eq(self.hold)
        m.d.comb += [
            self.tiles[r][c].eq(array.tiles[r][c]) for r in range(cfg.array_rows) for c in range(cfg.array_cols)
        ]
        return m
