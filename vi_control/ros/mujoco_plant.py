"""MuJoCo plant node (``vi_mujoco_plant``): an independent simulation of the robot, stepped at 1 ms in wall-clock time,
driven and read as ros2_control drives and reads a real arm.

The robot is the one the other nodes load (the same model parameters and resolver), compiled by MuJoCo's own URDF
compiler (``mujoco_model``): nothing of the project's mechanics steps it. Conventions, as ros2_control's:

- commands: ``<controller_name>/commands`` (std_msgs/Float64MultiArray), one torque per actuated joint in the order
  of ``joints`` (default: the model's actuated joints), as ``effort_controllers/JointGroupEffortController`` takes
  them: zero-order hold until the next command; clamped to the URDF/YAML effort limits; a command of the wrong size
  or with NaN/inf entries is logged and ignored (``on_bad_command``: keep the last valid one, or zero), and so is
  every command while two publishers command within ``command_conflict_window`` (two controllers on one arm);
- state: ``joint_states`` (sensor_msgs/JointState) at ``joint_state_rate`` as ``joint_state_broadcaster`` publishes
  it: every joint of the model, position, MuJoCo's instantaneous velocity qvel, and the applied effort, stamped with
  the node's clock at the time of the step that produced it (not at publication).

A dedicated thread steps the model: each step at its wall-clock deadline (time.monotonic). After a stall (the
process descheduled) it catches up — physics does not pause while a driver is late: the steps due are taken back to
back, their states published with their own stamps — up to ``MAX_LAG``; the plant time beyond that is skipped
(counted and logged). Stamps are the steps' deadlines on the node's clock (one offset between the two clocks, taken
at activation): strictly increasing, however the thread is preempted between reading one clock and the other.
A lifecycle node (``managed.ManagedNode``): inactive = not stepping. Fault injection for tests: the live parameter
``publish_joint_states`` (false: the plant runs on but publishes no joint states — stale states for a controller),
and ``brake_until_command`` (joints locked at their initial positions until the first valid command, as a real
arm's brakes until its controller starts).
"""

from __future__ import annotations

import threading
import time

import numpy as np
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from .common import (
    MODEL_PARAMETERS,
    RECORD_QOS,
    STREAM_QOS,
    Param,
    command_joints,
    command_timed_out,
    realtime_scheduling,
    run_node,
    with_message_info,
)
from .managed import AUTOSTART, ManagedNode
from .mujoco_model import INTEGRATORS, mujoco_robot
from .simulator_parameters import PARAMETERS as SIMULATOR_PARAMETERS
from .supervision import PublisherSources, admit_command, refused_command_fallback

MAX_LAG = 0.2  # [s] of wall time the stepping thread catches up after a stall; beyond it the plant time skips

PARAMETERS: dict[str, Param] = {
    **{k: v for k, v in MODEL_PARAMETERS.items() if k != "integrator"},
    "dt": Param(0.001, "MuJoCo time step, stepped in wall-clock time [s]", range=(1e-4, 0.1)),
    "mujoco_integrator": Param(
        "RK4", "MuJoCo's integrator (RK4: 4th order; Euler: semi-implicit; implicitfast)", choices=INTEGRATORS
    ),
    **{
        k: SIMULATOR_PARAMETERS[k]
        for k in ("controller_name", "joints", "initial_velocities", "on_bad_command", "command_conflict_window")
    },
    "initial_positions": Param(
        None, "q_0 in the model's joint order (default: the model's neutral configuration, zeros)", array="double"
    ),
    "gravity": Param(True, "the model's gravity (its system YAML); false: none"),
    "joint_limits": Param(True, "the URDF position limits as MuJoCo's joint-limit constraints (soft end stops)"),
    "joint_state_rate": Param(
        500.0,
        "joint_states rate [Hz] (joint_state_broadcaster's publish rate); rounded to a whole number of steps",
        range=(0.1, 10000.0),
    ),
    "publish_joint_states": Param(
        True,
        "fault injection: false pauses the joint_states publication while the plant "
        "keeps stepping (stale joint states for a controller)",
        live=True,
    ),
    "brake_until_command": Param(
        False, "hold every joint at its initial position (brakes) until the first valid command arrives"
    ),
    "command_timeout": Param(
        0.0,
        "when no valid command has come for this long in plant time, the brakes engage (the joints held at rest "
        "where they are), as a real arm's driver stops when its controller does; the next valid command releases "
        "them [s]. 0: the last command stays applied (JointGroupEffortController)",
        range=(0.0, 1e6),
        live=True,
    ),
    "realtime_priority": Param(
        0,
        "while active, every thread of the process runs SCHED_FIFO at this priority "
        "(1…99), as the controller's parameter of this name — a plant beside a SCHED_FIFO "
        "controller needs it or it stalls; 0: normal scheduling. Refused by the OS: a "
        "warning",
        range=(0, 99),
    ),
    **AUTOSTART,
}


