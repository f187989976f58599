"""Exact first- and second-order linearization of the one-step map x_{k+1} = f(x_k, u_k).

Johnson2015 derives the derivatives of the implicit map by differentiating the DEL equations
(eqs. 8–15 first order, 16–27 second order; constrained: 29–32). Here the same implicit-function
argument is applied to the stacked residual R(y, z) = 0 of ``mechanics.discrete`` (y = unknowns
(q_{k+1}, λ_k), z = (x_k, u_k)) with every partial derivative of R and of the output map O exact
by automatic differentiation of L_d:

    dy/dz = −R_y⁻¹ R_z,              ∂f/∂z = O_z + O_y dy/dz                  (eqs. 9–15, 29–30)
    Σᵢ cᵢ ∂²fᵢ/∂z² = Tᵀ ∇²_{(y,z)}(cᵀO + μᵀR) T,  T = [dy/dz; I],  R_yᵀ μ = −O_yᵀ c   (eqs. 16–27, 31–32)

The second formula is the covector contraction a second-order optimizer needs, without forming
the (nx, nz, nz) tensor; ``second_order`` forms the full tensor from one projected Hessian per
curved output row and per residual row (the contraction is linear in (c, μ)).
The rcond of R_y is reported with every linearization: Johnson2015, §VII's two singularities (M_{k+1},
and the constraint term Dh(q_{k+1}) M_{k+1}⁻¹ Dh(q_k)ᵀ, its Schur complement) both make R_y singular. With
constraints it is the rcond of the equilibrated bordered matrix (``integrators.bordered``): M_{k+1} is in units of
mass and the border is not, so R_y's own condition would change with the unit of mass.

Every function here takes any ``Linearizable`` system (integrators.base): it asks the system only for
``solve``, ``step_derivatives``, ``step_hessian``, ``curved_outputs`` and ``warm_start``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.linalg import lapack

from ..integrators.base import Linearizable, SingularityError, StepResult
from ..integrators.bordered import lu_rcond

__all__ = [
    "Linearization",
    "TrajectoryLinearization",
    "linearize",
    "second_order_contraction",
    "second_order",
    "linearize_trajectory",
]


@dataclass
class Linearization:
    """The exact first-order linearization of the one-step map at (x_k, u_k): A = ∂f/∂x, B = ∂f/∂u
    (Johnson2015, eqs. 8–15), the derivative of the step's unknowns (q_{k+1}, λ_k) that the second order reuses,
    and the reciprocal condition number of the step's Jacobian (small near a singularity, Johnson2015 §VII)."""

    A: np.ndarray  # ∂f/∂x (nx, nx)
    B: np.ndarray  # ∂f/∂u (nx, nu)
    dy_dz: np.ndarray  # derivative of the step unknowns (q_{k+1}, λ_k), used by second order
    rcond: float  # reciprocal condition number of R_y (M_{k+1} bordered by constraints: equilibrated)
    # (step result, z, O_y, LU of R_y): lets second_order_contraction(..., lin=) skip re-evaluating them
    parts: tuple | None = field(default=None, repr=False, compare=False)


def _parts(vi: Linearizable, x: np.ndarray, u: np.ndarray, result: StepResult | None):
    r = result if result is not None else vi.solve(x, u)
    d = vi.step_derivatives(r, x, u)
    return r, d.Ry, d.Rz, d.Oy, d.Oz


def linearize(vi: Linearizable, x: np.ndarray, u: np.ndarray, result: StepResult | None = None) -> Linearization:
    """A_k, B_k of the one-step map at (x_k, u_k) (Johnson2015, eqs. 8–15; constrained 29–30).

    ``result``: the solved step at (x, u), if the caller has it (else it is solved here).
    Raises SingularityError where R_y (M_{k+1}, bordered by the constraint Jacobians) is singular to
    the integrator's own threshold ``vi.settings.rcond_min``: the map has no derivative there (Johnson2015, §VII).
    """
    if getattr(vi, "nd", 1) == 0:  # (LAPACK's "DGETRF parameter 4" and numpy's zero-size reduction before)
        raise ValueError(
            f"linearize: {vi.robot.name!r} has no dynamic coordinates (every joint prescribed): its "
            "motion is the input itself, there is no one-step map to linearize"
        )
    r, Ry, Rz, Oy, Oz = _parts(vi, x, u, result)
    # with constraint rows, the unit-free rcond of the equilibrated bordered matrix (the step's own verdict)
    lu, piv, rcond = lu_rcond(Ry, Ry.shape[0] - vi.nc)
    if not rcond >= vi.settings.rcond_min:
        raise SingularityError(None, rcond, "R_y = ∂R/∂(q_{k+1}, λ_k) in the linearization")
    dydz = -lapack.dgetrs(lu, piv, Rz)[0]
    J = Oz + Oy @ dydz
    ndx = vi.state.ndx
    return Linearization(A=J[:, :ndx], B=J[:, ndx:], dy_dz=dydz, rcond=rcond, parts=(r, Oy, lu, piv))


def _project(H: np.ndarray, dydz: np.ndarray) -> np.ndarray:
    """Tᵀ H T for T = [dy/dz; I] by blocks (H is the Hessian over w = (y, z)); ~4× fewer flops than dense."""
    ny = dydz.shape[0]
    Hyy, Hyz, Hzz = H[:ny, :ny], H[:ny, ny:], H[ny:, ny:]
    W = Hyy @ dydz + Hyz
    return dydz.T @ W + Hyz.T @ dydz + Hzz


