"""Differential dynamic programming on a discrete system (second order) and iLQR (Gauss–Newton).

Backward pass (Mayne's DDP; Tassa, Erez, Todorov 2012 for regularization/line search), with
V'_x = V_x(k+1):

    Q_x  = l_x + AᵀV'_x                      Q_u  = l_u + BᵀV'_x
    Q_xx = l_xx + AᵀV'_xxA + Σᵢ V'_x,i ∂²fᵢ/∂x²
    Q_ux = l_ux + BᵀV'_xxA + Σᵢ V'_x,i ∂²fᵢ/∂u∂x
    Q_uu = l_uu + BᵀV'_xxB + Σᵢ V'_x,i ∂²fᵢ/∂u²

The Σᵢ terms are the second-order linearization of Johnson2015 (eqs. 16–27) contracted with the
covector V'_x — exactly ``second_order_contraction(vi, x, u, V'_x)``; iLQR drops them.
Regularization (Tassa, Erez, Todorov 2012, their eq. 10): the cost-to-go is shifted, V'_xx + μI, which
enters as Q_uu + μBᵀB and Q_ux + μBᵀA — scale-aware where a shift of Q_uu alone is not; μ in multiples of
``regularization_unit`` (the plan must not depend on the units of the cost and of the momenta). μ is raised ×10
when the regularized Q_uu is not positive definite or the line search fails, and lowered ×10 after full
steps. Where the second-order Q_uu is not positive definite at the current μ, the iteration takes the
Gauss–Newton (iLQR) step instead and skips the second-order attempt for the next iteration (a failed attempt
stops within the last stages, where V'_x is large, so it costs little; a longer backoff delayed Newton's quadratic
convergence by up to 4 iterations once the model had become convex).
Input bounds: each step δu solves the box QP
min ½δuᵀQ_uuδu + Q_uᵀδu s.t. lo ≤ U_k + δu ≤ hi by projected Newton (Bertsekas 1982, as in Tassa,
Mansard, Todorov 2014); feedback rows of clamped inputs are zero. The forward pass is the nonlinear
rollout u = clip(U + αk + K(x − X)) with backtracking on α (accept if the actual decrease is at
least 10 % of the quadratic model's).

``ddp`` below is the one implementation of these iterations, for every ``Linearizable``. It works through stage
passes (``stage_passes``: rollout, linearization, backward pass over all N stages): in C, one call per pass, where
the system offers a compiled step (``compiled.CompiledStages``, the accelerator), else per stage in numpy
(``_NumpyStages``, the general path); the two compute the same operations and agree to round-off.
"""

from __future__ import annotations

import time
from typing import NamedTuple

import numpy as np

from ..control.lqr import tv_lqr
from ..integrators.base import Linearizable
from ..linearization import linearize, second_order_contraction
from .compiled import backward_pass, compiled_stages
from .cost import QuadraticTrackingCost
from .shooting import (
    LogFn,
    OptimizerResult,
    check_optimizer_options,
    check_problem,
    initial_rollout,
    input_bounds,
    local_model,
    progress_line,
    reference_jacobians,
    rollout,
)


class _NumpyStages:
    """The stage passes of any Linearizable: the rollout and linearization per stage in Python, the backward pass in C
    (``compiled.BackwardPass``, the one implementation, with V'_x·∂²f of each stage called back from
    ``second_order_contraction``). ``compiled.CompiledStages`` runs all three in C where the system offers a compiled
    step."""

    compiled = False

    def __init__(self, vi: Linearizable, N: int, lo: np.ndarray, hi: np.ndarray):
        self.vi, self.lo, self.hi = vi, lo, hi
        self._backward = backward_pass(N, vi.state.ndx, vi.nu, lo, hi)

    @property
    def second_order_taken(self) -> bool:
        """Which pass the last backward call returned (``BackwardPass.second_order_taken``)."""
        return self._backward.second_order_taken

    def rollout(self, x0, U, X_nom=None, K=None, predict=False):
        return rollout(self.vi, x0, U, None if predict else X_nom, self.lo, self.hi, X_nom, K)

    def reference_jacobians(self, X, U):
        return reference_jacobians(self.vi, X, U)

    def linearize(self, X, U, results):
        return [linearize(self.vi, X[k], U[k], results[k]) for k in range(len(U))]

    def backward(self, cost, X, U, results, lins, mu, second_order, metric=None, fallback=False):
        A, B = np.array([lin.A for lin in lins]), np.array([lin.B for lin in lins])

        def contract(k: int, Vx: np.ndarray):
            return second_order_contraction(self.vi, X[k], U[k], Vx, results[k], lin=lins[k])

        return self._backward(A, B, U, local_model(cost, X, U, metric), mu, second_order, contract, fallback)

    @staticmethod
    def linearization(lins):
        return lins


