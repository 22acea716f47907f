"""The softmax stages' exact cycles: the softmax unit and the output scaler
(``kaleido.hdl.softmax.SoftmaxUnit``, ``OutputScaler``) and the attention
core's tiled softmax (``TileSoftmax``), docs/SOFTMAX.md."""

from __future__ import annotations

from ..checks import check_positive
from ..config import SoftmaxFormat

#: the RTL softmax unit's pipeline (``kaleido.hdl.softmax.SoftmaxUnit.latency``):
#: cycles from a beat's transfer on ``s`` to its P beat on ``p``
SOFTMAX_LATENCY = 5


def softmax_cycles(n_tokens: int, n_rows: int, lanes: int, fmt: SoftmaxFormat | None = None) -> int:
    """Exact cycles of the RTL softmax unit (``kaleido.hdl.softmax.SoftmaxUnit``)
    for ``n_rows`` rows of ``n_tokens`` scores with no stalls: from the
    first transfer on ``s`` to the last transfer on ``p`` or ``r``, both
    counted (docs/SOFTMAX.md, "RTL: the softmax unit").

    Each row is ``B = ceil(n_tokens / lanes)`` beats, sent twice, one beat
    a cycle; a row's ``r`` leaves ``D = SOFTMAX_LATENCY + 1 + recip_width``
    cycles after its last beat (the P pipeline, the row-sum register, the
    divider), and the next row's last beat waits for it
    (one divider), so rows start ``max(2B, D)`` cycles apart:
    ``2B + (n_rows - 1) max(2B, D) + D``."""
    fmt = fmt or SoftmaxFormat()
    beats = -(-check_positive("n_tokens", n_tokens) // check_positive("lanes", lanes))
    divide = SOFTMAX_LATENCY + 1 + fmt.recip_width
    return 2 * beats + (check_positive("n_rows", n_rows) - 1) * max(2 * beats, divide) + divide


def output_scaler_cycles(n_rows: int, d: int, lanes: int) -> int:
    """Exact cycles of the RTL output scaler (``kaleido.hdl.softmax.OutputScaler``)
    for ``n_rows`` rows of ``d`` channels with no stalls, counted as in
    :func:`softmax_cycles`: ``n_rows ceil(d / lanes)`` beats, one a cycle,
    each out two cycles after it is taken (its products, then the rounding)."""
    return check_positive("n_rows", n_rows) * -(-check_positive("d", d) // check_positive("lanes", lanes)) + 2


#: the RTL tiled softmax's pipeline (``kaleido.hdl.softmax.TileSoftmax.latency``):
#: cycles from an exp beat's transfer on ``s`` to its P beat on ``p``
TILE_SOFTMAX_LATENCY = 6


def tile_softmax_cycles(walk, lanes: int, fmt: SoftmaxFormat | None = None) -> int:
    """Exact cycles of the RTL tiled softmax (``kaleido.hdl.softmax.TileSoftmax``)
    with no stalls, for query tiles walked back to back: ``walk`` holds one
    ``(rows, keys)`` per query tile, ``keys`` the key count of each of its
    key tiles in walk order. Counted from the first transfer on ``s`` to
    the last transfer on ``p`` or ``r``, both counted (docs/SOFTMAX.md,
    "RTL: the tiled softmax").

    A query tile sends every row's segment of every key tile twice (pass 1,
    then pass 2), ``b_j = ceil(keys_j / lanes)`` beats a segment, one beat a
    cycle; the row state's forwarding never stalls. Only the divider does:
    the last beat of a final-key-tile segment waits until the previous row's
    ``r`` leaves, ``D = TILE_SOFTMAX_LATENCY + 1 + recip_width`` cycles after
    that row's last beat, so for one query tile of ``R`` rows and final
    segments of ``b_T`` beats: ``R (2 sum_j b_j - b_T) + b_T + (R - 1)
    max(b_T, D) + D``."""
    fmt = fmt or SoftmaxFormat()
    lanes = check_positive("lanes", lanes)
    divide = TILE_SOFTMAX_LATENCY + 1 + fmt.recip_width
    tiles = list(walk)
    if not tiles:
        raise ValueError("walk must hold at least one query tile, not none")
    t = -1  # the cycle the last beat was taken in
    last_div: int | None = None  # ... and the last final-key-tile segment's last beat
    end = 0
    for rows, keys in tiles:
        rows = check_positive("rows", rows)
        keys = list(keys)
        if not keys:
            raise ValueError("keys must hold at least one key tile's key count, not none")
        beats = [-(-check_positive("keys", k) // lanes) for k in keys]
        t += rows * sum(beats)  # pass 1
        t += rows * sum(beats[:-1])  # pass 2 before the final key tile
        for _ in range(rows):
            t += beats[-1]
            if last_div is not None:
                t = max(t, last_div + divide)
            last_div = t
        end = max(end, t + TILE_SOFTMAX_LATENCY, t + divide)
    return end + 1
