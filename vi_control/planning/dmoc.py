"""Discrete variational optimal control on Lie groups: Jimenez2013, §5, Algorithm 5.2, solved by Newton (+ LM).

Minimum effort between two boundary states (g(0), ξ(0)) and (g(T), ξ(T)) of a rigid body (SO(3)/SE(3)) with
l(ξ) = ½⟨𝕀ξ, ξ⟩, forces f(ξ, u) = Hξ + Bu (drag, §6.1) and cost C(u) = ½‖u‖² (§5.1). Per step k, with
μ_k = (dτ⁻¹_{hξ_k})*𝕀ξ_k and μ_k⁺ = (dτ⁻¹_{−hξ_k})*𝕀ξ_k (``mechanics.euler_poincare``), eqs. 26–27 give the inputs

    B u_k⁻ = (2/h)(μ_k − ν_k) − Hξ_k =: W_k⁻,        B u_k⁺ = (2/h)(ν_{k+1} − μ_k⁺) − Hξ_k =: W_k⁺,

so u_k^± = B⁺W_k^± and, when B has rank m < n, the underactuation constraints Φ_k^± = N_Bᵀ W_k^± = 0 (eq. 23; N_B
spans the unactuated directions: e₆ for the vehicle of §6.1). With S_k = (h/4)(‖u_k⁻‖² + ‖u_k⁺‖²) + λ_k·Φ_k
(eq. 30), Algorithm 5.2 solves for (ξ_0…ξ_{N−1}, ν_1…ν_{N−1}, λ_k^±) the discrete necessary conditions (31):

    (dτ⁻¹_{−hξ_{k−1}})* ∂_ξS_{k−1} − (dτ⁻¹_{hξ_k})* ∂_ξS_k = 0,  ∂_{ν'}S_{k−1} + ∂_νS_k = 0   (k = 1…N−1)
    Φ_k = 0 (k = 0…N−1),    τ⁻¹(τ(hξ_{N−1})⁻¹ ⋯ τ(hξ_0)⁻¹ g(0)⁻¹ g(T)) = 0,

with ν_0 = 𝕀ξ(0), ν_N = 𝕀ξ(T) (§5 boundary conditions). The first line is stationarity under the variations
that keep the composition g(0)⁻¹g(T) fixed (§4.1), so the terminal pose needs no multiplier.

``inputs='split'`` is the paper's formulation (u_k⁻, u_k⁺ independent). ``inputs='hold'`` adds u_k⁻ = u_k⁺
(the constraint becomes (Φ_k⁻, W_k⁻ − W_k⁺) = 0): a zero-order-hold actuator, which ``LieGroupVI`` steps exactly,
so a hold plan is reproduced by the integrator to solver tolerance. Newton uses the exact Jacobian (CasADi AD of
S_k, compiled), a sparse LU, a backtracking line search on ‖F‖, and Levenberg–Marquardt steps where Newton's
direction does not reduce ‖F‖ (as §5 recommends when the guess is far from the dynamics).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..mechanics.groups import get_group
from ..model.errors import renamed_keyword
from ..model.rigid_body import RigidBodyModel
from .dmoc_check import SecondOrderCheck, second_order_check
from .dmoc_continuation import coarse_solve, continuation_solve, split_solve
from .dmoc_newton import NewtonStats, newton_lm
from .dmoc_nlp import multipliers_for_newton, solve_ipopt
from .dmoc_problem import (
    DMOC_BOUNDS,
    INPUT_MODES,
    DMOCConditions,
    DMOCError,
    DMOCProblem,
    check_dmoc_options,
    check_guess,
    geodesic_guess,
    initial_point,
    input_split,
    unactuated_wrench,
)
from .result import SolverResult

__all__ = [
    "DMOCProblem",
    "DMOCResult",
    "DMOCError",
    "DMOC_BOUNDS",
    "check_dmoc_options",
    "solve_dmoc",
    "geodesic_guess",
    "input_split",
    "INPUT_MODES",
    "PATHS",
]

# How a result was produced (``DMOCResult.path``); the warm starts Newton tries, in order, when the guess fails.
PATHS = (
    "newton",
    "newton-coarse",
    "newton-split",
    "newton-continuation",
    "ipopt",
    "newton-curvature",
    "ipopt-curvature",
)
_WARM_STARTS = PATHS[1:4]


@dataclass
class DMOCResult(SolverResult):
    """A DMOC solution. ``converged``: a *verified* strict local minimum, i.e. the conditions (31) hold to ``tol``
    (``stationary``) and the second-order check (``dmoc_check``: reduced Hessian positive definite) passed at that
    point; ``stationary`` and not ``converged``: a stationary point that is not a minimum (a saddle), or one whose
    check was skipped (``check`` None). ``path`` says what produced the answer (``PATHS``): Newton/LM from the guess,
    the IPOPT fallback (Newton failed from the guess; IPOPT's point polished by Newton), or a restart from a saddle
    along its direction of negative curvature by Newton or by IPOPT."""

    xi: np.ndarray  # (N, n) ξ_k
    nu: np.ndarray  # (N+1, n) ν_0 … ν_N (ends fixed by the boundary twists)
    g: np.ndarray  # (N+1, s, s) g_k = g_{k−1}τ(hξ_{k−1})
    u_minus: np.ndarray  # (N, m)
    u_plus: np.ndarray  # (N, m)
    lam: np.ndarray  # (N, c) multipliers of the per-step constraints
    cost: float  # (h/4) Σ ‖u_k⁻‖² + ‖u_k⁺‖²
    iterations: int  # Newton + LM iterations (every attempt)
    lm_iterations: int
    residual: float  # ‖F‖∞ of the conditions (31)
    pose_error: float  # ‖τ⁻¹(g_N⁻¹ g(T))‖∞ with g_N reconstructed from ξ (Alg. 5.2 step 5)
    unactuated: float  # max |Φ_k^±|: body wrench the thrusters cannot produce [N·m, N]
    converged: bool  # a verified strict local minimum (class docstring)
    solve_time: float  # CPU seconds (the checks included)
    history: list[float] = field(default_factory=list)  # ‖F‖∞ per iteration
    fallback_iterations: int = 0  # IPOPT iterations (fallback and recovery; 0: IPOPT was not needed)
    stationary: bool = False  # ‖F‖∞ ≤ tol: the necessary conditions (31) hold
    path: str = "newton"  # what produced the answer (``PATHS``)
    check: SecondOrderCheck | None = None  # the second-order check at the answer (None: not stationary, or skipped)
    rejected: list[str] = field(default_factory=list)  # the stationary points rejected on the way (saddles)
    check_time: float = 0.0  # CPU seconds of the second-order checks
    # plan_maneuver's re-solve under the actuator limits, checked with its active bounds (None: not re-solved)
    bounded_check: SecondOrderCheck | None = None

    @property
    def status(self) -> str:
        """'verified minimum', 'stationary only' or 'not converged'."""
        return "verified minimum" if self.converged else "stationary only" if self.stationary else "not converged"

    def states(self, body: RigidBodyModel) -> np.ndarray:
        """(N+1, nx) states (coordinates of g_k, ν_k) of ``LieGroupVI``."""
        G = get_group(body.group)
        return np.array([np.concatenate([G.to_coordinates(g), nu]) for g, nu in zip(self.g, self.nu)])

    def __str__(self) -> str:
        fb = f", {self.fallback_iterations} IPOPT iterations" if self.fallback_iterations else ""
        head = self.status.upper() if not self.converged else self.status
        check = (
            f"; {self.check}" if self.check is not None else ("; second-order check skipped" if self.stationary else "")
        )
        saddles = f"; rejected {len(self.rejected)} saddle(s): {', '.join(self.rejected)}" if self.rejected else ""
        return (
            f"{head} by {self.path} in {self.iterations} Newton iterations ({self.lm_iterations} LM){fb}, "
            f"residual {self.residual:.1e}, cost {self.cost:.6g}{check}{saddles}"
        )


def solve_dmoc(
    prob: DMOCProblem,
    xi_guess: np.ndarray | None = None,
    tolerance: float = 1e-11,
    max_iterations: int = 30,
    lm: bool = True,
    continuation: bool = True,
    fallback: str | None = "ipopt",
    check: bool = True,
    log=None,
    *,
    tol: float | None = None,
) -> DMOCResult:
    """Algorithm 5.2: Newton (exact Jacobian, sparse LU) with Levenberg–Marquardt steps where the Newton direction
    fails; stops at ‖F‖∞ ≤ ``tolerance`` (``tol``: its deprecated name). ``xi_guess`` (N, n): initial velocities
    (default ``geodesic_guess``).

    ``continuation``: if Newton/LM do not converge from the guess, Newton from the solution at N/2 (``path``
    'newton-coarse'), with held inputs from the solution with split inputs ('newton-split'), then along a homotopy
    from a relaxed, fully actuated body on a shorter maneuver ('newton-continuation'; all in
    ``dmoc_continuation``).

    ``fallback='ipopt'``: if Newton/LM do not converge from the guess nor by continuation (e.g. pure heave of an
    underactuated body: the Jacobian is singular there by symmetry), the identical problem is solved by IPOPT
    (``dmoc_nlp``) and Newton polishes its point on conditions (31); the result's ``path`` and
    ``fallback_iterations`` say so. None: report the failure.

    ``check``: the second-order check (``dmoc_check``) at the stationary point; a point that is not a strict local
    minimum (a saddle of the discrete problem: conditions (31) are only necessary) is not returned as converged.
    From a saddle, Newton restarts along its direction of negative curvature d (w ± s·d, s = 0.03, 0.1 of ‖ξ‖∞),
    then by the warm starts of ``continuation``, then (with ``fallback``) IPOPT from ξ ± 0.1·d polished by Newton;
    the first verified minimum of lower cost is the answer, and every point tried is checked again.
    ``check=False``: ``converged`` stays False (``stationary`` tells the first-order verdict), for timing Newton
    alone.
    """
    tol = renamed_keyword("solve_dmoc", "tol", tol, "tolerance", tolerance)
    if fallback not in (None, "ipopt"):
        raise ValueError(f"fallback must be 'ipopt' or None, got {fallback!r}")
    check_dmoc_options(tol, max_iterations)
    t0 = time.process_time()
    xi0 = geodesic_guess(prob) if xi_guess is None else check_guess(prob, xi_guess)
    cond = DMOCConditions(prob)
    stats = NewtonStats()
    w, fn, ok, last = newton_lm(cond, initial_point(cond, xi0), tol, max_iterations, lm, stats, log)
    path, fb_it = "newton", 0
    if not ok and continuation:
        if log is not None:
            log(f"[dmoc] Newton/LM stopped at ‖F‖∞ = {fn:.2e}: warm starts from N/2, then from a relaxed body")
        for kind in _WARM_STARTS:
            out = _warm_start(kind, cond, tol, max_iterations, lm, stats, log)
            if out is not None and out[2]:
                (w, fn, ok, last), path = out, kind
                break
    if not ok and fallback == "ipopt":
        if log is not None:
            log(f"[dmoc] Newton/LM stopped at ‖F‖∞ = {fn:.2e}: solving the identical problem by IPOPT")
        (w, fn, ok, last), it = _ipopt_then_newton(cond, xi0, tol, max_iterations, lm, stats, log)
        path, fb_it = "ipopt", fb_it + it
    chk, rejected, t_check = None, [], 0.0
    if ok and check:

        def verify(parts):
            nonlocal t_check
            t = time.process_time()
            out = second_order_check(prob, parts["xi"], parts["nu"], parts["g"], parts["um"], parts["up"])
            t_check += time.process_time() - t
            return out

        chk = verify(last[1])
        if not chk.minimum:
            rejected.append(
                f"{path} cost {float(last[1]['S0'].sum()):.6g} ({chk.inertia[1]} negative curvatures, "
                f"smallest {chk.min_eigenvalue:.3g})"
            )
            if log is not None:
                log(
                    f"[dmoc] {path}'s stationary point is not a minimum ({chk}): restarting along the negative "
                    "curvature"
                )
            found, it = _from_saddle(
                cond, w, last, chk, verify, tol, max_iterations, lm, continuation, fallback, stats, log
            )
            fb_it += it
            if found is not None:
                (w, fn, ok, last), chk, path = found
    F, parts = last
    return DMOCResult(
        xi=parts["xi"].copy(),
        nu=parts["nu"].copy(),
        g=parts["g"],
        u_minus=parts["um"].copy(),
        u_plus=parts["up"].copy(),
        lam=parts["lam"].copy(),
        cost=float(parts["S0"].sum()),
        iterations=stats.iterations,
        lm_iterations=stats.lm_iterations,
        residual=fn,
        pose_error=float(np.abs(F[cond.rT]).max()),
        unactuated=unactuated_wrench(cond, parts),
        converged=bool(ok and chk is not None and chk.minimum),
        solve_time=time.process_time() - t0,
        history=stats.history,
        fallback_iterations=fb_it,
        stationary=ok,
        path=path,
        check=chk,
        rejected=rejected,
        check_time=t_check,
    )


def _warm_start(
    kind: str, cond: DMOCConditions, tol: float, max_iterations: int, lm: bool, stats: NewtonStats, log
) -> tuple | None:
    """Newton's output from the warm start ``kind`` (``dmoc_continuation``): 'newton-coarse' from the solution at
    N/2, 'newton-split' (held inputs) from the solution with split inputs, 'newton-continuation' along the
    relaxed-body homotopy; None if it broke off or does not apply."""
    if kind == "newton-coarse":
        return coarse_solve(cond, _unchecked_dmoc, tol, max_iterations, lm, stats, log)
    if kind == "newton-split":
        return split_solve(cond, _unchecked_dmoc, tol, max_iterations, lm, stats, log)
    return continuation_solve(cond, tol, lm, stats, log)


def _unchecked_dmoc(prob: DMOCProblem, tol: float, max_iterations: int, lm: bool) -> DMOCResult:
    """Newton/LM and the warm starts on a variant of a problem (a coarser level, split inputs): no IPOPT, no
    check (``coarse_solve``, ``split_solve``)."""
    return solve_dmoc(prob, tolerance=tol, max_iterations=max_iterations, lm=lm, fallback=None, check=False)


def _ipopt_then_newton(
    cond: DMOCConditions, xi0: np.ndarray, tol: float, max_iterations: int, lm: bool, stats: NewtonStats, log
) -> tuple[tuple, int]:
    """IPOPT on the identical problem from ξ = ``xi0``, its point polished by Newton on conditions (31): (Newton's
    output, IPOPT's iterations); Newton's output is None-free but unconverged when IPOPT fails."""
    res = solve_ipopt(cond.prob, xi_guess=xi0)
    if not res.success:
        w = initial_point(cond, xi0)
        F, parts = cond.evaluate(w, jacobian=False)
        return (w, float(np.inf), False, (F, parts)), res.iterations
    w = np.concatenate([res.xi.ravel(), res.nu[1:-1].ravel(), multipliers_for_newton(cond.prob, res).ravel()])
    return newton_lm(cond, w, tol, max_iterations, lm, stats, log), res.iterations


# Restart steps from a saddle along its negative curvature, as fractions of max(‖ξ‖∞, 1e-3 / h), for Newton and
# for IPOPT. Newton (a root finder) may return to the saddle: on the spacecraft's 170° yaw (split inputs) it does from
# 0.01 to 0.1 and fails from 0.3 (50 iterations), where IPOPT (a minimizer) from 0.1 reaches a minimum 0.2 % lower.
_CURVATURE_STEPS = {"newton-curvature": (0.03, 0.1), "ipopt-curvature": (0.1,)}


def _from_saddle(
    cond: DMOCConditions,
    w: np.ndarray,
    last: tuple,
    chk,
    verify,
    tol: float,
    max_iterations: int,
    lm: bool,
    continuation: bool,
    fallback: str | None,
    stats: NewtonStats,
    log,
) -> tuple[tuple | None, int]:
    """Restarts from the saddle (w, its evaluation ``last``) along ±d, d = ``chk.direction`` (ξ and ν parts of the
    NLP's variables): Newton from w ± s·d, then the warm starts (``dmoc_continuation``), then IPOPT from ξ ± s·d_ξ.
    ((Newton's output, check, path) of the first verified minimum below the saddle's cost, or None; IPOPT
    iterations)."""
    N, n = cond.N, cond.n
    d = np.zeros_like(w)
    d[: cond.off_lam] = chk.direction[: cond.off_lam]  # (ξ, ν) come first in both; multipliers kept
    xi = last[1]["xi"]
    size = max(float(np.abs(xi).max()), 1e-3 / cond.h)
    d *= size / max(float(np.abs(d[: N * n]).max()), 1e-300)
    cost0 = float(last[1]["S0"].sum())
    fb_it = 0
    trials = [("newton-curvature", s * sign) for s in _CURVATURE_STEPS["newton-curvature"] for sign in (1.0, -1.0)]
    trials += [(kind, 0.0) for kind in _WARM_STARTS] if continuation else []
    trials += [
        ("ipopt-curvature", s * sign)
        for s in _CURVATURE_STEPS["ipopt-curvature"]
        for sign in (1.0, -1.0)
        if fallback == "ipopt"
    ]
    for path, s in trials:
        if path == "newton-curvature":
            out = newton_lm(cond, w + s * d, tol, max_iterations, lm, stats, log)
        elif path in _WARM_STARTS:
            out = _warm_start(path, cond, tol, max_iterations, lm, stats, log)
            if out is None:
                continue
        else:
            out, it = _ipopt_then_newton(cond, xi + s * d[: N * n].reshape(N, n), tol, max_iterations, lm, stats, log)
            fb_it += it
        if not out[2]:
            continue
        cost = float(out[3][1]["S0"].sum())
        if cost >= cost0 * (1 - 1e-9):  # back at the saddle (or at a worse point)
            continue
        c = verify(out[3][1])
        if log is not None:
            log(f"[dmoc] {path} (step {s:+.2g}): cost {cost:.6g} (saddle {cost0:.6g}), {c}")
        if c.minimum:
            return (out, c, path), fb_it
    return None, fb_it
