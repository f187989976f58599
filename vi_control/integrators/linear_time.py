"""Linear-time variational integrator of Lee2016 (Lee, Liu, Park, Srinivasa): DRNEA + RIQN.

The discrete Lagrangian is the per-body trapezoidal one on SE(3) (Lee2016, eq. 9), summed over the
tree. The state is the same as MidpointVI's, x_k = (q_k, p_k) with p_k = D₂L_d(q_{k−1}, q_k) the discrete
momentum (F⁺_d = 0), so ``velocity``/``energy``/``state_from_velocity`` mean the same for both
integrators. One step solves the forced DEL equation (Lee2016, eq. 17 pulled back to joint space)

    f(q_{k+1}) = Σ_i J_i(q_k)ᵀ (μ_i^k + Δt/2 ∂P_i(T_i^k)) − p_k − F⁻_d = 0,
    F⁻_d = Δt S τ_k − c ⊙ (q_{k+1} − q_k)                     (forcing as in MidpointVI)

for q_{k+1}, then p_{k+1} = D₂L_d(q_k, q_{k+1}). The residual is DRNEA (Alg. 2, O(n)); the root is found
either by RIQN (Alg. 3: q ← q − Δt M(q_k)^{-1} f, one articulated-body pass per iteration, O(n)) or by
Newton with the exact Jacobian (the derivative of DRNEA, Alg. 4; O(n²) to form, O(n³) to solve).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from functools import cached_property

import numpy as np
import pinocchio as pin

from ..mechanics.discrete import DiscreteSystemStructure
from ..mechanics.drnea import BodyTree, Frames, drnea_derivative_recursive
from ..model.crba import mass_matrix
from ..model.limits import MAX_CONFIGURATION
from ..model.mass_structure import unit_momentum
from ..model.robot import RobotModel
from . import drnea_c
from .base import (
    ConfigurationMomentumState,
    ConvergenceError,
    NewtonSettings,
    SingularityError,
    StepError,
    StepResult,
    as_vector,
    check_guess,
    check_state_input,
    check_step,
    check_time_step,
    input_sequence,
    rotational_coordinates,
    step_rollout,
)
from .implicit import SymbolicStepDerivatives

__all__ = ["LinearTimeVI", "ConvergenceError", "SingularityError", "StepError", "StepResult"]

METHODS = ("riqn", "newton")
BACKENDS = ("c",)
INITIAL_GUESSES = ("IG1", "IG2", "IG3")
JACOBIANS = ("subtree", "alg4")
JACOBIAN_NAME = "the DRNEA Jacobian ∂f/∂q_{k+1}"

logger = logging.getLogger(__name__)


class LinearTimeVI(SymbolicStepDerivatives):
    """DRNEA/RIQN variational integrator with MidpointVI's interface (Lee2016, §3).

    Parameters: ``method`` 'riqn' (Alg. 3) or 'newton' (exact Jacobian); ``jacobian`` for Newton:
    'subtree' (ours: per-body 6×6 maps summed over subtrees, then O(n²) dot products) or 'alg4' (Lee2016
    Alg. 4 as printed, one O(n) forward/backward pass per column: the paper's Newton baseline, same
    Jacobian to rounding, more work); ``initial_guess`` IG1
    (q_{k+1} = q_k), IG2 (explicit Euler with q̇_k = M⁻¹p_k) or IG3 (semi-implicit Euler with the
    continuous dynamics) of §3.3; ``settings`` (NewtonSettings, or its fields as keywords): ``tol`` on the
    residual ∞-norm relative to 1 + |p_k|∞, as MidpointVI, or ``step_tol`` on the last update relative to
    1 + |q|∞ once rounding dominates the residual (RIQN forms no Jacobian whose rounding floor could be
    estimated). Every update is line-searched (the residual must decrease, and no body's relative rotation may
    reach π). ``fallback`` (default True): when the step fails, RIQN is followed by Newton at the same Δt and then
    by substeps of Δt/2, Δt/4, … (``ltvi_chain`` in drnea_step.c; each fallback is logged with its reason); a step
    the chain cannot take raises ConvergenceError with what was tried. Without fallback a singular Newton Jacobian
    raises SingularityError and every other failure ConvergenceError.
    Only unconstrained trees without prescribed joints (Lee2016, §5 leaves constraints open).
    The step (DRNEA, RIQN/Newton, line search, fallback chain, initial guess, p_{k+1}) is one call into our C
    (``integrators.drnea_c``), the one implementation in the package: it needs a C compiler, and says so at
    construction without one. ``backend`` is 'c' (the only one; the numpy loop it replaced is the tests' oracle,
    test/support/linear_time_oracle.py).
    """

    DEFAULT_SETTINGS = NewtonSettings(tol=1e-12, max_iterations=100, rcond_min=1e-13, step_tol=1e-13)

    def __init__(
        self,
        robot: RobotModel,
        dt: float,
        settings: NewtonSettings | None = None,
        *,
        method: str = "riqn",
        initial_guess: str = "IG3",
        wrap_continuous: bool = False,
        backend: str | None = None,
        jacobian: str = "subtree",
        fallback: bool = True,
        **setting_overrides,
    ):
        dt = check_time_step(dt)
        if method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {method!r}")
        if jacobian not in JACOBIANS:
            raise ValueError(f"jacobian must be one of {JACOBIANS}, got {jacobian!r}")
        if initial_guess not in INITIAL_GUESSES:
            raise ValueError(f"initial_guess must be one of {INITIAL_GUESSES}, got {initial_guess!r}")
        if robot.constraints or robot.prescribed or robot.nonholonomic:
            raise NotImplementedError(
                "LinearTimeVI handles unconstrained trees without prescribed joints "
                "(Lee2016, §5); use MidpointVI (or 'gni' for nonholonomic constraints)"
            )
        self.robot, self.dt = robot, float(dt)
        self.method, self.initial_guess_name, self.jacobian_method = method, initial_guess, jacobian
        self.settings = replace(settings or self.DEFAULT_SETTINGS, **setting_overrides).for_model(unit_momentum(robot))
        self.wrap_continuous, self.fallback = wrap_continuous, bool(fallback)
        self.tree = BodyTree(robot)
        if backend == "numpy":
            raise ValueError(
                "backend='numpy' is no longer a LinearTimeVI path: the step is our compiled C "
                "(integrators/csrc/drnea_step.c); its numpy twin is the tests' oracle "
                "(test/support/linear_time_oracle.py)"
            )
        if backend not in (None, *BACKENDS):
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
        names = robot.joint_names
        self.nq = robot.nq
        self.nx, self.nc, self.nk, self.nd = 2 * self.nq, 0, 0, self.nq
        self.idx_act = np.array([names.index(n) for n in robot.actuated], dtype=int)
        self.idx_d, self.idx_k = np.arange(self.nq), np.zeros(0, dtype=int)
        self.rotational = rotational_coordinates(robot, self.idx_d)
        self.nu = self.n_torques = len(self.idx_act)
        self.state = ConfigurationMomentumState(self.nq, robot.continuous_mask)
        self.damping = np.asarray(robot.damping, float)
        self._model = robot.pin_model
        # Gravity-free copy: ABA on it with q̇ = 0 returns M(q)⁻¹ τ, the impulse response of §3.2.
        self._impulse_model = pin.Model(self._model)
        self._impulse_model.gravity = pin.Motion.Zero()
        self._zero = np.zeros(self.nq)
        self.iteration_history: list[int] = []
        self._compiled = self._compiled_step()
        self._tau_buf = np.zeros(self.nq)

    backend = "c"

    def _compiled_step(self) -> drnea_c.CompiledStep:
        """The model packed for the compiled step (module docstring); CompilerRequiredError (a RuntimeError) naming
        the fix without a C compiler."""
        st = self.settings
        return drnea_c.CompiledStep(
            self.tree,
            self.dt,
            self.damping,
            self.method,
            self.initial_guess_name,
            st.tol,
            st.step_tol,
            st.max_iterations,
            self.jacobian_method,
            self.fallback,
            self.rotational,
            st.max_rotation,
            st.p_unit,
        )

    # ---- joint-space helpers (Pinocchio's O(n) algorithms) ----------------------------------------
    # pinocchio.Data grows like n³ (≈ 0.5 GB at 200 joints, 2 GB at 400): created on first use only, and the C
    # backend never needs it (stepping, velocity, energy and state_from_velocity use our own recursions).
    @cached_property
    def _data(self) -> pin.Data:
        return self._model.createData()

    @cached_property
    def _impulse_data(self) -> pin.Data:
        return self._impulse_model.createData()

    @cached_property
    def _derivative_functions(self):
        """The same L_d (Lee2016, eq. 9, summed over the bodies) written symbolically: its DEL residual and output
        map, differentiated by AD, are the exact derivatives of the DRNEA step (built and compiled on first use —
        a simulator never pays for them)."""
        return DiscreteSystemStructure(self.robot, self.dt, lagrangian="trapezoidal_se3", eager=False).functions

    def mass_solve(self, q: np.ndarray, tau: np.ndarray) -> np.ndarray:
        """M(q)⁻¹ τ by the articulated-body algorithm (Lee2016, eq. 25, 'ABI')."""
        return pin.aba(self._impulse_model, self._impulse_data, q, self._zero, tau).copy()

    def _torques(self, u: np.ndarray) -> np.ndarray:
        tau = np.zeros(self.nq)
        tau[self.idx_act] = u
        return tau

    # ---- state conversions ---------------------------------------------------------------------------
    def state_from_velocity(self, q: np.ndarray, qdot: np.ndarray) -> np.ndarray:
        """x_0 = (q, M(q) q̇): the continuous Legendre transform, as MidpointVI."""
        q, qdot = as_vector(self, q, self.nq, "q"), as_vector(self, qdot, self.nq, "qdot")
        if self._compiled is not None:  # no pinocchio.Data on the compiled path (module note on _data)
            p = mass_matrix(self._model, q) @ qdot
        else:
            p = pin.rnea(self._impulse_model, self._impulse_data, q, self._zero, qdot).copy()
        return np.concatenate([q, p])

    def discrete_momentum(self, q0: np.ndarray, q1: np.ndarray, fk: Frames | None = None) -> np.ndarray:
        """D₂L_d(q_0, q_1) = Σ_i J_i(q_1)ᵀ (Ad_{ΔT_i}ᵀ μ_i − Δt/2 ∂P_i(T_i^1))  (Lee2016, eq. 16b)."""
        t = self.tree
        fk = t.frames(q0) if fk is None else fk
        xi, fk1 = t.displacement(fk, np.asarray(q1, float) - q0)
        mw = t.world_momenta(fk, xi, self.dt)
        return t.project(fk1, mw - 0.5 * self.dt * t.gravity_wrenches(fk1))

    def state_from_configurations(self, q_prev: np.ndarray, q: np.ndarray) -> np.ndarray:
        """x_k from two configurations: p_k = D₂L_d(q_{k−1}, q_k) (F⁺_d = 0)."""
        q_prev, q = as_vector(self, q_prev, self.nq, "q_prev"), as_vector(self, q, self.nq, "q")
        return np.concatenate([q, self.discrete_momentum(q_prev, q)])

    def velocity(self, x: np.ndarray) -> np.ndarray:
        """q̇ = M(q)⁻¹ p (continuous Legendre transform inverted, by ABA: our compiled one, or Pinocchio's)."""
        x = as_vector(self, x, self.nx, "state x")
        if self._compiled is not None:
            return self._compiled.aba(x[: self.nq], self._zero, x[self.nq :], gravity=False)
        return self.mass_solve(x[: self.nq], np.ascontiguousarray(x[self.nq :]))

    def energy(self, x: np.ndarray) -> float:
        """½ q̇ᵀp + V(q), V = −Σ m_i gᵀ x_{c,i} (Pinocchio's potential, from the tree's own kinematics)."""
        x = as_vector(self, x, self.nx, "state x")
        q, p = x[: self.nq], x[self.nq :]
        return float(0.5 * self.velocity(x) @ p + self.tree.potential_energy(self.tree.frames(q)))

    def potential_gradient(self, q: np.ndarray) -> np.ndarray:
        """∇V(q) from the tree's gravity wrenches (O(n))."""
        return self.tree.gravity_torque(self.tree.frames(as_vector(self, q, self.nq, "q")))

    def constraint(self, q: np.ndarray) -> np.ndarray:
        return np.zeros(0)

    def wrap(self, x: np.ndarray) -> np.ndarray:
        """Continuous joint angles to [−π, π): L_d only sees relative placements, so p is unchanged."""
        return self.state.wrap(x)

    # ---- DEL residual (DRNEA) -----------------------------------------------------------------------
    def residual(self, x: np.ndarray, u: np.ndarray, q1: np.ndarray) -> np.ndarray:
        """f(q_{k+1}) of the forced DEL equation at state x_k, input u_k (DRNEA, O(n))."""
        q0 = x[: self.nq]
        fk = self.tree.frames(q0)
        return self.frame_residual(fk, self.constant_part(fk, x, u, self.dt), q0, q1, self.dt)[0]

    def constant_part(self, fk: Frames, x: np.ndarray, u: np.ndarray, dt: float) -> np.ndarray:
        """Terms of f independent of q_{k+1}: Δt/2 ∂V(q_k)/∂q − p_k − Δt S τ_k − c q_k."""
        q0, p0 = x[: self.nq], x[self.nq :]
        return 0.5 * dt * self.tree.gravity_torque(fk) - p0 - dt * self._torques(u) - self.damping * q0

    def frame_residual(self, fk: Frames, const: np.ndarray, q0: np.ndarray, q1: np.ndarray, dt: float):
        """(f(q_{k+1}), frames at q_{k+1}, ξ, world momenta) from the frames ``fk`` at q_k and ``constant_part``:
        the DRNEA evaluation the Newton/RIQN loop repeats per update (the tests' numpy oracle of the C loop)."""
        t = self.tree
        xi, fk1 = t.displacement(fk, q1 - q0)
        mw = t.world_momenta(fk, xi, dt)
        return t.project(fk, mw) + const + self.damping * q1, fk1, xi, mw

    def jacobian(self, x: np.ndarray, q1: np.ndarray) -> np.ndarray:
        """∂f/∂q_{k+1}, exact (derivative of DRNEA, Lee2016, Alg. 4), by the ``jacobian`` method chosen."""
        q0, q1 = x[: self.nq], np.asarray(q1, float)
        fk = self.tree.frames(q0)
        xi, fk1 = self.tree.displacement(fk, q1 - q0)
        return self.frame_jacobian(fk, fk1, xi, q0, q1, self.dt, self.jacobian_method)

    def frame_jacobian(
        self, fk: Frames, fk1: Frames, xi: np.ndarray, q0: np.ndarray, q1: np.ndarray, dt: float, method: str
    ) -> np.ndarray:
        """∂f/∂q_{k+1} from the frames of ``frame_residual``: 'subtree' sums or the paper's Alg. 4 ('alg4')."""
        if method == "alg4":
            return drnea_derivative_recursive(self.tree, q0, q1, dt) + np.diag(self.damping)
        return self.tree.momentum_jacobian(fk, fk1, xi, dt) + np.diag(self.damping)

    # ---- one step -------------------------------------------------------------------------------------
    def check_inputs(self, x: np.ndarray, u: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        return check_state_input(self, x, u)

    def warm_start(self, x_next: np.ndarray, lam: np.ndarray | None = None) -> np.ndarray:
        """y₀ = q_{k+1} of ``x_next`` (no multipliers: unconstrained trees only)."""
        return as_vector(self, x_next, self.nx, "state x_next")[: self.nq].copy()

    def initial_guess(self, x: np.ndarray, u: np.ndarray, dt: float | None = None) -> np.ndarray:
        """IG1 / IG2 / IG3 of Lee2016, §3.3 (q̇_k from M⁻¹p_k since the state carries p_k), for a step of ``dt``
        (default Δt; substeps of the fallback chain use less)."""
        dt = self.dt if dt is None else dt
        q = x[: self.nq]
        if self.initial_guess_name == "IG1":
            return q.copy()
        v = self.velocity(x)
        if self.initial_guess_name == "IG2":
            q1 = q + dt * v
        else:
            a = pin.aba(self._model, self._data, q, v, self._torques(u) - self.damping * v)
            q1 = q + dt * (v + dt * a)
        # Beside a singularity of M(q_k) the predicted turn can be huge where the root is not (icub's neck at
        # q = 0: 2.4e5 rad): a guess no accepted root can be near is replaced by q_k (IG1), in the C driver alike.
        if not np.abs(q1 - q)[self.rotational].max(initial=0.0) <= self.settings.max_rotation or not np.all(
            np.isfinite(q1)
        ):
            return q.copy()
        return q1

    def solve(
        self,
        x: np.ndarray,
        u: np.ndarray | None = None,
        step_index: int | None = None,
        y0: np.ndarray | None = None,
        lam0: np.ndarray | None = None,
    ) -> StepResult:
        """Root of f(q_{k+1}) by RIQN (Alg. 3) or Newton (Alg. 1), line-searched, with the fallback chain
        (logged; class docstring); raises ConvergenceError / SingularityError when the chain fails.

        ``y0``: initial guess of q_{k+1} (else the ``initial_guess`` rule); ``lam0`` is ignored (no constraints).
        """
        x, u = self.check_inputs(x, u)
        y0, _ = check_guess(self, y0, lam0, self.nq)  # (after the state: a bad state is the first thing to name)
        code, xn, rnorm, it, fb = self._root(x, u, y0)
        if code != drnea_c.OK:
            self._raise(code, step_index, rnorm, it, fb)
        self._log_fallback(step_index, fb)
        check_step(self, x, xn, self.rotational, step_index)
        q1 = xn[: self.nq].copy()
        if self.wrap_continuous:
            xn = self.wrap(xn)
        return StepResult(x=xn, lam=np.zeros(0), iterations=it, residual=rnorm, y=q1)

    def _root(self, x: np.ndarray, u: np.ndarray, y0: np.ndarray | None):
        """(code, x_{k+1}, |f|∞, iterations, fallback record) of one step: one call into the C (ltvi_step)."""
        self._tau_buf[self.idx_act] = u  # unactuated entries stay zero
        code, xn, rnorm, it = self._compiled.step(x, self._tau_buf, y0)
        return code, xn, rnorm, it, self._compiled.fallback

    def _log_fallback(self, step_index: int | None, fb: np.ndarray) -> None:
        if fb[0]:
            logger.warning("LinearTimeVI step %s: %s", step_index, drnea_c.fallback_reason(self.method, fb))

    def _raise(self, code: int, step_index: int | None, rnorm: float, it: int, fb: np.ndarray) -> None:
        """The exceptions for a failed step (both backends' return codes), with what the fallback chain tried."""
        if code == drnea_c.SINGULAR_JACOBIAN and not fb[0]:
            raise SingularityError(step_index, 0.0, JACOBIAN_NAME)
        detail = drnea_c.REASONS.get(code, "")
        if fb[0]:
            detail = drnea_c.fallback_reason(self.method, fb) + f"; the last substep failed: {detail}"
        raise ConvergenceError(step_index, rnorm, it, detail)

    def step(
        self, x: np.ndarray, u: np.ndarray | None = None, step_index: int | None = None, lam0: np.ndarray | None = None
    ) -> np.ndarray:
        """x_{k+1} = f(x_k, u_k)."""
        return self.solve(x, u, step_index).x

    def simulate(
        self, x0: np.ndarray, inputs: np.ndarray | None = None, steps: int | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Roll out N steps: states (N+1, nx) and (empty) multipliers (N, 0); iterations per step in
        ``iteration_history``. ``inputs`` (N, nu), or ``steps=N`` for a system without inputs."""
        inputs = input_sequence(self, inputs, steps)
        if self._compiled is not None and not self.wrap_continuous and len(inputs):
            return self._simulate_compiled(x0, inputs)
        X, self.iteration_history = step_rollout(self, x0, inputs)
        return X, np.zeros((len(inputs), 0))

    def _simulate_compiled(self, x0: np.ndarray, inputs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The whole rollout as one C call (no Python per step); same steps as ``solve``."""
        x0, _ = self.check_inputs(x0, None)
        if not np.all(np.isfinite(inputs)):
            raise ValueError("inputs contain NaN/inf")
        taus = np.zeros((len(inputs), self.nq))
        taus[:, self.idx_act] = inputs
        code, X, iters, rnorm, it, k, fbs = self._compiled.rollout(x0, taus)
        self.iteration_history = iters[: k + 1].tolist()
        for j in np.flatnonzero(fbs[:k, 0] if code != drnea_c.OK else fbs[:, 0]):
            self._log_fallback(int(j), fbs[j])
        if code != drnea_c.OK:
            self._raise(code, k, rnorm, it, fbs[k])
        # the checks of ``solve``, vectorized over the rollout: the first refused step is reported
        dq = np.abs(np.diff(X[:, : self.nq], axis=0)) * self.rotational
        bad = np.flatnonzero(
            (dq.max(axis=1, initial=0.0) > self.settings.max_rotation)
            | ~(np.abs(X[1:, : self.nq]).max(axis=1, initial=0.0) <= MAX_CONFIGURATION)
        )
        if len(bad):
            k = int(bad[0])
            check_step(self, X[k], X[k + 1], self.rotational, k)
        return X, np.zeros((len(inputs), 0))
