"""One bench per block, written once on the kit (:mod:`kaleido.tb.kit`):
each takes a :class:`~kaleido.tb.kit.Backend`, so the same code drives the
Amaranth simulator and cocotb on Icarus and Verilator. Latencies come from
the designs' own properties."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from kaleido.config import KaleidoConfig
from kaleido.golden.array import Beat
from kaleido.hdl.layouts import COL, CTL, ROW
from kaleido.tb.driver import BeatEncoder, Packer, TileDecoder, col_kb, row_sum
from kaleido.tb.kit import Backend, Hold, PortDriver, StreamSink, StreamSource, TileMonitor, run

__all__ = [
    "ArrayResult",
    "array_tile_latency",
    "array_bench",
    "pe_bench",
    "stream_bench",
    "dispatched_bench",
    "dense_bench",
    "EngineResult",
    "engine_bench",
    "STREAM_DRAIN",
]

#: idle cycles after the last input before a stream block counts as drained
STREAM_DRAIN = 300


@dataclasses.dataclass
class ArrayResult:
    """Per PE the ``(phase, value)`` drains in order and the latency of each
    (counted cycles from its ``last`` beat's transfer to the tile); the
    counted cycle of the last tile (``None`` without one) and the cycles run."""

    drains: dict
    latency: dict
    last_tile: int | None
    cycles: int


def array_tile_latency(config: KaleidoConfig) -> Callable[[int, int], int]:
    """The array's own :meth:`~kaleido.hdl.array.KaleidoArray.tile_latency`."""
    from kaleido.hdl.array import KaleidoArray

    return KaleidoArray(config).tile_latency


def _tile_monitor(config: KaleidoConfig, port: str = "tiles") -> TileMonitor:
    R, C = config.array_rows, config.array_cols
    return TileMonitor({(r, c): f"{port}.{r}.{c}" for r in range(R) for c in range(C)}, TileDecoder(config.acc_width))


def _array_result(mon: TileMonitor, last_accepts: Sequence[int] | None, cycles: int) -> ArrayResult:
    """``last_accepts``: the counted cycle of each phase-ending beat (None:
    beats are formed inside the design, latencies not measured)."""
    latency = (
        {}
        if last_accepts is None
        else {pe: [t - last_accepts[i] for i, t in enumerate(ts)] for pe, ts in mon.cycles.items()}
    )
    return ArrayResult(mon.drains, latency, mon.last, cycles)


async def tile_stream_bench(
    be: Backend,
    config: KaleidoConfig,
    words: Sequence[int],
    lasts: Sequence[bool],
    tile_latency: Callable[[int, int], int],
    *,
    in_stall="none",
    out_stall="none",
    seed=0,
    flush=True,
) -> ArrayResult:
    """Beat words into an array's ``slots`` (bubbles by ``in_stall``),
    ``hold`` by ``out_stall``; every tile collected, until the array's own
    longest ``tile_latency`` passed after the last beat (``flush=False``:
    stop at the last beat). ``lasts`` flags the beats that end a phase (the
    latency is measured from them)."""
    src = StreamSource("slots", words, stall=in_stall, seed=seed)
    mon = _tile_monitor(config)
    drain = tile_latency(config.array_rows - 1, config.array_cols - 1) + 1
    res = await run(
        be,
        sources=[src],
        monitors=[mon],
        hold=Hold(stall=out_stall, seed=seed + 1),
        drain=drain,
        until=None if flush else (lambda: src.done),
    )
    last_accepts = [c for c, last in zip(src.accepted, lasts, strict=True) if last]
    return _array_result(mon, last_accepts, res.cycles)


async def array_bench(
    be: Backend,
    config: KaleidoConfig,
    beats: Sequence[Beat],
    *,
    in_stall="none",
    out_stall="none",
    seed=0,
    flush=True,
) -> ArrayResult:
    """Golden beats through :class:`~kaleido.hdl.array.KaleidoArray`
    (:func:`tile_stream_bench`)."""
    encode = BeatEncoder(config.array_rows, config.array_cols)
    return await tile_stream_bench(
        be,
        config,
        [encode(b) for b in beats],
        [bool(b.last) for b in beats],
        array_tile_latency(config),
        in_stall=in_stall,
        out_stall=out_stall,
        seed=seed,
        flush=flush,
    )


async def pe_bench(be: Backend, config: KaleidoConfig, beats: Sequence[Beat]) -> list[tuple[int, int]]:
    """Golden single-PE beats into :class:`~kaleido.hdl.pe.KaleidoPE`, one
    per cycle; the drained ``(phase, value)`` tiles in order."""
    from kaleido.hdl.pe import KaleidoPE

    row, col, ctl = Packer(ROW), Packer(COL), Packer(CTL)
    values = [
        {
            "row_in": row(
                {("r0",): b.r0[0], ("r1",): b.r1[0], ("s",): row_sum(b, 0), ("q0",): b.q0[0], ("q1",): b.q1[0]}
            ),
            "col_in": col({("k",): b.k[0], ("k0",): b.k0[0], ("k1",): b.k1[0], ("kb",): col_kb(b, 0)}),
            "ctl_in": ctl({(f,): getattr(b, f) for f in ("slot", "kind", "phase", "last", "pv")}),
        }
        for b in beats
    ]
    mon = TileMonitor({0: "tile"}, TileDecoder(config.acc_width))
    await run(be, sources=[PortDriver(values)], monitors=[mon], drain=KaleidoPE(config).latency + 1)
    return mon.drains[0]


async def stream_bench(
    be: Backend,
    words: Sequence[int],
    *,
    in_stall="none",
    out_stall="none",
    seed=0,
    drain=STREAM_DRAIN,
    ports: tuple[str, str] = ("i", "o"),
) -> tuple[list[int], int]:
    """Words into a stream block's input stream ``ports[0]`` (bubbles by
    ``in_stall``), every payload of its output stream ``ports[1]`` out
    (ready dropped by ``out_stall``); returns ``(outputs, cycles)`` with
    ``cycles`` up to and including the last output."""
    src = StreamSource(ports[0], words, stall=in_stall, seed=seed)
    sink = StreamSink(ports[1], stall=out_stall, seed=seed + 1)
    await run(be, sources=[src], sinks=[sink], drain=drain)
    return sink.words, (sink.cycles[-1] + 1 if sink.cycles else 0)


async def dispatched_bench(
    be: Backend, config: KaleidoConfig, words: Sequence[int], *, hold="none", seed=0, drain=400
) -> ArrayResult:
    """Pass words into :class:`~kaleido.hdl.dispatched_array.DispatchedArray`
    (always valid), ``hold`` by the pattern ``hold``; every tile collected."""
    src = StreamSource("passes", words)
    mon = _tile_monitor(config)
    res = await run(be, sources=[src], monitors=[mon], hold=Hold(stall=hold, seed=seed), drain=drain)
    return _array_result(mon, None, res.cycles)


async def pv_bench(
    be: Backend, config: KaleidoConfig, words: Sequence[int], *, in_stall="none", hold="none", seed=0, drain=64
) -> ArrayResult:
    """Unit words into :class:`~kaleido.hdl.pv_array.PvArray` (``units``
    stalled by ``in_stall``), ``hold`` by the pattern ``hold``; every tile
    collected. ``cycles``: counted cycles from the first transfer to the
    last tile (:func:`kaleido.model.pv_cycles` without stalls)."""
    src = StreamSource("units", words, stall=in_stall, seed=seed)
    mon = _tile_monitor(config)
    res = await run(be, sources=[src], monitors=[mon], hold=Hold(stall=hold, seed=seed + 1), drain=drain)
    return _array_result(mon, None, res.cycles)


async def dense_bench(
    be: Backend, config: KaleidoConfig, tiles: Sequence[tuple[Any, Any]], *, in_stall="none", out_stall="none", seed=0
) -> ArrayResult:
    """Tiles (``(a (R, n), b (C, n))`` int8 operands each) through
    :class:`~kaleido.hdl.baseline.DenseArray`, one channel per beat
    (:func:`tile_stream_bench`)."""
    from kaleido.hdl.baseline import DenseArray

    dut = DenseArray(config)
    pack = Packer(dut.signature.members["slots"].signature.members["payload"].shape)
    words, lasts = [], []
    for a, b in tiles:
        n = a.shape[1]
        for i in range(n):
            vals: dict[tuple, int] = {("ctl", "slot"): 1, ("ctl", "last"): int(i == n - 1)}
            vals.update({("a", r): int(a[r, i]) for r in range(a.shape[0])})
            vals.update({("b", c): int(b[c, i]) for c in range(b.shape[0])})
            words.append(pack(vals))
            lasts.append(i == n - 1)
    return await tile_stream_bench(
        be, config, words, lasts, dut.tile_latency, in_stall=in_stall, out_stall=out_stall, seed=seed
    )


@dataclasses.dataclass
class EngineResult:
    """The ``s`` words of one head (score bits, ``last`` dropped), the
    engine's ``cycles`` port after it, and the cycles the head took from its
    first input word to its last score (``total``)."""

    values: list[int]
    compute: int
    total: int


async def engine_bench(
    be: Backend,
    words: Sequence[int],
    score_width: int,
    *,
    in_stall="none",
    out_stall="none",
    seed=0,
    limit=10_000_000,
    each_cycle: Callable[[Backend, int], None] | None = None,
    thresholds: int | None = None,
) -> EngineResult:
    """One head's input words into :class:`~kaleido.hdl.engine.KaleidoEngine`'s
    ``qk`` (bubbles by ``in_stall``), its scores out of ``s`` (ready dropped
    by ``out_stall``) until the word with ``last``; a run longer than
    ``limit`` cycles fails (a hung engine). ``thresholds``: the
    ``thresholds`` port's value for this head
    (:func:`kaleido.tb.engine_io.threshold_word`), set before the first
    word; ``None`` leaves the port as it is."""
    if thresholds is not None:
        be.set("thresholds", thresholds)
    src = StreamSource("qk", words, stall=in_stall, seed=seed)
    sink = StreamSink("s", stall=out_stall, seed=seed + 1)
    res = await run(
        be,
        sources=[src],
        sinks=[sink],
        until=lambda: bool(sink.words) and bool(sink.words[-1] >> score_width & 1),
        each_cycle=each_cycle,
        max_cycles=limit,
    )
    mask = (1 << score_width) - 1
    return EngineResult([w & mask for w in sink.words], be.get("cycles"), res.total)