def stage_passes(vi: Linearizable, N: int, lo: np.ndarray, hi: np.ndarray, second_order: bool = True):
    """The stage passes (``rollout``, ``linearize``, ``backward``, ``linearization``) over N stages: in C where the
    system offers a compiled step (``compiled.CompiledStages``), else per stage in Python (``_NumpyStages``)."""
    return compiled_stages(vi, N, lo, hi, second_order) or _NumpyStages(vi, N, lo, hi)


class Rollout(NamedTuple):
    """A rollout from x0 as ``stage_passes`` computed it: states X (N+1, nx), the inputs applied U (N, nu), each
    step's solution ``results`` (Y (N, ny) on the compiled path, ``StepResult``s on the numpy path), which path
    computed them (``compiled``) and on which system."""

    X: np.ndarray
    U: np.ndarray
    results: object
    compiled: bool
    system: Linearizable


def feedback_rollout(
    vi: Linearizable,
    x0: np.ndarray,
    X: np.ndarray,
    U: np.ndarray,
    K: np.ndarray | None = None,
    weights: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    input_limits: np.ndarray | None = None,
) -> Rollout | None:
    """A closed-loop rollout from x0 that follows (X, U) under TV-LQR gains: u_k = clip(U_k + K_k (X_k ⊖ x_k)), the
    controller's law (Johnson2015, §VIII) — its applied inputs are the initial guess ``feedback_initial_guess``, and
    ``ddp(..., initial=...)`` starts from its states instead of replaying them. Open loop, such a guess falls away
    from an unstable trajectory before the optimizer starts (a pendulum held at the top), or, from a start 0.01 rad
    off, ends far from a swing-up's goal (the acrobot's rollout amplifies a difference ~1e3×). None if a step fails.

    The gains, exactly one of:

    - ``K`` (N, nu, ndx): a plan's own (the warm start of a re-plan). X is then a trajectory of this system:
      Newton starts each step at X's next state shifted by x_k ⊖ X_k, and the rollout runs in C where the system
      has compiled stages (``stage_passes``).
    - ``weights`` = (Q, R, Qf): TV-LQR (Johnson2015, eq. 36) of (X, U) itself, a reference that need not satisfy the
      dynamics (a step, Johnson2015, eq. 35; a resampled collocation): Newton starts at the step's own predictor, as
      X's states may be far from any solution (the task's ``initial_guess: feedback``, the collocation polish). A
      reference that holds one state under one input throughout (a goal reference) is linearized once.
    """
    if (K is None) == (weights is None):
        raise ValueError("feedback_rollout: give the gains K or the weights (Q, R, Qf) to compute them, one")
    lo, hi = input_bounds(input_limits, vi.nu)
    x0, U = np.asarray(x0, float), np.asarray(U, float)
    stages = stage_passes(vi, len(U), lo, hi, second_order=False)
    if K is None:
        # (a reference stage the system cannot step from — a resampled collocation too fast for the VI — is a failed
        # guess: callers fall back to open loop)
        K_ro = _reference_gains(vi, stages, np.asarray(X, float), U, weights)
        if K_ro is None:
            return None
        ro = stages.rollout(x0, U, X, K_ro, predict=True)
    else:
        ro = stages.rollout(x0, U, X, -np.asarray(K, float))
    return None if ro is None else Rollout(ro[0], np.array(ro[1]), ro[2], stages.compiled, vi)


