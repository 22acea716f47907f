"""The project's single configuration object.

Hardware (``kaleido.hdl``), golden model, testbenches, synthesis flow and the
cycle model all read the same frozen :class:`KaleidoConfig`; it is validated
once, here, and names build directories and Verilog modules.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import numbers

from .checks import (
    check_group_thresholds,
    check_pv_buffers,
    check_s_sets,
    check_side,
    check_split,
    check_thresholds,
    is_int,
)

__all__ = [
    "SMALL_P",
    "KaleidoConfig",
    "SoftmaxFormat",
    "CoreConfig",
    "LinearReuse",
    "AXES",
    "MAX_CORE_TOKENS",
    "PRESETS",
    "DESIGNS",
    "DEFAULT_GROUP_THRESHOLDS",
    "PRODUCT_BOUND",
    "signed_width",
    "CLUSTERS",
    "PASSES_PER_CLUSTER",
    "LFSR_WIDTH",
    "LFSR_TAPS",
    "LFSR_SEED",
    "LFSR_LEAP",
    "pivot_bits",
    "lfsr_steps",
    "PE_LATENCY",
    "BEAT_REGISTER",
    "DISPATCH_LATENCY",
    "QUEUE_LATENCY",
    "tile_latency",
    "s_bank",
    "s_bank_offset",
    "RMW_LATENCY",
]

#: largest magnitude of an int8 x int8 product, (-128) * (-128)
PRODUCT_BOUND = 1 << 14


#: cycles from a ``last`` beat at a Kaleido PE's inputs to its tile (valid
#: in the drain register): the product register between the multipliers and
#: the accumulators (issue 20), then the drain register
PE_LATENCY = 2

#: cycles from the Kaleido array accepting a beat to its PEs' inputs: the
#: beat register at the array's edge, which cuts the dispatcher's operand
#: select (``PassDispatcher``, ``PvDispatcher``) from the PEs' multipliers,
#: so each block's Fmax holds in the core. The dense array needs none: its
#: operands already come from its feeder's shift registers.
BEAT_REGISTER = 1

#: cycles from an idle ``PassDispatcher`` taking a pass to its first beat:
#: the pass buffer's load, the matcher's job, and the slot register that
#: cuts the matcher's slot (its carry chains) from the operand select. With
#: two pass buffers the next pass's beats follow the last beat of the one
#: before when it was taken at least that long before.
DISPATCH_LATENCY = 3

#: cycles from the small arrays' shared queue (``ArraySet``) taking a pass
#: to its first block leaving for a dispatcher, at the earliest: the pass
#: latch, then the stage register between the walk's block select and the
#: dispatchers' pass buffers
QUEUE_LATENCY = 2


def tile_latency(r: int, c: int) -> int:
    """Cycles from the Kaleido array accepting a ``last`` beat to PE ``(r,
    c)``'s tile valid: the beat register (:data:`BEAT_REGISTER`), the skew
    and the hops (``r + c``), then :data:`PE_LATENCY`. The RTL
    (``KaleidoArray.tile_latency``) and the cycle model both read it."""
    return r + c + BEAT_REGISTER + PE_LATENCY


#: cycles from an entry leaving an accumulation-buffer bank's FIFO to its
#: sum written: the bank's synchronous read, then add and write
RMW_LATENCY = 2


def s_bank(i, j, banks: int):
    """The accumulation buffer's bank of ``S[i, j]``: ``(i + j) mod banks``
    (``banks`` a power of two, so the low bits of ``i + j``). The skew
    spreads a row, a column and the entries of one pass over the banks;
    works on integers and numpy arrays alike. The RTL
    (``hdl/accumulation_buffer.py``) computes the same."""
    return (i + j) % banks


def s_bank_offset(i, j, n_tokens: int, banks: int):
    """``S[i, j]``'s word within its bank (:func:`s_bank`):
    ``i * ceil(N / banks) + j // banks``. Within a row the ``banks``
    consecutive entries of a block of ``j`` share a word offset and lie in
    ``banks`` different banks, so (bank, offset) names every entry once."""
    return i * -(-n_tokens // banks) + j // banks


#: scheduler geometry (paper fig. 16): clusters per window, and passes'
#: worth of units per cluster (a window holds CLUSTERS * PASSES_PER_CLUSTER
#: groups of array rows or columns: 64 strings on the 4x4 array)
CLUSTERS = 4
PASSES_PER_CLUSTER = 4

#: the scheduler's 16-bit Fibonacci LFSR x^16 + x^14 + x^13 + x^11 + 1
#: (maximal length): the feedback bit is the XOR of state bits 15, 13, 12,
#: 10 (0 = LSB), shifted in at the bottom: ``state' = (state << 1 | fb)``
LFSR_WIDTH = 16
LFSR_TAPS = (15, 13, 12, 10)
LFSR_SEED = 0xACE1
#: LFSR steps per pivot draw: the low 6 bits are then all fresh (consecutive
#: states of a shift register only shift their low bits, so one step per
#: draw would make every index about twice the last); the RTL takes the six
#: steps combinationally, one draw per cycle (a leap-forward LFSR)
LFSR_LEAP = 6


def pivot_bits(window: int) -> int:
    """LFSR bits a pivot draw takes as a queue index in a ``window``."""
    return max(1, (int(window) - 1).bit_length())


def lfsr_steps(window: int) -> int:
    """LFSR steps per pivot draw in a ``window``: :data:`LFSR_LEAP`, or one
    per index bit for windows above 64."""
    return max(LFSR_LEAP, pivot_bits(window))


def signed_width(max_abs: int) -> int:
    """Bits of a two's-complement register that holds every value in
    ``[-max_abs, +max_abs]``."""
    return int(max_abs).bit_length() + 1


#: the default design's per-group thresholds (t, x, y)
DEFAULT_GROUP_THRESHOLDS = ((7, 4), (7, 4), (6, 4))


#: small-P pairing (``KaleidoConfig.pv_pairs``): a P V row operand below
#: this fits a multiplier's 5-bit (signed) port as an unsigned 4-bit value
SMALL_P = 16


@dataclasses.dataclass(frozen=True)
class KaleidoConfig:
    """Frozen, validated configuration of a Kaleido build.

    The defaults are the project's design (issue 14, docs/EXPLORATION.md,
    "The default design"): four accumulators and per-group thresholds
    t (7,4), x (7,4), y (6,4), which keep 40 dB on the tuning and held-out
    sets; each 4x4 pass computed on sixteen 1x1 arrays behind a shared
    queue (``sub_arrays``); small-P pairing on ``P V`` (``pv_pairs``).
    :meth:`one_array` is the same reuse on one 4x4 array with ``P V``
    unpaired, :meth:`paper` the paper's design: (5,3) everywhere, three
    accumulators, one array (:data:`DESIGNS`).

    Parameters
    ----------
    F, P : int
        Full- and partial-match thresholds in leading equal bits,
        ``1 <= P <= F <= 9`` (9 = never; ``F = P = 9`` turns reuse off):
        every channel group's unless ``group_thresholds`` is given, and
        ``F`` is always P V's FULL threshold on V.
    group_thresholds : three (F, P) pairs or None
        Per channel group (t, x, y) thresholds of ``Q K^T`` (issue 14);
        ``None`` = ``(F, P)`` in every group (the paper's). The engine
        takes them at run time (per head); this is its reset value. The
        default (the field left unset: the object
        :data:`DEFAULT_GROUP_THRESHOLDS`) goes with the default
        ``(F, P) = (7, 4)`` only: with another ``(F, P)`` it becomes
        ``None``, so ``KaleidoConfig(F=5, P=3)`` and a default
        configuration's ``replace(F=6)`` mean one pair in every group.
        Per-group thresholds given explicitly are always kept.
    split : (int, int, int)
        Channel groups ``(d_t, d_x, d_y)``; ``d = sum(split)``.
    batch : int
        Channels per batch (``BATCH``); batches never cross a group.
    lookahead : int
        Matcher lookahead ``L``.
    accumulators : int
        3 (the paper's PE) or 4 (the measured extension of spec sec. 5).
    array_rows, array_cols : int
        PE array size in pair groups (4x4 by default): the shape of a pass.
    sub_arrays : (int, int)
        The shape ``(r, c)`` of the arrays that compute the passes (issue
        14, docs/SMALL_ARRAYS.md): each ``array_rows x
        array_cols`` pass is split into ``(array_rows / r) (array_cols /
        c)`` blocks of ``r x c`` units, dealt one a cycle from a shared
        queue to whichever of that many ``r x c`` arrays is free first
        (the lowest index on a tie). ``(1, 1)`` is the default; ``None``
        is one array of the pass's shape, the paper's.
    s_banks : int
        Banks of the engine's accumulation buffer (a power of two; each a
        memory with one read and one write port). 4 by default: 16 banks
        save 0.2 % of ``make sim``'s cycles and cost four times the banks'
        logic, in the Kaleido and the dense core alike (docs/ENGINE.md,
        "FIFO depth and bank count").
    s_fifo_depth : int
        Entries of each bank's FIFO (a power of two; the buffer needs at
        least ``array_rows * array_cols``: a cycle's tiles may all go to one
        bank).
    acc_width : int or None
        PE register width; ``None`` derives the smallest width that holds a
        batch (``BATCH`` products of at most ``2**14``). A narrower value is
        rejected.
    pv_pairs : bool
        Small-P pairing on ``P V`` (issue 14, docs/DESIGN.md "Small-P
        pairing"): the P V dispatcher sends two beats whose row operands
        are all below 16 as one, each PE multiplier computing a whole ``x
        V`` with the operands swapped. Same products, fewer beats; the
        cycles then depend on P. ``True`` is the default; ``False`` is the
        paper's one beat a product.
    name : str
        Preset name, used in build-directory and module names.
    """

    F: int = 7
    P: int = 4
    split: tuple = (16, 56, 56)
    batch: int = 16
    lookahead: int = 4
    accumulators: int = 4
    array_rows: int = 4
    array_cols: int = 4
    group_thresholds: tuple | None = DEFAULT_GROUP_THRESHOLDS
    sub_arrays: tuple | None = (1, 1)
    s_banks: int = 4
    s_fifo_depth: int = 16
    #: None on input derives the width; after validation always an int
    acc_width: int = None  # type: ignore[assignment]
    name: str = "hunyuan"
    pv_pairs: bool = True

    def __post_init__(self):
        check_thresholds(self.F, self.P)
        if self.group_thresholds is DEFAULT_GROUP_THRESHOLDS and (self.F, self.P) != (7, 4):
            # another (F, P) and the field's default (not thresholds given): uniform
            object.__setattr__(self, "group_thresholds", None)
        if self.group_thresholds is not None and self.group_thresholds is not DEFAULT_GROUP_THRESHOLDS:
            object.__setattr__(self, "group_thresholds", check_group_thresholds(self.group_thresholds))
        object.__setattr__(self, "split", check_split(self.split))
        for field in ("batch", "lookahead", "array_rows", "array_cols"):
            value = getattr(self, field)
            if not is_int(value):
                raise TypeError(f"{field} must be an integer, not {value!r}")
            if value < 1:
                raise ValueError(f"{field} must be at least 1, not {value!r}")
        if self.batch > 64:
            raise ValueError(f"batch must be at most 64 (reuse strings are at most 64 bits), not {self.batch!r}")
        if self.array_rows > 64 or self.array_cols > 64:
            raise ValueError(f"array size must be at most 64x64, not {self.array_rows!r}x{self.array_cols!r}")
        if self.accumulators not in (3, 4):
            raise ValueError(f"accumulators must be 3 or 4, not {self.accumulators!r}")
        if self.sub_arrays is not None:
            sub = self.sub_arrays
            if not isinstance(sub, (tuple, list)) or len(sub) != 2 or not all(is_int(x) and x >= 1 for x in sub):
                raise ValueError(f"sub_arrays must be two positive integers (rows, columns) or None, not {sub!r}")
            if self.array_rows % sub[0] or self.array_cols % sub[1]:
                raise ValueError(f"sub_arrays {tuple(sub)!r} must divide the {self.array_rows}x{self.array_cols} pass")
            sub = (int(sub[0]), int(sub[1]))
            # one array of the pass's own shape is the default, spelt one way
            object.__setattr__(self, "sub_arrays", None if sub == (self.array_rows, self.array_cols) else sub)
        for field in ("s_banks", "s_fifo_depth"):
            value = getattr(self, field)
            if not is_int(value):
                raise TypeError(f"{field} must be an integer, not {value!r}")
            if value < 1 or value & (value - 1) or value > 1024:
                raise ValueError(f"{field} must be a power of two from 1 to 1024, not {value!r}")
        need = self.min_acc_width
        if self.acc_width is None:
            object.__setattr__(self, "acc_width", need)
        elif not is_int(self.acc_width):
            raise TypeError(f"acc_width must be an integer or None, not {self.acc_width!r}")
        elif self.acc_width < need:
            raise ValueError(
                f"acc_width {self.acc_width!r} is too narrow for batch {self.batch}: "
                f"a batch of {self.batch} products of magnitude up to 2**14 needs {need} bits"
            )
        if not isinstance(self.pv_pairs, bool):
            raise TypeError(f"pv_pairs must be True or False, not {self.pv_pairs!r}")
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise ValueError(f"name must be an identifier-like string, not {self.name!r}")

    # --- derived values -------------------------------------------------
    @property
    def d(self) -> int:
        """Head dimension, ``sum(split)``."""
        return sum(self.split)

    @property
    def thresholds(self) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int]]:
        """``Q K^T``'s ``(F, P)`` per channel group (t, x, y)."""
        if self.group_thresholds is None:
            return ((self.F, self.P),) * 3
        return self.group_thresholds

    @property
    def min_acc_width(self) -> int:
        """Smallest PE register width for one batch."""
        return signed_width(self.batch * PRODUCT_BOUND)

    @property
    def sub_shape(self) -> tuple[int, int]:
        """``(r, c)``: the shape of each array that computes the passes."""
        return (self.array_rows, self.array_cols) if self.sub_arrays is None else self.sub_arrays

    @property
    def n_arrays(self) -> int:
        """How many ``sub_shape`` arrays compute the passes (1: one array of the pass's shape)."""
        r, c = self.sub_shape
        return (self.array_rows // r) * (self.array_cols // c)

    def sub_config(self) -> KaleidoConfig:
        """This configuration with the pass shape of one small array (its dispatcher's and array's)."""
        r, c = self.sub_shape
        return dataclasses.replace(self, array_rows=r, array_cols=c, sub_arrays=None)

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

    def window(self, side: str) -> int:
        """Scheduler window (strings) on ``side`` (``"row"``: Q, or
        ``"column"``: K): :data:`CLUSTERS` clusters of
        :data:`PASSES_PER_CLUSTER` passes' units, 64 on the 4x4 array as in
        the paper."""
        units = self.array_rows if check_side(side) == "row" else self.array_cols
        return CLUSTERS * PASSES_PER_CLUSTER * units

    @property
    def tag(self) -> str:
        """Short identifier for build directories and module names."""
        default_banks = (KaleidoConfig.s_banks, KaleidoConfig.s_fifo_depth)
        banks = "" if (self.s_banks, self.s_fifo_depth) == default_banks else f"_s{self.s_banks}x{self.s_fifo_depth}"
        sub = "" if self.sub_arrays is None else f"_n{self.sub_arrays[0]}x{self.sub_arrays[1]}"
        return (
            f"{self.name}_a{self.array_rows}x{self.array_cols}_b{self.batch}_w{self.acc_width}_r{self.accumulators}"
            + sub
            + banks
            + ("_pp" if self.pv_pairs else "")
        )

    def replace(self, **changes) -> KaleidoConfig:
        return dataclasses.replace(self, **changes)

    @classmethod
    def preset(cls, name: str, design: str = "default", **overrides) -> KaleidoConfig:
        """A named preset (``hunyuan`` or ``wan``) of a named ``design``
        (:data:`DESIGNS`: ``default`` or ``paper``) with optional overrides."""
        if name not in PRESETS:
            raise ValueError(f"unknown preset {name!r}; known presets: {sorted(PRESETS)}")
        if design not in DESIGNS:
            raise ValueError(f"unknown design {design!r}; known designs: {sorted(DESIGNS)}")
        return cls(**{**DESIGNS[design], **PRESETS[name], "name": name, **overrides})

    @classmethod
    def one_array(cls, **overrides) -> KaleidoConfig:
        """The default's reuse on one array of the pass's shape, ``P V``
        unpaired (:data:`DESIGNS` ``one_array``: the project's default
        before issue 14's small arrays) with optional overrides. Every
        block that computes a whole pass (the array, the dispatcher, the
        accumulation buffer of one array) is verified on it."""
        return cls(**{**DESIGNS["one_array"], **overrides})

    @classmethod
    def paper(cls, **overrides) -> KaleidoConfig:
        """The paper's design (:data:`DESIGNS` ``paper``: (5,3) in every
        group, three accumulators) with optional overrides."""
        return cls(**{**DESIGNS["paper"], **overrides})

    @property
    def design(self) -> str | None:
        """The :data:`DESIGNS` name whose reuse settings (thresholds,
        accumulators) this configuration has, or ``None``."""
        for name, fields in DESIGNS.items():
            if has_design_fields(self, fields):
                return name
        return None

    @property
    def hardware_design(self) -> str | None:
        """The :data:`DESIGNS` name whose hardware this configuration
        builds, or ``None``: every design field but the ``Q K^T``
        thresholds, which the core takes with each head on its run-time
        ``thresholds`` port (so a calibrated head runs on the named
        design's build, at its clock and area)."""
        for name, fields in DESIGNS.items():
            if has_design_fields(self, {k: v for k, v in fields.items() if k != "group_thresholds"}):
                return name
        return None


@dataclasses.dataclass(frozen=True)
class SoftmaxFormat:
    """Fixed-point formats of the softmax and P V (issue 12;
    :mod:`kaleido.golden.softmax` is the algorithm).

    Parameters
    ----------
    p_bits : int
        Width of the P operand (unsigned, ``0 .. 2^p_bits - 1``, the row's
        largest probability at ``2^p_bits - 1``). 7 fits the PE's signed
        8-bit row operand.
    lut_bits : int
        Fractional bits of the base-2 exponent: the exponential table has
        ``2^lut_bits`` entries.
    lut_width : int
        Fractional bits of the table's values (``2^(-f)`` for ``0 <= f < 1``).
    exp_frac_bits : int
        Fractional bits of the per-head constant ``scale * log2(e)``.
    constant_bits : int
        Width of that constant.
    recip_bits : int
        The row reciprocal is ``floor(2^recip_bits / z)``.
    out_frac_bits : int
        Fractional bits of O (in units of ``v_scale``).
    """

    p_bits: int = 7
    lut_bits: int = 8
    lut_width: int = 16
    exp_frac_bits: int = 20
    constant_bits: int = 24
    recip_bits: int = 32
    out_frac_bits: int = 8

    def __post_init__(self):
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if not is_int(value) or value < 1:
                raise ValueError(f"{field.name} must be a positive integer, not {value!r}")
        if self.lut_bits >= self.exp_frac_bits:
            raise ValueError(f"lut_bits ({self.lut_bits}) must be below exp_frac_bits ({self.exp_frac_bits})")
        if self.out_frac_bits >= self.recip_bits:
            raise ValueError(f"out_frac_bits ({self.out_frac_bits}) must be below recip_bits ({self.recip_bits})")
        if self.p_bits > 16:
            raise ValueError(f"p_bits must be at most 16, not {self.p_bits!r}")

    @property
    def p_max(self) -> int:
        """The P operand of the row's largest probability."""
        return (1 << self.p_bits) - 1

    @property
    def recip_width(self) -> int:
        """Bits of the reciprocal ``floor(2^recip_bits / z)`` for every row
        sum ``z >= p_max`` (the row's maximum contributes ``p_max``):
        ``recip_bits - p_bits + 1``, or ``recip_bits + 1`` when ``p_bits``
        is 1."""
        return ((1 << self.recip_bits) // self.p_max).bit_length()

    def exp2_table(self) -> tuple[int, ...]:
        """The exponential table ``LUT[k] = round(2^lut_width * 2^(-k /
        2^lut_bits))``, ``k = 0 .. 2^lut_bits - 1`` (``LUT[0] = 2^lut_width``
        needs ``lut_width + 1`` bits): one definition for the golden model
        and the RTL's ROM. Python's ``round`` is round-half-even like
        ``np.round``; no entry but ``k = 0`` is near a tie (the values are
        irrational), and ``tb/test_softmax_rtl.py`` checks the table equals
        ``np.round(np.exp2(...))`` for several formats."""
        size = 1 << self.lut_bits
        return tuple(round(2.0 ** (self.lut_width - k / size)) for k in range(size))


#: most tokens a head may have on the attention core (issue 13, spec sec. 12)
MAX_CORE_TOKENS = 32768


@dataclasses.dataclass(frozen=True)
class CoreConfig:
    """The attention core's tiling and memory (issue 13, docs/CORE.md).

    Parameters
    ----------
    tile : (int, int, int)
        The tile box ``(t, y, x)`` in grid tokens; a query tile and a key
        tile are boxes of this shape aligned at multiples of it (clipped at
        the grid's edge). Each extent is even, so every anchor/follower
        pair of every channel group lies inside one tile and tile-local
        reuse equals the head's (:func:`kaleido.loopnest.tile_boxes`).
    port_bytes : int
        External memory port width, bytes per cycle.
    mem_latency : int
        Cycles from an accepted read request to its data beat (at least
        1: a synchronous memory).
    max_tokens : int
        Largest head the core addresses (at most 32,768).
    s_pass : str
        How the softmax's second pass gets ``S``: ``"recompute"`` (the
        default, what ``KaleidoAttentionCore`` builds) runs ``Q K^T`` again;
        ``"spill"`` writes the first pass's S tiles to external memory
        (``s_bytes`` per score) and reads them back, modelled by the golden
        model's traffic count only (the core and ``core_cycles`` reject
        it). Same values either way.
    pv_buffers : int
        Key tiles the P V stage's P and V buffers hold: 2 (the default)
        fills the next key tile while the current one's passes run; 1 is
        the first core's stage, whose fill waited for the passes
        (docs/CORE.md, "The P V tile stage").
    s_buffers : int
        S tiles the Q K^T tile engine's accumulation buffer holds: 2 (the
        default) reads one tile's S into the softmax while the next tile
        loads and computes into the other; 1 is the first core's engine,
        which loaded its next tile once the S tile was read (docs/CORE.md,
        "The S tile's two sets").
    """

    tile: tuple = (2, 4, 8)
    port_bytes: int = 16
    mem_latency: int = 32
    max_tokens: int = MAX_CORE_TOKENS
    s_pass: str = "recompute"
    pv_buffers: int = 2
    s_buffers: int = 2

    #: bytes of one spilled score (``buffer_width`` bits, 23 at d = 128)
    s_bytes = 3

    def __post_init__(self):
        tile = self.tile
        if (
            not isinstance(tile, (tuple, list))
            or len(tile) != 3
            or not all(is_int(x) and x >= 2 and x % 2 == 0 for x in tile)
        ):
            raise ValueError(f"tile must be three even extents >= 2 (t, y, x), not {tile!r}")
        object.__setattr__(self, "tile", tuple(int(x) for x in tile))
        for field in ("port_bytes", "mem_latency", "max_tokens"):
            value = getattr(self, field)
            if not is_int(value) or value < 1:
                raise ValueError(f"{field} must be a positive integer, not {value!r}")
        if self.max_tokens > MAX_CORE_TOKENS:
            raise ValueError(f"max_tokens must be at most {MAX_CORE_TOKENS}, not {self.max_tokens!r}")
        if self.s_pass not in ("spill", "recompute"):
            raise ValueError(f"s_pass must be 'spill' or 'recompute', not {self.s_pass!r}")
        check_pv_buffers(self.pv_buffers)
        check_s_sets(self.s_buffers, "s_buffers")

    @property
    def tile_tokens(self) -> int:
        """Tokens of a full tile (queries of a query tile, keys of a key tile)."""
        t, y, x = self.tile
        return t * y * x

    def buffers(self, config: KaleidoConfig | None = None, fmt: SoftmaxFormat | None = None) -> dict[str, dict]:
        """Every on-chip buffer: ``words``, ``width`` (bits), ``banks`` and
        ``bits`` in total. Set by the configuration only, never by N: the
        Q tile, two K tiles (double-buffered loads), the V tiles (the
        feeder's and ``pv_buffers`` in the P V stage), the S tiles
        (``s_buffers``), the P
        tiles (``pv_buffers``), the O accumulators and the per-row softmax
        state (row maximum, sum, reciprocal)."""
        config = config or KaleidoConfig()
        fmt = fmt or SoftmaxFormat()
        t, d = self.tile_tokens, config.d
        score = config.buffer_width()
        o_acc = signed_width(self.max_tokens * fmt.p_max * 128)
        row = score + (self.max_tokens * fmt.p_max).bit_length() + fmt.recip_width
        spec = {
            "q_tile": (t, 8 * d, 1),
            "k_tiles": (2 * t, 8 * d, 2),
            "v_tiles": ((1 + self.pv_buffers) * t, 8 * d, 2),
            "s_tile": (self.s_buffers * t * t, score, config.array_rows * config.array_cols),
            "p_tile": (self.pv_buffers * t * t, fmt.p_bits, 1),
            "o_acc": (t * d, o_acc, 1),
            "row_state": (t, row, 1),
        }
        return {
            name: {"words": words, "width": width, "banks": banks, "bits": words * width}
            for name, (words, width, banks) in spec.items()
        }


#: grid axis index by name
AXES = {"t": 0, "y": 1, "x": 2}


@dataclasses.dataclass(frozen=True)
class LinearReuse:
    """The activation-reuse rule of the linear layers: the window axis
    (``"t"``, ``"y"`` or ``"x"``) and eq. 5's thresholds in int8 units
    (``0 <= theta1 < theta2``). The defaults were chosen by measurement
    (docs/LINEAR.md); :mod:`kaleido.golden.linear` is the algorithm and
    ``kaleido.hdl.window_detector`` the detector."""

    axis: str = "t"
    theta1: float = 2.0
    theta2: float = 8.0

    def __post_init__(self):
        if self.axis not in AXES:
            raise ValueError(f"axis must be one of {sorted(AXES)}, not {self.axis!r}")
        t1, t2 = self.theta1, self.theta2
        if not (isinstance(t1, numbers.Real) and isinstance(t2, numbers.Real)) or not 0 <= t1 < t2 <= 128:
            raise ValueError(f"thresholds must satisfy 0 <= theta1 < theta2 <= 128, not {t1!r}, {t2!r}")

    @property
    def limits(self) -> tuple[int, int]:
        """The detector's integer limits ``(full, partial)``: a follower is
        FULL when ``|a - b| <= full`` (``|a - b| / 2 < theta1``), PARTIAL
        when ``|a - b| <= partial``; -1 means never."""
        return math.ceil(2 * self.theta1) - 1, math.ceil(2 * self.theta2) - 1


#: channel splits of the paper's two models (spec sec. 2)
PRESETS = {
    "hunyuan": {"split": (16, 56, 56)},
    "wan": {"split": (44, 42, 42)},
}


#: the named designs (issue 14): ``default``, the project's (four
#: accumulators, per-group thresholds t (7,4) x (7,4) y (6,4), 40 dB on the
#: tuning and held-out sets; each 4x4 pass on sixteen 1x1 arrays behind a
#: shared queue; small-P pairing on P V; docs/EXPLORATION.md), ``one_array``
#: (the same reuse on one 4x4 array, P V unpaired: the default until the
#: small arrays became it), and ``paper``, the paper's ((5,3), three
#: accumulators, one array). Everything else (split, batch, pass shape,
#: lookahead) is shared. ``--design`` on every command line.
DESIGNS: dict[str, dict] = {
    "default": {
        "F": 7, "P": 4, "group_thresholds": DEFAULT_GROUP_THRESHOLDS, "accumulators": 4,
        "sub_arrays": (1, 1), "pv_pairs": True,
    },
    "one_array": {
        "F": 7, "P": 4, "group_thresholds": DEFAULT_GROUP_THRESHOLDS, "accumulators": 4,
        "sub_arrays": None, "pv_pairs": False,
    },
    "paper": {"F": 5, "P": 3, "group_thresholds": None, "accumulators": 3, "sub_arrays": None, "pv_pairs": False},
}  # fmt: skip


def has_design_fields(config: KaleidoConfig, fields: dict) -> bool:
    """Whether ``config`` has every value of ``fields`` (thresholds compared
    per group)."""
    for key, value in fields.items():
        if key == "group_thresholds":
            want = ((fields["F"], fields["P"]),) * 3 if value is None else check_group_thresholds(value)
            if config.thresholds != want:
                return False
        elif getattr(config, key) != value:
            return False
    return True


#: configuration fields a command line may set, and their flags
CLI_FIELDS = {
    "F": "--F",
    "P": "--P",
    "batch": "--batch",
    "lookahead": "--lookahead",
    "accumulators": "--accumulators",
    "array_rows": "--rows",
    "array_cols": "--cols",
}


def add_config_arguments(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup, fields=(), *, preset: bool = True
) -> None:
    """Add ``--preset`` and ``--design`` (unless ``preset=False``) and a
    flag for each of ``fields`` (keys of :data:`CLI_FIELDS`), with the
    defaults of :class:`KaleidoConfig`: every command line reads its
    hardware defaults from here. A flag left unset takes the design's
    value; ``--F``/``--P`` set one pair for every group."""
    defaults = KaleidoConfig()
    if preset:
        parser.add_argument(
            "--preset",
            default=defaults.name,
            choices=sorted(PRESETS),
            help=f"channel split preset (default {defaults.name})",
        )
        parser.add_argument(
            "--design",
            default="default",
            choices=sorted(DESIGNS),
            help="design: default (4 accumulators, per-group thresholds t(7,4) x(7,4) y(6,4), sixteen 1x1 "
            "arrays, small-P pairing on P V), one_array (the same reuse on one 4x4 array, P V unpaired) "
            "or paper ((5,3), 3 accumulators, one array); default default",
        )
    for field in fields:
        value = getattr(defaults, field)
        parser.add_argument(
            CLI_FIELDS[field], dest=field, type=int, default=None, help=f"default: the design's ({value} in default)"
        )


def config_from_args(args: argparse.Namespace, **overrides) -> KaleidoConfig:
    """The :class:`KaleidoConfig` of parsed arguments (:func:`add_config_arguments`):
    the preset of the design, then every flag that was given (``--F`` or
    ``--P`` replace per-group thresholds by one pair)."""
    values = {f: getattr(args, f) for f in CLI_FIELDS if getattr(args, f, None) is not None}
    if "F" in values or "P" in values:
        values["group_thresholds"] = None  # one pair for every group
    return KaleidoConfig.preset(args.preset, getattr(args, "design", "default"), **{**values, **overrides})
