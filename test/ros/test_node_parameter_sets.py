"""A parameter request is accepted or refused as a whole (common.watch_parameters): with one bad value among good
ones (``set_parameters_atomically``) nothing changes, not rclpy's store and not the node's own copy it works from;
a request of good values changes both. In-process with real rclpy (the controller node, autostarted)."""

import pytest

pytest.importorskip("rclpy")

from log_record import RecordingLogger  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402


def test_a_refused_request_changes_nothing(controller_in_process):
    node = controller_in_process
    before = dict(node.p)
    result = node.set_parameters_atomically(
        [
            Parameter("safe_damping", value=3.0),
            Parameter("hold_position_weight", value=10.0),
            Parameter("safe_mode", value="brake"),
        ]
    )  # not a choice
    assert not result.successful and "safe_mode must be one of" in result.reason
    assert node.p == before
    assert node.get_parameter("safe_damping").value == before["safe_damping"]
    assert node.runner.hold.Q[0] == before["hold_position_weight"]  # the hold's gain weights untouched too


def test_an_accepted_request_changes_the_copy_and_what_it_sets(controller_in_process):
    node = controller_in_process
    result = node.set_parameters_atomically(
        [
            Parameter("safe_damping", value=3.0),
            Parameter("hold_position_weight", value=10.0),
            Parameter("safe_mode", value="damping"),
        ]
    )
    assert result.successful, result.reason
    assert (node.p["safe_damping"], node.p["hold_position_weight"], node.p["safe_mode"]) == (3.0, 10.0, "damping")
    assert node.runner.hold.Q[0] == 10.0


def test_each_check_at_its_boundary(controller_in_process):
    node = controller_in_process
    assert node.set_parameters([Parameter("stale_hold_time", value=0.0)])[0].successful
    assert not node.set_parameters([Parameter("stale_hold_time", value=-1e-9)])[0].successful
    assert node.set_parameters([Parameter("hold_effort_weight", value=1e-12)])[0].successful
    assert not node.set_parameters([Parameter("hold_effort_weight", value=0.0)])[0].successful
    assert node.p["stale_hold_time"] == 0.0 and node.p["hold_effort_weight"] == 1e-12


def test_a_stale_first_state_is_not_reported_as_a_safe_command(controller_in_process):
    """Before any valid joint state nothing is commanded, so a refused first state is logged as what it is — no
    valid state yet — not as "-> safe command (...)", which the controller does not send."""
    from rclpy.serialization import serialize_message
    from sensor_msgs.msg import JointState

    node = controller_in_process
    node.warn.logger = logged = RecordingLogger(node.warn.logger)
    msg = JointState(name=["theta"], position=[0.1], velocity=[0.0])
    msg.header.stamp.sec = 1  # 1970: stale on the wall clock
    node.on_joint_state(serialize_message(msg))
    err = logged.text()
    assert "no valid joint state yet (joint states stale" in err and "-> safe command" not in err, err
    assert node.counts["commands"] == 0 and node.runner.fault is None
    msg.header.stamp = node.get_clock().now().to_msg()  # a valid one: held from now on (safe_mode hold)
    node.on_joint_state(serialize_message(msg))
    node.tick()
    assert node.counts["commands"] == 1 and node.runner.hold.target.tolist() == [0.1]