GOAL_GAINS_KEPT = 8  # goal references whose gains one set of compiled stages remembers


def _reference_gains(vi: Linearizable, stages, X: np.ndarray, U: np.ndarray, weights: tuple) -> np.ndarray | None:
    """−K (N, nu, ndx), K the TV-LQR gains (Johnson2015, eq. 36) of the reference (X, U) under ``weights`` — negated:
    the rollout's convention u = U + K_ro (x − X) — or None where a reference stage cannot be stepped from.

    A reference that holds one state under one input throughout (a goal reference) is linearized once, every stage
    being the same step; its gains depend on that state and input, the weights and N, not on where the plan starts, so
    compiled stages (one system, horizon and input box) remember those of their last ``GOAL_GAINS_KEPT`` goals: each
    re-plan, MPC restart or request to the same goal skips the linearization and the Riccati sweep (a panda plan
    ~0.12 ms of ~2.9). Keyed by the numbers themselves, so another goal or weights computes anew."""
    memo = getattr(stages, "goal_gains", None) if _holds_one_step(X, U) else None
    key = None
    if memo is not None:
        key = (X[0].tobytes(), U[0].tobytes(), *(_weight_key(w) for w in weights))
        hit = memo.get(key)
        if hit is not None:
            return hit
    AB = _reference_jacobians(vi, stages, X, U)
    if AB is None:
        return None
    K_ro = -tv_lqr(*AB, *weights)[0]
    if key is not None and GOAL_GAINS_KEPT > 0:
        while len(memo) >= GOAL_GAINS_KEPT:
            memo.pop(next(iter(memo)))
        K_ro.setflags(write=False)  # (shared by every rollout that reads it)
        memo[key] = K_ro
    return K_ro


def _holds_one_step(X: np.ndarray, U: np.ndarray) -> bool:
    """Whether a reference holds one state under one input at every stage (a goal reference): one step throughout."""
    return len(U) > 1 and bool((X[:-1] == X[0]).all()) and bool((U == U[0]).all())


def _weight_key(W) -> tuple:
    W = np.asarray(W, float)
    return W.shape, W.tobytes()


def _reference_jacobians(vi: Linearizable, stages, X: np.ndarray, U: np.ndarray) -> tuple | None:
    """The stages' ``reference_jacobians`` (A_k, B_k of each reference stage), where a reference that holds one state
    under one input throughout (a goal reference) is linearized once: every stage is then the same step."""
    if _holds_one_step(X, U):
        AB = reference_jacobians(vi, X[:2], U[:1])
        return None if AB is None else tuple(np.repeat(M, len(U), axis=0) for M in AB)
    return stages.reference_jacobians(X, U)


def feedback_initial_guess(
    vi: Linearizable, x0: np.ndarray, X: np.ndarray, U: np.ndarray, **gains
) -> np.ndarray | None:
    """Initial inputs (N, nu): the inputs applied in ``feedback_rollout(vi, x0, X, U, **gains)`` — ``gains`` its
    ``K`` or ``weights``, and ``input_limits`` — or None if a step of that rollout fails."""
    ro = feedback_rollout(vi, x0, X, U, **gains)
    return None if ro is None else ro.U


def reference_feedback_guess(
    vi: Linearizable,
    x0: np.ndarray,
    X_ref: np.ndarray,
    U_ref: np.ndarray,
    weights: tuple[np.ndarray, np.ndarray, np.ndarray],
    input_limits: np.ndarray | None = None,
) -> np.ndarray:
    """Initial inputs (N, nu) about a reference (X_ref, U_ref): ``feedback_initial_guess`` under TV-LQR of
    ``weights`` = (Q, R, Qf), or, when a step of that closed-loop rollout fails, a copy of U_ref (open loop). The
    guess of the task's ``initial_guess: feedback`` and of the collocation polishes (a resampled collocation the
    VI cannot step from is such a failure)."""
    U0 = feedback_initial_guess(vi, x0, X_ref, U_ref, weights=weights, input_limits=input_limits)
    return np.array(U_ref, float) if U0 is None else U0


