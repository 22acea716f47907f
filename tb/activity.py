"""Activity counters on the RTL in the Amaranth simulator (issue 15): per
cycle, the Kaleido PEs' multiplier and register enables, drains and the
kinds of the beats, read from the PEs' own signals inside any design that
holds a :class:`~kaleido.hdl.array.KaleidoArray` (``KaleidoArray``,
``DispatchedArray``, ``PvArray``). The energy model's counts
(:mod:`kaleido.energy`) are asserted equal to these in ``tb/test_energy.py``.

The PEs are found in the elaborated fragment tree (``Fragment.origins``);
their enables ``en_a<i>`` / ``en_b<i>`` are the comb signals of
``hdl/pe.py``. The design is simulated from that same fragment, so the
probes are the simulated signals.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from kaleido.config import PE_LATENCY
from kaleido.encoding import PvSelect, SlotKind
from kaleido.tb.kit import AmaranthBackend

__all__ = ["Activity", "simulate_activity"]


@dataclasses.dataclass
class Activity:
    """Counted over the cycles the array is not held."""

    mul_4x8: int = 0  # nibble multipliers enabled (P V: a non-SKIP select enables both)
    acc_adds: int = 0  # a register adding one channel's part (P V: R0 adding a product)
    combines: int = 0  # the shared sum mulA + mulB' used by a register
    pre_adds: int = 0  # P V: the SUM select (r0 + r1)
    tiles: int = 0  # drains: a PE taking a `last` beat
    full8_slots: int = 0  # beats at PE (0, 0) by kind
    dual_slots: int = 0
    markers: int = 0
    words: int = 0  # transfers on the design's input stream (buffer reads: pass or unit words)
    cycles: int = 0


def _walk(frag, path=()):
    yield path, frag
    for sub, name, _ in frag.subfragments:
        yield from _walk(sub, (*path, name))


def _probes(frag) -> list[tuple[Any, list, list]]:
    """Per Kaleido PE (a ``KaleidoPE`` or the P V array's ``PvPE``; in
    fragment order, PE (0, 0) first): the PE and its ``en_a`` and ``en_b``
    signals by register."""
    from kaleido.hdl.pe import KaleidoPE
    from kaleido.hdl.pv_pe import PvPE

    out = []
    for _path, f in _walk(frag):
        pe = next((o for o in getattr(f, "origins", ()) or () if isinstance(o, (KaleidoPE, PvPE))), None)
        if pe is None:
            continue
        enables = getattr(pe, "enables", None)
        if enables is None:
            raise AssertionError(f"PE {_path}: no enables (hdl/pe.py sets KaleidoPE.enables in elaborate)")
        out.append((pe, list(enables[0]), list(enables[1])))
    if not out:
        raise AssertionError("no KaleidoPE in the design")
    return out


def simulate_activity(dut: Any, bench: Callable[[Any], Any], stream: str) -> tuple[Any, Activity]:
    """Run ``await bench(backend)`` on ``dut`` (which has a ``hold`` input
    and the input stream ``stream``) in the Amaranth simulator with the
    activity counters; returns the bench's result and the :class:`Activity`."""
    from amaranth.hdl import Fragment
    from amaranth.sim import Simulator

    frag = Fragment.get(dut, None)
    probes = _probes(frag)
    n_acc = len(probes[0][1])
    port = getattr(dut, stream)
    signals: list = [dut.hold, port.valid & port.ready]
    for pe, en_a, en_b in probes:
        signals += [pe.ctl_in.slot, pe.ctl_in.kind, pe.ctl_in.last, pe.ctl_in.pv, pe.col_in.k0, *en_a, *en_b]
    width = 5 + 2 * n_acc
    act = Activity()
    out: dict[str, Any] = {}
    dual_kind, skip, add = int(SlotKind.DUAL_LO), int(PvSelect.SKIP), int(PvSelect.SUM)

    # The enables sit behind the PE's product register (PE_LATENCY 2): those
    # read on a cycle belong to the control of the previous unheld cycle.
    lag = PE_LATENCY - 1
    history: list[list] = []

    async def counter(ctx: Any) -> None:
        async for _clk, _rst, hold, transfer, *vals in ctx.tick().sample(*signals):
            act.words += bool(transfer)  # a stream transfers on any cycle with valid and ready
            if hold:
                continue
            act.cycles += 1
            history.append(list(vals))
            if len(history) <= lag:
                continue
            ctl_vals = history[-1 - lag]
            del history[: -lag or None]
            for p in range(len(probes)):
                slot, kind, last, pv, k0 = ctl_vals[p * width : p * width + 5]
                en = vals[p * width + 5 : (p + 1) * width]
                en_a, en_b = en[:n_acc], en[n_acc:]
                if p == 0:
                    if slot:
                        act.dual_slots += kind == dual_kind
                        act.full8_slots += kind != dual_kind
                    elif last:
                        act.markers += 1
                act.tiles += bool(last)
                if pv:
                    product = bool(en_a[0]) and k0 != skip
                    act.mul_4x8 += 2 * product
                    act.acc_adds += product
                    act.combines += product
                    act.pre_adds += product and k0 == add
                    continue
                act.mul_4x8 += any(en_a) + any(en_b)
                if kind == dual_kind:
                    act.acc_adds += sum(en_a) + sum(en_b)
                else:
                    act.acc_adds += sum(bool(a or b) for a, b in zip(en_a, en_b, strict=True))
                    act.combines += any(a and b for a, b in zip(en_a, en_b, strict=True))

    async def testbench(ctx: Any) -> None:
        out["result"] = await bench(AmaranthBackend(ctx, dut))

    sim = Simulator(frag)
    sim.add_clock(1e-8)
    sim.add_process(counter)
    sim.add_testbench(testbench)
    sim.run()
    return out["result"], act
