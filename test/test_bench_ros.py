"""Smoke test of benchmarks/bench_ros.py as committed (small sizes; no timing asserts): it runs end to end and
its latency pairing identifies the states the controller answered."""

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("rclpy")
BENCH = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_ros.py"
pytestmark = pytest.mark.ros


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_ros", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_ros_benchmark_smoke(bench, tmp_path, capsys):
    r = bench.controller_latency(100.0, 1.0, str(tmp_path))
    assert r["sent"] == 100 and r["unmatched"] == 0  # every command names a state that was sent
    assert 0 < r["answered"] <= r["sent"] and r["p50"] > 0 and r["compute"] > 0
    bench.main(["--seconds", "0.5", "--rates", "100", "--models", "arm7"])
    out = capsys.readouterr().out
    assert "| 100 Hz | 50 |" in out and "| arm7 | 7 |" in out and "load average" in out