def regularization_unit(cost: QuadraticTrackingCost, B: np.ndarray) -> float:
    """c = min(1, ‖R + Bᵀ(Q + Q_f)B‖₂ / ‖B‖₂²) with B = B_0 (nx, nu) of the first stage: the unit of ddp's
    regularization μ (its bounds 1e-9, 1e-6 and 1e10 and the ``regularization`` option are multiples of c).

    μ shifts V'_xx by μI, so it enters Q_uu as μBᵀB against the Gauss–Newton curvature R + BᵀV'_xxB: the ratio above
    is the shift at which the two compare, in the cost's units and the state's. Fixed bounds broke the invariances of
    the optimal plan (weights × s; masses, torques and momentum weights in consistent units): a pendulum in
    milligrams planned with its cost in the same units (weights ~2⁻⁴⁰) reported convergence 3.9 rad off the plan in
    kilograms; with weights × 2⁻⁴⁰ it ended unconverged. Capped at 1, so that unit-scale problems (c ≥ 1: R ≳ ‖B‖²)
    keep the absolute μ they were tuned with, as ``NewtonSettings.momentum_scale`` does for momenta. ``ddp`` takes B
    from its first linearization pass.
    """
    B = np.asarray(B, float)
    # (largest eigenvalues of symmetric matrices: the 2-norms squared of B and of the positive semidefinite W,
    # at half the cost of two SVDs; both in one call)
    M = np.stack([B.T @ B, cost.R + B.T @ (cost.Q + cost.Qf) @ B])
    ev = M.reshape(2, 1) if M.shape[1] == 1 else np.linalg.eigvalsh(M)  # (one input: LAPACK returns the entry itself)
    bb, w = float(ev[0, -1]), float(np.abs(ev[1]).max())
    c = w / bb if bb > 0.0 else 1.0
    # (no lower cap in use: 1e-250 only keeps 1e-9·c a normal number, so that a failed pass always raises μ)
    return float(np.clip(c, 1e-250, 1.0)) if np.isfinite(c) and c > 0.0 else 1.0


def _is_rollout_of(ro: Rollout | None, vi, x0, U0, lo: np.ndarray, hi: np.ndarray, compiled: bool) -> bool:
    """Whether ``ro`` is the rollout of U0 from x0 that ``ddp`` would compute: the same system, start and inputs,
    inputs within the bounds (so that no clip changes them) and results of the same stage path."""
    return (
        ro is not None
        and ro.system is vi
        and ro.compiled == compiled
        and np.array_equal(ro.X[0], x0)
        and np.array_equal(ro.U, U0)
        and bool(np.all((ro.U >= lo) & (ro.U <= hi)))
    )


