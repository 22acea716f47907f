"""Pass dispatcher feeding the Kaleido array (of :class:`~kaleido.hdl.qk_pe.QkPE`,
as the core builds it): passes in, tiles out."""

from amaranth import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..config import KaleidoConfig
from ._common import as_config
from .array import KaleidoArray
from .dispatcher import PassDispatcher, pass_layout
from .layouts import tile_layout
from .qk_pe import QkPE

__all__ = ["DispatchedArray"]


class DispatchedArray(wiring.Component):
    """:class:`PassDispatcher` -> :class:`KaleidoArray` of :class:`QkPE`. ``passes`` is a
    stream of pass operands (``pass_layout``); ``hold`` stalls the array
    (and so the dispatcher, through ``ready``); ``tiles`` as the array's.
    Cycle count: the cycle model with ``dispatcher=True``."""

    def __init__(self, config: KaleidoConfig | None = None):
        config = as_config(config)
        self._config = config
        R, C = config.array_rows, config.array_cols
        super().__init__(
            {
                "passes": In(stream.Signature(pass_layout(R, C, config.batch))),
                "hold": In(1),
                "tiles": Out(tile_layout(config.acc_width)).array(R, C),
            }
        )

    def elaborate(self, platform):
        m = Module()
        cfg = self._config
        m.submodules.dispatcher = disp = PassDispatcher(cfg)
        m.submodules.array = array = KaleidoArray(cfg, pe=QkPE)
        wiring.connect(m, wiring.flipped(self.passes), disp.passes)
        wiring.connect(m, disp.beats, array.slots)
        m.d.comb += array.hold.eq(self.hold)
        m.d.comb += [
            self.tiles[r][c].eq(array.tiles[r][c]) for r in range(cfg.array_rows) for c in range(cfg.array_cols)
        ]
        return m
