"""The marionette of Johnson2015, §VIII-B (REFERENCE §3): model, consistent initial state, and its exact
linearization (80 states, 18 prescribed-string inputs, 6 constraints) against finite differences.

The default run evaluates the CasADi functions in the virtual machine (``compile=False``): the same
expressions as the generated C, built in under a second, so the test never waits for gcc on the
40-DOF functions (~4 min when the cache is cold). The slow case checks the compiled path agrees.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
import yaml
from test_linearization import fd_first_order, fd_jacobian, rel_err

from vi_control.integrators.midpoint import MidpointVI
from vi_control.linearization import linearize, linearize_trajectory, second_order, second_order_contraction
from vi_control.mechanics.constraints import consistent_state
from vi_control.mechanics.symbolic import ContinuousDynamics
from vi_control.model import load_robot
from vi_control.model import marionette as marionette_model
from vi_control.model.bundled import bundled_config, bundled_urdf
from vi_control.model.marionette import (
    STRING_DIRECTIONS,
    STRING_LENGTH,
    STRINGS,
    default_controls,
    marionette_system,
    marionette_urdf,
)

DT = 0.01


@pytest.fixture(scope="module")
def robot():
    return load_robot(bundled_urdf("marionette"), bundled_config("marionette"))


@pytest.fixture(scope="module")
def vi(robot):
    return MidpointVI(robot, DT, compile=False)


@pytest.fixture(scope="module")
def point(robot, vi):
    """A moving state on the constraint manifold and the next string positions (hands pulled up)."""
    x0 = consistent_state(robot, *marionette_model.initial_guess(robot))
    rho = x0[: vi.nq][vi.idx_k]
    X = [x0]
    for k in range(3):  # let it start swinging from rest under a string motion
        X.append(vi.step(X[-1], rho + 0.02 * (k + 1) * np.tile([0.0, 0.3, 1.0], 6), step_index=k))
    return X[-1], rho + 0.1 * np.tile([0.0, 0.3, 1.0], 6)


def test_bundled_files_are_generated(robot):
    root = Path(bundled_urdf("marionette")).parents[1]
    assert (root / "urdf" / "marionette.urdf").read_text() == marionette_urdf()
    cfg = yaml.safe_load((root / "config" / "marionette.yaml").read_text())
    assert cfg == marionette_system()


def test_marionette_dimensions(robot, vi):
    """Johnson2015, §VIII-B: 22 dynamic + 18 kinematic variables, 6 constraints => 80 states, 18 inputs."""
    assert (robot.nq, len(robot.dynamic_joints), len(robot.prescribed), robot.n_constraints) == (40, 22, 18, 6)
    assert (vi.nx, vi.nu, vi.n_torques) == (80, 18, 0)
    masses = [robot.pin_model.inertias[i].mass for i in range(1, robot.pin_model.njoints)]
    assert min(masses) > 0
    # The dynamic block of M(q) is positive definite at the hanging pose (no massless direction).
    M = ContinuousDynamics(robot).mass_matrix(consistent_state(robot, *marionette_model.initial_guess(robot))[:40])
    d = vi.idx_d
    assert np.linalg.eigvalsh(M[np.ix_(d, d)]).min() > 1e-6


def test_initial_state_consistent(robot):
    dyn = ContinuousDynamics(robot)
    x0 = consistent_state(robot, *marionette_model.initial_guess(robot))
    q0 = x0[:40]
    assert np.abs(dyn.constraint(q0)).max() < 1e-12
    assert np.all(x0[40:] == 0)
    idx_k = [robot.joint_index(n) for n in robot.prescribed]
    np.testing.assert_array_equal(q0[idx_k], default_controls(robot))
    # Six independent strings: Dh over the dynamic coordinates has full row rank.
    Dh = dyn.constraint_jacobian(q0)[:, [i for i in range(40) if i not in idx_k]]
    sv = np.linalg.svd(Dh, compute_uv=False)
    assert sv[-1] > 1e-2 * sv[0]
    # Independently of our symbolic tree: Pinocchio's forward kinematics puts every attachment exactly
    # one string length from its control point.
    model, data = robot.pin_model, robot.pin_model.createData()
    pin.framesForwardKinematics(model, data, q0)
    for name, (link, pt) in STRINGS.items():
        body = data.oMf[model.getFrameId(link)].act(np.array(pt))
        end = data.oMf[model.getFrameId(f"string_{name}_end")].translation
        assert np.linalg.norm(body - end) == pytest.approx(STRING_LENGTH, abs=1e-12)


def test_marionette_first_order(vi, point):
    x, u = point
    lin = linearize(vi, x, u)
    A_fd, B_fd = fd_first_order(vi, x, u)
    assert rel_err(lin.A, A_fd) <= 1e-6, rel_err(lin.A, A_fd)
    assert rel_err(lin.B, B_fd) <= 1e-6, rel_err(lin.B, B_fd)
    assert lin.rcond > 1e-8


def test_marionette_prescribed_inputs(vi, point):
    """B columns of ρ_{k+1} (Johnson2015, ref. [32] kinematic inputs): ∂q_{k+1}/∂ρ = I and the kinematic
    'momentum' slot (ρ_{k+1} − ρ_k)/Δt gives I/Δt on the string rows; the body rows vs differences."""
    x, u = point
    lin = linearize(vi, x, u)
    nq, k, d = vi.nq, vi.idx_k, vi.idx_d
    np.testing.assert_allclose(lin.B[k], np.eye(18), atol=1e-14)
    np.testing.assert_allclose(lin.B[nq + k], np.eye(18) / DT, atol=1e-10)
    _, B_fd = fd_first_order(vi, x, u)
    assert rel_err(lin.B[d], B_fd[d]) <= 1e-6
    assert rel_err(lin.B[nq + d], B_fd[nq + d]) <= 1e-6
    assert np.abs(lin.B[np.r_[d, nq + d]]).max() > 1.0  # the strings do move the body
    # The kinematic velocities p_k[prescribed] never enter the step.
    assert np.abs(lin.A[:, nq + k]).max() == 0.0


def test_marionette_stays_on_constraint(robot, vi, point):
    x, u = point
    lin = linearize(vi, x, u)
    dyn = ContinuousDynamics(robot)
    q1 = vi.step(x, u)[:40]
    J_q = np.hstack([lin.A, lin.B])[:40]
    assert np.abs(dyn.constraint_jacobian(q1) @ J_q).max() <= 1e-9 * np.abs(J_q).max()


def test_marionette_paper_string_motion(robot, vi):
    """Johnson2015, §VIII-B's reference motion: arm and leg strings driven by ±0.1 sin(0.6πt) (here along each
    string, 2 s). The constraints hold to round-off and no step of the trajectory is near-singular."""
    x0 = consistent_state(robot, *marionette_model.initial_guess(robot))
    N = 200
    t = DT * np.arange(1, N + 1)
    U = np.tile(x0[:40][vi.idx_k], (N, 1))
    for name, sign in (("left_hand", 1), ("right_hand", -1), ("left_knee", 1), ("right_knee", -1)):
        d = np.array(STRING_DIRECTIONS[name]) / np.linalg.norm(STRING_DIRECTIONS[name])
        for j, a in enumerate("xyz"):
            U[:, robot.prescribed.index(f"string_{name}_{a}")] += sign * 0.1 * np.sin(0.6 * np.pi * t) * d[j]
    X, _ = vi.simulate(x0, U)
    assert max(np.abs(vi.constraint(x[:40])).max() for x in X) < 1e-10
    assert np.abs(X[-1, :22] - x0[:22]).max() > 0.05  # the puppet does move
    traj = linearize_trajectory(vi, X[:41], U[:40])
    assert traj.near_singular.size == 0 and traj.rcond.min() > 1e-7


@pytest.fixture(scope="module")
def fd_tensor(vi, point):
    """∂[A B]/∂z by central differences of the exact first derivatives: T[i, a, b] = ∂²fᵢ/∂z_a∂z_b."""
    x, u = point

    def jac(zz):
        lin = linearize(vi, zz[: vi.nx], zz[vi.nx :])
        return np.hstack([lin.A, lin.B])

    return fd_jacobian(jac, np.concatenate([x, u]))


@pytest.mark.parametrize("seed", [40, 41])
def test_marionette_second_order_contraction(vi, point, fd_tensor, seed):
    x, u = point
    cov = np.random.default_rng(seed).normal(size=vi.nx)
    Hxx, Hxu, Huu = second_order_contraction(vi, x, u, cov)
    H_fd = np.tensordot(cov, fd_tensor, axes=1)
    H = np.block([[Hxx, Hxu], [Hxu.T, Huu]])
    assert rel_err(H, H_fd) <= 1e-6, rel_err(H, H_fd)


def test_marionette_full_second_order(vi, point, fd_tensor):
    x, u = point
    fxx, fxu, fuu = second_order(vi, x, u)
    nx = vi.nx
    for got, ref in ((fxx, fd_tensor[:, :nx, :nx]), (fxu, fd_tensor[:, :nx, nx:]), (fuu, fd_tensor[:, nx:, nx:])):
        assert rel_err(got, ref) <= 1e-6, rel_err(got, ref)


@pytest.mark.slow
def test_marionette_compiled_matches_vm(robot, vi, point):
    """Generated C (benchmarks/bench_linearization.py times it) gives the VM's numbers."""
    x, u = point
    vic = MidpointVI(robot, DT, compile=True)
    a, b = linearize(vi, x, u), linearize(vic, x, u)
    assert rel_err(b.A, a.A) < 1e-12 and rel_err(b.B, a.B) < 1e-12
    c = np.random.default_rng(1).normal(size=80)
    for h1, h2 in zip(second_order_contraction(vi, x, u, c), second_order_contraction(vic, x, u, c)):
        assert rel_err(h2, h1) < 1e-10
