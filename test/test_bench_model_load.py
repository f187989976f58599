"""Smoke test of benchmarks/bench_model_load.py (small sizes, no timing asserts)."""

import importlib.util
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_model_load.py"


def test_model_load_benchmark_smoke():
    spec = importlib.util.spec_from_file_location("bench_model_load", BENCH)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    rows = bench.bench([20, 40], rounds=1, dense_max=20)
    assert [r["links"] for r in rows] == [20, 40]
    assert rows[0]["dense"] is not None and rows[1]["dense"] is None and rows[0]["ratio"] > 0
    assert all(r["load"][0] >= r["load"][1] >= 0 for r in rows)
    assert "| 40 |" in bench.table(rows)
