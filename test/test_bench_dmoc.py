"""Smoke test of benchmarks/bench_dmoc.py: one maneuver, one round; its rows agree where they must."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_dmoc.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_dmoc", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_dmoc_benchmark_smoke(bench, tmp_path):
    res = bench.run_benchmark(rounds=1, n_maneuvers=1, coast_steps=50)
    name = res["maneuvers"][0]
    rows = {m: res["rows"][name, m] for m in ("dmoc-split", "dmoc-hold", "ipopt", "rk4")}
    assert all(r["converged"] for r in rows.values())
    assert rows["dmoc-split"]["iterations"] <= 10
    assert abs(rows["ipopt"]["cost"] - rows["dmoc-split"]["cost"]) <= 1e-8  # the identical problem
    assert abs(rows["rk4"]["cost"] - rows["dmoc-hold"]["cost"]) <= 0.05 * rows["dmoc-hold"]["cost"]  # same task
    assert rows["dmoc-hold"]["off_group"] <= 1e-13 and 1e-8 < rows["rk4"]["off_group"] < 1e-2
    assert 0 < rows["rk4"]["replay"] < 0.1 and 0 < rows["dmoc-hold"]["replay"] < 0.1
    c = res["coast"]
    assert c["vi"]["rel"].shape == (51,) and c["vi"]["quat"] <= 1e-13 and c["rk4"]["quat"] > 0
    text = bench.table(res)
    assert name in text and "RK4 on quaternions" in text
    l1 = bench.run_l1()
    assert l1["bang_fraction"] >= 0.95
    bench.plot(res, l1, tmp_path)
    for png in ("dmoc.png", "l1_so3.png", "dmoc_uuv.png"):
        assert (tmp_path / png).stat().st_size > 1000
    assert np.all(np.isfinite(c["rk4"]["rel"]))
