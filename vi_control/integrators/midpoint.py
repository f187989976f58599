"""Midpoint variational integrator (Johnson2015, §II, §VI): step, Legendre transforms, simulate, derivatives.

``MidpointVI`` is the discrete system object of DESIGN.md principle 3 and implements the ``Linearizable``
interface of ``integrators.base``: ``solve`` finds the root of the forced (constrained) DEL equations by
Newton's method with the exact Jacobian M_{k+1} (eq. 8); ``step_derivatives`` / ``step_hessian`` give the
exact partial derivatives of the same implicit map, which ``vi_control.linearization`` turns into A, B and
second-order terms.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..mechanics.discrete import (
    NEWTON_NONFINITE,
    NEWTON_NOT_CONVERGED,
    NEWTON_OUT_OF_RANGE,
    NEWTON_SINGULAR,
    NEWTON_SINGULAR_MASS,
    NEWTON_UNTRUSTED,
    DiscreteSystemStructure,
)
from ..model.limits import MAX_CONFIGURATION
from ..model.mass_structure import unit_momentum
from ..model.robot import RobotModel
from .base import (
    CompiledStage,
    ConfigurationMomentumState,
    ConvergenceError,
    NewtonSettings,
    SingularityError,
    StepError,
    StepResult,
    UntrustedStepError,
    as_vector,
    check_guess,
    check_state_input,
    check_step,
    configuration_range_error,
    input_sequence,
    rotational_coordinates,
)
from .implicit import SymbolicStepDerivatives

__all__ = ["MidpointVI", "ConvergenceError", "SingularityError", "StepError", "StepResult", "NEWTON_METHODS"]

NEWTON_METHODS = ("exact", "chord")
# Chord Newton refreshes M_{k+1} when an update is not at least this much smaller than the previous one.
CHORD_RATE_MAX = 0.25
_F64 = np.dtype(np.float64)  # the dtype the compiled step's fast path takes as is (others go through check_state_input)


def solve_or_lstsq(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """A⁻¹B, or the least-squares (minimum-norm) solution where A is singular."""
    try:
        return np.linalg.solve(A, B)
    except np.linalg.LinAlgError:
        return np.linalg.lstsq(A, B, rcond=None)[0]


class MidpointVI(SymbolicStepDerivatives):
    """Midpoint variational integrator for a RobotModel at time step ``dt`` (a ``Linearizable`` system).

    ``settings`` (NewtonSettings; or its fields ``tol``, ``max_iterations``, ``rcond_min``, ``step_tol`` as
    keywords) is the root solve's stopping rule; ``wrap_continuous`` keeps continuous joint angles in
    [−π, π) after each step; ``compile`` chooses generated C (mechanics.codegen) or CasADi's VM for the model's
    functions — the Newton iteration is our C driver (mechanics/csrc/newton_driver.c) either way; ``newton``:
    'exact' evaluates and factors M_{k+1} (eq. 8) in every iteration; 'chord' iterates with the residual alone
    on one factored matrix — Δt⁻¹M(q_k) (Lee2016, eq. 25, Cholesky) for an unconstrained step, else M_{k+1} at
    the guess — refreshed with M_{k+1} only when an update shrinks by less than ``chord_rate_max``; M_{k+1} is
    evaluated once near the root, checked and used for the last (exact) updates. Both stop at the same tolerance
    and check the condition of M_{k+1} at the root. ``chord_root_check=False`` (attribute of the same name)
    skips M_{k+1} in an unconstrained chord step that converged on Δt⁻¹M(q_k) alone: the condition check is then
    M(q_k)'s, which does not see a singular M_{k+1} at the root (the spherical pendulum through its pole,
    test_integrator_errors.py); about 1.5× faster at 32 links (docs/benchmarks/step.md). Default ``newton``
    (None): the faster one for the backend, 'chord' over generated C, 'exact' over the VM, where each extra function
    call costs more than the Jacobian it saves.
    """

    DEFAULT_SETTINGS = NewtonSettings(tol=1e-12, max_iterations=30, rcond_min=1e-13, step_tol=1e-15)
    # The GNI subclass (Kobilarov2010) builds the same structure with the nonholonomic rows.
    NONHOLONOMIC = False

    def __init__(
        self,
        robot: RobotModel,
        dt: float,
        settings: NewtonSettings | None = None,
        *,
        wrap_continuous: bool = False,
        compile: bool | None = None,
        newton: str | None = None,
        chord_root_check: bool = True,
        **setting_overrides,
    ):
        if newton is not None and newton not in NEWTON_METHODS:
            raise ValueError(f"newton must be one of {NEWTON_METHODS}, got {newton!r}")
        self.settings = replace(settings or self.DEFAULT_SETTINGS, **setting_overrides).for_model(unit_momentum(robot))
        if robot.nonholonomic and not self.NONHOLONOMIC:
            raise ValueError(
                f"{robot.name} has nonholonomic constraints, which the midpoint VI would ignore: use the "
                "geometric nonholonomic integrator (make_integrator('gni', ...), Kobilarov2010)"
            )
        self.robot = robot
        self.structure = DiscreteSystemStructure(robot, dt, compile=compile, nonholonomic=self.NONHOLONOMIC)
        s = self.structure
        self.dt = s.dt
        self.nq, self.nx, self.nu, self.nc = s.nq, s.nx, s.n_inputs, s.nc
        self.n_torques, self.nk, self.nd = s.nu, s.nk, s.nd
        self.idx_d, self.idx_k, self.idx_act = s.idx_d, s.idx_k, s.idx_act
        self.state = ConfigurationMomentumState(self.nq, robot.continuous_mask)
        self.wrap_continuous = wrap_continuous
        self.functions = s.functions  # the backend's function set (compiled or VM); not part of the interface
        self._newton = s.newton  # the whole-step C driver (over generated C, or the CasADi VM's functions)
        self.newton = newton or ("chord" if self._newton.generated else "exact")
        self.chord_rate_max = CHORD_RATE_MAX
        self.chord_root_check = chord_root_check
        self._zero_input = np.zeros(self.nu)
        self._zero_lam = np.zeros(self.nc)
        self.rotational = rotational_coordinates(robot, self.idx_d)  # over idx_d: turns limited by max_rotation
        self.jacobian_name = (  # the matrix a SingularityError names
            "M_{k+1}" if self.nc == 0 else "the constrained DEL Jacobian [M_{k+1}, -Dh(q_k)^T; Dh(q_{k+1}), 0]"
        )

    @property
    def compiled_driver(self) -> bool:
        """True when each step is one call into the Newton driver compiled with the generated functions (False: the
        driver calls the CasADi VM back, for a model too large to compile or under VI_CONTROL_NO_COMPILE=1)."""
        return self._newton.generated

    def compiled_stage(self, second_order: bool = True) -> CompiledStage | None:
        """This step for whole-horizon compiled planning (``base.CompiledStage``, planning.compiled), with the
        current Newton settings; None where a step is not one call into generated C (CasADi VM, no compiler, a
        derivative function too large to compile) or its states are wrapped (``wrap_continuous``)."""
        if not self._newton.generated or self.wrap_continuous:
            return None
        kernel = self.structure.step_kernel(with_hessian=second_order)
        if kernel is None:
            return None
        return CompiledStage(kernel, self.settings, self.newton == "chord", self.chord_rate_max, self.chord_root_check)

    # ---- state conversions (discrete Legendre transforms) ------------------------------------
    def state_from_velocity(self, q: np.ndarray, qdot: np.ndarray) -> np.ndarray:
        """x_0 = (q, ∂L/∂q̇(q, q̇)); for prescribed joints the p-slot holds q̇."""
        q, qdot = as_vector(self, q, self.nq, "q"), as_vector(self, qdot, self.nq, "qdot")
        p = self.functions["momentum"](q, qdot)[0].ravel().copy()
        p[self.idx_k] = qdot[self.idx_k]
        return np.concatenate([q, p])

    def discrete_momentum(self, q0: np.ndarray, q1: np.ndarray) -> np.ndarray:
        """D₂L_d(q_0, q_1) (nq,): the right discrete Legendre transform (Johnson2015, eq. 1b, F⁺_d = 0)."""
        return self.functions["D2Ld"](np.asarray(q0, float), np.asarray(q1, float))[0].ravel().copy()

    def left_discrete_momentum(self, q0: np.ndarray, q1: np.ndarray) -> np.ndarray:
        """−D₁L_d(q_0, q_1) (nq,): the momentum p_0 at which q_0 → q_1 is an unforced step (eq. 1a)."""
        return -self.functions["D1Ld"](np.asarray(q0, float), np.asarray(q1, float))[0].ravel()

    def state_from_configurations(self, q_prev: np.ndarray, q: np.ndarray) -> np.ndarray:
        """x_k from two measured configurations: p_k = D₂L_d(q_{k−1}, q_k) (eq. 1b, F⁺_d = 0).

        Inputs between the samples do not enter: with F⁺_d = 0 the right Legendre transform is
        force-free. This is how a controller works from configurations alone.
        """
        q_prev, q = as_vector(self, q_prev, self.nq, "q_prev"), as_vector(self, q, self.nq, "q")
        p = self.discrete_momentum(q_prev, q)
        p[self.idx_k] = (q[self.idx_k] - q_prev[self.idx_k]) / self.dt
        return np.concatenate([q, p])

    def velocity(self, x: np.ndarray) -> np.ndarray:
        """Velocity estimate q̇ = M(q)⁻¹ p (continuous Legendre transform inverted).

        Where M(q) is singular (a coordinate singularity, Johnson2015, §VII-A) the least-squares solution is
        returned: the minimum-norm q̇ with M q̇ = p, so callers (initial guess, published joint states) never
        fail on a configuration the step itself handles.
        """
        x = as_vector(self, x, self.nx, "state x")
        q, p = x[: self.nq], x[self.nq :]
        M = self.mass_matrix(q)
        v = np.zeros(self.nq)
        v[self.idx_k] = p[self.idx_k]
        d, k = self.idx_d, self.idx_k
        rhs = p[d] - M[np.ix_(d, k)] @ v[k] if len(k) else p[d]
        Mdd = M[np.ix_(d, d)]
        v[d] = solve_or_lstsq(Mdd, rhs)
        return v

    def velocities(self, X: np.ndarray) -> np.ndarray:
        """``velocity`` of every state of X (K, nx) → (K, nq), with one batched solve (a plan's velocity-limit check
        called ``velocity`` per state: 1.8 ms of the pendulum swing-up's 4.0 ms ``plan_task``, now 0.47 ms)."""
        X = np.asarray(X, float)
        if X.ndim != 2 or X.shape[1] != self.nx:
            raise ValueError(f"{self.robot.name}: states X must be (K, {self.nx}), got shape {X.shape}")
        Q, P = X[:, : self.nq], X[:, self.nq :]
        d, k = self.idx_d, self.idx_k
        M = np.array([self.mass_matrix(q) for q in Q]).reshape(len(X), self.nq, self.nq)
        V = np.zeros_like(Q)
        V[:, k] = P[:, k]
        rhs = P[:, d] - np.einsum("nij,nj->ni", M[:, d][:, :, k], V[:, k]) if len(k) else P[:, d]
        try:
            V[:, d] = np.linalg.solve(M[:, d][:, :, d], rhs[..., None])[..., 0]
        except np.linalg.LinAlgError:  # a singular M somewhere: ``velocity``'s least-squares answer there
            return np.array([self.velocity(x) for x in X]).reshape(len(X), self.nq)
        return V

    def mass_matrix(self, q: np.ndarray) -> np.ndarray:
        """M(q) (nq, nq) of the symbolic tree (equal to Pinocchio's crba to round-off)."""
        return np.array(self.functions["mass"](np.asarray(q, float))[0])

    def energy(self, x: np.ndarray) -> float:
        x = as_vector(self, x, self.nx, "state x")
        return float(self.functions["energy"](x[: self.nq], self.velocity(x))[0].item())

    def potential_gradient(self, q: np.ndarray) -> np.ndarray:
        """∇V(q) = −(D₁L_d(q, q) + D₂L_d(q, q))/Δt: at rest the midpoint rule's discrete forces are exact."""
        q = as_vector(self, q, self.nq, "q")
        return -(self.functions["D1Ld"](q, q)[0].ravel() + self.functions["D2Ld"](q, q)[0].ravel()) / self.dt

    def constraint(self, q: np.ndarray) -> np.ndarray:
        return self.functions["h"](np.asarray(q, float))[0].ravel().copy()

    def configuration_violation(self, q: np.ndarray, tol: float = 1e-6) -> str | None:
        """Which holonomic constraint h(q) = 0 (Johnson2015, eq. 28b; URDF ``<mimic>`` couplings included) q misses
        by more than ``tol``·(1 + |q|∞), or None. A step from q_k off the constraints solves eq. 28 anyway: it
        lands on them at q_{k+1} with an impulse ~ M·h/Δt, an energy kick growing like 1/Δt² (baxter's gripper
        fingers set independently, test_model_untuned_robots.py) — so a start state must satisfy them."""
        robot = self.robot
        if not robot.constraints:
            return None
        q = np.asarray(q, float)
        h = self.constraint(q)
        bound = tol * (1.0 + float(np.abs(q).max(initial=0.0)))
        row = 0
        for i, c in enumerate(robot.constraints):
            worst = float(np.abs(h[row : row + c.size]).max())
            row += c.size
            if worst > bound:
                what = (
                    f"joints {list(c.joints)} (coefficients {list(c.coefficients)}, offset {c.offset:g})"
                    if c.type == "joints"
                    else f"{c.type} {c.link_a}/{c.link_b}"
                )
                return (
                    f"violates holonomic constraint {i}, {what}: |h| = {worst:.3g} > {bound:.3g}; give a "
                    "configuration that satisfies it"
                )
        return None

    def wrap(self, x: np.ndarray) -> np.ndarray:
        """Continuous joint angles to [−π, π) — L_d only sees differences and cos/sin."""
        return self.state.wrap(x)

    # ---- one step -----------------------------------------------------------------------------
    def check_inputs(self, x: np.ndarray, u: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        return check_state_input(self, x, u)

    def initial_guess(self, x: np.ndarray, u: np.ndarray | None = None, lam0: np.ndarray | None = None) -> np.ndarray:
        """y₀ = (q_k + Δt·M(q_k)⁻¹p_k, λ₀) with λ₀ = ``lam0`` or 0; a least-squares velocity where M(q_k) is
        singular.

        At a coordinate singularity of q_k (Johnson2015, §VII-A: the spherical pendulum's pole) M(q_k) has
        no inverse, yet M_{k+1} may be regular: the step must still be attempted, and it raises
        SingularityError only if the Newton matrix itself is singular.

        Beside such a singularity M(q_k)⁻¹p_k can be huge while the step is not (the shoulder of a folded arm whose
        elbow mass sits on its axis; icub's neck at q = 0): a predicted turn beyond ``max_rotation`` (or beyond the
        configuration range) cannot lead to a root the step would accept, and Newton started there found none
        or a spurious singular M_{k+1}. The stationary guess q_{k+1} = q_k is used instead (the C driver alike).
        """
        q = x[: self.nq]
        dq = self.dt * self.velocity(x)
        d = self.idx_d
        if not (
            np.abs(dq[d][self.rotational]).max(initial=0.0) <= self.settings.max_rotation
            and np.abs(q[d] + dq[d]).max(initial=0.0) <= MAX_CONFIGURATION
        ):
            dq = np.zeros(self.nq)
        return self.warm_start(np.concatenate([q + dq, x[self.nq :]]), lam0)

    def warm_start(self, x_next: np.ndarray, lam: np.ndarray | None = None) -> np.ndarray:
        """y₀ = (q_{k+1}[dynamic] of ``x_next``, λ or 0): Newton's start for a step predicted to end there."""
        lam = self._zero_lam if lam is None else as_vector(self, lam, self.nc, "lam")
        return np.concatenate([as_vector(self, x_next, self.nx, "state x_next")[: self.nq][self.idx_d], lam])

    def solve(
        self,
        x: np.ndarray,
        u: np.ndarray | None = None,
        step_index: int | None = None,
        y0: np.ndarray | None = None,
        lam0: np.ndarray | None = None,
    ) -> StepResult:
        """Newton on R(y, z) = 0 (eq. 2a / 28a–b); raises ConvergenceError / SingularityError.

        ``y0``: the unknowns' initial guess (else ``initial_guess(x, u, lam0)``); nothing is kept between calls.
        Chord Newton that does not converge within ``max_iterations`` is retried with exact Newton from the same
        guess: both solve the same equations, and a step must not fail only because the cheaper iteration
        contracts too slowly (a planner's line search would otherwise depend on the Newton variant).
        """
        try:
            if y0 is not None or lam0 is not None:  # (the common call has neither: no cost then)
                y0, lam0 = check_guess(self, y0, lam0, self.nd + self.nc)
        except ValueError:  # a guess built from a bad state (linearize_trajectory's X[k+1]): name the state first
            check_state_input(self, x, u)
            raise
        it, rnorm = self._drive(x, u, step_index, y0, lam0)
        nw = self._newton
        xn = nw.xn.copy()  # the driver's buffers are overwritten by the next step
        y = nw.y.copy()
        return StepResult(
            self.wrap(xn) if self.wrap_continuous else xn,
            y[self.nd :].copy() if self.nc else self._zero_lam,
            it,
            rnorm,
            y,
        )

    def _seed_driver(self, y0: np.ndarray | None, lam0: np.ndarray | None) -> None:
        """The driver's starting y: the guess y0, else (the driver predicts q_{k+1}) the multipliers lam0 or zero."""
        if y0 is not None:
            self._newton.y[:] = np.asarray(y0, float).ravel()
        elif self.nc:
            self._newton.y[self.nd :] = self._zero_lam if lam0 is None else lam0

    def _drive(
        self,
        x: np.ndarray,
        u: np.ndarray | None,
        step_index: int | None,
        y0: np.ndarray | None,
        lam0: np.ndarray | None,
    ) -> tuple[int, float]:
        """The step as one call into the Newton driver (chord, then exact if chord fails, as
        ``solve`` documents); leaves x_{k+1} and y in the driver's buffers, returns (iterations, residual).

        Finiteness of (x, u) is checked in C (same ValueError); the sizes are checked here. This is the whole
        Python cost of a compiled step, kept to buffer copies and one ctypes call (docs/benchmarks/step.md).
        """
        nw = self._newton
        if u is None:
            u = self._zero_input
        if not (
            type(x) is np.ndarray
            and type(u) is np.ndarray
            and x.shape == nw.z_x.shape
            and u.shape == nw.z_u.shape
            and x.dtype is _F64
            and u.dtype is _F64
        ):  # (else checked, cast or refused)
            x, u = check_state_input(self, x, u, finite=False)
        nw.z_x[...] = x
        nw.z_u[...] = u
        self._seed_driver(y0, lam0)
        nw.use_settings(self.settings, self.chord_rate_max, self.chord_root_check)
        chord = self.newton == "chord"
        code = nw.run(y0 is None, chord)
        if code == NEWTON_NOT_CONVERGED and chord:  # exact Newton from the same guess (``solve``)
            self._seed_driver(y0, lam0)
            code = nw.run(y0 is None, False)
        if code:
            rnorm, it, rcond = nw.info.tolist()
            if code == NEWTON_NONFINITE:
                raise ValueError("state or input contains NaN/inf")
            if code == NEWTON_OUT_OF_RANGE:
                raise configuration_range_error(self, x)
            if code == NEWTON_UNTRUSTED:  # the C driver refused the root; name the joint as check_step does
                xn = x.copy()
                xn[self.idx_d] = nw.y[: self.nd]
                check_step(self, x, xn, self.rotational, step_index)
                raise UntrustedStepError(
                    step_index, self.robot.joint_names[self.idx_d[int(rcond)]], "left the range the step can vouch for"
                )
            if code == NEWTON_SINGULAR_MASS:  # M(q_k) singular: retry from the least-squares guess
                return self._drive(x, u, step_index, self.initial_guess(x, u, lam0), None)
            if code == NEWTON_SINGULAR:
                raise SingularityError(step_index, rcond, self.jacobian_name)
            raise ConvergenceError(step_index, rnorm, int(it))
        return int(nw.info[1]), float(nw.info[0])

    def step(
        self, x: np.ndarray, u: np.ndarray | None = None, step_index: int | None = None, lam0: np.ndarray | None = None
    ) -> np.ndarray:
        """x_{k+1} = f(x_k, u_k) (multipliers: use ``solve``)."""
        if lam0 is not None:
            lam0 = check_guess(self, None, lam0, 0)[1]
        self._drive(x, u, step_index, None, lam0)
        xn = self._newton.xn.copy()
        return self.wrap(xn) if self.wrap_continuous else xn

    def simulate(
        self, x0: np.ndarray, inputs: np.ndarray | None = None, steps: int | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Roll out N steps: returns states (N+1, nx) and multipliers (N, nc); each step's Newton starts from
        the previous step's multipliers.

        ``inputs`` is (N, nu); a system without inputs (nu = 0) takes ``steps=N`` instead.
        """
        inputs = input_sequence(self, inputs, steps)
        X = np.zeros((len(inputs) + 1, self.nx))
        lams = np.zeros((len(inputs), self.nc))
        X[0] = as_vector(self, x0, self.nx, "x0")
        lam = None
        for k, u in enumerate(inputs):
            r = self.solve(X[k], u, step_index=k, lam0=lam)
            X[k + 1], lams[k], lam = r.x, r.lam, r.lam
        return X, lams

    # ---- derivatives (the Linearizable interface, integrators.implicit) -----------------------------
    @property
    def _derivative_functions(self):
        return self.functions
