"""The area estimate of an array shape at 16 PEs
(:func:`shape_transistors`): the measured transistors of the blocks a
shape is built from (:data:`BLOCK_TRANSISTORS`) and how many arrays share
one dispatcher (:data:`ARRAYS_PER_DISPATCHER`)."""

from __future__ import annotations

__all__ = ["BLOCK_TRANSISTORS", "ARRAYS_PER_DISPATCHER", "shape_transistors"]


#: transistors of the blocks an array shape is built from, measured with
#: ``make synth``'s flow at ``KaleidoConfig.one_array()`` (docs/SYNTH_TABLE.md for the
#: 4x4 entries; :func:`kaleido.synth.flow.synth_design` with the array shape
#: overridden, no Fmax, for the others; docs/EXPLORATION.md). A scheduler's
#: key is its window in strings (16 per unit of a pass side).
BLOCK_TRANSISTORS = {
    "array 4x4": 286_252,
    "array 2x4": 142_690,
    "array 4x2": 144_348,
    "array 2x2": 70_436,
    "array 1x1": 16_578,
    "pv_dispatcher 4x4": 8_062,
    "pv_dispatcher 2x4": 5_848,
    "pv_dispatcher 4x2": 6_266,
    "pv_dispatcher 2x2": 4_074,
    "pv_dispatcher 1x1": 2_098,
    "scheduler 64": 81_582,
    "scheduler 32": 45_638,
    "scheduler 16": 27_926,
    "matcher": 4_200,
    "detector": 20_674,
    "dense array 4x4": 102_606,
}

#: arrays that share one pair of detectors and schedulers (docs/SYNTH.md, the paper's 8 per dispatcher)
ARRAYS_PER_DISPATCHER = 8


def shape_transistors(rows: int, cols: int, arrays: int, sub_array=None, blocks: dict | None = None) -> dict:
    """An **estimate** of the transistors per 16 PEs of ``arrays`` arrays
    of ``rows x cols`` behind one dispatcher (or, with ``sub_array=(r,
    c)``, one ``rows x cols`` array's passes split over arrays of ``r x c``
    in step), from measured blocks (:data:`BLOCK_TRANSISTORS`): every array
    with its own matcher (its own slot stream) and P V dispatcher (one
    ``rows x cols`` P V dispatcher for the arrays in step, whose P V pass is
    the whole pass), and the share of 16 PEs of a dispatcher's two
    detectors and two schedulers (Q side window ``16 rows``, K side ``16
    cols``), which serve :data:`ARRAYS_PER_DISPATCHER` 16-PE groups. The
    pass queue or static split that deals passes to the arrays is left out
    (a counter and a comparator per array). ``ports``: operand words a beat
    (row plus column operands of every array). Keys: ``arrays``,
    ``matchers``, ``pv_dispatchers``, ``shared``, ``total``, ``ports``,
    ``vs_dense`` (total over the dense 4x4 array)."""
    b = BLOCK_TRANSISTORS if blocks is None else blocks
    if sub_array is not None:
        if arrays != 1:
            raise ValueError(f"sub_array splits one array's passes, not {arrays} arrays'")
        r, c = sub_array
        if rows % r or cols % c:
            raise ValueError(f"sub_array {r}x{c} must divide the {rows}x{cols} pass")
        n, pvd = (rows // r) * (cols // c), b[f"pv_dispatcher {rows}x{cols}"]
    else:
        r, c, n = rows, cols, arrays
        pvd = arrays * b[f"pv_dispatcher {rows}x{cols}"]
    if r * c * n != 16:
        raise ValueError(f"the estimate is per 16 PEs, not {n} x {r}x{c}")
    shared = (2 * b["detector"] + b[f"scheduler {16 * rows}"] + b[f"scheduler {16 * cols}"]) / ARRAYS_PER_DISPATCHER
    out = {
        "arrays": n * b[f"array {r}x{c}"],
        "matchers": n * b["matcher"],
        "pv_dispatchers": pvd,
        "shared": shared,
        "ports": n * (r + c),
    }
    out["total"] = out["arrays"] + out["matchers"] + out["pv_dispatchers"] + out["shared"]
    out["vs_dense"] = out["total"] / b["dense array 4x4"]
    return out
