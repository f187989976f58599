"""Midpoint VI on the Johnson2015 pendulum: the paper's one step, Legendre transforms, wrapping.

Independent references: REFERENCE §1 numbers, a scalar Newton solve of eq. 6a written here, a
high-accuracy ODE solution of the continuous pendulum (scipy DOP853), Pinocchio's crba.
"""

import numpy as np
import pinocchio as pin
import pytest
from scipy.integrate import solve_ivp

from vi_control.integrators.midpoint import MidpointVI
from vi_control.model import load_robot
from vi_control.model.bundled import example_robot_urdf

G = 9.8  # config/pendulum.yaml


def eq6a_residual(theta_next: float, theta: float, p: float, u: float, dt: float) -> float:
    """Johnson2015, eq. 6a: p_k − (θ_{k+1}−θ_k)/Δt − (gΔt/2) sin((θ_{k+1}+θ_k)/2) + u_k Δt."""
    return p - (theta_next - theta) / dt - G * dt / 2 * np.sin((theta_next + theta) / 2) + u * dt


def eq6a_newton(theta: float, p: float, u: float, dt: float, iterations: int = 50) -> tuple[float, float]:
    """Independent scalar Newton on eq. 6a, then eq. 6b for p_{k+1}; starts from θ_k + Δt·p_k."""
    th = theta + dt * p
    for _ in range(iterations):
        dr = -1 / dt - G * dt / 4 * np.cos((th + theta) / 2)
        th -= eq6a_residual(th, theta, p, u, dt) / dr
    p_next = (th - theta) / dt - G * dt / 2 * np.sin((th + theta) / 2)
    return th, p_next


def test_reference_single_step(pendulum_vi):
    """REFERENCE §1 (Johnson2015, §II-A): Δt 0.1, θ 0.2, p 0.5, u 0.8."""
    r = pendulum_vi.solve(np.array([0.2, 0.5]), np.array([0.8]))
    x1 = r.x
    assert x1 == pytest.approx([0.247136194155, 0.362723883110], abs=1e-10)
    th, p = eq6a_newton(0.2, 0.5, 0.8, 0.1)
    assert abs(eq6a_residual(th, 0.2, 0.5, 0.8, 0.1)) < 1e-14
    assert x1 == pytest.approx([th, p], abs=1e-13)
    assert r.residual <= 1e-12


def test_steps_match_scalar_newton_over_random_states(pendulum_vi, rng):
    for theta, p, u in rng.uniform([-3, -4, -5], [3, 4, 5], size=(20, 3)):
        x1 = pendulum_vi.step(np.array([theta, p]), np.array([u]))
        assert x1 == pytest.approx(eq6a_newton(theta, p, u, 0.1), abs=1e-10)  # VI Newton tol 1e-12·(1+|p|)


@pytest.fixture(scope="module")
def double_pendulum_vi():
    # example-robot-data's double pendulum: a real URDF with offsets and full inertias (3-D rods).
    robot = load_robot(example_robot_urdf("double_pendulum"))
    return MidpointVI(robot, 0.01)


def test_state_from_velocity_roundtrip(double_pendulum_vi, rng):
    """x = (q, M(q) q̇) and velocity(x) = M⁻¹p invert each other; M is Pinocchio's crba."""
    vi = double_pendulum_vi
    model = vi.robot.pin_model
    data = model.createData()
    for _ in range(10):
        q, qd = rng.uniform(-3, 3, vi.nq), rng.uniform(-5, 5, vi.nq)
        x = vi.state_from_velocity(q, qd)
        M = pin.crba(model, data, q)
        M = np.triu(M) + np.triu(M, 1).T
        assert x[vi.nq :] == pytest.approx(M @ qd, abs=1e-11)
        assert vi.velocity(x) == pytest.approx(qd, abs=1e-11)


@pytest.mark.parametrize("forced", [False, True])
def test_state_from_configurations_reproduces_momenta(forced, rng):
    """p_k = D₂L_d(q_{k−1}, q_k) + F⁺_d (eq. 2b) and F⁺_d = 0 here (the whole midpoint impulse
    Δt·(Sτ − c q̇) sits in F⁻_d, eq. 2a), so the right Legendre transform of two consecutive
    configurations gives back the simulated momentum exactly, forced or not, damped or not."""
    system = {"damping": {"joint1": 0.3, "joint2": 0.1}} if forced else {"damping": {"joint1": 0, "joint2": 0}}
    vi = MidpointVI(load_robot(example_robot_urdf("double_pendulum"), system), 0.01)
    x0 = vi.state_from_velocity(np.array([0.7, -0.4]), np.array([1.0, 2.0]))
    U = rng.uniform(-3, 3, (60, vi.nu)) if forced else np.zeros((60, vi.nu))
    X, _ = vi.simulate(x0, U)
    nq = vi.nq
    for k in range(1, len(X)):
        xk = vi.state_from_configurations(X[k - 1, :nq], X[k, :nq])
        assert xk == pytest.approx(X[k], rel=1e-12, abs=1e-10)


def _pendulum_exact(theta0: float, omega0: float, t: float) -> tuple[float, float]:
    """Continuous pendulum θ̈ = −g sin θ to ~1e-12 (DOP853): the reference the VI converges to."""
    sol = solve_ivp(
        lambda _t, s: [s[1], -G * np.sin(s[0])], (0, t), [theta0, omega0], method="DOP853", rtol=1e-13, atol=1e-13
    )
    return sol.y[0, -1], sol.y[1, -1]


def test_velocity_estimate_converges_second_order(pendulum_robot):
    """velocity(x_N) = M⁻¹p_N → θ̇(T) at O(Δt²): midpoint L_d is second order (Johnson2015, §II-A)."""
    T, theta0, omega0 = 1.0, 1.2, 0.5
    th_ref, om_ref = _pendulum_exact(theta0, omega0, T)
    errors = []
    for n in (20, 40, 80, 160):
        vi = MidpointVI(pendulum_robot, T / n, compile=False)  # a few hundred steps: skip gcc
        X, _ = vi.simulate(vi.state_from_velocity([theta0], [omega0]), np.zeros((n, 1)))
        errors.append((abs(vi.velocity(X[-1])[0] - om_ref), abs(X[-1, 0] - th_ref)))
    errors = np.array(errors)
    assert errors[-1, 0] < 2e-3
    ratios = errors[:-1] / errors[1:]
    assert np.all((ratios > 3.6) & (ratios < 4.4)), ratios


def test_wrap_continuous_gives_same_physical_trajectory(pendulum_robot):
    """A pendulum whirling over the top for many revolutions: wrapped angles stay in [−π, π) and
    cos θ, sin θ, p agree with the unwrapped run (L_d sees only differences and cos/sin)."""
    U = np.zeros((600, 1))
    x0 = np.array([0.0, 8.0])  # above the separatrix (p² > 4g): it keeps going round
    X, _ = MidpointVI(pendulum_robot, 0.05).simulate(x0, U)
    Xw, _ = MidpointVI(pendulum_robot, 0.05, wrap_continuous=True).simulate(x0, U)
    assert X[-1, 0] > 20 * 2 * np.pi  # many revolutions unwrapped
    assert np.all((Xw[:, 0] >= -np.pi) & (Xw[:, 0] < np.pi))
    assert np.cos(Xw[:, 0]) == pytest.approx(np.cos(X[:, 0]), abs=1e-9)
    assert np.sin(Xw[:, 0]) == pytest.approx(np.sin(X[:, 0]), abs=1e-9)
    assert Xw[:, 1] == pytest.approx(X[:, 1], abs=1e-9)
