"""Controller node: joint states + plan in, u = U_k + K_k (X_k ⊖ x) out as effort commands.

The discrete state comes from the last two measured configurations (discrete Legendre transform,
seed 000 eq. 1b) or from velocities. Stale, non-finite or incomplete joint states give the safe command
(zero or damping) and a log line. The law itself is vi_control.control.tracking.TrackingController.

Vehicle mode (parameter ``vehicle``, ``ros.vehicle``): the state x = (g, 𝕀ξ) comes from ``odom``
(nav_msgs/Odometry: pose and body twist), the same TrackingController tracks with X_k ⊖ x = −τ⁻¹(X_k⁻¹x) on the
group (TV-LQR on the Lie algebra), and damping acts on each thruster's own velocity Bᵀξ. A tracking error outside
the retraction's domain (Cayley: half a turn off the plan) is a fault: safe command and a log line.
"""

from __future__ import annotations

import time

import numpy as np
from nav_msgs.msg import Odometry
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, UInt8MultiArray

from ..control.plan import Plan, state_error
from ..control.tracking import StateEstimator, TrackingController, safe_command
from ..integrators import make_integrator
from .common import (
    LATCHED_QOS,
    LATEST_QOS,
    MODEL_PARAMETERS,
    STREAM_QOS,
    command_joints,
    declare_parameters,
    robot_from_parameters,
    run_node,
)
from .messages import FLAG_START_ON_RECEIPT, PlanModelMismatch, joint_state_arrays, plan_from_message, stamp_seconds
from .vehicle import VEHICLE_PARAMETERS, actuator_velocities, state_from_odometry, vehicle_system

# Kinds of fault that send the safe command; each is logged once per episode (until tracking resumes).
FAULT_INVALID_STATE, FAULT_ESTIMATE, FAULT_STALE, FAULT_NO_STATE, FAULT_NONFINITE, FAULT_TRACKING = (
    "invalid joint state", "state estimate failed", "joint states stale", "no valid joint state yet",
    "non-finite control input", "tracking error undefined")

PARAMETERS: dict[str, tuple] = {
    **MODEL_PARAMETERS,
    "dt": (0.01, "Δt of the state estimate until a plan arrives (then the plan's Δt is used) [s]"),
    "controller_name": ("effort_controller", "commands are published on <controller_name>/commands"),
    "joints": (None, "joint order of the command (default: the model's actuated joints)"),
    "planner_name": ("vi_planner", "plans arrive on <planner_name>/plan (relative: in the controller's namespace, "
                                   "where the planner node's ~/ topics are)"),
    "accept_unconverged": (False, "track plans the planner marked as unconverged (best effort); default: refuse"),
    "trigger": ("timer", "'timer': command at `rate`; 'joint_state': one command per new joint state (lockstep)"),
    "rate": (100.0, "timer trigger: command rate [Hz]"),
    "state_estimate": ("configurations", "'configurations': p from the last two q (discrete Legendre "
                                         "transform); 'velocities': p from q̇"),
    "state_timeout": (0.5, "joint states older than this are stale: safe command [s]"),
    "safe_mode": ("damping", "command on stale/invalid joint states: 'zero' or 'damping' (−d·q̇)"),
    "safe_damping": (1.0, "damping d of the safe command [N·m·s/rad] (vehicle: on each thruster's velocity Bᵀξ)"),
    **VEHICLE_PARAMETERS,
}


