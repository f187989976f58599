"""Controller node: joint states + plan in, u = U_k + K_k (X_k ⊖ x) out as effort commands.

The discrete state comes from the last two measured configurations (discrete Legendre transform, seed 000
eq. 1b) or from velocities. A joint state is checked before it is used: its stamp against this node's clock
(stale, from the future, going backwards), its positions and velocities against the model's limits. A bad one
gives the safe command (zero or damping) and a warning throttled per kind — but nothing is commanded before the
first valid state (a lockstep simulator steps on every command). A plan starts at its stated time t₀: until then
the controller keeps its current plan (or commands nothing), then enters at k = 0. Path and goal tolerances abort
a plan to the safe command. Publishes ``~/controller_state`` (reference, feedback, error, output) and
``/diagnostics``. A lifecycle node (vi_control.ros.managed); the law is control.tracking.TrackingController.

Vehicle mode (parameter ``vehicle``, ``ros.vehicle``): the state x = (g, 𝕀ξ) comes from ``odom``
(nav_msgs/Odometry: pose and body twist, checked like a joint state's stamp), the same law tracks with
X_k ⊖ x = −τ⁻¹(X_k⁻¹x) on the group (TV-LQR on the Lie algebra), tolerances apply to τ⁻¹(X_k⁻¹x) (rotation [rad],
position [m]), and damping acts on each thruster's own velocity Bᵀξ. A tracking error outside the retraction's
domain (Cayley: half a turn off the plan) is a fault: safe command and a log line.
"""

from __future__ import annotations

import gc
import os
import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from nav_msgs.msg import Odometry
from rclpy.clock import Clock, ClockType
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, UInt8MultiArray
from trajectory_msgs.msg import JointTrajectory

from ..control.plan import Plan, state_error
from ..control.tracking import StateEstimator, TrackingController, safe_command
from ..integrators import make_integrator
from .common import (
    LATCHED_QOS,
    MODEL_PARAMETERS,
    SENSOR_QOS,
    STREAM_QOS,
    Param,
    command_joints,
    realtime_scheduling,
    run_node,
    tracking_law,
)
from .managed import AUTOSTART, ManagedNode
from .messages import (
    FLAG_START_ON_RECEIPT,
    ForeignJointState,
    PlanModelMismatch,
    RawFloat64MultiArray,
    RawJointStateReader,
    plan_from_message,
)
from .supervision import ERROR, OK, WARN, ControllerStateMessage, JointLimits, diagnostics
from .vehicle import POSE_ERROR_NAMES, VEHICLE_PARAMETERS, actuator_velocities, state_from_odometry, vehicle_system

# Kinds of fault that send the safe command; each kind is logged at once, then at most every log_throttle_period.
FAULT_INVALID_STATE, FAULT_ESTIMATE, FAULT_STALE, FAULT_FUTURE, FAULT_BACKWARDS, FAULT_LIMITS, FAULT_NONFINITE, \
    FAULT_PATH, FAULT_GOAL, FAULT_TRACKING = (
        "invalid joint state", "state estimate failed", "joint states stale", "joint state stamp in the future",
        "joint state stamps went backwards", "joint state beyond the limits", "non-finite control input",
        "path tolerance violated", "goal tolerance violated", "tracking error undefined")

