"""Planner node: a task YAML, a goal or a joint trajectory in, a Plan out (trajectory + gains).

Plans at start-up and on ``~/replan`` (the task), on ``~/goal`` (sensor_msgs/JointState: the task toward these
positions) and on ``~/joint_trajectory`` (trajectory_msgs/JointTrajectory, the joint_trajectory_controller topic
interface: the points become the reference, planning.pipeline.trajectory_reference). Publishes, both latched:
``~/plan`` (UInt8MultiArray, the exact plan: layout in vi_control.ros.messages) and ``~/trajectory``
(JointTrajectory, for other tools). Only converged plans are published unless ``publish_unconverged``. A re-plan of
the task starts from the plan being executed, receded to the new start (``warm_start``; planning.pipeline).

A plan starts at a stated time on the node's clock (``use_sim_time``: the simulator's /clock): the measured state
at t_m is carried forward to t_start = t_m + the expected solve time (measured in the clock's units: a lockstep
simulation stands still while it waits, a real-time clock runs), under the law of the plan being executed (the
planner's previous plan) or, without one, where it was measured; the controller holds its current plan until
t_start, so no step of the new plan is skipped. The solve runs in a worker thread so joint states keep arriving.

Vehicle mode (parameter ``vehicle``, ``ros.vehicle``): the state comes from ``odom`` (nav_msgs/Odometry), a goal
pose from ``~/goal`` (geometry_msgs/PoseStamped in ``odom_frame``; or the ``goal`` parameter at start-up) starts a
DMOC plan to rest there (``planning.vehicle.plan_maneuver``: seed 002 Algorithm 5.2, TV-LQR on the Lie algebra),
published on the same ``~/plan`` and drawn on ``~/path`` (nav_msgs/Path). A goal that cannot be reached (actuator
limits, an unactuated direction, a malformed pose) is logged and nothing is published: the controller keeps its plan.

The requests and how each becomes a plan: vi_control.ros.planner_requests; the parameters: planner_parameters.
"""

from __future__ import annotations

import dataclasses
import math
import threading
import time

import numpy as np
from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import Odometry, Path
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import String, UInt8MultiArray
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory

from ..control.intake import stamped_on_receipt
from ..control.joint_merge import JointStateMerger, Missing
from ..control.plan import Plan
from ..control.tracking import StateEstimator, tracking_law
from ..integrators import make_integrator, require_linearizable
from .common import (
    LATCHED_QOS,
    SENSOR_STREAM_QOS,
    STREAM_QOS,
    ThrottledLog,
    declare_parameters,
    resolve_config,
    robot_from_parameters,
    run_node,
    watch_parameters,
)
from .controller_parameters import PARAMETERS as CONTROLLER_PARAMETERS
from .messages import (
    ForeignJointState,
    JointStateReader,
    joint_state_arrays,
    plan_to_message,
    plan_to_trajectory,
    stamp_seconds,
)
from .planner_parameters import PARAMETERS
from .planner_requests import Request, solve_request, trajectory_request
from .vehicle import goal_from_pose_stamped, path_from_plan, pose_parameter, state_from_odometry, vehicle_system

# A zero-stamped state right after one of t = 0, the clock within this of 0, is a simulation's first state again
# (``stamped_on_receipt``): the controller's default state_timeout, beyond which the controller would call it stale.
FIRST_STATE_WINDOW = float(CONTROLLER_PARAMETERS["state_timeout"].default)


