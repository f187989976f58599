"""Whether a plan is one the controller will execute: its positions, velocities and inputs within the limits.

The optimizers know the effort limits (DDP's box QP clips the inputs) but not the joints' velocity limits, and the
controller node refuses a plan whose own states it would refuse as a measurement (control.runner.PlanRunner.admit:
|q̇| beyond ``velocity_limit_factor`` × the URDF ``<limit velocity>``, q̇ = M(q)⁻¹p as for a measured state,
control.intake.JointLimits) — the robot then does not move, and without a check here nobody is told. So every plan of a
request is verified here before it is returned (planning.requests), and a plan beyond a limit is refused with a
``PlanLimitsError`` that says which joint, when, by how much and what to do.
"""

from __future__ import annotations

import numpy as np

from ..control.plan import Plan
from ..integrators.base import DiscreteSystem, state_velocities
from .errors import PlanLimitsError

# The controller node's default velocity_limit_factor (ros.controller_parameters): it refuses joint states, and plans
# whose states are, faster than this × the URDF velocity limit.
VELOCITY_LIMIT_FACTOR = 1.5
# |u| may exceed an effort limit by this relative amount (the box QP's projection leaves round-off).
EFFORT_TOLERANCE = 1e-9


def plan_limit_violation(
    vi: DiscreteSystem,
    X: np.ndarray,
    U: np.ndarray | None = None,
    velocity_limit_factor: float = VELOCITY_LIMIT_FACTOR,
    advice: str = "",
    effort_limits: np.ndarray | None = None,
) -> PlanLimitsError | None:
    """The worst excess of the trajectory (X, U) of ``vi`` (states k·Δt apart) over the limits, as a PlanLimitsError,
    or None when within them: velocities q̇_k = M(q_k)⁻¹p_k against ``velocity_limit_factor`` × each joint's URDF
    velocity limit (joints without a finite positive limit are not checked, as the controller bounds them by its
    ``max_velocity`` only), inputs of the actuated joints against ``effort_limits`` (one per actuated joint; default
    the model's; inf or 0: none — a task planned with ``input_limits: none`` passes its own, infinite). The error
    compares |value| / limit across both and names the largest. ``advice``: what to do, appended to the message
    (default: slow the motion down by the ratio). Lie-group and vehicle states (no joint limits): None."""
    robot = getattr(vi, "robot", None)
    joints = getattr(robot, "joints", None)
    X = np.asarray(X, float)
    if not joints or len(joints) != vi.nq or X.ndim != 2 or X.shape[1] != 2 * vi.nq:
        return None
    pos = _position_excess(vi, joints, X)
    if pos is not None:
        return pos
    vlim = np.array([j.velocity_limit for j in joints], float)
    vmax = np.where(np.isfinite(vlim) & (vlim > 0), velocity_limit_factor * vlim, np.inf)
    V = state_velocities(vi, X)
    ratios = [(np.abs(V) / vmax, V, vmax, [j.name for j in joints], "velocity", "rad/s")]
    if U is not None and vi.n_torques:
        elim = np.asarray(robot.effort_limits if effort_limits is None else effort_limits, float)[: vi.n_torques]
        elim = np.where(elim > 0, elim * (1 + EFFORT_TOLERANCE), np.inf)
        Ut = np.asarray(U, float)[:, : vi.n_torques]
        ratios.append((np.abs(Ut) / elim, Ut, elim, list(robot.actuated), "effort", "N·m"))
    worst = max(ratios, key=lambda r: r[0].max(initial=0.0))
    R, values, limits, names, quantity, unit = worst
    if not R.size or R.max() <= 1.0:
        return None
    k, i = np.unravel_index(int(np.argmax(R)), R.shape)
    t, ratio = k * vi.dt, float(R[k, i])
    over = [names[j] for j in np.flatnonzero((R > 1.0).any(axis=0))]
    what = (
        f"velocity_limit_factor {velocity_limit_factor:g} × its URDF velocity limit "
        f"{limits[i] / velocity_limit_factor:.4g} {unit}"
        if quantity == "velocity"
        else "its effort limit"
    )
    duration = (len(X) - 1) * vi.dt
    advice = advice or (
        f"slow the motion down: about {ratio:.3g}× its duration ({duration:.4g} s)"
        if quantity == "velocity"
        else "slow the motion down (lower accelerations) or choose configurations the actuators can hold"
    )
    return PlanLimitsError(
        f"the plan exceeds the {quantity} limits the controller enforces ({', '.join(over)}): {names[i]} at "
        f"|{'q̇' if quantity == 'velocity' else 'u'}| = {abs(values[k, i]):.4g} {unit} at t = {t:.4g} s (k = {k}), "
        f"{100 * (ratio - 1):.3g} % beyond {limits[i]:.4g} {unit} ({what}); {advice}",
        names[i],
        t,
        float(values[k, i]),
        float(limits[i]),
        quantity,
    )


def _position_excess(vi: DiscreteSystem, joints, X: np.ndarray) -> PlanLimitsError | None:
    """The knot farthest beyond a URDF position limit (past the end stop: the VI enforces no limits, and a goal on
    an end stop overshoots it — 2.07 m on the cart-pole's ±2 m slider), as a PlanLimitsError; None within them
    (a relative 1e-9 for values read back from text, as ``model.limits.position_limit_violation``)."""
    nq = vi.nq
    lo = np.array([j.lower for j in joints], float)
    hi = np.array([j.upper for j in joints], float)
    slack_lo, slack_hi = 1e-9 * np.maximum(1.0, np.abs(lo)), 1e-9 * np.maximum(1.0, np.abs(hi))
    Q = X[:, :nq]
    with np.errstate(invalid="ignore"):  # (continuous joints: ±inf bounds)
        excess = np.maximum(
            np.where(np.isfinite(lo), lo - slack_lo - Q, -np.inf), np.where(np.isfinite(hi), Q - hi - slack_hi, -np.inf)
        )
    if not excess.size or excess.max() <= 0:
        return None
    k, i = np.unravel_index(int(np.argmax(excess)), excess.shape)
    bound = lo[i] if Q[k, i] < lo[i] else hi[i]
    over = [joints[j].name for j in np.flatnonzero((excess > 0).any(axis=0))]
    return PlanLimitsError(
        f"the plan passes the position limits of the URDF ({', '.join(over)}): {joints[i].name} at q = "
        f"{Q[k, i]:.6g} at t = {k * vi.dt:.4g} s (k = {k}), {abs(Q[k, i] - bound):.3g} beyond its limit {bound:g} "
        "(the integrator enforces no end stops: a goal on a limit is overshot); move the goal off the limit or "
        "weight the approach more (Q, Qf) or lengthen it",
        joints[i].name,
        k * vi.dt,
        float(Q[k, i]),
        float(bound),
        "position",
    )


def check_plan_limits(
    vi: DiscreteSystem,
    plan: Plan,
    velocity_limit_factor: float = VELOCITY_LIMIT_FACTOR,
    advice: str = "",
    effort_limits: np.ndarray | None = None,
) -> None:
    """Raise the ``plan_limit_violation`` of ``plan`` (its states and inputs), if any: the check a planner runs
    before it publishes, so that what the controller would refuse is refused here with the reason."""
    err = plan_limit_violation(vi, plan.X, plan.U, velocity_limit_factor, advice, effort_limits)
    if err is not None:
        raise err
