"""A guess Newton converges from: continuation for DMOC (Jimenez2013, Alg. 5.2) when the geodesic guess fails.

Newton on the conditions (31) from ``geodesic_guess`` fails on many rest-to-rest maneuvers of underactuated bodies
(1 in 10 random maneuvers of the bundled vehicle solved by Newton alone): the geodesic asks for a wrench
along the unactuated directions N_B, where the linearization at rest is not controllable (heave of the §6.1
vehicle), and large maneuvers with strong drag are far from the geodesic. Two homotopies, both solved by Newton:

1. the *relaxed* body, with an extra input along every unactuated direction, B_ε = [B, ε N_B] (fully actuated,
   the extra input penalized as 1/ε² in the cost), on the maneuver scaled to g(0)exp(s·log(g(0)⁻¹g(T))), s from
   ``_S0`` to 1 (each solution, scaled by the ratio of s, the predictor of the next);
2. ε from 1 down to ``_EPS_MIN`` on the full maneuver; after every step, the real problem from the relaxed point:
   ξ, ν as they are, and the multipliers of Φ = N_Bᵀ W = 0 from the relaxed extra inputs u_e (the cost of the
   extra input is (h/4)‖u_e‖², u_e = N_BᵀW/ε, so λ = (h/2)u_e/ε; with held inputs the constraint (Φ⁻, W⁻ − W⁺)
   gets (a⁻ + a⁺, λ_hold − N_B a⁺)).

Steps along the path adapt (halved on a failure, × 1.5 on a success).

The first maneuver scale is ``_S0``, divided by 5 (down to ``_S_MIN``) until Newton solves it, and each next
guess on the path is the secant through the last two solutions: on the skewed body of the scan
(benchmarks/bench_dmoc.py) Newton could not solve the relaxed body at s = 0.05 from the geodesic on a maneuver it
solves at s = 0.01, and the proportional predictor w·s/s_prev broke off at s = 0.54 where the secant reaches 1.

``coarse_solve`` is another warm start: the same maneuver at N/2 (solved by ``solve_dmoc`` without IPOPT: from
its geodesic, its own coarser level, its continuation), its ξ_k repeated twice and its multipliers halved (a step's
constraint multiplier scales with h) as the guess at N. Levels go down to N = ``_COARSEST``: on the skewed body,
Newton converged at N = 8 on 5 of the 7 maneuvers where the continuation at N = 32 broke off, and at N = 4 on
some where N = 8 did not.

``split_solve``, for held inputs (u_k⁻ = u_k⁺, one more constraint per step): the same maneuver with split inputs,
a relaxation of it, solved by ``solve_dmoc`` without IPOPT; its velocities are the guess. On the skewed body
Newton converged from it in 4 iterations on maneuvers where every other guess failed.

Every Newton solve is the package's ``newton_lm``; nothing here minimizes by another method, so an answer found
this way is "Newton alone" in the scan (benchmarks/bench_dmoc.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from .dmoc_newton import NewtonStats, newton_lm
from .dmoc_problem import DMOCConditions, DMOCProblem, geodesic_guess, initial_point, input_split

# A solver of a variant of the problem (a coarser level, split inputs) into a ``dmoc.DMOCResult``:
# ``solve(problem, tol, max_iterations, lm)`` is ``solve_dmoc`` without IPOPT nor the second-order check.
VariantSolver = Callable[[DMOCProblem, float, int, bool], Any]

__all__ = ["continuation_solve", "coarse_solve", "split_solve"]

_S0 = 0.05  # the first maneuver scale of phase 1
_S_MIN = 1e-3  # the first scale is divided by 5 until Newton solves it, down to this
_EPS_MIN = 1e-4  # the smallest relaxation of phase 2
_ITERATIONS = 12  # Newton iterations per continuation step (a failure halves the step)
_MIN_STEP = 1.0 / 64  # in θ (phase 1: θ = s ∈ [0, 1]; phase 2: θ = 1 − log10(ε)/4 ∈ [1, 2])
_MAX_SOLVES = 40


def continuation_solve(cond: DMOCConditions, tol: float, lm: bool, stats: NewtonStats, log=None) -> tuple | None:
    """Newton's output (w, ‖F‖∞, converged, (F, parts)) on the real problem of ``cond`` reached by the homotopy of
    the module docstring, or None when the path breaks off (step below ``_MIN_STEP`` or ``_MAX_SOLVES`` solves)."""
    prob = cond.prob
    G, B = prob.group, prob.body.input_matrix
    NB = input_split(B)[1]
    m, r = B.shape[1], NB.shape[1]
    zeta = G.log(G.inverse(np.asarray(prob.g0, float)) @ np.asarray(prob.gT, float))
    theta_end = 2.0 if r else 1.0

    def problem(theta: float) -> tuple[DMOCConditions, float, float]:
        s, eps = min(theta, 1.0), 10.0 ** (-4.0 * max(theta - 1.0, 0.0))
        p = prob if s == 1.0 else dataclasses.replace(prob, gT=np.asarray(prob.g0, float) @ G.exp(s * zeta))
        if r == 0:
            return (cond if s == 1.0 else DMOCConditions(p)), s, eps
        return DMOCConditions(p, np.hstack([B, eps * NB])), s, eps

    theta, step, good, good_theta, solves, before = _S0, 0.25, None, _S0, 0, None
    while solves < _MAX_SOLVES:
        c, s, eps = problem(theta)
        if good is None:
            w0 = initial_point(c, geodesic_guess(c.prob))
        elif before is not None and before[1] < good[1] and s > good[1]:
            (w_b, s_b), (w_g, s_g) = before, good  # secant predictor along the path of solutions
            w0 = w_g + (s - s_g) / (s_g - s_b) * (w_g - w_b)
        else:
            w_prev, s_prev = good
            w0 = w_prev * (s / s_prev)  # (a no-op in phase 2)
        solves += 1
        w, fn, ok, last = newton_lm(c, w0, tol, _ITERATIONS, lm, stats)
        if not ok:
            if good is None:  # not even the shortest maneuver yet: a shorter one
                theta = good_theta = theta / 5.0
                if theta < _S_MIN:
                    return None
                continue
            step *= 0.5
            if step < _MIN_STEP:
                return None
            theta = min(good_theta + step, theta_end)
            continue
        before, good, good_theta = good, (w, s), theta
        if log is not None:
            log(f"[dmoc] continuation: θ = {theta:.3f} (s = {s:.3g}, ε = {eps:.2g}) solved")
        if r == 0 and theta >= theta_end:
            return w, fn, ok, last
        if theta > 1.0 or (r and theta >= 1.0):
            out = newton_lm(cond, _to_real(cond, c, w, last[1], eps, NB, m), tol, _ITERATIONS, lm, stats)
            if out[2]:
                return out
            if theta >= theta_end:
                return None
        step *= 1.5
        theta = min(theta + step, theta_end)
    return None


_COARSEST = 4  # no coarser level below this N


def _solved_variant(prob, solve: VariantSolver, tol: float, max_iterations: int, lm: bool, stats: NewtonStats):
    """The variant problem ``prob`` solved by ``solve`` (its Newton iterations counted in ``stats``), or None
    when its answer is not stationary."""
    res = solve(prob, tol, max_iterations, lm)
    stats.iterations += res.iterations
    stats.lm_iterations += res.lm_iterations
    return res if res.stationary else None


def coarse_solve(
    cond: DMOCConditions, solve: VariantSolver, tol: float, max_iterations: int, lm: bool, stats: NewtonStats, log=None
) -> tuple | None:
    """Newton's output on the problem of ``cond`` from the solution at N/2 (module docstring), or None when N/2 is
    below ``_COARSEST``, N is odd, or the coarse problem is not solved."""
    N = cond.N
    if N % 2 or N // 2 < _COARSEST:
        return None
    coarse = _solved_variant(dataclasses.replace(cond.prob, horizon=N // 2), solve, tol, max_iterations, lm, stats)
    if coarse is None:
        return None
    if log is not None:
        log(f"[dmoc] coarse level N = {N // 2} solved by {coarse.path}: its solution as the guess at N = {N}")
    w0 = initial_point(cond, np.repeat(coarse.xi, 2, axis=0))
    w0[cond.off_lam :] = 0.5 * np.repeat(coarse.lam, 2, axis=0).ravel()
    return newton_lm(cond, w0, tol, max_iterations, lm, stats, log)


def split_solve(
    cond: DMOCConditions, solve: VariantSolver, tol: float, max_iterations: int, lm: bool, stats: NewtonStats, log=None
) -> tuple | None:
    """Newton's output on a problem with held inputs (u_k⁻ = u_k⁺) from the solution of the same maneuver with
    split inputs (module docstring), or None for split inputs or when that problem is not solved."""
    if cond.prob.inputs != "hold":
        return None
    split = _solved_variant(dataclasses.replace(cond.prob, inputs="split"), solve, tol, max_iterations, lm, stats)
    if split is None:
        return None
    if log is not None:
        log(f"[dmoc] split inputs solved by {split.path}: its velocities as the guess with held inputs")
    return newton_lm(cond, initial_point(cond, split.xi), tol, max_iterations, lm, stats, log)


def _to_real(
    cond: DMOCConditions, relaxed: DMOCConditions, w: np.ndarray, parts: dict, eps: float, NB: np.ndarray, m: int
) -> np.ndarray:
    """The real problem's unknowns from a relaxed solution (module docstring, step 2)."""
    h = cond.h
    am, ap = 0.5 * h * parts["um"][:, m:] / eps, 0.5 * h * parts["up"][:, m:] / eps
    if cond.prob.inputs == "split":
        lam = np.hstack([am, ap])
    else:
        lam = np.hstack([am + ap, parts["lam"] - ap @ NB.T])
    return np.concatenate([w[: relaxed.off_lam], lam.ravel()])
