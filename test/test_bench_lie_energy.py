"""Smoke test of benchmarks/bench_lie_energy.py: its rows, exact momentum and group for the VI, quaternion drift."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_lie_energy.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_lie_energy", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_lie_energy_benchmark_smoke(bench, tmp_path):
    res = bench.run_benchmark(steps=300, dt=0.5)
    vi, rk, rkn = res["rows"]
    assert [r["name"] for r in res["rows"]] == ["Lie-group VI (Cayley, SO(3))", "RK4 on quaternions",
                                                "RK4 on quaternions, renormalized each step"]
    for r in res["rows"]:
        assert r["energy"].shape == r["t"].shape == (301,) and r["energy"][0] == 0.0 and r["us_per_step"] > 0
    assert vi["momentum"] <= 1e-13 and vi["off_group"] <= 1e-13  # Noether and the group, to round-off
    assert rk["off_group"] > 1e-6 and rkn["off_group"] <= 1e-15  # |q| drifts unless renormalized
    assert rk["momentum"] > 1e3 * vi["momentum"]
    assert "| Lie-group VI" in bench._table(res)
    bench._plot(res, tmp_path / "lie_energy.png")
    assert (tmp_path / "lie_energy.png").stat().st_size > 1000
    assert np.isfinite(vi["drift"])
