"""Collocation plans over real DDS: the planner node plans by LG2 (MorenoMartin2022), the controller node tracks the
plan against the simulator node (three processes, lockstep); a failing collocation (IPOPT) is logged by the planner
node, which keeps its plan and publishes nothing new."""

import time

import numpy as np
import pytest

pytest.importorskip("rclpy")

from log_record import RecordingLogger  # noqa: E402

from vi_control.ros.launcher import NodeProcess, domain_id_for  # noqa: E402
from vi_control.ros.main_job import run_closed_loop  # noqa: E402

pytestmark = pytest.mark.ros


def _report(run) -> str:
    return run.error + "\n" + "\n".join(f"--- {n}\n{t[-3000:]}" for n, t in run.logs.items())


@pytest.mark.parametrize("case", ["pendulum", "cartpole"])
def test_collocation_plan_is_tracked_by_the_controller(request, tmp_path, case):
    if case == "pendulum":  # minimum time, |u| ≤ 5 N·m (the bundled model's limit): the plan ends at t_f
        common, joints, goal = dict(model="pendulum", dt=0.02, system_yaml=""), ["theta"], [np.pi]
        task, init = "task_pendulum_mintime_lg2", [0.0]
    else:  # Kelly's cart-pole: to x = 1 m, upright, in 2 s
        common, joints, goal = dict(model="cartpole", dt=0.02, system_yaml=""), ["slider", "hinge"], [1.0, np.pi]
        task, init = "task_cartpole_swingup_lg2", [0.0, 0.0]
    over = {
        "simulator": dict(common, mode="lockstep", initial_positions=init, initial_velocities=[0.0] * len(init)),
        "planner": dict(task=task, startup_wait=10.0),
        "controller": dict(common, trigger="joint_state"),
    }
    run = run_closed_loop(
        domain_id_for(request.node.name),
        str(tmp_path),
        overrides=over,
        hold_time=3.0,
        joint_names=joints,
        timeout=150.0,
    )
    assert not run.error, _report(run)
    assert "collocation_lg2" in run.logs["planner"] and "IPOPT Solve_Succeeded" in run.logs["planner"]
    mask = np.array([j != "slider" for j in joints])
    err = run.tracking_error(mask)
    assert np.sqrt(np.nanmean(err**2)) < 1e-6, _report(run)  # the plan is a VI trajectory: exact tracking
    assert np.abs(run.final_error(np.array(goal), mask)).max() < 0.05  # after 3 s on the hold gain
    limit = 5.0 if case == "pendulum" else 20.0
    assert np.abs(run.effort[:, 0]).max() <= limit + 1e-9


def test_planner_node_logs_a_failed_collocation_and_publishes_no_plan(request, tmp_path):
    """An infeasible collocation task (upright in 0.4 s with |u| ≤ 5 N·m): the node logs PlanningError with IPOPT's
    status, stays alive and publishes no plan."""
    import rclpy

    from vi_control.ros.launcher import run_namespace, set_domain
    from vi_control.ros.recorder import Recorder

    task = tmp_path / "infeasible.yaml"
    task.write_text(
        "name: infeasible\nmodel: pendulum\ndt: 0.02\nhorizon: 20\ngoal: {q: [pi]}\n"
        "weights: {Q: [1.0, 1.0], R: 1.0}\noptimizer: {method: collocation_lg2, max_iterations: 150}\n"
        "collocation: {nodes: 8}\n"
    )
    domain = domain_id_for(request.node.name)
    set_domain(domain)
    rclpy.init(domain_id=domain)
    ns = run_namespace(f"{domain}:{tmp_path}")
    rec = Recorder(["theta"], namespace=ns)
    proc = NodeProcess(
        "planner_node",
        domain,
        ["ros_planner.yaml"],
        dict(task=str(task), startup_wait=0.0),
        str(tmp_path),
        name="planner",
        namespace=ns,
    )
    try:
        assert rec.wait_for(lambda: "PlanningError" in proc.log() or not proc.alive, 90.0), proc.log()
        time.sleep(1.0)
        assert proc.alive, proc.log()
        assert rec.plan() is None  # nothing published
        log = proc.log()
        assert "planning failed: PlanningError" in log and "ipopt" in log and "iterations" in log
    finally:
        proc.stop()
        rec.close()
        rclpy.try_shutdown()


def test_planner_node_keeps_its_plan_when_a_replan_fails(request, tmp_path):
    """Through the node's own planning path (in-process, real rclpy and DDS): plan 1 is published; then the task
    becomes infeasible and a replan fails with PlanningError — logged, the latest plan stays, nothing new is sent."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from std_msgs.msg import UInt8MultiArray

    from vi_control.planning import load_task
    from vi_control.ros.common import LATCHED_QOS
    from vi_control.ros.launcher import set_domain
    from vi_control.ros.planner_node import Job, PlannerNode
    from vi_control.ros.planner_requests import Request

    domain = domain_id_for(request.node.name)
    set_domain(domain)
    rclpy.init(
        args=[
            "--ros-args",
            "-p",
            "task:=task_pendulum_mintime_lg2",
            "-p",
            "plan_on_startup:=false",
            "-p",
            "use_measured_state:=false",
            "-p",
            "republish_period:=0.0",
            "-r",
            "__ns:=/colloc_keep",
        ],
        domain_id=domain,
    )
    node = listener = None
    try:
        node = PlannerNode()
        logged = RecordingLogger(node.get_logger())
        node.get_logger = lambda: logged
        listener = rclpy.create_node("plan_listener", namespace="/colloc_keep")
        received = []
        listener.create_subscription(UInt8MultiArray, "vi_planner/plan", received.append, LATCHED_QOS)
        ex = SingleThreadedExecutor()
        ex.add_node(listener)

        def spin(seconds):
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                ex.spin_once(timeout_sec=0.05)

        node._plan(Job(0, Request("task"), "test"))  # the worker's body, synchronously
        first = node._latest
        assert first is not None
        spin(3.0)
        assert len(received) == 1
        bad = tmp_path / "infeasible.yaml"
        bad.write_text(
            "name: infeasible\nmodel: pendulum\ndt: 0.02\nhorizon: 20\ngoal: {q: [pi]}\n"
            "weights: {Q: [1.0, 1.0], R: 1.0}\noptimizer: {method: collocation_lg2, max_iterations: 100}\n"
            "collocation: {nodes: 8}\n"
        )
        node.task = load_task(str(bad))
        node._plan(Job(0, Request("task"), "test"))
        spin(1.0)
        assert node._latest is first and len(received) == 1  # the plan in force is kept, nothing new on DDS
        err = logged.text()
        assert "planning failed: PlanningError" in err and "ipopt" in err and "iterations" in err
    finally:
        for n in (node, listener):
            if n is not None:
                n.destroy_node()
        rclpy.try_shutdown()
