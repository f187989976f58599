"""DDP's backward pass in numpy (Mayne's recursion with Johnson2015's second-order terms, eqs. 16–27; Tassa2012's
regularization V'_xx + μI; the box QP of the input bounds by projected Newton, Bertsekas 1982): the tests' oracle of
the package's one implementation, ``vi_plan_backward`` in vi_control/planning/csrc/ddp_kernel.c
(``planning.compiled.BackwardPass``, ``CompiledStages.backward``). Written from the same formulas with LAPACK's
Cholesky; the tests compare gains, feedforward and the expected decrease to round-off.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import lapack

from vi_control.integrators.base import Linearizable
from vi_control.linearization import second_order_contraction
from vi_control.planning.cost import QuadraticTrackingCost
from vi_control.planning.shooting import local_model


def _chol_solve(H: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """H⁻¹ rhs for symmetric positive definite H; LinAlgError if H is not (the caller regularizes).

    LAPACK potrf/potrs directly: on these tiny matrices numpy.linalg's wrappers cost more than the math.
    """
    c, info = lapack.dpotrf(H, lower=False, clean=False)
    if info != 0:
        raise np.linalg.LinAlgError("not positive definite")
    x, info = lapack.dpotrs(c, rhs, lower=False)
    return x


def box_qp(
    H: np.ndarray, g: np.ndarray, lo: np.ndarray, hi: np.ndarray, x0: np.ndarray, max_iterations: int = 50
) -> tuple[np.ndarray, np.ndarray] | None:
    """min ½xᵀHx + gᵀx on lo ≤ x ≤ hi by projected Newton; returns (x, free mask).

    None if the free block of H is not positive definite (the caller raises the regularization).
    """
    free = np.ones(len(g), bool)
    try:  # fast path: the unconstrained minimizer is feasible (bounds inactive)
        x = -_chol_solve(H, g)
    except np.linalg.LinAlgError:
        x = None
    if x is not None and np.all(x >= lo) and np.all(x <= hi):
        return x, free
    x = np.clip(x0, lo, hi)
    for _ in range(max_iterations):
        grad = g + H @ x
        clamped = ((x <= lo) & (grad > 0)) | ((x >= hi) & (grad < 0))
        free = ~clamped
        if not free.any():
            break
        dx = np.zeros_like(x)
        try:
            dx[free] = -_chol_solve(H[np.ix_(free, free)], grad[free])
        except np.linalg.LinAlgError:
            return None
        if np.abs(dx).max() < 1e-12 * (1.0 + np.abs(x).max()):
            break
        f0 = 0.5 * x @ H @ x + g @ x
        step = 1.0
        while True:  # projected Armijo search
            xn = np.clip(x + step * dx, lo, hi)
            if 0.5 * xn @ H @ xn + g @ xn - f0 <= 0.1 * grad @ (xn - x) or step < 1e-12:
                break
            step *= 0.5
        done = np.abs(xn - x).max() < 1e-13
        x = xn
        if done:
            break
    return x, free


class BackwardFailure(Exception):
    pass


def backward_numpy(
    vi: Linearizable, cost: QuadraticTrackingCost, X, U, results, lins, lo, hi, mu, second_order, metric=None
):
    N, nx, nu = len(U), vi.state.ndx, vi.nu
    kff = np.zeros((N, nu))
    Kfb = np.zeros((N, nu, nx))
    # Curvature of the local model: the cost's own (Newton, Gauss–Newton) or a fixed metric (first order).
    LX, LU, Vx, Vxx, Wx, Wu = local_model(cost, X, U, metric)
    d1 = d2 = 0.0
    bounded = bool(np.isfinite(lo).any() or np.isfinite(hi).any())
    for k in range(N - 1, -1, -1):
        lin = lins[k]
        A, B = lin.A, lin.B
        At, Bt = A.T, B.T
        VA = Vxx @ A
        Qx, Qu = LX[k] + At @ Vx, LU[k] + Bt @ Vx
        Qxx, Qux, Quu = Wx + At @ VA, Bt @ VA, Wu + Bt @ (Vxx @ B)
        if second_order:
            Hxx, Hxu, Huu = second_order_contraction(vi, X[k], U[k], Vx, results[k], lin=lin)
            Qxx, Qux, Quu = Qxx + Hxx, Qux + Hxu.T, Quu + Huu
        # Regularize V'_xx + μI (Tassa et al. 2012) rather than Q_uu: the step stays scale-aware.
        Quu_r, Qux_r = 0.5 * (Quu + Quu.T), Qux
        if mu:
            Quu_r, Qux_r = Quu_r + mu * (Bt @ B), Qux + mu * (Bt @ A)
        if bounded:
            sol = box_qp(Quu_r, Qu, lo - U[k], hi - U[k], np.zeros(nu))
            if sol is None:
                raise BackwardFailure
            kk, free = sol
            KK = np.zeros((nu, nx))
            if free.any():
                KK[free] = -np.linalg.solve(Quu_r[np.ix_(free, free)], Qux_r[free])
        else:
            try:
                sol = _chol_solve(Quu_r, np.column_stack([Qu, Qux_r]))
            except np.linalg.LinAlgError:
                raise BackwardFailure from None
            kk, KK = -sol[:, 0], -sol[:, 1:]
        kff[k], Kfb[k] = kk, KK
        Quu_k = Quu @ kk
        d1 += kk @ Qu
        d2 += 0.5 * kk @ Quu_k
        KtT = KK.T
        Vx = Qx + KtT @ (Quu_k + Qu) + Qux.T @ kk
        Vxx = Qxx + KtT @ (Quu @ KK + Qux) + Qux.T @ KK
        Vxx = 0.5 * (Vxx + Vxx.T)
    if not (np.isfinite(d1) and np.all(np.isfinite(Vxx))):  # NaN/inf anywhere propagates to here
        raise BackwardFailure
    return kff, Kfb, d1, d2


def oracle_backward(
    vi: Linearizable, cost: QuadraticTrackingCost, X, U, results, lins, lo, hi, mu, second_order, metric=None
):
    """``backward_numpy``'s (k, K, d1, d2), or None where it fails (as the stage passes' ``backward``)."""
    try:
        return backward_numpy(vi, cost, X, U, results, lins, lo, hi, mu, second_order, metric)
    except BackwardFailure:
        return None
