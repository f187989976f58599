"""Forcing in the midpoint VI (Johnson2015, eq. 2): damping, joint torques, prescribed (kinematic) joints.

F⁻_d = Δt·(S τ_k − c ⊙ (q_{k+1}−q_k)/Δt) and F⁺_d = 0 (vi_control.mechanics.discrete). Checked
against analytic rates, work–energy balances and a high-accuracy ODE solution (scipy DOP853).
"""

import numpy as np
import pinocchio as pin
import pytest
from scipy.integrate import solve_ivp

from vi_control.integrators.midpoint import MidpointVI
from vi_control.model import load_robot
from vi_control.model.bundled import bundled_config, bundled_urdf
from vi_control.model.generate import planar_chain_urdf

G = 9.8


def _energies(vi: MidpointVI, X: np.ndarray) -> np.ndarray:
    return np.array([vi.energy(x) for x in X])


def test_damping_dissipates_at_the_analytic_rate():
    """Viscous damping c (a YAML override of the URDF's 0) on a passive pendulum: the energy above the
    bottom decays as exp(−c t / (m l²)) for small swings and drops strictly from one turning point to the
    next. The dissipated power c θ̇² vanishes at the turning points, so there (and only there) the
    integrator's own O(Δt²) energy ripple may show a step-to-step increase."""
    c, dt, n = 0.2, 0.01, 2000
    x0 = np.array([0.2, 0.0])
    runs = {}
    for damping in (c, 0.0):
        robot = load_robot(bundled_urdf("pendulum"), {"gravity": [0, 0, -G], "damping": {"theta": damping}})
        vi = MidpointVI(robot, dt)
        X, _ = vi.simulate(x0, np.zeros((n, vi.nu)))
        runs[damping] = (X, _energies(vi, X) + G)  # energy above the bottom (V = −g cos θ)
    (X, E), (_, E_free) = runs[c], runs[0.0]
    t = dt * np.arange(n + 1)
    assert np.polyfit(t, np.log(E), 1)[0] == pytest.approx(-c, rel=0.01)
    assert E[-1] < 0.03 * E[0]
    assert np.abs(E_free - E_free[0]).max() < 1e-3 * E_free[0]  # undamped: no loss
    dq = np.diff(X[:, 0])
    turning = np.flatnonzero(np.sign(dq[:-1]) != np.sign(dq[1:])) + 1  # θ_k at an extreme
    assert len(turning) >= 19  # 10 periods of 2π/√g
    assert np.all(np.diff(E[turning]) < 0)
    rising = np.flatnonzero(np.diff(E) > 0)
    released = np.concatenate([[0], turning])  # released from rest at k = 0
    assert all(np.abs(released - k).min() <= 2 for k in rising)


def test_constant_torque_work_energy_balance(pendulum_robot):
    """E_N − E_0 = u (θ_N − θ_0) for a constant torque u. With F⁺_d = 0 the state's momentum lacks the
    half impulse uΔt/2 a symmetric split would give, so the balance holds to first order in Δt;
    restoring it (p̃_k = p_k + uΔt/2) gives the second-order balance of the midpoint rule."""
    u, T = 0.8, 2.0
    raw, corrected = [], []
    for dt in (0.04, 0.02, 0.01):
        vi = MidpointVI(pendulum_robot, dt, compile=False)
        X, _ = vi.simulate(np.array([0.2, 0.0]), np.full((round(T / dt), 1), u))
        work = u * (X[:, 0] - X[0, 0])
        raw.append(np.abs(_energies(vi, X) - _energies(vi, X[:1]) - work).max())
        Xs = X + np.array([0.0, u * dt / 2])
        corrected.append(np.abs(_energies(vi, Xs) - _energies(vi, Xs[:1]) - work).max())
    raw, corrected = np.array(raw), np.array(corrected)
    assert raw[-1] < 2e-3
    assert np.all((raw[:-1] / raw[1:] > 1.8) & (raw[:-1] / raw[1:] < 2.2)), raw
    assert np.all((corrected[:-1] / corrected[1:] > 3.6) & (corrected[:-1] / corrected[1:] < 4.4)), corrected
    assert corrected[-1] < 1e-6


# A pendulum (m = l = 1) hanging from a 'hand' on a prismatic x joint whose motion is prescribed.
HAND_PENDULUM = """<?xml version="1.0"?>
<robot name="hand_pendulum">
  <link name="world_link"/>
  <link name="hand"><inertial><origin xyz="0 0 0"/><mass value="0.5"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
  <link name="bob"><inertial><origin xyz="0 0 -1"/><mass value="1.0"/>
    <inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial></link>
  <joint name="hand_x" type="prismatic"><parent link="world_link"/><child link="hand"/>
    <axis xyz="1 0 0"/><limit lower="-100" upper="100" effort="0" velocity="100"/></joint>
  <joint name="theta" type="continuous"><parent link="hand"/><child link="bob"/>
    <axis xyz="0 1 0"/><limit effort="0" velocity="100"/></joint>
</robot>"""


