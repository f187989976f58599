"""Exact first- and second-order linearization of the one-step map x_{k+1} = f(x_k, u_k).

Seed 000 derives the derivatives of the implicit map by differentiating the DEL equations
(eqs. 8–15 first order, 16–27 second order; constrained: 29–32). Here the same implicit-function
argument is applied to the stacked residual R(y, z) = 0 of ``mechanics.discrete`` (y = unknowns
(q_{k+1}, λ_k), z = (x_k, u_k)) with every partial derivative of R and of the output map O exact
by automatic differentiation of L_d:

    dy/dz = −R_y⁻¹ R_z,              ∂f/∂z = O_z + O_y dy/dz                  (eqs. 9–15, 29–30)
    Σᵢ cᵢ ∂²fᵢ/∂z² = Tᵀ ∇²_{(y,z)}(cᵀO + μᵀR) T,  T = [dy/dz; I],  R_yᵀ μ = −O_yᵀ c   (eqs. 16–27, 31–32)

The second formula is the covector contraction a second-order optimizer needs, without forming
the (nx, nz, nz) tensor; ``second_order`` forms the full tensor from one projected Hessian per
curved output row and per residual row (the contraction is linear in (c, μ)).
The rcond of R_y is reported with every linearization: seed 000 §VII's two singularities (M_{k+1},
and the constraint term Dh(q_{k+1}) M_{k+1}⁻¹ Dh(q_k)ᵀ, its Schur complement) both make R_y singular.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

import casadi as ca
import numpy as np
from scipy.linalg import lapack

from ..integrators.midpoint import MidpointVI, SingularityError, StepResult


@dataclass
class Linearization:
    A: np.ndarray  # ∂f/∂x (nx, nx)
    B: np.ndarray  # ∂f/∂u (nx, nu)
    dy_dz: np.ndarray  # derivative of the step unknowns (q_{k+1}, λ_k), used by second order
    rcond: float  # reciprocal condition number of R_y (M_{k+1} bordered by constraints)
    # (step result, z, O_y, LU of R_y): lets second_order_contraction(..., lin=) skip re-evaluating them
    parts: tuple | None = field(default=None, repr=False, compare=False)


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
    """A_k, B_k of the one-step map at (x_k, u_k) (seed 000 eqs. 8–15; constrained 29–30).

    Raises SingularityError where R_y (M_{k+1}, bordered by the constraint Jacobians) is singular to
    the integrator's own threshold ``vi.rcond_min``: the map has no derivative there (seed 000 §VII).
    """
    r, z, Ry, Rz, Oy, Oz = _parts(vi, x, u, result)
    lu, piv, rcond = _factor(Ry)
    if not rcond >= vi.rcond_min:
        raise SingularityError(None, rcond, "R_y = ∂R/∂(q_{k+1}, λ_k) in the linearization")
    dydz = -lapack.dgetrs(lu, piv, Rz)[0]
    J = Oz + Oy @ dydz
    return Linearization(A=J[:, : vi.nx], B=J[:, vi.nx:], dy_dz=dydz, rcond=rcond, parts=(r, z, Oy, lu, piv))


def _project(H: np.ndarray, dydz: np.ndarray) -> np.ndarray:
    """Tᵀ H T for T = [dy/dz; I] by blocks (H is the Hessian over w = (y, z)); ~4× fewer flops than dense."""
    ny = dydz.shape[0]
    Hyy, Hyz, Hzz = H[:ny, :ny], H[:ny, ny:], H[ny:, ny:]
    W = Hyy @ dydz + Hyz
    return dydz.T @ W + Hyz.T @ dydz + Hzz


def _split(Hz: np.ndarray, nx: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return Hz[..., :nx, :nx], Hz[..., :nx, nx:], Hz[..., nx:, nx:]


def second_order_contraction(vi: MidpointVI, x: np.ndarray, u: np.ndarray, cov: np.ndarray,
                             result: StepResult | None = None, lin: Linearization | None = None
                             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(Σᵢ cᵢ ∂²fᵢ/∂x∂x, Σᵢ cᵢ ∂²fᵢ/∂x∂u, Σᵢ cᵢ ∂²fᵢ/∂u∂u) for a covector c (seed 000 eqs. 16–27).

    ``lin``: ``linearize``'s result at the same (x, u), whose Jacobians and LU of R_y are reused
    (a DDP backward pass needs both at every step).
    """
    if lin is not None and lin.parts is not None:
        (r, z, Oy, lu, piv), dydz = lin.parts, lin.dy_dz
    else:
        r, z, Ry, Rz, Oy, Oz = _parts(vi, x, u, result)
        lu, piv, _ = _factor(Ry)
        dydz = -lapack.dgetrs(lu, piv, Rz)[0]
    cov = np.asarray(cov, float).ravel()
    # Adjoint of the DEL equations: R_yᵀ μ = −O_yᵀ c (the multiplier of eqs. 16–27's implicit terms).
    mu = -lapack.dgetrs(lu, piv, Oy.T @ cov, trans=1)[0]
    Hz = _project(vi.fn["hessian"](r.y, z, cov, mu)[0], dydz)
    return tuple(a.copy() for a in _split(Hz, vi.nx))


