"""Shared by the hardware components."""

from ..config import KaleidoConfig

__all__ = ["as_config", "popcount", "count_below"]


def as_config(config) -> KaleidoConfig:
    """The component's configuration: ``None`` means the default; anything
    but a :class:`KaleidoConfig` is a TypeError naming the value."""
    if config is None:
        return KaleidoConfig()
    if not isinstance(config, KaleidoConfig):
        raise TypeError(f"config must be a KaleidoConfig, not {config!r}")
    return config


def popcount(bits):
    """The number of ones in ``bits`` (a Value or a list of 1-bit values)
    as a balanced adder tree: ``log2(n)`` adder levels, where ``sum()``
    would chain ``n`` adders in series (issue 20)."""
    from amaranth import Value

    level = [Value.cast(b) for b in (bits if isinstance(bits, (list, tuple)) else list(Value.cast(bits)))]
    if not level:
        return Value.cast(0)
    while len(level) > 1:
        pairs = [level[i] + level[i + 1] for i in range(0, len(level) - 1, 2)]
        level = pairs + ([level[-1]] if len(level) % 2 else [])
    return level[0]


def count_below(m, name: str, bits, limit: int):
    """1 when ``bits`` holds fewer than ``limit`` ones. Counts saturate at
    ``limit`` and are combined pairwise through constant tables (groups of
    four bits, then pairs of saturated counts), so Yosys maps them to LUT
    levels rather than to small carry chains in series (issue 20)."""
    from amaranth import Cat, Const, Value

    from .encoding import decoder

    bits = Value.cast(bits)
    width = max(1, limit.bit_length())
    if limit <= 0:
        return Const(0, 1)
    counts = []
    for g in range(0, len(bits), 4):
        chunk = bits[g : g + 4]
        table = [min(bin(i).count("1"), limit) for i in range(1 << len(chunk))]
        counts.append(decoder(m, f"{name}_g{g // 4}", chunk, table, width))
    level = 0
    while len(counts) > 1:
        table = [min((i & ((1 << width) - 1)) + (i >> width), limit) for i in range(1 << (2 * width))]
        nxt = [
            decoder(m, f"{name}_l{level}_{i // 2}", Cat(counts[i], counts[i + 1]), table, width)
            for i in range(0, len(counts) - 1, 2)
        ]
        counts = nxt + ([counts[-1]] if len(counts) % 2 else [])
        level += 1
    return counts[0] < limit