_LIVE = dict(live=True)
PARAMETERS: dict[str, Param] = {
    **MODEL_PARAMETERS,
    "dt": Param(0.01, "Δt of the state estimate until a plan arrives (then the plan's Δt is used) [s]",
                range=(1e-5, 10.0)),
    "controller_name": Param("effort_controller", "commands are published on <controller_name>/commands"),
    "joints": Param(None, "joint order of the command (default: the model's actuated joints)", array="string"),
    "planner_name": Param("vi_planner", "plans arrive on <planner_name>/plan (relative: in the controller's "
                                        "namespace, where the planner node's ~/ topics are)"),
    "accept_unconverged": Param(False, "track plans the planner marked as unconverged (best effort)", **_LIVE),
    "trigger": Param("timer", "'timer': command at `rate`; 'joint_state': one command per new joint state "
                              "(lockstep, or a driver that publishes at the control rate)",
                     choices=("timer", "joint_state")),
    "rate": Param(100.0, "timer trigger: command rate on this node's clock [Hz]", range=(0.1, 10000.0), **_LIVE),
    "state_estimate": Param("configurations", "'configurations': p from the last two q (discrete Legendre "
                                              "transform); 'velocities': p from q̇",
                            choices=("configurations", "velocities")),
    "state_timeout": Param(0.5, "a joint state whose stamp is older than this on the node's clock is stale; "
                                "one this far in the future is refused [s]", range=(1e-4, 3600.0), **_LIVE),
    "safe_mode": Param("damping", "command on stale/invalid joint states: 'zero' or 'damping' (−d·q̇)",
                       choices=("zero", "damping"), **_LIVE),
    "safe_damping": Param(1.0, "damping d of the safe command [N·m·s/rad]", range=(0.0, 1e6), **_LIVE),
    "retime_tolerance": Param(0.01, "a plan that arrives after its start while the robot is still at its X_0 "
                                    "(|Δq|, |Δq̇| below this) starts when it arrives instead of skipping steps; 0: "
                                    "never", range=(0.0, 1e3), **_LIVE),
    "gain_scale": Param(1.0, "scale of the feedback gains K_k (1: the planner's TV-LQR)", range=(0.0, 10.0),
                        **_LIVE),
    "path_tolerance": Param(0.0, "abort the plan (safe command) when |q_ref − q| exceeds this on any joint "
                                 "during the plan [rad or m]; 0: not checked", range=(0.0, 1e6), **_LIVE),
    "goal_tolerance": Param(0.0, "abort when |q_N − q| is still above this goal_time_tolerance after the plan's "
                                 "end [rad or m]; 0: not checked", range=(0.0, 1e6), **_LIVE),
    "goal_time_tolerance": Param(1.0, "time allowed after the plan's end to reach goal_tolerance [s]",
                                 range=(0.0, 1e6), **_LIVE),
    "position_limit_margin": Param(0.25, "joint states beyond the URDF position limits by more than this are "
                                         "refused [rad or m]", range=(0.0, 1e6), **_LIVE),
    "max_continuous_position": Param(1e4, "|q| bound of continuous joints (no URDF limit) [rad]",
                                     range=(0.0, 1e300), **_LIVE),
    "velocity_limit_factor": Param(1.5, "joint states faster than this × the URDF velocity limit are refused",
                                   range=(1.0, 1e6), **_LIVE),
    "max_velocity": Param(1e3, "velocity bound of joints without a URDF velocity limit [rad/s or m/s]",
                          range=(0.0, 1e300), **_LIVE),
    "state_publish_rate": Param(50.0, "~/controller_state rate (wall clock) [Hz]; 0: off", range=(0.0, 1e4),
                                **_LIVE),
    "diagnostics_period": Param(1.0, "/diagnostics period (wall clock) [s]", range=(0.01, 3600.0)),
    "realtime_priority": Param(0, "while active, every thread of the node's process (DDS delivery and executor) "
                                  "runs SCHED_FIFO at this priority, as ros2_control's thread_priority (1…99); "
                                  "0: normal scheduling. Refused by the OS (no rtprio limit or CAP_SYS_NICE): a "
                                  "warning, normal scheduling", range=(0, 99)),
    **VEHICLE_PARAMETERS,
    **AUTOSTART,
}
_LIMIT_KEYS = ("position_limit_margin", "max_continuous_position", "velocity_limit_factor", "max_velocity")