@pytest.fixture(scope="module")
def hand_robot():
    return load_robot(HAND_PENDULUM, {"gravity": [0, 0, -G], "prescribed": ["hand_x"], "actuated": []})


def test_prescribed_hand_with_constant_acceleration_holds_the_tilted_equilibrium(hand_robot):
    """Bob at x_hand − sin θ: L = ½(ẋ² − 2ẋ cos θ θ̇ + θ̇²) + g cos θ, so a hand accelerating at a holds the
    pendulum still at tan θ* = a/g. The DEL equation at constant θ reduces to
    cos θ (v_{k+½} − v_{k−½})/Δt = g sin θ with the hand's discrete velocities v, and for
    x_k = ½a(kΔt)² that difference is exactly aΔt: the discrete system keeps the same equilibrium."""
    a, dt, n = 2.0, 0.01, 300
    vi = MidpointVI(hand_robot, dt)
    assert (vi.nu, list(vi.idx_k)) == (1, [0])
    theta_star = np.arctan2(a, G)
    hand = 0.5 * a * (dt * np.arange(-1, n + 1)) ** 2
    x0 = vi.state_from_configurations([hand[0], theta_star], [hand[1], theta_star])
    X, _ = vi.simulate(x0, hand[2:, None])
    assert np.all(X[1:, 0] == hand[2:])  # the prescribed coordinate is exactly the input ρ
    assert X[1:, 2] == pytest.approx(np.diff(hand[1:]) / dt, rel=1e-12)  # its p-slot: (ρ_{k+1} − ρ_k)/Δt
    assert np.abs(X[:, 1] - theta_star).max() < 1e-10


def _hand_pendulum_ode(amplitude: float, omega: float, t_end: float, n: int) -> np.ndarray:
    """θ̈ = ẍ cos θ − g sin θ (Euler–Lagrange of the L above), hand x = A sin Ωt, from rest at θ = 0."""

    def rhs(t, s):
        xdd = -amplitude * omega**2 * np.sin(omega * t)
        return [s[1], xdd * np.cos(s[0]) - G * np.sin(s[0])]

    t = np.linspace(0, t_end, n + 1)
    return solve_ivp(rhs, (0, t_end), [0.0, 0.0], t_eval=t, method="DOP853", rtol=1e-12, atol=1e-12).y[0]


def test_prescribed_hand_shaking_drives_the_pendulum_like_the_ode(hand_robot):
    """Hand x = A sin Ωt near resonance: θ_k converges to the ODE solution at second order."""
    A, Om, T = 0.2, 2.5, 3.0
    errors = []
    for n in (150, 300, 600):
        dt = T / n
        vi = MidpointVI(hand_robot, dt, compile=False)
        t = dt * np.arange(n + 1)
        x0 = vi.state_from_velocity([0.0, 0.0], [A * Om, 0.0])
        X, _ = vi.simulate(x0, (A * np.sin(Om * t[1:]))[:, None])
        assert X[:, 0] == pytest.approx(A * np.sin(Om * t), abs=1e-15)
        errors.append(np.abs(X[:, 1] - _hand_pendulum_ode(A, Om, T, n)).max())
    theta_amp = np.abs(X[:, 1]).max()
    assert theta_amp > 0.1  # the shaking really drives it
    assert errors[-1] < 1e-3 * theta_amp
    ratios = np.array(errors[:-1]) / np.array(errors[1:])
    assert np.all((ratios > 3.5) & (ratios < 4.5)), errors


def test_torque_enters_only_actuated_joints(pendulum_robot):
    """With actuated: [] the same pendulum has no input; with the bundled config u is the pivot torque."""
    passive = MidpointVI(load_robot(bundled_urdf("pendulum"), {"gravity": [0, 0, -G], "actuated": []}), 0.1)
    driven = MidpointVI(load_robot(bundled_urdf("pendulum"), bundled_config("pendulum")), 0.1)
    assert (passive.nu, driven.nu) == (0, 1)
    x = np.array([0.2, 0.5])
    assert passive.step(x, np.zeros(0)) == pytest.approx(driven.step(x, np.zeros(1)), abs=1e-14)


