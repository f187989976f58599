"""Exact linearization of the one-step map (Johnson2015, §IV–VI) against the paper and finite differences.

Every derivative is compared with central differences of ``MidpointVI.step`` (first order) or of
the exact first derivatives (second order), with a norm-relative error
‖J − J_fd‖_F / max(‖J‖_F, 1) ≤ 1e-6. Newton converges to ~1e-15, so a step of 1e-6 leaves a
round-off error ~1e-9 and a truncation error ~1e-12 in the differences.
The helpers here are shared by test_linearization_*.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from vi_control.integrators.midpoint import MidpointVI
from vi_control.linearization import linearize, second_order, second_order_contraction
from vi_control.model import load_robot
from vi_control.model.bundled import example_robot_urdf

EPS = 1e-6
RTOL = 1e-6


def rel_err(J: np.ndarray, J_ref: np.ndarray) -> float:
    return float(np.linalg.norm(J - J_ref) / max(np.linalg.norm(J_ref), 1.0))


def fd_jacobian(fun, z: np.ndarray, eps: float = EPS) -> np.ndarray:
    """Central differences of fun (array-valued) at z; column j is ∂fun/∂z_j."""
    cols = []
    for j in range(z.size):
        e = np.zeros(z.size)
        e[j] = eps
        cols.append((np.asarray(fun(z + e)) - np.asarray(fun(z - e))) / (2 * eps))
    return np.stack(cols, axis=-1)


def fd_first_order(vi: MidpointVI, x: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[A B] by central differences of step (2·(nx+nu) steps)."""
    z = np.concatenate([x, u])
    J = fd_jacobian(lambda zz: vi.step(zz[: vi.nx], zz[vi.nx :]), z)
    return J[:, : vi.nx], J[:, vi.nx :]