def ddp(
    vi: Linearizable,
    cost: QuadraticTrackingCost,
    x0: np.ndarray,
    U0: np.ndarray,
    input_limits: np.ndarray | None = None,
    second_order: bool = True,
    max_iterations: int = 100,
    tolerance: float = 1e-6,
    regularization: float = 1e-6,
    log: LogFn = None,
    metric: tuple[np.ndarray, np.ndarray] | None = None,
    method: str | None = None,
    X0: np.ndarray | None = None,
    initial: Rollout | None = None,
) -> OptimizerResult:
    """DDP (``second_order=True``, Johnson2015's second-order method) or iLQR from the inputs U0.

    ``X0``: the trajectory U0 produced before (warm start of the initial rollout's Newton steps). Stops when the
    directional derivative of J along the Newton direction, |Σ k_kᵀQ_u,k|, falls below ``tolerance`` (the seed's
    measure, Fig. 3: 1e-6), or when no step decreases J. ``initial``: U0's own rollout from x0 (``feedback_rollout``'s,
    whose applied inputs are U0): its states are taken as they are instead of replaying U0 — used only where it is
    that rollout (this system, its start x0, its inputs U0 within the bounds, the same stage path).
    """
    check_optimizer_options(max_iterations, tolerance, regularization)
    check_problem(vi, cost, x0, U0, X0)
    method = method or ("ddp" if second_order else "ilqr")
    armijo = metric is not None  # a first-order model's d2 is no prediction: plain Armijo on d1
    t0, c0 = time.perf_counter(), time.process_time()
    lo, hi = input_bounds(input_limits, vi.nu)
    stages = stage_passes(vi, cost.N, lo, hi, second_order)
    if _is_rollout_of(initial, vi, x0, U0, lo, hi, stages.compiled):
        X, U, results = initial.X, initial.U, initial.results
    else:
        lo, hi, X, U, results = initial_rollout(vi, x0, U0, cost.N, input_limits, X0, stages.rollout)
    J = cost.calc(X, U)
    hist, decs, regs, steps, kinds = [J], [], [], [], []
    mu = mu_min = mu_max = mu_floor = None  # (in units of c, from the first linearization below)
    converged, reason, it = False, "max_iterations", 0
    Kfb = np.zeros((cost.N, vi.nu, vi.state.ndx))
    final_lin = None
    wait = 0  # iterations to skip the Newton attempt after it failed (its cost is wasted)
    for it in range(1, max_iterations + 1):
        lin_list = stages.linearize(X, U, results)
        if mu is None:  # (a metric sets its own curvature)
            c = regularization_unit(cost, stages.linearization(lin_list)[0].B) if metric is None else 1.0
            mu, mu_min, mu_max, mu_floor = regularization * c, 1e-9 * c, 1e10 * c, 1e-6 * c
        newton = second_order and wait == 0
        wait = max(wait - 1, 0)
        while True:
            # (a Newton pass that fails is taken again as Gauss–Newton within the same call: fallback)
            step = stages.backward(cost, X, U, results, lin_list, mu, newton, metric, fallback=True)
            if newton and not stages.second_order_taken:  # the second-order model is not convex here: the
                newton, wait = False, 1  # Gauss–Newton (iLQR) step, and no Newton attempt in the next iteration
            if step is not None:
                kff, Kfb, d1, d2 = step
                break
            mu = max(mu * 10, mu_floor)
            if mu > mu_max:
                break
        kinds.append("newton" if newton else "gauss-newton" if metric is None else "metric")
        if mu > mu_max:
            reason, it = "regularization exceeded its maximum in the backward pass", it - 1
            break
        decs.append(d1)
        if abs(d1) < tolerance:
            converged, reason, it = True, f"|dJ| = {abs(d1):.1e} < tolerance", it - 1
            final_lin = stages.linearization(lin_list)  # A_k, B_k at the returned trajectory: TV-LQR reuses them
            break
        alpha, accepted = 1.0, False
        while alpha > (1e-10 if armijo else 1e-4):
            ro = stages.rollout(X[0], U + alpha * kff, X, Kfb)
            if ro is not None:
                Jn = cost.calc(ro[0], ro[1])
                expected = alpha * d1 + alpha**2 * d2
                if (
                    armijo
                    and Jn <= J + 1e-4 * alpha * d1
                    or not armijo
                    and Jn < J
                    and (expected >= 0 or (Jn - J) / expected >= 0.1)
                ):
                    accepted = True
                    break
            alpha *= 0.5
        if accepted:
            X, U, results = ro
            J = Jn
            mu = max(mu / 10, mu_min) if alpha == 1.0 else mu
        else:
            mu = max(mu * 10, mu_floor)
            if mu > mu_max:
                reason = "line search failed at maximum regularization"
                break
        hist.append(J)
        regs.append(mu)
        steps.append(alpha if accepted else 0.0)
        if log is not None:
            log(progress_line(method, it, J, d1, alpha if accepted else 0.0, mu))
    return OptimizerResult(
        X=X,
        U=U,
        K=-Kfb,
        cost=J,
        cost_history=hist,
        decrement_history=decs,
        iterations=it,
        converged=converged,
        stop_reason=reason,
        wall_time=time.perf_counter() - t0,
        method=method,
        regularization_history=regs,
        step_history=steps,
        step_kinds=kinds,
        linearization=final_lin,
        compiled=stages.compiled,
        cpu_time=time.process_time() - c0,
    )