class PlannerNode(Node):
    def __init__(self) -> None:
        super().__init__("vi_planner")
        from ..planning import load_task  # the planner library; imported here so tests can skip cleanly

        p = self.p = declare_parameters(self, PARAMETERS)
        self.warn = ThrottledLog(self.get_logger(), p["log_throttle_period"])
        watch_parameters(self, PARAMETERS, p, self._apply_parameter)
        self.vehicle = bool(p["vehicle"])
        self.task = None if self.vehicle else load_task(resolve_config(p["task"]))
        self.robot = self.settings = None  # (settings: vehicle mode's maneuver settings)
        self.measured: tuple[float, np.ndarray] | None = None
        self.clock_samples: list[tuple[float, float]] = []  # (steady, node clock) at joint states, last 2 s
        self.last_plan: Plan | None = None  # the latest published plan with a stated start (for the prediction)
        self._warm_task = None  # the task last_plan planned (None after a goal or trajectory request)
        self.solve_times: list[float] = []  # wall time of the last few solves
        self._lock, self._worker = threading.Lock(), None
        self._latest: UInt8MultiArray | None = None
        self.pub_plan = self.create_publisher(UInt8MultiArray, "~/plan", LATCHED_QOS)
        self.create_service(Trigger, "~/replan", self.on_replan)
        if float(p["republish_period"]) > 0:
            self.create_timer(float(p["republish_period"]), self._republish)
        if self.vehicle:
            self._setup_vehicle()
            return
        self.pub_traj = self.create_publisher(JointTrajectory, "~/trajectory", LATCHED_QOS)
        self.create_subscription(JointState, "joint_states", self.on_joint_state, SENSOR_STREAM_QOS)
        self.create_subscription(JointState, "~/goal", self.on_goal, STREAM_QOS)
        self.create_subscription(JointTrajectory, "~/joint_trajectory", self.on_joint_trajectory, STREAM_QOS)
        if p["robot_description_topic"]:
            self.create_subscription(String, p["robot_description_topic"], self._on_description, LATCHED_QOS)
        else:
            own = p["model"] or p["urdf_path"] or p["robot_description"]
            self._setup(robot_from_parameters(p)[0] if own else self.task.load_robot())

    def _setup(self, robot) -> None:
        self.robot = robot
        self.vi = make_integrator(self.p["integrator"], robot, float(self.task.dt))
        require_linearizable(self.vi, "the planner node")
        self.estimator = StateEstimator(self.vi, self.p["state_estimate"])
        self.reader = JointStateReader(robot.joint_names, partial=True)  # one driver's joints: merged
        self.merger = JointStateMerger(robot.joint_names, self.p["joint_state_merge_age"], robot.continuous_mask)
        self.get_logger().info(f"task {self.p['task']} on {robot.name}: dt={self.vi.dt}, nx={self.vi.nx}")
        if self.p["plan_on_startup"]:
            self._start(Request("task"), wait=float(self.p["startup_wait"]))

    # ---- vehicle mode ----------------------------------------------------------------------------
    def _setup_vehicle(self) -> None:
        from ..model.rigid_body import load_rigid_body
        from ..planning.vehicle import maneuver_settings

        p = self.p
        st = maneuver_settings(load_rigid_body(p["vehicle"]))
        over = {k: v for k, v in (("horizon", int(p["horizon"])), ("duration", float(p["duration"]))) if v}
        self.settings = dataclasses.replace(st, **over, retraction=p["retraction"])
        self.robot, self.vi = vehicle_system(p, self.settings.dt)
        self.goal = pose_parameter(self.vi, p["goal"], "goal") if p["goal"] else None
        self.pub_path = self.create_publisher(Path, "~/path", LATCHED_QOS)
        self.create_subscription(Odometry, "odom", self.on_odometry, SENSOR_STREAM_QOS)
        self.create_subscription(PoseStamped, "~/goal", self.on_pose_goal, STREAM_QOS)
        self.get_logger().info(f"vehicle {p['vehicle']} on {self.robot.name}: dt={self.vi.dt}, nx={self.vi.nx}, "
                               f"N={self.settings.horizon}")
        if p["plan_on_startup"] and self.goal is not None:
            self._start(Request("pose", goal=self.goal), wait=float(p["startup_wait"]))

    def on_odometry(self, msg: Odometry) -> None:
        try:
            t, x = state_from_odometry(self.vi, msg)
        except ValueError as e:
            self.warn("odometry ignored", f"odometry ignored: {e}")
            return
        self._measurement(t, x)

    def on_pose_goal(self, msg: PoseStamped) -> None:
        try:
            goal = goal_from_pose_stamped(self.vi, msg, str(self.p["odom_frame"]))
        except ValueError as e:
            self.get_logger().error(f"goal rejected: {e}")
            return
        self.goal = goal
        self.get_logger().info(f"goal pose {np.round(goal[:-1, -1], 4).tolist()}: planning")
        if not self._start(Request("pose", goal=goal), wait=0.0):
            self.warn("busy", "goal dropped: a plan is being computed", level="error")

    def _measurement(self, t: float, x: np.ndarray) -> None:
        """A state to plan from, stamped ``t``; the clock samples that measure how fast the clock runs."""
        self._sample_clock()
        if self.measured is None:
            self.get_logger().info(f"first state to plan from: t={t:.6f}")
        self.measured = (t, x)

    def _on_description(self, msg: String) -> None:
        if self.robot is None:
            try:
                self._setup(robot_from_parameters(self.p, description=msg.data)[0])
            except Exception as e:
                self.get_logger().error(f"robot description refused: {type(e).__name__}: {e}")

    def _apply_parameter(self, name: str, value) -> str | None:
        if name == "log_throttle_period":
            self.warn.period = float(value)
        if name == "joint_state_merge_age" and getattr(self, "merger", None) is not None:
            self.merger.max_age = float(value)
        return None  # the others are read from self.p when used

    # ---- inputs ----------------------------------------------------------------------------------
    def on_joint_state(self, msg: JointState) -> None:
        """A state to plan from: a partial message (one driver of several) through the merger, as the controller."""
        if self.robot is None:
            return
        try:
            has_v = self.reader.read(msg)
        except ForeignJointState:
            return  # another driver's joints (gripper, wheels) on joint_states: not ours
        except ValueError as e:
            self.warn("joint state ignored", f"joint state ignored: {e}")
            return
        t, now = stamp_seconds(msg), self._now()
        if stamped_on_receipt(t, self.merger.last, now, FIRST_STATE_WINDOW):
            t = now  # header.stamp 0: never set by the driver
        merged = self.merger.add(t, self.reader.carried, self.reader.q, self.reader.qdot if has_v else None)
        if merged is None:  # older than the last merged state
            return
        if isinstance(merged, Missing):
            self.warn("waiting", f"joint state ignored: {merged}")
            return
        t, q, qdot = merged
        try:
            x = self.estimator.update(t, q, qdot)
        except Exception as e:  # never let a state estimate kill the node; plan from the task's x_0 instead
            self.estimator.reset()
            self.warn("estimate", f"state estimate failed: {type(e).__name__}: {e}")
            return
        if x is not None:
            self._measurement(t, x)
        else:
            self._sample_clock()

    def on_goal(self, msg: JointState) -> None:
        """Goal positions: every model joint must be named (unlike a joint state from one driver of several)."""
        if self.robot is None:
            return
        try:
            goal = joint_state_arrays(msg, self.robot.joint_names)[0]
        except ValueError as e:
            self.warn("goal refused", f"goal refused: {e}", level="error")
            return
        self.get_logger().info(f"goal {np.round(goal, 4).tolist()}: re-planning")
        if not self._start(Request("goal", goal=goal), wait=self._first_state_wait()):
            self.warn("busy", "goal dropped: a plan is being computed", level="error")

    def on_joint_trajectory(self, msg: JointTrajectory) -> None:
        if self.robot is None:
            return
        try:
            request = trajectory_request(msg, self.robot)
        except ValueError as e:
            self.warn("trajectory", f"joint trajectory refused: {e}", level="error")
            return
        times = request.times
        self.get_logger().info(f"joint trajectory: {len(times)} points over {times[-1]:g} s: planning")
        if not self._start(request, wait=self._first_state_wait()):
            self.warn("busy", "joint trajectory dropped: a plan is being computed", level="error")

    def on_replan(self, _req, res):
        request = Request("task") if not self.vehicle else (Request("pose", goal=self.goal) if self.goal is not None
                                                             else None)
        res.success = self.robot is not None and request is not None and self._start(request, wait=0.0)
        res.message = "planning started" if res.success else "no model yet, or a plan is already being computed"
        return res

    def _republish(self) -> None:
        latest = self._latest
        if latest is not None:
            self.pub_plan.publish(latest)

    def _first_state_wait(self) -> float:
        """A goal or trajectory sent before any joint state (just after launch, a driver still starting) waits
        ``startup_wait`` for one, as the start-up plan does, rather than planning from the task's x_0 at once."""
        return float(self.p["startup_wait"]) if self.measured is None else 0.0

    def _start(self, request: Request, wait: float) -> bool:
        with self._lock:
            if self._worker is not None and self._worker.is_alive():
                return False
            self._worker = threading.Thread(target=self._plan, args=(wait, request), daemon=True)
            self._worker.start()
            return True

    # ---- timing: where the plan starts ---------------------------------------------------------------
    def _now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def _sample_clock(self) -> None:
        """A (steady, node clock) sample for ``clock_rate``; samples older than 2 s are dropped."""
        now = time.monotonic()
        self.clock_samples = [s for s in self.clock_samples if now - s[0] < 2.0] + [(now, self._now())]

    def clock_rate(self) -> float:
        """Node-clock seconds per wall second: 1 without sim time; 0 for a lockstep simulation that waits."""
        if not self.get_parameter("use_sim_time").value:
            return 1.0
        samples = list(self.clock_samples)
        if len(samples) < 2 or samples[-1][0] - samples[0][0] < 0.25:  # too short a window: measure now
            s0, r0 = time.monotonic(), self._now()
            time.sleep(0.5)
            samples = [(s0, r0), (time.monotonic(), self._now())]
        (s0, r0), (s1, r1) = samples[0], samples[-1]
        return max(0.0, (r1 - r0) / (s1 - s0))

    def predict(self, t: float, x: np.ndarray, steps: int) -> np.ndarray:
        """The state ``steps`` Δt after the measurement: under the previous plan's law while that plan runs (what
        the controller executes until the new plan starts); otherwise where it was measured (at rest or held)."""
        plan = self.last_plan
        if plan is None or steps == 0 or t >= plan.times[-1]:
            return x  # after its end the plan's law holds X_N: where the robot was measured, if it tracks
        law = tracking_law(plan, self.vi)
        try:
            for i in range(steps):
                x = self.vi.step(x, law.command(law.index(t + i * self.vi.dt), x)[0])
        except Exception as e:
            self.get_logger().warning(f"prediction failed ({type(e).__name__}: {e}): planning from the measured state")
            return x
        return x

    def _warm_start(self, request: Request, task, t_start: float) -> Plan | None:
        """The executed plan receded to ``t_start`` when this is a re-plan of the task that made it (``warm_start``
        on, same horizon, ``t_start`` inside it), else None (plan cold)."""
        plan = self.last_plan
        if not self.p["warm_start"] or plan is None or request.kind != "task" or self._warm_task is not task \
                or plan.horizon != task.horizon:
            return None
        steps = int(round((t_start - plan.times[0]) / plan.dt))
        if not 0 <= steps < plan.horizon:
            return None
        self.get_logger().info(f"warm start: the executed plan from its step {steps} on")
        return plan.receded(steps)

    # ---- planning ------------------------------------------------------------------------------------
    def _plan(self, wait: float, request: Request | None = None) -> None:
        """The worker's body: wait up to ``wait`` s for a measured state, plan ``request`` (default: the task),
        publish."""
        request = request or Request("task")
        log = self.get_logger()
        deadline = time.monotonic() + wait
        while self.p["use_measured_state"] and self.measured is None and time.monotonic() < deadline:
            time.sleep(0.02)
        measured = self.measured if self.p["use_measured_state"] else None
        vi, task, x0, t_start, steps = self.vi, self.task, None, 0.0, 0
        if measured is not None:
            t_m, x_m = measured
            rate = self.clock_rate()
            expected = max([float(self.p["expected_solve_time"])] + [1.5 * s for s in self.solve_times])
            lead = max(self._now() - t_m, 0.0) + rate * expected
            if request.kind == "trajectory" and request.start > t_m + lead:
                lead = request.start - t_m
            steps = int(math.ceil(lead / vi.dt - 1e-9))
            t_start = t_m + steps * vi.dt
            x0 = self.predict(t_m, x_m, steps)
            log.info(f"planning from the measured state at t={t_m:.6f}, carried {steps} steps to the start "
                     f"t={t_start:.6f} (clock rate {rate:.3g}, expected solve {expected:.2f} s)")
        else:
            log.info("planning from the task's x_0 (no measured state): the plan starts when the controller "
                     "receives it")
        t0 = time.monotonic()
        try:
            warm = self._warm_start(request, task, t_start)
            plan, result = solve_request(request, vi, task, x0, warm, self.settings, log.info)
        except Exception as e:  # a failed solve must not kill the node; the controller keeps its plan
            log.error(f"planning failed: {type(e).__name__}: {e}")
            return
        solve = time.monotonic() - t0
        self.solve_times = self.solve_times[-4:] + [solve]
        if not result.converged and not self.p["publish_unconverged"]:
            log.error(f"plan not published: the optimizer did not converge ({result}); the controller keeps "
                      "its current plan (set publish_unconverged to publish best-effort plans)")
            return
        try:
            plan = plan.shifted(t_start)
            seq = time.time_ns() // 1000  # unique across planner restarts
            msg = plan_to_message(plan, seq, start_on_receipt=measured is None)
            if self.vehicle:
                self.pub_path.publish(path_from_plan(vi, plan.X, plan.times[0], str(self.p["odom_frame"])))
            else:
                velocities = np.array([vi.velocity(x) for x in plan.X])
                inputs = [self.robot.joint_index(n) for n in self.robot.actuated]
                self.pub_traj.publish(plan_to_trajectory(plan, velocities, inputs, self.get_clock().now().to_msg()))
            self.pub_plan.publish(msg)
            self._latest = msg
            self.last_plan = plan if measured is not None else None
            self._warm_task = task if request.kind == "task" else None
        except Exception as e:  # in the worker thread: report through the ROS log, not a stderr traceback
            log.error(f"publishing the plan failed: {type(e).__name__}: {e}")
            return
        late = (self._now() - t_start) / vi.dt if measured is not None else 0.0
        log.info(f"published plan {seq}{'' if plan.converged else ' (UNCONVERGED, best effort)'}: "
                 f"N={plan.horizon}, solve {solve:.2f} s, {result}"
                 + (f"; WARNING: {late:.1f} steps after its start" if late > 0.5 else ""))


def main(args: list[str] | None = None) -> None:
    run_node(PlannerNode, args)


if __name__ == "__main__":
    main()
