"""Planner node: a task YAML in, a Plan out (trajectory + gains), at start-up and on ``~/replan``.

Plans from the latest measured joint state when there is one (discrete state from the last two
configurations, seed 000 eq. 1b), else from the task's initial state. Publishes, both latched:
``~/plan`` (UInt8MultiArray, the exact plan: layout in vi_control.ros.messages) and ``~/trajectory``
(JointTrajectory, for other tools). Only converged plans are published unless ``publish_unconverged``
is set, which publishes them marked as unconverged. The solve runs in a worker thread so joint states
keep arriving.
"""

from __future__ import annotations

import threading
import time

import numpy as np
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
}


class PlannerNode(Node):
    def __init__(self) -> None:
        super().__init__("vi_planner")
        from ..planning import load_task  # the planner library; imported here so tests can skip cleanly

        p = self.p = declare_parameters(self, PARAMETERS)
        self.task = load_task(resolve_config(p["task"]))
        own = p["model"] or p["urdf_path"] or p["robot_description"]
        self.robot = robot_from_parameters(p)[0] if own else self.task.load_robot()
        self.vi = make_integrator(p["integrator"], self.robot, float(self.task.dt))
        require_linearizable(self.vi, "the planner node")
        self.estimator = StateEstimator(self.vi, p["state_estimate"])
        self.measured: tuple[float, np.ndarray] | None = None
        self._lock, self._worker = threading.Lock(), None
        self.pub_traj = self.create_publisher(JointTrajectory, "~/trajectory", LATCHED_QOS)
        self.pub_plan = self.create_publisher(UInt8MultiArray, "~/plan", LATCHED_QOS)
        self.create_subscription(JointState, "joint_states", self.on_joint_state, STREAM_QOS)
        self.create_service(Trigger, "~/replan", self.on_plan)
        self._latest: UInt8MultiArray | None = None
        if float(p["republish_period"]) > 0:
            self.create_timer(float(p["republish_period"]), self._republish)
        self.get_logger().info(f"task {p['task']} on {self.robot.name}: dt={self.vi.dt}, nx={self.vi.nx}")
        if p["plan_on_startup"]:
            self._start(wait=float(p["startup_wait"]))

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
