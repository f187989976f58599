"""The planner's live parameters in process (real rclpy, the planner autostarted on the pendulum task without
start-up plan): ``joint_state_merge_age`` reaches the joint-state merger at once, and no other parameter touches it;
a refused value changes nothing."""

import pytest

pytest.importorskip("rclpy")

from in_process import node_in_process  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402


@pytest.fixture
def planner(request):
    from vi_control.ros.planner_node import PlannerNode

    with node_in_process(request.node.name, PlannerNode, ["-p", "plan_on_startup:=false"]) as node:
        yield node


def test_the_merge_age_reaches_the_merger_and_nothing_else_does(planner):
    assert planner.merger.max_age == planner.p["joint_state_merge_age"] == 0.05
    assert planner.set_parameters([Parameter("joint_state_merge_age", value=0.2)])[0].successful
    assert planner.merger.max_age == 0.2
    for name, value in (("warm_start", False), ("expected_solve_time", 3.0), ("start_delay", 0.5)):
        assert planner.set_parameters([Parameter(name, value=value)])[0].successful, name
        assert planner.merger.max_age == 0.2 and planner.p[name] == value
    # its range [1e-4, 10]: just outside refused, nothing changes
    assert not planner.set_parameters([Parameter("joint_state_merge_age", value=10.001)])[0].successful
    assert planner.merger.max_age == 0.2 and planner.p["joint_state_merge_age"] == 0.2
    assert planner.set_parameters([Parameter("joint_state_merge_age", value=10.0)])[0].successful
    assert planner.merger.max_age == 10.0
