"""Sweep YAML schemas: every bad key named; sampling reproducible per (seed, sample) and distributed as said."""

import numpy as np
import pytest
from scipy.stats import kstest

from vi_control.sweep.config import (
    SweepConfigError,
    load_library_goals,
    load_robustness_config,
)
from vi_control.sweep.robustness import wilson_interval

FULL = """
samples: 16
seed: 7
perturbations:
  mass_scale: [0.8, 1.2]
  damping: {uniform: [0.0, 0.1]}
  actuator_gain: {normal: [1.0, 0.02]}
  sensor_noise: 0.001
  q0_offset: [-0.05, 0.05]
  qdot0_offset: {loguniform: [0.01, 0.1]}
success: {tolerance: 0.02, hold_time: 1.5, clamp: false}
plant: vm
"""


def test_full_config_parses():
    cfg = load_robustness_config(FULL)
    assert (cfg.samples, cfg.seed, cfg.tolerance, cfg.hold_time, cfg.clamp, cfg.plant) == (
        16,
        7,
        0.02,
        1.5,
        False,
        "vm",
    )
    assert cfg.distribution("sensor_noise").kind == "fixed" and not cfg.distribution("sensor_noise").varies
    assert cfg.varied(2) == [
        "mass_scale",
        "damping",
        "actuator_gain",
        "q0_offset[0]",
        "q0_offset[1]",
        "qdot0_offset[0]",
        "qdot0_offset[1]",
    ]
    assert cfg.model_varies and not cfg.compile_plants()
    assert load_robustness_config(FULL, samples=3, seed=None).samples == 3  # CLI overrides win


@pytest.mark.parametrize(
    "text, key",
    [
        ("samples: 0", "samples"),
        ("seed: -1", "seed"),
        ("sample: 3", "robustness config: unknown key(s) ['sample']"),
        ("perturbations: {mass: [1, 2]}", "perturbations: unknown key(s) ['mass']"),
        ("perturbations: {mass_scale: [0.0, 1.2]}", "perturbations.mass_scale: must stay positive"),
        ("perturbations: {mass_scale: {normal: [1.0, 0.2]}}", "perturbations.mass_scale: must stay positive"),
        ("perturbations: {damping: [-0.1, 0.1]}", "perturbations.damping: must stay non-negative"),
        ("perturbations: {actuator_gain: [1.2, 0.8]}", "perturbations.actuator_gain.uniform: the lower bound"),
        ("perturbations: {actuator_gain: [1.0, 2.0, 3.0]}", "perturbations.actuator_gain.uniform: expected two"),
        ("perturbations: {sensor_noise: {gauss: [0, 1]}}", "perturbations.sensor_noise: expected one of"),
        ("perturbations: {q0_offset: {normal: [0, -1]}}", "perturbations.q0_offset.normal: the standard deviation"),
        ("perturbations: {qdot0_offset: {loguniform: [0, 1]}}", "perturbations.qdot0_offset.loguniform: bounds"),
        ("perturbations: {q0_offset: [a, 1]}", "perturbations.q0_offset.uniform[0]"),
        ("perturbations: {mass_scale: .inf}", "perturbations.mass_scale: must be finite"),
        ("success: {tolerance: 0}", "success.tolerance"),
        ("success: {hold_time: -1}", "success.hold_time"),
        ("success: {clamp: 1}", "success.clamp"),
        ("success: {tol: 1}", "success: unknown key(s) ['tol']"),
        ("plant: gpu", "plant: expected one of"),
        ("perturbations: [1, 2]", "perturbations: expected a mapping"),
    ],
)
def test_bad_robustness_config_names_the_key(text, key):
    with pytest.raises(SweepConfigError) as e:
        load_robustness_config(text)
    assert key in str(e.value)


def test_missing_file_and_bad_yaml(tmp_path):
    with pytest.raises(SweepConfigError, match="not found"):
        load_robustness_config(str(tmp_path / "nope.yaml"))
    with pytest.raises(SweepConfigError, match="not valid YAML"):
        load_robustness_config("samples: [1\nseed: 2")


def test_samples_depend_only_on_seed_and_index():
    cfg = load_robustness_config(FULL)
    a = [cfg.sample(i, 3) for i in range(16)]
    assert [cfg.sample(i, 3) for i in reversed(range(16))][::-1] == a  # any order, same draws
    assert cfg.sample(5, 3) != cfg.sample(6, 3)
    assert load_robustness_config(FULL, seed=8).sample(5, 3) != cfg.sample(5, 3)
    for s in a:
        assert s["sensor_noise"] == 0.001 and len(s["q0_offset"]) == 3
        assert 0.8 <= s["mass_scale"] <= 1.2 and 0.01 <= min(s["qdot0_offset"]) <= max(s["qdot0_offset"]) <= 0.1


def test_draws_follow_the_named_distributions():
    """Kolmogorov–Smirnov against scipy's distributions (fixed seed, so the verdict is deterministic)."""
    cfg = load_robustness_config(
        {
            "samples": 1,
            "perturbations": {
                "mass_scale": [0.8, 1.2],
                "actuator_gain": {"normal": [1.0, 0.05]},
                "qdot0_offset": {"loguniform": [0.01, 1.0]},
            },
        }
    )
    draws = [cfg.sample(i, 1) for i in range(2000)]
    m = np.array([d["mass_scale"] for d in draws])
    g = np.array([d["actuator_gain"] for d in draws])
    lv = np.log(np.array([d["qdot0_offset"][0] for d in draws]))
    assert kstest(m, "uniform", args=(0.8, 0.4)).pvalue > 1e-3
    assert kstest(g, "norm", args=(1.0, 0.05)).pvalue > 1e-3
    assert kstest(lv, "uniform", args=(np.log(0.01), np.log(100.0))).pvalue > 1e-3
    assert kstest(m, "uniform", args=(0.9, 0.4)).pvalue < 1e-6  # the test can tell a wrong range


