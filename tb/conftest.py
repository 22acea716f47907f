import os

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

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
