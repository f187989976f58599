"""Simulator node: a discrete system (the midpoint VI by default) stepped at Δt, effort commands in, JointState out.

Topics: sub ``<controller_name>/commands`` (Float64MultiArray: torques on ``joints``, then next positions of
prescribed joints); pub ``clock`` (rosgraph_msgs/Clock: the simulation time t_k = k·Δt — relative, so each
namespace has its own: ``/r1/clock``, or ``/clock`` in the root namespace; a node with ``use_sim_time`` in that
namespace reads it with the remap ``-r /clock:=clock``, as launcher.NodeProcess and launch/*.py give it),
``joint_states`` (stamped with t_k) and ``robot_description`` (relative, latched: each namespace
its own). Service ``~/reset`` (Trigger: back to the initial state; the clock keeps running, as Gazebo's
reset_world — a clock that jumps back breaks every sim-time node). Modes: 'realtime' (timer at Δt, or as fast as
possible with ``max_speed``) and 'lockstep' (one step per received command). A lifecycle node (vi_control.ros.managed):
inactive = paused (no steps, no clock, commands ignored). For a mobile model also ``odom`` (nav_msgs/Odometry
of ``odometry_link`` in ``odom_frame``).

Vehicle mode (parameter ``vehicle``: a rigid-body YAML, ``ros.vehicle``): the Lie-group VI (Jimenez2013) steps the
body, thruster efforts arrive on the same command topic, and the state goes out as ``nav_msgs/Odometry`` on
``odom`` (pose, body twist: the whole state) instead of joint states.

``/diagnostics`` every ``diagnostics_period`` (wall clock): the measured real-time factor (WARN below 80 % of the
asked one) and, on a running clock, the steps taken on a *late* command — one that answered an older state than the
step's (``supervision.CommandTiming``): the control loop did not close within the step's wall time; ERROR while
commands from two publishers are refused (``command_conflict_window``: two controllers on one robot).
"""

from __future__ import annotations

import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from nav_msgs.msg import Odometry
from rclpy.clock import Clock as WallClock
from rclpy.clock import ClockType
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from std_srvs.srv import Trigger

from ..control.hold import equilibrium_state
from ..control.tracking import wire_velocity
from ..integrators import StepError, make_integrator
from ..integrators.midpoint import MidpointVI
from ..integrators.stops import JointStops
from ..mechanics.constraints import consistent_state
from ..model.limits import position_limit_violation
from ..model.odometry import Odometer, odometry_link
from .common import (
    LATCHED_QOS,
    RECORD_QOS,
    STREAM_QOS,
    command_joints,
    command_timed_out,
    run_node,
    with_message_info,
)
from .managed import ManagedNode
from .messages import command_stamp, split_seconds
from .simulator_parameters import PARAMETERS
from .supervision import (
    CommandTiming,
    PublisherSources,
    admit_command,
    diagnostics,
    refused_command_fallback,
    simulator_diagnostics,
)
from .vehicle import odometry_from_state, pose_parameter, vehicle_system


