"""Input skew of the systolic array: the only place that knows about it."""

from amaranth import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .layouts import COL, CTL, ROW

__all__ = ["Skew"]


class Skew(wiring.Component):
    """Delays row port ``r`` (with its copy of the control) by ``r`` cycles
    and column port ``c`` by ``c`` cycles, so that one unskewed beat meets
    itself at PE ``(r, c)`` after ``r + c`` cycles.

    Members
    -------
    ctl, rows, cols : In
        The unskewed beat.
    ctl_out, rows_out, cols_out : Out
        Per row a control copy and the row port; per column the column port.
    """

    def __init__(self, rows: int, cols: int):
        self._rows, self._cols = rows, cols
        super().__init__(
            {
                "ctl": In(CTL),
                "rows": In(ROW).array(rows),
                "cols": In(COL).array(cols),
                "ctl_out": Out(CTL).array(rows),
                "rows_out": Out(ROW).array(rows),
                "cols_out": Out(COL).array(cols),
            }
        )

    def elaborate(self, platform):
        m = Module()

        def delay(value, shape, n, name):
            for i in range(n):
                nxt = Signal(shape, name=f"{name}_d{i + 1}")
                m.d.sync += nxt.eq(value)
                value = nxt
            return value

        for r in range(self._rows):
            m.d.comb += [
                self.rows_out[r].eq(delay(self.rows[r], ROW, r, f"row{r}")),
                self.ctl_out[r].eq(delay(self.ctl, CTL, r, f"ctl{r}")),
            ]
        for c in range(self._cols):
            m.d.comb += self.cols_out[c].eq(delay(self.cols[c], COL, c, f"col{c}"))
        return m
