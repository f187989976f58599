"""Vehicle mode of the three nodes: a rigid body (``model.rigid_body``) stepped by ``LieGroupVI`` (Jimenez2013).

What changes at the edges in vehicle mode (the ``vehicle`` parameter names a rigid-body YAML): the state travels as
``nav_msgs/Odometry`` on ``odom`` (pose in ``odom_frame``; twist in the body frame ``base_frame``, the nav_msgs
convention, so the body twist ξ = (ω, v) of the integrator is the message's angular and linear twist), goals arrive
as ``geometry_msgs/PoseStamped`` on the planner's ``~/goal``, plans are drawn as ``nav_msgs/Path``. Commands stay
``std_msgs/Float64MultiArray`` (one effort per thruster in the ``joints`` order) and plans the same binary Plan
message (nx, ndx carried separately). Everything else is the nodes' joint-space code, through the DiscreteSystem
protocol.
"""

from __future__ import annotations

import numpy as np
from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import Odometry, Path

from ..integrators import make_integrator
from ..integrators.lie_group import LieGroupVI
from ..mechanics.groups import quaternion_from_rotation, rotation_from_quaternion
from ..model.rigid_body import RigidBodyModel, load_rigid_body
from .common import Param
from .messages import split_seconds, stamp_seconds

VEHICLE_PARAMETERS: dict[str, Param] = {
    "vehicle": Param(
        "",
        "vehicle mode: a rigid-body YAML (path, or name in config/, e.g. vehicle_uuv) stepped by "
        "the Lie-group VI; empty: joint mode (the model parameters)",
    ),
    "retraction": Param(
        "cayley", "vehicle mode: retraction τ of the Lie-group VI (Jimenez2013, §5)", choices=("cayley", "exp")
    ),
}
# The simulator declares `odom_frame` for every mobile model (its joint mode publishes odometry too).
ODOM_FRAME_PARAMETER: dict[str, Param] = {
    "odom_frame": Param(
        "odom", "frame_id of the odometry (the world frame of the simulation); vehicle-mode goals must be given in it"
    ),
}
BASE_FRAME_PARAMETER: dict[str, Param] = {
    "base_frame": Param("base_link", "vehicle mode: child_frame_id of the odometry (the body frame of the twist)"),
}
# The error components a vehicle-mode controller reports (τ⁻¹(g_ref⁻¹g): rotation, then position).
POSE_ERROR_NAMES = ("rotation_x", "rotation_y", "rotation_z", "x", "y", "z")


def vehicle_system(
    p: dict, dt: float, mass_scale: float = 1.0, drag_scale: float = 1.0
) -> tuple[RigidBodyModel, LieGroupVI] | None:
    """(body, Lie-group VI) when the ``vehicle`` parameter is set, else None (joint mode)."""
    if not p.get("vehicle"):
        return None
    if p.get("integrator", "midpoint") != "midpoint":  # (the joint-mode default; a vehicle has one integrator)
        raise ValueError(f"parameter integrator={p['integrator']!r}: a vehicle is stepped by the Lie-group VI")
    body = load_rigid_body(p["vehicle"], mass_scale=mass_scale, drag_scale=drag_scale)
    return body, make_integrator("lie_group", body, dt, retraction=p.get("retraction", "cayley"))


def _pose_matrix(vi: LieGroupVI, position, quaternion) -> np.ndarray:
    R = rotation_from_quaternion(np.asarray(quaternion, float), normalize_tol=1e-6)
    if vi.group.name == "SO3":
        return R
    g = np.eye(4)
    g[:3, :3], g[:3, 3] = R, np.asarray(position, float)
    return g


def pose_parameter(vi: LieGroupVI, values, key: str) -> np.ndarray:
    """A group element from a parameter [x, y, z, qx, qy, qz, qw] (empty: identity); ValueError naming ``key``."""
    if not values:
        return vi.group.identity()
    v = np.asarray(values, float)
    if v.shape != (7,) or not np.all(np.isfinite(v)):
        raise ValueError(f"parameter {key}: expected [x, y, z, qx, qy, qz, qw], got {list(values)}")
    try:
        return _pose_matrix(vi, v[:3], v[3:])
    except ValueError as e:
        raise ValueError(f"parameter {key}: {e}") from None


