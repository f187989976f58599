"""MoveIt-style requests as plans: timed joint-space paths (a JointTrajectory's points) and goals, from a measured,
moving start, verified against the controller's limits before they are returned.

How a request becomes a plan (docs/concepts/planner.md, "Requests"):

- **Reference.** The points resampled on the task's grid t_k = k·Δt from the start's configuration, the last point
  then held for a settling time (``pipeline.trajectory_reference``: the sampled path's momenta, Johnson2015, eq. 1b):
  the request's timing sets the horizon, the task the weights and the optimizer.
- **Weights.** The task's TV-LQR weights as the running cost (``path_task``): a path is tracked, not a goal sought.
- **Initial guess.** The reference tracked under its own TV-LQR gains from the measured start (Johnson2015, eq. 36:
  ``ddp.reference_feedback_guess``). A rule about the start alone (the start's gravity torque, open loop) is exact
  only from rest: from a start moving at 2e-8 rad/s the open-loop arm drifts, falls
  under gravity over a few seconds and a step of Δt = 50 ms no longer converges ("the initial guess cannot be
  simulated"). Under feedback the guess stays on the path the request describes, so it simulates wherever the path
  is feasible, and the optimizer starts next to its optimum (3 DDP iterations on the panda). Where the points
  cannot be followed (faster than the actuators allow), the start held under the same law (``request_guess``).
- **Goals.** A goal without timing becomes a one-point path (the task's reference type ``goal``): the motion lasts
  ``goal_duration`` — the task's horizon, lengthened so that no joint's straight-line speed exceeds
  ``GOAL_SPEED_FRACTION`` of its URDF velocity limit — or the duration the request asks for. Holding the goal from
  the first step instead (the task's own goal reference) asks for the fastest way there: the reach back to the panda's
  start turned joint 4 at 6.16 rad/s against its 2.175 rad/s limit. A task whose reference is a ``step`` (a swing-up)
  keeps it: its goal is reached by the optimizer's own path.
- **Limits.** Every plan is verified (``verify_plan``): velocities within ``velocity_limit_factor`` × the URDF
  limits (what the controller enforces), inputs within the effort limits the task plans under; else
  ``PlanLimitsError`` says which joint, when, by how much, and how much longer the motion should last.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..control.hold import equilibrium_state, holding_input
from ..control.plan import Plan
from ..integrators.base import Linearizable
from .ddp import feedback_initial_guess
from .errors import PlanningError
from .limits import VELOCITY_LIMIT_FACTOR, check_plan_limits
from .pipeline import check_goal, input_limits, lqr_weights, plan_task, start_state, trajectory_reference
from .shooting import LogFn, OptimizerResult
from .task import COLLOCATION_METHODS, Task, parse_vector

# A goal's straight-line path runs each joint at most at this fraction of its URDF velocity limit (goal_duration).
# The plan's peak |q̇| = M⁻¹p is above the path's speed: the held state's own M⁻¹p = −(Δt/2)M⁻¹∇V adds to it (0.89
# rad/s, 0.41 of the panda joint 4's limit, at Δt = 50 ms) and the start and end of the path are rounded. Measured:
# the reach back to the panda's start at a quarter of the limits (1.05 s) peaks at 0.68 of the URDF limit, under
# half of what the controller accepts (1.5×); at 0.3 s (joint 4's path at 1.85 rad/s) at 1.36.
GOAL_SPEED_FRACTION = 0.25
# Seconds the last point of a request's path is held at the end of its plan (pipeline.trajectory_reference's settle).
SETTLE_TIME = 0.5


def goal_duration(vi: Linearizable, q_from: np.ndarray, q_to: np.ndarray, minimum: float = 0.0) -> float:
    """The duration [s] of the straight joint-space path from ``q_from`` to ``q_to``: at least ``minimum`` (the task's
    horizon), and long enough that every joint with a finite velocity limit v_j moves at most at
    GOAL_SPEED_FRACTION · v_j: max(minimum, max_j |Δq_j| / (GOAL_SPEED_FRACTION · v_j)), rounded up to whole steps."""
    vlim = np.array([j.velocity_limit for j in vi.robot.joints], float)
    if len(vlim) != vi.nq:  # a floating base: no joint limits for its coordinates
        vlim = np.full(vi.nq, np.inf)
    dq = np.abs(np.asarray(q_to, float) - np.asarray(q_from, float))
    bounded = np.isfinite(vlim) & (vlim > 0)
    need = np.max(dq[bounded] / (GOAL_SPEED_FRACTION * vlim[bounded]), initial=0.0)
    return float(np.ceil(max(minimum, need, vi.dt) / vi.dt - 1e-9) * vi.dt)


def verify_plan(
    vi: Linearizable, task: Task, plan: Plan, velocity_limit_factor: float = VELOCITY_LIMIT_FACTOR, advice: str = ""
) -> None:
    """PlanLimitsError if ``plan`` (of ``task`` on ``vi``) is one the controller would refuse or clamp: a state faster
    than ``velocity_limit_factor`` × a URDF velocity limit, an input beyond the effort limits the task plans under
    (``input_limits``: the model's by default; a task with ``input_limits: none`` chose none). The check every
    request's plan passes (``solve_request``); ``advice``: what to do, for the message (default: how much longer)."""
    limits = input_limits(task, vi)
    effort = np.full(vi.n_torques, np.inf) if limits is None else limits[: vi.n_torques]
    check_plan_limits(vi, plan, velocity_limit_factor, advice, effort)


def path_task(task: Task) -> Task:
    """The task as a request's path is planned with: its ``lqr`` weights Q and R as the running cost (each falling
    back to ``weights``, as the TV-LQR gains do), and its ``weights.Qf`` at the end.

    A task's ``weights`` are tuned for its own reference, which a goal reference makes infeasible on purpose (the
    goal held from the first step: soft tracking lets the optimizer find the way, panda q 1, p 0.1, R 0.01–1). A
    request's path is the motion wanted, and tracking it that softly let the optimizer trade the path for cheap
    detours: near the panda's shoulder singularity (joint 2 ≈ 0, joints 1 and 3 on one axis, M's smallest
    eigenvalue 0.005 kg·m²) it spun the light link between them at 3.9–6.5 rad/s in the first step of two slow random
    requests (2 of 50), where the TV-LQR weights (q 100, p 1, R 0.01) follow the path within 0.73 of the URDF
    limits."""
    running = {k: task.lqr.get(k, task.weights[k]) for k in ("Q", "R")}
    weights = {**running, "Qf": task.weights.get("Qf", task.weights["Q"])}
    return dataclasses.replace(task, weights=weights)


def request_guess(
    vi: Linearizable, task: Task, x0: np.ndarray, X_ref: np.ndarray, U_ref: np.ndarray, log: LogFn = None
) -> np.ndarray:
    """The initial inputs (N, nu) of a request's plan: the reference (X_ref, U_ref) tracked from ``x0`` under its
    TV-LQR gains with the task's ``lqr`` weights (Johnson2015, eq. 36; ``ddp.feedback_initial_guess``). Where a step of
    that rollout fails (points faster than the actuators can follow: the clipped inputs fall behind and a step no
    longer converges), the start's configuration held under the same law about its equilibrium instead — a guess
    the optimizer can start from, whose plan is then verified like any other. PlanningError naming the start when
    neither can be simulated (a start no law of the model holds, e.g. moving far beyond its velocity limits)."""
    nq = vi.nq
    W = lqr_weights(task, vi)
    limits = input_limits(task, vi)
    U0 = feedback_initial_guess(vi, x0, X_ref, U_ref, weights=W, input_limits=limits)
    if U0 is not None:
        return U0
    if log is not None:
        log(
            "the request's points cannot be followed from the start under TV-LQR (a step of that rollout fails): "
            "the initial guess holds the start's configuration instead"
        )
    q0 = np.asarray(x0, float)[:nq]
    X_hold = np.tile(equilibrium_state(vi, q0), (len(X_ref), 1))
    U_hold = np.tile(holding_input(vi, q0)[0], (len(U_ref), 1))
    U0 = feedback_initial_guess(vi, x0, X_hold, U_hold, weights=W, input_limits=limits)
    if U0 is None:
        raise PlanningError(
            "no initial guess can be simulated from this start: neither the request's points nor the "
            "start's configuration can be followed under TV-LQR from it (the start moves too fast "
            "for the model's inputs); plan again from a slower start",
            solver="initial guess",
        )
    return U0


def plan_trajectory(
    vi: Linearizable,
    task: Task,
    x0: np.ndarray | None,
    times: np.ndarray,
    positions: np.ndarray,
    joints: list[int] | None = None,
    velocity_limit_factor: float | None = VELOCITY_LIMIT_FACTOR,
    log: LogFn = None,
    advice: str = "",
) -> tuple[Plan, OptimizerResult]:
    """(plan, optimizer result) of trajectory points (``trajectory_reference``'s arguments: times relative to the
    start, positions of the configuration entries ``joints``) from the measured state ``x0`` (None: the task's
    start), with the task's weights and optimizer and ``request_guess`` as the initial guess (module doc). A first
    point at t = 0 (MoveIt sends the start state it planned from there) is dropped: the motion starts from x0, as
    a joint_trajectory_controller's starts from the current state.
    PlanLimitsError when the plan exceeds the limits (``velocity_limit_factor`` × the URDF velocity limits, the effort
    limits; None: not verified), with ``advice`` (default: how much longer); TaskError for points beyond the joint
    limits; the optimizer's errors pass through. (The path through the points is not checked by itself: the plan's
    peak velocity is not the path's, see GOAL_SPEED_FRACTION.)"""
    x0 = start_state(task, vi) if x0 is None else np.asarray(x0, float).ravel()
    times = np.asarray(times, float).ravel()
    if len(times) > 1 and times[0] == 0.0:  # MoveIt's first point: the start state it planned from
        cols = list(range(vi.nq)) if joints is None else list(joints)
        positions = np.asarray(positions, float).reshape(len(times), len(cols))
        if log is not None:
            off = np.abs(positions[0] - x0[cols]).max()
            log(
                f"trajectory: its point at t = 0 (the start it was planned from, {off:.3g} from the measured "
                "configuration) is dropped: the plan starts from the measured state"
            )
        times, positions = times[1:], positions[1:]
    X_ref, U_ref = trajectory_reference(vi, x0, times, positions, joints, settle=SETTLE_TIME)
    path = path_task(task)
    U0 = request_guess(vi, path, x0, X_ref, U_ref, log)
    plan, res = plan_task(vi, path, x0=x0, log=log, U0=U0, reference=(X_ref, U_ref))
    if velocity_limit_factor is not None:
        verify_plan(vi, task, plan, velocity_limit_factor, advice)
    return plan, res


def plan_goal(
    vi: Linearizable,
    task: Task,
    x0: np.ndarray | None,
    goal: np.ndarray,
    duration: float | None = None,
    velocity_limit_factor: float | None = VELOCITY_LIMIT_FACTOR,
    log: LogFn = None,
) -> tuple[Plan, OptimizerResult]:
    """(plan, optimizer result) of the task toward ``goal`` (nq) from ``x0`` (None: the task's start): a straight path
    of ``duration`` s (None: ``goal_duration`` from the task's horizon and the velocity limits), then held, planned as
    ``plan_trajectory``; a task whose reference is a step, or a collocation method, plans its own reference to the goal
    (plan_task). Verified as ``plan_trajectory``; a refusal says the duration the rule would choose."""
    goal = parse_vector(list(np.ravel(goal)), "goal.q", vi.nq)
    x0 = start_state(task, vi) if x0 is None else np.asarray(x0, float).ravel()
    if task.reference.get("type", "goal") != "goal" or task.method in COLLOCATION_METHODS:
        plan, res = plan_task(vi, dataclasses.replace(task, goal_q=goal), x0=x0, log=log)
        if velocity_limit_factor is not None:
            verify_plan(vi, task, plan, velocity_limit_factor)
        return plan, res
    check_goal(vi, goal)
    rule = goal_duration(vi, x0[: vi.nq], goal, task.horizon * task.dt)
    T = rule if duration is None else float(duration)
    if not (np.isfinite(T) and T > 0):
        raise ValueError(f"goal duration: expected a positive number of seconds, got {duration!r}")
    advice = (
        f"give the goal more time: at least {rule:.4g} s (the duration chosen from the velocity limits when none "
        f"is given; this one lasts {T:.4g} s)"
        if T < rule
        else ""
    )
    return plan_trajectory(vi, task, x0, np.array([T]), goal[None], None, velocity_limit_factor, log, advice)
