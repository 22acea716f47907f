import json
import math
import os
import pathlib

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

from kaleido.tb.mutant import ORDER_ENV, RECORD_ENV

settings.register_profile("ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


@pytest.fixture
def seed(request):
    """A random seed, settable with KALEIDO_SEED; printed on failure by the
    report hook below."""
    value = int(os.environ.get("KALEIDO_SEED", np.random.SeedSequence().entropy % (1 << 32)))
    request.node.kaleido_seed = value
    return value


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    seed_value = getattr(item, "kaleido_seed", None)
    if report.failed and seed_value is not None:
        report.sections.append(("seed", f"reproduce with KALEIDO_SEED={seed_value}"))


#: the markers of the long tests (HDL simulations, proofs, tool flows)
LONG_MARKS = ("rtl", "formal", "toolchain")


_durations: dict[str, float] = {}


def pytest_collection_modifyitems(config, items):
    """The long tests first (stable otherwise): with ``pytest -n`` the two
    workers start on them and finish on the many short ones, instead of one
    worker running a two-minute simulation alone at the end. With
    :data:`ORDER_ENV` set, the shortest first instead (a test not in the
    file last)."""
    order = os.environ.get(ORDER_ENV)
    if order:
        durations = json.loads(pathlib.Path(order).read_text())
        items.sort(key=lambda item: durations.get(item.nodeid, math.inf))
        return
    items.sort(key=lambda item: not any(item.get_closest_marker(m) for m in LONG_MARKS))


def pytest_runtest_logreport(report):
    if os.environ.get(RECORD_ENV):
        _durations[report.nodeid] = _durations.get(report.nodeid, 0.0) + report.duration


def pytest_sessionfinish(session):
    path = os.environ.get(RECORD_ENV)
    if path and not hasattr(session.config, "workerinput"):  # the controller has every worker's reports
        pathlib.Path(path).write_text(json.dumps(dict(sorted(_durations.items())), indent=0) + "\n")
