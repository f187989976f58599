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
    over = {
        "simulator": dict(common, mode="lockstep", initial_positions=start, initial_velocities=[0.0] * 5),
        "planner": dict(task="task_diffdrive_parking", integrator="gni", use_measured_state=False),
        "controller": dict(common, trigger="joint_state"),
    }
    run = run_closed_loop(
        domain_id_for(request.node.name),
        str(tmp_path),
        overrides=over,
        hold_time=1.0,
        joint_names=robot.joint_names,
        timeout=150.0,
    )
    assert not run.error, run.error + "\n" + "\n".join(f"--- {n}\n{t[-3000:]}" for n, t in run.logs.items())
    final = run.q[-1]
    assert np.linalg.norm(final[:2] - GOAL[:2]) < 0.01 and abs(final[2] - GOAL[2]) < 0.02, final
    assert np.abs(run.effort[:, 3:]).max() <= 0.5 + 1e-9  # the wheels' torque limit
    # odometry: the chassis' pose, equal to the base joints (the chassis frame is at the planar base)
    assert run.odometry, "no nav_msgs/Odometry received"
    # the latest odometry whose joint state (same stamp) was recorded too: under load the recorder's joint states may
    # lag its odometry by seconds of simulation (lockstep runs as fast as the commands come; CI s49a: the states ended
    # at 10.25 s, the odometry at 35.9 s), and a neighbour differs by a step's motion — so every odometry is a candidate
    matched = [(o, int(np.argmin(np.abs(run.stamps - o[0])))) for o in run.odometry]
    matched = [(o, k) for o, k in matched if abs(run.stamps[k] - o[0]) < 1e-6]
    assert matched, (run.odometry[-1][0], run.stamps[-5:])
    (stamp, child, pose), k = matched[-1]
    assert child == "base_link"
    yaw = 2 * np.arctan2(pose[5], pose[6])
    assert pose[:2] == pytest.approx(run.q[k, :2], abs=1e-9) and yaw == pytest.approx(run.q[k, 2], abs=1e-9)
    assert pose[2] == pytest.approx(0.05, abs=1e-12)  # axle height


def test_a_sideways_initial_velocity_is_projected_with_a_warning_or_refused(ros):
    """Kobilarov2010, eq. 12 in the node: the diff-drive cannot start sliding sideways. Default: the simulator projects
    q̇_0 onto A(q)q̇ = 0 (the M-orthogonal projector) and says so; on_constraint_violation:=raise fails configure
    with the reason."""
    from vi_control.integrators import make_integrator

    robot = load_bundled("diffdrive")
    v0 = [0.2, 0.5, 0.0, 0.0, 0.0]  # 0.5 m/s sideways at θ = 0
    common = dict(model="diffdrive", system_yaml="", integrator="gni", dt=0.05, mode="realtime", initial_velocities=v0)
    sim = ros.start("simulator_node", **common)
    refusing = ros.start("simulator_node", name="refusing", on_constraint_violation="raise", **common)
    gni = make_integrator("gni", robot, 0.05)
    expected = gni.projector(np.zeros(5)) @ np.array(v0)
    assert abs(expected[1]) < 1e-12 and abs(expected[0]) > 0.05  # the projection keeps rolling, drops sliding
    assert sim.wait_for_log("initial_velocities violate the model's velocity constraints", 60.0), sim.log()
    assert "projected onto them" in sim.log()
    logged = sim.log().split("q̇_0 = ")[1].split("]")[0]
    assert np.allclose(np.array(eval(logged + "]")), expected, atol=2e-6), (logged, expected)
    assert refusing.wait_for_log("configure failed: ValueError: initial_velocities violate", 60.0), refusing.log()
    assert "on_constraint_violation:=project" in refusing.log()
    rec = ros.recorder(robot.joint_names)
    assert rec.wait_for(lambda: len(rec.states) > 20, 60.0), sim.log()
    with rec.lock:
        states = list(rec.states)
    # the node's motion is the GNI's from the projected velocity (no input): the same discrete map, step by step
    x = gni.state_from_configurations(-0.05 * expected, np.zeros(5))
    X = [x]
    for _ in range(int(round(states[-1][1] / 0.05))):
        X.append(gni.step(X[-1], np.zeros(gni.nu)))
    for _, t, q, _ in states:
        assert np.allclose(q, X[int(round(t / 0.05))][:5], atol=1e-5), (t, q)
    assert len(states) > 20 and states[-1][2][0] > 0.1  # it rolled, from the projected velocity
    assert sim.alive  # (the refusing one, autostarted, exits with its reason: a bad start must not idle silently)
