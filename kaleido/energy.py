"""Per-event energy model of one attention head (issue 15, docs/ENERGY.md).

ESTIMATES. Every count comes from the cycle model (:func:`kaleido.model.run_model`
for ``Q K^T``, :func:`kaleido.model.pv_cycles` for ``P V``) and the reuse
classes; every energy from a data file (``kaleido/data/energy_45nm.toml``:
Horowitz's 45 nm figures, ISSCC 2014, scaled to 16 nm by a stated factor).
The counts of the array's events (nibble multiplies, accumulator adds, the
lo/hi combines, drains, slots of each kind) equal the RTL's, counted in the
Amaranth simulator (``tb/test_energy.py``).

Events, per stage and design:

* ``qk`` on the Kaleido array: per PE, channel and phase the multipliers and
  registers the decode table enables (:func:`kaleido.encoding.register_parts`),
  padding units (the last group of a short unit list) counted as unpaired,
  as the RTL computes them on zero operands; one buffer read per pass
  (the ``PassDispatcher``'s feature buffer: anchor, follower and tag of
  each unit and channel; the dispatcher replays it over the four phases);
  the beat register and the PEs' forwarding registers per beat; a drain
  per phase and PE (the tile register, the register moves, a
  read-modify-write of a 4-byte ``S`` entry).
* ``qk`` on the dense array (``hdl/baseline.py``, the cycle model's dense
  baseline): one 8x8 MAC per PE and cycle, one byte per row and column
  read per cycle, 18 forwarded bits per PE and cycle, a drain per batch.
* ``pv``: Kaleido's P V mode (a product is both nibble multipliers, the
  combine and one accumulate; a FULL V follower adds the pre-add ``r0 + r1``;
  one buffer read per unit, which the ``PvDispatcher`` turns into one or
  two beats); the dense MAC array over the same passes.
* ``softmax``: the same softmax unit and output scaler in both designs.
* ``dispatch`` (Kaleido only): the reuse detectors (one compare per Q, K, V
  value), the schedulers (4 Hamming distances per string), the matcher.
* ``io``: Q, K, V from DRAM and O back, one byte each, both designs
  (``S`` and ``P`` stay in the on-chip buffers).
"""

from __future__ import annotations

import dataclasses
import math
import pathlib
import tomllib

import numpy as np

from .checks import check_qk
from .config import KaleidoConfig
from .encoding import ABSENT, TAGS, Part, Phase, pe_need, register_parts
from .golden.grouped import class_histograms_grouped
from .loopnest import batches, group_slices, pv_chunk, units

__all__ = [
    "EVENTS",
    "DEFAULT_TABLE",
    "EnergyTable",
    "load_table",
    "qk_tables",
    "qk_activity",
    "pv_activity",
    "attention_events",
    "attention_energy",
    "SRAM_MODELS",
    "CORE_BUFFERS",
    "buffer_traffic",
    "buffer_prices",
]

#: the event kinds, in report order
EVENTS = (
    "mul_4x8",
    "mul_8x8",
    "add_8",
    "add_20",
    "acc_write",
    "reg_byte",
    "sram_read_byte",
    "sram_write_byte",
    "dram_byte",
)

DEFAULT_TABLE = pathlib.Path(__file__).resolve().parent / "data" / "energy_45nm.toml"

#: bits a PE forwards per beat: the Q K^T arrays' PE (hdl/qk_pe.py) ROW (2 x 8 + 2 x 2) + COL (8 + 2 x 2)
#: + CTL (5: not ``pv``; nor the P V pre-add ``s`` or the pairs' ``kb``); dense a, b, slot, last
KALEIDO_FORWARD_BITS = 20 + 12 + 5
DENSE_FORWARD_BITS = 8 + 8 + 2
#: the P V array's PE (hdl/pv_pe.py) forwards, and its edge beat register holds per row, column and
#: beat: ROW r0, r1, s (8 + 8 + 9), COL k, k0 (8 + 2) and, paired, k1, kb (2 + 8), CTL (6)
PV_ROW_BITS = 8 + 8 + 9
PV_COL_BITS = 8 + 2
PV_PAIR_COL_BITS = 2 + 8
CTL_BITS = 6


