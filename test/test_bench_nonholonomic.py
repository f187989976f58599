"""Smoke test of benchmarks/bench_nonholonomic.py (small sizes, no timing asserts, no SymPy install)."""

import numpy as np
import pytest
from benchmark_scripts import load_benchmark


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("bench_nonholonomic")


def test_nonholonomic_benchmark_smoke(bench, tmp_path):
    result = bench.run(rounds=1, energy_steps=500, sympy=False, out=tmp_path)
    assert [r["what"].split(",")[1].split(":")[0].strip() for r in result["speed"]] == ["sleigh", "diffdrive"]
    assert all(r["us"] > 0 and r["driver_us"] > 0 and r["base_us"] > 0 for r in result["speed"])
    errors = {r["what"]: r["error"] for r in result["snake"]}
    e_rk2 = errors["snakeboard, 128 steps (T = 10 s), rk2"]
    for k in ("gni", "rdp exp", "rdp cay"):
        assert errors[f"snakeboard, 128 steps (T = 10 s), {k}"] < e_rk2 / 10
    assert result["energy"]["energy_rel"] < 1e-13 and result["energy"]["constraint"] < 1e-13
    assert "| GNI step, sleigh" in result["table"] and "snakeboard, 512 steps, gni" in result["table"]
    for f in result["files"]:
        assert f.stat().st_size > 10_000
    assert not result["side_by_side"]


def test_sympy_model_matches_the_reference(bench):
    """The SymPy KanesMethod sleigh is the same system: its rhs agrees with the Lagrange–d'Alembert one."""
    pytest.importorskip("sympy")
    rhs, energy = bench.sympy_sleigh_rhs()
    z = np.array([0.1, 0.2, 0.3, -1.0, 2.0, 1.0])  # (x, y, θ, u1, ω, u2 = aω)
    dz = rhs(0.0, z)
    c, s = np.cos(0.3), np.sin(0.3)
    assert dz[:3] == pytest.approx([c * -1.0 - s * 1.0, s * -1.0 + c * 1.0, 2.0])
    assert energy(z) == pytest.approx(0.5 * (1.0 + 1.0) + 0.5 * 0.2 * 4.0)
