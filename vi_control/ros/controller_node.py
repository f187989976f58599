"""Controller node: joint states + plan in, u = U_k + K_k (X_k ⊖ x) out as effort commands.

A thin ROS adapter (a lifecycle node, vi_control.ros.managed) around two ROS-free objects. The intake
(``control.intake.StateIntake``) makes each joint state the discrete state (last two configurations or velocities,
Johnson2015, eq. 1b) or refuses it (stamp against this node's clock: stale, future, backwards; the model's limits). The
runner (``control.runner.PlanRunner``) starts a plan at its stated t₀ (at k = 0), gives each tick's command (the law
``control.tracking.TrackingController``) and aborts a plan on path and goal tolerances. A refusal or fault gives the
safe command (``safe_mode``: hold, zero or damping) and a warning throttled per kind — but nothing before the first
valid state (a lockstep simulator steps on every command). With ``hold`` (the default) an arm is never left to
gravity: without a plan (before the first, after activate) and on a plan-side fault it holds the configuration
measured when the hold began (``control.tracking.HoldLaw``: gravity compensation and the DLQR hold gain), on stale or
refused states it commands that configuration's gravity torque for ``stale_hold_time``, then zero; on an over-speed
(a valid state faster than its bound: ``intake.FAULT_OVERSPEED``) it brakes (``PlanRunner.brake_input``). Publishes
``~/controller_state``, ``~/plan_entered`` (each plan's start as run: vi_control.ros.messages) and
``/diagnostics`` (built in vi_control.ros.supervision). The parameters: vi_control.ros.controller_parameters.

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
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from nav_msgs.msg import Odometry
from rclpy.clock import Clock, ClockType
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, Header, UInt8MultiArray
from trajectory_msgs.msg import JointTrajectory

from ..control.intake import FAULT_OVERSPEED, FAULT_STALE, Estimate, Fault, StateIntake, Verdict, Waiting
from ..control.plan import Plan
from ..control.runner import PlanRunner, command_hold
from ..control.tracking import TrackingController, velocity_state, wire_velocity
from ..integrators import make_integrator
from .common import (
    JOINT_STATES_QOS,
    LATCHED_QOS,
    PLAN_QOS,
    SENSOR_QOS,
    STREAM_QOS,
    command_joints,
    realtime_scheduling,
    run_node,
    with_message_info,
)
from .controller_parameters import LIMIT_KEYS, PARAMETERS, joint_limits
from .managed import ManagedNode
from .messages import (
    FLAG_START_ON_RECEIPT,
    ForeignJointState,
    PlanModelMismatch,
    RawFloat64MultiArray,
    RawJointStateReader,
    plan_entered_message,
    plan_from_message,
    plan_refused_message,
)
from .supervision import (
    ControllerStateMessage,
    LoopTiming,
    PublisherSources,
    carried_parts,
    controller_diagnostics,
    diagnostics,
    joint_state_conflict_text,
    other_publishers,
    publisher_gid,
)
from .vehicle import POSE_ERROR_NAMES, actuator_velocities, state_from_odometry, vehicle_system


class ControllerNode(ManagedNode):
    PARAMETERS = PARAMETERS

    def __init__(self) -> None:
        self.robot = self.intake = None
        # A plan's Δt other than the system's: that system is built on this thread while the loop goes on (the
        # symbolic build ~0.15 s for the panda, and gcc for seconds on a cold cache: a callback that long sent no
        # command); ``_awaiting``: the plans received meanwhile, queued in order once it is ready.
        self._builder = ThreadPoolExecutor(1, thread_name_prefix="vi_controller_build")
        self._building: tuple[float, Future] | None = None
        self._awaiting: list[tuple[int, Plan, int]] = []
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
        self.cmd_index = np.array([r.actuated.index(n) for n in joints] + list(range(len(r.actuated), self.vi.nu)), int)
        if self.vehicle:  # Estimate.qdot holds each thruster's velocity Bᵀξ; limits are the vehicle's
            act_q_index, self.reader, limits, self.state_msg = np.arange(self.vi.nu), None, None, None
            error_names = POSE_ERROR_NAMES[: self.vi.dim]
        else:
            act_q_index = np.array([r.joint_index(n) for n in r.actuated], int)
            self.reader = RawJointStateReader(r.joint_names, partial=True)
            limits = joint_limits(p, r)
            self.state_msg = ControllerStateMessage(r, list(act_q_index))
            error_names = r.joint_names
        self.cmd = RawFloat64MultiArray(self.vi.nu)  # serialized once; each tick writes its values
        self.intake = StateIntake(
            self.vi,
            limits,
            p["state_timeout"],
            p["state_estimate"],
            notice=self.get_logger().warning,
            on_clock_back=self._clock_went_back,
            merge_age=p["joint_state_merge_age"],
        )
        self.runner = PlanRunner(r, self.vi, p, self.vehicle, error_names, act_q_index, self.get_logger(), self.warn)
        self.runner.on_enter = self._announce_entry
        self.runner.on_refuse = self._announce_refusal
        if self.runner.hold is not None:  # the hold's derivatives compiled now, not at the first tick that needs them
            self.runner.hold.engage(r.neutral())
            self.runner.hold.release()
        self.counts = dict(commands=0, safe=0, hold=0, conflicting_joint_states=0)
        self.command_publishers: dict[bytes, str] = {}  # GID → node of the other publishers on the command topic
        self.state_sources = PublisherSources(float(p["joint_state_conflict_window"]))
        self.loop = LoopTiming(None)
        self._rate_mark = (time.monotonic(), 0, 0)
        self.rates = (0.0, 0.0)
        self.pub = self.create_publisher(Float64MultiArray, f"{p['controller_name']}/commands", STREAM_QOS)
        self.state_pub = self.create_publisher(JointTrajectory, "~/controller_state", STREAM_QOS)
        self.diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", STREAM_QOS)
        self.entered_pub = self.create_publisher(Header, "~/plan_entered", LATCHED_QOS)
        self.refused_pub = self.create_publisher(DiagnosticStatus, "~/plan_refused", PLAN_QOS)
        # raw: the serialized JointState, read in place (messages.RawJointStateReader) — the 1 kHz hot path
        state_sub = (
            self.create_subscription(Odometry, "odom", self.on_odometry, SENSOR_QOS)
            if self.vehicle
            else self.create_subscription(
                JointState, "joint_states", with_message_info(self.on_joint_state), SENSOR_QOS, raw=True
            )
        )
        self.several_drivers = False  # (until a message with only some of the model's joints comes)
        self.own_subs = [
            state_sub,
            self.create_subscription(UInt8MultiArray, f"{p['planner_name']}/plan", self.on_plan, PLAN_QOS),
        ]
        self.wall = Clock(clock_type=ClockType.STEADY_TIME)
        self.own_timers = [self.create_timer(float(p["diagnostics_period"]), self.publish_diagnostics, clock=self.wall)]
        self.tick_timer = None
        self.get_logger().info(
            f"{r.name}: joints={joints}, trigger={p['trigger']}, safe_mode={p['safe_mode']}, "
            f"use_sim_time={self.get_parameter('use_sim_time').value}"
        )

    def activate(self) -> None:
        self.intake.reset()
        self.runner.reset()
        self._awaiting = []  # (forgotten with the runner's plans; a build under way still gives its system)
        self._start_tick_timer()
        self._set_scheduling(int(self.p["realtime_priority"]))

    def deactivate(self) -> None:
        """The safe command that needs no loop, then silence: with safe_mode 'hold' the gravity torque of the last
        valid state (an effort controller keeps its last command: the arm stays where it is, without feedback),
        else zero torque (prescribed joints held)."""
        self._stop_tick_timer()
        self._set_scheduling(0)
        last = self.intake.last_valid
        hold = self.p["safe_mode"] == "hold"
        u = (
            self.runner.safe_input("hold" if hold else "zero", last, fresh=False, stale_hold=hold)
            if last is not None
            else None
        )
        if u is not None:
            self.publish(u)
        self.runner.stop()
        self.runner.reset()
        self._awaiting = []

    def cleanup(self) -> None:
        self._stop_tick_timer()
        self.destroy_entities(
            self.own_timers,
            self.own_subs,
            publishers=(self.pub, self.state_pub, self.diag_pub, self.entered_pub, self.refused_pub),
        )
        self.robot = None
        # A build under way belongs to this configuration: its system (at a plan's Δt) must not replace the next
        # configuration's (at its dt parameter); it finishes on its thread and is dropped. (The plans that waited for
        # it went at deactivate.)
        self._building = None

    def destroy_node(self) -> None:
        # (the build thread ends with its node, not only at the interpreter's exit: one per node otherwise)
        self._builder.shutdown(wait=False, cancel_futures=True)
        super().destroy_node()

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
        period = (
            1.0 / float(self.p["rate"])
            if self.p["trigger"] == "timer"
            else max(float(self.p["state_timeout"]) / 2, 0.01)
        )
        self.tick_timer = self.create_timer(
            period, (lambda: self.tick()) if self.p["trigger"] == "timer" else self.watchdog
        )  # (rclpy passes a TimerInfo to a callback with arguments)
        self.loop.restart(period if self.p["trigger"] == "timer" else None)

    def _stop_tick_timer(self) -> None:
        if self.tick_timer is not None:
            self.destroy_timer(self.tick_timer)
            self.tick_timer = None

    def apply_parameter(self, name: str, value) -> str | None:
        self.p[name] = value
        if self.robot is None or self.intake is None:
            return None
        if name == "state_timeout":
            self.intake.timeout = float(value)
        if name == "joint_state_conflict_window":
            self.state_sources = PublisherSources(float(value))  # (0: not watched, and no conflict left reported)
        if name == "joint_state_merge_age" and not self.vehicle:
            self.intake.merger.max_age = float(value)
        if name in LIMIT_KEYS and not self.vehicle:
            self.intake.limits = joint_limits(self.p, self.robot)
        elif name.startswith("hold_") and name.endswith("_weight") and self.runner.hold is not None:
            self.runner.hold.set_weights(self.runner.hold_weights())
            self.runner.hold.release()  # (engaged again at the next hold command, with the new gain)
        elif name in ("gain_scale", "hold_integral_gain") and self.runner.law is not None:
            self.runner.set_plan(self.runner.active_plan)
        elif name in ("rate", "state_timeout") and self.tick_timer is not None:
            self._stop_tick_timer()
            self._start_tick_timer()
        return None

    def _system(self, dt: float):
        """(robot, discrete system) at ``dt`` (any thread: reads only the parameters and the immutable model)."""
        if self.vehicle:
            return vehicle_system(self.p, dt)
        return self.robot, make_integrator(self.p["integrator"], self.robot, dt)

    def _build(self, dt: float) -> None:
        self._use_system(*self._system(dt))

    def _use_system(self, robot, vi) -> None:
        self.robot, self.vi = robot, vi
        if self.intake is not None:  # a plan's Δt: the estimate and the law on the new system
            self.intake.set_system(self.vi)
            self.runner.set_system(self.robot, self.vi)

    def _queue(self, seq: int, plan: Plan, flags: int) -> None:
        """Queue the plan on the runner — after the plans that wait for a system, and, if its Δt is not the
        system's, once the system of its Δt is built (in the background: ``_system_ready`` takes it)."""
        if self._awaiting or abs(plan.dt - self.vi.dt) > 1e-12 * plan.dt:
            self._awaiting.append((seq, plan, flags))
            if self._building is None:
                self.get_logger().info(
                    f"plan {seq} has Δt = {plan.dt:g} s, the controller's system {self.vi.dt:g} s: building that "
                    "system meanwhile (the loop goes on; the controller's dt parameter set to the plans' avoids this)"
                )
                self._building = (plan.dt, self._builder.submit(self._system, plan.dt))
            return
        self.runner.queue(seq, plan, bool(flags & FLAG_START_ON_RECEIPT))

    def _system_ready(self) -> None:
        """On the executor's thread: once the background build is done, the new system and the plans that waited
        for it (a failed build drops them, with the reason)."""
        if self._building is None or not self._building[1].done():
            return
        (dt, future), self._building = self._building, None
        waiting, self._awaiting = self._awaiting, []
        try:
            self._use_system(*future.result())
        except Exception as e:  # (a plan's Δt the model cannot step at, e.g.): the plans are refused, the hold goes on
            self.warn(
                "plan rejected",
                f"plans {[w[0] for w in waiting]} rejected: no system at Δt = {dt:g} s: {type(e).__name__}: {e}",
                level="error",
            )
            return
        for seq, plan, flags in waiting:
            self._queue(seq, plan, flags)

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
            seq, plan, flags = plan_from_message(
                msg, r.name, r.hash, r.joint_names, list(r.actuated) + list(r.prescribed)
            )
        except PlanModelMismatch as e:
            self.runner.refuse(e.seq, "plan rejected", f"plan rejected: {e}", level="error")
            return
        # (the plan's Δt becomes the state estimate's: the same bounds as `dt`)
        if not self.runner.admit(seq, plan, PARAMETERS["dt"].range, self.intake.limits):
            return
        self._queue(seq, plan, flags)

    def _announce_entry(self, seq: int, plan: Plan) -> None:
        """~/plan_entered: where plan ``seq`` starts as this controller runs it (a planner continuing it — MPC
        cycles — plans on that timeline, re-timed or not)."""
        self.entered_pub.publish(plan_entered_message(seq, float(plan.times[0])))

    def _announce_refusal(self, seq: int, why: str, kind: str = "") -> None:
        """~/plan_refused: plan ``seq`` is not run by this controller, why and the kind of refusal (for the planner's
        request status; a plan that reached it after its end is planned again)."""
        self.refused_pub.publish(plan_refused_message(seq, why, kind))

    def _clock_went_back(self, t: float, last_stamp: float) -> None:
        """The intake saw stamps and this clock go back together: the runner re-queues its plan; zero torque."""
        if self.runner.clock_went_back(t, last_stamp) and self.p["safe_mode"] != "hold":
            u = self.runner.safe_input("zero", self.intake.state)  # (hold: the next tick holds until the start)
            if u is not None:
                self.publish(u)

    # ---- measurements --------------------------------------------------------------------------
    def on_joint_state(self, msg: bytes, info: dict | None = None) -> None:
        """A serialized sensor_msgs/JointState (``info``: its rclpy ``MessageInfo``)."""
        if not self.active:
            return
        try:
            t, has_v = self.reader.read_raw(msg)
        except ForeignJointState as e:  # another driver's joints (gripper, wheels) on the same topic: not ours
            if self.intake.foreign(str(e)):  # once per name list: visible if these were meant to be ours
                self.get_logger().info(
                    f"{e}: ignored (another driver's joints on joint_states; if these are the "
                    f"robot's, its joint names differ from the model's {self.robot.joint_names})"
                )
            return
        except ValueError as e:
            self.cmd.set_stamp(*self.reader.stamp)  # (its stamp, if its joints are ours: the safe command answers it)
            return self._use(self.intake.invalid(str(e)))
        now = self._now()
        reader = self.reader
        self.cmd.set_stamp(*reader.stamp)  # what every command from now on answers (messages.command_stamp)
        if reader.carried is not None and not self.several_drivers:
            self._deepen_joint_states()
        if self.state_sources.window > 0.0:
            self._watch_state_sources(info, reader.carried)
        self._use(self.intake.joint_state(t, reader.q, reader.qdot if has_v else None, now, reader.carried), now)

    def _watch_state_sources(self, info: dict | None, carried: np.ndarray | None) -> None:
        """``joint_state_conflict_window``: joint states of one joint from two publishers — a joint_state_publisher
        left running beside the robot's driver (it publishes zeros, or a GUI's sliders), a second simulator in the same
        ROS domain — reported as an error naming them when one more joins, as info when one publisher per joint is
        left. Reported, not refused: which one is the robot's cannot be told here (refusing both would leave the arm
        on the safe command), and every state still goes through the checks, whose refusals (a jump between the two
        is an impossible velocity) then say what they see."""
        sources, was = self.state_sources, self.state_sources.conflicting
        gid = publisher_gid(info)
        sources.admit(gid, time.monotonic(), carried_parts(carried))
        now = sources.conflicting
        if gid in now:
            self.counts["conflicting_joint_states"] += 1
        if now == was:
            return
        topic = self.own_subs[0].topic_name
        if now - was:
            self.get_logger().error(
                joint_state_conflict_text(
                    self, topic, sources, "this controller cannot tell the robot's states from the other's"
                )
            )
        elif not now:
            self.get_logger().info(f"joint states on {topic}: one publisher per joint again")

    def _deepen_joint_states(self) -> None:
        """The first message of one driver of several: from now on read joint states with depth 4
        (common.JOINT_STATES_QOS), so one driver's message cannot displace another's; the depth-1 reader (the newest
        state only, right for one driver) goes once this callback has returned."""
        self.several_drivers, old = True, self.own_subs[0]
        self.own_subs[0] = self.create_subscription(
            JointState, "joint_states", with_message_info(self.on_joint_state), JOINT_STATES_QOS, raw=True
        )

        def drop() -> None:
            self.destroy_timer(timer)
            self.destroy_subscription(old)

        timer = self.create_timer(0.0, drop, clock=self.wall)
        self.get_logger().info(
            "joint states from several drivers (this one has only some of the model's joints): "
            "merged, read with depth 4 from now on"
        )

    def on_odometry(self, msg: Odometry) -> None:
        """Vehicle mode: x = (g, 𝕀ξ) from pose and body twist, stamp checked as a joint state's."""
        if not self.active:
            return
        self.cmd.set_stamp(msg.header.stamp.sec, msg.header.stamp.nanosec)
        try:
            t, x = state_from_odometry(self.vi, msg)
        except ValueError as e:
            return self._use(self.intake.invalid(str(e)))
        now = self._now()
        self._use(self.intake.pose_state(t, x, actuator_velocities(self.robot, self.vi, x), now), now)

    def _use(self, verdict: Verdict, now: float = 0.0) -> None:
        """The intake's verdict: a refusal sends the safe command; with the joint_state trigger a state is commanded
        at once — a republished one (a lockstep simulator idling) again: the simulator republishes while it waits for
        that state's command, which may have been lost (commands are volatile: a reader matched after the command
        never gets it) or be on its way. Each command names the state it answers (``messages.command_stamp``), and
        the simulator steps once per state: a second answer crossing the first is ignored, not a second step."""
        if isinstance(verdict, Fault):
            return self.go_safe(*verdict)
        if isinstance(verdict, Waiting):  # (no new state: the last one ages into a stale one, the safe command)
            self.warn("waiting", f"joint state incomplete: {verdict.detail}")
            return
        if verdict is None or self.p["trigger"] != "joint_state":
            return
        if self.intake.state is not None:  # (a new state, or the last one republished)
            self.tick(now)

    def watchdog(self) -> None:
        """joint_state trigger: notice joint states that stopped arriving (their stamps age on this clock)."""
        state = self.intake.state
        age = self._stale_age(state) if self.active and state is not None else None
        if age is not None:
            self.go_safe(FAULT_STALE, f"no joint state for {age:.3f} s")

    # ---- commands ------------------------------------------------------------------------------
    def tick(self, now: float | None = None) -> None:
        """One command from the latest state (``now``: the node's clock, if the caller has read it)."""
        if not self.active:
            return
        self._system_ready()
        state = self.intake.state
        now = self._now() if now is None else now
        gap = self.loop.tick(now, None if state is None else state.t)
        if gap is not None:
            self.warn("command loop late", lambda: self._late_text(gap))
        if state is None:
            if self.intake.ever_valid and self.runner.fault is not None:
                self.go_safe(self.runner.fault, "")
            return
        t, x, qdot = state
        age = self._stale_age(state, now)
        if age is not None:
            return self.go_safe(FAULT_STALE, f"no joint state for {age:.3f} s")
        if self.intake.overspeed is not None:  # the robot itself too fast: braked with this state's feedback
            return self.go_safe(FAULT_OVERSPEED, self.intake.overspeed)
        out = self.runner.command(t, x)
        if isinstance(out, Fault):
            return self.go_safe(*out)
        if out is not None:
            k, u = out
            self.publish(u)
            self._publish_state(self.runner.law, k, t, x, qdot, u)
        elif self.lockstep() and self.runner.pending is not None:
            # no plan runs and the one that waits starts later: a lockstep simulator steps only on a command, so the
            # safe command steps it to that start (uncommanded, each would wait for the other for good)
            u = self.runner.safe_input(self.p["safe_mode"], state, period=self.command_period())
            if u is not None:
                self.counts["hold" if self.p["safe_mode"] == "hold" else "safe"] += 1
                self.publish(u)
        elif self.p["safe_mode"] == "hold" and not self.vehicle and not self.lockstep():  # no plan (yet): hold
            if self.runner.fault is not None:
                self.get_logger().info(f"joint states valid again after: {self.runner.fault}; holding")
                self.runner.fault = None
            u = self.runner.safe_input("hold", self._feedback_state(state))
            if u is not None:
                self.counts["hold"] += 1
                self.publish(u)

    def _late_text(self, gap: float) -> str:
        loop = self.loop
        return (
            f"command loop late: {1e3 * gap:.1f} ms between ticks (period {1e3 * loop.period:.1f} ms; "
            f"{loop.late_ticks} late ticks of {loop.ticks}, the largest gap {1e3 * loop.max_gap:.1f} ms): the driver "
            "held the last command meanwhile"
        )

    def lockstep(self) -> bool:
        """One command per state on a simulation clock: a lockstep simulator, which steps only on a command — it
        waits for the first plan uncommanded (nothing falls meanwhile), where any other plant is held; a plan received
        to start later is stepped to under the safe command."""
        return self.p["trigger"] == "joint_state" and bool(self.get_parameter("use_sim_time").value)

    def _stale_age(self, state: Estimate, now: float | None = None) -> float | None:
        """The state's age on this node's clock (``now`` if the caller has read it) if beyond ``state_timeout``:
        stale; None while it is fresh."""
        age = (self._now() if now is None else now) - state.t
        return age if age > float(self.p["state_timeout"]) else None

    def go_safe(self, kind: str, detail: str = "") -> None:
        """Publish the safe command and log the fault (throttled per kind). Nothing before the first valid
        joint state: there is no velocity to damp, and a lockstep simulator would step on the command."""
        if not self.intake.ever_valid:  # nothing commanded yet, nothing to make safe: say what is awaited
            self.runner.fault_counts[kind] = self.runner.fault_counts.get(kind, 0) + 1
            self.warn(
                f"waiting: {kind}",
                f"no valid joint state yet ({kind}{': ' + detail if detail else ''}): nothing commanded",
            )
            return
        # The robot itself too fast (this state): the plan that drove it there stops; braked. The plan's abort for it,
        # reported again by the runner once the velocities are within their bounds, is the safe command below: the
        # hold the brake engaged, with its position feedback — braking on (damping and the model's gravity torque)
        # let a 20 %-heavier panda sag into its end stops.
        if kind == FAULT_OVERSPEED and self.intake.overspeed is not None:
            self.runner.abort(kind, detail)
            self.runner.record_fault(kind, detail)
            u = self.runner.brake_input(self.p["safe_mode"], self.intake.state, self.safe_hold_time())
            if u is not None:
                self.counts["safe"] += 1
                self.publish(u)
            return
        self.runner.record_fault(kind, detail)
        state = self.intake.state  # (damped or held with feedback only while fresh: PlanRunner.safe_input)
        fresh = state is not None and self._stale_age(state) is None
        last = state if fresh else self.intake.last_valid
        stale_hold = last is not None and self._now() - last.t <= float(self.p["state_timeout"]) + float(
            self.p["stale_hold_time"]
        )
        feedback = self._feedback_state(last) if fresh else last
        u = self.runner.safe_input(self.p["safe_mode"], feedback, fresh, self.safe_hold_time(), stale_hold)
        if u is not None:
            self.counts["safe"] += 1
            self.publish(u)

    def command_period(self) -> float:
        return command_hold(self.p["trigger"], float(self.p["rate"]), self.runner.vi.dt, self.intake.state_interval)

    def safe_hold_time(self) -> float:
        """How long a safe command's damping may act before the next command: the command period, or — the loop
        starved, its ticks late within the last ``LoopTiming.RECENT`` seconds — the longest of those gaps. The damping
        cap (``PlanRunner.damping_cap``) must hold for the time the torque acts: capped for 2 ms and held 25–54 ms by a
        starved 500 Hz loop, the brake reversed the panda's light joints every command and its over-speed grew (a CI
        run: 6.9 rad/s, the arm 2.5 rad away; a Pinocchio plant with 40 ms holds: 164 rad/s)."""
        return max(self.command_period(), self.loop.recent_gap(self._now()))

    def _feedback_state(self, state: Estimate | None) -> Estimate | None:
        """The state the hold feeds back: the estimate's — p from two configurations Δt apart, the VI's own state,
        which tracks best (the MuJoCo panda reach 0.0017 rad RMS against 0.0076 from the measured q̇) — or, while the
        command loop is starved (late ticks within ``LoopTiming.RECENT``), p from the measured q̇ (``velocity_state``):
        the configurations' p is a velocity ~Δt/2 old, and with commands held 20 periods the hold law fed it cycled at
        3–5 rad/s on a panda, where the measured q̇ settles it in half a second."""
        if state is None or self.vehicle or self.loop.recent_gap(self._now()) <= 0.0:
            return state
        nq = self.runner.vi.nq
        if state.qdot.shape != (nq,) or not np.all(np.isfinite(state.qdot)):
            return state
        try:
            x = velocity_state(self.runner.vi, state.x[:nq], state.qdot)
        except (ValueError, ArithmeticError, np.linalg.LinAlgError):
            return state
        return Estimate(state.t, x, state.qdot)

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
        self.state_pub.publish(
            self.state_msg.fill(t, k, law.plan.dt, X[:nq].copy(), wire_velocity(self.vi, X), U, x[:nq].copy(), qdot, u)
        )

    def _watch_command_topic(self) -> None:
        """Other publishers on this controller's command topic — a second controller on the same robot (a second launch
        in the same ROS domain, under this node's own name), a ``ros2 topic pub`` or an rqt publisher left running —
        said as a warning naming them when one more appears, as info when this controller is the only one again. Seen
        in the ROS graph at each diagnostics period: whether they command, the plant judges (its
        ``command_conflict_window`` refuses every command while two publishers command, and brakes)."""
        topic = self.pub.topic_name
        now = other_publishers(self, topic)
        was, self.command_publishers = self.command_publishers, now
        if now.keys() - was.keys():
            self.get_logger().warning(
                f"another publisher on this controller's command topic {topic}: {', '.join(now.values())} — a second "
                "controller on this robot, or a topic publisher left running: if it commands, the plant refuses "
                "both (command_conflict_window) and brakes; stop the one that is not this robot's controller"
            )
        elif was and not now:
            self.get_logger().info(f"this controller is the only publisher on {topic} again")

    def publish_diagnostics(self) -> None:
        self._watch_command_topic()
        now, states, commands = time.monotonic(), self.intake.counts["states"], self.counts["commands"]
        t0, s0, c0 = self._rate_mark
        span = max(now - t0, 1e-9)
        self.rates = ((states - s0) / span, (commands - c0) / span)
        self._rate_mark = (now, states, commands)
        merger = self.intake.merger
        level, status, values = controller_diagnostics(
            self.active,
            self.runner,
            self.intake,
            self.counts,
            self.rates,
            merger.take_extrapolation() if merger else 0.0,
            self.loop,
            self.loop.window(),
            len(self.state_sources.conflicting),
            len(self.command_publishers),
        )
        name = f"{self.get_namespace().rstrip('/')}/{self.get_name()}"
        self.diag_pub.publish(diagnostics(name, self.get_clock().now().to_msg(), level, status, values))


def main(args: list[str] | None = None) -> None:
    run_node(ControllerNode, args)


if __name__ == "__main__":
    main()
