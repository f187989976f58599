"""Newton with Levenberg–Marquardt on DMOC's necessary conditions (Jimenez2013, Alg. 5.2, §5): ``planning.dmoc``'s
solver loop, over a ``DMOCConditions`` (the conditions (31) and their sparse Jacobian), in the units of a unit body."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import splu

from .dmoc_conditions import entry_scales, scaled_evaluation

if TYPE_CHECKING:
    from .dmoc_problem import DMOCConditions

__all__ = ["NewtonStats", "newton_lm"]


@dataclass
class NewtonStats:
    iterations: int = 0
    lm_iterations: int = 0
    history: list[float] = field(default_factory=list)


def newton_lm(
    cond: DMOCConditions, w: np.ndarray, tol: float, max_iterations: int, lm: bool, stats: NewtonStats, log=None
) -> tuple[np.ndarray, float, bool, tuple]:
    """Newton on F(w) = 0 from w; returns (w, ‖F‖∞, converged, (F, parts) at w), ‖F‖∞ and the steps in the units of
    a body whose momentum at unit velocity is at most 1 (``DMOCConditions.scales``).

    Full Newton steps are taken while the merit ‖DF‖₂ does not grow more than ``_WATCHDOG``-fold (quadratic
    convergence often passes through one larger residual); else backtracking, and where that fails a
    Levenberg–Marquardt step (JᵀD²J + μ diag JᵀD²J) d = −JᵀD²F, after which Newton steps must decrease the merit.
    D equilibrates the rows of J at the start (the conditions mix momenta, forces and poses).
    """
    F, J, parts = cond.evaluate(w)
    rs, cs = cond.scales
    if rs is not None:  # equations and unknowns in the units of a unit body: F/rs, J·diag(cs)/rs, w = cs·w̃
        unscaled_J, factor = cond.jacobian, entry_scales(cond.structure, rs, cs)

        def cond_jacobian(parts):
            Js = unscaled_J(parts)
            Js.data *= factor
            return Js

        J, F = cond_jacobian(parts), F / rs
    else:
        cond_jacobian = cond.jacobian
    D = sp.diags(1.0 / np.maximum(abs(J).max(axis=1).toarray().ravel(), 1e-300))
    fn = float(np.abs(F).max())
    stats.history.append(fn)
    mu_lm, it, monotone = 1e-3, 0, False

    def merit(Fv):
        Fs = D @ Fv
        return float(Fs @ Fs)

    while fn > tol and it < max_iterations and np.isfinite(fn):
        it += 1
        stats.iterations += 1
        f2, accepted, trial = merit(F), False, None
        try:
            step = splu(J).solve(-F)
            step = step if rs is None else cs * step
        except RuntimeError:  # exactly singular Jacobian
            step = None
        if step is not None and np.all(np.isfinite(step)):
            alpha, limit = 1.0, (1.0 - 1e-4 if monotone else _WATCHDOG) * f2
            while alpha >= 1.0 / 64:
                w_try = w + alpha * step
                trial = scaled_evaluation(cond.evaluate(w_try, jacobian=False), rs)
                if np.all(np.isfinite(trial[0])) and merit(trial[0]) <= limit:
                    accepted = True
                    break
                alpha, limit = 0.5 * alpha, (1.0 - 1e-4 * alpha) * f2
        if not accepted and lm:
            stats.lm_iterations += 1
            monotone = True
            Js = (D @ J).tocsc()
            JtJ, g = (Js.T @ Js).tocsc(), Js.T @ (D @ F)
            M = sp.diags(np.maximum(JtJ.diagonal(), 1e-12))
            for _ in range(30):
                d = splu((JtJ + mu_lm * M).tocsc()).solve(-g)
                w_try = w + (d if rs is None else cs * d)
                trial = scaled_evaluation(cond.evaluate(w_try, jacobian=False), rs)
                if np.all(np.isfinite(trial[0])) and merit(trial[0]) < f2:
                    mu_lm, accepted = max(mu_lm / 3.0, 1e-12), True
                    break
                mu_lm *= 4.0
        if not accepted:
            break
        # The accepted trial already holds every step's Jacobian (the compiled step computes them): only assemble.
        w, (F, parts) = w_try, trial
        J = cond_jacobian(parts)
        fn = float(np.abs(F).max())
        stats.history.append(fn)
        if log is not None:
            log(f"[dmoc] iteration {stats.iterations}: ‖F‖∞ = {fn:.3e}")
    return w, fn, bool(fn <= tol), (F if rs is None else F * rs, parts)


# A full Newton step may raise ‖F‖₂² this much before it is damped (quadratic convergence often passes through one
# larger residual: measured 10²–10³ on the vehicle's maneuvers, where a monotone line search took twice the steps).
_WATCHDOG = 1e4
