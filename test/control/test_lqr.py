"""Discrete LQR: Riccati recursion (Johnson2015, eq. 36) vs a batch least-squares solve, DLQR vs scipy's DARE.

The recursions are the package's C (control/csrc/lqr_kernel.c, the one implementation); their independent reference
is the numpy oracle test/support/lqr_oracle.py (the same formulas), compared here to round-off.
"""

import numpy as np
import pytest
from lqr_oracle import dlqr_numpy, tv_lqr_numpy
from scipy.linalg import solve_discrete_are

from vi_control.control import lqr
from vi_control.control.hold import equilibrium_state, hold_gain, holding_input
from vi_control.control.lqr import dlqr, tv_lqr
from vi_control.control.plan import state_error
from vi_control.linearization import linearize
from vi_control.mechanics import codegen


def _random_system(rng, N, nx, nu):
    A = np.eye(nx) + 0.3 * rng.standard_normal((N, nx, nx))
    B = rng.standard_normal((N, nx, nu))
    return A, B


def test_tv_lqr_matches_the_batch_solution_of_the_lq_problem(rng):
    """The Riccati gains (eq. 36) reproduce the optimal inputs and cost of the LQ problem solved as one
    least-squares problem over all inputs (z = Φ z₀ + Γ μ) — an independent computation."""
    N, nx, nu = 12, 4, 2
    A, B = _random_system(rng, N, nx, nu)
    Q, R, Qf = np.diag([1.0, 2.0, 0.5, 1.0]), np.diag([0.3, 0.7]), 5.0 * np.eye(nx)
    K, P = tv_lqr(A, B, Q, R, Qf)
    Phi = np.zeros(((N + 1) * nx, nx))
    Gam = np.zeros(((N + 1) * nx, N * nu))
    Phi[:nx] = np.eye(nx)
    for k in range(N):
        Phi[(k + 1) * nx : (k + 2) * nx] = A[k] @ Phi[k * nx : (k + 1) * nx]
        Gam[(k + 1) * nx : (k + 2) * nx] = A[k] @ Gam[k * nx : (k + 1) * nx]
        Gam[(k + 1) * nx : (k + 2) * nx, k * nu : (k + 1) * nu] = B[k]
    Qbar = np.kron(np.eye(N + 1), Q)
    Qbar[N * nx :, N * nx :] = Qf
    Rbar = np.kron(np.eye(N), R)
    z0 = rng.standard_normal(nx)
    H = Gam.T @ Qbar @ Gam + Rbar
    mu = -np.linalg.solve(H, Gam.T @ Qbar @ Phi @ z0)
    z = (Phi @ z0 + Gam @ mu).reshape(N + 1, nx)
    J = z.ravel() @ Qbar @ z.ravel() + mu @ Rbar @ mu
    assert J == pytest.approx(z0 @ P[0] @ z0, rel=1e-10)
    mu = mu.reshape(N, nu)
    for k in range(N):  # μ_k = 𝒦(k)(0 − z_k): the sign convention u = u_ref + K (x_ref − x)
        assert np.allclose(mu[k], K[k] @ (0 - z[k]), atol=1e-10)
    assert np.allclose(P[N], Qf)


def _rel(a, b) -> float:
    return float(np.abs(np.asarray(a) - b).max() / np.abs(b).max())


def _spd_stack(rng, N, n):
    """N random symmetric positive definite (n, n) weights, full (not diagonal) and different per stage."""
    M = rng.standard_normal((N, n, n))
    return M @ M.transpose(0, 2, 1) + 0.1 * np.eye(n)


def test_tv_lqr_accepts_stacked_weights(rng):
    A, B = _random_system(rng, 5, 3, 1)
    K1, P1 = tv_lqr(A, B, np.ones(3), 0.5, 2.0)
    K2, P2 = tv_lqr(A, B, np.tile(np.eye(3), (5, 1, 1)), np.full((5, 1, 1), 0.5), 2.0 * np.eye(3))
    assert np.array_equal(K1, K2) and np.array_equal(P1, P2)  # a stack of equal weights: the same operations


