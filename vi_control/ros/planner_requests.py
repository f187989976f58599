"""What the planner node is asked to plan, and how a request becomes a plan (vi_control.ros.planner_node).

A ``Request`` is the task (start-up, ``~/replan``), the task toward goal positions (``~/goal``), trajectory points as
the reference (``~/joint_trajectory``: planning.pipeline.trajectory_reference), or, in vehicle mode, a DMOC maneuver
to rest at a pose (planning.vehicle.plan_maneuver: seed 002 Algorithm 5.2). ``solve_request`` runs the planner
library on one; where the plan starts and what is published stay with the node.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
from trajectory_msgs.msg import JointTrajectory

from ..control.plan import Plan
from ..model.robot import RobotModel
from .messages import stamp_seconds

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


def trajectory_request(msg: JointTrajectory, robot: RobotModel) -> Request:
    """The 'trajectory' request of a trajectory_msgs/JointTrajectory (the joint_trajectory_controller topic
    interface: any subset of the model's joints, each point one position per joint); ValueError naming the joints
    and the number of points otherwise."""
    names = list(msg.joint_names)
    unknown = [n for n in names if n not in robot.joint_names]
    if unknown or not names or len(set(names)) != len(names) or not len(msg.points) \
            or any(len(pt.positions) != len(names) for pt in msg.points):
        raise ValueError(f"joints {names} (unknown: {unknown}) and {len(msg.points)} points, each needs one position "
                         "per joint")
    times = np.array([d.time_from_start.sec + 1e-9 * d.time_from_start.nanosec for d in msg.points])
    return Request("trajectory", times=times, positions=np.array([list(pt.positions) for pt in msg.points]),
                   joints=[robot.joint_index(n) for n in names], start=stamp_seconds(msg))


def solve_request(request: Request, vi: Linearizable, task: Task | None, x0: np.ndarray | None,
                  warm_start: Plan | None = None, settings: ManeuverSettings | None = None,
                  log: Callable[[str], None] | None = None) -> tuple[Plan, OptimizerResult | DMOCResult]:
    """(plan, optimizer result) of ``request`` from ``x0`` (None: the task's own x_0): ``plan_task`` for the task,
    a goal or a trajectory (``warm_start``: a plan to start from, plan_task's), ``plan_maneuver`` with the vehicle's
    ``settings`` (planning.vehicle.maneuver_settings) for a pose. The planner library's errors pass through."""
    from ..planning import plan_task  # the planner library, imported when first used (as the node does)
    from ..planning.pipeline import start_state, trajectory_reference

    if request.kind == "pose":
        from ..planning.vehicle import plan_maneuver

        return plan_maneuver(vi, request.goal, x0, settings, log=log)
    reference = None
    if request.kind == "goal":
        task = dataclasses.replace(task, goal_q=request.goal)
    elif request.kind == "trajectory":
        start = start_state(task, vi) if x0 is None else x0
        reference = trajectory_reference(vi, start, request.times, request.positions, request.joints)
    return plan_task(vi, task, x0=x0, log=log, reference=reference, warm_start=warm_start)
