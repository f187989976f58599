"""Vehicle mode's message conversions (vi_control.ros.vehicle) without DDS: Odometry ↔ state on the UUV (SE(3)),
against SciPy's quaternions and the state's own pose and twist; the goal, the pose parameter, the planned path and
the actuators' velocities; every refusal at its boundary (a quaternion off unit length by just under and just over
the accepted 1e-6, NaN, a foreign frame, a parameter of the wrong length)."""

import numpy as np
import pytest

pytest.importorskip("rclpy")

from geometry_msgs.msg import PoseStamped  # noqa: E402
from scipy.spatial.transform import Rotation  # noqa: E402

from vi_control.ros.vehicle import (  # noqa: E402
    actuator_velocities,
    goal_from_pose_stamped,
    odometry_from_state,
    path_from_plan,
    pose_parameter,
    state_from_odometry,
    vehicle_system,
)


@pytest.fixture(scope="module")
def uuv():
    return vehicle_system({"vehicle": "vehicle_uuv"}, 0.1)


def _state(vi, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    g = np.eye(4)
    g[:3, :3] = Rotation.random(random_state=seed).as_matrix()
    g[:3, 3] = rng.normal(size=3)
    return vi.state_from_pose(g, rng.normal(size=6))


@pytest.mark.parametrize("seed", range(4))
def test_odometry_carries_the_pose_and_the_body_twist(uuv, seed):
    _, vi = uuv
    x = _state(vi, seed)
    g, xi = vi.pose(x), vi.velocity(x)
    msg = odometry_from_state(vi, x, 12.345678901, "odom", "base_link")
    o = msg.pose.pose.orientation
    quat = np.array([o.x, o.y, o.z, o.w])
    ref = Rotation.from_matrix(g[:3, :3]).as_quat()  # (x, y, z, w)
    assert min(np.abs(quat - ref).max(), np.abs(quat + ref).max()) < 1e-12
    p = msg.pose.pose.position
    assert np.allclose([p.x, p.y, p.z], g[:3, 3], rtol=0, atol=1e-15)
    tw = msg.twist.twist
    assert np.allclose(
        [tw.angular.x, tw.angular.y, tw.angular.z, tw.linear.x, tw.linear.y, tw.linear.z], xi, atol=1e-15
    )
    assert (msg.header.frame_id, msg.child_frame_id) == ("odom", "base_link")
    t, back = state_from_odometry(vi, msg)
    assert abs(t - 12.345678901) < 1e-6
    assert np.allclose(vi.pose(back), g, rtol=0, atol=1e-12) and np.allclose(vi.velocity(back), xi, atol=1e-12)


def test_odometry_refusals_at_their_boundaries(uuv):
    _, vi = uuv
    msg = odometry_from_state(vi, _state(vi, 0), 1.0, "odom", "base_link")
    o = msg.pose.pose.orientation
    unit = (o.x, o.y, o.z, o.w)
    for scale, accepted in ((1 + 0.5e-6, True), (1 + 2e-6, False)):  # (normalize_tol 1e-6 on |q|)
        o.x, o.y, o.z, o.w = (scale * c for c in unit)
        if accepted:
            state_from_odometry(vi, msg)
        else:
            with pytest.raises(ValueError, match="odometry orientation"):
                state_from_odometry(vi, msg)
    o.x, o.y, o.z, o.w = unit
    msg.twist.twist.linear.y = float("nan")
    with pytest.raises(ValueError, match="NaN/inf"):
        state_from_odometry(vi, msg)
    msg.twist.twist.linear.y = 0.0
    msg.pose.pose.position.z = float("inf")
    with pytest.raises(ValueError, match="NaN/inf"):
        state_from_odometry(vi, msg)


def test_goal_and_pose_parameter(uuv):
    _, vi = uuv
    assert np.array_equal(pose_parameter(vi, [], "goal"), vi.group.identity())
    half_turn_z = [1.0, 2.0, 3.0, 0.0, 0.0, 1.0, 0.0]
    g = pose_parameter(vi, half_turn_z, "goal")
    assert np.allclose(g[:3, :3], np.diag([-1.0, -1.0, 1.0]), atol=1e-15) and np.allclose(g[:3, 3], [1, 2, 3])
    for bad in ([1.0] * 6, [0, 0, 0, 0, 0, 0, 0], [0, 0, float("nan"), 0, 0, 0, 1]):
        with pytest.raises(ValueError, match="parameter goal"):
            pose_parameter(vi, bad, "goal")
    msg = PoseStamped()
    msg.header.frame_id = "odom"
    msg.pose.position.x, msg.pose.orientation.w = 4.0, 1.0
    assert np.allclose(goal_from_pose_stamped(vi, msg, "odom")[:3, 3], [4.0, 0.0, 0.0])
    msg.header.frame_id = ""  # (no frame: taken as the odometry's)
    assert np.allclose(goal_from_pose_stamped(vi, msg, "odom")[:3, 3], [4.0, 0.0, 0.0])
    msg.header.frame_id = "map"
    with pytest.raises(ValueError, match="'map' is not the odometry frame 'odom'"):
        goal_from_pose_stamped(vi, msg, "odom")
    msg.header.frame_id = "odom"
    msg.pose.orientation.w = 0.5
    with pytest.raises(ValueError, match="goal orientation"):
        goal_from_pose_stamped(vi, msg, "odom")


def test_path_and_actuator_velocities(uuv):
    body, vi = uuv
    X = np.array([_state(vi, s) for s in range(3)])
    path = path_from_plan(vi, X, 5.0, "odom")
    assert [ps.header.stamp.sec + 1e-9 * ps.header.stamp.nanosec for ps in path.poses] == pytest.approx(
        [5.0, 5.1, 5.2], abs=1e-9
    )
    for ps, x in zip(path.poses, X):
        p = ps.pose.position
        assert np.allclose([p.x, p.y, p.z], vi.pose(x)[:3, 3], atol=1e-15) and ps.header.frame_id == "odom"
    x = X[1]
    assert np.allclose(actuator_velocities(body, vi, x), body.input_matrix.T @ vi.velocity(x), atol=1e-15)
