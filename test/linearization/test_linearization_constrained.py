"""Linearization of the cart-pole, the constrained four-bar (Johnson2015, §VI, eqs. 28–32), trajectories,
and the singular cases of Johnson2015, §VII (spherical pendulum eq. 34, Cartesian pendulum §VII-B)."""

from __future__ import annotations

import numpy as np
import pytest
from test_linearization import check_contraction, check_first_order, check_full_second_order

from vi_control.integrators.midpoint import MidpointVI
from vi_control.linearization import linearize, linearize_trajectory
from vi_control.mechanics.symbolic import ContinuousDynamics
from vi_control.model import load_robot
from vi_control.model.bundled import bundled_config, bundled_urdf, fourbar_initial_configuration


def _load(name: str):
    return load_robot(bundled_urdf(name), bundled_config(name))


def _rollout(vi: MidpointVI, x0: np.ndarray, U: np.ndarray) -> np.ndarray:
    X = [np.asarray(x0, float)]
    for k, u in enumerate(U):
        X.append(vi.solve(X[-1], u, step_index=k).x)
    return np.array(X)


def _state_from_pair(vi: MidpointVI, q0: np.ndarray, q1: np.ndarray) -> np.ndarray:
    """x_0 = (q_0, −D₁L_d(q_0, q_1)) (eq. 1a, unforced): the step from x_0 returns q_1 with λ = 0."""
    p0 = -np.asarray(vi.functions["D1Ld"](q0, q1)[0], float).ravel()
    return np.concatenate([q0, p0])


# ---- cart-pole ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def cartpole_vi():
    return MidpointVI(_load("cartpole"), 0.05)


@pytest.mark.parametrize("seed", [0, 1])
def test_cartpole_first_and_second_order(cartpole_vi, seed):
    rng = np.random.default_rng(seed)
    x = cartpole_vi.state_from_velocity(rng.uniform(-2, 2, 2), rng.normal(size=2))
    u = rng.normal(size=1) * 5
    check_first_order(cartpole_vi, x, u)
    check_full_second_order(cartpole_vi, x, u)
    check_contraction(cartpole_vi, x, u, rng.normal(size=4))


# ---- four-bar: constrained (Johnson2015, eqs. 28–32) -------------------------------------------------
@pytest.fixture(scope="module")
def fourbar():
    robot = _load("fourbar")
    return MidpointVI(robot, 0.01), ContinuousDynamics(robot)


def _fourbar_point(vi: MidpointVI, crank: float, crank_rate: float) -> np.ndarray:
    """A consistent state: two loop-closing configurations Δt apart (the crank turns at crank_rate)."""
    return _state_from_pair(
        vi, fourbar_initial_configuration(crank), fourbar_initial_configuration(crank + crank_rate * vi.dt)
    )


@pytest.mark.parametrize("crank, rate", [(0.3, 1.0), (-1.2, -2.0)])
def test_fourbar_first_and_second_order(fourbar, crank, rate):
    vi, _ = fourbar
    x, u = _fourbar_point(vi, crank, rate), np.array([0.7])
    check_first_order(vi, x, u)
    check_full_second_order(vi, x, u)
    check_contraction(vi, x, u, np.random.default_rng(5).normal(size=vi.nx))


def test_fourbar_linearization_stays_on_constraint(fourbar):
    """h(q_{k+1}) = 0 for every (x_k, u_k) (eq. 28b), so Dh(q_{k+1}) ∂q_{k+1}/∂(x_k, u_k) = 0."""
    vi, dyn = fourbar
    x, u = _fourbar_point(vi, 0.8, 1.5), np.array([-0.4])
    lin = linearize(vi, x, u)
    q1 = vi.step(x, u)[: vi.nq]
    assert np.abs(dyn.constraint(q1)).max() < 1e-12
    Dh1 = dyn.constraint_jacobian(q1)
    J_q = np.hstack([lin.A, lin.B])[: vi.nq]
    assert np.abs(Dh1 @ J_q).max() <= 1e-10 * np.abs(J_q).max()
    # The constrained map has one degree of freedom: q_{k+1} moves along the 1-D tangent space only.
    sv = np.linalg.svd(J_q, compute_uv=False)
    assert sv[1] <= 1e-10 * sv[0]


# ---- trajectories ---------------------------------------------------------------------------------
def test_linearize_trajectory_matches_per_step(fourbar):
    vi, _ = fourbar
    rng = np.random.default_rng(11)
    U = rng.normal(size=(12, vi.nu))
    X = _rollout(vi, _fourbar_point(vi, 0.1, 0.5), U)
    traj = linearize_trajectory(vi, X, U)
    assert traj.A.shape == (12, vi.nx, vi.nx) and traj.B.shape == (12, vi.nx, vi.nu)
    for k in (0, 5, 11):
        lin = linearize(vi, X[k], U[k])
        np.testing.assert_allclose(traj.A[k], lin.A, rtol=0, atol=1e-10 * np.abs(lin.A).max())
        np.testing.assert_allclose(traj.B[k], lin.B, rtol=0, atol=1e-10 * np.abs(lin.B).max())
        assert traj.rcond[k] == pytest.approx(lin.rcond, rel=1e-6)
    assert traj.near_singular.size == 0


# ---- Johnson2015, §VII-A: M_{k+1} of the spherical pendulum ------------------------------------------
@pytest.fixture(scope="module")
def spherical_vi():
    robot = _load("spherical_pendulum")
    assert robot.joint_names == ["phi", "theta"]
    return MidpointVI(robot, 0.1)


