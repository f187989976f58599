"""Midpoint variational integrator (seed 000 §II, §VI): step, Legendre transforms, simulate.

``MidpointVI`` is the discrete system object of DESIGN.md principle 3: ``step`` solves the forced
(constrained) DEL equations by Newton's method with the exact Jacobian M_{k+1} (eq. 8), and
``linearize`` / ``second_order`` (vi_control.linearization) differentiate the same map.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import lapack

from ..mechanics.discrete import (
    NEWTON_NONFINITE,
    NEWTON_NOT_CONVERGED,
    NEWTON_SINGULAR,
    NEWTON_SINGULAR_MASS,
    DiscreteSystemStructure,
)
from ..model.robot import RobotModel, wrap_angle

NEWTON_METHODS = ("exact", "chord")
# Chord Newton refreshes M_{k+1} when an update is not at least this much smaller than the previous one.
CHORD_RATE_MAX = 0.25


class StepError(RuntimeError):
    """A step could not produce a trustworthy next state."""


class ConvergenceError(StepError):
    """Newton did not converge; carries the step index and final residual norm."""

    def __init__(self, step: int | None, residual: float, iterations: int):
        self.step, self.residual, self.iterations = step, residual, iterations
        super().__init__(
            f"Newton did not converge at step {step} after {iterations} iterations "
            f"(residual norm {residual:.3e}); reduce dt or check the inputs"
        )


class SingularityError(StepError):
    """M_{k+1} or the constraint term is singular or ill-conditioned (seed 000 §VII)."""

    def __init__(self, step: int | None, rcond: float, what: str):
        self.step, self.rcond, self.what = step, rcond, what
        super().__init__(
            f"{what} is singular or ill-conditioned at step {step} (reciprocal condition {rcond:.2e}); "
            "the one-step map is not defined here (seed 000 §VII)"
        )


@dataclass
class StepResult:
    x: np.ndarray  # next state (q_{k+1}, p_{k+1})
    lam: np.ndarray  # constraint multipliers λ_k (discrete constraint impulses, eq. 28a)
    iterations: int
    residual: float
    y: np.ndarray  # solved unknowns (q_{k+1}[dynamic], λ_k), reused by linearize


def _lu_factor_checked(J: np.ndarray, rcond_min: float, step, what: str) -> tuple[np.ndarray, np.ndarray]:
    """LAPACK LU of J with the 1-norm condition check; raises SingularityError below rcond_min."""
    lu, piv, info = lapack.dgetrf(J)
    if info > 0:
        raise SingularityError(step, 0.0, what)
    anorm = np.abs(J).sum(axis=0).max()
    rcond, _ = lapack.dgecon(lu, anorm, norm="1")
    if not rcond >= rcond_min:  # also catches NaN
        raise SingularityError(step, float(rcond), what)
    return lu, piv


class MidpointVI:
    """Midpoint variational integrator for a RobotModel at time step ``dt``.

    Parameters: ``tol`` (residual ∞-norm for Newton), ``max_iterations``, ``rcond_min`` (below
    it M_{k+1} or the KKT matrix counts as singular), ``wrap_continuous`` (keep continuous joint
    angles in [−π, π) after each step), ``compile`` (generated C, see mechanics.codegen), ``newton``:
    'exact' evaluates and factors M_{k+1} (eq. 8) in every iteration; 'chord' factors it once per step
    at the initial guess, iterates with the residual alone, refreshes the factorization only when an
    update shrinks by less than ``chord_rate_max``, and ends with one exact update at the root. Both stop
    at the same tolerance and check the condition of M_{k+1} at the root. Default (None): the faster one
    for the backend, 'chord' with the compiled driver, 'exact' in the numpy loop, where each extra
    function call costs more than the Jacobian it saves (docs/performance_step.md).
    """

    def __init__(self, robot: RobotModel, dt: float, tol: float = 1e-12, max_iterations: int = 30,
                 rcond_min: float = 1e-13, wrap_continuous: bool = False, compile: bool | None = None,
                 newton: str | None = None):
        if newton is not None and newton not in NEWTON_METHODS:
            raise ValueError(f"newton must be one of {NEWTON_METHODS}, got {newton!r}")
        self.robot = robot
        self.structure = DiscreteSystemStructure(robot, dt, compile=compile)
        s = self.structure
        self.dt = s.dt
        self.nq, self.nx, self.nu, self.nc = s.nq, s.nx, s.n_inputs, s.nc
        self.n_torques, self.nk, self.nd = s.nu, s.nk, s.nd
        self.idx_d, self.idx_k, self.idx_act = s.idx_d, s.idx_k, s.idx_act
        self.tol, self.max_iterations, self.rcond_min = tol, max_iterations, rcond_min
        self.wrap_continuous = wrap_continuous
        self.fn = s.functions
        self._lam_guess = np.zeros(self.nc)
        self.last_result: StepResult | None = None
        self._newton = s.newton  # compiled whole-step driver, or None (CasADi VM / no compiler)
        self.newton = newton or ("chord" if self._newton is not None else "exact")
        self.chord_rate_max = CHORD_RATE_MAX
        self._zero_input = np.zeros(self.nu)
        self._what = ("M_{k+1}" if self.nc == 0
                      else "the constrained DEL Jacobian [M_{k+1}, -Dh(q_k)^T; Dh(q_{k+1}), 0]")

    def _chord_settings(self) -> tuple[bool, float]:
        return self.newton == "chord", self.chord_rate_max

    # ---- state conversions (discrete Legendre transforms) ------------------------------------
    def state_from_velocity(self, q: np.ndarray, qdot: np.ndarray) -> np.ndarray:
        """x_0 = (q, ∂L/∂q̇(q, q̇)); for prescribed joints the p-slot holds q̇."""
        q, qdot = np.asarray(q, float), np.asarray(qdot, float)
        p = self.fn["momentum"](q, qdot)[0].ravel().copy()
        p[self.idx_k] = qdot[self.idx_k]
        return np.concatenate([q, p])

    def state_from_configurations(self, q_prev: np.ndarray, q: np.ndarray) -> np.ndarray:
        """x_k from two measured configurations: p_k = D₂L_d(q_{k−1}, q_k) (eq. 1b, F⁺_d = 0).

        Inputs between the samples do not enter: with F⁺_d = 0 the right Legendre transform is
        force-free. This is how a controller works from configurations alone.
        """
        q_prev, q = np.asarray(q_prev, float), np.asarray(q, float)
        p = self.fn["D2Ld"](q_prev, q)[0].ravel().copy()
        p[self.idx_k] = (q[self.idx_k] - q_prev[self.idx_k]) / self.dt
        return np.concatenate([q, p])

    def velocity(self, x: np.ndarray) -> np.ndarray:
        """Velocity estimate q̇ = M(q)⁻¹ p (continuous Legendre transform inverted).

        Where M(q) is singular (a coordinate singularity, seed 000 §VII-A) the least-squares solution is
        returned: the minimum-norm q̇ with M q̇ = p, so callers (initial guess, published joint states) never
        fail on a configuration the step itself handles.
        """
        q, p = x[: self.nq], x[self.nq:]
        M = np.array(self.fn["mass"](q)[0])
        v = np.zeros(self.nq)
        v[self.idx_k] = p[self.idx_k]
        d, k = self.idx_d, self.idx_k
        rhs = p[d] - M[np.ix_(d, k)] @ v[k] if len(k) else p[d]
        Mdd = M[np.ix_(d, d)]
        try:
            v[d] = np.linalg.solve(Mdd, rhs)
        except np.linalg.LinAlgError:
            v[d] = np.linalg.lstsq(Mdd, rhs, rcond=None)[0]
        return v

    def energy(self, x: np.ndarray) -> float:
        return float(self.fn["energy"](x[: self.nq], self.velocity(x))[0].item())

    def constraint(self, q: np.ndarray) -> np.ndarray:
        return self.fn["h"](np.asarray(q, float))[0].ravel().copy()

    def wrap(self, x: np.ndarray) -> np.ndarray:
        """Continuous joint angles to [−π, π) — L_d only sees differences and cos/sin."""
        mask = self.robot.continuous_mask
        if mask.any():
            x = x.copy()
            x[: self.nq][mask] = wrap_angle(x[: self.nq][mask])
        return x

    # ---- one step -----------------------------------------------------------------------------
    def _check_sizes(self, x: np.ndarray, u: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        x = np.asarray(x, float).ravel()
        u = np.zeros(self.nu) if u is None else np.asarray(u, float).ravel()
        if x.size != self.nx:
            raise ValueError(f"state has size {x.size}, expected {self.nx} = 2·nq")
        if u.size != self.nu:
            raise ValueError(f"input has size {u.size}, expected {self.nu} "
                             f"({self.n_torques} torques + {self.nk} prescribed positions)")
        return x, u

    def _check_inputs(self, x: np.ndarray, u: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        x, u = self._check_sizes(x, u)
        if not (np.all(np.isfinite(x)) and np.all(np.isfinite(u))):
            raise ValueError("state or input contains NaN/inf")
        return x, u

    def initial_guess(self, x: np.ndarray, u: np.ndarray | None = None) -> np.ndarray:
        """y₀ = (q_k + Δt·M(q_k)⁻¹p_k, λ_{k−1}); a least-squares velocity where M(q_k) is singular.

        At a coordinate singularity of q_k (seed 000 §VII-A: the spherical pendulum's pole) M(q_k) has
        no inverse, yet M_{k+1} may be regular: the step must still be attempted, and it raises
        SingularityError only if the Newton matrix itself is singular.
        """
        q1 = x[: self.nq] + self.dt * self.velocity(x)
        return np.concatenate([q1[self.idx_d], self._lam_guess])

    def solve(self, x: np.ndarray, u: np.ndarray, step_index: int | None = None,
              y0: np.ndarray | None = None) -> StepResult:
        """Newton on R(y, z) = 0 (eq. 2a / 28a–b); raises ConvergenceError / SingularityError."""
        if self._newton is not None:
            return self._solve_compiled(x, u, step_index, y0)
        x, u = self._check_inputs(x, u)
        z = np.concatenate([x, u])
        y = self.initial_guess(x, u) if y0 is None else np.array(y0, float)
        res_fn, r_fn = self.fn["residual"], self.fn["residual_only"]
        what = self._what
        chord, theta_max = self._chord_settings()
        scale = 1.0 + np.abs(x[self.nq:]).max()
        rnorm, dnorm_prev, with_jac, lu = np.inf, np.inf, True, None
        for it in range(self.max_iterations + 1):
            if with_jac:
                R, J = res_fn(y, z)
            else:
                R = r_fn(y, z)[0]
            j_at_y = with_jac
            rnorm = float(np.abs(R).max())
            if not np.isfinite(rnorm):
                break
            if rnorm <= self.tol * scale:
                break
            if it == self.max_iterations:
                break
            if with_jac:
                lu = _lu_factor_checked(J, self.rcond_min, step_index, what)
            dy = lapack.dgetrs(*lu, R.ravel())[0]
            y = y - dy
            dnorm = np.abs(dy).max()
            if dnorm < 1e-15 * (1.0 + np.abs(y).max()):
                R, J = res_fn(y, z)
                j_at_y = True
                rnorm = float(np.abs(R).max())
                break
            # Chord: keep the factored Jacobian while the updates contract by theta_max or better.
            with_jac = not chord or not dnorm <= theta_max * dnorm_prev
            dnorm_prev = dnorm
        if not j_at_y and np.isfinite(rnorm):  # the floor and the final check need J at the returned y
            R, J = res_fn(y, z)
            rnorm = float(np.abs(R).max())
        # Also accept at the residual's rounding floor ~ eps·|J|·|y| (same rule as the C driver).
        floor_r = 64.0 * np.finfo(float).eps * np.abs(J).sum(axis=0).max() * (1.0 + np.abs(y).max())
        if not (rnorm <= max(self.tol * scale, floor_r)):
            raise ConvergenceError(step_index, rnorm, it)
        # The converged Jacobian must be well-conditioned too, or the linearization is garbage.
        lu = _lu_factor_checked(np.array(J), self.rcond_min, step_index, what)
        if chord:  # one exact Newton update at the root, as the C driver does (chord stops just below tol)
            y_pol = y - lapack.dgetrs(*lu, np.ravel(R))[0]
            r_pol = float(np.abs(r_fn(y_pol, z)[0]).max())
            if r_pol <= max(rnorm, floor_r):
                y, rnorm = y_pol, r_pol
        xn = self.fn["output"](y, z)[0].ravel().copy()
        if self.wrap_continuous:
            xn = self.wrap(xn)
        lam = y[self.nd:].copy()
        self._lam_guess = lam
        return StepResult(x=xn, lam=lam, iterations=it, residual=rnorm, y=y.copy())

    def _solve_compiled(self, x: np.ndarray, u: np.ndarray | None, step_index: int | None,
                        y0: np.ndarray | None) -> StepResult:
        """Same algorithm as the numpy loop of ``solve``, as one call into the generated library.

        Finiteness of (x, u) is checked in C (same ValueError); the rest of ``_check_inputs`` is here.
        """
        nw, nx = self._newton, self.nx
        x = np.asarray(x, dtype=float)
        u = self._zero_input if u is None else np.asarray(u, dtype=float)
        if x.shape != (nx,) or u.shape != (self.nu,):
            x, u = self._check_sizes(x, u)
        nw.z[:nx] = x
        nw.z[nx:] = u
        if y0 is None:
            if self.nc:
                nw.y[self.nd:] = self._lam_guess
        else:
            nw.y[:] = np.asarray(y0, float).ravel()
        code = nw(self.max_iterations, self.tol, self.rcond_min, y0 is None, *self._chord_settings())
        rnorm, it, rcond = nw.info.tolist()
        if code:
            if code == NEWTON_NONFINITE:
                raise ValueError("state or input contains NaN/inf")
            if code == NEWTON_SINGULAR_MASS:  # M(q_k) singular: retry from the least-squares guess
                return self._solve_compiled(x, u, step_index, self.initial_guess(x, u))
            if code == NEWTON_SINGULAR:
                raise SingularityError(step_index, rcond, self._what)
            assert code == NEWTON_NOT_CONVERGED
            raise ConvergenceError(step_index, rnorm, int(it))
        xn = nw.xn.copy()  # the buffer is overwritten by the next step
        if self.wrap_continuous:
            xn = self.wrap(xn)
        y = nw.y.copy()
        lam = y[self.nd:].copy()
        self._lam_guess = lam
        return StepResult(x=xn, lam=lam, iterations=int(it), residual=rnorm, y=y)

    def step(self, x: np.ndarray, u: np.ndarray | None = None, step_index: int | None = None) -> np.ndarray:
        """x_{k+1} = f(x_k, u_k). Multipliers and iteration count are in ``last_result``."""
        self.last_result = self.solve(x, u, step_index)
        return self.last_result.x

    def simulate(self, x0: np.ndarray, inputs: np.ndarray | None = None,
                 steps: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Roll out N steps: returns states (N+1, nx) and multipliers (N, nc).

        ``inputs`` is (N, nu); a system without inputs (nu = 0) takes ``steps=N`` instead.
        """
        if inputs is None:
            if steps is None:
                raise ValueError("simulate needs inputs (N, nu) or, without inputs, steps=N")
            inputs = np.zeros((steps, self.nu))
        inputs = np.asarray(inputs, float)
        if self.nu == 0:
            inputs = np.zeros((steps if steps is not None else len(inputs), 0))
        elif inputs.ndim == 1 and inputs.size % self.nu == 0:
            inputs = inputs.reshape(-1, self.nu)
        if inputs.ndim != 2 or inputs.shape[1] != self.nu:
            raise ValueError(f"inputs must have shape (N, {self.nu}), got {inputs.shape}")
        X = np.zeros((len(inputs) + 1, self.nx))
        lams = np.zeros((len(inputs), self.nc))
        X[0] = x0
        for k, u in enumerate(inputs):
            r = self.solve(X[k], u, step_index=k)
            X[k + 1], lams[k] = r.x, r.lam
        return X, lams