def fd_contraction(vi: MidpointVI, x: np.ndarray, u: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """∂/∂z of cᵀ[A B] by central differences: the (nz, nz) Hessian of cᵀf (Johnson2015, eqs. 16–27)."""
    z = np.concatenate([x, u])

    def grad(zz):
        lin = linearize(vi, zz[: vi.nx], zz[vi.nx :])
        return cov @ np.hstack([lin.A, lin.B])

    return fd_jacobian(grad, z)


def check_first_order(vi: MidpointVI, x: np.ndarray, u: np.ndarray) -> None:
    lin = linearize(vi, x, u)
    A_fd, B_fd = fd_first_order(vi, x, u)
    assert rel_err(lin.A, A_fd) <= RTOL, rel_err(lin.A, A_fd)
    if vi.nu:
        assert rel_err(lin.B, B_fd) <= RTOL, rel_err(lin.B, B_fd)
    assert lin.rcond > 1e-10


def check_contraction(vi: MidpointVI, x: np.ndarray, u: np.ndarray, cov: np.ndarray) -> None:
    Hxx, Hxu, Huu = second_order_contraction(vi, x, u, cov)
    H = np.block([[Hxx, Hxu], [Hxu.T, Huu]])
    H_fd = fd_contraction(vi, x, u, cov)
    assert rel_err(H, H_fd) <= RTOL, rel_err(H, H_fd)
    assert np.allclose(H, H.T, atol=1e-9 * max(1.0, np.abs(H).max()))


def check_full_second_order(vi: MidpointVI, x: np.ndarray, u: np.ndarray) -> None:
    """f_xx, f_xu, f_uu against differences of A and B; index 0 is the output component."""
    fxx, fxu, fuu = second_order(vi, x, u)
    nx = vi.nx

    def jac(zz):
        lin = linearize(vi, zz[:nx], zz[nx:])
        return np.hstack([lin.A, lin.B])

    T = fd_jacobian(jac, np.concatenate([x, u]))  # T[i, a, b] = ∂²f_i/∂z_a∂z_b
    assert rel_err(fxx, T[:, :nx, :nx]) <= RTOL
    if vi.nu:
        assert rel_err(fxu, T[:, :nx, nx:]) <= RTOL
        assert rel_err(fuu, T[:, nx:, nx:]) <= RTOL


# ---- pendulum: Johnson2015, §II-A, §IV-A, REFERENCE §1 ------------------------------------------
def test_pendulum_reference_linearization(pendulum_vi):
    x, u = np.array([0.2, 0.5]), np.array([0.8])
    lin = linearize(pendulum_vi, x, u)
    A_ref = np.array([[0.95333434, 0.09766672], [-0.93331323, 0.95333434]])
    B_ref = np.array([[0.00976667], [0.09533343]])
    np.testing.assert_allclose(lin.A, A_ref, atol=1e-8, rtol=1e-6)
    np.testing.assert_allclose(lin.B, B_ref, atol=1e-8, rtol=1e-6)
    assert np.linalg.matrix_rank(np.hstack([lin.B, lin.A @ lin.B])) == 2
    # Symplecticity of the unforced map (Hamiltonian flow): det A = 1 for the midpoint VI.
    assert abs(np.linalg.det(lin.A) - 1.0) < 1e-12


def test_pendulum_analytic_second_order(pendulum_vi):
    """Closed form of Johnson2015, eq. 8 for the pendulum: M_{k+1} = −1/Δt − (Δt g/4) cos θ̄ (θ̄ midpoint)."""
    x, u = np.array([0.2, 0.5]), np.array([0.8])
    check_first_order(pendulum_vi, x, u)
    check_full_second_order(pendulum_vi, x, u)
    r = pendulum_vi.solve(x, u)
    Ry = np.array(pendulum_vi.functions["linearize"](r.y, np.concatenate([x, u]))[0])
    dt, g, tbar = 0.1, 9.8, 0.5 * (0.2 + r.x[0])
    assert Ry[0, 0] == pytest.approx(-1 / dt - dt * g / 4 * np.cos(tbar), rel=1e-13)


@pytest.mark.parametrize("seed", [0, 1])
def test_pendulum_contraction(pendulum_vi, seed):
    rng = np.random.default_rng(seed)
    x, u = np.array([rng.uniform(-3, 3), rng.uniform(-2, 2)]), rng.normal(size=1)
    check_contraction(pendulum_vi, x, u, rng.normal(size=2))


# ---- panda (example-robot-data, 7 DOF) ----------------------------------------------------------
@pytest.fixture(scope="module")
def panda_vi():
    # VM evaluation: gcc would take ~1 min on a cold cache; pendulum, cart-pole and four-bar cover the C path.
    return MidpointVI(load_robot(example_robot_urdf("panda")), 0.01, compile=False)


@pytest.fixture(scope="module")
def panda_point(panda_vi):
    rng = np.random.default_rng(7)
    q = np.array([0.1, -0.5, 0.2, -2.0, 0.1, 1.5, 0.7]) + 0.1 * rng.normal(size=7)
    x = panda_vi.state_from_velocity(q, rng.normal(size=7))
    return x, rng.normal(size=7)


def test_panda_first_order(panda_vi, panda_point):
    check_first_order(panda_vi, *panda_point)


def test_panda_second_order(panda_vi, panda_point):
    x, u = panda_point
    check_full_second_order(panda_vi, x, u)
    rng = np.random.default_rng(3)
    cov = rng.normal(size=panda_vi.nx)
    # The full tensor and the contraction agree (both exact): Σᵢ cᵢ f_xx[i] = H_xx(c).
    fxx, fxu, fuu = second_order(panda_vi, x, u)
    Hxx, Hxu, Huu = second_order_contraction(panda_vi, x, u, cov)
    np.testing.assert_allclose(np.tensordot(cov, fxx, 1), Hxx, atol=1e-9 * np.abs(Hxx).max())
    np.testing.assert_allclose(np.tensordot(cov, fuu, 1), Huu, atol=1e-9 * max(np.abs(Huu).max(), 1e-12))
    check_contraction(panda_vi, x, u, cov)
