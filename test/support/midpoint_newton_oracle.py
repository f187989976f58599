"""The midpoint VI's Newton iteration in numpy (Johnson2015, eq. 8; with constraints eq. 28a–b): the tests' oracle of
the package's one implementation, the C driver (vi_newton_step in vi_control/mechanics/csrc/newton_driver.c).

Written from the same specification, step for step, over the model's functions in the CasADi VM or generated C and
LAPACK: exact Newton on M_{k+1}, or chord Newton on one factored matrix — Δt⁻¹M(q_k) (Lee2016, eq. 25, Cholesky)
for an unconstrained step, else M_{k+1} at the guess — with M_{k+1} evaluated once near the root, the rounding-floor
acceptance, the basin check and the condition check at the root (``MidpointVI``'s docstring has the options). With
constraints, the condition judged and the residual's norm are unit-free as the driver's
(``vi_control.integrators.bordered``). ``oracle_solve`` adds ``MidpointVI.solve``'s exact retry of a failed chord
iteration. The tests compare the driver with it: same roots to round-off, same iteration counts.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
from bordered_oracle import lu_rcond, residual_norm, residual_weight
from scipy.linalg import lapack

from vi_control.integrators.base import ConvergenceError, NewtonSettings, SingularityError, StepResult, check_step


class NewtonStepModel(Protocol):
    """What the numpy Newton loop reads of a midpoint-type VI (``MidpointVI`` and the GNI): the backend's
    function set (residual y ↦ (R, ∂R/∂y), residual only, output map), sizes, settings and the chord options."""

    functions: object
    settings: NewtonSettings
    nq: int
    nd: int
    nc: int
    dt: float
    idx_d: np.ndarray
    rotational: np.ndarray
    jacobian_name: str
    chord_rate_max: float
    chord_root_check: bool
    wrap_continuous: bool

    def check_inputs(self, x: np.ndarray, u: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]: ...
    def initial_guess(self, x: np.ndarray, u: np.ndarray, lam0: np.ndarray | None) -> np.ndarray: ...
    def mass_matrix(self, q: np.ndarray) -> np.ndarray: ...
    def wrap(self, x: np.ndarray) -> np.ndarray: ...


def lu_factor_checked(
    J: np.ndarray, rcond_min: float, step, what: str, nd: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """LAPACK LU of J with the 1-norm condition check; raises SingularityError below rcond_min. With ``nd`` < n
    (J bordered by constraint rows, Johnson2015, eq. 28a–b) the condition judged is the unit-free one of the
    equilibrated D J D (``integrators.bordered``); J's own LU is returned either way."""
    lu, piv, rcond = lu_rcond(J, J.shape[0] if nd is None else nd)
    if not rcond >= rcond_min:  # also catches NaN
        raise SingularityError(step, rcond, what)
    return lu, piv


def mass_cholesky(vi: NewtonStepModel, x: np.ndarray) -> tuple[np.ndarray | None, float]:
    """Cholesky factor of M(q_k)_dd (LAPACK dpotrf), the chord matrix Δt⁻¹M(q_k)_dd of an unconstrained step
    (None unless positive definite), and the 1-norm of M(q_k)_dd."""
    d = vi.idx_d
    mdd = vi.mass_matrix(x[: vi.nq])[np.ix_(d, d)]
    c, info = lapack.dpotrf(mdd, lower=1)
    return (None if info != 0 else c), float(np.abs(mdd).sum(axis=0).max())


