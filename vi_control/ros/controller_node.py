"""Controller node: joint states + plan in, u = U_k + K_k (X_k − x) out as effort commands.

The discrete state comes from the last two measured configurations (discrete Legendre transform,
seed 000 eq. 1b) or from velocities. Stale, non-finite or incomplete joint states give the safe command
(zero or damping) and a log line. The law itself is vi_control.control.tracking.TrackingController.
"""

from __future__ import annotations

import time

import numpy as np
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from ..control.tracking import StateEstimator, TrackingController, safe_command, state_difference
from .common import (
    LATCHED_QOS,
    LATEST_QOS,
    MODEL_PARAMETERS,
    STREAM_QOS,
    command_joints,
    declare_parameters,
    make_integrator,
    robot_from_parameters,
    run_node,
)
from .messages import PlanModelMismatch, joint_state_arrays, plan_from_messages, stamp_seconds

PARAMETERS: dict[str, tuple] = {
    **MODEL_PARAMETERS,
    "dt": (0.01, "Δt of the state estimate until a plan arrives (then the plan's Δt is used) [s]"),
    "controller_name": ("effort_controller", "commands are published on <controller_name>/commands"),
    "joints": (None, "joint order of the command (default: the model's actuated joints)"),
    "planner_name": ("vi_planner", "plan topics <planner_name>/gains and <planner_name>/plan_states (relative: "
                                   "in the controller's namespace, where the planner node's ~/ topics are)"),
    "trigger": ("timer", "'timer': command at `rate`; 'joint_state': one command per new joint state (lockstep)"),
    "rate": (100.0, "timer trigger: command rate [Hz]"),
    "state_estimate": ("configurations", "'configurations': p from the last two q (discrete Legendre "
                                         "transform); 'velocities': p from q̇"),
    "state_timeout": (0.5, "joint states older than this are stale: safe command [s]"),
    "safe_mode": ("damping", "command on stale/invalid joint states: 'zero' or 'damping' (−d·q̇)"),
    "safe_damping": (1.0, "damping d of the safe command [N·m·s/rad]"),
}


