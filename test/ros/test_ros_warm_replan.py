"""The planner node re-plans the task warm (in-process through its own planning path, real rclpy): the plan being
executed, receded to the new start, is the initial guess, and the re-plan reaches the cold plan's optimum from that
start in fewer iterations; with ``warm_start`` off the node plans cold."""

import numpy as np
import pytest

pytest.importorskip("rclpy")

from vi_control.ros.launcher import domain_id_for  # noqa: E402

pytestmark = pytest.mark.ros


def test_planner_node_replans_the_task_warm_from_the_executed_plan(request):
    import rclpy
    from rclpy.parameter import Parameter

    from vi_control.planning import plan_task, start_state
    from vi_control.ros.launcher import set_domain
    from vi_control.ros.planner_node import Job, PlannerNode
    from vi_control.ros.planner_requests import Request

    domain = domain_id_for(request.node.name)
    set_domain(domain)
    rclpy.init(
        args=[
            "--ros-args",
            "-p",
            "task:=task_cartpole_swingup",
            "-p",
            "plan_on_startup:=false",
            "-p",
            "expected_solve_time:=0.0",
            "-p",
            "republish_period:=0.0",
            "-r",
            "__ns:=/warm_replan",
        ],
        domain_id=domain,
    )
    node = None
    try:
        node = PlannerNode()
        task, vi = node.task, node.vi
        node.measured = (node._now(), start_state(task, vi))
        node._plan(Job(0, Request("task"), "test"))  # the worker's body, synchronously: the first plan, cold
        first = node.last_plan
        assert first is not None and first.converged and node.last_warm_step is None
        x1 = first.X[5].copy()
        x1[0] += 0.02  # the cart 2 cm off the plan, 5 steps in
        node.measured = (float(first.times[5]), x1)
        node._plan(Job(0, Request("task"), "test"))
        second = node.last_plan
        # (the node's own record of the solve, not its log: rcutils' stderr stream is not always flushed to capfd)
        assert node.last_warm_step is not None and node.last_warm_step >= 5
        assert second is not first and second.converged
        assert np.abs(second.X[-1, :2] - task.goal_q).max() < 1e-5
        it_warm, cost_warm = node.last_result.iterations, node.last_result.cost
        cold, res = plan_task(vi, task, x0=second.X[0])  # the same start, cold
        assert res.converged and abs(cost_warm - res.cost) <= 1e-4 * res.cost, (cost_warm, res.cost)
        assert it_warm < res.iterations / 2, (it_warm, res.iterations)  # measured 17 against 62

        node.set_parameters([Parameter("warm_start", value=False)])
        node.measured = (float(second.times[3]), second.X[3].copy())
        node._plan(Job(0, Request("task"), "test"))
        assert node.last_warm_step is None and node.last_plan is not second  # planned cold
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
