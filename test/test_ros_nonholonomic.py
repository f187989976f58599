"""The differential-drive robot over real DDS: simulator (GNI), planner (DDP on the GNI) and controller (TV-LQR) as
three processes, unchanged nodes selected by `integrator: gni`; the simulator's nav_msgs/Odometry; parking from a
perturbed start that the plan does not know about."""

import numpy as np
import pytest

pytest.importorskip("rclpy")
pytest.importorskip("nav_msgs")

from vi_control.model.bundled import load_bundled  # noqa: E402
from vi_control.ros.launcher import domain_id_for  # noqa: E402
from vi_control.ros.main_job import run_closed_loop  # noqa: E402

pytestmark = pytest.mark.ros

GOAL = np.array([0.3, 0.5, 0.0])  # config/task_diffdrive_parking.yaml


def test_diffdrive_parks_over_dds_from_a_perturbed_start(request, tmp_path):
    robot = load_bundled("diffdrive")
    common = dict(model="diffdrive", system_yaml="", integrator="gni", dt=0.05)
    start = [0.03, 0.04, 0.1, 0.0, 0.0]  # 5 cm / 0.1 rad off the task's start, which the planner plans from
    over = {"simulator": dict(common, mode="lockstep", initial_positions=start, initial_velocities=[0.0] * 5),
            "planner": dict(task="task_diffdrive_parking", integrator="gni", use_measured_state=False),
            "controller": dict(common, trigger="joint_state")}
    run = run_closed_loop(domain_id_for(request.node.name), str(tmp_path), overrides=over, hold_time=1.0,
                          joint_names=robot.joint_names, timeout=150.0)
    assert not run.error, run.error + "\n" + "\n".join(f"--- {n}\n{t[-3000:]}" for n, t in run.logs.items())
    final = run.q[-1]
    assert np.linalg.norm(final[:2] - GOAL[:2]) < 0.01 and abs(final[2] - GOAL[2]) < 0.02, final
    assert np.abs(run.effort[:, 3:]).max() <= 0.5 + 1e-9  # the wheels' torque limit
    # odometry: the chassis' pose, equal to the base joints (the chassis frame is at the planar base)
    assert run.odometry, "no nav_msgs/Odometry received"
    stamp, child, pose = run.odometry[-1]
    assert child == "base_link"
    yaw = 2 * np.arctan2(pose[5], pose[6])
    k = np.argmin(np.abs(run.stamps - stamp))
    assert pose[:2] == pytest.approx(run.q[k, :2], abs=1e-9) and yaw == pytest.approx(run.q[k, 2], abs=1e-9)
    assert pose[2] == pytest.approx(0.05, abs=1e-12)  # axle height
