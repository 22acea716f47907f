"""The cycle model's array walk as it was before issue 16, kept as the
reference the fast walk of :mod:`kaleido.model` is tested against
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

from . import model
from .config import KaleidoConfig
from .encoding import Need, Phase
from .model import VARIANTS, need_table

__all__ = ["walk_reference", "reference_walk"]


@contextlib.contextmanager
def reference_walk() -> Iterator[None]:
    """Within the block, :func:`kaleido.model.run_model` and
    :func:`kaleido.model.linear_cycles` walk the array with
    :func:`walk_reference`."""
    fast = model._walk
    model._walk = walk_reference
    try:
        yield
    finally:
        model._walk = fast


def _group_masks(tags, size):
    """Per group of ``size`` units: uint8 ``(groups, n)`` class masks; the
    padding units that complete the last group hold no class."""
    U, n = tags.shape
    G = -(-U // size)
    bits = np.zeros((G * size, n), dtype=np.uint8)
    bits[:U] = np.left_shift(1, tags.astype(np.uint8))
    return np.bitwise_or.reduce(bits.reshape(G, size, n), axis=1)


def _pack_bits(mask):
    """bool ``(..., n)`` -> uint32 with channel ``c`` at bit ``c``."""
    packed = np.packbits(mask, axis=-1, bitorder="little")
    out = np.zeros(mask.shape[:-1], dtype=np.uint32)
    for i in range(packed.shape[-1]):
        out |= packed[..., i].astype(np.uint32) << np.uint32(8 * i)
    return out


def _match_slots(ns, hm, lookahead):
    """Vectorised golden matcher: slot counts for need masks (``ns`` non-SKIP
    bits, ``hm`` HALF bits, channel 0 = bit 0)."""
    pending = ns.astype(np.uint32).copy()
    hm = hm.astype(np.uint32)
    slots = np.zeros(pending.shape, dtype=np.int64)
    one = np.uint32(1)
    while True:
        active = pending != 0
        if not active.any():
            return slots
        head = pending & (~pending + one)
        rest = pending & ~head
        win = np.zeros_like(rest)
        r = rest.copy()
        for _ in range(lookahead):
            low = r & (~r + one)
            win |= low
            r &= ~low
        cand = win & hm
        partner = cand & (~cand + one)
        dual = ((head & hm) != 0) & (partner != 0)
        pending = rest & ~np.where(dual, partner, np.uint32(0))
        slots += active


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
        return _match_slots(_pack_bits(nonskip), _pack_bits(needs == Need.HALF), lookahead), channels
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
        qm = _group_masks(tq, R)  # (Gr, n)
        km = _group_masks(tk, C)  # (Gc, n)
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