def _kaleido_beat_bits(R: int, C: int) -> int:
    """Bits of the beat register at the Kaleido Q K^T array's edge (the dispatcher's output)."""
    return 20 * R + 12 * C + 6


def _pv_beat_bits(R: int, C: int, pairs: bool) -> int:
    """Bits of the P V array's beat register and its PEs' forwarding, per beat."""
    col = PV_COL_BITS + (PV_PAIR_COL_BITS if pairs else 0)
    return R * C * (PV_ROW_BITS + col + CTL_BITS) + R * PV_ROW_BITS + C * col + CTL_BITS


def _dense_beat_bits(R: int, C: int) -> int:
    """Bits of the dense array's input beat: a byte per row and column, slot and last."""
    return 8 * R + 8 * C + 2


#: bytes of one ``S`` (or partial ``O``) entry in the accumulation buffer
ACC_ENTRY_BYTES = 4

#: how SRAM bytes are priced: ``"flat"``, every byte ``sram_read_byte`` /
#: ``sram_write_byte`` of the energy table whatever the buffer; ``"sized"``,
#: each buffer at its own macro's energy (:mod:`kaleido.sram`)
SRAM_MODELS = ("flat", "sized")

#: the buffers outside the Q K^T operands: the same in both cores
_SHARED_BUFFERS: dict[str, tuple[str, int, int, int, int]] = {
    "s_acc": ("core.engine.accumulator.bank0.set0", 1024, 23, 1, 1),
    "p_tile": ("core.pv.p_tile0", 1024, 28, 1, 1),
    "v_tile": ("core.pv.v_tile0", 64, 1024, 1, 1),
    "o_acc": ("core.pv.o_acc.o_acc", 2048, 120, 1, 1),
}
#: the buffers the SRAM traffic goes to, as the default design's core and the
#: dense core build them (``CoreConfig()``; ``tb/test_sram.py`` checks each
#: against the elaborated cores): role -> (instance, words, width bits, read
#: ports, write ports). ``qk_operands``: Q and K where the array's passes
#: read them (the Kaleido engine's sorted memories, which the pass former
#: reads a pass side a word; the dense engine's row and column banks);
#: ``qk_copies`` (Kaleido): the engine's anchor and follower copies of Q and
#: K, written as a head loads and read by the scheduling walk;
#: ``unit_memory`` (Kaleido): the scheduling stage's unit memories between
#: the detectors and the sorted memories; ``s_acc``: a bank of the ``S``
#: accumulation buffer; ``p_tile`` and ``v_tile``: the P V stage's
#: operands; ``o_acc``: the partial-``O`` accumulator.
CORE_BUFFERS: dict[str, dict[str, tuple[str, int, int, int, int]]] = {
    "kaleido": {
        "qk_operands": ("core.engine.scheduling.sorted_rows", 16, 1204, 1, 1),
        "qk_copies": ("core.engine.qk_memory.q_anchor_memory", 576, 128, 1, 1),
        "unit_memory": ("core.engine.scheduling.row_units", 32, 288, 1, 1),
        **_SHARED_BUFFERS,
    },
    "dense": {"qk_operands": ("core.engine.q_bank0", 144, 128, 1, 1), **_SHARED_BUFFERS},
}


@dataclasses.dataclass(frozen=True)
class EnergyTable:
    """Energies in pJ per event at ``node_nm`` (already scaled), with the
    scale factor and the source of each entry."""

    pj: dict
    node_nm: int
    factor: float
    sources: dict
    path: str

    def as_dict(self) -> dict:
        return {"pj": dict(self.pj), "node_nm": self.node_nm, "scale_factor": self.factor, "path": self.path}


