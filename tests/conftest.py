"""Shared fixtures: every behavioural test runs against the fast path and the reference."""

from __future__ import annotations

import contextlib
import gc
import os
import warnings

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


@pytest.fixture
def recorded_warnings():
    """A context manager that records every warning raised inside it, and only those.

    Garbage left by earlier tests (a subprocess's pipe nobody closed) is
    collected before it, and the collector stays off inside it, so a
    finalizer's ``ResourceWarning`` cannot land in the record of the call
    under test.
    """

    @contextlib.contextmanager
    def record():
        gc.collect()
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                yield caught
        finally:
            if was_enabled:
                gc.enable()

    return record