class ControllerNode(ManagedNode):
    PARAMETERS = PARAMETERS

    def __init__(self) -> None:
        self.robot = None
        super().__init__("vi_controller")

    # ---- lifecycle ---------------------------------------------------------------------------
    def configure(self) -> None:
        p = self.p
        self.vehicle = bool(p["vehicle"])
        if not self.vehicle:
            self.robot, _ = self.load_robot()
        self._build(float(p["dt"]))
        r = self.robot
        joints = command_joints(p, r)
        # published entry i is input index cmd_index[i] (torques in `joints` order, prescribed positions after)
        self.cmd_index = np.array([r.actuated.index(n) for n in joints] + list(range(len(r.actuated), self.vi.nu)),
                                  int)
        if self.vehicle:  # state[2] holds each thruster's velocity Bᵀξ; limits are the vehicle's
            self.act_q_index, self.reader, self.limits, self.state_msg = np.arange(self.vi.nu), None, None, None
            self.error_names = POSE_ERROR_NAMES[: self.vi.dim]
        else:
            self.act_q_index = np.array([r.joint_index(n) for n in r.actuated], int)
            self.reader = RawJointStateReader(r.joint_names)
            self.limits = self._limits()
            self.state_msg = ControllerStateMessage(r, list(self.act_q_index))
            self.error_names = r.joint_names
        self.cmd = RawFloat64MultiArray(self.vi.nu)  # serialized once; each tick writes its values
        self.law: TrackingController | None = None
        self.active_seq = self.last_seq = None
        self.pending: tuple[int, Plan, int] | None = None
        self._reset_tracking()
        self._held_prescribed: np.ndarray | None = None
        self.counts = dict(states=0, commands=0, safe=0, foreign=0, unstamped=0)
        self._foreign_seen: set[str] = set()
        self.fault_counts: dict[str, int] = {}
        self._rate_mark = (time.monotonic(), 0, 0)
        self.rates = (0.0, 0.0)
        self.pub = self.create_publisher(Float64MultiArray, f"{p['controller_name']}/commands", STREAM_QOS)
        self.state_pub = self.create_publisher(JointTrajectory, "~/controller_state", STREAM_QOS)
        self.diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", STREAM_QOS)
        # raw: the serialized JointState, read in place (messages.RawJointStateReader) — the 1 kHz hot path
        state_sub = self.create_subscription(Odometry, "odom", self.on_odometry, SENSOR_QOS) if self.vehicle else \
            self.create_subscription(JointState, "joint_states", self.on_joint_state, SENSOR_QOS, raw=True)
        self.own_subs = [state_sub, self.create_subscription(UInt8MultiArray, f"{p['planner_name']}/plan",
                                                             self.on_plan, LATCHED_QOS)]
        self.wall = Clock(clock_type=ClockType.STEADY_TIME)
        self.own_timers = [self.create_timer(float(p["diagnostics_period"]), self.publish_diagnostics, clock=self.wall)]
        self.tick_timer = None
        self.get_logger().info(f"{r.name}: joints={joints}, trigger={p['trigger']}, safe_mode={p['safe_mode']}, "
                               f"use_sim_time={self.get_parameter('use_sim_time').value}")

    def activate(self) -> None:
        self._reset_tracking()
        self._start_tick_timer()
        self._set_scheduling(int(self.p["realtime_priority"]))

    def deactivate(self) -> None:
        """The safe command that needs no loop: zero torque (prescribed joints held); then silence."""
        self._stop_tick_timer()
        self._set_scheduling(0)
        u = self._safe_input("zero") if self.ever_valid else None
        if u is not None:
            self.publish(u)
        self.law, self.pending, self.active_seq = None, None, None

    def cleanup(self) -> None:
        self._stop_tick_timer()
        for t in self.own_timers:
            self.destroy_timer(t)
        for s in self.own_subs:
            self.destroy_subscription(s)
        for pub in (self.pub, self.state_pub, self.diag_pub):
            self.destroy_publisher(pub)
        self.robot = None

    def _set_scheduling(self, priority: int) -> None:
        """Real-time scheduling of the whole process while active (0: normal); a refusal is a warning, not a fault.
        Active, the heap built so far is frozen out of the collector's sight: a full collection of the model's,
        CasADi's and rclpy's objects takes ~12 ms on a 2-core machine (2 µs frozen) — twelve missed ticks at 1 kHz."""
        if priority:
            gc.collect()
            gc.freeze()
        elif gc.get_freeze_count():
            gc.unfreeze()
        why = realtime_scheduling(priority)
        if why:
            self.get_logger().warning(f"realtime_priority {priority}: {why}; running with normal scheduling")
        elif priority:
            self.get_logger().info(f"SCHED_FIFO priority {priority} for every thread of process {os.getpid()}")

    def _start_tick_timer(self) -> None:
        # joint_state trigger: the watchdog (nothing else notices that joint states stopped), on the node's clock
        period = 1.0 / float(self.p["rate"]) if self.p["trigger"] == "timer" else \
            max(float(self.p["state_timeout"]) / 2, 0.01)
        self.tick_timer = self.create_timer(period, (lambda: self.tick()) if self.p["trigger"] == "timer" else
                                            self.watchdog)  # (rclpy passes a TimerInfo to a callback with arguments)

    def _stop_tick_timer(self) -> None:
        if self.tick_timer is not None:
            self.destroy_timer(self.tick_timer)
            self.tick_timer = None

    def apply_parameter(self, name: str, value) -> str | None:
        self.p[name] = value
        if self.robot is None:
            return None
        if name in _LIMIT_KEYS and not self.vehicle:
            self.limits = self._limits()
        elif name == "gain_scale" and self.law is not None:
            self._set_plan(self.active_plan)
        elif name in ("rate", "state_timeout") and self.tick_timer is not None:
            self._stop_tick_timer()
            self._start_tick_timer()
        return None

    def _limits(self) -> JointLimits:
        p = self.p
        return JointLimits(self.robot, p["position_limit_margin"], p["max_continuous_position"],
                           p["velocity_limit_factor"], p["max_velocity"])

    def _build(self, dt: float) -> None:
        if self.vehicle:
            self.robot, self.vi = vehicle_system(self.p, dt)
        else:
            self.vi = make_integrator(self.p["integrator"], self.robot, dt)
        self.estimator = StateEstimator(self.vi, self.p["state_estimate"])

    def _reset_tracking(self) -> None:
        self.state = None  # (stamp, x, q̇ of all joints)
        self.last_stamp = self.last_commanded_stamp = None
        self.ever_valid, self.fault, self.aborted, self.goal_reached = False, None, None, False
        self.estimator.reset()

    def _now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    # ---- plan --------------------------------------------------------------------------------
    def on_plan(self, msg: UInt8MultiArray) -> None:
        """Accept a new plan (exact, one message); a malformed or foreign one is logged and the current kept."""
        try:
            self._accept_plan(msg)
        except Exception as e:  # a malformed plan must never kill the controller: keep the current one
            self.warn("plan rejected", f"plan rejected: {type(e).__name__}: {e}", level="error")

    def _accept_plan(self, msg: UInt8MultiArray) -> None:
        r = self.robot
        if r is None:
            return
        try:
            seq, plan, flags = plan_from_message(msg, r.name, r.hash, r.joint_names,
                                                 list(r.actuated) + list(r.prescribed))
        except PlanModelMismatch as e:
            self.warn("plan rejected", f"plan rejected: {e}", level="error")
            return
        if seq == self.last_seq:
            return  # the planner's periodic re-publish of the plan we already have
        if not plan.converged and not self.p["accept_unconverged"]:
            self.warn("plan rejected", f"plan {seq} rejected: marked unconverged by the planner (set "
                      "accept_unconverged to track best-effort plans)", level="error")
            return
        sizes = (plan.X.shape[1], plan.U.shape[1], plan.K.shape[2])
        if sizes != (self.vi.nx, self.vi.nu, self.vi.state.ndx):
            self.warn("plan rejected", f"plan {seq} has nx, nu, ndx = {sizes}; model has "
                      f"{(self.vi.nx, self.vi.nu, self.vi.state.ndx)}: rejected", level="error")
            return
        lo, hi = PARAMETERS["dt"].range  # (the plan's Δt becomes the state estimate's: the same bounds as `dt`)
        if not lo <= plan.dt <= hi:
            self.warn("plan rejected", f"plan {seq} has dt = {plan.dt:g} s, outside [{lo:g}, {hi:g}] s: rejected",
                      level="error")
            return
        if abs(plan.dt - self.vi.dt) > 1e-12 * plan.dt:
            self._build(plan.dt)
        self.last_seq = seq
        self.pending = (seq, plan, flags)
        start = "the next joint state" if flags & FLAG_START_ON_RECEIPT else f"t={plan.times[0]:.4f}"
        self.get_logger().info(f"accepted plan {seq}: N={plan.horizon}, dt={plan.dt:g}, starts at {start}"
                               f"{'' if plan.converged else ', UNCONVERGED (best effort)'}")

    def _set_plan(self, plan: Plan) -> None:
        self.law = tracking_law(plan, self.vi, self.p["gain_scale"])
        self.active_plan = plan  # unscaled: a later gain_scale applies to it

    def _maybe_enter(self, t: float, x: np.ndarray) -> None:
        """Make the pending plan the active one once its start time has come (or at once: start on receipt)."""
        seq, plan, flags = self.pending
        t0 = plan.times[0]
        if flags & FLAG_START_ON_RECEIPT:
            plan = plan.shifted(t)
        elif t < t0 - 0.5 * plan.dt:
            return  # not yet: the current plan (or nothing) until the stated start
        late = int(round((t - t0) / plan.dt))
        retimed, gap_x0 = False, ""
        gap = float(self._configuration_error(plan.X[0], x).max())  # (re-timing keeps X: the same gap after it)
        if late > 1 and self.p["retime_tolerance"] > 0:
            # Late, but the robot is still at X_0 (at rest or held: nothing happened meanwhile): start it now
            # rather than skip its first steps. Velocities both through one inverse Legendre map: X_0 and x are
            # discrete states (p_k = D₂L_d), whose M⁻¹p at rest under gravity is Δt/2·M⁻¹∇V, not the measured q̇ = 0.
            ev = np.abs(self.vi.velocity(plan.X[0]) - self.vi.velocity(x)).max()
            if max(gap, ev) <= self.p["retime_tolerance"]:
                plan, retimed = plan.shifted(t), True
            gap_x0 = f" (the robot is {gap:.3g} in q, {ev:.3g} in q̇ from its X_0: not re-timed)"
        self._set_plan(plan)
        self.pending, self.active_seq, self.aborted, self.goal_reached = None, seq, None, False
        k = self.law.index(t)
        self.get_logger().info(f"entered plan {seq} at k={k} (state t={t:.4f}, plan start t0={t0:.4f})"
                               + (f", re-timed: {late} steps late with the robot still at X_0" if retimed else ""))
        if k > 1:
            self.warn("late plan", f"plan {seq} entered {k} steps after its start: it arrived late (the planner's "
                      f"expected_solve_time is too short for this machine){gap_x0}")
        if k == 0 and gap > 0.1:  # a plan from the task's x_0 while the robot is elsewhere: feedback fights it
            self.warn("far start", f"plan {seq} starts {gap:.3f} away from the measured q")

    # ---- measurements --------------------------------------------------------------------------
    def on_joint_state(self, msg: bytes) -> None:
        """A serialized sensor_msgs/JointState."""
        if not self.active:
            return
        self.counts["states"] += 1
        try:
            t, has_v = self.reader.read_raw(msg)
        except ForeignJointState as e:  # another driver's joints (gripper, wheels) on the same topic: not ours
            self.counts["foreign"] += 1
            if str(e) not in self._foreign_seen:  # once per name list: visible if these were meant to be ours
                self._foreign_seen.add(str(e))
                self.get_logger().info(f"{e}: ignored (another driver's joints on joint_states; if these are the "
                                       f"robot's, its joint names differ from the model's {self.robot.joint_names})")
            return
        except ValueError as e:
            return self._refuse(FAULT_INVALID_STATE, str(e))
        now = self._now()
        if t == 0.0:  # header.stamp never set (some drivers): the time of receipt on this node's clock
            t = self._receipt_stamp(now)
        if not self._stamp_ok(t, now):
            return
        q = self.reader.q
        why = self.limits.check(q, self.reader.qdot if has_v else None)
        if why is not None:
            return self._refuse(FAULT_LIMITS, why)
        try:
            x = self.estimator.update(t, q, self.reader.qdot if has_v else None)
            if x is None:
                self.last_stamp = t
                return
            qdot = self.reader.qdot.copy() if has_v else self.vi.velocity(x)
        except Exception as e:  # e.g. a singular M(q) in the Legendre transform: never crash the loop
            return self._refuse(FAULT_ESTIMATE, f"{type(e).__name__}: {e}")
        if not has_v:
            why = self.limits.check(q, qdot)  # a jump between two configurations is a huge velocity
            if why is not None:
                return self._refuse(FAULT_LIMITS, why)
        self.state, self.last_stamp, self.ever_valid = (t, x, qdot), t, True
        if self.p["trigger"] == "joint_state":
            self.tick(now)

    def _receipt_stamp(self, now: float) -> float:
        """The stamp of an unstamped joint state: ``now``; said once (on a clock that stands at 0, as a lockstep
        simulation's first state, a zero stamp is a true one and nothing is said)."""
        self.counts["unstamped"] += 1
        if self.counts["unstamped"] == 1 and now > 0.0:
            self.get_logger().warning("joint states have header.stamp = 0 (the driver does not stamp them): "
                                      "stamped on receipt with this node's clock, transport delay and jitter "
                                      "included")
        return now

    def on_odometry(self, msg: Odometry) -> None:
        """Vehicle mode: x = (g, 𝕀ξ) from pose and body twist, stamp checked as a joint state's."""
        if not self.active:
            return
        self.counts["states"] += 1
        try:
            t, x = state_from_odometry(self.vi, msg)
        except ValueError as e:
            return self._refuse(FAULT_INVALID_STATE, str(e))
        now = self._now()
        if not self._stamp_ok(t, now):
            return
        self.state, self.last_stamp, self.ever_valid = (t, x, actuator_velocities(self.robot, self.vi, x)), t, True
        if self.p["trigger"] == "joint_state":
            self.tick(now)

    def _stamp_ok(self, t: float, now: float) -> bool:
        """False if the state stamped ``t`` is not to be used: stale, from the future or going backwards (the
        safe command sent), or a republished one (answered once, lockstep idle)."""
        tol = float(self.p["state_timeout"])
        if now - t > tol:
            self._refuse(FAULT_STALE, f"stamp {t:.4f} is {now - t:.3f} s old on this node's clock "
                                      f"(state_timeout {tol} s)")
            return False
        if t - now > tol:
            self._refuse(FAULT_FUTURE, f"stamp {t:.4f} is {t - now:.3f} s ahead of this node's clock")
            return False
        if self.last_stamp is not None and t <= self.last_stamp:
            if t == self.last_stamp:  # a republished state (lockstep idle): answer it once
                if self.p["trigger"] == "joint_state" and t != self.last_commanded_stamp and self.state is not None:
                    self.tick(now)
                return False
            if now >= self.last_stamp - tol:  # (a clock that itself jumped back re-arms the check)
                self._refuse(FAULT_BACKWARDS, f"stamp {t:.4f} after {self.last_stamp:.4f}")
                return False
            self._clock_went_back(t)
        return True

    def _clock_went_back(self, t: float) -> None:
        """Stamps and this node's clock went back together (a simulator reset with its time): an active plan that
        starts after ``t`` waits for its start again, as a newly received one (re-entered at k = 0 then) — not
        its U_0 held until then; zero torque once meanwhile, the command that needs no loop (as on deactivate)."""
        msg = f"the clock went back: state t={t:.4f} after t={self.last_stamp:.4f} (a simulator reset?)"
        plan = self.active_plan if self.law is not None else None
        if plan is None or t >= plan.times[0] - 0.5 * plan.dt:
            self.get_logger().warning(msg)
            return
        if self.pending is None:
            self.pending = (self.active_seq, plan, 0)
            self.get_logger().warning(f"{msg}: plan {self.active_seq} starts at t={plan.times[0]:.4f} again")
        else:  # a newer plan waits for its own start
            self.get_logger().warning(f"{msg}: plan {self.active_seq} dropped; plan {self.pending[0]} is next")
        self.law, self.active_seq = None, None
        u = self._safe_input("zero")
        if u is not None:
            self.publish(u)

    def _configuration_error(self, x_ref: np.ndarray, x: np.ndarray) -> np.ndarray:
        """|configuration of x_ref − that of x| per joint (modulo 2π), or per component of τ⁻¹(g_ref⁻¹g) on a
        vehicle (∞ where τ⁻¹ is undefined: half a turn off)."""
        if self.vehicle:
            try:
                return np.abs(self.vi.state.diff(x_ref, x)[: self.vi.dim])
            except ValueError:
                return np.full(self.vi.dim, np.inf)
        nq = self.vi.nq
        return np.abs(state_error(x_ref[:nq], x[:nq], self.robot.continuous_mask))

    def _refuse(self, kind: str, detail: str) -> None:
        """A joint state that cannot be used: forget the state, restart the estimate, command safely."""
        self.state = None
        self.estimator.reset()
        self.go_safe(kind, detail)

    def watchdog(self) -> None:
        """joint_state trigger: notice joint states that stopped arriving (their stamps age on this clock)."""
        if self.active and self.state is not None and self._now() - self.state[0] > float(self.p["state_timeout"]):
            self.go_safe(FAULT_STALE, f"no joint state for {self._now() - self.state[0]:.3f} s")

    # ---- commands ------------------------------------------------------------------------------
    def tick(self, now: float | None = None) -> None:
        """One command from the latest state (``now``: the node's clock, if the caller has read it)."""
        if not self.active:
            return
        if self.state is None:
            if self.ever_valid and self.fault is not None:
                self.go_safe(self.fault, "")
            return
        t, x, qdot = self.state
        age = (self._now() if now is None else now) - t
        if age > self.p["state_timeout"]:
            return self.go_safe(FAULT_STALE, f"no joint state for {age:.3f} s")
        if self.pending is not None:
            self._maybe_enter(t, x)
        law = self.law
        if law is None:
            return
        if self.aborted is not None:
            return self.go_safe(*self.aborted)
        k = law.index(t)
        if self._tolerances_violated(law, k, t, x):
            return self.go_safe(*self.aborted)
        try:
            u, clamped = law.command(k, x)
        except ValueError as e:  # e.g. the Cayley retraction's τ⁻¹ half a turn off the plan (seed 002 §5)
            return self.go_safe(FAULT_TRACKING, f"{type(e).__name__}: {e}")
        if not np.all(np.isfinite(u)):
            return self.go_safe(FAULT_NONFINITE, "check the plan's gains")
        if clamped:
            self.warn("clamped", "command clamped to the effort limits")
        if self.fault is not None:
            self.get_logger().info(f"joint states valid again after: {self.fault}; tracking resumed")
            self.fault = None
        self.last_commanded_stamp = t
        self.publish(u)
        self._publish_state(law, k, t, x, qdot, u)

    def _tolerances_violated(self, law: TrackingController, k: int, t: float, x: np.ndarray) -> bool:
        p, plan = self.p, law.plan
        if p["path_tolerance"] > 0 and k <= plan.horizon:
            e = self._configuration_error(plan.X[k], x)
            if e.max() > p["path_tolerance"]:
                j = int(np.argmax(e))
                self.aborted = (FAULT_PATH, f"plan {self.active_seq} aborted at k={k}: |q_ref − q| of "
                                            f"{self.error_names[j]} = {e[j]:.4g} > {p['path_tolerance']}")
                return True
        if p["goal_tolerance"] > 0 and k >= plan.horizon and not self.goal_reached:
            e = self._configuration_error(plan.X[-1], x).max()
            if e <= p["goal_tolerance"]:
                self.goal_reached = True
                self.get_logger().info(f"plan {self.active_seq}: goal reached (|q_N − q| = {e:.4g})")
            elif t > plan.times[-1] + p["goal_time_tolerance"]:
                self.aborted = (FAULT_GOAL, f"plan {self.active_seq}: |q_N − q| = {e:.4g} > {p['goal_tolerance']} "
                                            f"{p['goal_time_tolerance']} s after the plan's end")
                return True
        return False

    def go_safe(self, kind: str, detail: str = "") -> None:
        """Publish the safe command and log the fault (throttled per kind). Nothing before the first valid
        joint state: there is no velocity to damp, and a lockstep simulator would step on the command."""
        self.fault_counts[kind] = self.fault_counts.get(kind, 0) + 1
        # throttled per kind; an invalid state per reason (its detail up to the names or numbers it quotes)
        key = f"{kind}: {detail.split('(')[0].split('[')[0]}" if kind == FAULT_INVALID_STATE else kind
        self.warn(key, f"{kind}{': ' + detail if detail else ''} -> safe command ({self.p['safe_mode']})")
        self.fault = kind
        if not self.ever_valid:
            return
        u = self._safe_input(self.p["safe_mode"])
        if u is not None:
            self.counts["safe"] += 1
            self.publish(u)

    def _safe_input(self, mode: str) -> np.ndarray | None:
        r = self.robot
        v = self.state[2][self.act_q_index] if self.state is not None else None
        tau = safe_command(mode, v, np.full(len(r.actuated), float(self.p["safe_damping"])), r.effort_limits)
        u = np.zeros(self.vi.nu)
        u[: len(tau)] = tau
        if self.vi.nk:
            if self.state is not None:
                self._held_prescribed = self.state[1][self.vi.idx_k]
            if self._held_prescribed is None:
                return None  # no measured prescribed positions yet: commanding 0 would move them
            u[len(tau):] = self._held_prescribed  # prescribed joints stay where they were last measured
        return u

    def publish(self, u: np.ndarray) -> None:
        np.take(u, self.cmd_index, out=self.cmd.data)
        self.pub.publish(bytes(self.cmd))
        self.counts["commands"] += 1

    def _publish_state(self, law: TrackingController, k: int, t: float, x, qdot, u) -> None:
        rate = float(self.p["state_publish_rate"])
        now = time.monotonic()
        if rate <= 0 or self.state_msg is None or now < getattr(self, "_next_state", 0.0):
            return
        self._next_state = now + 1.0 / rate
        X, U, _ = law.reference(k)
        nq = self.vi.nq
        self.state_pub.publish(self.state_msg.fill(t, k, law.plan.dt, X[:nq].copy(), self.vi.velocity(X), U,
                                                   x[:nq].copy(), qdot, u))

    def publish_diagnostics(self) -> None:
        now = time.monotonic()
        t0, s0, c0 = self._rate_mark
        span = max(now - t0, 1e-9)
        self.rates = ((self.counts["states"] - s0) / span, (self.counts["commands"] - c0) / span)
        self._rate_mark = (now, self.counts["states"], self.counts["commands"])
        if not self.active:
            level, state = WARN, "inactive"
        elif self.fault is not None or self.aborted is not None:
            level, state = ERROR, f"safe command: {self.aborted[0] if self.aborted else self.fault}"
        elif self.law is None:
            level, state = WARN, "waiting for a plan" if self.ever_valid else "waiting for a joint state"
        elif self.state is not None and self.law.index(self.state[0]) >= self.law.horizon:
            level, state = OK, f"holding the end of plan {self.active_seq}"
        else:
            level, state = OK, f"tracking plan {self.active_seq}"
        k = self.law.index(self.state[0]) if self.law is not None and self.state is not None else ""
        values = dict(state=state, plan=self.active_seq if self.active_seq is not None else "",
                      pending_plan=self.pending[0] if self.pending else "", k=k,
                      horizon=self.law.horizon if self.law is not None else "",
                      joint_state_rate_hz=f"{self.rates[0]:.1f}", command_rate_hz=f"{self.rates[1]:.1f}",
                      joint_states=self.counts["states"], commands=self.counts["commands"],
                      safe_commands=self.counts["safe"], last_fault=self.fault or "",
                      foreign_joint_states=self.counts["foreign"], unstamped_joint_states=self.counts["unstamped"],
                      **{f"faults: {k}": n for k, n in self.fault_counts.items()})
        name = f"{self.get_namespace().rstrip('/')}/{self.get_name()}"
        self.diag_pub.publish(diagnostics(name, self.get_clock().now().to_msg(), level, state, values))


def main(args: list[str] | None = None) -> None:
    run_node(ControllerNode, args)


if __name__ == "__main__":
    main()
