"""Geometric structure of the midpoint VI's one-step map: symplecticity and discrete Noether momentum.

The one-step map is checked by central finite differences of ``step`` (independent of the exact
linearization), and momentum against Pinocchio's own centroidal momentum.
"""

import numpy as np
import pinocchio as pin
import pytest

from vi_control.integrators.midpoint import MidpointVI
from vi_control.linearization import linearize
from vi_control.model import load_robot
from vi_control.model.bundled import bundled_urdf, example_robot_urdf
from vi_control.model.generate import planar_chain_urdf


def step_jacobian_fd(vi: MidpointVI, x: np.ndarray, u: np.ndarray, h: float = 1e-4) -> np.ndarray:
    """∂x_{k+1}/∂x_k by fourth-order central differences of ``step`` (truncation ~h⁴, round-off ~1e-15/h)."""
    J = np.zeros((vi.nx, vi.nx))
    for i in range(vi.nx):
        e = np.zeros(vi.nx)
        e[i] = h
        f = [vi.step(x + s * e, u) for s in (2, 1, -1, -2)]
        J[:, i] = (8 * (f[1] - f[2]) - f[0] + f[3]) / (12 * h)
    return J


def omega(nq: int) -> np.ndarray:
    """Canonical symplectic form on x = (q, p)."""
    return np.block([[np.zeros((nq, nq)), np.eye(nq)], [-np.eye(nq), np.zeros((nq, nq))]])


def _undamped(name: str) -> MidpointVI:
    xml = example_robot_urdf(name)
    robot = load_robot(xml, {"damping": {j: 0.0 for j in load_robot(xml).joint_names}})
    # tol 1e-14: finite differences divide the Newton residual by h, the map itself is what is tested.
    # A few dozen steps: the CasADi VM is cheaper than compiling this model's C (~40 s for panda).
    return MidpointVI(robot, 0.01, tol=1e-14, compile=False)


@pytest.mark.parametrize("name", ["double_pendulum", "panda"])
def test_one_step_map_is_symplectic(name, rng):
    """Jᵀ Ω J = Ω for the conservative forced map at fixed u (Johnson2015, §II: the DEL map is symplectic)."""
    vi = _undamped(name)
    W = omega(vi.nq)
    for _ in range(2):
        q, qd = rng.uniform(-1.5, 1.5, vi.nq), rng.uniform(-2, 2, vi.nq)
        x, u = vi.state_from_velocity(q, qd), rng.uniform(-5, 5, vi.nu)
        J = step_jacobian_fd(vi, x, u)
        assert np.abs(J.T @ W @ J - W).max() < 1e-8
        assert np.abs(J - np.eye(vi.nx)).max() > 1e-2  # a real map, not the identity
        A = linearize(vi, x, u).A  # the exact linearization has the same structure, to round-off
        assert np.abs(A.T @ W @ A - W).max() < 1e-11
        assert A == pytest.approx(J, abs=1e-7)


def test_damped_map_contracts_phase_volume_exactly():
    """With viscous damping c the pendulum map is not symplectic: differentiating eq. 2a,
    det ∂x_{k+1}/∂x_k = D₁₂L_d / (D₁₂L_d − c), D₁₂L_d = −1/Δt − (gΔt/4) cos((θ_k+θ_{k+1})/2)."""
    g, c, dt = 9.8, 0.5, 0.05
    vi = MidpointVI(
        load_robot(bundled_urdf("pendulum"), {"gravity": [0, 0, -g], "damping": {"theta": c}}), dt, tol=1e-14
    )
    for x in ([0.3, 0.0], [2.0, -1.5], [-1.0, 4.0]):
        x, u = np.array(x), np.zeros(vi.nu)
        J = step_jacobian_fd(vi, x, u)
        x1 = vi.step(x, u)
        d12 = -1 / dt - g * dt / 4 * np.cos((x[0] + x1[0]) / 2)
        assert np.linalg.det(J) == pytest.approx(d12 / (d12 - c), abs=1e-9)
        assert np.abs(J.T @ omega(1) @ J - omega(1)).max() > 1e-3


def test_angular_momentum_about_the_pivot_is_conserved():
    """Planar 4-link chain, gravity off, base joint at a fixed pivot. With relative joint angles a rigid
    rotation of the whole chain is q → q + ε e₁, which leaves L (and the midpoint L_d) invariant, so
    discrete Noether gives p₁ = D₂L_d·e₁ = −D₁L_d·e₁ conserved exactly (Johnson2015, eq. 2). p₁ is the
    chain's angular momentum about the pivot: checked against Pinocchio's centroidal momentum."""
    robot = load_robot(planar_chain_urdf(4), {"gravity": [0, 0, 0]})
    vi = MidpointVI(robot, 0.01, tol=1e-14)
    # |p₁| ≈ 1: the drift left is round-off, ~5e-15·|p₁| per step (measured), so 1e-10 needs |p₁| ≲ 2
    q0, qd0, e1 = np.array([0.3, -0.8, 1.2, 0.5]), np.array([0.0, -1.0, 3.0, -1.5]), np.eye(4)[0]
    # add the rigid rotation rate that makes p₁ = 1 (p is linear in q̇)
    qd0 += (1.0 - vi.state_from_velocity(q0, qd0)[4]) / vi.state_from_velocity(q0, e1)[4] * e1
    x0 = vi.state_from_velocity(q0, qd0)
    n = 10_000
    X, _ = vi.simulate(x0, np.zeros((n, vi.nu)))
    p1 = X[:, vi.nq]
    assert p1[0] == pytest.approx(1.0, abs=1e-12)
    assert np.abs(p1 - p1[0]).max() < 1e-10
    assert np.abs(X[:, vi.nq + 1 :] - X[0, vi.nq + 1 :]).max() > 0.5  # the other momenta do change
    model, data = robot.pin_model, robot.create_data()
    for x in X[:: n // 5]:
        q, v = x[: vi.nq], vi.velocity(x)
        pin.computeCentroidalMomentum(model, data, q, v)
        mass = sum(model.inertias[i].mass for i in range(1, model.njoints))
        # about the pivot (origin): L_O = L_com + c × m v_com; y is the hinge axis
        L_origin = data.hg.angular + np.cross(data.com[0], data.hg.linear)
        assert data.hg.linear == pytest.approx(mass * data.vcom[0], abs=1e-12)
        assert L_origin[1] == pytest.approx(p1[0], abs=1e-10)


def test_simulate_without_inputs_and_rejects_misshaped_inputs():
    """nu = 0 (nothing actuated) rolls out by step count; misshaped inputs are an error, not zero steps."""

    robot = load_robot(planar_chain_urdf(2), {"actuated": [], "gravity": [0.0, 0.0, -9.81]})
    vi = MidpointVI(robot, 0.01)
    x0 = vi.state_from_velocity(np.array([0.4, -0.3]), np.zeros(2))
    X, lams = vi.simulate(x0, steps=50)
    assert X.shape == (51, 4) and lams.shape == (50, 0)
    x = x0
    for _ in range(50):
        x = vi.step(x)
    assert np.array_equal(X[-1], x)
    with pytest.raises(ValueError, match="steps"):
        vi.simulate(x0)
    vi1 = MidpointVI(load_robot(planar_chain_urdf(2)), 0.01)
    with pytest.raises(ValueError, match="shape"):
        vi1.simulate(vi1.state_from_velocity(np.zeros(2), np.zeros(2)), np.zeros((5, 0)))
