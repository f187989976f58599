"""A terminal state constraint x_N = x_goal by an augmented Lagrangian around DDP.

A stiff terminal weight (Qf ~ 1e6) is the usual way to make a shooting method end at a goal, and the reason
acrobot and cart-pole swing-ups took 100+ DDP iterations whose path hinged on round-off: the model predicts
removing the whole terminal error in one step, the line search accepts a few percent of it, and small
differences grow ~1.6× per iteration (docs/benchmarks/planner.md). Here the goal is an equality constraint
h = x_N − x_goal and DDP solves a sequence of well-conditioned problems

    J_ρ,λ = J + λᵀh + ρ/2 ‖h‖²,        λ ← λ + ρ h,   ρ ← 10ρ when ‖h‖ did not shrink ×4

(the method of multipliers: Hestenes 1969, Powell 1969; for DDP e.g. Howell, Jackson, Manchester 2019). The
augmented terms are a quadratic in x_N, so each subproblem is the same QuadraticTrackingCost with terminal
weight Qf + ρI and a shifted terminal target — DDP itself is unchanged. Early subproblems are solved loosely
(tolerance ∝ ρ‖h‖²), the last one to the task's tolerance.

A warm start (inputs near a solution, e.g. a previous plan's) also needs the multiplier: from λ = 0 the first
subproblem's optimum lies off the constraint by ~λ*/ρ and the method of multipliers walks back over several outer
updates (the acrobot's optimal inputs took 15 DDP iterations in 7 updates to re-converge). ``terminal_multiplier``
gives the first-order estimate at given inputs, the λ that best satisfies stationarity ∇_U J + (∂x_N/∂U)ᵀλ = 0 on
the inputs inside their bounds (least squares; exact at a regular solution).
"""

from __future__ import annotations

import time

import numpy as np

from ..integrators.base import Linearizable, StepError
from .cost import QuadraticTrackingCost
from .ddp import ddp, stage_passes
from .shooting import LogFn, OptimizerResult, input_bounds

# ρ and the loosest inner tolerance are bounded relative to the caller's own options in units of the cost (ρ₀ =
# ``penalty``, ``tolerance``), not absolutely: weights, penalty and tolerance all × 2^20 (cart-pole swing-up) hit an
# absolute ρ cap of 1e9 at the first update and ended after 30 updates unconverged; for the defaults (ρ₀ = 1e4,
# tolerance 1e-6) the bounds are the absolute 1e9 and 1e-1 of before.
# (written as ratios to the defaults so that these give exactly 1e9 and 1e-1: 1e5·1e-6 is 0.09999999999999999)
PENALTY_MAX, DEFAULT_PENALTY = 1e9, 1e4  # ρ ≤ PENALTY_MAX·ρ₀/DEFAULT_PENALTY
LOOSEST_INNER_TOLERANCE, DEFAULT_TOLERANCE = 1e-1, 1e-6  # early subproblems: |dJ| ≤ 1e-1·tolerance/1e-6 at most


def terminal_multiplier(
    vi: Linearizable, cost: QuadraticTrackingCost, x0: np.ndarray, U: np.ndarray, input_limits: np.ndarray | None = None
) -> np.ndarray:
    """Least-squares multiplier λ (nx,) of x_N = x_goal at inputs U (N, nu): argmin ‖g + Gᵀλ‖ over the inputs
    strictly inside their bounds, with g = ∇_U J and G = ∂x_N/∂U by one adjoint sweep along the rollout of U
    (A_k, B_k of the exact linearization). ValueError if U cannot be simulated or the state is not a vector."""
    nx = cost.nx
    if vi.state.ndx != nx:
        raise ValueError(f"terminal_multiplier: needs a vector state (ndx = nx), got ndx = {vi.state.ndx}, nx = {nx}")
    lo, hi = input_bounds(input_limits, vi.nu)
    U = np.asarray(U, float)
    stages = stage_passes(vi, len(U), lo, hi, second_order=False)
    ro = stages.rollout(np.asarray(x0, float), U)
    if ro is None:
        raise ValueError("terminal_multiplier: the inputs cannot be simulated")
    X, Ua = ro[0], ro[1]
    lins = stages.linearization(stages.linearize(*ro))
    lx, lu = cost.calc_diff_all(X, Ua)
    p, S = cost.calc_diff_terminal(X[-1])[0], np.eye(nx)  # adjoint of J, and ∂x_N/∂x_k
    g, G = np.zeros_like(Ua), np.zeros((len(Ua), nx, vi.nu))
    for k in range(len(Ua) - 1, -1, -1):
        lin = lins[k]
        g[k] = lu[k] + lin.B.T @ p
        G[k] = S @ lin.B
        p = lx[k] + lin.A.T @ p
        S = S @ lin.A
    # an input at its bound need not be stationary; "at" relative to the bound (an absolute 1e-9 counted the bounded
    # pendulum × 2⁻³⁰'s inputs within 1.07 N·m, unscaled, of its ±5 N·m as bound: λ then depended on the unit of mass)
    margin = 1e-9 * np.maximum(np.abs(np.where(np.isfinite(lo), lo, 0.0)), np.abs(np.where(np.isfinite(hi), hi, 0.0)))
    free = (Ua > lo + margin) & (Ua < hi - margin)
    Gf = G.transpose(1, 0, 2)[:, free]  # (nx, free inputs)
    # columns of Gᵀ equilibrated: x_N's rows mix units (positions ∝ 1/mass, momenta ∝ 1 per unit input), and the least
    # squares cut off at the ill-conditioning of that mix (the bounded pendulum × 2⁻³⁰: λ 29 % off, λ_p lost)
    d = np.linalg.norm(Gf, axis=1)
    d = np.where(d > 0.0, d, 1.0)
    return -np.linalg.lstsq(Gf.T / d, g[free], rcond=None)[0] / d