_NONLINEAR_OUTPUTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _nonlinear_outputs(vi: MidpointVI) -> np.ndarray:
    """Rows i of O(y, z) with ∂²Oᵢ ≠ 0, read from the symbolic output map once per integrator.

    q_{k+1} and the prescribed joints' kinematic momenta are linear in (y, z); only the dynamic rows
    of p_{k+1} = D₂L_d (eq. 2b) carry curvature, so the full tensor needs ~nd + ny Hessians, not nx.
    """
    if vi not in _NONLINEAR_OUTPUTS:
        f = vi.fn.raw["output"]
        y, z = ca.SX.sym("y", f.size1_in(0)), ca.SX.sym("z", f.size1_in(1))
        w = ca.vertcat(y, z)
        J = ca.jacobian(f(y, z), w)
        _NONLINEAR_OUTPUTS[vi] = np.array([i for i in range(J.size1()) if ca.depends_on(J[i, :], w)], dtype=int)
    return _NONLINEAR_OUTPUTS[vi]


def second_order(vi: MidpointVI, x: np.ndarray, u: np.ndarray,
                 result: StepResult | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Full tensors f_xx (nx, nx, nx), f_xu (nx, nx, nu), f_uu (nx, nu, nu); index 0 is the output.

    The contraction is linear in (c, μ): ∂²fᵢ = Tᵀ(∇²Oᵢ + Σⱼ μ⁽ⁱ⁾ⱼ ∇²Rⱼ)T with μ⁽ⁱ⁾ = −R_y⁻ᵀ O_yᵀ eᵢ
    (seed 000 eqs. 16–27). So one projected Hessian per curved output row and per DEL residual row,
    combined by one tensor product, gives every fᵢ's second derivative.
    """
    r, z, Ry, Rz, Oy, Oz = _parts(vi, x, u, result)
    lu, piv, _ = _factor(Ry)
    dydz = -lapack.dgetrs(lu, piv, Rz)[0]
    ny, nz, nx = Ry.shape[0], z.size, vi.nx
    Mu = -lapack.dgetrs(lu, piv, Oy.T, trans=1)[0]  # column i is μ⁽ⁱ⁾, (ny, nx)
    hess = vi.fn["hessian"]
    zero_c, zero_mu = np.zeros(nx), np.zeros(ny)
    G_R = np.empty((ny, nz, nz))
    for j in range(ny):
        e = zero_mu.copy()
        e[j] = 1.0
        G_R[j] = _project(hess(r.y, z, zero_c, e)[0], dydz)
    F = np.tensordot(Mu.T, G_R, axes=1)  # (nx, nz, nz)
    for i in _nonlinear_outputs(vi):
        e = zero_c.copy()
        e[i] = 1.0
        F[i] += _project(hess(r.y, z, e, zero_mu)[0], dydz)
    return tuple(np.ascontiguousarray(a) for a in _split(F, nx))


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
