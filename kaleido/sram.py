"""SRAM macros by size (issue 46, item 2; docs/ENERGY.md "Buffers by size").

Energy per read and write access and area of a buffer of ``words`` x
``width`` bits with given ports, from CACTI 7's figures at 22 nm scaled to
16 nm (``kaleido/data/sram_16nm.toml``, which cites the model and states
how the numbers were made and scaled). ESTIMATES.

Counting rules:

* between the table's capacities (1 KB to 1 MB, fourfold steps) and widths
  (16 to 128 bits) the figures are INTERPOLATED log-log: log energy (or
  area) linear in log capacity, then in log width;
* a word wider than the widest tabulated one is ``ceil(width / 128)``
  macros of ``words`` x ``width / n`` bits side by side, each accessed on
  every access: n times one narrower macro's energy and area;
* below 1 KB or 16 bits a buffer costs the smallest tabulated macro (a
  compiler's minimum macro); above 1 MB is a ValueError;
* ports: 1 read and 1 write port is ``"1r1w"``; a single port (read-only,
  as a ROM, or one read-write port) is ``"1rw"``; anything else a ValueError.
"""

from __future__ import annotations

import dataclasses
import math
import pathlib
import tomllib

__all__ = ["DATA", "PORTS", "SramTable", "Macro", "load_sram", "port_kind", "sram_macro"]

DATA = pathlib.Path(__file__).resolve().parent / "data" / "sram_16nm.toml"
#: the tabulated port configurations
PORTS = ("1rw", "1r1w")
_FIGURES = ("read_pj", "write_pj", "area_mm2")


@dataclasses.dataclass(frozen=True)
class SramTable:
    """The table at 16 nm: ``grid[ports][figure][width index][capacity index]``."""

    capacities: tuple[int, ...]
    widths: tuple[int, ...]
    grid: dict
    source: str
    path: str


@dataclasses.dataclass(frozen=True)
class Macro:
    """A buffer as counted: ``macros`` side by side of ``macro_width`` bits,
    and the whole buffer's pJ per read and write access and mm^2."""

    words: int
    width: int
    ports: str
    macros: int
    macro_width: float
    read_pj: float
    write_pj: float
    area_mm2: float

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def load_sram(path: str | pathlib.Path | None = None) -> SramTable:
    """Read the table (``DATA`` by default), scaled to its ``to_nm``."""
    path = pathlib.Path(DATA if path is None else path)
    data = tomllib.loads(path.read_text())
    caps, widths = tuple(data["axes"]["capacity_bytes"]), tuple(data["axes"]["width_bits"])
    scale = {"read_pj": data["scale"]["energy"], "write_pj": data["scale"]["energy"], "area_mm2": data["scale"]["area"]}
    grid: dict = {}
    for ports in PORTS:
        grid[ports] = {}
        for fig in _FIGURES:
            rows = data["ports"][ports][fig]
            if len(rows) != len(widths) or any(len(r) != len(caps) for r in rows):
                raise ValueError(f"{path}: ports.{ports}.{fig} is not {len(widths)} x {len(caps)}")
            if any(not v > 0 for r in rows for v in r):
                raise ValueError(f"{path}: ports.{ports}.{fig} has a value that is not positive")
            grid[ports][fig] = [[v * scale[fig] for v in r] for r in rows]
    return SramTable(caps, widths, grid, data["source"]["model"], str(path))


def port_kind(read_ports: int, write_ports: int) -> str:
    """``"1r1w"`` for one read and one write port, ``"1rw"`` for one port."""
    if (read_ports, write_ports) == (1, 1):
        return "1r1w"
    if (read_ports, write_ports) in ((1, 0), (0, 1)):
        return "1rw"
    raise ValueError(f"ports: the table has 1 read + 1 write or one port, not {read_ports} read + {write_ports} write")


def _bracket(axis: tuple[int, ...], x: float) -> tuple[int, float]:
    """Index ``i`` and log-fraction ``f`` of ``x`` between ``axis[i]`` and ``axis[i + 1]``."""
    x = max(x, axis[0])  # clamp below the table
    i = min(max(j for j, a in enumerate(axis) if a <= x), len(axis) - 2)
    return i, math.log(x / axis[i]) / math.log(axis[i + 1] / axis[i])


def _interp(rows: list[list[float]], table: SramTable, capacity: float, width: float) -> float:
    ci, cf = _bracket(table.capacities, capacity)
    wi, wf = _bracket(table.widths, width)

    def along(r: list[float]) -> float:  # log-log in capacity
        return math.log(r[ci]) + cf * (math.log(r[ci + 1]) - math.log(r[ci]))

    return math.exp(along(rows[wi]) + wf * (along(rows[wi + 1]) - along(rows[wi])))


def sram_macro(
    words: int, width: int, read_ports: int = 1, write_ports: int = 1, table: SramTable | None = None
) -> Macro:
    """The buffer of ``words`` x ``width`` bits with those ports, as counted
    (module docstring). Raises ValueError naming a bad value."""
    for name, value in (("words", words), ("width", width)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, not {value!r}")
    ports = port_kind(read_ports, write_ports)
    table = table or load_sram()
    n = -(-width // table.widths[-1])
    macro_width = width / n
    capacity = words * macro_width / 8
    if capacity > table.capacities[-1]:
        raise ValueError(
            f"a macro of {words} words x {macro_width:g} bits ({capacity:g} bytes) is above the table's "
            f"largest, {table.capacities[-1]} bytes"
        )
    fig = {f: n * _interp(table.grid[ports][f], table, capacity, macro_width) for f in _FIGURES}
    return Macro(words, width, ports, n, macro_width, fig["read_pj"], fig["write_pj"], fig["area_mm2"])