def test_tv_lqr_is_the_numpy_oracle_for_constant_and_stacked_weights(rng):
    """The C recursion against the oracle's (lqr_oracle.tv_lqr_numpy) to round-off, for one weight at every stage
    and for per-stage stacks of Q, of R and of both (the C's weight strides 0 and n²)."""
    N, nx, nu = 40, 6, 2
    A = np.eye(nx) + 0.3 * rng.standard_normal((N, nx, nx))
    B = rng.standard_normal((N, nx, nu))
    Q, R, Qf = np.diag(rng.uniform(1, 2, nx)), np.diag([0.3, 0.5]), 10 * np.eye(nx)
    Qs, Rs = _spd_stack(rng, N, nx), _spd_stack(rng, N, nu)
    for q, r in ((Q, R), (Qs, R), (Q, Rs), (Qs, Rs)):
        K, P = tv_lqr(A, B, q, r, Qf)
        K_n, P_n = tv_lqr_numpy(A, B, q, r, Qf)
        assert _rel(K, K_n) < 1e-12 and _rel(P, P_n) < 1e-12, (np.ndim(q), np.ndim(r))
    with pytest.raises(ValueError, match="R: must be symmetric positive definite"):  # (R + BᵀPB singular)
        tv_lqr(A, np.zeros_like(B), Q, np.zeros((nu, nu)), Qf)


def test_tv_lqr_that_leaves_double_range_names_the_step():
    """|A| = 1e200: P overflows at the last stage; the recursion stops there and says so (no inf or NaN gains)."""
    A, B = np.full((5, 2, 2), 1e200), np.ones((5, 2, 1))
    with pytest.raises(
        ValueError, match=r"^A, B: the Riccati recursion \(Johnson2015, eq\. 36\) leaves double range at step 4 "
    ):
        tv_lqr(A, B, np.eye(2), 1.0, np.eye(2))


def test_dlqr_is_the_numpy_oracle_and_scipys_dare(rng):
    """The hold gain's DLQR in C: the oracle's doubling algorithm (lqr_oracle.dlqr_numpy) to round-off, both at
    scipy's DARE solution; an unstabilizable mode and a singular R refused by both."""
    nx, nu = 8, 3
    A = np.eye(nx) + 0.2 * rng.standard_normal((nx, nx))  # unstable modes, stabilizable through a random B
    B = rng.standard_normal((nx, nu))
    Q, R = np.diag(rng.uniform(1, 2, nx)), np.diag([0.3, 0.5, 0.7])
    K, P = dlqr(A, B, Q, R)
    K_n, P_n = dlqr_numpy(A, B, Q, R)
    assert _rel(K, K_n) < 1e-12 and _rel(P, P_n) < 1e-12
    assert _rel(P, solve_discrete_are(A, B, Q, R)) < 1e-9
    A_bad = A.copy()
    A_bad[0], A_bad[:, 0] = 0.0, 0.0
    A_bad[0, 0] = 1.5  # an unstable mode no input reaches
    B_bad = B.copy()
    B_bad[0] = 0.0
    for solve in (dlqr, dlqr_numpy):
        with pytest.raises(np.linalg.LinAlgError, match="did not converge"):
            solve(A_bad, B_bad, Q, R)
        with pytest.raises(ValueError, match="R: must be symmetric positive definite"):  # before any C runs
            solve(A, B, Q, np.zeros((nu, nu)))


def test_without_a_c_compiler_the_gains_refuse_naming_the_fix(monkeypatch):
    """The C is the one implementation: without a compiler (and no library loaded yet) the gains are refused with
    the fix, not computed some other way (test_codegen_cache.py: an empty PATH, in a fresh process)."""
    monkeypatch.setattr(lqr, "_lib", None)
    monkeypatch.setattr(codegen, "compiler", lambda: None)
    A1, B1 = np.array([[1.0, 0.1], [0.0, 1.0]]), np.array([[0.0], [0.1]])
    with pytest.raises(codegen.CompilerRequiredError, match=r"needs a C compiler: the LQR recursions.*install gcc"):
        dlqr(A1, B1, 1.0, 1.0)
    with pytest.raises(codegen.CompilerRequiredError, match="tv_lqr, dlqr"):
        tv_lqr(np.tile(A1, (3, 1, 1)), np.tile(B1, (3, 1, 1)), 1.0, 1.0, 1.0)


@pytest.mark.parametrize("nx, nu", [(2, 1), (4, 1), (6, 3)])
def test_dlqr_matches_scipy_dare(rng, nx, nu):
    A = np.eye(nx) + 0.4 * rng.standard_normal((nx, nx))  # generally unstable
    B = rng.standard_normal((nx, nu))
    Q, R = np.diag(rng.uniform(0.1, 10, nx)), np.diag(rng.uniform(0.1, 2, nu))
    K, P = dlqr(A, B, Q, R)
    P_ref = solve_discrete_are(A, B, Q, R)
    assert np.allclose(P, P_ref, rtol=1e-9, atol=1e-9 * np.abs(P_ref).max())
    assert np.allclose(K, np.linalg.solve(R + B.T @ P_ref @ B, B.T @ P_ref @ A), rtol=1e-8, atol=1e-10)
    assert np.abs(np.linalg.eigvals(A - B @ K)).max() < 1.0


