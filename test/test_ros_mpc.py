"""MPC through the nodes (planner ``mode: mpc``, planning.mpc): the panda reach planned on the nominal model and run
by the controller node against a simulator whose panda is 20 % heavier on every link, on a running clock (the
simulator in real time at 5 ms, the controller's timer at 200 Hz): the planner re-plans every 0.1 s from the latest
joint state, counts its cycles and overruns in /diagnostics, and the arm ends nearer the goal than under the TV-LQR
tracking of the one plan (mode plan, the same run otherwise)."""

import numpy as np
import pytest

pytest.importorskip("rclpy")

from vi_control.ros.launcher import domain_id_for  # noqa: E402
from vi_control.ros.main_job import run_closed_loop, task_overrides  # noqa: E402

pytestmark = pytest.mark.ros


def _reach(request, tmp_path, mode: str):
    over, robot = task_overrides("task_panda_reach_mpc")
    over["simulator"].update(mode="realtime", dt=0.005, mass_scale=1.2)
    over["controller"].update(trigger="timer", rate=200.0, safe_mode="hold")
    over["planner"].update(mode=mode)
    run = run_closed_loop(domain_id_for(f"{request.node.name}:{mode}"), str(tmp_path / mode), overrides=over,
                          hold_time=2.0, timeout=150.0, joint_names=list(robot.joint_names))
    assert not run.error, run.error + "\n" + "\n".join(f"--- {n}\n{t[-3000:]}" for n, t in run.logs.items())
    goal = np.array([0.5, -0.3, 0.3, -1.8, 0.2, 1.9, 0.5])
    return run, float(np.abs(run.q[-1] - goal).max())


def test_mpc_through_the_nodes_ends_nearer_the_goal_on_a_heavier_panda(request, tmp_path):
    run_plan, err_plan = _reach(request, tmp_path, "plan")
    run_mpc, err_mpc = _reach(request, tmp_path, "mpc")
    log = run_mpc.logs["planner"]
    assert "mode mpc: a re-plan every 0.1 s" in log, log[-2000:]
    print(f"final |q − q_goal|∞: one plan {err_plan:.4f} rad, MPC {err_mpc:.4f} rad")
    assert err_mpc < err_plan, (err_mpc, err_plan)
