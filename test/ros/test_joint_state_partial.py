"""One driver of several (vi_control.ros.messages.RawJointStateReader with ``partial``): a message with some of the
model's joints is read, ``carried`` marks exactly those and their values land in model order; a message with all of
them carries all (``carried`` None); a non-partial reader refuses the same message naming what it lacks."""

import numpy as np
import pytest

pytest.importorskip("rclpy")

from rclpy.serialization import serialize_message  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

from vi_control.ros.messages import RawJointStateReader  # noqa: E402

JOINTS = ["shoulder", "elbow", "wrist"]


def _msg(names, q, v):
    m = JointState(name=names, position=q, velocity=v)
    m.header.stamp.sec, m.header.stamp.nanosec = 3, 500
    return serialize_message(m)


def test_a_driver_of_some_joints_is_read_into_model_order_with_the_mask_of_its_joints():
    r = RawJointStateReader(JOINTS, partial=True)
    t, has_v = r.read_raw(_msg(["wrist", "shoulder"], [0.3, 0.1], [3.0, 1.0]))
    assert t == pytest.approx(3.0000005) and has_v
    assert r.carried.tolist() == [True, False, True]
    assert r.q[[0, 2]].tolist() == [0.1, 0.3] and r.qdot[[0, 2]].tolist() == [1.0, 3.0]
    r.read_raw(_msg(["elbow", "wrist", "shoulder"], [0.2, 0.3, 0.1], [2.0, 3.0, 1.0]))
    assert r.carried is None and np.array_equal(r.q, [0.1, 0.2, 0.3])


def test_a_reader_of_the_whole_robot_refuses_a_partial_message():
    r = RawJointStateReader(JOINTS)
    with pytest.raises(ValueError, match=r"joint state lacks joint\(s\) \['elbow'\]"):
        r.read_raw(_msg(["wrist", "shoulder"], [0.3, 0.1], [3.0, 1.0]))