def solve_numpy(
    vi: NewtonStepModel,
    x: np.ndarray,
    u: np.ndarray | None,
    step_index: int | None,
    y0: np.ndarray | None,
    lam0: np.ndarray | None,
    chord: bool,
) -> StepResult:
    """One step of ``vi`` by Newton in numpy over its backend's residual: exact (``chord`` False) or chord Newton
    (module doc); raises ConvergenceError / SingularityError as the C driver's codes do."""
    x, u = vi.check_inputs(x, u)
    z = np.concatenate([x, u])
    if vi.nd + vi.nc == 0:  # every joint prescribed, nothing to solve: the step is its output map
        y = np.zeros(0)
        xn = vi.functions["output"](y, z)[0].ravel().copy()
        return StepResult(x=vi.wrap(xn) if vi.wrap_continuous else xn, lam=y.copy(), iterations=0, residual=0.0, y=y)
    y = vi.initial_guess(x, u, lam0) if y0 is None else np.array(y0, float)
    guess, first_update = y.copy(), np.inf
    res_fn, r_fn = vi.functions["residual"], vi.functions["residual_only"]
    st, what, theta_max = vi.settings, vi.jacobian_name, vi.chord_rate_max
    pnorm = np.abs(x[vi.nq :]).max()
    eta = np.sqrt(st.tol) * st.scale(pnorm)
    quasi = chord and vi.nc == 0  # chord matrix Δt⁻¹M(q_k)_dd (Lee2016, eq. 25), else M_{k+1} at the guess
    qonly = quasi and not vi.chord_root_check  # M_{k+1} only if the quasi-Newton iteration needs it
    rnorm, dnorm_prev, with_jac, lu, chol, anorm, J = np.inf, np.inf, not quasi, None, None, 0.0, None
    mnorm, wc, nd = 0.0, None, vi.nd
    near = predicted = False  # M_{k+1} factored near the root; this evaluation includes it for that reason
    for it in range(st.max_iterations + 1):
        if with_jac:
            R, J = res_fn(y, z)
        else:
            R = r_fn(y, z)[0]
        j_at_y = with_jac
        if wc is None:  # the constraint rows' weight (integrators.bordered), from the step's first Jacobian
            wc = residual_weight(np.asarray(J), nd) if vi.nc and with_jac else 1.0
        rnorm = residual_norm(R, nd, wc)
        if not np.isfinite(rnorm) or st.accepts(rnorm, pnorm) or it == st.max_iterations:
            break
        if not with_jac and lu is None and chol is None:  # the quasi-Newton matrix on first use
            chol, mnorm = mass_cholesky(vi, x)
            if chol is None:  # M(q_k) singular: M_{k+1} instead
                R, J = res_fn(y, z)
                j_at_y = with_jac = True
        if with_jac:
            anorm = np.abs(J).sum(axis=0).max()
            try:
                lu = lu_factor_checked(J, st.rcond_min, step_index, what, vi.nd)
            except SingularityError:  # chord, away from the root: not this step's verdict (solve retries exact)
                if chord and not (predicted or rnorm <= eta):
                    raise ConvergenceError(step_index, rnorm, it, "chord matrix singular away from the root") from None
                raise
            j_at_y, near = False, near or predicted or rnorm <= eta
        if lu is not None:
            dy = lapack.dgetrs(*lu, R.ravel())[0]
        else:
            dy = lapack.dpotrs(chol, R.ravel(), lower=1)[0] * -vi.dt
        y = y - dy
        dnorm = np.abs(dy).max()
        first_update = dnorm if it == 0 else first_update
        if dnorm < st.step_tol * (1.0 + np.abs(y).max()):
            j_at_y = not (qonly and lu is None)
            if j_at_y:
                R, J = res_fn(y, z)
            else:
                R = r_fn(y, z)[0]
            rnorm = residual_norm(R, nd, wc)
            break
        # Chord: keep the factored matrix while the updates contract by theta_max or better; M_{k+1} once near
        # the root (the next residual predicted below eta, the first contraction ratio taken as theta_max).
        ratio = theta_max if it == 0 else dnorm / dnorm_prev
        predicted = chord and not qonly and not near and ratio * rnorm <= eta
        with_jac = not chord or not dnorm <= theta_max * dnorm_prev or predicted
        dnorm_prev = dnorm
    if not np.isfinite(rnorm):
        raise ConvergenceError(step_index, rnorm, it)
    # Converged on Δt⁻¹M(q_k)_dd alone: its condition (LAPACK dpocon) stands in for M_{k+1}'s (as the C driver)
    qfinal = qonly and lu is None and not j_at_y  # (rnorm is finite: checked above)
    if qfinal and chol is None and y0 is None:  # converged at the guess: the C driver factored M(q_k) for it
        chol, mnorm = mass_cholesky(vi, x)
    qfinal = qfinal and chol is not None
    if qfinal:
        rcond = lapack.dpocon(chol, mnorm, uplo="L")[0]
        qfinal, anorm = rcond >= st.rcond_min, mnorm / vi.dt
    final_check = not qfinal and (not near or j_at_y)  # no factorization near y: the floor and the check need
    # M_{k+1} at y
    if final_check and not j_at_y:
        R, J = res_fn(y, z)
        rnorm = residual_norm(R, nd, wc)
    if final_check:
        anorm = np.abs(J).sum(axis=0).max()
    # Also accept at the residual's rounding floor ~ eps·|J|·|y| (same rule as the C driver).
    floor_r = st.rounding_floor(anorm, np.abs(x[: vi.nq]).max())
    if not st.accepts(rnorm, pnorm, floor_r):
        raise ConvergenceError(step_index, rnorm, it)
    # Chord only (as the C driver): a contracting iteration ends within about its first update of the guess;
    # one that travelled further overshot to another root of the DEL equation (solve retries exact Newton).
    if chord and np.abs(y - guess).max() > 2.0 * first_update + 1e-12 * (1.0 + np.abs(y).max()):
        raise ConvergenceError(step_index, rnorm, it, "chord iteration left the guess's basin")
    if final_check:
        # The converged Jacobian must be well-conditioned too, or the linearization is garbage.
        lu = lu_factor_checked(np.array(J), st.rcond_min, step_index, what, vi.nd)
        if chord:  # one exact Newton update at the root, as the C driver does (chord stops just below tol)
            y_pol = y - lapack.dgetrs(*lu, np.ravel(R))[0]
            r_pol = residual_norm(r_fn(y_pol, z)[0], nd, wc)
            if r_pol <= max(rnorm, floor_r):
                y, rnorm = y_pol, r_pol
    for _ in range(2 if qfinal else 0):  # quasi-Newton updates below tol, each kept if not worse (C driver)
        y_pol = y - lapack.dpotrs(chol, R.ravel(), lower=1)[0] * -vi.dt
        R = r_fn(y_pol, z)[0]
        r_pol = residual_norm(R, nd, wc)
        if r_pol > max(rnorm, floor_r):
            break
        y, rnorm = y_pol, r_pol
    xn = vi.functions["output"](y, z)[0].ravel().copy()
    check_step(vi, x, xn, vi.rotational, step_index)  # what the C driver checks too
    if vi.wrap_continuous:
        xn = vi.wrap(xn)
    return StepResult(x=xn, lam=y[vi.nd :].copy(), iterations=it, residual=rnorm, y=y.copy())


