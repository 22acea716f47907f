"""The exploration's heads: :class:`WorkloadSpec` (a synthetic head,
loaded and its int8 reference output cached per process), the **tuning
set** :data:`TUNING` (the report's default workloads, both motions), the
**held-out set** :data:`HELD_OUT` (other seeds, channel spreads, grids, a
photograph and the Wan split the project never tuned on) and
:func:`calibration_spec`, the head a calibrated candidate chooses another
head's thresholds on."""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from ..golden.grouped import int8_attention
from ..golden.workloads import DEFAULT_SPREAD, MOTIONS, Workload, synthetic_video

__all__ = ["WorkloadSpec", "TUNING", "HELD_OUT", "calibration_spec"]


@dataclasses.dataclass(frozen=True)
class WorkloadSpec:
    """A synthetic head (:func:`kaleido.golden.workloads.synthetic_video`)."""

    preset: str = "hunyuan"
    grid: tuple = (8, 16, 16)
    motion: str = "slow"
    seed: int = 0
    spread: float = DEFAULT_SPREAD
    image: str = "astronaut"

    def __post_init__(self):
        if self.motion not in MOTIONS:
            raise ValueError(f"motion must be one of {sorted(MOTIONS)}, not {self.motion!r}")

    @property
    def name(self) -> str:
        g = "x".join(str(x) for x in self.grid)
        extra = "" if self.image == "astronaut" else f" {self.image}"
        return f"{self.preset} {g} {self.motion} s{self.seed} sp{self.spread:g}{extra}"

    def load(self) -> Workload:
        return _load(self)


@functools.lru_cache(maxsize=16)
def _load(spec: WorkloadSpec) -> Workload:
    return synthetic_video(spec.preset, spec.grid, spec.motion, spec.seed, spread=spec.spread, image=spec.image)


@functools.lru_cache(maxsize=16)
def int8_reference(spec: WorkloadSpec) -> np.ndarray:
    """A head's int8 attention without reuse (:func:`kaleido.golden.grouped.int8_attention`),
    cached: what the quality of :mod:`.measurement` and the bounds of :mod:`.op_bounds` compare to."""
    w = spec.load()
    return int8_attention(w.q, w.k, w.v, scales=w.scales)


#: the report's default workloads (``make report``): both motions
TUNING = (WorkloadSpec(motion="slow"), WorkloadSpec(motion="fast"))

#: heads the project never tuned on: other seeds, spreads, grids, a photograph, the Wan split
HELD_OUT = (
    WorkloadSpec(motion="slow", seed=1),
    WorkloadSpec(motion="fast", seed=2),
    WorkloadSpec(motion="slow", seed=3, spread=1.0),
    WorkloadSpec(motion="fast", seed=4, spread=0.25),
    WorkloadSpec(grid=(6, 12, 16), motion="slow", seed=5),
    WorkloadSpec(grid=(4, 16, 24), motion="fast", seed=6),
    WorkloadSpec(motion="slow", seed=7, image="chelsea"),
    WorkloadSpec(preset="wan", motion="fast", seed=8),
)


def calibration_spec(spec: WorkloadSpec) -> WorkloadSpec:
    """The head a ``"group-calibrated"`` candidate chooses ``spec``'s
    thresholds on: the same layer (seed: projections, channel gains, view;
    preset, grid, spread, photograph) seeing the other motion, so the
    thresholds are never chosen on the head they are measured on."""
    return dataclasses.replace(spec, motion="fast" if spec.motion == "slow" else "slow")