class ControllerNode(Node):
    def __init__(self) -> None:
        super().__init__("vi_controller")
        p = self.p = declare_parameters(self, PARAMETERS)
        for key, allowed in (("trigger", ("timer", "joint_state")), ("safe_mode", ("zero", "damping"))):
            if p[key] not in allowed:
                raise ValueError(f"parameter {key} must be one of {allowed}, got {p[key]!r}")
        self.vehicle = bool(p["vehicle"])
        if not self.vehicle:
            self.robot, _ = robot_from_parameters(p)
        self._build(float(p["dt"]))
        r = self.robot
        joints = command_joints(p, r)
        nt = len(r.actuated)
        # published entry i is input index cmd_index[i] (torques in `joints` order, prescribed positions after)
        self.cmd_index = np.array([r.actuated.index(n) for n in joints] + list(range(nt, self.vi.nu)), int)
        self.act_q_index = None if self.vehicle else [r.joint_index(n) for n in r.actuated]
        self.controller: TrackingController | None = None
        self.plan_seq, self._anchor_pending = None, False
        self.state = None  # (stamp, x, actuated q̇, receive time)
        self._held_prescribed: np.ndarray | None = None  # last measured prescribed positions (safe command)
        self.last_commanded_stamp, self.fault = None, None

        self.pub = self.create_publisher(Float64MultiArray, f"{p['controller_name']}/commands", STREAM_QOS)
        if self.vehicle:
            self.create_subscription(Odometry, "odom", self.on_odometry, LATEST_QOS)
        else:
            self.create_subscription(JointState, "joint_states", self.on_joint_state, LATEST_QOS)
        self.create_subscription(UInt8MultiArray, f"{p['planner_name']}/plan", self.on_plan, LATCHED_QOS)
        timeout = float(p["state_timeout"])
        if p["trigger"] == "timer":
            self.create_timer(1.0 / float(p["rate"]), self.tick)
        else:  # the watchdog: in lockstep nothing else notices that joint states stopped
            self.create_timer(max(timeout / 2, 0.01), self.watchdog)
        self.get_logger().info(f"{r.name}: joints={joints}, trigger={p['trigger']}, safe_mode={p['safe_mode']}")

    def _build(self, dt: float) -> None:
        if self.vehicle:
            self.robot, self.vi = vehicle_system(self.p, dt)
            return
        self.vi = make_integrator(self.p["integrator"], self.robot, dt)
        self.estimator = StateEstimator(self.vi, self.p["state_estimate"])

    # ---- plan ------------------------------------------------------------------------------
    def on_plan(self, msg: UInt8MultiArray) -> None:
        """Accept a new plan (exact, one message); a malformed or foreign one is logged and the current kept."""
        try:
            self._accept_plan(msg)
        except Exception as e:  # a malformed plan must never kill the controller: keep the current one
            self.get_logger().error(f"plan rejected: {type(e).__name__}: {e}", throttle_duration_sec=5.0)

    def _accept_plan(self, msg: UInt8MultiArray) -> None:
        r = self.robot
        try:
            seq, plan, flags = plan_from_message(msg, r.name, r.hash, r.joint_names,
                                                 list(r.actuated) + list(r.prescribed))
        except PlanModelMismatch as e:
            self.get_logger().error(f"plan rejected: {e}", throttle_duration_sec=5.0)
            return
        if seq == self.plan_seq:
            return  # the planner's periodic re-publish of the plan we already run
        if not plan.converged and not self.p["accept_unconverged"]:
            self.get_logger().error(f"plan {seq} rejected: marked unconverged by the planner (set accept_unconverged "
                                    "to track best-effort plans)", throttle_duration_sec=5.0)
            return
        if plan.X.shape[1] != self.vi.nx or plan.U.shape[1] != self.vi.nu:
            self.get_logger().error(f"plan {seq} has nx={plan.X.shape[1]}, nu={plan.U.shape[1]}; model has "
                                    f"nx={self.vi.nx}, nu={self.vi.nu}: rejected")
            return
        if abs(plan.dt - self.vi.dt) > 1e-12 * plan.dt:
            self._build(plan.dt)
        self._set_plan(plan)
        self.plan_seq = seq
        self._anchor_pending = bool(flags & FLAG_START_ON_RECEIPT)
        self.get_logger().info(f"accepted plan {seq}: N={plan.horizon}, dt={plan.dt:g}, "
                               f"{'starts at the next joint state' if self._anchor_pending else 'time-stamped'}"
                               f"{'' if plan.converged else ', UNCONVERGED (best effort)'}")

    def _set_plan(self, plan: Plan) -> None:
        r = self.robot
        self.controller = TrackingController(plan, self.vi.state, r.effort_limits, len(r.actuated),
                                             continuous_mask=r.continuous_mask)

    # ---- measurements ----------------------------------------------------------------------
    def on_joint_state(self, msg: JointState) -> None:
        t = stamp_seconds(msg)
        try:
            q, qdot = joint_state_arrays(msg, self.robot.joint_names)
        except ValueError as e:
            self.state = None
            self.estimator.reset()
            self.go_safe(FAULT_INVALID_STATE, str(e))
            return
        if self.p["trigger"] == "joint_state" and t == self.last_commanded_stamp:
            return  # a republished state that was already answered (lockstep idle republish)
        try:
            x = self.estimator.update(t, q, qdot)
            if x is None:
                return
            v = qdot[self.act_q_index] if qdot is not None else self.vi.velocity(x)[self.act_q_index]
        except Exception as e:  # e.g. a singular M(q) in the Legendre transform: never crash the loop
            self.estimator.reset()
            self.go_safe(FAULT_ESTIMATE, f"{type(e).__name__}: {e}")
            return
        self.state = (t, x, v, time.monotonic())
        if self.p["trigger"] == "joint_state":
            self.tick()

    def on_odometry(self, msg: Odometry) -> None:
        """Vehicle mode: x = (g, 𝕀ξ) from pose and body twist; invalid messages give the safe command."""
        try:
            t, x = state_from_odometry(self.vi, msg)
        except ValueError as e:
            self.state = None
            self.go_safe(FAULT_INVALID_STATE, str(e))
            return
        if self.p["trigger"] == "joint_state" and t == self.last_commanded_stamp:
            return
        self.state = (t, x, actuator_velocities(self.robot, self.vi, x), time.monotonic())
        if self.p["trigger"] == "joint_state":
            self.tick()

    def watchdog(self) -> None:
        """Lockstep has no timer tick: notice joint states that stopped arriving."""
        fault = self._stale_fault() if self.controller is not None else None
        if fault is not None:
            self.go_safe(*fault)

    def _stale_fault(self) -> tuple[str, str] | None:
        """(kind, detail) if there is no fresh valid joint state."""
        if self.state is None:
            return FAULT_NO_STATE, "no joint state received or the last one was invalid"
        age = time.monotonic() - self.state[3]
        if age > float(self.p["state_timeout"]):
            return FAULT_STALE, f"last one {age:.2f} s ago (state_timeout {self.p['state_timeout']} s)"
        return None

    # ---- commands --------------------------------------------------------------------------
    def tick(self) -> None:
        if self.controller is None:
            self.get_logger().info("waiting for a plan", throttle_duration_sec=5.0)
            return
        fault = self._stale_fault()
        if fault is not None:
            self.go_safe(*fault)
            return
        t, x, _, _ = self.state
        if self._anchor_pending:
            plan = self.controller.plan.shifted(t)
            self._set_plan(plan)
            self._anchor_pending = False
            gap = self._gap(plan.X[0], x)
            if gap > 0.1:  # a plan from the task's x_0 while the robot is elsewhere: feedback will fight it
                self.get_logger().warning(f"plan {self.plan_seq} starts {gap:.3f} away from the measured q")
        try:
            u, clamped = self.controller.command(self.controller.index(t), x)
        except ValueError as e:  # e.g. the Cayley retraction's τ⁻¹ half a turn off the plan (seed 002 §5)
            self.go_safe(FAULT_TRACKING, f"{type(e).__name__}: {e}")
            return
        if not np.all(np.isfinite(u)):
            self.go_safe(FAULT_NONFINITE, "check the plan's gains")
            return
        if clamped:
            self.get_logger().warning("command clamped to the effort limits", throttle_duration_sec=2.0)
        if self.fault is not None:
            self.get_logger().info(f"joint states valid again after: {self.fault}; tracking resumed")
            self.fault = None
        self.last_commanded_stamp = t
        self.publish(u)

    def _gap(self, x_ref: np.ndarray, x: np.ndarray) -> float:
        """How far the measured configuration is from a plan's start (modulo 2π; on the group in vehicle mode)."""
        if self.vehicle:
            try:
                return float(np.abs(self.vi.state.diff(x_ref, x)[: self.vi.dim]).max())
            except ValueError:
                return float("inf")
        nq = self.vi.nq
        return float(np.abs(state_error(x_ref[:nq], x[:nq], self.robot.continuous_mask)).max())

    def go_safe(self, kind: str, detail: str = "") -> None:
        """Publish the safe command; log each fault once per episode, not every tick (a stale state once,
        whatever its age; an invalid one once per reason)."""
        key = kind if kind == FAULT_STALE else f"{kind}: {detail}"
        if self.fault != key:
            self.get_logger().warning(f"{kind}{': ' + detail if detail else ''} -> safe command "
                                      f"({self.p['safe_mode']})")
            self.fault = key
        v = self.state[2] if self.state is not None else None
        r = self.robot
        tau = safe_command(self.p["safe_mode"], v, np.full(len(r.actuated), float(self.p["safe_damping"])),
                           r.effort_limits)
        u = np.zeros(self.vi.nu)
        u[: len(tau)] = tau
        if self.vi.nk:
            if self.state is not None:
                self._held_prescribed = self.state[1][self.vi.idx_k]
            if self._held_prescribed is None:
                return  # no measured prescribed positions yet: commanding 0 would move them
            u[len(tau):] = self._held_prescribed  # prescribed joints stay where they were last measured
        self.publish(u)

    def publish(self, u: np.ndarray) -> None:
        self.pub.publish(Float64MultiArray(data=u[self.cmd_index].tolist()))


def main(args: list[str] | None = None) -> None:
    run_node(ControllerNode, args)


if __name__ == "__main__":
    main()
