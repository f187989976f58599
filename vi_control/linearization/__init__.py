"""Exact first- and second-order linearization of the one-step map x_{k+1} = f(x_k, u_k).

Seed 000 derives the derivatives of the implicit map by differentiating the DEL equations
(eqs. 8–15 first order, 16–27 second order; constrained: 29–32). Here the same implicit-function
argument is applied to the stacked residual R(y, z) = 0 of ``mechanics.discrete`` (y = unknowns
(q_{k+1}, λ_k), z = (x_k, u_k)) with every partial derivative of R and of the output map O exact
by automatic differentiation of L_d:

    dy/dz = −R_y⁻¹ R_z,              ∂f/∂z = O_z + O_y dy/dz                  (eqs. 9–15, 29–30)
    Σᵢ cᵢ ∂²fᵢ/∂z² = Tᵀ ∇²_{(y,z)}(cᵀO + μᵀR) T,  T = [dy/dz; I],  R_yᵀ μ = −O_yᵀ c   (eqs. 16–27, 31–32)

The second formula is the covector contraction a second-order optimizer needs, without forming
the (nx, nz, nz) tensor; ``second_order`` forms the full tensor for tests.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import lapack

from ..integrators.midpoint import MidpointVI, StepResult


@dataclass
class Linearization:
    A: np.ndarray  # ∂f/∂x (nx, nx)
    B: np.ndarray  # ∂f/∂u (nx, nu)
    dy_dz: np.ndarray  # derivative of the step unknowns (q_{k+1}, λ_k), used by second order
    rcond: float  # reciprocal condition number of R_y (M_{k+1} bordered by constraints)


def _parts(vi: MidpointVI, x: np.ndarray, u: np.ndarray, result: StepResult | None):
    r = result if result is not None else vi.solve(x, u)
    z = np.concatenate([np.asarray(x, float), np.asarray(u, float).ravel()])
    Ry, Rz, Oy, Oz = (np.array(a) for a in vi.fn["linearize"](r.y, z))
    return r, z, Ry, Rz, Oy, Oz


def _factor(Ry: np.ndarray):
    lu, piv, info = lapack.dgetrf(Ry)
    if info > 0:
        return lu, piv, 0.0
    rcond, _ = lapack.dgecon(lu, np.abs(Ry).sum(axis=0).max(), norm="1")
    return lu, piv, float(rcond)


def linearize(vi: MidpointVI, x: np.ndarray, u: np.ndarray, result: StepResult | None = None) -> Linearization:
    """A_k, B_k of the one-step map at (x_k, u_k) (seed 000 eqs. 8–15; constrained 29–30)."""
    _, _, Ry, Rz, Oy, Oz = _parts(vi, x, u, result)
    lu, piv, rcond = _factor(Ry)
    dydz = -lapack.dgetrs(lu, piv, Rz)[0]
    J = Oz + Oy @ dydz
    return Linearization(A=J[:, : vi.nx], B=J[:, vi.nx:], dy_dz=dydz, rcond=rcond)


def second_order_contraction(vi: MidpointVI, x: np.ndarray, u: np.ndarray, cov: np.ndarray,
                             result: StepResult | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(Σᵢ cᵢ ∂²fᵢ/∂x∂x, Σᵢ cᵢ ∂²fᵢ/∂x∂u, Σᵢ cᵢ ∂²fᵢ/∂u∂u) for a covector c (seed 000 eqs. 16–27)."""
    r, z, Ry, Rz, Oy, Oz = _parts(vi, x, u, result)
    lu, piv, _ = _factor(Ry)
    dydz = -lapack.dgetrs(lu, piv, Rz)[0]
    cov = np.asarray(cov, float).ravel()
    mu = -lapack.dgetrs(lu, piv, Oy.T @ cov, trans=1)[0]
    H = np.array(vi.fn["hessian"](r.y, z, cov, mu)[0])
    T = np.vstack([dydz, np.eye(z.size)])
    Hz = T.T @ H @ T
    nx = vi.nx
    return Hz[:nx, :nx], Hz[:nx, nx:], Hz[nx:, nx:]


def second_order(vi: MidpointVI, x: np.ndarray, u: np.ndarray,
                 result: StepResult | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Full tensors f_xx (nx, nx, nx), f_xu (nx, nx, nu), f_uu (nx, nu, nu); index 0 is the output."""
    r = result if result is not None else vi.solve(x, u)
    fxx = np.zeros((vi.nx, vi.nx, vi.nx))
    fxu = np.zeros((vi.nx, vi.nx, vi.nu))
    fuu = np.zeros((vi.nx, vi.nu, vi.nu))
    for i in range(vi.nx):
        e = np.zeros(vi.nx)
        e[i] = 1.0
        fxx[i], fxu[i], fuu[i] = second_order_contraction(vi, x, u, e, r)
    return fxx, fxu, fuu


@dataclass
class TrajectoryLinearization:
    A: np.ndarray  # (N, nx, nx)
    B: np.ndarray  # (N, nx, nu)
    rcond: np.ndarray  # (N,) reciprocal condition of M_{k+1} (or the constrained KKT matrix)
    near_singular: np.ndarray  # step indices where rcond < threshold


def linearize_trajectory(vi: MidpointVI, X: np.ndarray, U: np.ndarray,
                         rcond_warn: float = 1e-8) -> TrajectoryLinearization:
    """A_k, B_k along a trajectory (X: (N+1, nx), U: (N, nu)); flags near-singular steps (§VII)."""
    X, U = np.asarray(X, float), np.asarray(U, float).reshape(len(X) - 1, vi.nu)
    N = len(U)
    A, B, rc = np.zeros((N, vi.nx, vi.nx)), np.zeros((N, vi.nx, vi.nu)), np.zeros(N)
    for k in range(N):
        # Re-solve from X[k] (warm-started at the stored next configuration) so y matches f exactly.
        y0 = np.concatenate([X[k + 1, : vi.nq][vi.idx_d], vi._lam_guess])
        r = vi.solve(X[k], U[k], step_index=k, y0=y0)
        lin = linearize(vi, X[k], U[k], r)
        A[k], B[k], rc[k] = lin.A, lin.B, lin.rcond
    return TrajectoryLinearization(A=A, B=B, rcond=rc, near_singular=np.flatnonzero(rc < rcond_warn))
