"""Discrete LQR about a trajectory (seed 000 §VIII-A, eq. 36) and about an equilibrium.

Sign convention of the whole project (Plan, controller): u = u_ref + K (x_ref − x), so K here is
the seed's 𝒦(k) = [R + BᵀP_{k+1}B]⁻¹ BᵀP_{k+1}A (the text after eq. 36 prints BᵀPB, a typo: the
gain that minimizes the cost of eq. 36's LQ problem has A on the right).
"""

from __future__ import annotations

import numpy as np


def _as_weight(W: np.ndarray | float, n: int) -> np.ndarray:
    W = np.asarray(W, float)
    if W.ndim == 0:
        return float(W) * np.eye(n)
    if W.ndim == 1:
        return np.diag(W)
    return W


def _gain(A: np.ndarray, B: np.ndarray, R: np.ndarray, P: np.ndarray) -> np.ndarray:
    """𝒦 = [R + BᵀPB]⁻¹ BᵀPA (seed 000, gain after eq. 36), by an LU solve of the symmetrized R + BᵀPB
    (positive definite for R ≻ 0; a Cholesky would refuse the PSD R = 0 case that LU still solves)."""
    S = R + B.T @ P @ B
    return np.linalg.solve(0.5 * (S + S.T), B.T @ P @ A)


def tv_lqr(A: np.ndarray, B: np.ndarray, Q: np.ndarray | float, R: np.ndarray | float,
           Qf: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
    """Finite-horizon time-varying LQR by the discrete Riccati recursion (seed 000 eq. 36a–b).

    A: (N, nx, nx), B: (N, nx, nu); Q, R: one weight for all k (scalar, diagonal or matrix) or a
    stack (N, n, n); Qf terminal. Returns K (N, nu, nx) with u = u_ref + K (x_ref − x) and the
    cost-to-go P (N+1, nx, nx), P_N = Qf.
    """
    A, B = np.asarray(A, float), np.asarray(B, float)
    N, nx, nu = B.shape
    Qs = np.asarray(Q, float)
    Rs = np.asarray(R, float)
    Qk = Qs if Qs.ndim == 3 else np.broadcast_to(_as_weight(Qs, nx), (N, nx, nx))
    Rk = Rs if Rs.ndim == 3 else np.broadcast_to(_as_weight(Rs, nu), (N, nu, nu))
    P = np.zeros((N + 1, nx, nx))
    K = np.zeros((N, nu, nx))
    P[N] = _as_weight(Qf, nx)
    for k in range(N - 1, -1, -1):
        Pn, Ak, Bk = P[k + 1], A[k], B[k]
        K[k] = _gain(Ak, Bk, Rk[k], Pn)
        # Eq. 36a in the Joseph-like form (A−BK)ᵀP(A−BK) + KᵀRK + Q: same value, stays symmetric PSD.
        Acl = Ak - Bk @ K[k]
        Pk = Qk[k] + Acl.T @ Pn @ Acl + K[k].T @ Rk[k] @ K[k]
        P[k] = 0.5 * (Pk + Pk.T)
    return K, P


def dlqr(A: np.ndarray, B: np.ndarray, Q: np.ndarray | float, R: np.ndarray | float,
         max_iterations: int = 60, tol: float = 1e-13) -> tuple[np.ndarray, np.ndarray]:
    """Infinite-horizon discrete LQR: P the fixed point of eq. 36a, K = [R + BᵀPB]⁻¹BᵀPA.

    P is found by the structure-preserving doubling algorithm (Chu, Fan, Lin 2005), which squares
    the horizon of the Riccati recursion (36a) each sweep: after j sweeps P equals the 2ʲ-step
    cost-to-go, so it converges quadratically for stabilizable (A, B) and detectable (A, Q^½).
    Returns (K, P); raises LinAlgError if it does not converge.
    """
    A, B = np.asarray(A, float), np.asarray(B, float)
    nx, nu = B.shape
    Qm, Rm = _as_weight(Q, nx), _as_weight(R, nu)
    Ak, Gk, Hk = A.copy(), B @ np.linalg.solve(Rm, B.T), Qm.copy()
    eye = np.eye(nx)
    for _ in range(max_iterations):
        W = eye + Gk @ Hk
        with np.errstate(over="ignore", invalid="ignore"):  # an unstabilizable mode blows up: caught below
            AW = np.linalg.solve(W.T, Ak.T).T  # A_k W⁻¹
            Hn = Hk + Ak.T @ Hk @ np.linalg.solve(W, Ak)
            Gk = Gk + AW @ Gk @ Ak.T
            Ak = AW @ Ak
        done = np.abs(Hn - Hk).max() <= tol * (1.0 + np.abs(Hn).max())
        Hk = 0.5 * (Hn + Hn.T)
        if not np.all(np.isfinite(Hk)):
            break
        if done:
            return _gain(A, B, Rm, Hk), Hk
    raise np.linalg.LinAlgError("discrete Riccati (doubling) did not converge: is (A, B) stabilizable?")
