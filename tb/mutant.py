"""A seeded bug of ``make mutate`` (:mod:`kaleido.tb.mutate`, issue 19):
one exact text replacement in one file, and the file group it is scored
in."""

from __future__ import annotations

import dataclasses

#: a JSON file of test durations (``{nodeid: seconds}``): tb/conftest.py runs
#: the tests shortest first (``make mutate``: a seeded bug meets its quickest test first)
ORDER_ENV = "KALEIDO_TEST_ORDER"
#: a JSON file tb/conftest.py writes each test's duration into (setup, call, teardown)
RECORD_ENV = "KALEIDO_RECORD_DURATIONS"

#: file groups, the first prefix that matches a mutant's path
GROUPS = (
    ("hdl/", "hdl"),
    ("golden/", "golden"),
    ("kaleido/energy.py", "energy/area/efficiency"),
    ("kaleido/area.py", "energy/area/efficiency"),
    ("kaleido/efficiency.py", "energy/area/efficiency"),
    ("kaleido/sensitivity.py", "energy/area/efficiency"),
    ("kaleido/headroom.py", "energy/area/efficiency"),
    ("synth/", "energy/area/efficiency"),
    ("kaleido/explore/", "exploration"),
    ("kaleido/calibrate.py", "exploration"),
    ("kaleido/", "model"),
)


def group_of(path: str) -> str:
    """The file group of a mutated file (:data:`GROUPS`)."""
    return next((g for prefix, g in GROUPS if path.startswith(prefix)), "other")


@dataclasses.dataclass(frozen=True)
class Mutant:
    """Replace ``old`` by ``new`` in ``path`` (relative to the root).
    ``tests``: pytest paths or node ids of the fast suite aimed at it, run
    first; ``proofs``: :data:`kaleido.tb.formal.PROOFS` names, not slow, run
    by ``make test``, tried when the fast suite spares it."""

    name: str
    path: str
    old: str
    new: str
    area: str
    equivalent: str | None = None
    tests: tuple[str, ...] = ()
    proofs: tuple[str, ...] = ()

    @property
    def group(self) -> str:
        return group_of(self.path)

    @property
    def suite(self) -> str:
        return "fast+formal" if self.proofs else "fast"
