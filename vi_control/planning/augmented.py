"""A terminal state constraint x_N = x_goal by an augmented Lagrangian around DDP.

A stiff terminal weight (Qf ~ 1e6) is the usual way to make a shooting method end at a goal, and the reason
acrobot and cart-pole swing-ups took 100+ DDP iterations whose path hinged on round-off: the model predicts
removing the whole terminal error in one step, the line search accepts a few percent of it, and small
differences grow ~1.6× per iteration (docs/performance_planner.md). Here the goal is an equality constraint
h = x_N − x_goal and DDP solves a sequence of well-conditioned problems

    J_ρ,λ = J + λᵀh + ρ/2 ‖h‖²,        λ ← λ + ρ h,   ρ ← 10ρ when ‖h‖ did not shrink ×4

(the method of multipliers: Hestenes 1969, Powell 1969; for DDP e.g. Howell, Jackson, Manchester 2019). The
augmented terms are a quadratic in x_N, so each subproblem is the same QuadraticTrackingCost with terminal
weight Qf + ρI and a shifted terminal target — DDP itself is unchanged. Early subproblems are solved loosely
(tolerance ∝ ρ‖h‖²), the last one to the task's tolerance.
"""

from __future__ import annotations

import time

import numpy as np

from ..integrators.base import Linearizable
from .cost import QuadraticTrackingCost
from .ddp import ddp
from .shooting import LogFn, OptimizerResult

PENALTY_MAX = 1e9


def terminal_constrained_ddp(vi: Linearizable, cost: QuadraticTrackingCost, x0: np.ndarray, U0: np.ndarray,
                             x_goal: np.ndarray, input_limits: np.ndarray | None = None, second_order: bool = True,
                             max_iterations: int = 150, tolerance: float = 1e-6, regularization: float = 1e-6,
                             constraint_tolerance: float = 1e-6, penalty: float = 1e4, max_outer: int = 30,
                             log: LogFn = None) -> OptimizerResult:
    """min J(U) s.t. x_N(U) = x_goal; ``cost`` is the task's cost (its Qf stays, as a weight on top).

    ``max_iterations`` bounds the DDP iterations of all subproblems together; ``constraint_tolerance`` is on
    ‖x_N − x_goal‖∞; ``penalty`` is the first ρ. The result's ``cost`` is the task's J at the solution, and
    ``converged`` means the constraint holds and the last subproblem met ``tolerance``.
    """
    t0, c0 = time.perf_counter(), time.process_time()
    x_goal = np.asarray(x_goal, float)
    nx = cost.nx
    if x_goal.shape != (nx,):
        raise ValueError(f"x_goal has shape {x_goal.shape}, expected ({nx},)")
    if not (np.isfinite(penalty) and penalty > 0):
        raise ValueError(f"penalty must be positive and finite, got {penalty}")
    lam, rho = np.zeros(nx), float(penalty)
    U = np.asarray(U0, float)
    total, h_prev, hist, decs, regs, steps, kinds = 0, np.inf, [], [], [], [], []
    res, violation, reason, converged = None, np.inf, "max_iterations", False
    for outer in range(max_outer):
        W = cost.Qf + rho * np.eye(nx)
        X_ref = cost.X_ref.copy()
        X_ref[-1] = x_goal - np.linalg.solve(W, lam)  # λᵀh + ρ/2‖h‖² + ½‖h‖²_Qf as one quadratic about a target
        sub = QuadraticTrackingCost(X_ref, cost.U_ref, cost.Q, cost.R, W)
        final = violation <= 10 * constraint_tolerance
        inner_tol = tolerance if final else float(np.clip(1e-2 * rho * h_prev**2, tolerance, 1e-1))
        budget = max_iterations - total
        if budget < 1:
            reason = "max_iterations (all subproblems together)"
            break
        res = ddp(vi, sub, x0, U, input_limits=input_limits, second_order=second_order, max_iterations=budget,
                  tolerance=inner_tol, regularization=regularization, X0=None if res is None else res.X)
        total += res.iterations
        hist += res.cost_history[1:] if hist else res.cost_history
        decs += res.decrement_history
        regs += res.regularization_history
        steps += res.step_history
        kinds += res.step_kinds
        U = res.U
        h = res.X[-1] - x_goal
        violation = float(np.abs(h).max())
        if log is not None:
            log(f"[al] outer {outer}: {res.iterations} DDP iterations, |x_N - goal| {violation:.2e}, "
                f"rho {rho:.0e}, inner tolerance {inner_tol:.0e}")
        if violation <= constraint_tolerance and res.converged and inner_tol <= tolerance:
            converged, reason = True, f"|x_N - goal| = {violation:.1e} and |dJ| < {tolerance:g}"
            break
        if not res.converged and res.stop_reason != "max_iterations":
            reason = f"subproblem failed: {res.stop_reason}"
            break
        lam = lam + rho * h
        if violation > 0.25 * h_prev:
            rho = min(10 * rho, PENALTY_MAX)
        h_prev = violation
    else:
        reason = f"max_outer ({max_outer}) augmented-Lagrangian updates"
    return OptimizerResult(X=res.X, U=res.U, K=res.K, cost=cost.calc(res.X, res.U), cost_history=hist,
                           decrement_history=decs, iterations=total, converged=converged, stop_reason=reason,
                           wall_time=time.perf_counter() - t0, method=res.method + "+al",
                           regularization_history=regs, step_history=steps, step_kinds=kinds,
                           linearization=res.linearization, constraint_violation=violation,
                           outer_iterations=outer + 1, compiled=res.compiled, cpu_time=time.process_time() - c0)