def test_spherical_pendulum_det_M_eq34(spherical_vi):
    """det M_{k+1} of our AD-built R_y equals Johnson2015, eq. 34 (m = r = 1, g = 9.8) at random pairs."""
    vi, g, dt = spherical_vi, 9.8, spherical_vi.dt
    rng = np.random.default_rng(2)
    for _ in range(5):
        q0, q1 = rng.uniform(-2, 2, 2), rng.uniform(-2, 2, 2)
        Ry = np.array(vi.functions["linearize"](q1, np.concatenate([q0, np.zeros(2)]))[0])
        s = q0[1] + q1[1]
        eq34 = (
            np.sin(s / 2) ** 2 / (4 * dt**2) * (dt**2 * g * np.cos(s / 2) + (2 + np.cos(s)) * (q0[0] - q1[0]) ** 2 + 4)
        )
        assert np.linalg.det(Ry) == pytest.approx(eq34, rel=1e-9)


def test_trajectory_through_pole_is_flagged(spherical_vi):
    """A planar swing whose step k straddles the pole symmetrically (θ_k + θ_{k+1} = δ ≈ 0) makes
    M_{k+1} nearly singular (eq. 34: det ∝ sin²(δ/2)); only that step is flagged."""
    vi = spherical_vi
    U = np.zeros((4, 0))
    rconds = []
    for delta in (1e-3, 1e-4):
        x0 = _state_from_pair(vi, np.array([0.0, 0.2]), np.array([0.0, -0.2 + delta]))
        X = _rollout(vi, x0, U)
        assert X[1, 1] == pytest.approx(-0.2 + delta, abs=1e-12)
        traj = linearize_trajectory(vi, X, U, rcond_warn=1e-8)
        rconds.append(traj.rcond[0])
        assert traj.rcond[1:].min() > 1e-3
    assert rconds[1] < 1e-8 < rconds[0]
    # Quadratic in δ, as eq. 34 predicts.
    assert rconds[0] / rconds[1] == pytest.approx(100.0, rel=1e-3)
    assert linearize_trajectory(vi, X, U, rcond_warn=1e-8).near_singular.tolist() == [0]


# ---- Johnson2015, §VII-B: the constraint term of the Cartesian pendulum -------------------------------
@pytest.fixture(scope="module")
def cartesian_vi():
    robot = _load("cartesian_pendulum")
    assert robot.joint_names == ["x", "z"]
    return MidpointVI(robot, 0.1)


def _circle(angle: float) -> np.ndarray:
    return np.array([np.sin(angle), -np.cos(angle)])


def test_cartesian_pendulum_constraint_term(cartesian_vi):
    """det R_y = det M_{k+1} · Dh(q_{k+1}) M_{k+1}⁻¹ Dh(q_k)ᵀ, ∝ q_k·q_{k+1} (§VII-B): zero when the
    pendulum turns by π/2 in one step."""
    vi = cartesian_vi
    model = vi.robot.pin_model
    m_x = model.inertias[1].mass + model.inertias[2].mass  # the slider carries the bob
    m_z = model.inertias[2].mass
    for a, b in [(0.3, 0.9), (0.3, 0.3 + np.pi / 2), (-1.0, 2.0)]:
        q0, q1 = _circle(a), _circle(b)
        Ry = np.array(vi.functions["linearize"](np.concatenate([q1, [0.0]]), np.concatenate([q0, [0.0, 0.0]]))[0])
        expected = -(m_x * m_z / vi.dt) * (q1[0] * q0[0] / m_x + q1[1] * q0[1] / m_z)
        assert np.linalg.det(Ry) == pytest.approx(expected, rel=1e-9, abs=1e-12)


def test_cartesian_trajectory_near_quarter_turn_is_flagged(cartesian_vi):
    """A step turning by π/2 − δ: the DEL solution is a near double root (the line q_k + Δt M⁻¹(p_k −
    Dh(q_k)ᵀλ) is almost tangent to the circle), so Newton lands within ~√tol of it; the step is flagged."""
    vi = cartesian_vi
    U = np.zeros((2, 0))
    x0 = _state_from_pair(vi, _circle(0.3), _circle(0.3 + np.pi / 2 - 1e-6))
    X = _rollout(vi, x0, U)
    q0, q1 = X[0, :2], X[1, :2]
    assert abs(q0 @ q1) < 1e-5  # still a quarter turn
    traj = linearize_trajectory(vi, X, U, rcond_warn=1e-6)
    assert traj.near_singular.tolist() == [0]
    assert traj.rcond[1] > 1e-4


@pytest.mark.parametrize("which", ["spherical", "cartesian"])
def test_unforced_pendulums_regular_point(spherical_vi, cartesian_vi, which):
    """Away from §VII's singular sets both pendulums linearize like any system (nu = 0: A only)."""
    vi = spherical_vi if which == "spherical" else cartesian_vi
    if which == "spherical":
        q0, q1 = np.array([0.1, 0.8]), np.array([0.25, 0.85])
    else:
        q0, q1 = _circle(0.8), _circle(0.9)
    x, u = _state_from_pair(vi, q0, q1), np.zeros(0)
    check_first_order(vi, x, u)
    check_full_second_order(vi, x, u)
    check_contraction(vi, x, u, np.random.default_rng(9).normal(size=vi.nx))
