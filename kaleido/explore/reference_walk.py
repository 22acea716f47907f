"""The cycle model's array walk as it was before issue 16, kept as the
reference the fast walk of :mod:`kaleido.model.qk` is tested against
(tb/test_model_fast.py) and timed against (``make bench``,
``kaleido.bench.model --reference``): every pass's need array materialised
(row groups x column groups x channels) and the golden matcher run
bit-parallel over all of them: 40 to 70 s for a 32,768-token head on
this shared machine (the fast walk: about 1.5 s).

``with reference_walk(): run_model(...)`` runs the model through it."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np

from ..config import KaleidoConfig
from ..encoding import Need, Phase
from ..golden.matcher import match_slots
from ..model import VARIANTS, group_masks, need_table, qk

__all__ = ["walk_reference", "reference_walk"]


@contextlib.contextmanager
def reference_walk() -> Iterator[None]:
    """Within the block, :func:`kaleido.model.run_model` and
    :func:`kaleido.model.linear_cycles` walk the array with
    :func:`walk_reference`."""
    fast = qk.array_walk
    qk.array_walk = walk_reference
    try:
        yield
    finally:
        qk.array_walk = fast


def _separability(t):
    """``"row"`` if a phase's need depends on the row mask alone (for every
    non-empty column mask), ``"col"`` likewise, else ``"both"``. Every group
    holds a present unit, so masks are never empty."""
    if (t[1:, 1:] == t[1:, 1:2]).all():
        return "row"
    if (t[1:, 1:] == t[1:2, 1:]).all():
        return "col"
    return "both"


def _slots(needs, use_match, lookahead):
    """Slot counts and non-SKIP channel counts for need arrays ``(..., n)``
    (the golden matcher or one slot per non-SKIP channel): a slot that
    carries two channels is a DUAL_LO slot, so ``channels - slots`` of them."""
    nonskip = needs != Need.SKIP
    channels = nonskip.sum(axis=-1, dtype=np.int64)
    if use_match and (needs == Need.HALF).any():
        return match_slots(needs, lookahead), channels
    return channels, channels


def walk_reference(
    tags, n_batches: int, cfg: KaleidoConfig, *, variant: str, arrays: int, pass_gap: int, progress=None
):
    """The array's beats over a loop nest given, per batch, the row and
    column units' tags in pass order (``(tq, tk)``, uint8 ``(U, n)``):
    ``(per_array, phase_beats, phase_slots, passes, batch_beats,
    phase_channels)`` (channels: the non-SKIP channels the slots carry). Passes
    are row group outer, column group inner, dealt round-robin."""
    _, use_match = VARIANTS[variant]
    R, C = cfg.array_rows, cfg.array_cols
    table = need_table(cfg.accumulators)
    separable = [_separability(table[p]) for p in Phase]
    per_array = np.zeros(arrays, dtype=np.int64)
    phase_beats = [0, 0, 0, 0]
    phase_slots = [0, 0, 0, 0]
    phase_channels = [0, 0, 0, 0]
    n_pass = 0
    batch_beats = []
    for index, (tq, tk) in enumerate(tags):
        n_ch = tq.shape[1]
        qm = group_masks(tq, R)  # (Gr, n)
        km = group_masks(tk, C)  # (Gc, n)
        Gr, Gc = len(qm), len(km)
        beats = np.zeros((Gr, Gc), dtype=np.int64)
        for phase in Phase:
            kind = separable[phase]
            if kind == "both":
                # evaluate on distinct row / column masks only, in chunks, then gather
                uq, inv_q = np.unique(qm, axis=0, return_inverse=True)
                uk, inv_k = np.unique(km, axis=0, return_inverse=True)
                su = np.zeros((len(uq), len(uk)), dtype=np.int64)
                cu = np.zeros((len(uq), len(uk)), dtype=np.int64)
                step = max(1, (1 << 22) // max(1, len(uk) * n_ch))
                for g0 in range(0, len(uq), step):
                    su[g0 : g0 + step], cu[g0 : g0 + step] = _slots(
                        table[phase][uq[g0 : g0 + step, None, :], uk[None, :, :]], use_match, cfg.lookahead
                    )
                slots = su[inv_q.ravel()][:, inv_k.ravel()]
                b = np.maximum(slots, 1)
                beats += b
                phase_beats[phase] += int(b.sum())
                phase_slots[phase] += int(slots.sum())
                phase_channels[phase] += int(cu[inv_q.ravel()][:, inv_k.ravel()].sum())
                continue
            # the need depends on one side only: evaluate per group, broadcast
            if kind == "row":
                slots, chans = (x[:, None] for x in _slots(table[phase][qm, 1], use_match, cfg.lookahead))
            else:
                slots, chans = (x[None, :] for x in _slots(table[phase][1, km], use_match, cfg.lookahead))
            b = np.maximum(slots, 1)
            beats += b
            phase_beats[phase] += int(np.broadcast_to(b, beats.shape).sum())
            phase_slots[phase] += int(np.broadcast_to(slots, beats.shape).sum())
            phase_channels[phase] += int(np.broadcast_to(chans, beats.shape).sum())
        # passes in loop-nest order (row group outer, column group inner), dealt round-robin
        flat = beats.ravel() + pass_gap
        batch_beats.append((int(flat.sum()), int(flat[-1])))
        idx = (n_pass + np.arange(flat.size)) % arrays
        per_array += np.bincount(idx, weights=flat, minlength=arrays).astype(np.int64)
        n_pass += flat.size
        if progress:
            progress(index + 1, n_batches)
    return per_array, phase_beats, phase_slots, n_pass, batch_beats, phase_channels