def oracle_solve(
    vi: NewtonStepModel,
    x: np.ndarray,
    u: np.ndarray | None = None,
    step_index: int | None = None,
    y0: np.ndarray | None = None,
    lam0: np.ndarray | None = None,
    newton: str | None = None,
) -> StepResult:
    """``MidpointVI.solve`` by this loop: ``newton`` (default ``vi.newton``) 'chord', retried exact on a
    ConvergenceError, or 'exact'."""
    chord = (newton or vi.newton) == "chord"
    try:
        return solve_numpy(vi, x, u, step_index, y0, lam0, chord)
    except ConvergenceError:
        if not chord:
            raise
        return solve_numpy(vi, x, u, step_index, y0, lam0, False)


class NumpyNewtonVI:
    """A midpoint-type VI whose ``solve`` and ``step`` run this module's loop over the VI's own functions (the VM's
    with ``compile=False``); every other attribute, read or set, is the wrapped VI's — so settings, the Newton
    variant and the functions a test patches apply to the oracle as they would to the driver."""

    def __init__(self, vi: NewtonStepModel):
        object.__setattr__(self, "vi", vi)

    def __getattr__(self, name: str):
        return getattr(self.vi, name)

    def __setattr__(self, name: str, value) -> None:
        setattr(self.vi, name, value)

    def solve(self, x, u=None, step_index=None, y0=None, lam0=None) -> StepResult:
        return oracle_solve(self.vi, x, u, step_index, y0, lam0)

    def step(self, x, u=None, step_index=None, lam0=None) -> np.ndarray:
        return self.solve(x, u, step_index, lam0=lam0).x

    def simulate(self, x0: np.ndarray, inputs: np.ndarray) -> np.ndarray:
        """States (N+1, nx) of N oracle steps, each from the previous step's multipliers (as ``simulate``)."""
        X, lam = [np.asarray(x0, float)], None
        for k, u in enumerate(np.asarray(inputs, float)):
            r = self.solve(X[-1], u, k, lam0=lam)
            X.append(r.x)
            lam = r.lam if len(r.lam) else None
        return np.array(X)