def _split(Hz: np.ndarray, nx: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return Hz[..., :nx, :nx], Hz[..., :nx, nx:], Hz[..., nx:, nx:]


def second_order_contraction(
    vi: Linearizable,
    x: np.ndarray,
    u: np.ndarray,
    cov: np.ndarray,
    result: StepResult | None = None,
    lin: Linearization | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(Σᵢ cᵢ ∂²fᵢ/∂x∂x, Σᵢ cᵢ ∂²fᵢ/∂x∂u, Σᵢ cᵢ ∂²fᵢ/∂u∂u) for a covector c (Johnson2015, eqs. 16–27).

    ``lin``: ``linearize``'s result at the same (x, u), whose Jacobians and LU of R_y are reused
    (a DDP backward pass needs both at every step).
    """
    if lin is not None and lin.parts is not None:
        (r, Oy, lu, piv), dydz = lin.parts, lin.dy_dz
    else:
        r, Ry, Rz, Oy, Oz = _parts(vi, x, u, result)
        lu, piv, _ = lapack.dgetrf(Ry)  # (no condition estimate: nothing here would use it)
        dydz = -lapack.dgetrs(lu, piv, Rz)[0]
    cov = np.asarray(cov, float).ravel()
    if cov.size != vi.state.ndx or not np.all(np.isfinite(cov)):  # (numpy's matmul error, or NaN terms, before)
        got = f"{cov.size}" + ("" if cov.size != vi.state.ndx else " with NaN/inf")
        raise ValueError(
            f"second_order_contraction: the covector must be {vi.state.ndx} finite numbers (one per "
            f"tangent direction of the state), got {got}"
        )
    # Adjoint of the DEL equations: R_yᵀ μ = −O_yᵀ c (the multiplier of eqs. 16–27's implicit terms).
    mu = -lapack.dgetrs(lu, piv, Oy.T @ cov, trans=1)[0]
    Hz = _project(vi.step_hessian(r, x, u, cov, mu), dydz)
    return tuple(a.copy() for a in _split(Hz, vi.state.ndx))


def second_order(
    vi: Linearizable, x: np.ndarray, u: np.ndarray, result: StepResult | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Full tensors f_xx (nx, nx, nx), f_xu (nx, nx, nu), f_uu (nx, nu, nu); index 0 is the output.

    The contraction is linear in (c, μ): ∂²fᵢ = Tᵀ(∇²Oᵢ + Σⱼ μ⁽ⁱ⁾ⱼ ∇²Rⱼ)T with μ⁽ⁱ⁾ = −R_y⁻ᵀ O_yᵀ eᵢ
    (Johnson2015, eqs. 16–27). So one projected Hessian per curved output row and per DEL residual row,
    combined by one tensor product, gives every fᵢ's second derivative.
    """
    r, Ry, Rz, Oy, Oz = _parts(vi, x, u, result)
    lu, piv, _ = lapack.dgetrf(Ry)
    dydz = -lapack.dgetrs(lu, piv, Rz)[0]
    ny, nz, nx = Ry.shape[0], Rz.shape[1], vi.state.ndx
    Mu = -lapack.dgetrs(lu, piv, Oy.T, trans=1)[0]  # column i is μ⁽ⁱ⁾, (ny, nx)
    zero_c, zero_mu = np.zeros(nx), np.zeros(ny)
    G_R = np.empty((ny, nz, nz))
    for j in range(ny):
        e = zero_mu.copy()
        e[j] = 1.0
        G_R[j] = _project(vi.step_hessian(r, x, u, zero_c, e), dydz)
    F = np.tensordot(Mu.T, G_R, axes=1)  # (nx, nz, nz)
    for i in vi.curved_outputs():
        e = zero_c.copy()
        e[i] = 1.0
        F[i] += _project(vi.step_hessian(r, x, u, e, zero_mu), dydz)
    return tuple(np.ascontiguousarray(a) for a in _split(F, nx))


@dataclass
class TrajectoryLinearization:
    A: np.ndarray  # (N, nx, nx)
    B: np.ndarray  # (N, nx, nu)
    rcond: np.ndarray  # (N,) reciprocal condition of M_{k+1} (or the constrained KKT matrix)
    near_singular: np.ndarray  # step indices where rcond < threshold


def linearize_trajectory(
    vi: Linearizable, X: np.ndarray, U: np.ndarray, rcond_warn: float = 1e-8
) -> TrajectoryLinearization:
    """A_k, B_k along a trajectory (X: (N+1, nx), U: (N, nu)); flags near-singular steps (§VII)."""
    X, U = np.asarray(X, float), np.asarray(U, float)
    if X.ndim != 2 or X.shape[1] != vi.nx or U.size != (len(X) - 1) * vi.nu:
        raise ValueError(
            f"linearize_trajectory: X must be (N+1, {vi.nx}) and U (N, {vi.nu}), got {X.shape} and {U.shape}"
        )
    U = U.reshape(len(X) - 1, vi.nu)
    N, ndx = len(U), vi.state.ndx
    A, B, rc = np.zeros((N, ndx, ndx)), np.zeros((N, ndx, vi.nu)), np.zeros(N)
    lam = None
    for k in range(N):
        # Re-solve from X[k] (warm-started at the stored next state and the last multipliers) so y matches f.
        r = vi.solve(X[k], U[k], step_index=k, y0=vi.warm_start(X[k + 1], lam))
        lam = r.lam
        lin = linearize(vi, X[k], U[k], r)
        A[k], B[k], rc[k] = lin.A, lin.B, lin.rcond
    return TrajectoryLinearization(A=A, B=B, rcond=rc, near_singular=np.flatnonzero(rc < rcond_warn))
