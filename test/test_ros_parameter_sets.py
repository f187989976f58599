"""A parameter request is accepted or refused as a whole (common.watch_parameters): with one bad value among good
ones (``set_parameters_atomically``) nothing changes, not rclpy's store and not the node's own copy it works from;
a request of good values changes both. In-process with real rclpy (the controller node, autostarted)."""

import pytest

pytest.importorskip("rclpy")

from rclpy.parameter import Parameter  # noqa: E402

from vi_control.ros.launcher import domain_id_for, set_domain  # noqa: E402


@pytest.fixture
def controller(request):
    import rclpy

    from vi_control.ros.controller_node import ControllerNode

    domain = domain_id_for(request.node.name)
    set_domain(domain)
    rclpy.init(args=["--ros-args", "-p", "model:=pendulum", "-r", "__ns:=/atomic_params"], domain_id=domain)
    node = None
    try:
        node = ControllerNode()
        yield node
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()


def test_a_refused_request_changes_nothing(controller):
    node = controller
    before = dict(node.p)
    result = node.set_parameters_atomically([Parameter("safe_damping", value=3.0),
                                             Parameter("hold_position_weight", value=10.0),
                                             Parameter("safe_mode", value="brake")])  # not a choice
    assert not result.successful and "safe_mode must be one of" in result.reason
    assert node.p == before
    assert node.get_parameter("safe_damping").value == before["safe_damping"]
    assert node.runner.hold.Q[0] == before["hold_position_weight"]  # the hold's gain weights untouched too


def test_an_accepted_request_changes_the_copy_and_what_it_sets(controller):
    node = controller
    result = node.set_parameters_atomically([Parameter("safe_damping", value=3.0),
                                             Parameter("hold_position_weight", value=10.0),
                                             Parameter("safe_mode", value="damping")])
    assert result.successful, result.reason
    assert (node.p["safe_damping"], node.p["hold_position_weight"], node.p["safe_mode"]) == (3.0, 10.0, "damping")
    assert node.runner.hold.Q[0] == 10.0


def test_each_check_at_its_boundary(controller):
    node = controller
    assert node.set_parameters([Parameter("stale_hold_time", value=0.0)])[0].successful
    assert not node.set_parameters([Parameter("stale_hold_time", value=-1e-9)])[0].successful
    assert node.set_parameters([Parameter("hold_effort_weight", value=1e-12)])[0].successful
    assert not node.set_parameters([Parameter("hold_effort_weight", value=0.0)])[0].successful
    assert node.p["stale_hold_time"] == 0.0 and node.p["hold_effort_weight"] == 1e-12
