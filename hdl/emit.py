"""Emit one Verilog file per design into ``build/verilog/``.

``python -m kaleido.hdl.emit [--out DIR] [--preset NAME] [--rows R --cols C]``
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable

from amaranth.back import verilog
from amaranth.lib import wiring

from ..config import CoreConfig, KaleidoConfig, add_config_arguments, config_from_args
from .array import KaleidoArray
from .baseline import DenseArray, DensePvArray, MacPE
from .core import KaleidoAttentionCore
from .dense_engine import DenseEngine
from .detector import ReuseDetector
from .dispatched_array import DispatchedArray
from .engine import KaleidoEngine
from .matcher import Matcher
from .o_accumulator import OAccumulator
from .pe import KaleidoPE
from .pv_array import PvArray
from .pv_dispatcher import PvDispatcher
from .pv_pe import PvPE
from .pv_tile import PvTile
from .qk_pe import QkPE
from .scheduler import Scheduler
from .softmax import OutputScaler, SoftmaxUnit, TileSoftmax
from .window_detector import WindowDetector

__all__ = ["DESIGNS", "emit", "module_name"]

#: design name -> factory(config)
DESIGNS: dict[str, Callable[..., wiring.Component]] = {
    "kaleido_pe": KaleidoPE,
    "pv_pe": PvPE,  # the P V array's PE
    "kaleido_array": KaleidoArray,
    "qk_pe": QkPE,  # the Q K^T arrays' PE (the core's; kaleido_pe has both modes)
    "qk_array": lambda cfg: KaleidoArray(cfg, pe=QkPE),  # the core's Q K^T array
    "mac_pe": lambda cfg: MacPE(cfg.acc_width),
    "mac_pe_1stage": lambda cfg: MacPE(cfg.acc_width, product_register=False),
    "dense_array": DenseArray,
    "detector": ReuseDetector,
    "window_detector": WindowDetector,
    "scheduler": Scheduler,
    "matcher": Matcher,
    "dispatched_array": DispatchedArray,
    "pv_dispatcher": PvDispatcher,
    "pv_array": PvArray,
    "engine": KaleidoEngine,  # also takes grid= (an elaboration parameter)
    "softmax": SoftmaxUnit,  # default SoftmaxFormat, lanes = array_cols
    "output_scaler": OutputScaler,
    "tile_softmax": TileSoftmax,  # default format, lanes = array_cols, rows = CoreConfig().tile_tokens
    "o_accumulator": OAccumulator,  # lanes = array_cols, rows = CoreConfig().tile_tokens, channels = d
    "pv_tile": lambda cfg: PvTile(cfg, (2, 2, 4), 6),  # the block case's stage (kaleido.tb.pv_tile_cases)
    "dense_pv_array": DensePvArray,
    "dense_pv_tile": lambda cfg: PvTile(cfg, (2, 2, 4), 6, variant="dense"),  # the dense core's, same case
    "dense_engine": DenseEngine,  # also takes grid= (an elaboration parameter)
    # the whole core and the dense core beside it (the same buffers but the
    # engine's and the P V array's; docs/CORE.md "The dense core"), CoreConfig()
    "core": lambda cfg: KaleidoAttentionCore(cfg, CoreConfig()),
    "dense_core": lambda cfg: KaleidoAttentionCore(cfg, CoreConfig(), variant="dense"),
}

#: designs whose factory takes ``grid=`` as well as the configuration
GRID_DESIGNS = {"engine", "dense_engine"}

#: designs `make verilog` writes (the dispatched array's dynamic channel
#: selects make its Verilog large; it and the engine, which contains it,
#: are emitted for their own tests and for `make sim`; the engines take a
#: grid; the cores are for synthesis)
DEFAULT_EMIT = [d for d in DESIGNS if d not in ("dispatched_array", "engine", "dense_engine", "core", "dense_core")]


def module_name(design: str, config: KaleidoConfig) -> str:
    return design


def emit(design: str, config: KaleidoConfig, out_dir: str = "build/verilog", *, grid=None) -> str:
    """Write ``design`` for ``config`` (and ``grid`` for the engine); returns
    the file path. Files are named ``<design>__<config.tag>.v`` so
    configurations never collide."""
    if design not in DESIGNS:
        raise ValueError(f"unknown design {design!r}; known: {sorted(DESIGNS)}")
    if (grid is not None) != (design in GRID_DESIGNS):
        raise ValueError(f"design {design!r} {'needs' if design in GRID_DESIGNS else 'takes no'} grid=")
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, f"{design}__{config.tag}.v")
    dut = DESIGNS[design](config, grid) if grid is not None else DESIGNS[design](config)
    text = verilog.convert(dut, name=module_name(design, config), emit_src=False)
    if os.path.exists(path):
        with open(path) as f:
            if f.read() == text:
                return path  # unchanged: simulator builds from it stay up to date
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)  # atomic: safe under pytest -n
    return path


def main(argv=None):
    ap = argparse.ArgumentParser(description="Emit Kaleido Verilog")
    ap.add_argument("--out", default="build/verilog")
    add_config_arguments(ap, ("array_rows", "array_cols", "accumulators"))
    args = ap.parse_args(argv)
    cfg = config_from_args(args)
    for design in DEFAULT_EMIT:
        print(emit(design, cfg, args.out))


if __name__ == "__main__":
    main()
