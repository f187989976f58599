"""What the controller node reports and checks besides its control law: joint-state sanity against the model's
limits, the JTC-style ``~/controller_state`` message and its ``/diagnostics`` status."""

from __future__ import annotations

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from ..model.robot import RobotModel, wrap_angle
from .messages import split_seconds

# ~/controller_state is a trajectory_msgs/JointTrajectory whose four points are, in this order (control_msgs'
# JointTrajectoryControllerState is not installable here; the fields are the same):
STATE_POINTS = ("reference", "feedback", "error", "output")


class JointLimits:
    """Bounds a measured joint state must respect: the URDF position limits widened by ``position_margin``
    (joint units), ``max_continuous_position`` on continuous joints (a multi-turn count, not a limit), and
    ``velocity_factor`` × the URDF velocity limit (``max_velocity`` where the URDF gives none)."""

    def __init__(self, robot: RobotModel, position_margin: float, max_continuous_position: float,
                 velocity_factor: float, max_velocity: float):
        self.names = robot.joint_names
        lo = np.array([j.lower for j in robot.joints], float) - position_margin
        hi = np.array([j.upper for j in robot.joints], float) + position_margin
        cont = robot.continuous_mask | ~np.isfinite(lo) | ~np.isfinite(hi)
        self.lo = np.where(cont, -max_continuous_position, lo)
        self.hi = np.where(cont, max_continuous_position, hi)
        vlim = np.array([j.velocity_limit for j in robot.joints], float)
        self.vmax = np.where(np.isfinite(vlim) & (vlim > 0), velocity_factor * vlim, max_velocity)

    def check(self, q: np.ndarray, qdot: np.ndarray | None) -> str | None:
        """Why (q, q̇) cannot be a measurement of this robot, or None."""
        bad = (q < self.lo) | (q > self.hi)
        if bad.any():
            j = int(np.argmax(bad))
            return f"position of {self.names[j]} = {q[j]:.6g} outside [{self.lo[j]:.6g}, {self.hi[j]:.6g}]"
        if qdot is not None:
            bad = np.abs(qdot) > self.vmax
            if bad.any():
                j = int(np.argmax(bad))
                return f"velocity of {self.names[j]} = {qdot[j]:.6g} beyond ±{self.vmax[j]:.6g}"
        return None


class ControllerStateMessage:
    """The preallocated ``~/controller_state`` message: reference, feedback, error and output per joint."""

    def __init__(self, robot: RobotModel, input_joints: list[int]):
        nq = robot.nq
        self.msg = JointTrajectory(joint_names=robot.joint_names,
                                   points=[JointTrajectoryPoint() for _ in STATE_POINTS])
        self.mask = robot.continuous_mask
        self.input_joints = input_joints
        self._effort = np.zeros(nq)
        self._zeros = [0.0] * nq

    def fill(self, stamp: float, k: int, dt: float, q_ref, qdot_ref, u_ref, q, qdot, u) -> JointTrajectory:
        m = self.msg
        m.header.stamp.sec, m.header.stamp.nanosec = split_seconds(stamp)
        ref, fb, err, out = m.points
        e = q_ref - q
        e[self.mask] = wrap_angle(e[self.mask])
        ref.positions, ref.velocities, ref.effort = q_ref.tolist(), qdot_ref.tolist(), self._efforts(u_ref)
        fb.positions, fb.velocities = q.tolist(), qdot.tolist()
        err.positions, err.velocities = e.tolist(), (qdot_ref - qdot).tolist()
        out.effort = self._efforts(u)
        sec, nsec = split_seconds(k * dt)
        ref.time_from_start.sec, ref.time_from_start.nanosec = sec, nsec
        return m

    def _efforts(self, u: np.ndarray) -> list[float]:
        self._effort[:] = 0.0
        self._effort[self.input_joints] = u[: len(self.input_joints)]
        return self._effort.tolist()


def diagnostics(name: str, stamp, level: int, message: str, values: dict) -> DiagnosticArray:
    """A DiagnosticArray with one status (what rqt_robot_monitor and the aggregator read)."""
    status = DiagnosticStatus(level=bytes([level]), name=name, message=message, hardware_id=name,
                              values=[KeyValue(key=k, value=str(v)) for k, v in values.items()])
    out = DiagnosticArray(status=[status])
    out.header.stamp = stamp
    return out


OK, WARN, ERROR = (int.from_bytes(b, "little") for b in (DiagnosticStatus.OK, DiagnosticStatus.WARN,
                                                         DiagnosticStatus.ERROR))
