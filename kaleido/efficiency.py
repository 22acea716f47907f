"""Efficiency against the fair dense core (spec sec. 13, issue 42).

A cycle speedup alone is not a win. For a named design this module turns
a head's cycle speedup and energy ratio into the yardstick's figures:

* ``time_speedup``: cycles x clock ratio; each core runs at the Fmax of
  its slowest synthesized block (:data:`CORE_BLOCKS`), the dense core too;
  ``time_speedup_own_blocks`` leaves out the blocks both cores share (the
  tiled softmax, the output scaler and the O accumulator), the speedup once those are
  pipelined past both cores' own blocks, an option open to both;
* ``area_ratio`` and ``throughput_per_area`` (time speedup / area ratio),
  twice: ``core``, one core as built (its logic and its own buffers,
  ``make synth``'s core report) and ``chip``, the paper's chip-level
  denominator (its 16,384 arrays, a dispatcher per 8 arrays and its 96 MB
  of SRAM, :func:`kaleido.area.chip_estimate`, calibrated to the
  paper's dense-array area);
* ``energy_ratio``: Kaleido's energy per head over the dense core's (below
  1 is a saving).

The synthesis figures come from ``build/synth/report.json`` when it exists,
else from the committed snapshot ``docs/report/synth_report.json``; every
result names which, the commit it was measured on and whether the RTL
changed since (``source.stale``), so a stale report never feeds a figure
silently.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import subprocess

from .area import chip_estimate, core_area_sized

__all__ = [
    "CORE_BLOCKS",
    "REPORT",
    "SNAPSHOT",
    "SynthFigures",
    "load_synth",
    "core_clock",
    "chip_area_ratio",
    "efficiency",
    "summary_line",
    "head_energy",
    "head_energy_ratio",
    "head_quality",
    "head_psnr",
    "chip_blocks",
    "core_chip_blocks",
    "core_chip_area_ratio",
    "design_efficiency",
]

ROOT = pathlib.Path(__file__).resolve().parent.parent
#: the latest ``make synth`` report, relative to the working directory
REPORT = os.path.join("build", "synth", "report.json")
#: the committed copy of the last full ``make synth`` report
SNAPSHOT = ROOT / "docs" / "report" / "synth_report.json"
#: the files whose change makes a synthesis report stale
RTL_PATHS = ("hdl", "kaleido/config.py")

#: blocks in both cores' clock domain: the tiled softmax, the output scaler
#: and the O accumulator (kaleido.hdl.core builds them the same in both cores)
SHARED_BLOCKS = ("tile_softmax", "output_scaler", "o_accumulator")
#: the Kaleido engine's dispatcher blocks
_KALEIDO_BLOCKS = ("detector", "scheduler", "matcher", "pv_dispatcher")
#: each core's synthesized blocks on its one clock (report["designs"] keys).
#: A block that drives another's registers through logic is measured with
#: it: the pass dispatcher with its array (``dispatched_array``, the default
#: design's ``kaleido_array_set``), the P V tile with its dispatcher and
#: array (``pv_tile``, with small-P pairing ``pv_tile_pairs``; the dense
#: core's ``dense_pv_tile``)
CORE_BLOCKS: dict[str, tuple[str, ...]] = {
    "default": ("kaleido_array_set", *_KALEIDO_BLOCKS, "pv_tile_pairs", *SHARED_BLOCKS),
    "one_array": ("kaleido_array", "dispatched_array", *_KALEIDO_BLOCKS, "pv_tile", *SHARED_BLOCKS),
    "paper": ("kaleido_array", "dispatched_array", *_KALEIDO_BLOCKS, "pv_tile", *SHARED_BLOCKS),
    "dense": ("baseline_array", "dense_pv_tile", *SHARED_BLOCKS),
}


@dataclasses.dataclass(frozen=True)
class SynthFigures:
    """A ``make synth`` report (``designs``: blocks, ``core``: whole cores)
    and where it came from (``source``: path, commit, stale, why)."""

    designs: dict
    core: dict
    source: dict


def _git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)


def _staleness(provenance: dict | None) -> tuple[bool | None, str]:
    """Whether the RTL changed since the report's commit, and why (None:
    cannot tell)."""
    if not provenance or not provenance.get("git_commit"):
        return None, "the report records no commit: re-run `make synth`"
    commit = provenance["git_commit"]
    diff = _git("diff", "--quiet", commit, "--", *RTL_PATHS)
    if diff.returncode not in (0, 1):
        return None, f"commit {commit[:10]} of the report is not in this checkout"
    if diff.returncode == 1:
        return True, f"{' or '.join(RTL_PATHS)} changed since {commit[:10]}: re-run `make synth`"
    if provenance.get("git_dirty"):
        return None, f"measured on {commit[:10]} with uncommitted changes"
    return False, f"measured on {commit[:10]}; the RTL is unchanged since"


def load_synth(path: str | os.PathLike | None = None) -> SynthFigures:
    """The synthesis figures: ``path`` if given, else :data:`REPORT` if it
    exists, else :data:`SNAPSHOT`. Raises FileNotFoundError naming every
    place looked at when there is none."""
    tried = [pathlib.Path(path)] if path is not None else [pathlib.Path(REPORT), SNAPSHOT]
    found = next((p for p in tried if p.exists()), None)
    if found is None:
        raise FileNotFoundError(
            f"no synthesis report at {', '.join(map(str, tried))}: run `make synth` for the efficiency figures"
        )
    report = json.loads(found.read_text())
    provenance = report.get("provenance")
    stale, why = _staleness(provenance)
    if report.get("fmax_method") == "parts":
        why += "; Fmax by parts, an estimate (docs/SYNTH.md)"
    source = {
        "report": os.path.relpath(found),
        "git_commit": (provenance or {}).get("git_commit"),
        "date": (provenance or {}).get("date"),
        "stale": stale,
        "why": why,
    }
    return SynthFigures(report.get("designs", {}), report.get("core", {}), source)


def core_clock(design: str, synth: SynthFigures, shared: bool = True) -> dict:
    """``{"mhz", "limited_by", "blocks": {block: MHz}}`` of a core: the
    Fmax of its slowest block (``shared=False``: of its own blocks, as if
    the blocks both cores share were pipelined out of the way). Raises
    ValueError naming the blocks without an Fmax."""
    if design not in CORE_BLOCKS:
        raise ValueError(f"unknown core {design!r}; known: {sorted(CORE_BLOCKS)}")
    blocks = tuple(b for b in CORE_BLOCKS[design] if shared or b not in SHARED_BLOCKS)
    found = {b: (synth.designs.get(b) or {}).get("fmax_mhz") for b in blocks}
    missing = [b for b, f in found.items() if not f]
    if missing:
        raise ValueError(f"core {design!r}: no Fmax for {missing} in {synth.source['report']}: run `make synth`")
    fmax = {b: float(f) for b, f in found.items() if f}
    slowest = min(blocks, key=fmax.__getitem__)
    return {"mhz": fmax[slowest], "limited_by": slowest, "blocks": fmax}


def _core_entry(design: str, synth: SynthFigures) -> dict:
    entry = synth.core.get(design)
    if not entry or "area_mm2" not in entry:
        raise ValueError(f"no core {design!r} in {synth.source['report']}'s core report: run `make synth`")
    return entry


def chip_blocks(design: str, synth: SynthFigures) -> dict:
    """The blocks :func:`~kaleido.area.chip_estimate` builds ``design``'s
    chip from: the report's, with ``kaleido_array`` costing ``one_array``'s
    4x4 array plus the logic ``design``'s core adds to (or saves on) the
    ``one_array`` core, per array (:func:`core_chip_blocks`)."""
    if design == "one_array":
        return dict(synth.designs)
    return core_chip_blocks(_core_entry(design, synth)["transistors"], synth)


def core_chip_blocks(transistors: int, synth: SynthFigures) -> dict:
    """:func:`chip_blocks` of any Kaleido core of ``transistors`` (a core
    of another array shape, say): ``one_array``'s 4x4 array plus the logic
    that core adds to the ``one_array`` core, per array."""
    blocks = dict(synth.designs)
    delta = transistors - _core_entry("one_array", synth)["transistors"]
    array = dict(blocks.get("kaleido_array") or {})
    if not array.get("transistors"):
        raise ValueError(f"no kaleido_array transistors in {synth.source['report']}: run `make synth`")
    array["transistors"] = array["transistors"] + delta
    blocks["kaleido_array"] = array
    return blocks


def chip_area_ratio(design: str, synth: SynthFigures) -> float:
    """Kaleido chip area over the dense chip's at the paper's denominator
    (calibrated estimate of :func:`~kaleido.area.chip_estimate` on
    :func:`chip_blocks`)."""
    return _chip_ratio(chip_blocks(design, synth), synth)


def core_chip_area_ratio(transistors: int, synth: SynthFigures) -> float:
    """:func:`chip_area_ratio` of any Kaleido core of ``transistors``
    (:func:`core_chip_blocks`)."""
    return _chip_ratio(core_chip_blocks(transistors, synth), synth)


def _chip_ratio(blocks: dict, synth: SynthFigures) -> float:
    chip = chip_estimate(blocks)
    if "error" in chip:
        raise ValueError(f"{synth.source['report']}: {chip['error']}")
    return 1.0 + chip["calibrated"]["overhead"]["total"]


def efficiency(
    design: str, cycle_speedup: float, energy_ratio: float | None, synth: SynthFigures, sram_model: str = "flat"
) -> dict:
    """The yardstick's figures of ``design`` (a key of :data:`CORE_BLOCKS`
    other than ``"dense"``) for a head with ``cycle_speedup`` (dense core
    cycles over the design's) and ``energy_ratio`` (the design's energy
    over the dense core's; None when not measured). The core area ratio
    counts buffers as ``sram_model`` says: ``"flat"``, the report's
    ``area_mm2`` (bits at the SRAM bit cell), or ``"sized"``, each buffer
    a macro of its own size (:func:`kaleido.area.core_area_sized`); when
    the report lists the cores' buffers ``core_sram`` gives both side by
    side."""
    if sram_model not in ("flat", "sized"):
        raise ValueError(f"sram_model must be 'flat' or 'sized', not {sram_model!r}")
    if design == "dense" or design not in CORE_BLOCKS:
        known = sorted(set(CORE_BLOCKS) - {"dense"})
        raise ValueError(f"efficiency of a Kaleido design: one of {known}, not {design!r}")
    if not cycle_speedup > 0:
        raise ValueError(f"cycle_speedup must be positive, not {cycle_speedup!r}")
    kaleido, dense = core_clock(design, synth), core_clock("dense", synth)
    time_speedup = cycle_speedup * kaleido["mhz"] / dense["mhz"]
    own = cycle_speedup * core_clock(design, synth, False)["mhz"] / core_clock("dense", synth, False)["mhz"]
    entry, dense_entry = _core_entry(design, synth), _core_entry("dense", synth)
    flat_ratio = entry["area_mm2"]["total"] / dense_entry["area_mm2"]["total"]
    core_sram = None
    if "buffers" in entry and "buffers" in dense_entry:
        sized = {"kaleido": core_area_sized(entry), "dense": core_area_sized(dense_entry)}
        core_sram = {
            "flat": {"kaleido_mm2": entry["area_mm2"], "dense_mm2": dense_entry["area_mm2"], "ratio": flat_ratio},
            "sized": {
                "kaleido_mm2": sized["kaleido"],
                "dense_mm2": sized["dense"],
                "ratio": sized["kaleido"]["total"] / sized["dense"]["total"],
            },
        }
    if sram_model == "sized" and core_sram is None:
        raise ValueError(
            f"sram_model 'sized' needs the cores' buffers in {synth.source['report']}: re-run `make synth`"
        )
    core_ratio = flat_ratio if sram_model == "flat" else core_sram["sized"]["ratio"]  # type: ignore[index]
    chip_ratio = chip_area_ratio(design, synth)
    return {
        "design": design,
        "cycle_speedup": cycle_speedup,
        "clock": {"kaleido": kaleido, "dense": dense},
        "time_speedup": time_speedup,
        "time_speedup_own_blocks": own,
        "area_ratio": {"core": core_ratio, "chip": chip_ratio},
        "throughput_per_area": {"core": time_speedup / core_ratio, "chip": time_speedup / chip_ratio},
        "energy_ratio": energy_ratio,
        "area_method": {"kaleido": entry.get("method", "flattened"), "dense": dense_entry.get("method", "flattened")},
        "sram_model": sram_model,
        "core_sram": core_sram,
        "source": synth.source,
    }


def summary_line(eff: dict) -> str:
    """One printable line of :func:`efficiency`'s figures and their source."""
    k, d = eff["clock"]["kaleido"], eff["clock"]["dense"]
    energy = "not measured" if eff["energy_ratio"] is None else f"{eff['energy_ratio']:.3f}x dense"
    src = eff["source"]
    stale = {True: "STALE: ", None: "unverified: ", False: ""}[src["stale"]]
    methods = eff.get("area_method", {})
    if len(set(methods.values())) > 1:
        stale += f"core areas {methods['kaleido']} against {methods['dense']}; "
    return (
        f"efficiency vs the fair dense core: time {eff['time_speedup']:.3f}x (cycles {eff['cycle_speedup']:.3f}x "
        f"x {k['mhz']:.1f} MHz, {k['limited_by']} / {d['mhz']:.1f} MHz, {d['limited_by']}); "
        f"area {eff['area_ratio']['core']:.3f}x core, {eff['area_ratio']['chip']:.3f}x chip; "
        f"throughput/mm^2 {eff['throughput_per_area']['core']:.3f}x core, "
        f"{eff['throughput_per_area']['chip']:.3f}x chip; energy {energy} "
        f"[{stale}{src['report']}: {src['why']}]"
    )


def head_energy(q, k, v, grid, split, config, scales=None) -> dict:
    """:func:`kaleido.energy.attention_energy` of one head on ``config``'s
    core against the dense core, on the cycle model's events, with
    ``ops``: the ``qk`` and ``pv`` stages' operation counts (``dense``,
    ``oracle``, ``hw``) from the same run."""
    from .energy import attention_energy
    from .golden.softmax import head_p
    from .model import pv_cycles, run_model

    result = run_model(q, k, grid, split, config)
    P = head_p(q, k, grid, split, config.thresholds, scales=scales) if config.pv_pairs else None
    pv = pv_cycles(v, grid, split, config, P=P)
    energy = attention_energy(q, k, v, grid, split, config, result, pv=pv)
    return {**energy, "ops": {"qk": dict(result.ops), "pv": dict(pv.ops)}}


def head_quality(q, k, v, grid, split, config, scales=None, reference=None) -> dict:
    """Quality metrics of ``config``'s reuse on one head against int8
    attention (``vs_int8``; with one ``(F, P)`` every metric of the
    paper's rule, ``reference`` its int8 output if already computed), else
    the per-group ``Q K^T`` thresholds with P V's FULL rule at ``F``."""
    if config.group_thresholds is None:
        from .golden import reuse_attention

        return reuse_attention(q, k, v, grid, split, config.F, config.P, scales=scales, reference=reference).metrics
    from .golden.grouped import hw_attention

    hw = hw_attention(q, k, v, grid, split, config.thresholds, [config.F] * 3, scales=scales)
    return {"vs_int8": hw["vs_int8"]}


def head_psnr(q, k, v, grid, split, config, scales=None) -> float:
    """Attention-output PSNR (dB) against int8 attention of ``config``'s
    reuse on one head (:func:`head_quality`)."""
    return float(head_quality(q, k, v, grid, split, config, scales)["vs_int8"]["psnr"])


def head_energy_ratio(q, k, v, grid, split, config, scales=None) -> float:
    """Energy of one head on ``config``'s core over the dense core's."""
    energy = head_energy(q, k, v, grid, split, config, scales)
    return energy["kaleido_pj"] / energy["dense_pj"]


def design_efficiency(design: str | None, cycle_speedup: float, energy_ratio: float | None, path=None) -> dict:
    """:func:`efficiency` from the synthesis report (:func:`load_synth`), or
    ``{"error": why}`` (a custom design, no report, a block not measured)."""
    if design is None:
        return {"error": "efficiency is measured for a named design (kaleido.config.DESIGNS), not a custom one"}
    try:
        return efficiency(design, cycle_speedup, energy_ratio, load_synth(path))
    except (FileNotFoundError, ValueError) as err:
        return {"error": str(err)}
