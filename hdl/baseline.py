"""The dense baseline (spec sec. 13): an int8 MAC PE with one accumulator
and a dense output-stationary array built from it, with the same drain
mechanism (a drain register per PE) and the same skew discipline as the
Kaleido array.

Every choice open to both designs is the Kaleido PE's: the MAC gates its
product with a mux (no multiply by the enable), registers the product
before the accumulator (the Kaleido PE's product register, so both PEs
have :data:`~kaleido.config.PE_LATENCY` 2), accumulates the same depth,
one batch of ``BATCH`` products (``config.acc_width`` bits, 20 for BATCH
16), and drains it into the accumulation buffer. The habit of a 32-bit
accumulator (``MAC_WIDTH``) is available as ``width=32``; a MAC without the
product register as ``product_register=False`` (for the synthesis table
only: the dense cores use the registered PE)."""

from amaranth import Module, Mux, Signal, signed
from amaranth.hdl import EnableInserter
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..config import PE_LATENCY, KaleidoConfig
from ._common import as_config
from .layouts import tile_layout
from .pv_array import pv_array_signature
from .pv_dispatcher import pv_unit_layout

__all__ = ["MacPE", "DenseArray", "DensePvArray", "MAC_WIDTH"]

MAC_WIDTH = 32
MAC_CTL = data.StructLayout({"slot": 1, "last": 1})


class MacPE(wiring.Component):
    """Canonical int8 MAC: ``acc += slot ? a * b : 0`` per beat; on ``last``
    the tile (``acc`` plus this beat's product) goes to the drain register
    and ``acc`` restarts at 0. Operands forwarded east (``a``, control) and
    south (``b``) through registers.

    Parameters
    ----------
    width : int
        The accumulator width (at least 16).
    product_register : bool
        Register the gated product (and ``last``) before the accumulator,
        as the Kaleido PE does: a tile leaves :attr:`latency` = 2 cycles
        after its ``last`` beat, else 1.
    """

    def __init__(self, width: int = MAC_WIDTH, product_register: bool = True):
        if not isinstance(width, int) or width < 16:
            raise ValueError(f"MAC accumulator width must be an integer >= 16, not {width!r}")
        if not isinstance(product_register, bool):
            raise TypeError(f"product_register must be a bool, not {product_register!r}")
        self._width = width
        self._product_register = product_register
        super().__init__(
            {
                "a_in": In(signed(8)),
                "b_in": In(signed(8)),
                "ctl_in": In(MAC_CTL),
                "a_out": Out(signed(8)),
                "b_out": Out(signed(8)),
                "ctl_out": Out(MAC_CTL),
                "tile": Out(tile_layout(width)),
            }
        )

    @property
    def latency(self) -> int:
        """Cycles from a ``last`` beat at the inputs to the tile valid."""
        return PE_LATENCY if self._product_register else 1

    def elaborate(self, platform):
        m = Module()
        acc = Signal(signed(self._width))
        new = Signal(signed(self._width))
        m.d.sync += [self.a_out.eq(self.a_in), self.b_out.eq(self.b_in), self.ctl_out.eq(self.ctl_in)]
        product = Signal(signed(16))
        last = Signal()
        gated = Mux(self.ctl_in.slot, self.a_in * self.b_in, 0)
        if self._product_register:
            m.d.sync += [product.eq(gated), last.eq(self.ctl_in.last)]
        else:
            m.d.comb += [product.eq(gated), last.eq(self.ctl_in.last)]
        m.d.comb += new.eq(acc + product)
        m.d.sync += [self.tile.valid.eq(last), acc.eq(new)]
        with m.If(last):
            m.d.sync += [self.tile.value.eq(new), acc.eq(0)]
        return m


