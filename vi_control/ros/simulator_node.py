"""Simulator node: a discrete system (the midpoint VI by default) stepped at Δt, effort commands in, JointState out.

Topics: sub ``<controller_name>/commands`` (Float64MultiArray: torques on ``joints``, then next positions of
prescribed joints); pub ``joint_states`` (stamped with simulation time t_k = k·Δt), ``/robot_description``
(latched) and, for a mobile model, ``odom`` (nav_msgs/Odometry of ``odometry_link`` in ``odom_frame``). Service
``~/reset`` (Trigger). Modes: 'realtime' (timer at Δt, or as fast as possible with
``max_speed``) and 'lockstep' (one step per received command).

Vehicle mode (parameter ``vehicle``: a rigid-body YAML, ``ros.vehicle``): the Lie-group VI (seed 002) steps the
body, thruster efforts arrive on the same command topic, and the state goes out as ``nav_msgs/Odometry`` on
``odom`` (pose, body twist) instead of joint states.
"""

from __future__ import annotations

import time

import numpy as np
from nav_msgs.msg import Odometry
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from std_srvs.srv import Trigger

from ..integrators import StepError, make_integrator
from ..model.odometry import Odometer, odometry_link
from .common import (
    LATCHED_QOS,
    MODEL_PARAMETERS,
    RECORD_QOS,
    STREAM_QOS,
    command_joints,
    declare_parameters,
    robot_from_parameters,
    run_node,
)
from .messages import split_seconds
from .vehicle import BASE_FRAME_PARAMETER, VEHICLE_PARAMETERS, odometry_from_state, pose_parameter, vehicle_system

PARAMETERS: dict[str, tuple] = {
    **MODEL_PARAMETERS,
    "dt": (0.01, "time step Δt of the variational integrator [s]"),
    "mode": ("realtime", "'realtime': step on a timer at Δt; 'lockstep': one step per received command"),
    "max_speed": (False, "realtime mode: step as fast as possible instead of every Δt of wall time"),
    "controller_name": ("effort_controller", "commands are read from <controller_name>/commands"),
    "joints": (None, "joint order of the command (default: the model's actuated joints)"),
    "initial_positions": (None, "q_0 in the model's joint order (default zeros)"),
    "initial_velocities": (None, "q̇_0 in the model's joint order (default zeros)"),
    "on_bad_command": ("hold", "NaN or wrong-sized command: 'hold' the last valid one or apply 'zero'"),
    "position_noise_std": (0.0, "standard deviation of Gaussian noise added to published positions [rad or m]"),
    "noise_seed": (0, "seed of the measurement noise"),
    "mass_scale": (1.0, "multiply every link mass and inertia (model mismatch against planner/controller)"),
    "idle_publish_period": (0.2, "lockstep: republish the current state when no command came for this long [s]"),
    "odometry_link": ("", "link published as nav_msgs/Odometry on `odom`: '' = the chassis of a mobile model "
                          "(nonholonomic constraints or a floating base: its first link with mass), 'none' = off"),
    "odom_frame": ("odom", "frame_id of the odometry (the world frame of the simulation)"),
    **VEHICLE_PARAMETERS,
    **BASE_FRAME_PARAMETER,
    "initial_pose": (None, "vehicle mode: g_0 as [x, y, z, qx, qy, qz, qw] (default identity)"),
    "initial_twist": (None, "vehicle mode: body twist ξ_0 = (ω, v) (default rest)"),
    "drag_scale": (1.0, "vehicle mode: multiply the drag (model mismatch; mass_scale keeps the trim)"),
}


