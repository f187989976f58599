"""pytest plugin of a coverage-map run: each test's lines are recorded under its node id, and each test's duration
is written to ``$VI_COV_DURATIONS/<pid>.json`` (the mutation runner orders a mutant's tests fastest first)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import coverage
import pytest

_DURATIONS: dict[str, float] = {}


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    cov = coverage.Coverage.current()
    if cov is not None:
        cov.switch_context(item.nodeid)
    t0 = time.monotonic()
    try:
        return (yield)
    finally:
        _DURATIONS[item.nodeid] = time.monotonic() - t0
        if cov is not None:
            cov.switch_context("")


def pytest_sessionfinish(session):
    out = os.environ.get("VI_COV_DURATIONS")
    if out and _DURATIONS:
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / f"{os.getpid()}.json").write_text(json.dumps(_DURATIONS))
