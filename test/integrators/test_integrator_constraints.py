"""Holonomic constraints in the midpoint VI (Johnson2015, eq. 28): residuals, multipliers, dynamics.

R = [p_k + D₁L_d(q_k, q_{k+1}) + F⁻_d − Dh(q_k)ᵀλ_k ; h(q_{k+1})] = 0, p_{k+1} = D₂L_d(q_k, q_{k+1}).
So −Dh(q_k)ᵀλ_k is the constraint impulse over [t_k, t_{k+1}]: λ_k/Δt is the constraint force (per unit
of ∂h) at q_k. Checked against tension and statics computed independently (Pinocchio kinematics).
"""

import numpy as np
import pinocchio as pin
import pytest
from test_integrator_pendulum import _pendulum_exact

from vi_control.integrators.midpoint import MidpointVI
from vi_control.model import load_robot
from vi_control.model.bundled import bundled_config, bundled_urdf, fourbar_initial_configuration

G = 9.8  # config/cartesian_pendulum.yaml


def rollout(vi: MidpointVI, x0: np.ndarray, U: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Like vi.simulate, one step at a time (simulate cannot reshape inputs of a model with nu = 0)."""
    X, lams = [np.asarray(x0, float)], []
    for k, u in enumerate(U):
        r = vi.solve(X[-1], u, step_index=k)
        X.append(r.x)
        lams.append(r.lam)
    return np.array(X), np.array(lams)


@pytest.fixture(scope="module")
def cartesian():
    return load_robot(bundled_urdf("cartesian_pendulum"), bundled_config("cartesian_pendulum"))


def _bob(theta: float) -> np.ndarray:
    return np.array([np.sin(theta), -np.cos(theta)])  # (x, z) at unit distance, θ = 0 hangs down


def test_cartesian_pendulum_at_rest_multiplier_balances_gravity(cartesian):
    """Hanging at rest, q_{k+1} = q_k = (0, −l). With h = ½(|q|² − l²), Dh(q_k) = q_kᵀ and
    D₁L_d(q, q) = D₂L_d(q, q) = (Δt/2)∂L/∂q = (0, −mgΔt/2). Eq. 28a, z row:
      from the rest state p_k = D₂L_d(q, q) (state_from_configurations):  −mgΔt/2 − mgΔt/2 + lλ = 0  ⇒ λ = mgΔt/l;
      from p_k = 0 (first step):                                              −mgΔt/2 + lλ = 0      ⇒ λ = mgΔt/(2l).
    The constraint impulse lλ = mgΔt is gravity's impulse over one step: the string tension is mg."""
    dt, l = 0.01, 1.0
    m = cartesian.pin_model.inertias[2].mass  # the bob; the slider does not move here
    vi = MidpointVI(cartesian, dt)
    q = np.array([0.0, -l])
    x = vi.state_from_configurations(q, q)
    assert x[2:] == pytest.approx([0.0, -m * G * dt / 2], abs=1e-15)
    X, lams = rollout(vi, x, np.zeros((50, 0)))
    assert np.abs(X - x).max() < 1e-12
    assert lams[:, 0] == pytest.approx(np.full(50, m * G * dt / l), rel=1e-12)
    r = vi.solve(np.array([0.0, -l, 0.0, 0.0]))
    assert r.x == pytest.approx(x, abs=1e-14)
    assert r.lam[0] == pytest.approx(m * G * dt / (2 * l), rel=1e-12)


def test_cartesian_pendulum_swinging(cartesian):
    """Released at θ = 1 rad: |h(q_k)| ≤ 1e-10 at every step; λ_k l/Δt is the string tension
    m(g cos θ_k + |q̇_k|²) at q_k to O(Δt²); θ_k converges at second order to the pendulum ODE.
    The rest state (q_{−1} = q_0) puts the turning point at t = −Δt/2, so θ_k is compared with θ(t_k + Δt/2)."""
    theta0, T = 1.0, 2.0
    tension_err, angle_err = [], []
    for n in (100, 200, 400):
        dt = T / n
        vi = MidpointVI(cartesian, dt)
        q0 = _bob(theta0)
        X, lams = rollout(vi, vi.state_from_configurations(q0, q0), np.zeros((n, 0)))
        assert max(np.abs(vi.constraint(x[:2])).max() for x in X) <= 1e-10
        qd = np.array([vi.velocity(x) for x in X[:-1]])
        theta = np.arctan2(X[:, 0], -X[:, 1])
        tension = G * np.cos(theta[:-1]) + (qd**2).sum(axis=1)  # m = l = 1
        tension_err.append(np.abs(lams[:, 0] / dt - tension).max())
        angle_err.append(abs(theta[-1] - _pendulum_exact(theta0, 0.0, T + dt / 2)[0]))
    for err in (tension_err, angle_err):
        ratios = np.array(err[:-1]) / np.array(err[1:])
        assert np.all((ratios > 3.5) & (ratios < 4.5)), err
    assert tension_err[-1] < 5e-3 and angle_err[-1] < 1e-3


@pytest.fixture(scope="module")
def fourbar():
    return load_robot(bundled_urdf("fourbar"), bundled_config("fourbar"))


def test_fourbar_stays_closed_and_conserves_energy(fourbar):
    """Passive four-bar released at crank angle 0.5 rad: the loop closure residual stays at round-off
    and the energy oscillates without drift (the constraint does no work); driven, the loop stays closed."""
    vi = MidpointVI(fourbar, 0.005)
    q0 = fourbar_initial_configuration(0.5)
    x0 = vi.state_from_configurations(q0, q0)
    X, _ = vi.simulate(x0, np.zeros((4000, vi.nu)))
    h = np.array([vi.constraint(x[: vi.nq]) for x in X])
    assert np.abs(h).max() <= 1e-10
    assert np.ptp(X[:, 0]) > 2.0  # it really swings
    E = np.array([vi.energy(x) for x in X])
    half = len(E) // 2
    assert np.ptp(E) < 1e-3 * np.abs(E).max()
    assert np.abs(E[half:] - E[0]).max() < 1.5 * np.abs(E[:half] - E[0]).max()
    Xd, _ = vi.simulate(x0, np.full((300, vi.nu), 3.0))  # spins up to ~26 rad/s
    assert max(np.abs(vi.constraint(x[: vi.nq])).max() for x in Xd) <= 1e-10
    assert Xd[-1, 0] > 2 * np.pi  # the crank turns fully (crank-rocker)


def _moment_y(r: np.ndarray, f: np.ndarray) -> float:
    return float(np.cross(r, f)[1])


def test_fourbar_static_equilibrium_and_pivot_reaction(fourbar):
    """Holding torque from virtual work, τ = dV/ds along the closed loop (s = crank angle, V(q(s)) by
    central differences): the discrete rest state stays at rest, because at q_{k+1} = q_k eq. 28a reads
    Δt(Sτ − ∇V) = Dhᵀλ, the continuous statics. The pivot reaction −λ/Δt on the rocker tip must then
    balance the rocker's moments about its joint B and the whole linkage's moments about the crank pivot."""
    dt, s0, eps = 0.005, 0.8, 1e-5
    vi = MidpointVI(fourbar, dt)
    model, data = fourbar.pin_model, fourbar.create_data()

    def potential(s):
        return pin.computePotentialEnergy(model, data, fourbar_initial_configuration(s))

    tau = (potential(s0 + eps) - potential(s0 - eps)) / (2 * eps)
    q0 = fourbar_initial_configuration(s0)
    X, lams = vi.simulate(vi.state_from_configurations(q0, q0), np.full((200, vi.nu), tau))
    assert np.abs(X[:, : vi.nq] - q0).max() < 1e-8
    force = -lams[-1] / dt  # (x, z) force on the rocker tip from the ground pivot
    F = np.array([force[0], 0.0, force[1]])

    pin.forwardKinematics(model, data, q0)
    g = np.array([0.0, 0.0, -9.81])  # config/fourbar.yaml
    com = {i: data.oMi[i].act(model.inertias[i].lever) for i in range(1, model.njoints)}
    mass = {i: model.inertias[i].mass for i in com}
    rocker = model.getJointId("rocker_joint")
    B, D = data.oMi[rocker].translation, np.array([1.0, 0.0, 0.0])
    assert np.linalg.norm(data.oMi[rocker].act(np.array([0.7, 0.0, 0.0])) - D) < 1e-10  # loop closed
    rocker_moment = _moment_y(D - B, F) + _moment_y(com[rocker] - B, mass[rocker] * g)
    total_moment = tau + _moment_y(D, F) + sum(_moment_y(com[i], mass[i] * g) for i in com)
    weight = sum(mass.values()) * 9.81
    assert abs(rocker_moment) < 1e-8 * weight
    assert abs(total_moment) < 1e-8 * weight
    assert np.linalg.norm(F) > 0.1 * weight  # a real reaction, not zero
