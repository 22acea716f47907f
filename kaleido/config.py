"""The project's single configuration object.

Hardware (``kaleido.hdl``), golden model, testbenches, synthesis flow and the
cycle model all read the same frozen :class:`KaleidoConfig`; it is validated
once, here, and names build directories and Verilog modules.
"""

from __future__ import annotations

import dataclasses

import numbers

__all__ = ["KaleidoConfig", "PRESETS", "check_thresholds", "check_split",
           "PRODUCT_BOUND", "signed_width"]

#: largest magnitude of an int8 x int8 product, (-128) * (-128)
PRODUCT_BOUND = 1 << 14


def signed_width(max_abs: int) -> int:
    """Bits of a two's-complement register that holds every value in
    ``[-max_abs, +max_abs]``."""
    return int(max_abs).bit_length() + 1


def _is_int(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def check_thresholds(F, P) -> tuple[int, int]:
    """Validate the reuse thresholds of spec sec. 3: ``1 <= P <= F <= 9``."""
    for name, value in (("F", F), ("P", P)):
        if not _is_int(value):
            raise TypeError(f"threshold {name} must be an integer, not {value!r}")
        if not 1 <= value <= 9:
            raise ValueError(f"threshold {name} must be in 1..9, not {value!r} (9 means never)")
    if P > F:
        raise ValueError(f"thresholds must satisfy P <= F, not F={F!r}, P={P!r}")
    return int(F), int(P)


def check_split(split, d: int | None = None) -> tuple[int, int, int]:
    """Validate a channel split ``(d_t, d_x, d_y)``: three integers >= 1 that
    sum to ``d`` when ``d`` is given."""
    try:
        parts = tuple(split)
    except TypeError:
        raise TypeError(f"split must be a sequence of three integers, not {split!r}") from None
    if len(parts) != 3 or not all(_is_int(p) for p in parts):
        raise TypeError(f"split must be three integers (d_t, d_x, d_y), not {split!r}")
    if any(p < 1 for p in parts):
        raise ValueError(f"every channel group of split must be at least 1, not {split!r}")
    if d is not None and sum(parts) != d:
        raise ValueError(f"split {parts!r} sums to {sum(parts)}, but the head dimension d is {d}")
    return tuple(int(p) for p in parts)


@dataclasses.dataclass(frozen=True)
class KaleidoConfig:
    """Frozen, validated configuration of a Kaleido build.

    Parameters
    ----------
    F, P : int
        Full- and partial-match thresholds in leading equal bits,
        ``1 <= P <= F <= 9`` (9 = never; ``F = P = 9`` turns reuse off).
    split : (int, int, int)
        Channel groups ``(d_t, d_x, d_y)``; ``d = sum(split)``.
    batch : int
        Channels per batch (``BATCH``); batches never cross a group.
    lookahead : int
        Matcher lookahead ``L``.
    accumulators : int
        3 (the paper's PE) or 4 (the measured extension of spec sec. 5).
    array_rows, array_cols : int
        PE array size in pair groups (4x4 by default).
    acc_width : int or None
        PE register width; ``None`` derives the smallest width that holds a
        batch (``BATCH`` products of at most ``2**14``). A narrower value is
        rejected.
    window : int
        Scheduler window (string-queue entries), 64 in the paper.
    name : str
        Preset name, used in build-directory and module names.
    """

    F: int = 5
    P: int = 3
    split: tuple = (16, 56, 56)
    batch: int = 16
    lookahead: int = 4
    accumulators: int = 3
    array_rows: int = 4
    array_cols: int = 4
    acc_width: int | None = None
    window: int = 64
    name: str = "hunyuan"

    def __post_init__(self):
        check_thresholds(self.F, self.P)
        object.__setattr__(self, "split", check_split(self.split))
        for field in ("batch", "lookahead", "array_rows", "array_cols", "window"):
            value = getattr(self, field)
            if not _is_int(value):
                raise TypeError(f"{field} must be an integer, not {value!r}")
            if value < 1:
                raise ValueError(f"{field} must be at least 1, not {value!r}")
        if self.batch > 64:
            raise ValueError(f"batch must be at most 64 (reuse strings are at most 64 bits), not {self.batch!r}")
        if self.array_rows > 64 or self.array_cols > 64:
            raise ValueError(f"array size must be at most 64x64, not {self.array_rows!r}x{self.array_cols!r}")
        if self.accumulators not in (3, 4):
            raise ValueError(f"accumulators must be 3 or 4, not {self.accumulators!r}")
        need = self.min_acc_width
        if self.acc_width is None:
            object.__setattr__(self, "acc_width", need)
        elif not _is_int(self.acc_width):
            raise TypeError(f"acc_width must be an integer or None, not {self.acc_width!r}")
        elif self.acc_width < need:
            raise ValueError(
                f"acc_width {self.acc_width!r} is too narrow for batch {self.batch}: "
                f"a batch of {self.batch} products of magnitude up to 2**14 needs {need} bits")
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise ValueError(f"name must be an identifier-like string, not {self.name!r}")

    # --- derived values -------------------------------------------------
    @property
    def d(self) -> int:
        """Head dimension, ``sum(split)``."""
        return sum(self.split)

    @property
    def min_acc_width(self) -> int:
        """Smallest PE register width for one batch."""
        return signed_width(self.batch * PRODUCT_BOUND)

    def buffer_width(self, d: int | None = None) -> int:
        """Accumulation-buffer entry width for a head of ``d`` channels."""
        return signed_width((self.d if d is None else d) * PRODUCT_BOUND)

    @property
    def batches(self) -> tuple[tuple[int, int], ...]:
        """``(first_channel, length)`` of every batch, in loop-nest order."""
        out, base = [], 0
        for size in self.split:
            for start in range(0, size, self.batch):
                out.append((base + start, min(self.batch, size - start)))
            base += size
        return tuple(out)

    @property
    def tag(self) -> str:
        """Short identifier for build directories and module names."""
        return (f"{self.name}_a{self.array_rows}x{self.array_cols}_b{self.batch}"
                f"_w{self.acc_width}_r{self.accumulators}")

    def replace(self, **changes) -> "KaleidoConfig":
        return dataclasses.replace(self, **changes)

    @classmethod
    def preset(cls, name: str, **overrides) -> "KaleidoConfig":
        """A named preset (``hunyuan`` or ``wan``) with optional overrides."""
        if name not in PRESETS:
            raise ValueError(f"unknown preset {name!r}; known presets: {sorted(PRESETS)}")
        return cls(**{**PRESETS[name], "name": name, **overrides})


#: channel splits of the paper's two models (spec sec. 2)
PRESETS = {
    "hunyuan": {"split": (16, 56, 56)},
    "wan": {"split": (44, 42, 42)},
}

