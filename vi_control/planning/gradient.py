"""First-order trajectory optimization (Johnson2015, §VIII-A, Fig. 3's first-order method).

``projection_gradient`` is the first-order projection-operator method the seed's trep library uses: the
descent direction minimizes the first-order change of J plus a fixed quadratic metric ½(‖δx‖² + ‖δu‖²)
subject to the linearized dynamics δx_{k+1} = A_k δx_k + B_k δu_k (eqs. 8–15) — an LQ problem solved by
the same Riccati backward pass as DDP, with identity curvature — and the step is taken through the
nonlinear closed-loop rollout with that LQ problem's feedback gains (the projection), with Armijo
backtracking. Only first derivatives of f and of the cost are used.

``steepest_descent`` is the textbook open-loop alternative, kept as a baseline and for its adjoint
gradient: the gradient of J with respect to the inputs from one backward adjoint sweep

    λ_N = l_f,x,   λ_k = l_x,k + A_kᵀ λ_{k+1},   ∇_{u_k} J = l_u,k + B_kᵀ λ_{k+1},

and the step U ← Π(U − α∇J) is projected on the input box, with α chosen by Armijo backtracking
(the first trial is the last accepted α ×2, a cheap Barzilai–Borwein-free safeguard).
"""

from __future__ import annotations

import time

import numpy as np

from ..integrators.base import Linearizable
from ..linearization import linearize
from .cost import QuadraticTrackingCost
from .ddp import ddp
from .shooting import LogFn, OptimizerResult, check_optimizer_options, initial_rollout, progress_line, rollout


def projection_gradient(
    vi: Linearizable,
    cost: QuadraticTrackingCost,
    x0: np.ndarray,
    U0: np.ndarray,
    input_limits: np.ndarray | None = None,
    max_iterations: int = 1000,
    tolerance: float = 1e-6,
    log: LogFn = None,
) -> OptimizerResult:
    """First-order projection method: LQ descent direction with identity metric, closed-loop projection."""
    metric = (np.eye(vi.nx), np.eye(vi.nu))
    return ddp(
        vi,
        cost,
        x0,
        U0,
        input_limits=input_limits,
        second_order=False,
        max_iterations=max_iterations,
        tolerance=tolerance,
        regularization=0.0,
        log=log,
        metric=metric,
        method="gradient",
    )


def adjoint_gradient(
    vi: Linearizable, cost: QuadraticTrackingCost, X: np.ndarray, U: np.ndarray, results: list
) -> np.ndarray:
    """∇_U J (N, nu) by the discrete adjoint (costate) recursion."""
    lam, _ = cost.calc_diff_terminal(X[-1])
    G = np.zeros_like(U)
    for k in range(len(U) - 1, -1, -1):
        lin = linearize(vi, X[k], U[k], results[k])
        c = cost.calc_diff(k, X[k], U[k])
        G[k] = c.lu + lin.B.T @ lam
        lam = c.lx + lin.A.T @ lam
    return G


def steepest_descent(
    vi: Linearizable,
    cost: QuadraticTrackingCost,
    x0: np.ndarray,
    U0: np.ndarray,
    input_limits: np.ndarray | None = None,
    max_iterations: int = 1000,
    tolerance: float = 1e-6,
    log: LogFn = None,
    log_every: int = 10,
) -> OptimizerResult:
    """Projected gradient descent; converged when the directional derivative ‖Π-step‖² < tolerance."""
    check_optimizer_options(max_iterations, tolerance)
    t0 = time.perf_counter()
    lo, hi, X, U, results = initial_rollout(vi, x0, U0, cost.N, input_limits)
    J = cost.calc(X, U)
    hist, decs, steps = [J], [], []
    alpha = 1e-2
    converged, reason, it = False, "max_iterations", 0
    for it in range(1, max_iterations + 1):
        G = adjoint_gradient(vi, cost, X, U, results)
        # Directional derivative along the projected direction d = Π(U − G) − U (unit step).
        d = np.clip(U - G, lo, hi) - U
        dJ = float(np.sum(G * d))
        decs.append(dJ)
        if abs(dJ) < tolerance:
            converged, reason, it = True, f"|dJ| = {abs(dJ):.1e} < tolerance", it - 1
            break
        alpha, accepted = min(alpha * 2.0, 1e3), False
        while alpha > 1e-12:
            Un = np.clip(U - alpha * G, lo, hi)
            ro = rollout(vi, X[0], Un, X)
            if ro is not None:
                Jn = cost.calc(ro[0], ro[1])
                if Jn <= J + 1e-4 * float(np.sum(G * (Un - U))):
                    accepted = True
                    break
            alpha *= 0.5
        if not accepted:
            reason = "line search failed"
            break
        X, U, results = ro
        J = Jn
        hist.append(J)
        steps.append(alpha)
        if log is not None and (it % log_every == 0 or it == 1):
            log(progress_line("gradient", it, J, dJ, alpha, 0.0))
    return OptimizerResult(
        X=X,
        U=U,
        K=np.zeros((cost.N, vi.nu, vi.state.ndx)),
        cost=J,
        cost_history=hist,
        decrement_history=decs,
        iterations=it,
        converged=converged,
        stop_reason=reason,
        wall_time=time.perf_counter() - t0,
        method="gradient",
        step_history=steps,
    )
