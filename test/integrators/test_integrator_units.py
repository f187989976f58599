"""The integrators do not depend on the unit of mass.

Scaling every mass and inertia by s (gravity, buoyancy and drag with them) leaves the equations of motion unchanged:
the DEL equations (Johnson2015, eq. 10) are homogeneous in the mass, so q_{k+1} is the same and p_{k+1} is s times the
unscaled one. The root solves stop on a momentum residual, measured against p₁ + |p_k|∞ with p₁ the model's momentum
at unit velocity capped at 1 (``NewtonSettings.for_model``): below the cap the stopping decisions are the same at
every s, and the runs agree to round-off. With p₁ = 1 — an absolute tolerance in kg·m²/s, the rule of before —
a model whose links weigh milligrams stopped at a relative error ~1e-6 per step (double pendulum, 300 steps:
1.9e-7 rad off the unscaled run; the linear-time VI 4.7e-5 rad). Each backend is checked: the compiled and numpy
Newton of the midpoint VI (exact and chord), the linear-time VI (compiled DRNEA and numpy), the DDP kernel's compiled
rollout, and the Lie-group VI of a rigid body.
"""

import dataclasses

import numpy as np
import pytest
from linear_time_oracle import linear_time

from vi_control.integrators.base import NewtonSettings
from vi_control.integrators.lie_group import LieGroupVI
from vi_control.integrators.linear_time import LinearTimeVI
from vi_control.integrators.midpoint import MidpointVI
from vi_control.model import load_robot
from vi_control.model.generate import planar_chain_urdf
from vi_control.model.mass_structure import unit_momentum
from vi_control.model.rigid_body import load_rigid_body
from vi_control.planning.compiled import compiled_stages

DT, STEPS = 0.01, 40
SCALES = (2.0**-10, 2.0**-20, 2.0**-30)  # ~1e-3, 1e-6, 1e-9; powers of two scale every product exactly, so
# the stopping decisions cannot straddle a tolerance by round-off on another machine


def _chain(s: float, length: float = 0.3):
    """Three 1 kg rods of 30 cm (momentum at unit velocity 0.81 kg·m²/s, below the cap of p₁), masses × s."""
    return load_robot(planar_chain_urdf(3, length=length), {"gravity": [0, 0, -9.81]}, mass_scale=s)


def _run(vi, q0: np.ndarray, steps: int = STEPS) -> np.ndarray:
    """States x_1 … x_steps from rest at q0, no input."""
    x, out = vi.state_from_configurations(q0, q0), []
    for _ in range(steps):
        x = vi.step(x, np.zeros(vi.nu))
        out.append(x)
    return np.array(out)


def _assert_scaled(X: np.ndarray, X1: np.ndarray, s: float, nq: int, tol: float) -> None:
    """X is the unscaled run X1 with momenta × s."""
    dq = np.abs(X[:, :nq] - X1[:, :nq]).max()
    dp = np.abs(X[:, nq:] / s - X1[:, nq:]).max() / (1.0 + np.abs(X1[:, nq:]).max())
    assert dq < tol and dp < tol, (s, dq, dp)


def test_unit_momentum_scales_with_the_masses_and_sets_the_stopping_rule():
    m1 = unit_momentum(_chain(1.0))
    assert m1 > 0
    for s in SCALES:
        assert unit_momentum(_chain(s)) == pytest.approx(s * m1, rel=1e-12)
    vi = MidpointVI(_chain(1e-6), DT)
    assert vi.settings.momentum_scale == pytest.approx(1e-6 * m1, rel=1e-12)
    assert LinearTimeVI(_chain(1e-6), DT).settings.momentum_scale == vi.settings.momentum_scale
    assert MidpointVI(_chain(1.0, length=1.0), DT).settings.momentum_scale == 1.0  # 9 capped: the rule of before
    explicit = NewtonSettings(momentum_scale=0.5)
    assert MidpointVI(_chain(1e-6), DT, explicit).settings.momentum_scale == 0.5  # a user's value is kept
    with pytest.raises(ValueError, match="momentum_scale"):
        NewtonSettings(momentum_scale=0.0)


