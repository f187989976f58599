"""The discrete-system interface every integrator implements, and the pieces they share.

A *discrete system* is a one-step map x_{k+1} = f(x_k, u_k) on a state manifold (DESIGN.md principle 3):
the midpoint VI (Johnson2015), the linear-time VI (Lee2016) and, later, Lie-group (Jimenez2013) and nonholonomic
(Kobilarov2010) integrators. Planners, controllers and nodes are written against ``DiscreteSystem`` (and
``Linearizable`` where they need derivatives) and never against a concrete class.

Conventions shared by every implementation:

- ``solve(x, u, step_index=, y0=, lam0=)`` is stateless: the Newton initial guess is the system's own
  prediction unless ``y0`` (all unknowns) or ``lam0`` (multipliers only) is given. Nothing is remembered
  between calls, so a result never depends on call history. ``step`` is ``solve(...).x``.
- Errors: ``ValueError`` for a wrong-sized or non-finite state/input (``check_inputs``);
  ``ConvergenceError`` when Newton does not reach its tolerance; ``SingularityError`` when the Newton
  matrix (or the linearization's R_y) is singular (Johnson2015, §VII). Both are ``StepError``.
- ``state`` is a ``State`` (Crocoddyl's StateAbstract): ``diff``/``integrate`` on the state manifold, ``nx``
  coordinates and ``ndx`` tangent directions. Linearizations (A, B) act on tangent vectors.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from ..model.limits import MAX_CONFIGURATION, check_time_step  # noqa: F401  (check_time_step: re-exported)
from ..model.mass_structure import spin_invariant_joints
from ..model.rigid_body import RigidBodyModel
from ..model.robot import RobotModel, wrap_angle
from ..model.scalars import as_real_array, is_integer
from .newton_settings import NewtonSettings  # noqa: F401  (re-exported: integrators share one stopping rule)


# ---- errors ---------------------------------------------------------------------------------------
class StepError(RuntimeError):
    """A step could not produce a trustworthy next state."""


class ConvergenceError(StepError):
    """Newton did not converge; carries the step index and final residual norm."""

    def __init__(self, step: int | None, residual: float, iterations: int, detail: str = ""):
        self.step, self.residual, self.iterations = step, residual, iterations
        super().__init__(
            f"Newton did not converge at step {step} after {iterations} iterations "
            f"(residual norm {residual:.3e}){': ' + detail if detail else ''}; reduce dt or check the inputs"
        )


class UntrustedStepError(StepError):
    """Newton found a root the integrator cannot vouch for: a joint turning more than ``max_rotation`` in one
    step (the discrete Euler–Lagrange equations then have several roots, and chord and exact Newton may reach
    different ones), or a configuration beyond the stated range (``model.limits.MAX_CONFIGURATION``)."""

    def __init__(self, step: int | None, joint: str, what: str):
        self.step, self.joint, self.what = step, joint, what
        super().__init__(
            f"step {step}: joint {joint!r} {what}; the result is refused (reduce dt or check the state and inputs)"
        )


class SingularityError(StepError):
    """The Newton matrix (M_{k+1}, or M_{k+1} bordered by constraints) is singular (Johnson2015, §VII)."""

    def __init__(self, step: int | None, rcond: float, what: str):
        self.step, self.rcond, self.what = step, rcond, what
        super().__init__(
            f"{what} is singular or ill-conditioned at step {step} (reciprocal condition {rcond:.2e}); "
            "the one-step map is not defined here (Johnson2015, §VII)"
        )


# ---- settings and results --------------------------------------------------------------------------
@dataclass
class StepResult:
    """One solved step: next state, multipliers λ_k, Newton's iteration count and final residual norm, and the
    solved unknowns y (whatever the integrator iterates on: (q_{k+1}[dynamic], λ_k) for the midpoint VI)."""

    x: np.ndarray
    lam: np.ndarray
    iterations: int
    residual: float
    y: np.ndarray


@dataclass
class StepDerivatives:
    """Partial derivatives of an implicit step R(y, z) = 0, x_{k+1} = O(y, z), z = (x_k, u_k) in tangent
    coordinates: what the implicit-function theorem needs for the exact linearization (Johnson2015, eqs. 8–15)."""

    Ry: np.ndarray  # (ny, ny)
    Rz: np.ndarray  # (ny, ndx + nu)
    Oy: np.ndarray  # (ndx, ny)
    Oz: np.ndarray  # (ndx, ndx + nu)


@dataclass(frozen=True)
class CompiledStage:
    """An optional capability of a ``Linearizable`` (method ``compiled_stage(second_order)``, else absent or None):
    its step as compiled C that whole-horizon planners call per stage (planning.compiled). ``kernel`` is the
    mechanics layer's ``StepKernel`` (addresses of the Newton driver and of the generated 'linearize'/'hessian',
    work sizes, layout); the rest are the settings ``solve`` uses now. Contract: a step through the kernel with
    these settings computes what ``solve`` (chord Newton re-solved by exact Newton on non-convergence, the root checked
    as ``root_check`` says) and
    ``step_derivatives``/``step_hessian`` compute, with states on R^nx (``diff`` = subtraction, no wrapping)."""

    kernel: object
    settings: NewtonSettings
    chord: bool
    chord_rate_max: float
    root_check: bool = True  # ``MidpointVI.chord_root_check``: M_{k+1} checked at the root of a quasi-Newton step


# ---- states ---------------------------------------------------------------------------------------
class State:
    """A state manifold (Crocoddyl's StateAbstract): ``nx`` coordinates, ``ndx`` tangent directions.

    ``diff(x0, x1)`` is the tangent vector dx with ``integrate(x0, dx) = x1``; both act on single states
    (nx,) and on stacks (..., nx).
    """

    nx: int
    ndx: int

    def zero(self) -> np.ndarray:
        raise NotImplementedError

    def diff(self, x0: np.ndarray, x1: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def integrate(self, x: np.ndarray, dx: np.ndarray) -> np.ndarray:
        raise NotImplementedError


class ConfigurationMomentumState(State):
    """x = (q, p) of Johnson2015 on R^nq × R^nq: ``diff`` and ``integrate`` are plain vector arithmetic.

    A continuous joint's angle lives on the universal cover R of its circle, as the integrator evolves it:
    a swing-up that goes once round is 2π away from the start, not 0, so planners (whose costs and
    linearizations use these coordinates) see one smooth state space. Measured angles that may arrive
    modulo 2π are compared modulo 2π by the controller (``control.plan.state_error``); ``wrap`` maps a
    state's continuous angles to [−π, π).
    """

    def __init__(self, nq: int, continuous_mask: np.ndarray | None = None):
        self.nq, self.nx, self.ndx = nq, 2 * nq, 2 * nq
        mask = np.zeros(nq, bool) if continuous_mask is None else np.asarray(continuous_mask, bool)
        if mask.shape != (nq,):
            raise ValueError(f"continuous mask has shape {mask.shape}, expected ({nq},)")
        self.continuous_mask = mask
        self._full_mask = np.concatenate([mask, np.zeros(nq, bool)])

    def zero(self) -> np.ndarray:
        return np.zeros(self.nx)

    def diff(self, x0: np.ndarray, x1: np.ndarray) -> np.ndarray:
        return np.asarray(x1, float) - np.asarray(x0, float)

    def integrate(self, x: np.ndarray, dx: np.ndarray) -> np.ndarray:
        return np.asarray(x, float) + np.asarray(dx, float)

    def wrap(self, x: np.ndarray) -> np.ndarray:
        """Continuous joint angles of x to [−π, π) (a copy); other entries unchanged."""
        if np.shape(x)[-1:] != (self.nx,):
            raise ValueError(f"wrap: a state has {self.nx} entries (last axis), got shape {np.shape(x)}")
        if not self.continuous_mask.any():
            return x
        x = np.array(x, float, copy=True)
        x[..., self._full_mask] = wrap_angle(x[..., self._full_mask])
        return x


# ---- the interface --------------------------------------------------------------------------------
@runtime_checkable
class DiscreteSystem(Protocol):
    """What every integrator provides. Sizes: ``nq`` configuration variables, state ``nx`` (tangent
    ``state.ndx``), ``nu`` inputs = ``n_torques`` torques on ``idx_act`` + ``nk`` prescribed-joint positions
    (joints ``idx_k``; ``idx_d`` are the dynamic ones, ``nd`` of them), ``nc`` constraint multipliers."""

    robot: RobotModel | RigidBodyModel  # a RigidBodyModel for LieGroupVI (one rigid body on SO(3)/SE(3))
    dt: float
    nq: int
    nx: int
    nu: int
    nc: int
    nd: int
    nk: int
    n_torques: int
    idx_d: np.ndarray
    idx_k: np.ndarray
    idx_act: np.ndarray
    state: State
    settings: NewtonSettings

    def check_inputs(self, x: np.ndarray, u: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """(x, u) as flat float arrays; ValueError naming the size or NaN/inf."""

    def solve(
        self,
        x: np.ndarray,
        u: np.ndarray | None = None,
        step_index: int | None = None,
        y0: np.ndarray | None = None,
        lam0: np.ndarray | None = None,
    ) -> StepResult:
        """One step from x_k under u_k; ``y0`` guesses all unknowns, ``lam0`` the multipliers only."""

    def step(
        self, x: np.ndarray, u: np.ndarray | None = None, step_index: int | None = None, lam0: np.ndarray | None = None
    ) -> np.ndarray:
        """x_{k+1} = f(x_k, u_k)."""

    def simulate(
        self, x0: np.ndarray, inputs: np.ndarray | None = None, steps: int | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """States (N+1, nx) and multipliers (N, nc) of a rollout (each step warm-started at the last λ)."""

    def warm_start(self, x_next: np.ndarray, lam: np.ndarray | None = None) -> np.ndarray:
        """The unknowns y0 of a step predicted to end at ``x_next`` with multipliers ``lam``."""

    def state_from_velocity(self, q: np.ndarray, qdot: np.ndarray) -> np.ndarray:
        """x from a configuration and a velocity (continuous Legendre transform)."""

    def state_from_configurations(self, q_prev: np.ndarray, q: np.ndarray) -> np.ndarray:
        """x_k from two configurations Δt apart (discrete Legendre transform, Johnson2015, eq. 1b)."""

    def velocity(self, x: np.ndarray) -> np.ndarray:
        """q̇ of a state (inverse continuous Legendre transform)."""

    def energy(self, x: np.ndarray) -> float:
        """Total mechanical energy T + V at x."""

    def potential_gradient(self, q: np.ndarray) -> np.ndarray:
        """∇V(q) (nq,): the generalized gravity torque an actuator must cancel to hold q."""

    def wrap(self, x: np.ndarray) -> np.ndarray:
        """x with continuous joint angles in [−π, π)."""


@runtime_checkable
class Linearizable(DiscreteSystem, Protocol):
    """A discrete system whose step is an implicit map R(y, z) = 0, x_{k+1} = O(y, z) with exact derivatives.

    ``vi_control.linearization`` turns these into A, B (first order) and covector contractions (second
    order) by the implicit-function theorem; no system is asked for anything else.
    """

    def step_derivatives(self, result: StepResult, x: np.ndarray, u: np.ndarray) -> StepDerivatives:
        """R_y, R_z, O_y, O_z at a solved step (``result`` from ``solve(x, u)``)."""

    def step_hessian(
        self, result: StepResult, x: np.ndarray, u: np.ndarray, cov: np.ndarray, mu: np.ndarray
    ) -> np.ndarray:
        """∇²_{(y,z)}(covᵀO + μᵀR) at a solved step: (ny + nz, ny + nz)."""

    def curved_outputs(self) -> np.ndarray:
        """Indices i of the output map with ∂²Oᵢ ≠ 0 (the others are linear in (y, z))."""


def refuse_complex(v, what: str) -> None:
    """ValueError naming ``what`` for a complex array: the cast to float dropped its imaginary part with only a
    numpy warning (a state, an input, a guess are real)."""
    if np.iscomplexobj(v):
        raise ValueError(f"{what} is complex (a state and an input are real; pass .real if the imaginary part is zero)")


def real_array(v, what: str) -> np.ndarray:
    """``v`` as a flat float array; ValueError naming ``what`` for a complex array, strings, ragged lists or numbers
    beyond float range (numpy's "could not convert string to float" named no argument)."""
    refuse_complex(v, what)
    return as_real_array(v, what).ravel()


def check_state_input(
    system: DiscreteSystem, x: np.ndarray, u: np.ndarray | None, finite: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """The one input check of every integrator: sizes (naming the expected layout) and, if ``finite``, NaN/inf.
    Complex arrays are refused (``refuse_complex``)."""
    x = real_array(x, "state")
    u = np.zeros(system.nu) if u is None else real_array(u, "input")
    if x.size != system.nx:
        raise ValueError(f"state has size {x.size}, expected {system.nx} = 2·nq")
    if u.size != system.nu:
        raise ValueError(
            f"input has size {u.size}, expected {system.nu} "
            f"({system.n_torques} torques + {system.nk} prescribed positions)"
        )
    if finite and not (np.all(np.isfinite(x)) and np.all(np.isfinite(u))):
        raise ValueError("state or input contains NaN/inf")
    if finite and not np.abs(x[: system.nq]).max(initial=0.0) <= MAX_CONFIGURATION:
        raise configuration_range_error(system, x)
    return x, u


def state_velocities(system: DiscreteSystem, X: np.ndarray) -> np.ndarray:
    """q̇ of every state of X (K, nx) → (K, nq): the system's batched ``velocities`` where it has one (MidpointVI:
    one solve for all), else ``velocity`` state by state."""
    batch = getattr(system, "velocities", None)
    return batch(X) if batch is not None else np.array([system.velocity(x) for x in X])


def as_vector(system: DiscreteSystem, v: np.ndarray, size: int, what: str) -> np.ndarray:
    """``v`` as a flat float array of ``size`` entries; ValueError naming ``what`` and the expected size otherwise.

    The Legendre transforms, ``energy`` and ``warm_start`` slice their argument by ``nq``: a state of the wrong size
    returned a number for the wrong coordinates (the pendulum's energy of a 3-vector), so they check it here."""
    v = real_array(v, what)
    if v.size != size:
        raise ValueError(f"{what} has size {v.size}, expected {size} for {system.robot.name!r} (nq = {system.nq})")
    return v


def check_guess(
    system: DiscreteSystem, y0: np.ndarray | None, lam0: np.ndarray | None, ny: int
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """``solve``'s optional guesses as flat finite arrays of sizes ny and nc (ValueError naming the argument): a NaN
    guess ended as "Newton did not converge after 0 iterations", a wrong size as numpy's broadcast error."""
    out = []
    for v, size, what in ((y0, ny, "y0 (the unknowns' guess)"), (lam0, system.nc, "lam0 (the multipliers' guess)")):
        if v is not None:
            v = np.asarray(v, float).ravel()
            if v.size != size:
                raise ValueError(f"{what} has size {v.size}, expected {size}")
            if not np.all(np.isfinite(v)):
                raise ValueError(f"{what} contains NaN/inf")
        out.append(v)
    return out[0], out[1]


def configuration_range_error(system: DiscreteSystem, x: np.ndarray) -> ValueError:
    """The ValueError for a configuration beyond ±MAX_CONFIGURATION, naming the joint."""
    i = int(np.argmax(np.abs(x[: system.nq])))
    return ValueError(
        f"q[{i}] (joint {system.robot.joint_names[i]!r}) = {x[i]:.6g} is beyond the supported range "
        f"±{MAX_CONFIGURATION:g} (cos and sin of such an angle carry no digits of it)"
    )


def rotational_coordinates(robot: RobotModel, idx_d: np.ndarray) -> np.ndarray:
    """Mask over the dynamic coordinates ``idx_d``: True for the angles whose per-step rotation is limited —
    revolute and continuous joints except spin-invariant ones (a wheel: model.mass_structure)."""
    free = spin_invariant_joints(robot)
    return np.array(
        [robot.joints[i].type in ("revolute", "continuous") and robot.joints[i].name not in free for i in idx_d],
        dtype=bool,
    )


def check_step(
    system: DiscreteSystem, x: np.ndarray, x_next: np.ndarray, rotational: np.ndarray, step_index: int | None
) -> None:
    """UntrustedStepError unless x_{k+1} is finite, within ±MAX_CONFIGURATION, and no dynamic revolute joint
    turned more than ``settings.max_rotation`` (``rotational``: mask over ``idx_d``)."""
    nq, d = system.nq, system.idx_d
    q0, q1 = x[:nq], x_next[:nq]
    if not np.all(np.isfinite(x_next)):
        raise UntrustedStepError(step_index, "?", "reached a non-finite state")
    dq = np.abs(q1[d] - q0[d]) * rotational
    if len(dq) and dq.max() > system.settings.max_rotation:
        i = int(d[np.argmax(dq)])
        raise UntrustedStepError(
            step_index,
            system.robot.joint_names[i],
            f"would turn {q1[i] - q0[i]:.4g} rad in one step (more than max_rotation = "
            f"{system.settings.max_rotation:.4g} rad: sampled angles alias and the DEL equations "
            "have several roots there)",
        )
    if not np.abs(q1).max(initial=0.0) <= MAX_CONFIGURATION:
        i = int(np.argmax(np.abs(q1)))
        raise UntrustedStepError(
            step_index,
            system.robot.joint_names[i],
            f"would reach q = {q1[i]:.6g}, beyond the supported range ±{MAX_CONFIGURATION:g}",
        )


def input_sequence(system: DiscreteSystem, inputs: np.ndarray | None, steps: int | None) -> np.ndarray:
    """``simulate``'s inputs as (N, nu); a system without inputs (nu = 0) may give ``steps=N`` instead."""
    if steps is not None and (not is_integer(steps) or steps < 0):
        raise ValueError(f"simulate: steps must be a non-negative integer, got {steps!r}")
    if inputs is None:
        if steps is None:
            raise ValueError("simulate needs inputs (N, nu) or, without inputs, steps=N")
        return np.zeros((steps, system.nu))
    inputs = np.asarray(inputs, float)
    if system.nu == 0:
        return np.zeros((steps if steps is not None else len(inputs), 0))
    if inputs.ndim == 1 and inputs.size % system.nu == 0:
        inputs = inputs.reshape(-1, system.nu)
    if inputs.ndim != 2 or inputs.shape[1] != system.nu:
        raise ValueError(f"inputs must have shape (N, {system.nu}), got {inputs.shape}")
    return inputs


def step_rollout(system: DiscreteSystem, x0: np.ndarray, inputs: np.ndarray) -> tuple[np.ndarray, list[int]]:
    """States (N+1, nx) of a rollout by ``system.solve`` from x0 under ``inputs`` (N, nu), and Newton's iterations per
    step: ``simulate`` of a system without multipliers."""
    X = np.zeros((len(inputs) + 1, system.nx))
    X[0] = as_vector(system, x0, system.nx, "x0")
    iterations = []
    for k, u in enumerate(inputs):
        r = system.solve(X[k], u, step_index=k)
        X[k + 1] = r.x
        iterations.append(r.iterations)
    return X, iterations
