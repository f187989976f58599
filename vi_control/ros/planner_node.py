"""Planner node: a task YAML in, a Plan out (trajectory + gains), at start-up and on ``~/replan``.

Plans from the latest measured joint state when there is one (discrete state from the last two
configurations, seed 000 eq. 1b), else from the task's initial state. Publishes, both latched:
``~/plan`` (UInt8MultiArray, the exact plan: layout in vi_control.ros.messages) and ``~/trajectory``
(JointTrajectory, for other tools). Only converged plans are published unless ``publish_unconverged``
is set, which publishes them marked as unconverged. The solve runs in a worker thread so joint states
keep arriving.

Vehicle mode (parameter ``vehicle``, ``ros.vehicle``): the state comes from ``odom`` (nav_msgs/Odometry), a goal
pose from ``~/goal`` (geometry_msgs/PoseStamped, or the ``goal`` parameter at start-up) starts a DMOC plan to rest
there (``planning.vehicle.plan_maneuver``: Algorithm 5.2, TV-LQR on the Lie algebra), published on the same
``~/plan`` and drawn on ``~/path`` (nav_msgs/Path). A goal that cannot be reached (actuator limits, an unactuated
direction, a malformed pose) is logged and nothing is published: the controller keeps its plan.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace

import numpy as np
from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import Odometry, Path
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import UInt8MultiArray
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory

from ..control.tracking import StateEstimator
from ..integrators import make_integrator, require_linearizable
from .common import (
    LATCHED_QOS,
    MODEL_PARAMETERS,
    STREAM_QOS,
    declare_parameters,
    resolve_config,
    robot_from_parameters,
    run_node,
)
from .messages import joint_state_arrays, plan_to_message, plan_to_trajectory, stamp_seconds
from .vehicle import (
    ODOM_FRAME_PARAMETER,
    VEHICLE_PARAMETERS,
    goal_from_pose_stamped,
    path_from_plan,
    pose_parameter,
    state_from_odometry,
    vehicle_system,
)

PARAMETERS: dict[str, tuple] = {
    **MODEL_PARAMETERS,
    "model": ("", "as for the other nodes; empty (default): the task's own model"),
    "task": ("task_pendulum_swingup", "task YAML (path, or name in config/) for vi_control.planning.task"),
    "plan_on_startup": (True, "plan once at start-up"),
    "startup_wait": (1.0, "at start-up, wait this long for a joint state to plan from [s]"),
    "state_estimate": ("configurations", "'configurations' (last two q) or 'velocities' (q̇) for x_0"),
    "use_measured_state": (True, "plan from the latest joint state when there is one (else the task's x_0)"),
    "republish_period": (1.0, "re-publish the latest plan this often [s] (0: never): a controller that "
                              "missed the transient-local sample of a restarted planner still gets the plan"),
    "publish_unconverged": (False, "publish a plan whose optimizer stopped before its tolerance, marked as "
                                   "unconverged (controllers refuse it unless told otherwise); default: log and "
                                   "publish nothing"),
    **VEHICLE_PARAMETERS,
    **ODOM_FRAME_PARAMETER,
    "goal": (None, "vehicle mode: a goal pose [x, y, z, qx, qy, qz, qw] to plan toward at start-up (else wait for "
                   "~/goal)"),
    "horizon": (0, "vehicle mode: N steps of the maneuver (0: the vehicle YAML's planning.horizon)"),
    "duration": (0.0, "vehicle mode: T of the maneuver [s] (0: the vehicle YAML's planning.duration)"),
}


class PlannerNode(Node):
    def __init__(self) -> None:
        super().__init__("vi_planner")
        from ..planning import load_task  # the planner library; imported here so tests can skip cleanly

        p = self.p = declare_parameters(self, PARAMETERS)
        self.vehicle, self.goal = bool(p["vehicle"]), None
        self.measured: tuple[float, np.ndarray] | None = None
        self._lock, self._worker = threading.Lock(), None
        self.pub_plan = self.create_publisher(UInt8MultiArray, "~/plan", LATCHED_QOS)
        if self.vehicle:
            self._init_vehicle(p)
        else:
            self.task = load_task(resolve_config(p["task"]))
            own = p["model"] or p["urdf_path"] or p["robot_description"]
            self.robot = robot_from_parameters(p)[0] if own else self.task.load_robot()
            self.vi = make_integrator(p["integrator"], self.robot, float(self.task.dt))
            require_linearizable(self.vi, "the planner node")
            self.estimator = StateEstimator(self.vi, p["state_estimate"])
            self.pub_traj = self.create_publisher(JointTrajectory, "~/trajectory", LATCHED_QOS)
            self.create_subscription(JointState, "joint_states", self.on_joint_state, STREAM_QOS)
        self.create_service(Trigger, "~/replan", self.on_plan)
        self._latest: UInt8MultiArray | None = None
        if float(p["republish_period"]) > 0:
            self.create_timer(float(p["republish_period"]), self._republish)
        what = f"vehicle {p['vehicle']}" if self.vehicle else f"task {p['task']}"
        self.get_logger().info(f"{what} on {self.robot.name}: dt={self.vi.dt}, nx={self.vi.nx}")
        if p["plan_on_startup"] and (not self.vehicle or self.goal is not None):
            self._start(wait=float(p["startup_wait"]))

    # ---- vehicle mode --------------------------------------------------------------------------------
    def _init_vehicle(self, p: dict) -> None:
        from ..model.rigid_body import load_rigid_body
        from ..planning.vehicle import maneuver_settings

        st = maneuver_settings(load_rigid_body(p["vehicle"]))
        over = {k: v for k, v in (("horizon", int(p["horizon"])), ("duration", float(p["duration"]))) if v}
        self.settings = replace(st, **over, retraction=p["retraction"])
        self.robot, self.vi = vehicle_system(p, self.settings.dt)
        self.pub_path = self.create_publisher(Path, "~/path", LATCHED_QOS)
        self.create_subscription(Odometry, "odom", self.on_odometry, STREAM_QOS)
        self.create_subscription(PoseStamped, "~/goal", self.on_goal, STREAM_QOS)
        if p["goal"]:
            self.goal = pose_parameter(self.vi, p["goal"], "goal")

    def on_odometry(self, msg: Odometry) -> None:
        try:
            self.measured = state_from_odometry(self.vi, msg)
        except ValueError as e:
            self.get_logger().warning(f"ignoring odometry: {e}", throttle_duration_sec=5.0)

    def on_goal(self, msg: PoseStamped) -> None:
        try:
            goal = goal_from_pose_stamped(self.vi, msg, self.p["odom_frame"])
        except ValueError as e:
            self.get_logger().error(f"goal rejected: {e}")
            return
        self.goal = goal
        self.get_logger().info(f"goal received: position {np.round(goal[:3, -1], 4).tolist()}")
        if not self._start(wait=0.0):
            self.get_logger().warning("a plan is being computed; the new goal is planned when asked again")

    def on_joint_state(self, msg: JointState) -> None:
        try:
            q, qdot = joint_state_arrays(msg, self.robot.joint_names)
        except ValueError as e:
            self.get_logger().warning(f"ignoring joint state: {e}", throttle_duration_sec=5.0)
            return
        t = stamp_seconds(msg)
        try:
            x = self.estimator.update(t, q, qdot)
        except Exception as e:  # never let a state estimate kill the node; plan from the task's x_0 instead
            self.estimator.reset()
            self.get_logger().warning(f"state estimate failed: {type(e).__name__}: {e}", throttle_duration_sec=5.0)
            return
        if x is not None:
            self.measured = (t, x)

    def _republish(self) -> None:
        latest = self._latest
        if latest is not None:
            self.pub_plan.publish(latest)

    def on_plan(self, _req, res):
        res.success = self._start(wait=0.0)
        res.message = "planning started" if res.success else "a plan is already being computed"
        return res

    def _start(self, wait: float) -> bool:
        with self._lock:
            if self._worker is not None and self._worker.is_alive():
                return False
            self._worker = threading.Thread(target=self._plan, args=(wait,), daemon=True)
            self._worker.start()
            return True

    def _plan(self, wait: float) -> None:
        from ..planning import plan_task

        log = self.get_logger()
        deadline = time.monotonic() + wait
        while self.p["use_measured_state"] and self.measured is None and time.monotonic() < deadline:
            time.sleep(0.02)
        measured = self.measured if self.p["use_measured_state"] else None
        x0 = None if measured is None else measured[1]
        log.info("planning from " + ("the task's x_0" if x0 is None else f"the measured state at t={measured[0]:g}"))
        t0 = time.monotonic()
        try:
            if self.vehicle:
                from ..planning.vehicle import plan_maneuver

                plan, result = plan_maneuver(self.vi, self.goal, x0, self.settings, log=log.info)
            else:
                plan, result = plan_task(self.vi, self.task, x0=x0, log=log.info)
        except Exception as e:  # a failed solve must not kill the node; the controller keeps its plan
            log.error(f"planning failed: {type(e).__name__}: {e}")
            return
        if not result.converged and not self.p["publish_unconverged"]:
            log.error(f"plan not published: the optimizer did not converge ({result}); the controller keeps "
                      "its current plan (set publish_unconverged to publish best-effort plans)")
            return
        try:
            # Stamped with the measurement's time, the controller knows where in the plan it already is;
            # without a measurement the plan starts when the controller first answers a joint state.
            plan = plan.shifted(0.0 if measured is None else measured[0])
            seq = time.time_ns() // 1000  # unique across planner restarts
            msg = plan_to_message(plan, seq, start_on_receipt=measured is None)
            if self.vehicle:
                self.pub_path.publish(path_from_plan(self.vi, plan.X, plan.times[0], self.p["odom_frame"]))
            else:
                velocities = np.array([self.vi.velocity(x) for x in plan.X])
                inputs = [self.robot.joint_index(n) for n in self.robot.actuated]
                self.pub_traj.publish(plan_to_trajectory(plan, velocities, inputs, self.get_clock().now().to_msg()))
            self.pub_plan.publish(msg)
            self._latest = msg
        except Exception as e:  # in the worker thread: report through the ROS log, not a stderr traceback
            log.error(f"publishing the plan failed: {type(e).__name__}: {e}")
            return
        log.info(f"published plan {seq}{'' if plan.converged else ' (UNCONVERGED, best effort)'}: "
                 f"N={plan.horizon}, solve {time.monotonic() - t0:.2f} s, {result}")


def main(args: list[str] | None = None) -> None:
    run_node(PlannerNode, args)


if __name__ == "__main__":
    main()
