"""MPC through the nodes (planner ``mode: mpc``, planning.mpc): the panda reach planned on the nominal model and run
by the controller node against a simulator whose panda is 20 % heavier on every link, on a running clock (the
simulator in real time at 5 ms, the controller's timer at 200 Hz, holding the arm until the first plan; both state
estimates from the simulator's velocities, which lag less than differences over the plan's 50 ms): the planner
re-plans every 0.1 s from the latest joint state and counts its cycles in /diagnostics, and the arm ends nearer the
goal than under the TV-LQR tracking of the one plan (mode plan, the same run otherwise)."""

import time

import numpy as np
import pytest

pytest.importorskip("rclpy")

from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from test_ros_dds import DISCOVERY  # noqa: E402

from vi_control.ros.common import STREAM_QOS  # noqa: E402
from vi_control.ros.main_job import task_overrides  # noqa: E402

pytestmark = pytest.mark.ros
GOAL = np.array([0.5, -0.3, 0.3, -1.8, 0.2, 1.9, 0.5])


def _reach(ros, mode: str) -> tuple[float, dict]:
    """The reach in ``mode``: the controller first (it holds the arm from the first joint state on), then the
    simulator, then the planner; |q − q_goal|∞ 2 s after the task's end, and the planner's last diagnostics."""
    over, robot = task_overrides("task_panda_reach_mpc")
    name = f"_{mode}"
    ctrl = ros.start("controller_node", name="controller" + name, **over["controller"], trigger="timer", rate=200.0,
                     use_sim_time=True, safe_mode="hold", state_timeout=0.5, state_estimate="velocities")
    assert ctrl.wait_for_log("panda: joints=", 120.0), ctrl.report()
    sim = ros.start("simulator_node", name="simulator" + name, **(over["simulator"] | dict(dt=0.005)),
                    mode="realtime", mass_scale=1.2)
    assert ctrl.wait_for_log("holding q = ", DISCOVERY), ctrl.report() + sim.report()
    rec = ros.recorder(list(robot.joint_names), name="rec" + name)
    diags = []
    rec.create_subscription(DiagnosticArray, "diagnostics", lambda m: diags.extend(
        {kv.key: kv.value for kv in st.values} for st in m.status if st.name.endswith("vi_planner")), STREAM_QOS)
    planner = ros.start("planner_node", name="planner" + name, **over["planner"], mode=mode, use_sim_time=True,
                        startup_wait=10.0, diagnostics_period=0.2, state_estimate="velocities")
    assert rec.wait_for(lambda: rec.plan() is not None, 120.0), planner.report()
    start = rec.plan()[1].times[0]
    assert rec.wait_for(lambda: rec.states and rec.states[-1][1] > start + 3.0, 60.0), sim.report()
    q = rec.states[-1][2]
    for p in (planner, sim, ctrl):
        p.stop()
    return float(np.abs(q - GOAL).max()), (diags[-1] if diags else {})


def test_mpc_through_the_nodes_ends_nearer_the_goal_on_a_heavier_panda(ros):
    err_plan, _ = _reach(ros, "plan")
    time.sleep(1.0)
    err_mpc, diag = _reach(ros, "mpc")
    print(f"final |q − q_goal|∞: one plan {err_plan:.4f} rad, MPC {err_mpc:.4f} rad; planner diagnostics {diag}")
    assert int(diag.get("mpc_cycles", 0)) >= 10 and int(diag["mpc_accepted"]) >= 10, diag
    assert err_mpc < err_plan, (err_mpc, err_plan)