class SimulatorNode(ManagedNode):
    PARAMETERS = PARAMETERS

    def __init__(self) -> None:
        self.robot = None
        super().__init__("vi_simulator")

    # ---- lifecycle ---------------------------------------------------------------------------
    def configure(self) -> None:
        p = self.p
        if self.get_parameter("use_sim_time").value:
            raise ValueError("use_sim_time must be false for the simulator: it is the clock (its namespace's)")
        vehicle = vehicle_system(p, float(p["dt"]), float(p["mass_scale"]), float(p["drag_scale"]))
        self.vehicle = vehicle is not None
        if self.vehicle:
            self.robot, self.vi = vehicle
        else:
            self.robot, urdf = self.load_robot(mass_scale=float(p["mass_scale"]))
            integrator = p["integrator"]
            if integrator == "midpoint" and self.robot.n_nonholonomic:  # (which refuses such a model)
                integrator = "gni"
                self.get_logger().info(
                    f"{self.robot.name} has nonholonomic constraints: integrator gni (Kobilarov2010)"
                )
            self.vi = make_integrator(integrator, self.robot, float(p["dt"]))
        self.stops = JointStops(self.vi) if p["joint_stops"] and type(self.vi) is MidpointVI else None
        if p["joint_stops"] and self.stops is None and not self.vehicle:
            self.get_logger().info(
                f"joint_stops: only with the midpoint integrator, not {p['integrator']}: the "
                "URDF position limits are not enforced"
            )
        r, vi = self.robot, self.vi
        joints = command_joints(p, r)
        # command index -> input index: torques reordered to vi's actuated order, prescribed positions after.
        self.perm = np.array([joints.index(n) for n in r.actuated] + list(range(len(joints), vi.nu)), int)
        self.u_zero = np.zeros(vi.nu)
        if self.vehicle:
            twist = np.asarray(p["initial_twist"] or np.zeros(vi.dim), float)
            if twist.shape != (vi.dim,):
                raise ValueError(f"initial_twist needs {vi.dim} entries (ω, v)")
            self.x0 = vi.state_from_pose(pose_parameter(vi, p["initial_pose"], "initial_pose"), twist)
        else:
            self.effort_joint_index = [r.joint_index(n) for n in r.actuated]
            q0 = np.asarray(p["initial_positions"], float) if p["initial_positions"] else self._default_configuration()
            v0 = np.asarray(p["initial_velocities"] or np.zeros(vi.nq), float)
            if q0.shape != (vi.nq,) or v0.shape != (vi.nq,):
                raise ValueError(f"initial_positions/initial_velocities need {vi.nq} entries ({r.joint_names})")
            if not (np.all(np.isfinite(q0)) and np.all(np.isfinite(v0))):  # (a NaN state would be published)
                raise ValueError(f"initial_positions {q0.tolist()} and initial_velocities {v0.tolist()} must be finite")
            why = vi.configuration_violation(q0) if hasattr(vi, "configuration_violation") else None
            if why:
                raise ValueError(f"initial_positions {why}")
            # Given positions beyond the limits are refused (a start past an end stop); the default zeros only warn:
            # they lie outside e.g. kinova's [0.82, 5.46] on its second joint, a model that must still start.
            why = position_limit_violation(r.joints, q0, "initial_positions") if len(r.joints) == vi.nq else None
            if why is not None and p["initial_positions"]:
                raise ValueError(why)
            lo, hi = (np.array([getattr(j, b) for j in r.joints]) for b in ("lower", "upper"))
            outside = [
                f"{n} = {v:g} not in [{a:g}, {b:g}]" for n, v, a, b in zip(r.joint_names, q0, lo, hi) if not a <= v <= b
            ]
            if outside:
                self.get_logger().warning(
                    f"initial_positions outside the URDF joint limits: {'; '.join(outside)} "
                    "— a controller refuses such joint states (position_limit_margin)"
                )
            if hasattr(vi, "velocity_violation"):  # nonholonomic (GNI): only velocities with A(q)q̇ = 0 are possible
                v0 = self._allowed_velocity(q0, v0)
            # The discrete state a sampled trajectory shows (as the planner's Task.start_state): at rest under
            # gravity p = −(Δt/2)∇V, not M q̇ = 0, which would kick the robot by that impulse.
            self.x0 = vi.state_from_configurations(q0 - vi.dt * v0, q0)
            self.u_zero[vi.n_torques :] = q0[vi.idx_k]  # prescribed joints stay where they are
        self.rng = np.random.default_rng(int(p["noise_seed"]))
        self.k, self.end_logged, self.end_publish_time = 0, False, 0.0
        self.counts = dict(rejected_commands=0, saturated_commands=0, ignored_answers=0, conflicting_commands=0)
        self.sources = PublisherSources(float(p["command_conflict_window"]))
        self.timing = CommandTiming(vi.dt)
        self._reset_state()
        self.clock_msg = Clock()
        self.clock_pub = self.create_publisher(Clock, "clock", STREAM_QOS) if p["publish_clock"] else None
        self.sub = self.create_subscription(
            Float64MultiArray, f"{p['controller_name']}/commands", with_message_info(self.on_command), STREAM_QOS
        )
        self.srv = self.create_service(Trigger, "~/reset", self.on_reset)
        if self.vehicle:  # the body's pose and twist are the whole state: odometry is what is published
            self.pub = self.create_publisher(Odometry, "odom", RECORD_QOS)
            self.desc_pub = self.odometer = self.odom_pub = None
        else:
            self.state_msg = JointState(name=r.joint_names)
            self.pub = self.create_publisher(JointState, "joint_states", RECORD_QOS)
            self.desc_pub = self.create_publisher(String, "robot_description", LATCHED_QOS)
            self.desc_pub.publish(String(data=urdf))
            link = odometry_link(r, str(p["odometry_link"]))
            self.odometer = Odometer(r, link) if link else None
            self.odom_pub = self.create_publisher(Odometry, "odom", RECORD_QOS) if link else None
        self.lockstep = p["mode"] == "lockstep"
        self.timer = None
        self.diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", STREAM_QOS)
        self.diag_timer = self._diagnostics_timer(float(p["diagnostics_period"]))
        self.get_logger().info(
            f"{r.name}: nq={vi.nq}, nu={vi.nu}, dt={vi.dt}, mode={p['mode']}, joints={joints}"
            f"{', vehicle mode (odom)' if self.vehicle else ''}"
        )

    def activate(self) -> None:
        self.last_command_time = time.monotonic()
        self.commanded = False  # (brake_until_command: held until a valid command arrives)
        self.command_k, self.timed_out = self.k, False  # (command_timeout: the step of the last valid command)
        self.timing.window(self.k)  # (the paused time is no slow stepping)
        self._start_timer()
        self.publish_state()

    def deactivate(self) -> None:
        self._stop_timer()
        self.u = self.u_zero.copy()  # the safe command: a re-activated simulator applies no stale torque
        self.u[self.vi.n_torques :] = self.x[: self.vi.nq][self.vi.idx_k]
        self.timing.command(None)

    def cleanup(self) -> None:
        self._stop_timer()
        self.destroy_timer(self.diag_timer)
        for e in (self.pub, self.clock_pub, self.desc_pub, self.odom_pub, self.diag_pub):
            if e is not None:
                self.destroy_publisher(e)
        self.destroy_subscription(self.sub)
        self.destroy_service(self.srv)
        self.robot = None

    def _timer_period(self) -> float:
        p = self.p
        return (
            float(p["idle_publish_period"])
            if self.lockstep
            else 1e-3
            if p["max_speed"]
            else self.vi.dt / float(p["real_time_factor"])
        )

    def _start_timer(self) -> None:
        self.timer = self.create_timer(self._timer_period(), self.on_timer)

    def _diagnostics_timer(self, period: float):
        return self.create_timer(period, self.publish_diagnostics, clock=WallClock(clock_type=ClockType.STEADY_TIME))

    def _stop_timer(self) -> None:
        if self.timer is not None:
            self.destroy_timer(self.timer)
            self.timer = None

    def apply_parameter(self, name: str, value) -> str | None:
        if name == "noise_seed" and self.robot is not None:
            self.rng = np.random.default_rng(int(value))
        elif name in ("idle_publish_period", "real_time_factor") and self.active:
            period = self._timer_period()
            self.p[name] = value
            if self._timer_period() != period:  # (each matters in one mode only: _timer_period)
                self._stop_timer()
                self._start_timer()
        elif name == "diagnostics_period" and self.robot is not None:
            self.destroy_timer(self.diag_timer)
            self.diag_timer = self._diagnostics_timer(float(value))
        elif name == "command_conflict_window" and self.robot is not None:
            self.sources.window = float(value)
        elif name == "end_time":
            self.end_logged = False  # an extended run logs its new end
        return None  # position_noise_std and on_bad_command are read from self.p at each use

    def _default_configuration(self) -> np.ndarray:
        """q_0 when ``initial_positions`` is unset: the model's neutral configuration (zeros), for a model with
        holonomic constraints its projection onto them (mechanics.constraints.consistent_state; from zeros, or where
        the constraints' Jacobian vanishes there — a distance constraint at its centre — from 0.1·(1, −1, 1, …)),
        logged."""
        q0 = self.robot.neutral()
        if self.robot.constraints and self.vi.configuration_violation(q0):
            try:
                q0 = consistent_state(self.robot, q0)[: self.vi.nq]
            except RuntimeError:
                q0 = consistent_state(self.robot, 0.1 * (-1.0) ** np.arange(self.vi.nq))[: self.vi.nq]
            self.get_logger().info(
                f"initial_positions unset: zeros projected onto the constraints, q_0 = {np.round(q0, 6).tolist()}"
            )
        return q0

    def _allowed_velocity(self, q0: np.ndarray, v0: np.ndarray) -> np.ndarray:
        """v0, or its projection 𝒫(q0)v0 onto the constraints (Kobilarov2010, eq. 12) with a warning; ValueError with
        on_constraint_violation = 'raise'."""
        vi = self.vi
        viol = vi.velocity_violation(q0, v0)
        if not viol:
            return v0
        what = f"initial_velocities violate the model's velocity constraints (|C(q)q̇|∞ = {viol:.3e})"
        if self.p["on_constraint_violation"] == "raise":
            raise ValueError(f"{what}; give an allowed velocity or set on_constraint_violation:=project")
        v = vi.projector(q0) @ v0
        self.get_logger().warning(f"{what}: projected onto them, q̇_0 = {np.round(v, 6).tolist()}")
        return v

    # ---- simulation --------------------------------------------------------------------------
    def _reset_state(self) -> None:
        self.x, self.u = self.x0.copy(), self.u_zero.copy()
        self.timing.command(None)
        self.last_command_time = time.monotonic()

    def on_reset(self, _req, res):
        if self.robot is None:
            res.success, res.message = False, "not configured"
            return res
        self._reset_state()
        if self.active:
            self.publish_state()
        res.success, res.message = True, "state reset to the initial positions/velocities (the clock runs on)"
        return res

    def on_command(self, msg: Float64MultiArray, info: dict | None = None) -> None:
        if not self.active:
            return
        # (before the lockstep test: two controllers answer each state, and the second answer is dropped there)
        admitted = admit_command(self, self.sources, info, self.counts, self._refused_applies)
        if self.lockstep and not self._answers_this_state(msg):
            return
        u = np.asarray(msg.data, float)
        bad = u.size != self.vi.nu or not np.all(np.isfinite(u))
        if bad or not admitted:
            fallback = self.p["on_bad_command"]
            if fallback == "zero":
                self.u = self.u_zero.copy()
                self.u[self.vi.n_torques :] = self.x[: self.vi.nq][self.vi.idx_k]  # prescribed joints stay put
                self.timing.command(None)
            if bad:  # (a refused publisher's command: admit_command has said why)
                why = f"size {u.size} != {self.vi.nu}" if u.size != self.vi.nu else "NaN/inf entries"
                self.counts["rejected_commands"] += 1
                self.warn(
                    f"bad command {why}",
                    f"rejected command ({why}); applying "
                    f"{'zero' if fallback == 'zero' else 'last'} command {np.round(self.u, 4).tolist()}",
                )
        else:
            self.u = u[self.perm]
            self.commanded = True
            self.timing.command(command_stamp(msg))
            tau, lim = self.u[: self.vi.n_torques], self.robot.effort_limits
            if np.any(np.abs(tau) > lim):  # an actuator saturates; it does not pass on any torque asked for
                self.u[: self.vi.n_torques] = np.clip(tau, -lim, lim)
                self.counts["saturated_commands"] += 1
                self.warn("saturated", "command beyond the effort limits: saturated")
            self.u[: self.vi.n_torques] *= float(self.p["actuator_gain"])  # (the torque the actuator delivers)
            self.command_k = self.k
            if self.timed_out:
                self.timed_out = False
                self.get_logger().info(f"command again at t={self.k * self.vi.dt:.6g} s: brakes released")
        self.last_command_time = time.monotonic()
        if self.lockstep:
            self.advance()

    def _refused_applies(self) -> str:
        return refused_command_fallback(self.p["on_bad_command"], 0.0 if self.lockstep else self.p["command_timeout"])

    def _answers_this_state(self, msg: Float64MultiArray) -> bool:
        """Lockstep: whether a command may step — one that names no state (another tool's), or answers the state the
        simulation is at (``messages.command_stamp``). A controller answers a state again when it is republished
        (its first answer may have been lost), so a second answer can cross the first: stepping on it would apply the
        command of t_k at t_{k+1} (at the pendulum swing-up's first state 4.5e-5 rad off the plan, computed)."""
        stamp = command_stamp(msg)
        now = split_seconds(self.k * self.vi.dt)
        if stamp is None or stamp == now:
            return True
        self.counts["ignored_answers"] += 1
        self.warn(
            "answer to another state",
            lambda: (
                f"command answering the state of t="
                f"{stamp[0] + 1e-9 * stamp[1]:.9g} ignored: the simulation is at t={now[0] + 1e-9 * now[1]:.9g} "
                f"(a second answer to a republished state; {self.counts['ignored_answers']} so far)"
            ),
            level="info",
        )
        return False

    def ended(self) -> bool:
        """True once the simulation time has reached a nonzero ``end_time`` (logged once)."""
        end = float(self.p["end_time"])
        if end <= 0.0 or self.k * self.vi.dt < end - 1e-9 * self.vi.dt:
            return False
        if not self.end_logged:
            self.end_logged = True
            self.get_logger().info(f"end_time {end:g} s reached at step {self.k}: stepping stopped")
        return True

    def on_timer(self) -> None:
        if self.ended():  # commands may keep coming (a controller on its own timer): republish on the period
            if time.monotonic() - self.end_publish_time >= self.p["idle_publish_period"]:
                self.end_publish_time = time.monotonic()
                self.publish_state()
        elif not self.lockstep:
            # max_speed: batches of steps (~5 ms of wall time) between executor rounds, whose overhead
            # would otherwise dominate a step of a few tens of µs; commands are read between batches. A batch
            # ends early when nothing steps (end_time reached, or a failed step: the same x and u fail again).
            end = time.perf_counter() + (5e-3 if self.p["max_speed"] else 0.0)
            stepped = self.advance()
            while stepped and time.perf_counter() < end:
                stepped = self.advance()
        elif time.monotonic() - self.last_command_time >= self.p["idle_publish_period"]:
            self.publish_state()

    def advance(self) -> bool:
        """One step under the current command, published; False if none was taken (end_time, a failed step)."""
        if self.ended():
            return False
        timeout = float(self.p["command_timeout"])
        if not self.lockstep and not self.timed_out and command_timed_out(self.k - self.command_k, self.vi.dt, timeout):
            self.timed_out = True  # the brakes stop the joints where they are: at rest there, as the held state
            self.x = equilibrium_state(self.vi, self.x[: self.vi.nq])
            self.get_logger().warning(
                f"no valid command for {(self.k - self.command_k) * self.vi.dt:.6g} s (command_timeout "
                f"{timeout:g} s) at t={self.k * self.vi.dt:.6g} s: brakes engaged, the joints "
                "held where they are until the next command"
            )
        if self.timed_out or (not self.commanded and self.p["brake_until_command"] and not self.lockstep):
            x_next = self.x  # the brakes hold the joints where they are; the clock runs (a controller on it can start)
        else:
            try:
                x_next = (self.stops or self.vi).step(self.x, self.u, step_index=self.k)
            except (StepError, ValueError) as e:
                self.warn("step failed", f"step {self.k} failed, state held: {e}", level="error")
                return False
        if self.stops is not None and self.stops.active:  # (the text is built only when the throttle logs it)
            self.warn(
                "joint stop",
                lambda: (
                    f"at step {self.k + 1} held by its end stop: "
                    + ", ".join(f"{self.robot.joint_names[i]} at {b:g}" for i, b in self.stops.active)
                ),
                level="info",
            )
        if not self.lockstep:
            self.timing.step(self.k)
        self.x, self.k = x_next, self.k + 1
        self.publish_state()
        return True

    def publish_diagnostics(self) -> None:
        p = self.p
        rtf = None if self.lockstep or p["max_speed"] else float(p["real_time_factor"])
        level, status, values = simulator_diagnostics(
            self.active,
            self.ended(),
            "lockstep" if self.lockstep else "max_speed" if p["max_speed"] else "realtime",
            rtf,
            self.k,
            self.vi.dt,
            self.timing.window(self.k),
            self.timing,
            self.counts,
            self.sources.conflict,
        )
        name = f"{self.get_namespace().rstrip('/')}/{self.get_name()}"
        self.diag_pub.publish(diagnostics(name, self.get_clock().now().to_msg(), level, status, values))

    def publish_state(self) -> None:
        vi = self.vi
        sec, nsec = split_seconds(self.k * vi.dt)
        if self.clock_pub is not None:  # the clock first: a sim-time reader never sees a state from its future
            self.clock_msg.clock.sec, self.clock_msg.clock.nanosec = sec, nsec
            self.clock_pub.publish(self.clock_msg)
        std = float(self.p["position_noise_std"])
        if self.vehicle:
            noise = self.rng.normal(0.0, std, 3) if std > 0 else None
            self.pub.publish(
                odometry_from_state(
                    vi, self.x, self.k * vi.dt, str(self.p["odom_frame"]), str(self.p["base_frame"]), noise
                )
            )
            return
        msg = self.state_msg
        msg.header.stamp.sec, msg.header.stamp.nanosec = sec, nsec
        q = self.x[: vi.nq]
        msg.position = (q + self.rng.normal(0.0, std, vi.nq) if std > 0 else q).tolist()
        # q̇_k = M⁻¹(p_k + (Δt/2)Sτ_g(q_k)) (tracking.wire_velocity): 0 for a pendulum held still, as a real joint
        # reports it; a state estimator turns it back into x_k exactly (tracking.velocity_state; docs/concepts/ros.md).
        msg.velocity = wire_velocity(vi, self.x).tolist()
        effort = np.zeros(vi.nq)
        effort[self.effort_joint_index] = self.u[: vi.n_torques]
        msg.effort = effort.tolist()
        self.pub.publish(msg)
        if self.odometer is not None:
            self.odom_pub.publish(self.odometry_message(msg.header.stamp, q, np.asarray(msg.velocity)))

    def odometry_message(self, stamp, q: np.ndarray, v: np.ndarray) -> Odometry:
        """The odometry link's exact pose and body twist (no noise: the simulator's ground truth)."""
        pos, quat, lin, ang = self.odometer(q, v)
        odom = Odometry()
        odom.header.stamp = stamp
        odom.header.frame_id, odom.child_frame_id = str(self.p["odom_frame"]), self.odometer.link
        pose, twist = odom.pose.pose, odom.twist.twist
        pose.position.x, pose.position.y, pose.position.z = pos.tolist()
        pose.orientation.x, pose.orientation.y, pose.orientation.z, pose.orientation.w = quat.tolist()
        twist.linear.x, twist.linear.y, twist.linear.z = lin.tolist()
        twist.angular.x, twist.angular.y, twist.angular.z = ang.tolist()
        return odom


def main(args: list[str] | None = None) -> None:
    run_node(SimulatorNode, args)


if __name__ == "__main__":
    main()