class MujocoPlantNode(ManagedNode):
    PARAMETERS = PARAMETERS

    def __init__(self) -> None:
        self.robot, self._thread = None, None
        self._stop = threading.Event()
        super().__init__("vi_mujoco_plant")

    # ---- lifecycle ---------------------------------------------------------------------------
    def configure(self) -> None:
        import mujoco

        p = self.p
        if self.get_parameter("use_sim_time").value:
            raise ValueError("use_sim_time must be false for the plant: it runs in wall-clock time")
        self.robot, _ = self.load_robot()
        r = self.robot
        self.mj = mujoco_robot(r, float(p["dt"]), p["mujoco_integrator"], bool(p["gravity"]), bool(p["joint_limits"]))
        joints = command_joints(p, r)
        self.perm = np.array([joints.index(n) for n in r.actuated], int)  # command entry of each actuated joint
        q0 = np.asarray(p["initial_positions"] or r.neutral(), float)
        v0 = np.asarray(p["initial_velocities"] or np.zeros(r.nq), float)
        if q0.shape != (r.nq,) or v0.shape != (r.nq,) or not np.all(np.isfinite(np.r_[q0, v0])):
            raise ValueError(f"initial_positions/initial_velocities need {r.nq} finite entries ({r.joint_names})")
        self.q0, self.v0 = q0, v0
        self.data = self.mj.data(q0, v0)
        self.mujoco = mujoco
        self.limits = r.effort_limits
        self.u = np.zeros(len(r.actuated))  # the torques applied, in the model's actuated order (zero-order hold)
        self.braked = bool(p["brake_until_command"])
        self.brake_q = q0  # (where the brakes hold the joints: the start, or where a command timeout found them)
        self.command_k, self.timed_out = 0, False  # (command_timeout: the step of the last valid command)
        # on_command (the executor) and the stepping thread each test-and-set the brakes: under one lock, a command
        # that arrives while the timeout engages them cannot be followed by brakes on until the next command
        self._brakes = threading.Lock()
        self.every = max(1, round(1.0 / (float(p["joint_state_rate"]) * float(p["dt"]))))
        self.k = 0
        self.counts = dict(rejected_commands=0, saturated_commands=0, skipped_steps=0, conflicting_commands=0)
        self.sources = PublisherSources(float(p["command_conflict_window"]))
        self.msg = JointState(name=r.joint_names)
        self.effort = np.zeros(r.nq)
        self.act_index = np.array([r.joint_index(n) for n in r.actuated], int)
        self.pub = self.create_publisher(JointState, "joint_states", RECORD_QOS)
        self.sub = self.create_subscription(
            Float64MultiArray, f"{p['controller_name']}/commands", with_message_info(self.on_command), STREAM_QOS
        )
        self.get_logger().info(
            f"{r.name}: MuJoCo {mujoco.__version__} plant, nq={r.nq}, dt={p['dt']}, "
            f"{p['mujoco_integrator']}, joint states every {self.every} steps, commands "
            f"{joints}{', braked until the first command' if self.braked else ''}"
        )

    def activate(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="mujoco_plant", daemon=True)
        self._thread.start()  # before the scheduling change, which applies to the threads that exist
        self._set_scheduling(int(self.p["realtime_priority"]))

    def deactivate(self) -> None:
        self._halt()
        self._set_scheduling(0)

    def cleanup(self) -> None:
        self._halt()
        self.destroy_publisher(self.pub)
        self.destroy_subscription(self.sub)
        self.robot = None

    def destroy_node(self) -> None:
        self._halt()  # (rclpy does not deactivate a lifecycle node it destroys: the thread must not outlive it)
        super().destroy_node()

    def apply_parameter(self, name: str, value) -> str | None:
        if name == "command_conflict_window" and self.robot is not None:
            self.sources.window = float(value)
        if name == "publish_joint_states":
            self.get_logger().info(f"joint_states publication {'resumed' if value else 'paused (fault injection)'}")
            return None
        return super().apply_parameter(name, value)

    def _halt(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)
            self._thread = None

    def _set_scheduling(self, priority: int) -> None:
        why = realtime_scheduling(priority)
        if why:
            self.get_logger().warning(f"realtime_priority {priority}: {why}; running with normal scheduling")

    # ---- commands ----------------------------------------------------------------------------
    def on_command(self, msg: Float64MultiArray, info: dict | None = None) -> None:
        """JointGroupEffortController's convention: one torque per joint of ``joints``; a bad command is ignored, and
        so is every command while two publishers command (``command_conflict_window``)."""
        u = np.asarray(msg.data, float)
        n = len(self.u)
        if not admit_command(self, self.sources, info, self.counts, self._refused_applies):
            if self.p["on_bad_command"] == "zero":
                self.u = np.zeros(n)
            return
        if u.size != n or not np.all(np.isfinite(u)):
            why = f"size {u.size} != {n}" if u.size != n else "NaN/inf entries"
            self.counts["rejected_commands"] += 1
            if self.p["on_bad_command"] == "zero":
                self.u = np.zeros(n)
            self.warn(
                "bad command",
                f"rejected command ({why}); applying the {self.p['on_bad_command']} command "
                f"{np.round(self.u, 4).tolist()}",
            )
            return
        u = u[self.perm]
        if np.any(np.abs(u) > self.limits):
            u = np.clip(u, -self.limits, self.limits)
            self.counts["saturated_commands"] += 1
            self.warn("saturated", "command beyond the effort limits: saturated")
        with self._brakes:
            self.u = u  # (one reference assignment: the stepping thread reads either the old or the new array)
            self.command_k = self.k
            released, again = self.braked, self.timed_out
            self.braked = self.timed_out = False
        if released:
            self.get_logger().info("command again: brakes released" if again else "first command: brakes released")

    def _refused_applies(self) -> str:
        return refused_command_fallback(self.p["on_bad_command"], self.p["command_timeout"])

    # ---- stepping ----------------------------------------------------------------------------
    def _clock_offset(self) -> int:
        """The node's clock minus time.monotonic() [ns], from the tightest of a few bracketed readings."""
        best = None
        for _ in range(5):
            before = time.monotonic_ns()
            now = self.get_clock().now().nanoseconds
            after = time.monotonic_ns()
            if best is None or after - before < best[0]:
                best = (after - before, now - (before + after) // 2)
        return best[1]

    def _run(self) -> None:
        m, d, mj = self.mj.model, self.data, self.mujoco
        dt = m.opt.timestep
        self.offset_ns = self._clock_offset()
        deadline = time.monotonic()
        self._publish(deadline)
        while not self._stop.is_set():
            deadline += dt
            lag = time.monotonic() - deadline
            if lag < 0:
                self._stop.wait(-lag)
            elif lag > MAX_LAG:  # a stall (the process descheduled): resume from now, the time in between is lost
                skipped = int(lag / dt)
                deadline += skipped * dt
                self.counts["skipped_steps"] += skipped
                self.warn(
                    "stall",
                    f"stepping stalled {1e3 * lag:.1f} ms: {skipped} steps of plant time skipped "
                    f"({self.counts['skipped_steps']} so far; up to {1e3 * MAX_LAG:g} ms are caught up); set "
                    "realtime_priority beside a real-time controller",
                )
            timeout = float(self.p["command_timeout"])
            with self._brakes:
                engaged = not self.braked and command_timed_out(self.k - self.command_k, dt, timeout)
                if engaged:
                    self.brake_q, self.timed_out, self.braked = d.qpos[self.mj.qadr].copy(), True, True
            if engaged:
                self.get_logger().warning(
                    f"no valid command for {(self.k - self.command_k) * dt:.6g} s (command_timeout "
                    f"{timeout:g} s): brakes engaged, the joints held where they are until "
                    "the next command"
                )
            if self.braked:
                d.qpos[self.mj.qadr], d.qvel[:] = self.brake_q, 0.0
                mj.mj_forward(m, d)
            else:
                d.qfrc_applied[self.mj.act_dof] = self.u
                mj.mj_step(m, d)
            self.k += 1
            if self.k % self.every == 0 and self.p["publish_joint_states"]:
                self._publish(deadline)

    def _publish(self, at: float) -> None:
        """The current state, stamped with the node's clock at the monotonic time ``at`` of its step."""
        msg, d, mj = self.msg, self.data, self.mj
        ns = self.offset_ns + round(1e9 * at)
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(ns, 1_000_000_000)
        msg.position = d.qpos[mj.qadr].tolist()
        msg.velocity = d.qvel[mj.dadr].tolist()
        self.effort[self.act_index] = 0.0 if self.braked else d.qfrc_applied[mj.act_dof]
        msg.effort = self.effort.tolist()
        self.pub.publish(msg)


def main(args: list[str] | None = None) -> None:
    run_node(MujocoPlantNode, args)


if __name__ == "__main__":
    main()