class ControllerNode(Node):
    def __init__(self) -> None:
        super().__init__("vi_controller")
        p = self.p = declare_parameters(self, PARAMETERS)
        for key, allowed in (("trigger", ("timer", "joint_state")), ("safe_mode", ("zero", "damping"))):
            if p[key] not in allowed:
                raise ValueError(f"parameter {key} must be one of {allowed}, got {p[key]!r}")
        self.robot, _ = robot_from_parameters(p)
        self._build(float(p["dt"]))
        r = self.robot
        joints = command_joints(p, r)
        nt = len(r.actuated)
        # published entry i is input index cmd_index[i] (torques in `joints` order, prescribed positions after)
        self.cmd_index = np.array([r.actuated.index(n) for n in joints] + list(range(nt, self.vi.nu)), int)
        self.act_q_index = [r.joint_index(n) for n in r.actuated]
        self.controller: TrackingController | None = None
        self.plan_seq, self._anchor_pending = None, False
        self._arrays = {"gains": None, "plan_states": None}
        self.state = None  # (stamp, x, actuated q̇, receive time)
        self._held_prescribed: np.ndarray | None = None  # last measured prescribed positions (safe command)
        self.last_commanded_stamp, self.fault = None, None

        self.pub = self.create_publisher(Float64MultiArray, f"{p['controller_name']}/commands", STREAM_QOS)
        self.create_subscription(JointState, "joint_states", self.on_joint_state, LATEST_QOS)
        for name in self._arrays:
            self.create_subscription(Float64MultiArray, f"{p['planner_name']}/{name}",
                                     lambda m, n=name: self.on_plan_array(n, m), LATCHED_QOS)
        timeout = float(p["state_timeout"])
        if p["trigger"] == "timer":
            self.create_timer(1.0 / float(p["rate"]), self.tick)
        else:  # the watchdog: in lockstep nothing else notices that joint states stopped
            self.create_timer(max(timeout / 2, 0.01), self.watchdog)
        self.get_logger().info(f"{r.name}: joints={joints}, trigger={p['trigger']}, safe_mode={p['safe_mode']}")

    def _build(self, dt: float) -> None:
        self.vi = make_integrator(self.robot, dt, self.p["integrator"], linearizable=True)
        self.estimator = StateEstimator(self.vi, self.p["state_estimate"])

    # ---- plan ------------------------------------------------------------------------------
    def on_plan_array(self, name: str, msg: Float64MultiArray) -> None:
        """Keep the newest gains / plan_states array; accept a plan once both halves match."""
        seq = msg.data[0] if len(msg.data) else float("nan")
        old = self._arrays[name]
        if old is not None and len(old.data) and old.data[0] == seq:
            return  # the planner's periodic re-publish of a half we already hold
        self.get_logger().info(f"received {name} of plan {seq:.0f}")  # one line per plan half: diagnosable
        self._arrays[name] = msg
        if any(m is None for m in self._arrays.values()):
            return
        try:
            self._accept_plan()
        except Exception as e:  # a malformed plan must never kill the controller: keep the current one
            self.get_logger().error(f"plan rejected: {type(e).__name__}: {e}")

    def _accept_plan(self) -> None:
        r = self.robot
        try:
            seq, plan = plan_from_messages(self._arrays["gains"], self._arrays["plan_states"], r.name, r.hash,
                                           r.joint_names, list(r.actuated))
        except PlanModelMismatch as e:
            self.get_logger().error(f"plan rejected: {e}", throttle_duration_sec=5.0)
            return
        except ValueError as e:  # the other half of a new plan has not arrived yet, or a malformed plan
            self.get_logger().debug(f"plan arrays not paired yet: {e}")
            return
        if seq == self.plan_seq:
            return
        if plan.X.shape[1] != self.vi.nx or plan.U.shape[1] != self.vi.nu:
            self.get_logger().error(f"plan {seq} has nx={plan.X.shape[1]}, nu={plan.U.shape[1]}; model has "
                                    f"nx={self.vi.nx}, nu={self.vi.nu}: rejected")
            return
        if abs(plan.dt - self.vi.dt) > 1e-6 * plan.dt:  # below that it is round-off of time stamps
            self._build(plan.dt)
        self.controller = TrackingController(plan, r.continuous_mask, r.effort_limits, len(r.actuated))
        self.plan_seq = seq
        # A plan starting at t = 0 was made without a measurement: it starts at the next joint state.
        self._anchor_pending = plan.times[0] <= 0.0
        self.get_logger().info(f"accepted plan {seq}: N={plan.horizon}, dt={plan.dt:g}, "
                               f"{'starts at the next joint state' if self._anchor_pending else 'time-stamped'}")

    # ---- measurements ----------------------------------------------------------------------
    def on_joint_state(self, msg: JointState) -> None:
        t = stamp_seconds(msg)
        try:
            q, qdot = joint_state_arrays(msg, self.robot.joint_names)
        except ValueError as e:
            self.state = None
            self.estimator.reset()
            self.go_safe(f"invalid joint state: {e}")
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
            self.go_safe(f"state estimate failed: {type(e).__name__}: {e}")
            return
        self.state = (t, x, v, time.monotonic())
        if self.p["trigger"] == "joint_state":
            self.tick()

    def watchdog(self) -> None:
        """Lockstep has no timer tick: notice joint states that stopped arriving."""
        reason = self._stale_reason() if self.controller is not None else None
        if reason is not None:
            self.go_safe(reason)

    def _stale_reason(self) -> str | None:
        if self.state is None:
            return "no valid joint state yet"
        age = time.monotonic() - self.state[3]
        if age > float(self.p["state_timeout"]):
            return f"joint states stale: last one {age:.2f} s ago (state_timeout {self.p['state_timeout']} s)"
        return None

    # ---- commands --------------------------------------------------------------------------
    def tick(self) -> None:
        if self.controller is None:
            self.get_logger().info("waiting for a plan", throttle_duration_sec=5.0)
            return
        reason = self._stale_reason()
        if reason is not None:
            self.go_safe(reason)
            return
        t, x, _, _ = self.state
        if self._anchor_pending:
            plan = self.controller.plan
            plan.times = plan.times - plan.times[0] + t
            self._anchor_pending = False
            nq = self.vi.nq
            gap = float(np.abs(state_difference(plan.X[0, :nq], x[:nq], self.robot.continuous_mask)).max())
            if gap > 0.1:  # a plan from the task's x_0 while the robot is elsewhere: feedback will fight it
                self.get_logger().warning(f"plan {self.plan_seq} starts {gap:.3f} away from the measured q")
        u, clamped = self.controller.command(self.controller.index(t), x)
        if not np.all(np.isfinite(u)):
            self.go_safe("non-finite control input (check the plan's gains)")
            return
        if clamped:
            self.get_logger().warning("command clamped to the effort limits", throttle_duration_sec=2.0)
        if self.fault is not None:
            self.get_logger().info(f"joint states valid again after: {self.fault}; tracking resumed")
            self.fault = None
        self.last_commanded_stamp = t
        self.publish(u)

    def go_safe(self, reason: str) -> None:
        kind = reason.split(" last one")[0]  # log each kind of fault once per episode, not every tick
        if self.fault != kind:
            self.get_logger().warning(f"{reason} -> safe command ({self.p['safe_mode']})")
            self.fault = kind
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
