"""Smoke test of benchmarks/bench_soak.py (small sizes, no timing asserts): structure, bounded energy, flat memory."""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_soak.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_soak", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("bench_energy", None)


def test_soak_benchmark_smoke(bench, tmp_path, monkeypatch):
    result = bench.soak(steps=3000, dt=5e-3, n_links=4, sample=10, windows=3)
    assert result["steps_done"] == 3000 and result["failure"] is None
    s = result["series"]
    assert s["t"].shape == s["error"].shape == (301,) and s["t"][-1] == pytest.approx(15.0)
    # E0 of the chain released at rest (potential only): rods at absolute angles φ_i = q_1 + … + q_i
    phi = np.cumsum(bench.initial_configuration(4))
    z = -(np.concatenate([[0.0], np.cumsum(np.cos(phi))[:-1]]) + 0.5 * np.cos(phi))
    assert result["E0"] == pytest.approx(9.81 * z.sum(), rel=1e-9)
    assert result["max_abs_error"] < 1e-2 * abs(result["E0"]) and np.isfinite(result["drift"])
    assert len(result["max_error_per_window"]) == 3 and max(result["max_error_per_window"]) == result["max_abs_error"]
    assert result["rss_end_mb"] > 0 and result["rss_max_mb"] >= result["rss_start_mb"]
    assert "max |E − E0| per window" in bench.report(result)
    monkeypatch.setattr(bench, "RESULTS", tmp_path)
    bench.save(result, "soak_smoke")
    assert (tmp_path / "soak_smoke.json").is_file() and (tmp_path / "soak_smoke.png").is_file()


def test_soak_reports_a_refused_step_instead_of_skipping_it(bench):
    """At Δt = 0.5 s the bent chain's first step cannot be vouched for: the run ends there, reported."""
    result = bench.soak(steps=50, dt=0.5, n_links=4, sample=1, windows=1)
    assert result["steps_done"] < 50 and result["failure"].startswith(f"step {result['steps_done']}:")
