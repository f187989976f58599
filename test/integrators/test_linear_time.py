"""DRNEA (Lee2016, Alg. 2), its derivative (Alg. 4) and the SE(3) utilities, against independent references:
scipy's matrix exponential/logarithm, Pinocchio's own algorithms and finite differences of the scalar
discrete Lagrangian."""

import numpy as np
import pinocchio as pin
import pytest
from linear_time_oracle import NumpyLinearTimeVI
from scipy.linalg import expm, logm

from vi_control.integrators.linear_time import LinearTimeVI
from vi_control.mechanics import lie
from vi_control.mechanics.drnea import BodyTree, drnea_derivative_recursive, drnea_recursive
from vi_control.model import load_robot
from vi_control.model.bundled import example_robot_urdf

# A branched tree with a prismatic joint and a body frame away from the centre of mass.
TREE_URDF = """<?xml version="1.0"?>
<robot name="ytree">
  <link name="base"/>
  <link name="a"><inertial><origin xyz="0.1 0 -0.4"/><mass value="2.0"/>
    <inertia ixx="0.25" ixy="0.01" ixz="0" iyy="0.3" iyz="0.02" izz="0.15"/></inertial></link>
  <link name="b"><inertial><origin xyz="0 0.2 -0.3"/><mass value="1.0"/>
    <inertia ixx="0.05" ixy="0" ixz="0" iyy="0.04" iyz="0" izz="0.03"/></inertial></link>
  <link name="c"><inertial><origin xyz="0.05 0 -0.2"/><mass value="0.7"/>
    <inertia ixx="0.025" ixy="0" ixz="0.003" iyy="0.03" iyz="0" izz="0.015"/></inertial></link>
  <link name="d"><inertial><origin xyz="0 0 -0.1"/><mass value="0.5"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
  <joint name="j1" type="continuous"><parent link="base"/><child link="a"/><axis xyz="0 0 1"/></joint>
  <joint name="j2" type="revolute"><parent link="a"/><child link="b"/><origin xyz="0.2 0 -0.8" rpy="0.3 0 0"/>
    <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="10" velocity="10"/></joint>
  <joint name="j3" type="prismatic"><parent link="a"/><child link="c"/><origin xyz="-0.2 0 -0.8" rpy="0 0.2 0.1"/>
    <axis xyz="0.6 0 0.8"/><limit lower="-1" upper="1" effort="10" velocity="10"/></joint>
  <joint name="j4" type="revolute"><parent link="c"/><child link="d"/><origin xyz="0 0.1 -0.4"/>
    <axis xyz="1 0 0"/><limit lower="-3" upper="3" effort="10" velocity="10"/></joint>
</robot>"""


@pytest.fixture(scope="module")
def tree_robot():
    return load_robot(TREE_URDF, {"gravity": [0.3, -0.2, -9.81]})


@pytest.fixture(scope="module")
def panda_robot():
    return load_robot(example_robot_urdf("panda"))


def _se3_matrix(xi):
    M = np.zeros((4, 4))
    M[:3, :3] = lie.hat(xi[:3])
    M[:3, 3] = xi[3:]
    return M


@pytest.mark.parametrize("angle", [1e-4, 1e-2, 0.7, 2.5])
def test_log_and_dlog_against_matrix_exponential(angle, rng):
    xi = rng.normal(size=6)
    xi *= angle / np.linalg.norm(xi[:3])  # principal branch: rotation angle below π
    T = expm(_se3_matrix(xi))
    assert np.allclose(lie.log_se3(T[None, :3, :3] - np.eye(3), T[None, :3, 3])[0], xi, atol=1e-13, rtol=1e-12)
    # dexp_ξ δ = (d/dε) exp(ξ + εδ) exp(−ξ) by central differences of expm; dlog_ξ must invert it.
    h = 1e-6
    dexp = np.zeros((6, 6))
    for j in range(6):
        e = np.eye(6)[j] * h
        D = (expm(_se3_matrix(xi + e)) - expm(_se3_matrix(xi - e))) / (2 * h) @ np.linalg.inv(T)
        dexp[:, j] = np.concatenate([[D[2, 1], D[0, 2], D[1, 0]], D[:3, 3]])
    assert np.allclose(lie.dlog_matrix(xi[None])[0] @ dexp, np.eye(6), atol=1e-8)


def test_momentum_derivative_against_finite_differences(rng):
    xi = rng.normal(size=(3, 6)) * 0.3
    G = np.stack([np.diag(rng.uniform(0.5, 2.0, 6)) for _ in range(3)])
    m, D = lie.momentum_and_derivative(xi, G)
    assert np.allclose(m, np.einsum("nji,njk,nk->ni", lie.dlog_matrix(xi), G, xi), atol=1e-14)
    h = 1e-6
    Dfd = np.stack(
        [
            (lie.momentum_and_derivative(xi + h * e, G)[0] - lie.momentum_and_derivative(xi - h * e, G)[0]) / (2 * h)
            for e in np.eye(6)
        ],
        axis=-1,
    )
    assert np.allclose(D, Dfd, atol=1e-8)