def odometry_from_state(
    vi: LieGroupVI, x: np.ndarray, t: float, frame: str, child: str, position_noise: np.ndarray | None = None
) -> Odometry:
    """nav_msgs/Odometry of a state: pose of g (rotation as a unit quaternion), body twist ξ = 𝕀⁻¹ν."""
    msg = Odometry()
    msg.header.stamp.sec, msg.header.stamp.nanosec = split_seconds(t)
    msg.header.frame_id, msg.child_frame_id = frame, child
    g = vi.pose(x)
    R = g[:3, :3]
    p = g[:3, 3] if vi.group.name == "SE3" else np.zeros(3)
    if position_noise is not None:
        p = p + position_noise
    q = quaternion_from_rotation(R)
    pose = msg.pose.pose
    pose.position.x, pose.position.y, pose.position.z = (float(a) for a in p)
    pose.orientation.x, pose.orientation.y, pose.orientation.z, pose.orientation.w = (float(a) for a in q)
    xi = vi.velocity(x)
    tw = msg.twist.twist
    tw.angular.x, tw.angular.y, tw.angular.z = (float(a) for a in xi[:3])
    if vi.group.name == "SE3":
        tw.linear.x, tw.linear.y, tw.linear.z = (float(a) for a in xi[3:])
    return msg


def state_from_odometry(vi: LieGroupVI, msg: Odometry) -> tuple[float, np.ndarray]:
    """(stamp, x = (g, 𝕀ξ)) of an Odometry message; ValueError naming a non-finite or non-unit field."""
    pose, tw = msg.pose.pose, msg.twist.twist
    p = [pose.position.x, pose.position.y, pose.position.z]
    q = [pose.orientation.x, pose.orientation.y, pose.orientation.z, pose.orientation.w]
    xi = [tw.angular.x, tw.angular.y, tw.angular.z] + (
        [tw.linear.x, tw.linear.y, tw.linear.z] if vi.group.name == "SE3" else []
    )
    if not (np.all(np.isfinite(p)) and np.all(np.isfinite(xi))):
        raise ValueError("odometry position or twist contains NaN/inf")
    try:
        g = _pose_matrix(vi, p, q)
    except ValueError as e:
        raise ValueError(f"odometry orientation: {e}") from None
    return stamp_seconds(msg), vi.state_from_pose(g, np.asarray(xi, float))


def goal_from_pose_stamped(vi: LieGroupVI, msg: PoseStamped, frame: str) -> np.ndarray:
    """The goal pose of a PoseStamped; ValueError for a foreign frame, NaN or a non-unit quaternion."""
    if msg.header.frame_id and frame and msg.header.frame_id != frame:
        raise ValueError(f"goal frame {msg.header.frame_id!r} is not the odometry frame {frame!r}")
    pose = msg.pose
    p = [pose.position.x, pose.position.y, pose.position.z]
    if not np.all(np.isfinite(p)):
        raise ValueError("goal position contains NaN/inf")
    try:
        return _pose_matrix(vi, p, [pose.orientation.x, pose.orientation.y, pose.orientation.z, pose.orientation.w])
    except ValueError as e:
        raise ValueError(f"goal orientation: {e}") from None


def path_from_plan(vi: LieGroupVI, X: np.ndarray, t0: float, frame: str) -> Path:
    """nav_msgs/Path of the planned poses (RViz draws it in ``frame`` without TF)."""
    msg = Path()
    msg.header.frame_id = frame
    msg.header.stamp.sec, msg.header.stamp.nanosec = split_seconds(t0)
    for k, x in enumerate(X):
        o = odometry_from_state(vi, x, t0 + k * vi.dt, frame, "")
        ps = PoseStamped()
        ps.header = o.header
        ps.pose = o.pose.pose
        msg.poses.append(ps)
    return msg


def actuator_velocities(body: RigidBodyModel, vi: LieGroupVI, x: np.ndarray) -> np.ndarray:
    """Bᵀξ: each actuator's velocity along its own direction (the conjugate of its effort), for damping −d·Bᵀξ."""
    return body.input_matrix.T @ vi.velocity(x)
