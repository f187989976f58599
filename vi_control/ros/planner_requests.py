"""What the planner node is asked to plan, and how a request becomes a plan (vi_control.ros.planner_node).

A ``Request`` is the task (start-up, ``~/replan``), the task toward goal positions (``~/goal``:
planning.requests.plan_goal), trajectory points as the reference (``~/joint_trajectory``:
planning.requests.plan_trajectory), or, in vehicle mode, a DMOC maneuver to rest at a pose
(planning.vehicle.plan_maneuver: Jimenez2013, Algorithm 5.2). ``solve_request`` runs the planner library on one and
verifies a joint-space plan against the controller's limits (planning.limits); where the plan starts and what is
published stay with the node.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
from trajectory_msgs.msg import JointTrajectory

from ..control.plan import Plan
from ..model.robot import RobotModel
from .messages import stamp_seconds, time_seconds

if TYPE_CHECKING:
    from ..integrators.base import Linearizable
    from ..planning.dmoc import DMOCResult
    from ..planning.shooting import OptimizerResult
    from ..planning.task import Task
    from ..planning.vehicle import ManeuverSettings


@dataclasses.dataclass
class Request:
    """What to plan: the task ('task'), the task toward ``goal`` ('goal'), trajectory points ('trajectory'), or, in
    vehicle mode, a maneuver to rest at the pose ``goal`` ('pose')."""

    kind: str
    goal: np.ndarray | None = None
    times: np.ndarray | None = None  # trajectory: time_from_start of each point [s]
    positions: np.ndarray | None = None  # trajectory: (points, joints)
    joints: list[int] | None = None
    start: float = 0.0  # trajectory: requested start on the node's clock (header.stamp; 0: as soon as possible)
    duration: float | None = None  # goal: the motion's duration [s] (None: planning.requests.goal_duration's rule)


def trajectory_request(msg: JointTrajectory, robot: RobotModel) -> Request:
    """The 'trajectory' request of a trajectory_msgs/JointTrajectory (the joint_trajectory_controller topic
    interface: any subset of the model's joints, each point one position per joint); ValueError naming the joints
    and the number of points otherwise."""
    names = list(msg.joint_names)
    unknown = [n for n in names if n not in robot.joint_names]
    if (
        unknown
        or not names
        or len(set(names)) != len(names)
        or not len(msg.points)
        or any(len(pt.positions) != len(names) for pt in msg.points)
    ):
        raise ValueError(
            f"joints {names} (unknown: {unknown}) and {len(msg.points)} points, each needs one position per joint"
        )
    times = np.array([time_seconds(d.time_from_start) for d in msg.points])
    return Request(
        "trajectory",
        times=times,
        positions=np.array([list(pt.positions) for pt in msg.points]),
        joints=[robot.joint_index(n) for n in names],
        start=stamp_seconds(msg),
    )


def solve_request(
    request: Request,
    vi: Linearizable,
    task: Task | None,
    x0: np.ndarray | None,
    warm_start: Plan | None = None,
    settings: ManeuverSettings | None = None,
    log: Callable[[str], None] | None = None,
    *,
    velocity_limit_factor: float | None = 1.5,
) -> tuple[Plan, OptimizerResult | DMOCResult]:
    """(plan, optimizer result) of ``request`` from ``x0`` (None: the task's own x_0): ``plan_task`` for the task
    (``warm_start``: a plan to start from, plan_task's), ``plan_goal`` for a goal, ``plan_trajectory`` for trajectory
    points (planning.requests: the timed path, the initial guess under feedback), ``plan_maneuver`` with the vehicle's
    ``settings`` (planning.vehicle.maneuver_settings) for a pose. A joint-space plan is verified
    (planning.requests.verify_plan) against ``velocity_limit_factor`` × the URDF velocity limits (the controller's
    parameter of that name; None: not verified) and the task's effort limits: planning.errors.PlanLimitsError, whose
    message says which joint, when, by how much and what to do. The planner library's errors pass through."""
    from ..planning import plan_task  # the planner library, imported when first used (as the node does)
    from ..planning.requests import plan_goal, plan_trajectory, verify_plan

    if request.kind == "pose":
        from ..planning.vehicle import plan_maneuver

        return plan_maneuver(vi, request.goal, x0, settings, log=log)
    if request.kind == "goal":
        return plan_goal(vi, task, x0, request.goal, request.duration, velocity_limit_factor, log)
    if request.kind == "trajectory":
        return plan_trajectory(
            vi, task, x0, request.times, request.positions, request.joints, velocity_limit_factor, log
        )
    plan, result = plan_task(vi, task, x0=x0, log=log, warm_start=warm_start)
    if velocity_limit_factor is not None:
        verify_plan(vi, task, plan, velocity_limit_factor)
    return plan, result