class DenseArray(wiring.Component):
    """``array_rows x array_cols`` dense output-stationary MAC array; input
    beats carry one int8 per row and per column, unskewed."""

    def __init__(self, config: KaleidoConfig | None = None):
        config = as_config(config)
        self._config = config
        R, C = config.array_rows, config.array_cols
        beat = data.StructLayout(
            {"ctl": MAC_CTL, "a": data.ArrayLayout(signed(8), R), "b": data.ArrayLayout(signed(8), C)}
        )
        super().__init__(
            {
                "slots": In(stream.Signature(beat)),
                "hold": In(1),
                "tiles": Out(tile_layout(config.acc_width)).array(R, C),
            }
        )

    def tile_latency(self, r: int, c: int) -> int:
        """Cycles from accepting a ``last`` beat to PE ``(r, c)``'s tile valid:
        the row skew ``r``, ``c`` hops east, the product register and the
        drain register (:func:`kaleido.config.tile_latency`, as the Kaleido
        array's)."""
        return r + c + PE_LATENCY

    def elaborate(self, platform):
        m = Module()
        R, C = self._config.array_rows, self._config.array_cols
        core = Module()
        take = self.slots.valid & ~self.hold
        ctl = Signal(MAC_CTL)
        core.d.comb += [
            ctl.slot.eq(take & self.slots.payload.ctl.slot),
            ctl.last.eq(take & self.slots.payload.ctl.last),
        ]

        def delay(value, shape, n):
            for _ in range(n):
                nxt = Signal(shape)
                core.d.sync += nxt.eq(value)
                value = nxt
            return value

        pes = [[MacPE(self._config.acc_width) for _ in range(C)] for _ in range(R)]
        for r in range(R):
            for c in range(C):
                pe = pes[r][c]
                core.submodules[f"pe_{r}_{c}"] = pe
                if c == 0:
                    core.d.comb += [
                        pe.a_in.eq(delay(self.slots.payload.a[r], signed(8), r)),
                        pe.ctl_in.eq(delay(ctl, MAC_CTL, r)),
                    ]
                else:
                    core.d.comb += [pe.a_in.eq(pes[r][c - 1].a_out), pe.ctl_in.eq(pes[r][c - 1].ctl_out)]
                north = delay(self.slots.payload.b[c], signed(8), c) if r == 0 else pes[r - 1][c].b_out
                core.d.comb += [pe.b_in.eq(north), self.tiles[r][c].eq(pe.tile)]
        m.submodules.core = EnableInserter(~self.hold)(core)
        m.d.comb += self.slots.ready.eq(~self.hold)
        return m


class DensePvArray(wiring.Component):
    """The dense P V array: :class:`~kaleido.hdl.pv_array.PvArray`'s ports
    on a :class:`DenseArray`, no reuse. Each contraction unit of
    ``units`` (``pv_unit_layout``) is held in a register (one cycle, as the
    P V dispatcher's detector) and issued as two MAC beats, its anchor
    (``p_a`` x ``v_a``) then its follower (``p_f`` x ``v_f``), or one beat
    (the anchor) when it is unpaired (``absent``); the unit's ``last`` rides
    on its final beat. ``hold`` stalls the array and the unit register;
    ``tiles``: each pass drains one partial ``O`` tile, PE ``(r, c)`` ``r +
    c + 2`` cycles after the pass's last beat (:meth:`DenseArray.tile_latency`)."""

    def __init__(self, config: KaleidoConfig | None = None):
        config = as_config(config)
        self._config = config
        super().__init__(pv_array_signature(config))

    def elaborate(self, platform):
        m = Module()
        cfg = self._config
        R, C = cfg.array_rows, cfg.array_cols
        m.submodules.array = array = DenseArray(cfg)
        unit = Signal(pv_unit_layout(R, C))
        held = Signal()  # a unit is in the register
        second = Signal()  # its follower's beat is next
        final = unit.absent | second
        beat_taken = held & array.slots.ready
        done = beat_taken & final
        m.d.comb += self.units.ready.eq(~self.hold & (~held | done))
        with m.If(self.units.valid & self.units.ready):
            m.d.sync += [unit.eq(self.units.payload), held.eq(1), second.eq(0)]
        with m.Elif(done):
            m.d.sync += [held.eq(0), second.eq(0)]
        with m.Elif(beat_taken):
            m.d.sync += second.eq(1)
        beat = array.slots.payload
        m.d.comb += [
            array.slots.valid.eq(held),
            array.hold.eq(self.hold),
            beat.ctl.slot.eq(1),
            beat.ctl.last.eq(unit.last & final),
        ]
        m.d.comb += [beat.a[r].eq(Mux(second, unit.p_f[r], unit.p_a[r])) for r in range(R)]
        m.d.comb += [beat.b[c].eq(Mux(second, unit.v_f[c], unit.v_a[c])) for c in range(C)]
        m.d.comb += [self.tiles[r][c].eq(array.tiles[r][c]) for r in range(R) for c in range(C)]
        return m