@pytest.mark.parametrize("which", ["panda", "tree"])
def test_kinematics_and_gravity_match_pinocchio(which, panda_robot, tree_robot, rng):
    robot = panda_robot if which == "panda" else tree_robot
    t = BodyTree(robot)
    q = rng.normal(size=robot.nq)
    model, data = robot.pin_model, robot.pin_model.createData()
    pin.forwardKinematics(model, data, q)
    fr = t.frames(q)
    for i in range(t.n):
        assert np.allclose(fr.R[i], data.oMi[i + 1].rotation, atol=1e-13)
        assert np.allclose(fr.p[i], data.oMi[i + 1].translation, atol=1e-13)
    assert np.allclose(t.gravity_torque(fr), pin.computeGeneralizedGravity(model, data, q), atol=1e-12)
    # spatial inertia about the body origin, (w, v) order, versus Pinocchio's (v, w) matrix
    for i in range(t.n):
        Gp = model.inertias[i + 1].matrix()
        assert np.allclose(t.G[i], np.block([[Gp[3:, 3:], Gp[3:, :3]], [Gp[:3, 3:], Gp[:3, :3]]]), atol=1e-14)


def _scalar_Ld(robot, q0, q1, dt):
    """Σ_i trapezoidal L_d^i (Lee2016, eq. 9) from Pinocchio placements, inertias and scipy's logm."""
    model, data = robot.pin_model, robot.pin_model.createData()
    pin.forwardKinematics(model, data, q0)
    T0 = [data.oMi[i].homogeneous.copy() for i in range(1, model.njoints)]
    V0 = pin.computePotentialEnergy(model, data, q0)
    pin.forwardKinematics(model, data, q1)
    T1 = [data.oMi[i].homogeneous.copy() for i in range(1, model.njoints)]
    V1 = pin.computePotentialEnergy(model, data, q1)
    ke = 0.0
    for i, (A, B) in enumerate(zip(T0, T1)):
        X = np.real(logm(np.linalg.inv(A) @ B)) / dt
        nu = np.concatenate([X[:3, 3], [X[2, 1], X[0, 2], X[1, 0]]])  # Pinocchio's (v, w) order
        ke += 0.5 * nu @ model.inertias[i + 1].matrix() @ nu
    return dt * ke - 0.5 * dt * (V0 + V1)


@pytest.mark.parametrize("which", ["panda", "tree"])
def test_drnea_is_the_gradient_of_the_discrete_lagrangian(which, panda_robot, tree_robot, rng):
    robot = panda_robot if which == "panda" else tree_robot
    dt, n = 0.01, robot.nq
    vi = LinearTimeVI(robot, dt)
    q0 = rng.normal(size=n) * 0.8
    q1 = q0 + dt * rng.normal(size=n) * 3
    # directional derivatives (all coordinates on the small tree; three directions on the 7-DOF arm)
    dirs = np.eye(n) if which == "tree" else rng.normal(size=(3, n))
    h = 1e-6
    D1 = np.array(
        [(_scalar_Ld(robot, q0 + h * d, q1, dt) - _scalar_Ld(robot, q0 - h * d, q1, dt)) / (2 * h) for d in dirs]
    )
    D2 = np.array(
        [(_scalar_Ld(robot, q0, q1 + h * d, dt) - _scalar_Ld(robot, q0, q1 - h * d, dt)) / (2 * h) for d in dirs]
    )
    scale = np.abs(D2).max()
    assert np.allclose(dirs @ vi.discrete_momentum(q0, q1), D2, atol=1e-7 * scale)
    # f(q1) at p = 0, u = 0, no damping is −D₁L_d(q0, q1)
    vi.damping = np.zeros(n)
    f = vi.residual(np.concatenate([q0, np.zeros(n)]), np.zeros(vi.nu), q1)
    assert np.allclose(dirs @ f, -D1, atol=1e-7 * scale)