@pytest.mark.parametrize("scale", [2.0**-60, 2.0**-30, 2.0**30])
def test_dlqr_gain_does_not_depend_on_the_unit_of_the_cost(rng, scale):
    """K depends on Q and R only through their ratio: weights × s give the same K and P × s (the C and the oracle).
    With the absolute floor of before (tol·(1 + |P|)) weights of 2⁻⁶⁰ stopped after one sweep, K wrong by 100 %."""
    A = np.eye(4) + 0.4 * rng.standard_normal((4, 4))
    B = rng.standard_normal((4, 2))
    Q, R = np.diag(rng.uniform(0.1, 10, 4)), np.diag(rng.uniform(0.1, 2, 2))
    K1, P1 = dlqr(A, B, Q, R)
    for solve in (dlqr, dlqr_numpy):
        K, P = solve(A, B, scale * Q, scale * R)
        assert np.abs(K - K1).max() <= 1e-10 * np.abs(K1).max(), solve
        assert np.abs(P / scale - P1).max() <= 1e-10 * np.abs(P1).max(), solve


def test_long_horizon_tv_lqr_approaches_dlqr(rng):
    A1 = np.array([[1.1, 0.1], [0.0, 0.95]])
    B1 = np.array([[0.0], [0.1]])
    N = 400
    K, P = tv_lqr(np.tile(A1, (N, 1, 1)), np.tile(B1, (N, 1, 1)), np.eye(2), 0.1, np.eye(2))
    Kinf, Pinf = dlqr(A1, B1, np.eye(2), 0.1)
    assert np.allclose(K[0], Kinf, rtol=1e-8) and np.allclose(P[0], Pinf, rtol=1e-8)


def test_dlqr_rejects_an_unstabilizable_system():
    A = np.diag([2.0, 0.5])
    B = np.array([[0.0], [1.0]])  # the unstable mode is not reachable
    with pytest.raises(np.linalg.LinAlgError):
        dlqr(A, B, np.eye(2), 1.0)


def test_state_error_wraps_continuous_angles_only():
    mask = np.array([True, False])
    x_ref = np.array([np.pi, np.pi, 0.0, 0.0])
    x = np.array([-np.pi + 0.1, np.pi - 0.2, 7.0, -7.0])
    e = state_error(x_ref, x, mask)
    # θ_ref − θ = 2π − 0.1 ≡ −0.1 on the continuous joint; the other joint and momenta are untouched.
    assert np.allclose(e, [-0.1, 0.2, -7.0, 7.0])
    X = np.tile(x, (3, 1)) + np.array([[0.0, 0, 0, 0], [2 * np.pi, 0, 0, 0], [-4 * np.pi, 0, 0, 0]])
    assert np.allclose(state_error(x_ref, X, mask), e)  # full turns make no error
    assert np.allclose(state_error(x_ref, x, None), x_ref - x)
    assert np.allclose(state_error(x_ref[:2], x[:2], mask), e[:2])  # configurations alone
    with pytest.raises(ValueError, match="2·nq"):
        state_error(x_ref[:3], x[:3], mask)


def test_hold_of_a_tilted_pendulum_is_gravity_compensation(pendulum_vi):
    """Holding θ needs τ = m g l sin θ (Johnson2015 pendulum: m = l = 1, g = 9.8), and the held state is a
    fixed point of the midpoint step; its momentum is the discrete one, −(Δt/2)·∇V ≠ 0."""
    q = np.array([0.7])
    u, residual = holding_input(pendulum_vi, q)
    assert u[0] == pytest.approx(9.8 * np.sin(0.7), rel=1e-12) and residual == 0.0
    x_eq = equilibrium_state(pendulum_vi, q)
    assert x_eq[1] == pytest.approx(-0.05 * 9.8 * np.sin(0.7), rel=1e-12)
    assert np.allclose(pendulum_vi.step(x_eq, u), x_eq, atol=1e-12)
    K, x_eq2, u_eq = hold_gain(pendulum_vi, q, np.diag([10.0, 1.0]), 1.0)
    lin = linearize(pendulum_vi, x_eq, u)
    assert np.abs(np.linalg.eigvals(lin.A - lin.B @ K)).max() < 1.0
