"""Oracle of LinearTimeVI's compiled step: the root finding of Lee2016, eq. 17 — line-searched RIQN /
Newton and the fallback chain — in numpy, over LinearTimeVI's own stage functions (``constant_part``,
``frame_residual``, ``frame_jacobian``, ``mass_solve``: DRNEA, its derivative and ABA from Pinocchio and
``mechanics.drnea``), written as a second implementation of ``ltvi_iterate`` / ``ltvi_attempt`` / ``ltvi_chain`` in
``vi_control/integrators/csrc/drnea_step.c``, operation for operation: the package's one path is the C, and the tests
(test_linear_time_c.py) and the benchmark's numpy baseline (benchmarks/bench_linear_time.py) compare it with this.
``NumpyLinearTimeVI`` is LinearTimeVI with this loop in place of the C call (and Pinocchio where the C had its own
recursions): the same states and iteration counts.

- **Line search.** Every update (RIQN's Δt M(q_k)⁻¹f, eq. 25, or Newton's J⁻¹f) is backtracked on |f|∞ (Armijo,
  halvings down to 2^-LS_MAX) when the full update takes a body's relative rotation out of the SE(3) log's domain
  or does not decrease the residual. Undamped, both left that domain on violent steps (a 200-body chain at
  Δt = 10 ms from random states). An update below √eps·(1 + |q|∞) is taken as it is: the residual is then at its
  rounding noise, where no decrease can be asked for.
- **Stagnation.** An iteration whose residual falls less than 2-fold over 3 updates (above that noise) stops: a
  linear rate worse than 0.79 does not reach the tolerance within ``max_iterations``, and a damped Newton that
  slows down like this is sliding into a local minimum of |f|, not to a root.
- **Fallback chain** (``fallback=True``): the configured method; if RIQN fails, Newton with the exact (subtree)
  Jacobian at the same Δt, which solves the same discrete equation; if that fails too, the step is taken as two
  substeps of Δt/2, each by the same chain without the Newton stage, recursively down to Δt/2^MAX_DEPTH. Substeps
  are a different (finer) discrete map of the same Lagrangian: ``LinearTimeVI`` logs every fallback with its reason.
  Within the chain a root that turns a revolute joint more than ``max_rotation`` counts as a failure (an aliased
  root, NewtonSettings), so the finer substeps are tried; without the chain such a root is refused by
  ``check_step`` (UntrustedStepError), as for MidpointVI.
"""

from __future__ import annotations

import numpy as np

from vi_control.integrators import drnea_c
from vi_control.integrators.linear_time import LinearTimeVI

LS_MAX = 20
LS_SUFFICIENT = 1e-4
NOISE_UPDATE = 1.5e-8
STAGNATION = 2.0
MAX_DEPTH = drnea_c.MAX_DEPTH