def terminal_constrained_ddp(
    vi: Linearizable,
    cost: QuadraticTrackingCost,
    x0: np.ndarray,
    U0: np.ndarray,
    x_goal: np.ndarray,
    input_limits: np.ndarray | None = None,
    second_order: bool = True,
    max_iterations: int = 150,
    tolerance: float = 1e-6,
    regularization: float = 1e-6,
    constraint_tolerance: float = 1e-6,
    penalty: float = 1e4,
    max_outer: int = 30,
    log: LogFn = None,
    multiplier: np.ndarray | str | None = None,
) -> OptimizerResult:
    """min J(U) s.t. x_N(U) = x_goal; ``cost`` is the task's cost (its Qf stays, as a weight on top).

    ``max_iterations`` bounds the DDP iterations of all subproblems together; ``constraint_tolerance`` is on
    ‖x_N − x_goal‖∞; ``penalty`` is the first ρ; ``multiplier`` the first λ (nx,): None for 0 (a cold start),
    ``"estimate"`` for ``terminal_multiplier`` at U0 (a warm start). The result's ``cost`` is the task's J at the
    solution, ``converged`` means the constraint holds and the last subproblem met ``tolerance``, and
    ``terminal_multiplier`` is the last λ; ``merit`` the first subproblem's cost (the augmented Lagrangian of the first
    λ and ρ) at U0's rollout and at the solution: the one measure by which the two compare, as J does not.
    """
    t0, c0 = time.perf_counter(), time.process_time()
    x_goal = np.asarray(x_goal, float)
    nx = cost.nx
    if x_goal.shape != (nx,):
        raise ValueError(f"x_goal has shape {x_goal.shape}, expected ({nx},)")
    if not (np.isfinite(penalty) and penalty > 0):
        raise ValueError(f"penalty must be positive and finite, got {penalty}")
    rho, U = float(penalty), np.asarray(U0, float)
    rho_max = PENALTY_MAX * (rho / DEFAULT_PENALTY)
    loosest = LOOSEST_INNER_TOLERANCE * (tolerance / DEFAULT_TOLERANCE)
    if multiplier is None:
        lam = np.zeros(nx)
    elif isinstance(multiplier, str):
        if multiplier != "estimate":
            raise ValueError(f"multiplier: expected None, 'estimate' or ({nx},) numbers, got {multiplier!r}")
        try:
            lam = terminal_multiplier(vi, cost, x0, U, input_limits)
        except (ValueError, StepError, np.linalg.LinAlgError) as e:  # a warm start that is no help: start at 0
            lam = np.zeros(nx)
            if log is not None:
                log(f"[al] no multiplier estimate at the initial inputs ({e}); starting from 0")
    else:
        lam = np.asarray(multiplier, float)
        if lam.shape != (nx,) or not np.all(np.isfinite(lam)):
            raise ValueError(f"multiplier: expected {nx} finite numbers, got {multiplier!r}")
    total, h_prev, hist, decs, regs, steps, kinds = 0, np.inf, [], [], [], [], []
    first = None  # (the first subproblem's cost: the merit the result is measured by, ``OptimizerResult.merit``)
    res, violation, reason, converged = None, np.inf, "max_iterations", False
    for outer in range(max_outer):
        W = cost.Qf + rho * np.eye(nx)
        X_ref = cost.X_ref.copy()
        X_ref[-1] = x_goal - np.linalg.solve(W, lam)  # λᵀh + ρ/2‖h‖² + ½‖h‖²_Qf as one quadratic about a target
        sub = QuadraticTrackingCost(X_ref, cost.U_ref, cost.Q, cost.R, W)
        first = sub if first is None else first
        final = violation <= 10 * constraint_tolerance
        inner_tol = tolerance if final else float(np.clip(1e-2 * rho * h_prev**2, tolerance, loosest))
        budget = max_iterations - total
        if budget < 1:
            reason = "max_iterations (all subproblems together)"
            break
        res = ddp(
            vi,
            sub,
            x0,
            U,
            input_limits=input_limits,
            second_order=second_order,
            max_iterations=budget,
            tolerance=inner_tol,
            regularization=regularization,
            X0=None if res is None else res.X,
        )
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
            log(
                f"[al] outer {outer}: {res.iterations} DDP iterations, |x_N - goal| {violation:.2e}, "
                f"rho {rho:.0e}, inner tolerance {inner_tol:.0e}"
            )
        if violation <= constraint_tolerance and res.converged and inner_tol <= tolerance:
            converged, reason = True, f"|x_N - goal| = {violation:.1e} and |dJ| < {tolerance:g}"
            break
        if not res.converged and res.stop_reason != "max_iterations":
            reason = f"subproblem failed: {res.stop_reason}"
            break
        lam = lam + rho * h
        if violation > 0.25 * h_prev:
            rho = min(10 * rho, rho_max)
        h_prev = violation
    else:
        reason = f"max_outer ({max_outer}) augmented-Lagrangian updates"
    return OptimizerResult(
        X=res.X,
        U=res.U,
        K=res.K,
        cost=cost.calc(res.X, res.U),
        cost_history=hist,
        decrement_history=decs,
        iterations=total,
        converged=converged,
        stop_reason=reason,
        wall_time=time.perf_counter() - t0,
        method=res.method + "+al",
        regularization_history=regs,
        step_history=steps,
        step_kinds=kinds,
        linearization=res.linearization,
        constraint_violation=violation,
        outer_iterations=outer + 1,
        merit=(hist[0], first.calc(res.X, res.U)),
        compiled=res.compiled,
        cpu_time=time.process_time() - c0,
        terminal_multiplier=lam + rho * (res.X[-1] - x_goal),
    )
