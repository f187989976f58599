"""Smoke test of benchmarks/bench_collocation.py with tiny sizes (no Drake, no timing asserts)."""

import importlib.util
import json
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_collocation.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_collocation", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_collocation_benchmark_smoke(bench, tmp_path):
    res = bench.main(["--quick", "--rounds", "1", "--no-external", "--out", str(tmp_path)])
    for key in ("pendulum", "cartpole", "biped"):
        (row,) = res[key]
        for m in ("lg", "lg2"):
            assert row[m]["iterations"] > 0 and row[m]["t_med"] > 0
    assert res["pendulum"][0]["lg2"]["success"] and res["pendulum"][0]["lg2"]["E2"] > 0
    assert {r["problem"] for r in res["ddp"]} == {"pendulum", "cartpole"}
    assert len(res["replay"]["deviation"]) == 11
    text = (tmp_path / "collocation.md").read_text()
    assert "Pendulum minimum-time swing-up" in text and "| N | E² LG |" in text
    assert json.loads((tmp_path / "collocation.json").read_text())["rounds"] == 1
    for png in ("collocation.png", "collocation_error_time.png", "collocation_gait.png"):
        assert (tmp_path / png).stat().st_size > 10_000