class SimulatorNode(Node):
    def __init__(self) -> None:
        super().__init__("vi_simulator")
        p = self.p = declare_parameters(self, PARAMETERS)
        vehicle = vehicle_system(p, float(p["dt"]), float(p["mass_scale"]), float(p["drag_scale"]))
        self.vehicle = vehicle is not None
        if self.vehicle:
            self.robot, self.vi = vehicle
        else:
            self.robot, urdf = robot_from_parameters(p, mass_scale=float(p["mass_scale"]))
            self.vi = make_integrator(p["integrator"], self.robot, float(p["dt"]))
        r, vi = self.robot, self.vi
        joints = command_joints(p, r)
        # command index -> input index: torques reordered to vi's actuated order, prescribed positions after.
        self.perm = np.array([joints.index(n) for n in r.actuated] + list(range(len(joints), vi.nu)), int)
        self.u_zero = np.zeros(vi.nu)
        if self.vehicle:
            twist = np.asarray(p["initial_twist"] or np.zeros(vi.dim), float)
            self.x0 = vi.state_from_pose(pose_parameter(vi, p["initial_pose"], "initial_pose"), twist)
        else:
            self.effort_joint_index = [r.joint_index(n) for n in r.actuated]
            q0 = np.asarray(p["initial_positions"] or np.zeros(vi.nq), float)
            v0 = np.asarray(p["initial_velocities"] or np.zeros(vi.nq), float)
            # The discrete state a sampled trajectory shows (as the planner's Task.start_state): at rest under
            # gravity p = −(Δt/2)∇V, not M q̇ = 0, which would kick the robot by that impulse.
            self.x0 = vi.state_from_configurations(q0 - vi.dt * v0, q0)
            self.u_zero[vi.n_torques:] = q0[vi.idx_k]  # prescribed joints stay where they are
        self.rng = np.random.default_rng(int(p["noise_seed"]))
        self._reset_state()

        if self.vehicle:  # the body's pose and twist are the state: published by publish_state
            self.pub, self.odometer = self.create_publisher(Odometry, "odom", RECORD_QOS), None
        else:
            self.pub = self.create_publisher(JointState, "joint_states", RECORD_QOS)
            link = odometry_link(r, str(p["odometry_link"]))
            self.odometer = Odometer(r, link) if link else None
            self.odom_pub = self.create_publisher(Odometry, "odom", RECORD_QOS) if link else None
            self.create_publisher(String, "/robot_description", LATCHED_QOS).publish(String(data=urdf))
        self.create_subscription(Float64MultiArray, f"{p['controller_name']}/commands", self.on_command, STREAM_QOS)
        self.create_service(Trigger, "~/reset", self.on_reset)
        self.lockstep = p["mode"] == "lockstep"
        if p["mode"] not in ("lockstep", "realtime"):
            raise ValueError(f"mode must be 'realtime' or 'lockstep', got {p['mode']!r}")
        period = float(p["idle_publish_period"]) if self.lockstep else (1e-3 if p["max_speed"] else vi.dt)
        self.create_timer(period, self.on_timer)
        self.get_logger().info(f"{r.name}: nq={vi.nq}, nu={vi.nu}, dt={vi.dt}, mode={p['mode']}, joints={joints}"
                               f"{', vehicle mode (odom)' if self.vehicle else ''}")
        self.publish_state()

    def _reset_state(self) -> None:
        self.x, self.k, self.u = self.x0.copy(), 0, self.u_zero.copy()
        self.last_command_time = self.get_clock().now()

    def on_reset(self, _req, res):
        self._reset_state()
        self.publish_state()
        res.success, res.message = True, "state reset to the initial positions/velocities"
        return res

    def on_command(self, msg: Float64MultiArray) -> None:
        u = np.asarray(msg.data, float)
        if u.size != self.vi.nu or not np.all(np.isfinite(u)):
            why = f"size {u.size} != {self.vi.nu}" if u.size != self.vi.nu else "NaN/inf entries"
            fallback = self.p["on_bad_command"]
            if fallback == "zero":
                self.u = self.u_zero.copy()
                self.u[self.vi.n_torques:] = self.x[: self.vi.nq][self.vi.idx_k]  # prescribed joints stay put
            self.get_logger().warning(f"rejected command ({why}); applying {'zero' if fallback == 'zero' else 'last'}"
                                      f" command {np.round(self.u, 4).tolist()}")
        else:
            self.u = u[self.perm]
            tau, lim = self.u[: self.vi.n_torques], self.robot.effort_limits
            if np.any(np.abs(tau) > lim):  # an actuator saturates; it does not pass on any torque asked for
                self.u[: self.vi.n_torques] = np.clip(tau, -lim, lim)
                self.get_logger().warning("command beyond the effort limits: saturated", throttle_duration_sec=2.0)
        self.last_command_time = self.get_clock().now()
        if self.lockstep:
            self.advance()

    def on_timer(self) -> None:
        if not self.lockstep:
            # max_speed: batches of steps (~5 ms of wall time) between executor rounds, whose overhead
            # would otherwise dominate a step of a few tens of µs; commands are read between batches.
            end = time.perf_counter() + (5e-3 if self.p["max_speed"] else 0.0)
            self.advance()
            while time.perf_counter() < end:
                self.advance()
        elif (self.get_clock().now() - self.last_command_time).nanoseconds * 1e-9 >= self.p["idle_publish_period"]:
            self.publish_state()

    def advance(self) -> None:
        try:
            x_next = self.vi.step(self.x, self.u, step_index=self.k)
        except (StepError, ValueError) as e:
            self.get_logger().error(f"step {self.k} failed, state held: {e}")
            return
        self.x, self.k = x_next, self.k + 1
        self.publish_state()

    def publish_state(self) -> None:
        vi = self.vi
        std = float(self.p["position_noise_std"])
        if self.vehicle:
            noise = self.rng.normal(0.0, std, 3) if std > 0 else None
            self.pub.publish(odometry_from_state(vi, self.x, self.k * vi.dt, self.p["odom_frame"],
                                                 self.p["base_frame"], noise))
            return
        msg = JointState()
        msg.header.stamp.sec, msg.header.stamp.nanosec = split_seconds(self.k * vi.dt)
        msg.name = self.robot.joint_names
        q = self.x[: vi.nq]
        msg.position = (q + self.rng.normal(0.0, std, vi.nq) if std > 0 else q).tolist()
        msg.velocity = vi.velocity(self.x).tolist()
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