def test_prescribed_base_joint_of_a_chain_matches_pinocchio_dynamics():
    """3-link chain with `prescribed: [joint1]` (YAML) and joint1 = 0.6 sin 2t: joint1 is exactly the input,
    and joints 2–3 converge at second order to the ODE built from Pinocchio's rnea/crba
    (M_dd q̈_d = −rnea(q, q̇, (q̈₁, 0))_d), an implementation independent of our symbolic tree."""
    robot = load_robot(planar_chain_urdf(3), {"gravity": [0, 0, -G], "prescribed": ["joint1"], "actuated": []})
    model, data = robot.pin_model, robot.create_data()
    amp, om, T = 0.6, 2.0, 2.0

    def rho(t):
        return amp * np.sin(om * t), amp * om * np.cos(om * t), -amp * om**2 * np.sin(om * t)

    def rhs(t, s):
        r, rd, rdd = rho(t)
        q, v = np.concatenate([[r], s[:2]]), np.concatenate([[rd], s[2:]])
        bias = pin.rnea(model, data, q, v, np.array([rdd, 0.0, 0.0]))[1:]
        M = pin.crba(model, data, q)
        M = np.triu(M) + np.triu(M, 1).T
        return np.concatenate([s[2:], np.linalg.solve(M[1:, 1:], -bias)])

    q0d, v0d = np.array([0.4, -0.3]), np.zeros(2)
    errors = []
    for n in (100, 200, 400):
        dt = T / n
        t = dt * np.arange(n + 1)
        ref = ode_positions(rhs, np.concatenate([q0d, v0d]), T, n, 2)
        vi = MidpointVI(robot, dt, compile=False)
        x0 = vi.state_from_velocity(np.concatenate([[0.0], q0d]), np.concatenate([[amp * om], v0d]))
        X, _ = vi.simulate(x0, rho(t[1:])[0][:, None])
        assert np.all(X[1:, 0] == rho(t[1:])[0])
        errors.append(np.abs(X[:, 1:3] - ref).max())
    assert_second_order(errors, 2e-3)


def ode_positions(rhs, y0: np.ndarray, T: float, n: int, nq: int) -> np.ndarray:
    """Reference positions (n+1, nq) at t_k = k·T/n by DOP853 at rtol = atol = 1e-12 (the convergence studies')."""
    t = T / n * np.arange(n + 1)
    return solve_ivp(rhs, (0, T), y0, t_eval=t, method="DOP853", rtol=1e-12, atol=1e-12).y[:nq].T


def assert_second_order(errors: list[float], finest: float) -> None:
    """Errors at Δt, Δt/2, Δt/4 fall by 4 ± 0.5 each (second order), the finest below ``finest``."""
    ratios = np.array(errors[:-1]) / np.array(errors[1:])
    assert errors[-1] < finest and np.all((ratios > 3.5) & (ratios < 4.5)), errors


def _trajectory_errors(robot, u: float, c: float, half_impulse_start: bool, dts=(0.02, 0.01, 0.005)):
    """|θ_N − θ(T)| at T = 2 s against DOP853 on Pinocchio's ABA, released from θ₀ = 0.3 at rest."""
    T, model = 2.0, robot.pin_model
    data = model.createData()

    def f(_t, y):
        return np.r_[y[1:], pin.aba(model, data, y[:1], y[1:], np.array([u]) - c * y[1:])]

    exact = solve_ivp(f, (0.0, T), [0.3, 0.0], method="DOP853", rtol=1e-12, atol=1e-12).y[0, -1]
    errors = []
    for dt in dts:
        vi = MidpointVI(robot, dt, compile=False)
        x0 = vi.state_from_velocity(np.array([0.3]), np.array([0.0]))
        if half_impulse_start:  # the start of a symmetric split, p_0 = M q̇_0 − (Δt/2)u
            x0[1] -= u * dt / 2
        X, _ = vi.simulate(x0, np.full((round(T / dt), 1), u))
        errors.append(abs(X[-1, 0] - exact))
    errors = np.array(errors)
    return errors[:-1] / errors[1:]


@pytest.mark.parametrize(
    "u, c, half_impulse_start, order",
    [
        (0.0, 0.0, False, 2),  # unforced: the midpoint rule's second order
        (1.0, 0.0, False, 1),  # constant torque: F⁺_d = 0 starts one half impulse uΔt/2 off …
        (1.0, 0.0, True, 2),  # … and is otherwise the symmetric split (the interior DEL equations are the same)
        (0.0, 0.5, False, 1),  # damping −c(q_{k+1} − q_k)/Δt: the velocity of t_k + Δt/2 damps t_k's momentum
    ],
)
def test_trajectory_convergence_order_with_forcing(u, c, half_impulse_start, order):
    """The order in Δt of the configuration trajectory (docs/limits.md: with damping, first order)."""
    robot = load_robot(bundled_urdf("pendulum"), {"gravity": [0, 0, -G], "damping": {"theta": c}})
    ratios = _trajectory_errors(robot, u, c, half_impulse_start)
    assert np.all(np.abs(ratios - 2.0**order) < 0.25 * 2.0**order), ratios