def _number(where: str, value, positive: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{where} must be a number, not {value!r}")
    if positive and value <= 0:
        raise ValueError(f"{where} must be positive, not {value!r}")
    return float(value)


def load_table(path=None) -> EnergyTable:
    """Read an energy table (TOML, the layout of ``kaleido/data/energy_45nm.toml``):
    ``[scale] factor, to_nm`` and ``[events.<kind>] pj, scaled, source``
    for every kind in :data:`EVENTS`. Returns the energies scaled to
    ``to_nm``; a missing or malformed entry raises ``ValueError`` naming it."""
    path = pathlib.Path(DEFAULT_TABLE if path is None else path)
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise FileNotFoundError(f"energy table {str(path)!r} does not exist") from None
    except tomllib.TOMLDecodeError as err:
        raise ValueError(f"energy table {str(path)!r} is not valid TOML: {err}") from None
    scale = data.get("scale")
    if not isinstance(scale, dict):
        raise ValueError(f"energy table {str(path)!r} has no [scale] table")
    factor = _number(f"{path}: scale.factor", scale.get("factor"))
    node = scale.get("to_nm")
    if isinstance(node, bool) or not isinstance(node, int) or node < 1:
        raise ValueError(f"{path}: scale.to_nm must be a positive integer, not {node!r}")
    events = data.get("events")
    if not isinstance(events, dict):
        raise ValueError(f"energy table {str(path)!r} has no [events] tables")
    unknown = sorted(set(events) - set(EVENTS))
    if unknown:
        raise ValueError(f"{path}: unknown event kind(s) {unknown}; the kinds are {list(EVENTS)}")
    pj, sources = {}, {}
    for kind in EVENTS:
        entry = events.get(kind)
        if not isinstance(entry, dict):
            raise ValueError(f"{path}: event {kind!r} is missing (need [events.{kind}] with pj and scaled)")
        value = _number(f"{path}: events.{kind}.pj", entry.get("pj"))
        scaled = entry.get("scaled")
        if not isinstance(scaled, bool):
            raise ValueError(f"{path}: events.{kind}.scaled must be true or false, not {scaled!r}")
        pj[kind] = value * factor if scaled else value
        sources[kind] = str(entry.get("source", ""))
    return EnergyTable(pj, node, factor, sources, str(path))


# ---------------------------------------------------------------------------
# Q K^T on the Kaleido array
# ---------------------------------------------------------------------------


def qk_tables(accumulators: int = 3) -> dict[str, np.ndarray]:
    """4x4 int64 tables ``[q, k]`` (follower tags, ABSENT = 3) summed over
    the four phases, per PE and channel: ``mul`` nibble multiplies (the
    bits of :func:`~kaleido.encoding.pe_need`), ``acc`` registers that add
    a part, ``combine`` phases in which some register adds a whole product
    ``p`` (the shared sum ``mulA + mulB'``)."""
    out = {k: np.zeros((4, 4), dtype=np.int64) for k in ("mul", "acc", "combine")}
    for q in TAGS:
        for k in TAGS:
            for phase in Phase:
                regs = register_parts(phase, q, k, accumulators)
                out["mul"][q, k] += bin(int(pe_need(phase, q, k, accumulators))).count("1")
                out["acc"][q, k] += sum(1 for p in regs if p != Part.ZERO)
                out["combine"][q, k] += int(any(p == Part.P for p in regs))
    return out


def _padded_histograms(Z, grid, split, cfg: KaleidoConfig, size: int) -> np.ndarray:
    """:func:`~kaleido.golden.ops.class_histograms` with the padding units
    that complete each group's last group of ``size`` counted as unpaired
    (ABSENT): the RTL computes their T0 (and T1 or T2) on zero operands."""
    hist = class_histograms_grouped(Z, grid, split, cfg.thresholds)
    for sl, axis in group_slices(split):
        n_units = len(units(grid, axis))
        hist[sl, ABSENT] += -(-n_units // size) * size - n_units
    return hist


def qk_activity(Q, K, grid, split, config: KaleidoConfig, result) -> dict[str, int]:
    """The Kaleido array's events for ``Q K^T``, from the reuse classes and
    the cycle model's ``result`` (:func:`~kaleido.model.run_model` of this
    head and configuration): ``mul_4x8`` (nibble multiplies), ``acc_adds``
    (a register adding a channel's part), ``combines``, ``full8_slots``,
    ``dual_slots``, ``markers`` (beats of a phase without slots), ``beats``,
    ``tiles`` (drains, one per PE, phase and pass), ``pass_words`` (passes
    read into the dispatcher's feature buffer) and ``operand_bytes`` (their
    valid channels: anchor, follower and 2-bit tag per unit; the
    dispatcher replays them over the four phases from its buffer). On small
    arrays (``config.sub_arrays``) the PEs, beats, tiles and pass words are
    the blocks' on their arrays (``result`` counts blocks), the operand
    bytes the whole passes' (the engine reads a pass once and splits it)."""
    grid, split = check_qk(Q, K, grid, split)
    R, C = config.sub_shape  # the arrays that compute: blocks of the passes on small arrays
    PR, PC = config.array_rows, config.array_cols  # the passes, each read from memory once
    hq = _padded_histograms(Q, grid, split, config, R)
    hk = _padded_histograms(K, grid, split, config, C)
    tables = qk_tables(config.accumulators)
    count = {k: int(np.einsum("cq,ck,qk->", hq, hk, t)) for k, t in tables.items()}
    operand_bits = 0  # per pass word, per row and column unit and channel: anchor, follower, tag (8 + 8 + 2)
    for b in batches(config, grid, split):
        n_units = len(b.units)
        operand_bits += -(-n_units // PR) * -(-n_units // PC) * (PR + PC) * len(b.channels) * 18
    slots = sum(p["slots"] for p in result.phases.values())
    channels = sum(p["channels"] for p in result.phases.values())
    beats = sum(p["beats"] for p in result.phases.values())
    dual = channels - slots
    return {
        "mul_4x8": count["mul"],
        "acc_adds": count["acc"],
        "combines": count["combine"],
        "full8_slots": slots - dual,
        "dual_slots": dual,
        "markers": beats - slots,
        "beats": beats,
        "tiles": 4 * R * C * result.passes,
        "pass_words": result.passes,
        "operand_bytes": operand_bits // 8,
    }


def pv_activity(V, grid, split, config: KaleidoConfig, timing) -> dict[str, int]:
    """The Kaleido array's events for ``P V`` in P V mode, as the RTL's
    ``PvDispatcher`` issues them (:func:`kaleido.golden.pv.pv_pass_beats`)
    and :func:`~kaleido.model.pv_cycles`' ``timing``: ``products`` (a PE
    with a non-SKIP select: both nibble multipliers, the combine, one
    accumulate into R0), ``pre_adds`` (the ``SUM`` select, ``r0 + r1``, of
    a FULL V follower), ``beats``, ``tiles`` (one drain per PE and pass),
    ``unit_words`` (units read into the ``PvDispatcher``, which forms their
    one or two beats) and ``operand_bytes`` (``P`` of each row and ``V`` of
    each column at the anchor and, for a pair, the follower).
    Padding counts as the RTL computes it: query rows past the head and
    channel columns past a group multiply zeros (padding columns are FULL)."""
    from .golden.pv import unit_full
    from .loopnest import chunks

    R, C = config.array_rows, config.array_cols
    q_blocks = -(-V.shape[0] // R)
    chunk = pv_chunk(config)
    products = pre_adds = passes = words = operand_bytes = 0
    for sl, axis in group_slices(split):
        u = units(grid, axis)
        paired = u[:, 1] >= 0
        full = unit_full(V, u, np.arange(sl.start, sl.stop), config.F)
        for cs in chunks(sl.stop - sl.start, C):
            n_full = full[:, cs].sum(axis=1) + C - (cs.stop - cs.start)
            one = paired & (n_full == C)  # one beat: SUM in every column
            two = paired & ~one  # SUM or R0, then SKIP or R1
            skipped = int(n_full[two].sum())
            beats = int((~paired).sum() + one.sum() + 2 * two.sum())
            products += C * beats - skipped
            pre_adds += C * int(one.sum()) + skipped
            passes += -(-len(u) // chunk)
            words += len(u)
            operand_bytes += int(paired.sum()) * 2 * (R + C) + int((~paired).sum()) * (R + C)
    return {
        "products": q_blocks * R * products,
        "pre_adds": q_blocks * R * pre_adds,
        "beats": timing.beats,
        "tiles": q_blocks * passes * R * C,
        "unit_words": q_blocks * words,
        "operand_bytes": q_blocks * operand_bytes,
    }


# ---------------------------------------------------------------------------
# Events of every stage, then energy
# ---------------------------------------------------------------------------


def _zero() -> dict[str, int]:
    return dict.fromkeys(EVENTS, 0)


def _sram(tr: dict, role: str, read: int = 0, write: int = 0) -> None:
    """Bytes read from and written to buffer ``role``."""
    rw = tr.setdefault(role, [0, 0])
    rw[0] += read
    rw[1] += write


def _drains(ev: dict, tiles: int, registers: int, tr: dict, role: str) -> None:
    """A drain: the tile register and ``registers`` register moves or
    clears, and a read-modify-write of one entry of buffer ``role``."""
    ev["acc_write"] += tiles * (1 + registers)
    ev["add_20"] += tiles  # the buffer's accumulate
    ev["sram_read_byte"] += tiles * ACC_ENTRY_BYTES
    ev["sram_write_byte"] += tiles * ACC_ENTRY_BYTES
    _sram(tr, role, tiles * ACC_ENTRY_BYTES, tiles * ACC_ENTRY_BYTES)


def _dense_macs(ev: dict, beats: int, R: int, C: int, tr: dict, rows: str, cols: str) -> None:
    """A dense output-stationary MAC array: every PE one 8x8 MAC per beat;
    one byte per row (from buffer ``rows``) and column (``cols``) read per beat."""
    macs = beats * R * C
    ev["mul_8x8"] += macs
    ev["add_20"] += macs
    ev["acc_write"] += macs
    ev["reg_byte"] += beats * (R * C * DENSE_FORWARD_BITS + _dense_beat_bits(R, C)) // 8
    ev["sram_read_byte"] += beats * (R + C)
    _sram(tr, rows, beats * R)
    _sram(tr, cols, beats * C)


def attention_events(Q, K, V, grid, split, config: KaleidoConfig, result, pv=None) -> dict:
    """Event counts ``{stage: {"kaleido": {kind: n}, "dense": {kind: n}}}``
    for the stages ``qk``, ``softmax``, ``pv``, ``dispatch`` and ``io`` of
    one head; ``result`` is the cycle model's ``Q K^T`` result, ``pv`` the
    :func:`~kaleido.model.pv_cycles` timing (computed when ``None``)."""
    return _events(Q, K, V, grid, split, config, result, pv)[0]


def buffer_traffic(Q, K, V, grid, split, config: KaleidoConfig, result, pv=None) -> dict:
    """The SRAM bytes of :func:`attention_events` by buffer: ``{stage:
    {design: {role: [read bytes, write bytes]}}}``, roles of
    :data:`CORE_BUFFERS`; per stage and design they sum to the events'
    ``sram_read_byte`` and ``sram_write_byte``."""
    return _events(Q, K, V, grid, split, config, result, pv)[1]


def _events(Q, K, V, grid, split, config: KaleidoConfig, result, pv=None) -> tuple[dict, dict]:
    from .model import pv_cycles

    grid, split = check_qk(Q, K, grid, split)
    n, d = Q.shape
    R, C = config.array_rows, config.array_cols
    pv = pv or pv_cycles(V, grid, split, config)
    names = ("qk", "softmax", "pv", "dispatch", "io")
    stages = {s: {"kaleido": _zero(), "dense": _zero()} for s in names}
    traffic: dict = {s: {"kaleido": {}, "dense": {}} for s in names}
    head_batches = batches(config, grid, split)
    n_batches = len(head_batches)

    # Q K^T, Kaleido
    qa = qk_activity(Q, K, grid, split, config, result)
    ev, tr = stages["qk"]["kaleido"], traffic["qk"]["kaleido"]
    ev["mul_4x8"] = qa["mul_4x8"]
    ev["add_20"] = qa["acc_adds"] + qa["combines"]
    ev["acc_write"] = qa["acc_adds"]
    r, c = config.sub_shape  # beats are summed over the arrays that compute
    ev["reg_byte"] = qa["beats"] * (r * c * KALEIDO_FORWARD_BITS + _kaleido_beat_bits(r, c)) // 8
    ev["sram_read_byte"] = qa["operand_bytes"]
    ev["sram_write_byte"] = 4 * n * d  # the head's Q and K into the anchor and follower copies
    _sram(tr, "qk_operands", qa["operand_bytes"])
    _sram(tr, "qk_copies", 0, 4 * n * d)
    _drains(ev, qa["tiles"], config.accumulators, tr, "s_acc")
    # Q K^T, dense
    ev, tr = stages["qk"]["dense"], traffic["qk"]["dense"]
    dense_beats = math.ceil(n / R) * math.ceil(n / C) * d
    ev["sram_write_byte"] = 2 * n * d  # the head's Q and K into the row and column banks
    _sram(tr, "qk_operands", 0, 2 * n * d)
    _dense_macs(ev, dense_beats, R, C, tr, "qk_operands", "qk_operands")
    _drains(ev, math.ceil(n / R) * R * math.ceil(n / C) * C * n_batches, 1, tr, "s_acc")

    # P V: each operand byte is P of a row or V of a column, R of every R + C
    pa = pv_activity(V, grid, split, config, pv)
    ev, tr = stages["pv"]["kaleido"], traffic["pv"]["kaleido"]
    ev["mul_4x8"] = 2 * pa["products"]
    ev["add_20"] = 2 * pa["products"]  # the combine and the accumulate
    ev["add_8"] = pa["pre_adds"]
    ev["acc_write"] = pa["products"]
    ev["reg_byte"] = pa["beats"] * _pv_beat_bits(R, C, config.pv_pairs) // 8
    ev["sram_read_byte"] = pa["operand_bytes"]
    _sram(tr, "p_tile", pa["operand_bytes"] // (R + C) * R)
    _sram(tr, "v_tile", pa["operand_bytes"] // (R + C) * C)
    _drains(ev, pa["tiles"], 1, tr, "o_acc")
    ev, tr = stages["pv"]["dense"], traffic["pv"]["dense"]
    _dense_macs(ev, pv.dense_beats, R, C, tr, "p_tile", "v_tile")
    _drains(ev, pa["tiles"], 1, tr, "o_acc")

    # softmax unit and output scaler: the same in both designs
    for design in ("kaleido", "dense"):
        ev, tr = stages["softmax"][design], traffic["softmax"][design]
        ev["sram_read_byte"] = n * n * 2 * ACC_ENTRY_BYTES + n * d * ACC_ENTRY_BYTES  # S twice (row replayed), O
        ev["sram_write_byte"] = n * n + n * d  # P, scaled O
        _sram(tr, "s_acc", n * n * 2 * ACC_ENTRY_BYTES)
        _sram(tr, "p_tile", 0, n * n)
        _sram(tr, "o_acc", n * d * ACC_ENTRY_BYTES, n * d)  # scaled O counted back in the O buffer
        ev["mul_8x8"] = 2 * n * n + n * d  # exponential, normalisation; output scale
        ev["add_20"] = 2 * n * n  # row max, row sum
        io = stages["io"][design]
        io["dram_byte"] = 4 * n * d  # Q, K, V in, O out

    # dispatch (Kaleido only): detectors, schedulers, matcher, and the
    # scheduling stage's buffers
    ev = stages["dispatch"]["kaleido"]
    strings = 2 * sum(len(units(grid, b.axis)) for b in head_batches)
    ev["add_8"] = 3 * n * d + strings * 4 * 2 + sum(p["slots"] for p in result.phases.values())
    ev["reg_byte"] = strings * 2  # a 16-bit reuse string per unit and batch
    _scheduling_traffic(ev, traffic["dispatch"]["kaleido"], grid, head_batches)
    return stages, traffic


def _scheduling_traffic(ev: dict, tr: dict, grid, head_batches: list) -> None:
    """The scheduling stage's buffer traffic over the head's batches: per
    batch, the walk reads each unit's anchor and follower of Q and K (four
    copies, a byte per channel); each side's unit memory takes the detector's unit (anchor
    value, effective value and 2-bit class per channel: 18 bits) and gives
    it back as the scheduler emits it into the sorted memory (18 bits per
    channel: anchor, follower, tag)."""
    unit_channels = sum(len(units(grid, b.axis)) * len(b.channels) for b in head_batches)
    walk = 4 * unit_channels
    side = 2 * unit_channels * 18 // 8  # both sides
    ev["sram_read_byte"] += walk + side
    ev["sram_write_byte"] += 2 * side
    _sram(tr, "qk_copies", walk)
    _sram(tr, "unit_memory", side, side)
    _sram(tr, "qk_operands", 0, side)


def buffer_prices(sram_table=None) -> dict:
    """Each design's buffers (:data:`CORE_BUFFERS`) as :func:`kaleido.sram.sram_macro`
    counts them: ``{design: {role: {instance, words, width, ports, macros,
    read_pj, write_pj (per access), read_pj_per_byte, write_pj_per_byte
    (an access over the word's bytes), area_mm2}}}``."""
    from .sram import sram_macro

    out: dict = {}
    for design, roles in CORE_BUFFERS.items():
        out[design] = {}
        for role, (inst, words, width, rd, wr) in roles.items():
            m = sram_macro(words, width, rd, wr, sram_table)
            out[design][role] = {
                "instance": inst,
                **m.as_dict(),
                "read_pj_per_byte": m.read_pj * 8 / width,
                "write_pj_per_byte": m.write_pj * 8 / width,
            }
    return out


def attention_energy(
    Q, K, V, grid, split, config: KaleidoConfig, result, table=None, pv=None, sram_model="flat", sram_table=None
) -> dict:
    """Energy of one head in pJ, Kaleido against the dense array:
    ``kaleido_pj``, ``dense_pj``, ``savings`` (dense / Kaleido), ``qk_savings``
    (the ``Q K^T`` stage alone), ``by_stage`` and ``by_kind`` (each
    ``{name: {"kaleido": pJ, "dense": pJ}}``), ``events`` (the counts) and
    ``table`` (the energies used). ``table`` is an :class:`EnergyTable` or
    a path (default ``kaleido/data/energy_45nm.toml``).

    ``sram_model`` (:data:`SRAM_MODELS`) prices the SRAM bytes of those
    figures: ``"flat"`` at the table's per-byte energies, ``"sized"`` each
    buffer at its own macro's (:func:`buffer_prices`; ``sram_table`` a
    :class:`kaleido.sram.SramTable`, default ``kaleido/data/sram_16nm.toml``).
    Both are always in ``sram``: ``buffers`` (how each buffer is counted),
    ``traffic`` (bytes per stage, design and buffer), and per model
    ``kaleido_pj``, ``dense_pj``, ``savings``, ``qk_savings``."""
    if sram_model not in SRAM_MODELS:
        raise ValueError(f"sram_model must be one of {list(SRAM_MODELS)}, not {sram_model!r}")
    if not isinstance(table, EnergyTable):
        table = load_table(table)
    stages, traffic = _events(Q, K, V, grid, split, config, result, pv)
    prices = buffer_prices(sram_table)
    sram_kinds = ("sram_read_byte", "sram_write_byte")

    def by_stage_of(model: str) -> dict:
        out: dict = {}
        for s, designs in stages.items():
            out[s] = {}
            for design, ev in designs.items():
                pj = sum(cnt * table.pj[k] for k, cnt in ev.items() if model == "flat" or k not in sram_kinds)
                if model == "sized":
                    for role, (rd, wr) in traffic[s][design].items():
                        price = prices[design][role]
                        pj += rd * price["read_pj_per_byte"] + wr * price["write_pj_per_byte"]
                out[s][design] = pj
        return out

    def totals(by_stage: dict) -> dict:
        kaleido = sum(v["kaleido"] for v in by_stage.values())
        dense = sum(v["dense"] for v in by_stage.values())
        qk = by_stage["qk"]["dense"] / by_stage["qk"]["kaleido"]
        return {"kaleido_pj": kaleido, "dense_pj": dense, "savings": dense / kaleido, "qk_savings": qk}

    both = {m: by_stage_of(m) for m in SRAM_MODELS}
    by_stage = both[sram_model]
    by_kind = {
        k: {design: sum(stages[s][design][k] for s in stages) * table.pj[k] for design in ("kaleido", "dense")}
        for k in EVENTS
    }
    if sram_model == "sized":
        for i, kind in enumerate(sram_kinds):
            by_kind[kind] = {
                design: sum(
                    rw[i] * prices[design][role][("read", "write")[i] + "_pj_per_byte"]
                    for s in stages
                    for role, rw in traffic[s][design].items()
                )
                for design in ("kaleido", "dense")
            }
    head = totals(by_stage)
    return {
        **head,
        "by_stage": by_stage,
        "by_kind": by_kind,
        "events": stages,
        "table": table.as_dict(),
        "sram": {
            "model": sram_model,
            "buffers": prices,
            "traffic": traffic,
            **{m: totals(both[m]) for m in SRAM_MODELS},
        },
    }
