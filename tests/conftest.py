"""Shared fixtures: every behavioural test runs against the fast path and the reference."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

import toolfilter_fast
from toolfilter_fast import reference

settings.register_profile("dev", max_examples=200, deadline=None)
settings.register_profile(
    "ci", max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow],
)
# A long fuzzing run: HYPOTHESIS_PROFILE=long TOOLFILTER_EXAMPLES=20000 pytest ...
settings.register_profile(
    "long", max_examples=int(os.environ.get("TOOLFILTER_EXAMPLES", "20000")), deadline=None,
    suppress_health_check=[HealthCheck.too_slow], database=None,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


@pytest.fixture(params=["fast", "reference"])
def impl(request):
    """The module under test: ``toolfilter_fast`` or ``toolfilter_fast.reference``."""
    return toolfilter_fast if request.param == "fast" else reference
