"""Every on-chip memory of an elaborated design (issue 13's buffer rule:
Amaranth ``Memory``s of at most two ports, sized by the configuration):
its path, depth, width, bits and port counts."""

from __future__ import annotations

from amaranth.hdl import Fragment, Shape
from amaranth.hdl._mem import MemoryInstance

__all__ = ["memories"]


def memories(design) -> list[dict]:
    """``[{"path", "depth", "width", "bits", "read_ports", "write_ports"}]``
    of every memory in ``design`` (a component, elaborated here)."""
    out: list[dict] = []

    def walk(frag, path: str) -> None:
        if isinstance(frag, MemoryInstance):
            depth, width = frag._data.depth, Shape.cast(frag._data.shape).width
            out.append(
                {
                    "path": path,
                    "depth": depth,
                    "width": width,
                    "bits": depth * width,
                    "read_ports": len(frag._read_ports),
                    "write_ports": len(frag._write_ports),
                }
            )
            return
        for sub, name, *_ in frag.subfragments:
            walk(sub, f"{path}.{name}")

    walk(Fragment.get(design, None), "core")
    return out