@pytest.mark.parametrize("which", ["panda", "tree"])
def test_vectorized_drnea_equals_algorithm_2(which, panda_robot, tree_robot, rng):
    robot = panda_robot if which == "panda" else tree_robot
    dt, n = 0.005, robot.nq
    vi = LinearTimeVI(robot, dt)
    q_prev = rng.normal(size=n)
    q = q_prev + dt * rng.normal(size=n)
    q_next = q + dt * rng.normal(size=n)
    tau = rng.normal(size=vi.nu)
    Q = np.zeros(n)
    Q[vi.idx_act] = dt * tau
    Q -= robot.damping * (q_next - q)
    f_alg2 = drnea_recursive(vi.tree, q_prev, q, q_next, dt, Q)
    f_fast = vi.residual(vi.state_from_configurations(q_prev, q), tau, q_next)
    assert np.abs(f_alg2).max() > 1e-3  # a generic point, not a solution
    assert np.allclose(f_fast, f_alg2, atol=1e-12)


@pytest.mark.parametrize("which", ["panda", "tree"])
def test_exact_jacobian_against_finite_differences(which, panda_robot, tree_robot, rng):
    robot = panda_robot if which == "panda" else tree_robot
    dt, n = 0.01, robot.nq
    vi = LinearTimeVI(robot, dt, method="newton")
    x = vi.state_from_velocity(rng.normal(size=n), rng.normal(size=n))
    u = rng.normal(size=vi.nu)
    q1 = x[:n] + dt * rng.normal(size=n) * 2
    h = 1e-6
    Jfd = np.stack([(vi.residual(x, u, q1 + e) - vi.residual(x, u, q1 - e)) / (2 * h) for e in np.eye(n) * h], axis=1)
    J = vi.jacobian(x, q1)
    assert np.allclose(J, Jfd, atol=1e-6 * np.abs(J).max())
    # Alg. 4 as printed (column by column) is the same matrix as our subtree-sum evaluation
    J4 = drnea_derivative_recursive(vi.tree, x[:n], q1, dt) + np.diag(robot.damping)
    assert np.allclose(J4, J, rtol=0, atol=1e-12 * np.abs(J).max())
    alg4 = NumpyLinearTimeVI(robot, dt, method="newton", jacobian="alg4")
    assert np.allclose(alg4.jacobian(x, q1), J, rtol=0, atol=1e-12 * np.abs(J).max())
    # RIQN's approximation (Lee2016, eq. 25): J ≈ M(q_k)/Δt up to O(Δt)
    M = pin.crba(robot.pin_model, robot.pin_model.createData(), x[:n])
    M = np.triu(M) + np.triu(M, 1).T
    assert np.abs(J * dt - M).max() < 0.1 * np.abs(M).max()


def _forced_errors(robot, tau, T=1.0, steps=(40, 80, 160), half_impulse=True):
    """Final-configuration errors against DOP853 on Pinocchio's ABA with torques τ and damping c."""
    from scipy.integrate import solve_ivp

    n, m, d = robot.nq, robot.pin_model, robot.pin_model.createData()
    q0, v0 = np.array([0.2, 0.3, 0.1, -0.4]), np.array([0.5, -0.5, 0.2, 1.0])
    sol = solve_ivp(
        lambda _, y: np.concatenate([y[n:], pin.aba(m, d, y[:n], y[n:], tau - robot.damping * y[n:])]),
        (0.0, T),
        np.concatenate([q0, v0]),
        method="DOP853",
        rtol=1e-12,
        atol=1e-12,
    )
    errors = []
    for N in steps:
        vi = LinearTimeVI(robot, T / N)
        x0 = vi.state_from_velocity(q0, v0)
        if half_impulse:  # F⁺_d = 0 convention: p_k lacks half of the step's impulse (docs/concepts/integrator.md)
            x0[n:] -= 0.5 * (T / N) * (tau - robot.damping * v0)
        X, _ = vi.simulate(x0, np.tile(tau, (N, 1)))
        errors.append(np.abs(X[-1, :n] - sol.y[:n, -1]).max())
    return np.log2(np.array(errors[:-1]) / np.array(errors[1:]))


def test_forced_tree_is_second_order(tree_robot):
    """Torques on a branched tree with a prismatic joint: second order once p_0 carries the half impulse."""
    orders = _forced_errors(tree_robot, np.array([0.5, -0.3, 1.0, 0.2]))
    assert np.all((orders >= 1.8) & (orders <= 2.2)), orders


def test_damped_tree_converges_at_first_order():
    """Damping as F⁻_d = −c ⊙ (q_{k+1} − q_k), F⁺_d = 0 (MidpointVI's convention) is implicit Euler for the
    dissipative part, hence first order; the test pins that the damping term is right (it converges)."""
    robot = load_robot(
        TREE_URDF, {"gravity": [0.3, -0.2, -9.81], "damping": {"j1": 0.3, "j2": 0.2, "j3": 0.5, "j4": 0.1}}
    )
    orders = _forced_errors(robot, np.array([0.5, -0.3, 1.0, 0.2]))
    assert np.all((orders >= 0.9) & (orders <= 1.3)), orders
