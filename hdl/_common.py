"""Shared by the hardware components."""

from ..config import KaleidoConfig

__all__ = ["as_config"]


def as_config(config) -> KaleidoConfig:
    """The component's configuration: ``None`` means the default; anything
    but a :class:`KaleidoConfig` is a TypeError naming the value."""
    if config is None:
        return KaleidoConfig()
    if not isinstance(config, KaleidoConfig):
        raise TypeError(f"config must be a KaleidoConfig, not {config!r}")
    return config