def _attempt(
    vi, x: np.ndarray, u: np.ndarray, q1: np.ndarray, method: str, jacobian: str, dt: float
) -> tuple[int, np.ndarray | None, float, int]:
    """One root solve from the guess q1 (C: ltvi_attempt + ltvi_iterate): (code, x_{k+1} or None, |f|∞, updates)."""
    st, nq, tree = vi.settings, vi.nq, vi.tree
    q0 = x[:nq]
    fk = tree.frames(q0)
    const = vi.constant_part(fk, x, u, dt)
    for tries in range(LS_MAX + 1):  # a guess outside the log's domain: towards q_k (IG1 is always inside)
        try:
            f, fk1, xi, mw = vi.frame_residual(fk, const, q0, q1, dt)
            break
        except ValueError:
            if tries == LS_MAX:
                return drnea_c.LOG_NEAR_PI, None, np.inf, 0
            q1 = q0 + 0.5 * (q1 - q0)
    scale = st.scale(float(np.abs(x[nq:]).max()))
    rnorm, prev, hist, code, it = float(np.abs(f).max()), np.inf, [np.inf] * 3, drnea_c.NOT_CONVERGED, 0
    for it in range(st.max_iterations + 1):
        if not np.isfinite(rnorm) or it == st.max_iterations:
            break
        if rnorm <= st.tol * scale:
            code = drnea_c.OK
            break
        if method == "riqn":
            dq = dt * vi.mass_solve(q0, f)  # Lee2016, eq. 25
        else:
            try:
                dq = np.linalg.solve(vi.frame_jacobian(fk, fk1, xi, q0, q1, dt, jacobian), f)
            except np.linalg.LinAlgError:
                code = drnea_c.SINGULAR_JACOBIAN
                break
        dqn, alpha, ok = float(np.abs(dq).max()), 1.0, False
        noise = NOISE_UPDATE * (1.0 + float(np.abs(q1).max()))
        for _ in range(LS_MAX + 1):
            qt = q1 - alpha * dq
            try:
                trial = vi.frame_residual(fk, const, q0, qt, dt)
                fn = float(np.abs(trial[0]).max())
                if fn <= (1.0 - LS_SUFFICIENT * alpha) * rnorm or (alpha * dqn <= noise and np.isfinite(fn)):
                    ok = True
                    break
            except ValueError:  # a relative rotation near π: shorter
                pass
            alpha *= 0.5
        if not ok:
            code = drnea_c.LINE_SEARCH_FAILED
            break
        q1, (f, fk1, xi, mw) = qt, trial
        r3 = hist[(it + 1) % 3]  # the residual 3 updates before the new one
        hist[it % 3] = rnorm
        rnorm, dqn = fn, dqn * alpha
        qn = 1.0 + float(np.abs(q1).max())
        # f at its rounding floor (≈ eps·|M|/Δt·|q|): accept the update size; Newton's quadratic convergence
        # ended in rounding noise: updates below √eps stop contracting (long chains, N ≳ 400)
        stalled = method != "riqn" and dqn >= 0.5 * prev and dqn <= NOISE_UPDATE * qn
        prev = dqn
        if dqn <= st.step_tol * qn or stalled:
            it, code = it + 1, drnea_c.OK
            break
        if STAGNATION * rnorm > r3 and dqn > noise:
            it, code = it + 1, drnea_c.STAGNATED
            break
    if code == drnea_c.OK and not np.isfinite(rnorm):
        code = drnea_c.NOT_CONVERGED
    if code != drnea_c.OK:
        return code, None, rnorm, it
    if vi.fallback and np.any(vi.rotational & ~(np.abs(q1 - q0) <= st.max_rotation)):  # C: ltvi_attempt
        return drnea_c.ALIASED, None, rnorm, it
    # p_{k+1} = D₂L_d(q_k, q_{k+1}): the world momenta are shared with the residual (see BodyTree).
    p1 = tree.project(fk1, mw - 0.5 * dt * tree.gravity_wrenches(fk1))
    return drnea_c.OK, np.concatenate([q1, p1]), rnorm, it


def solve_chain(
    vi, x: np.ndarray, u: np.ndarray, y0: np.ndarray | None, dt: float, fb: np.ndarray, depth: int = 0
) -> tuple[int, np.ndarray | None, float, int]:
    """The step over dt by the fallback chain (C: ltvi_chain); fb records what it did (module docstring)."""

    def guess() -> np.ndarray:
        return np.array(y0, float) if y0 is not None else vi.initial_guess(x, u, dt)

    code, xn, rnorm, it = _attempt(vi, x, u, guess(), vi.method, vi.jacobian_method, dt)
    if code == drnea_c.OK:
        fb[2] += depth > 0
        return code, xn, rnorm, it
    if not vi.fallback:
        return code, xn, rnorm, it
    if depth == 0:
        fb[0] = code
        if vi.method == "riqn":
            code, xn, rnorm, it = _attempt(vi, x, u, guess(), "newton", "subtree", dt)
            fb[1] = code
            if code == drnea_c.OK:
                return code, xn, rnorm, it
    if depth == MAX_DEPTH:
        return code, xn, rnorm, it
    code, xm, rnorm, it1 = solve_chain(vi, x, u, None, 0.5 * dt, fb, depth + 1)
    if code != drnea_c.OK:
        return code, None, rnorm, it1
    code, xn, rnorm, it2 = solve_chain(vi, xm, u, None, 0.5 * dt, fb, depth + 1)
    if code == drnea_c.OK:
        fb[3] = max(fb[3], 2.0 ** (depth + 1))
    return code, xn, rnorm, it1 + it2


class NumpyLinearTimeVI(LinearTimeVI):
    """LinearTimeVI whose step is the numpy loop above (no compiler needed): the oracle of the compiled step."""

    def _compiled_step(self):
        return None

    def _root(self, x: np.ndarray, u: np.ndarray, y0: np.ndarray | None):
        fb = np.array([0.0, -1.0, 0.0, 1.0])
        code, xn, rnorm, it = solve_chain(self, x, u, y0, self.dt, fb)
        return code, xn, rnorm, it, fb

    @property
    def backend(self) -> str:
        return "numpy"


def linear_time(robot, dt: float, backend: str = "c", **options) -> LinearTimeVI:
    """The package's LinearTimeVI ('c') or this oracle ('numpy') with the same options."""
    return (NumpyLinearTimeVI if backend == "numpy" else LinearTimeVI)(robot, dt, **options)
