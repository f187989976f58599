"""Smoke test of benchmarks/bench_ros.py: the controller latency and simulator real-time-factor measurements run
end to end over DDS (nodes as separate processes) at a small size; no timing asserts."""

import numpy as np
import pytest
from benchmark_scripts import load_benchmark

pytest.importorskip("rclpy")
pytestmark = pytest.mark.ros


def test_ros_benchmark_smoke():
    bench = load_benchmark("bench_ros")
    table, lat, rtf = bench.run(seconds=0.5, rates=(100.0,), models=("erd:panda",), warmup=0.2, priorities=(0, 20))
    r, r_fifo = lat
    assert r_fifo["priority"] == 20 and r_fifo["measured"] == 50 and 0 < r_fifo["matched"] <= r_fifo["sent"]
    assert r["sent"] == 70 and 0 < r["matched"] <= r["sent"] and r["measured"] == 50
    # every command the controller sent answers one of our states with the hold law's exact value
    assert r["unmatched"] <= r["received"] - r["matched"] + 5
    assert np.isfinite(r["p50"]) and r["p99"] >= r["p50"] > 0 and r["compute"] > 0
    (s,) = rtf
    assert s["model"] == "erd:panda" and s["nq"] == 7 and s["node"] > 0 and s["core"] > 0
    assert "| 100 Hz | normal |" in table and "| 100 Hz | SCHED_FIFO 20 |" in table
    assert "| erd:panda | 7 |" in table and "load average" in table
