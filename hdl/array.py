"""The output-stationary Kaleido PE array (spec sec. 7)."""

from amaranth import Module, Signal
from amaranth.hdl import EnableInserter
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..config import KaleidoConfig, tile_latency
from ._common import as_config
from .layouts import slot_layout, tile_layout
from .pe import KaleidoPE
from .skew import Skew

__all__ = ["KaleidoArray"]


class _Core(wiring.Component):
    def __init__(self, config, pe):
        self._config, self._pe = config, pe
        R, C = config.array_rows, config.array_cols
        super().__init__(
            {
                "beat": In(slot_layout(R, C)),
                "tiles": Out(tile_layout(config.acc_width)).array(R, C),
            }
        )

    def elaborate(self, platform):
        m = Module()
        cfg = self._config
        R, C = cfg.array_rows, cfg.array_cols
        # the beat register (BEAT_REGISTER): the dispatcher's operand
        # select ends here, the PEs' multipliers start after it
        beat = Signal(slot_layout(R, C), name="beat_reg")
        m.d.sync += beat.eq(self.beat)
        m.submodules.skew = skew = Skew(R, C)
        m.d.comb += [skew.ctl.eq(beat.ctl)]
        m.d.comb += [skew.rows[r].eq(beat.rows[r]) for r in range(R)]
        m.d.comb += [skew.cols[c].eq(beat.cols[c]) for c in range(C)]
        pes = [[self._pe(cfg) for _ in range(C)] for _ in range(R)]
        for r in range(R):
            for c in range(C):
                pe = pes[r][c]
                m.submodules[f"pe_{r}_{c}"] = pe
                west_row = skew.rows_out[r] if c == 0 else pes[r][c - 1].row_out
                west_ctl = skew.ctl_out[r] if c == 0 else pes[r][c - 1].ctl_out
                north = skew.cols_out[c] if r == 0 else pes[r - 1][c].col_out
                m.d.comb += [
                    pe.row_in.eq(west_row),
                    pe.ctl_in.eq(west_ctl),
                    pe.col_in.eq(north),
                    self.tiles[r][c].eq(pe.tile),
                ]
        return m


class KaleidoArray(wiring.Component):
    """``array_rows x array_cols`` output-stationary array of :class:`KaleidoPE`.

    Interface (unskewed; the skew lives in :class:`Skew`):

    * ``slots``: a stream of beats (``slot_layout``). A transfer with
      ``ctl.slot = 1`` is one slot; ``ctl.slot = 0, ctl.last = 1`` is the
      marker of a phase without slots. A cycle without a transfer is a bubble.
    * ``hold``: global clock enable (stall) for the whole array; ``slots.ready``
      is ``~hold``. A tile is delivered on a cycle with ``tiles[r][c].valid``
      and not ``hold``.
    * ``tiles[r][c]``: PE ``(r, c)``'s drain register: it pulses ``valid`` for
      one cycle with its phase and value ``r + c + 3`` cycles after the
      ``last`` beat was accepted (:attr:`tile_latency`: the beat register,
      the skew and hops, the PE's product and drain registers).

    One beat per cycle while beats flow; phases and passes stream back to
    back with no gap.

    ``pe``: the PE class, :class:`KaleidoPE` (both modes) or, for an array
    that only ever sees ``P V`` beats, :class:`~kaleido.hdl.pv_pe.PvPE`.
    """

    def __init__(self, config: KaleidoConfig | None = None, pe: type = KaleidoPE):
        config = as_config(config)
        self._config, self._pe = config, pe
        R, C = config.array_rows, config.array_cols
        super().__init__(
            {
                "slots": In(stream.Signature(slot_layout(R, C))),
                "hold": In(1),
                "tiles": Out(tile_layout(config.acc_width)).array(R, C),
            }
        )

    @property
    def config(self):
        return self._config

    def tile_latency(self, r: int, c: int) -> int:
        """Cycles from accepting a ``last`` beat to PE ``(r, c)``'s tile
        valid: :func:`kaleido.config.tile_latency`, ``r + c + 3``."""
        return tile_latency(r, c)

    def elaborate(self, platform):
        m = Module()
        R, C = self._config.array_rows, self._config.array_cols
        core = _Core(self._config, self._pe)
        m.submodules.core = EnableInserter(~self.hold)(core)
        take = self.slots.valid & ~self.hold
        m.d.comb += [
            self.slots.ready.eq(~self.hold),
            core.beat.eq(self.slots.payload),
            core.beat.ctl.slot.eq(take & self.slots.payload.ctl.slot),
            core.beat.ctl.last.eq(take & self.slots.payload.ctl.last),
        ]
        m.d.comb += [self.tiles[r][c].eq(core.tiles[r][c]) for r in range(R) for c in range(C)]
        return m
