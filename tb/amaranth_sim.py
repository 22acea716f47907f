"""The blocks in the Amaranth simulator (the fast inner loop): each
function runs a bench of :mod:`kaleido.tb.benches` through
:class:`~kaleido.tb.kit.AmaranthBackend`; the cocotb testbenches run the
same benches on the emitted Verilog."""

from __future__ import annotations

from kaleido.config import KaleidoConfig
from kaleido.hdl.array import KaleidoArray
from kaleido.tb.benches import array_bench, engine_bench, pe_bench, stream_bench
from kaleido.tb.kit import Backend, simulate

__all__ = ["simulate_array", "simulate_pe", "simulate_stream", "simulate_engine"]


def simulate_array(config: KaleidoConfig, beats, *, in_stall="none", out_stall="none", seed=0, with_cycles=False):
    """Drive ``beats`` into a :class:`KaleidoArray` (:func:`array_bench`);
    return ``(drains, latency)``: per PE the ``(phase, value)`` drains in
    order, and per PE the counted cycles between each ``last`` acceptance
    and its tile. ``with_cycles`` also returns the cycles from the first
    beat to the last tile (held cycles not counted)."""
    res = simulate(
        KaleidoArray(config),
        lambda be: array_bench(be, config, beats, in_stall=in_stall, out_stall=out_stall, seed=seed),
    )
    if with_cycles:
        return res.drains, res.latency, res.last_tile + 1
    return res.drains, res.latency


def simulate_pe(config: KaleidoConfig, beats):
    """Golden single-PE beats into a :class:`KaleidoPE` (:func:`pe_bench`);
    the drained ``(phase, value)`` tiles in order."""
    from kaleido.hdl.pe import KaleidoPE

    return simulate(KaleidoPE(config), lambda be: pe_bench(be, config, beats))


def simulate_stream(dut, words, *, in_stall="none", out_stall="none", seed=0, ports=("i", "o")):
    """Push ``words`` through the stream ``ports[0]`` of ``dut`` and collect
    the stream ``ports[1]`` (:func:`stream_bench`); returns ``(outputs,
    cycles)``, ``cycles`` up to and including the last output."""
    return simulate(
        dut, lambda be: stream_bench(be, words, in_stall=in_stall, out_stall=out_stall, seed=seed, ports=ports)
    )


def simulate_engine(
    config,
    grid,
    Q,
    K,
    *,
    in_stall="none",
    out_stall="none",
    seed=0,
    max_cycles=2_000_000,
    head_grid=None,
    thresholds=None,
    stats=None,
):
    """One head through a :class:`KaleidoEngine` built for ``grid`` in the
    Amaranth simulator; returns ``(S, compute_cycles, total_cycles)``.
    ``head_grid`` is the head's own grid (default: the engine's); a head
    the engine cannot take is rejected before anything is built.
    ``thresholds``: the head's per-group ``(F, P)`` on the engine's
    run-time port (default: its reset value, ``config.thresholds``). A dict
    ``stats`` receives ``held``: the cycles the accumulation buffer held
    the array."""
    from kaleido.hdl.engine import KaleidoEngine, check_engine_input
    from kaleido.tb.engine_io import decode_scores, engine_words, threshold_word

    check_engine_input(Q, K, grid if head_grid is None else head_grid, config.split, config, grid)
    dut = KaleidoEngine(config, grid)
    words = engine_words(Q, K, config)
    word = None if thresholds is None else threshold_word(thresholds)
    R, C = config.array_rows, config.array_cols
    lanes = [
        (f"accumulator.writes.{r}.{c}.enable", f"accumulator.writes.{r}.{c}.address")
        for r in range(R)
        for c in range(C)
    ]

    held = [0]

    def no_collision(be: Backend, cycle: int) -> None:
        """The accumulate lanes never write one S entry twice in a cycle
        (and count the held cycles)."""
        held[0] += be.get("accumulator.hold")
        hits = [be.get(address) for enable, address in lanes if be.get(enable)]
        if len(hits) != len(set(hits)):
            raise AssertionError(
                f"cycle {cycle}: two accumulate lanes write S entries {sorted(hits)} "
                "in the same cycle (one update would be lost)"
            )

    res = simulate(
        dut,
        lambda be: engine_bench(
            be,
            words,
            dut.s_width,
            in_stall=in_stall,
            out_stall=out_stall,
            seed=seed,
            limit=max_cycles,
            each_cycle=no_collision,
            thresholds=word,
        ),
    )
    if stats is not None:
        stats["held"] = held[0]
    return decode_scores(res.values, dut.n_tokens, dut.s_width), res.compute, res.total
