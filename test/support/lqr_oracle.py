"""Oracle of the package's LQR gains: the discrete Riccati recursion (Johnson2015, §VIII-A, eq. 36) and the DLQR
by the structure-preserving doubling algorithm (Chu, Fan, Lin 2005), in numpy, written as a second implementation
of ``vi_lqr_tv`` / ``vi_lqr_dare`` in ``vi_control/control/csrc/lqr_kernel.c`` — the same formulas, solves and
stopping test: the package's one path is the C (``vi_control.control.lqr.tv_lqr`` / ``dlqr``), and the tests
(test/control/test_lqr.py, test_lqr_refusals.py) compare it with this, to round-off.

Sign convention of the project: u = u_ref + K (x_ref − x), K = [R + BᵀPB]⁻¹BᵀPA (the text after eq. 36 prints BᵀPB
on the right, a typo). The weights are taken as the package's checks leave them (``control.lqr.check_weight``):
matrices, or stacks (N, n, n) for Q and R of ``tv_lqr_numpy``.
"""

from __future__ import annotations

import numpy as np

from vi_control.control.lqr import check_system, check_weight


def gain(A: np.ndarray, B: np.ndarray, R: np.ndarray, P: np.ndarray) -> np.ndarray:
    """𝒦 = [R + BᵀPB]⁻¹ BᵀPA (Johnson2015, gain after eq. 36), by an LU solve of the symmetrized R + BᵀPB."""
    S = R + B.T @ P @ B
    return np.linalg.solve(0.5 * (S + S.T), B.T @ P @ A)


def tv_lqr_numpy(A, B, Q, R, Qf) -> tuple[np.ndarray, np.ndarray]:
    """``control.lqr.tv_lqr`` in numpy (Johnson2015, eq. 36a–b): K (N, nu, nx), P (N+1, nx, nx), P_N = Qf; eq. 36a in
    the Joseph-like form (A−BK)ᵀP(A−BK) + KᵀRK + Q, symmetrized. ValueError where P or K leave double range."""
    A, B = check_system(A, B, stacked=True)
    N, nx, nu = B.shape
    Qs, Rs = check_weight(Q, nx, "Q", stack=N), check_weight(R, nu, "R", definite=True, stack=N)
    Qk = Qs if Qs.ndim == 3 else np.broadcast_to(Qs, (N, nx, nx))
    Rk = Rs if Rs.ndim == 3 else np.broadcast_to(Rs, (N, nu, nu))
    P = np.zeros((N + 1, nx, nx))
    K = np.zeros((N, nu, nx))
    P[N] = check_weight(Qf, nx, "Qf")
    for k in range(N - 1, -1, -1):
        Pn, Ak, Bk = P[k + 1], A[k], B[k]
        K[k] = gain(Ak, Bk, Rk[k], Pn)
        Acl = Ak - Bk @ K[k]
        with np.errstate(over="ignore", invalid="ignore"):  # (left double range: refused below)
            Pk = Qk[k] + Acl.T @ Pn @ Acl + K[k].T @ Rk[k] @ K[k]
        P[k] = 0.5 * (Pk + Pk.T)
        if not (np.isfinite(P[k]).all() and np.isfinite(K[k]).all()):
            raise ValueError(f"A, B: the Riccati recursion leaves double range at step {k}")
    return K, P


def dlqr_numpy(A, B, Q, R, max_iterations: int = 60, tolerance: float = 1e-13) -> tuple[np.ndarray, np.ndarray]:
    """``control.lqr.dlqr`` in numpy: P by the doubling algorithm — A_0 = A, G_0 = B R⁻¹ Bᵀ, H_0 = Q; W = I + G H,
    H' = H + AᵀH W⁻¹A, G' = G + A W⁻¹G Aᵀ, A' = A W⁻¹A — until max|H' − H| ≤ tolerance·max|H'| (relative: K is
    invariant under (sQ, sR)), then K = ``gain``. LinAlgError if it does not converge."""
    A, B = check_system(A, B, stacked=False)
    nx, nu = B.shape
    Qm, Rm = check_weight(Q, nx, "Q"), check_weight(R, nu, "R", definite=True)
    Ak, Gk, Hk = A.copy(), B @ np.linalg.solve(Rm, B.T), Qm.copy()
    eye = np.eye(nx)
    for _ in range(max_iterations):
        W = eye + Gk @ Hk
        with np.errstate(over="ignore", invalid="ignore"):  # an unstabilizable mode blows up: caught below
            AW = np.linalg.solve(W.T, Ak.T).T  # A_k W⁻¹
            Hn = Hk + Ak.T @ Hk @ np.linalg.solve(W, Ak)
            Gk = Gk + AW @ Gk @ Ak.T
            Ak = AW @ Ak
        done = np.abs(Hn - Hk).max() <= tolerance * np.abs(Hn).max()
        Hk = 0.5 * (Hn + Hn.T)
        if not np.all(np.isfinite(Hk)):
            break
        if done:
            return gain(A, B, Rm, Hk), Hk
    raise np.linalg.LinAlgError("discrete Riccati (doubling) did not converge: is (A, B) stabilizable?")
