"""Speedup in time: cycles divided by clock frequency (issue 20).

Every cycle speedup is a ratio of cycles; users compare time. The clock of
each design is its ECP5 Fmax from the latest ``make synth`` report
(``build/synth/report.json``), or, where there is none, from the committed
table of the last measured run (``docs/SYNTH_TABLE.md``, written by ``make
synth``). The blocks of a Kaleido core share one clock, so the core runs at
its slowest block's Fmax; the dense baseline runs at the dense array's.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import re

__all__ = ["REPORT", "TABLE", "Clocks", "core_blocks", "fmax_table", "clocks", "time_speedup"]

ROOT = pathlib.Path(__file__).resolve().parent.parent
#: the latest `make synth` report, relative to the working directory
REPORT = os.path.join("build", "synth", "report.json")
#: the committed table of the last measured run
TABLE = ROOT / "docs" / "SYNTH_TABLE.md"


def core_blocks(scheduler: bool = True, matcher: bool = True) -> tuple[str, ...]:
    """The synthesized blocks of a Kaleido core on one clock: the array and
    the reuse detector always, the scheduler and the matcher when the
    variant has them."""
    return ("kaleido_array", "detector") + (("scheduler",) if scheduler else ()) + (("matcher",) if matcher else ())


def _table_fmax(path: pathlib.Path) -> dict[str, float]:
    """Fmax (MHz) per design from a ``make synth`` markdown table."""
    out = {}
    for line in path.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 7 and re.fullmatch(r"[0-9.]+", cells[6]):
            out[cells[0]] = float(cells[6])
    return out


def fmax_table(report: str | os.PathLike | None = REPORT) -> tuple[dict[str, float], dict[str, str]]:
    """Fmax (MHz) per design and where each number came from: the report
    (when it exists and has the design's Fmax), else the committed table."""
    table = _table_fmax(TABLE)
    fmax = dict(table)
    source = {name: str(TABLE.relative_to(ROOT)) for name in table}
    if report is not None and os.path.exists(report):
        with open(report) as f:
            designs = json.load(f).get("designs", {})
        for name, entry in designs.items():
            if entry.get("fmax_mhz"):
                fmax[name] = float(entry["fmax_mhz"])
                source[name] = os.fspath(report)
    return fmax, source


@dataclasses.dataclass(frozen=True)
class Clocks:
    """The Kaleido core's clock (its slowest block, ``limited_by``), the
    dense array's, and where the numbers came from."""

    kaleido_mhz: float
    dense_mhz: float
    limited_by: str
    source: str

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def clocks(scheduler: bool = True, matcher: bool = True, report: str | os.PathLike | None = REPORT) -> Clocks:
    """The clocks of a Kaleido core (variant with or without scheduler and
    matcher) and of the dense array."""
    fmax, source = fmax_table(report)
    blocks = core_blocks(scheduler, matcher)
    missing = [b for b in (*blocks, "baseline_array") if b not in fmax]
    if missing:
        raise ValueError(f"no Fmax for {missing} in {report!r} or {TABLE}: run `make synth`")
    slowest = min(blocks, key=lambda b: fmax[b])
    used = sorted({source[b] for b in (*blocks, "baseline_array")})
    return Clocks(fmax[slowest], fmax["baseline_array"], slowest, ", ".join(used))


def time_speedup(cycle_speedup: float, clock: Clocks) -> float:
    """Speedup in time: the cycle speedup times the clock ratio."""
    return cycle_speedup * clock.kaleido_mhz / clock.dense_mhz
