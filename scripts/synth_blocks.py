"""Where the 16 1x1-array core's extra logic goes (issue 14; docs/SYNTH.md,
"The whole core beside the dense core"): the Q K^T engine's arrays block,
``ArraySet``, on one 4x4 array and on 16 1x1 arrays, and one
``DispatchedArray`` (a ``PassDispatcher`` and its ``KaleidoArray``), one
``PassDispatcher`` and one ``Matcher`` at each shape, each through the whole core's Yosys flow
(:func:`kaleido.synth.core.synth_core`: logic transistors, memories of at
least 32 words as macros).

    .venv/bin/python scripts/synth_blocks.py [NAME ...]

writes ``build/synth_blocks/<names>.json`` and prints one line a block
(about 4 minutes for all eight on one core).
"""

from __future__ import annotations

import json
import pathlib
import sys

from kaleido.config import CoreConfig, KaleidoConfig
from kaleido.hdl.array_set import ArraySet
from kaleido.hdl.dispatched_array import DispatchedArray
from kaleido.hdl.dispatcher import PassDispatcher
from kaleido.hdl.matcher import Matcher
from kaleido.synth.core import synth_core

ROOT = pathlib.Path("build/synth_blocks")
FIELDS = ("cells", "flip_flops", "transistors", "gate_depth", "buffer_bits", "logic_memory_bits", "seconds")


def main(argv: list[str]) -> int:
    n_tokens = CoreConfig().tile_tokens  # the core's engine elaborates one tile
    one, small = KaleidoConfig.one_array(), KaleidoConfig(sub_arrays=(1, 1))
    blocks = {
        "array_set_4x4": lambda: ArraySet(one, n_tokens),
        "array_set_16x1x1": lambda: ArraySet(small, n_tokens),
        "dispatched_4x4": lambda: DispatchedArray(one),
        "dispatched_1x1": lambda: DispatchedArray(small.sub_config()),
        "dispatcher_4x4": lambda: PassDispatcher(one),
        "dispatcher_1x1": lambda: PassDispatcher(small.sub_config()),
        "matcher_4x4": lambda: Matcher(one),
        "matcher_1x1": lambda: Matcher(small.sub_config()),
    }
    names = argv or list(blocks)
    unknown = [n for n in names if n not in blocks]
    if unknown:
        print(f"unknown block(s) {unknown}; known: {sorted(blocks)}", file=sys.stderr)
        return 2
    ROOT.mkdir(parents=True, exist_ok=True)
    out = {}
    for name in names:
        entry = synth_core(name, blocks[name], root=str(ROOT))
        out[name] = {k: entry[k] for k in FIELDS}
        print(name, out[name], flush=True)
    (ROOT / f"{'_'.join(names)}.json").write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