@pytest.mark.parametrize(
    "options",
    [dict(), dict(newton="exact"), dict(compile=False), dict(compile=False, newton="exact")],
    ids=["compiled-chord", "compiled-exact", "numpy-chord", "numpy-exact"],
)
def test_midpoint_vi_steps_a_model_in_any_unit_of_mass(options):
    q0 = np.array([1.0, -0.5, 0.3])
    X1 = _run(MidpointVI(_chain(1.0), DT, **options), q0)
    for s in SCALES:
        _assert_scaled(_run(MidpointVI(_chain(s), DT, **options), q0), X1, s, 3, 1e-13)


def test_the_absolute_rule_of_before_fails_this_test():
    """The same check with p₁ = 1 (an absolute momentum tolerance): the milligram chain leaves the unscaled run."""
    q0 = np.array([1.0, -0.5, 0.3])
    X1 = _run(MidpointVI(_chain(1.0), DT), q0)
    vi = MidpointVI(_chain(1e-6), DT, dataclasses.replace(MidpointVI.DEFAULT_SETTINGS, momentum_scale=1.0))
    X = _run(vi, q0)
    assert np.abs(X[:, :3] - X1[:, :3]).max() > 1e-9


@pytest.mark.parametrize("backend", ["c", "numpy"])
def test_linear_time_vi_steps_a_model_in_any_unit_of_mass(backend):
    from vi_control.integrators import drnea_c

    if backend == "c" and (not drnea_c.available() or drnea_c.load_library() is None):
        pytest.skip("no C compiler")
    q0 = np.array([1.0, -0.5, 0.3])
    X1 = _run(linear_time(_chain(1.0), DT, backend=backend), q0)
    for s in SCALES:
        _assert_scaled(_run(linear_time(_chain(s), DT, backend=backend), q0), X1, s, 3, 1e-13)


def test_the_planners_compiled_rollout_steps_a_model_in_any_unit_of_mass():
    q0 = np.array([1.0, -0.5, 0.3])
    runs = {}
    for s in (1.0,) + SCALES:
        vi = MidpointVI(_chain(s), DT)
        stages = compiled_stages(vi, STEPS, np.full(vi.nu, -np.inf), np.full(vi.nu, np.inf))
        if stages is None:
            pytest.skip("no compiled planning kernel")
        out = stages.rollout(vi.state_from_configurations(q0, q0), np.zeros((STEPS, vi.nu)))
        assert out is not None
        runs[s] = np.array(out[0][1:])
    for s in SCALES:
        _assert_scaled(runs[s], runs[1.0], s, 3, 1e-13)


def test_lie_group_vi_steps_a_rigid_body_in_any_unit_of_mass():
    X = {}
    for s in (1.0,) + SCALES:
        vi = LieGroupVI(load_rigid_body("spacecraft", mass_scale=s, drag_scale=s), DT)
        x = vi.state_from_velocity(vi.group.identity(), np.array([0.3, -0.2, 0.5]))  # a tumbling spacecraft
        runs = []
        for _ in range(STEPS):
            x = vi.step(x, np.zeros(vi.nu))
            runs.append(x)
        X[s] = np.array(runs)
    for s in SCALES:
        _assert_scaled(X[s], X[1.0], s, vi.nq, 1e-13)


@pytest.mark.parametrize("integrator", [MidpointVI, LinearTimeVI])
def test_a_real_arm_in_grams_follows_the_same_motion(integrator):
    """erd:ur3 (no damping) at 2⁻¹³ ≈ 1.2e-4 and 2⁻²⁰ ≈ 1e-6 of its mass, 100 steps of 10 ms from rest: the unscaled
    motion to round-off (measured ≤ 4e-14 rad; under the absolute rule 2e-8 / 1.3e-5 rad for the midpoint VI,
    8e-7 / 1e-4 for the linear-time VI)."""
    from vi_control.model.bundled import example_robot_urdf

    q0 = np.linspace(0.3, -0.4, 6)
    runs = {}
    for s in (1.0, 2.0**-13, 2.0**-20):
        robot = load_robot(example_robot_urdf("ur3"), {"gravity": [0, 0, -9.81]}, mass_scale=s)
        runs[s] = _run(integrator(robot, DT), q0, 100)
    for s in (2.0**-13, 2.0**-20):
        _assert_scaled(runs[s], runs[1.0], s, 6, 1e-12)