def test_fixed_model_parameters_compile_the_one_plant():
    cfg = load_robustness_config({"perturbations": {"mass_scale": 1.1, "sensor_noise": [0, 0.01]}})
    assert not cfg.model_varies and cfg.compile_plants()
    assert load_robustness_config({"plant": "compiled", "perturbations": {"damping": [0, 1]}}).compile_plants()


def test_library_goals_list_and_grid():
    names = ["a", "b"]
    goals = load_library_goals({"goals": [["pi", 0], [1, "-pi/2"]]}, names, np.zeros(2))
    assert goals == [[np.pi, 0.0], [1.0, -np.pi / 2]]
    grid = load_library_goals("grid: {b: {from: 0, to: 1, num: 3}, a: [5, 6]}", names, np.array([9.0, 9.0]))
    assert grid == [[5.0, 0.0], [6.0, 0.0], [5.0, 0.5], [6.0, 0.5], [5.0, 1.0], [6.0, 1.0]]
    assert load_library_goals({"grid": {"a": 2}}, names, np.array([0.0, 3.0])) == [[2.0, 3.0]]


@pytest.mark.parametrize(
    "cfg, key",
    [
        ({"goals": [[1, 2, 3]]}, "goals[0]: expected 2 entries"),
        ({"goals": [[1, "x"]]}, "goals[0][1]"),
        ({"goals": []}, "goals: expected a non-empty list"),
        ({"grid": {"c": [1]}}, "grid.c: no joint of that name"),
        ({"grid": {"a": {"from": 0, "to": 1}}}, "grid.a: a range needs from, to and num"),
        ({"grid": {"a": {"from": 0, "to": 1, "num": 0}}}, "grid.a.num"),
        ({"goals": [[1, 2]], "grid": {"a": [1]}}, "give exactly one of goals"),
        ({"goal": [[1, 2]]}, "unknown key(s) ['goal']"),
    ],
)
def test_bad_library_config_names_the_key(cfg, key):
    with pytest.raises(SweepConfigError) as e:
        load_library_goals(cfg, ["a", "b"], np.zeros(2))
    assert key in str(e.value)


def test_wilson_interval_matches_the_textbook_values():
    # Wilson (1927) 95 % interval; e.g. 0/10 -> [0, 0.2775], 8/10 -> [0.4902, 0.9433] (Newcombe 1998, table I).
    assert wilson_interval(0, 10) == pytest.approx((0.0, 0.2775), abs=1e-4)
    assert wilson_interval(8, 10) == pytest.approx((0.4902, 0.9433), abs=1e-4)
    assert wilson_interval(10, 10)[1] == 1.0


def test_vi_sweep_console_script_is_installed():
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    exe = shutil.which("vi_sweep", path=str(Path(sys.executable).parent))
    assert exe is not None, "vi_sweep is not installed next to this interpreter (setup.py console_scripts)"
    out = subprocess.run([exe, "robustness", "--help"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "--address" in out.stdout and "--max-retries" in out.stdout


def test_success_tolerance_and_library_sizes_at_their_bounds():
    """success.tolerance in (0, π]: π accepted, just above refused (1e300 made a dead actuator a 100 % success);
    a library of MAX_LIBRARY_GOALS goals accepted, one more refused — as a list, as a range's num, and as a grid whose
    axes multiply out beyond it (1e9 points were a MemoryError traceback)."""
    from vi_control.sweep.config import MAX_LIBRARY_GOALS

    assert load_robustness_config({"success": {"tolerance": float(np.pi)}}).tolerance == float(np.pi)
    with pytest.raises(SweepConfigError, match=r"success.tolerance: must be in \(0, π\]"):
        load_robustness_config({"success": {"tolerance": float(np.nextafter(np.pi, 4.0))}})
    n = MAX_LIBRARY_GOALS
    assert len(load_library_goals({"goals": [[0.0]] * n}, ["theta"], np.zeros(1))) == n
    with pytest.raises(SweepConfigError, match="goals: at most"):
        load_library_goals({"goals": [[0.0]] * (n + 1)}, ["theta"], np.zeros(1))
    with pytest.raises(SweepConfigError, match=r"grid.theta.num: must be an integer in \[1, 100000\]"):
        load_library_goals({"grid": {"theta": {"from": 0, "to": 1, "num": n + 1}}}, ["theta"], np.zeros(1))
    with pytest.raises(SweepConfigError, match=f"grid: {(n // 4 + 1) * 4} goals"):
        load_library_goals(
            {"grid": {"a": {"from": 0, "to": 1, "num": n // 4 + 1}, "b": [0.0, 1.0, 2.0, 3.0]}}, ["a", "b"], np.zeros(2)
        )


def test_vi_sweep_refuses_an_out_that_is_a_file(tmp_path, capsys):
    from vi_control.sweep.cli import main

    f = tmp_path / "passwd"
    f.write_text("root:x:0:0")
    assert main(["robustness", "--task", "task_pendulum_swingup", "--out", str(f), "--serial"]) == 2
    assert "exists and is not a directory" in capsys.readouterr().err and f.read_text() == "root:x:0:0"
