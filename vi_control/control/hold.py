"""Holding a configuration: the discrete equilibrium state, the input that holds it, and its DLQR gain."""

from __future__ import annotations

import weakref
from collections.abc import Callable

import numpy as np

from ..integrators.base import DiscreteSystem, Linearizable, SingularityError, StepError
from ..linearization import linearize
from ..model.robot import RobotModel
from ..model.singular_pose import singular_direction
from .lqr import check_weight, dlqr


def equilibrium_state(vi: DiscreteSystem, q: np.ndarray) -> np.ndarray:
    """x = (q, D₂L_d(q, q)): the state of a configuration held still (q_{k−1} = q_k, Johnson2015, eq. 1b).

    Under gravity this momentum is −(Δt/2)∇V(q), not zero: the midpoint rule's discrete momentum.
    """
    return vi.state_from_configurations(q, q)


_ACTUATION: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _actuation(vi: DiscreteSystem) -> tuple[np.ndarray, bool]:
    """(S, SᵀS = I) of a system: which dynamic joint each torque drives — its structure, so found once per system
    (a plan asks for three holding inputs)."""
    try:
        hit = _ACTUATION.get(vi)
    except TypeError:  # (a system that cannot be a weak key — unhashable, no weak references: found every time)
        return _find_actuation(vi)
    if hit is None:
        hit = _ACTUATION[vi] = _find_actuation(vi)
    return hit


def _find_actuation(vi: DiscreteSystem) -> tuple[np.ndarray, bool]:
    S = np.eye(vi.nq)[np.ix_(vi.idx_d, vi.idx_act)]
    return S, bool(vi.n_torques) and np.array_equal(S.T @ S, np.eye(vi.n_torques))


def holding_input(vi: DiscreteSystem, q: np.ndarray) -> tuple[np.ndarray, float]:
    """Input u = (τ, ρ) with f(x_eq, u) = x_eq, x_eq = equilibrium_state(q) (gravity compensation).

    With q_{k+1} = q_k = q, eq. 2a reads D₂L_d(q,q) + D₁L_d(q,q) + Δt·Sτ = 0, i.e. Sτ = ∇V(q);
    solved in least squares over the actuated joints. Returns (u, residual): a nonzero residual
    means gravity acts on an unactuated joint, so q is no equilibrium (constraint forces ignored).
    """
    q = np.asarray(q, float)
    S, direct = _actuation(vi)
    rhs = vi.potential_gradient(q)[vi.idx_d]
    if not vi.n_torques:
        tau = np.zeros(0)
    elif direct:  # each input drives its own joint: Sᵀ is the least-squares solution
        tau = S.T @ rhs
    else:
        tau = np.linalg.lstsq(S, rhs, rcond=None)[0]
    residual = float(np.abs(S @ tau - rhs).max()) if len(rhs) else 0.0
    return np.concatenate([tau, q[vi.idx_k]]), residual


class SingularPoseError(SingularityError):
    """No hold gain: the step is singular at the pose to hold (Johnson2015, §VII), so it has no linearization there.
    A ``SingularityError`` (its ``step``, ``rcond``, ``what``) whose message names the pose, the joint or
    constraint, why, and what to do."""

    def __init__(self, message: str, cause: SingularityError):
        StepError.__init__(self, message)
        self.step, self.rcond, self.what = cause.step, cause.rcond, cause.what


def hold_gain(
    vi: Linearizable, q: np.ndarray, Q, R, u_eq: np.ndarray | None = None, riccati: Callable = dlqr
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Infinite-horizon DLQR gain about (equilibrium_state(q), holding_input(q)): (K, x_eq, u_eq).

    ``u_eq``: holding_input(q) if the caller has it; ``riccati``: a function with ``lqr.dlqr``'s signature (default
    ``lqr.dlqr``). ValueError for weights ``lqr.check_weight`` refuses (Q ⪰ 0, R ≻ 0, both symmetric), before
    anything is computed; ``SingularPoseError`` if the step is singular at q; LinAlgError for a nonholonomic model
    (no linear hold exists) or where the Riccati iteration does not converge."""
    Q = check_weight(Q, vi.state.ndx, "Q")
    R = check_weight(R, vi.nu, "R", definite=True)
    robot = getattr(vi, "robot", None)
    if isinstance(robot, RobotModel) and robot.nonholonomic:
        # Not left to the Riccati iteration: its verdict on these marginal, uncontrollable modes hinged on round-off
        # (the diff-drive's hold DLQR converged or not with the LU's operation order).
        raise np.linalg.LinAlgError(
            f"hold_gain: {robot.name} is nonholonomic: at rest its linearization has directions no input moves (a "
            "wheel's sideways motion), so no linear feedback holds a pose (Brockett 1983) and the discrete Riccati "
            "equation has no stabilizing solution"
        )
    x_eq = equilibrium_state(vi, q)
    if u_eq is None:
        u_eq, _ = holding_input(vi, q)
    try:
        lin = linearize(vi, x_eq, u_eq)
    except SingularityError as e:
        raise SingularPoseError(_singular_pose_message(vi, np.asarray(q, float), e), e) from e
    K, _ = riccati(lin.A, lin.B, Q, R)
    return K, x_eq, u_eq


def _singular_pose_message(vi: Linearizable, q: np.ndarray, e: SingularityError) -> str:
    robot = getattr(vi, "robot", None)
    if not isinstance(robot, RobotModel):  # (a rigid body on a Lie group: no joints to name)
        return (
            f"hold_gain: no hold gain at q = {np.array2string(q)}: the one-step map is singular there ({e.what}, "
            f"reciprocal condition {e.rcond:.2e}): hold a pose away from it"
        )
    pose = ", ".join(f"{n} = {v:.6g}" for n, v in zip(robot.joint_names, q))
    why = singular_direction(robot, q)
    return (
        f"hold_gain: no hold gain at the pose ({pose}): the one-step map is singular there ({e.what}, reciprocal "
        f"condition {e.rcond:.2e}; Johnson2015, §VII), so it has no linearization to compute a gain from"
        + (f". {why}" if why else ": hold a pose away from it")
    )
