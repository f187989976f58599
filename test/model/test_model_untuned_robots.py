"""Robots vi_control was never tuned to, taken the way the docs tell a new user to (``erd:<name>``, a URDF file
with ``package://`` meshes, URDF text): load, simulate against Pinocchio's energy, linearize against finite
differences, plan and track. Short runs on the CasADi VM (no compilation) except the 2-DOF plan-and-track.
"""

import logging
import shutil

import numpy as np
import pinocchio as pin
import pytest

import vi_control as vc
from vi_control.linearization import linearize
from vi_control.model import ModelSpec, URDFError
from vi_control.model.bundled import example_robot_data_dir, example_robot_path, share_dir
from vi_control.planning import load_task, plan_task
from vi_control.planning.evaluate import simulate_plan

# name -> a configuration inside its joint limits (baxter's gripper fingers at 0: their <mimic> couplings hold)
ROBOTS = {
    "z1": [0.3, 1.0, -1.0, 0.3, 0.2, 0.3, -0.5],
    "talos_arm": [0.8, 0.3, -1.0, 0.3, 0.2, 0.3, -0.5],
    "ur3": [0.5, -1.0, 0.5, 0.3, 0.2, 0.3],
    "ur10": [0.5, -1.0, 0.5, 0.3, 0.2, 0.3],
    "xarm7": [0.3, 0.4, -0.3, 0.8, 0.2, 0.5, 0.1],
    "so100": [0.3, 1.0, -1.0, 0.3, 0.2, 0.1],
    "double_pendulum_continuous": [2.5, -1.0],
    "baxter": [0.2, 0.3, -0.4, 0.2, 1.0, 0.1, 0.5, -0.2, 0.0, 0.0, -0.3, -0.4, 0.2, 1.0, -0.1, 0.5, 0.2, 0.0, 0.0],
}


def _undamped(name: str) -> vc.RobotModel:
    """The robot without its URDF <dynamics damping>, so an unforced run conserves energy."""
    joints = vc.load_robot(f"erd:{name}").joint_names
    return vc.load_robot(f"erd:{name}", {"damping": {j: 0.0 for j in joints}})


def _pinocchio_energy_drift(robot: vc.RobotModel, q0: np.ndarray, dt: float, duration: float) -> tuple[float, float]:
    """max_k |E_k − E_0| of an unforced midpoint-VI run, E = Pinocchio's kinetic + potential energy at
    (q_k, q̇_k = M(q_k)⁻¹p_k), and the largest kinetic energy of the run (the energy that changed form)."""
    vi = vc.MidpointVI(robot, dt, compile=False)
    qdot = 0.5 * np.cos(np.arange(robot.nq))  # the same motion at both Δt
    if robot.n_constraints:
        qdot[[robot.joint_index(j) for c in robot.constraints for j in c.joints]] = 0.0
    X, _ = vi.simulate(vi.state_from_velocity(q0, qdot), np.zeros((round(duration / dt), vi.nu)))
    model, data = robot.pin_model, robot.pin_model.createData()
    T = np.array([pin.computeKineticEnergy(model, data, x[: robot.nq], vi.velocity(x)) for x in X])
    E = T + [pin.computePotentialEnergy(model, data, x[: robot.nq]) for x in X]
    assert vi.energy(X[-1]) == pytest.approx(E[-1], rel=1e-12, abs=1e-12)
    return float(np.max(np.abs(E - E[0]))), float(T.max())


@pytest.mark.parametrize("name", sorted(ROBOTS))
def test_unforced_run_keeps_pinocchios_energy_to_second_order(name):
    """The midpoint VI's energy error is O(Δt²) and bounded (Johnson2015, §II): halving Δt divides the largest
    deviation of Pinocchio's energy over the same 0.3 s by ≈ 4, and it stays a small fraction of the energy
    in motion."""
    robot = _undamped(name)
    q0 = np.array(ROBOTS[name], float)
    coarse, kinetic = _pinocchio_energy_drift(robot, q0, 0.01, 0.3)
    fine, _ = _pinocchio_energy_drift(robot, q0, 0.005, 0.3)
    assert 3.2 < coarse / fine < 4.8, (coarse, fine)
    assert coarse < 0.02 * kinetic, (coarse, kinetic)


@pytest.mark.parametrize("name", ["z1", "double_pendulum_continuous"])
def test_linearization_matches_central_differences(name):
    """A, B of the exact linearization (Johnson2015, eqs. 8–15) against central differences of ``step``."""
    robot = _undamped(name)
    vi = vc.MidpointVI(robot, 0.01, compile=False)
    q0 = np.array(ROBOTS[name], float)
    x = vi.state_from_velocity(q0, 0.3 * np.sin(np.arange(robot.nq) + 1.0))
    u = 0.5 * np.cos(np.arange(vi.nu))
    lin = linearize(vi, x, u)
    h = 1e-6
    A = np.column_stack([(vi.step(x + h * e, u) - vi.step(x - h * e, u)) / (2 * h) for e in np.eye(vi.nx)])
    B = np.column_stack([(vi.step(x, u + h * e) - vi.step(x, u - h * e)) / (2 * h) for e in np.eye(vi.nu)])
    assert np.abs(lin.A - A).max() < 1e-6 * max(1.0, np.abs(A).max())
    assert np.abs(lin.B - B).max() < 1e-6 * max(1.0, np.abs(B).max())


def test_erd_resolves_any_example_robot_data_urdf():
    """``erd:<name>`` reaches every example-robot-data URDF (a unique file name, or its path under robots/),
    not only the robots vi_control's own tests use; Pinocchio's model of the same file is the reference."""
    root = example_robot_data_dir()
    for source, rel in [
        ("erd:baxter", "baxter_description/urdf/baxter.urdf"),
        ("erd:so100", "so_arm_description/urdf/so100.urdf"),
        ("erd:anymal_b_simple_description/robots/anymal.urdf", "anymal_b_simple_description/robots/anymal.urdf"),
    ]:
        assert example_robot_path(source[4:]) == root / rel
        reference = pin.buildModelFromUrdf(str(root / rel))
        if "anymal" in rel:
            robot = ModelSpec.parse(source, system="{inertia_policy: repair, floating_base: true}").load()
            assert robot.nq == reference.nv + 6  # the base: six virtual joints, the legs as in Pinocchio
        else:
            robot = ModelSpec.parse(source).load()
            assert robot.nq == reference.nq
        assert robot.total_mass == pytest.approx(sum(I.mass for I in reference.inertias), rel=1e-12)  # root too
    with pytest.raises(URDFError, match=r"'anymal' is ambiguous.*anymal_b_simple.*anymal_c_simple"):
        vc.load_robot("erd:anymal")
    with pytest.raises(URDFError, match=r"unknown example robot 'nope'.*baxter"):
        vc.load_robot("erd:nope")
    with pytest.raises(URDFError, match="unknown example robot"):
        vc.load_robot("erd:../../../etc/passwd.urdf")


def test_equal_position_limits_are_no_limits(caplog):
    """example-robot-data's double pendulum (a SolidWorks export) writes ``<limit lower="0" upper="0"
    effort="0" velocity="0">``: read literally the joints could not move. Equal bounds and a zero velocity
    limit mean "not given" (as effort 0 already did), with a warning naming each joint; real ranges stay."""
    with caplog.at_level(logging.WARNING, logger="vi_control.model"):
        robot = vc.load_robot("erd:double_pendulum")
    for j in robot.joints:
        assert (j.lower, j.upper, j.velocity_limit) == (-np.inf, np.inf, np.inf)
    assert np.all(np.isinf(robot.effort_limits))
    assert [r.getMessage().split(" (")[0] for r in caplog.records] == ["joint 'joint1'", "joint 'joint2'"]
    z1 = vc.load_robot("erd:z1")
    assert z1.joints[1].lower == 0.0 and z1.joints[1].upper == pytest.approx(2.9670597283903604)
    assert z1.joints[1].velocity_limit == pytest.approx(3.1415)


def test_urdf_file_with_package_meshes_and_the_same_xml_text(tmp_path):
    """A URDF copied to disk (its meshes as package:// URIs that resolve nowhere here) and the same file
    given as text are one model: dynamics need no meshes; the task file finds the URDF beside itself."""
    path = tmp_path / "my_z1.urdf"
    shutil.copy(example_robot_path("z1"), path)
    assert 'filename="package://example-robot-data/robots/z1_description/meshes/' in path.read_text()
    from_file, from_text = vc.load_robot(str(path)), vc.load_robot(path.read_text())
    assert from_file.hash == from_text.hash == vc.load_robot("erd:z1").hash and from_file.nq == 7
    (tmp_path / "task.yaml").write_text(
        "name: t\nmodel: {urdf: my_z1.urdf}\ndt: 0.05\nhorizon: 5\nweights: {Q: 1.0, R: 0.01}\n"
    )
    assert load_task(str(tmp_path / "task.yaml")).load_robot().hash == from_file.hash


def test_double_pendulum_reach_planned_and_tracked_in_closed_loop():
    """The task (config/task_double_pendulum_reach.yaml, written as docs/concepts/planner.md says) on
    example-robot-data's
    double pendulum (upright at q = 0: the reach holds an inverted pose): DDP converges, the hold input is
    Pinocchio's gravity torque, and TV-LQR brings a 0.05 rad perturbed start to the goal
    where the open loop falls away."""
    task = load_task("task_double_pendulum_reach")
    vi = vc.make_integrator("midpoint", task.load_robot(), task.dt)
    plan, result = plan_task(vi, task)
    assert result.converged
    goal = np.array([0.8, -0.6])
    q_final = plan.X[-1, :2]
    assert np.abs(q_final - goal).max() < 1e-3
    robot = vi.robot
    gravity = pin.computeGeneralizedGravity(robot.pin_model, robot.pin_model.createData(), q_final)
    assert np.allclose(plan.U_final, gravity, rtol=1e-8, atol=1e-10)
    x0 = plan.X[0].copy()
    x0[:2] += 0.05
    X, _ = simulate_plan(vi, plan, x0, feedback=True, extra_steps=20)
    X_open, _ = simulate_plan(vi, plan, x0, feedback=False)
    assert np.abs(X[-1, :2] - q_final).max() < 1e-3
    assert np.abs(X_open[-1, :2] - q_final).max() > 0.1


def test_start_off_the_mimic_couplings_is_refused_by_name():
    """Baxter's gripper fingers are coupled by ``<mimic>`` (q_r = −q_l). From fingers set independently, the first
    step snaps onto the coupling with an impulse: Pinocchio's energy jumps by an amount growing ≈ 4× when Δt
    halves (1/Δt²) while from a coupled start it changes by O(Δt²). Such a start is refused, naming the coupling,
    by the integrator and by a task (the simulator node applies the same check to ``initial_positions``)."""
    robot = _undamped("baxter")
    q_ok = np.array(ROBOTS["baxter"], float)
    i, j = robot.joint_index("l_gripper_l_finger_joint"), robot.joint_index("l_gripper_r_finger_joint")
    q_bad = q_ok.copy()
    q_bad[i] = 0.01  # the right finger left at 0: the coupling wants −0.01

    def first_step_energy_jump(q0, dt):
        vi = vc.MidpointVI(robot, dt, compile=False)
        x0 = vi.state_from_velocity(q0, np.zeros(robot.nq))
        x1 = vi.step(x0, np.zeros(vi.nu))
        model, data = robot.pin_model, robot.pin_model.createData()
        E = [
            pin.computeKineticEnergy(model, data, x[: robot.nq], vi.velocity(x))
            + pin.computePotentialEnergy(model, data, x[: robot.nq])
            for x in (x0, x1)
        ]
        return abs(E[1] - E[0])

    coarse, fine = first_step_energy_jump(q_bad, 0.01), first_step_energy_jump(q_bad, 0.005)
    assert 3.0 < fine / coarse < 5.0
    assert first_step_energy_jump(q_ok, 0.01) < 0.05 * coarse, first_step_energy_jump(q_ok, 0.01)
    vi = vc.MidpointVI(robot, 0.01, compile=False)
    assert vi.configuration_violation(q_ok) is None
    coupling = r"joints \['l_gripper_r_finger_joint', 'l_gripper_l_finger_joint'\]"
    assert "l_gripper_r_finger_joint" in vi.configuration_violation(q_bad)
    assert vi.configuration_violation(q_bad + np.eye(robot.nq)[j] * -0.01) is None  # coupled again
    task = load_task(
        f"name: t\nmodel: {{example: baxter}}\ndt: 0.01\nhorizon: 3\nweights: {{Q: 1.0, R: 0.01}}\n"
        f"start: {{q: {q_bad.tolist()}}}\n"
    )
    with pytest.raises(ValueError, match=rf"start.q violates holonomic constraint \d, {coupling}"):
        plan_task(vc.make_integrator("midpoint", task.load_robot(), task.dt, compile=False), task)


def test_plan_faster_than_the_urdf_velocity_limits_is_reported(tmp_path):
    """The optimizer knows no velocity limits, while the controller node refuses joint states beyond 1.5 × the
    URDF's ``<limit velocity>``: a plan that needs more is reported at plan time, naming the joint, with the peak
    velocity (checked here against central differences of the planned configurations)."""
    from vi_control.model.generate import planar_chain_urdf

    xml = planar_chain_urdf(2, joint_type="revolute").replace('velocity="100"', 'velocity="1.5"')
    path = tmp_path / "slow_arm.urdf"
    path.write_text(xml)
    task = load_task(
        f"name: swing\nmodel: {{urdf: {path}}}\ndt: 0.05\nhorizon: 10\ngoal: {{q: [1.2, -0.8]}}\n"
        "weights: {Q: {q: 1.0, p: 0.1}, R: 0.001, Qf: {q: 1.0e+4, p: 1.0e+3}}\n"
    )
    vi = vc.make_integrator("midpoint", vc.load_robot(xml), task.dt)
    lines: list[str] = []
    plan, _ = plan_task(vi, task, log=lines.append)
    warnings = [ln for ln in lines if "velocity limits" in ln]
    assert (
        len(warnings) == 1
        and "exceeds the velocity limits the controller enforces (joint1" in warnings[0]
        and "1 × its URDF velocity limit 1.5 rad/s" in warnings[0]
    ), lines
    peak = float(warnings[0].split("|q̇| = ")[1].split(" ")[0])
    q = plan.X[:, :2]
    central = np.abs(q[2:] - q[:-2]).max() / (2 * task.dt)
    assert peak == pytest.approx(central, rel=0.1) and peak > 1.5
    calm = load_task(
        f"name: swing\nmodel: {{urdf: {path}}}\ndt: 0.05\nhorizon: 40\ngoal: {{q: [0.1, -0.05]}}\n"
        "weights: {Q: {q: 1.0, p: 0.1}, R: 1.0, Qf: {q: 1.0e+3, p: 1.0e+2}}\n"
    )
    lines.clear()
    plan_task(vi, calm, log=lines.append)
    assert not [ln for ln in lines if "velocity limits" in ln]


@pytest.mark.parametrize("name", sorted(p.stem for p in (share_dir() / "config").glob("task_*.yaml")))
def test_every_bundled_task_plans_within_the_urdf_velocity_limits(name):
    """A bundled task is what a user runs first through the nodes (``main_job --task``): its plan must be one the
    controller node accepts as measured, within the URDF ``<limit velocity>`` (the controller refuses 1.5× it).
    task_panda_reach with R = 0.01 on every joint turned the wrist's joint 7 at 4.9 rad/s (limit 2.61) in its
    first step: under a 5 % heavier simulated arm the controller refused that state, damped, and the arm fell
    beyond joint 1's range (main_job --task task_panda_reach). Velocities here are checked against central
    differences of the planned configurations too, not only q̇ = M⁻¹p."""
    from vi_control.planning import make_system
    from vi_control.planning.pipeline import velocity_limit_excess

    task = load_task(name)
    vi = make_system(task, "gni" if "diffdrive" in name else "midpoint")
    plan, result = plan_task(vi, task)
    assert result.converged, result.stop_reason
    assert velocity_limit_excess(vi, plan.X) is None
    limit = np.array([j.velocity_limit for j in getattr(vi.robot, "joints", [])], float)
    if plan.X.shape[1] == 2 * len(limit):
        q = plan.X[:, : len(limit)]
        assert np.all(np.abs(q[2:] - q[:-2]) / (2 * task.dt) <= limit)


def test_locked_joints_equal_pinocchios_reduced_model():
    """``locked:`` in the system YAML welds joints at given positions (baxter's head, a wrist and both grippers;
    the mimicking fingers follow their primaries at −θ): mass matrix, gravity torque and gripper frames equal
    those of Pinocchio's ``buildReducedModel`` of the full URDF at the same reference configuration."""
    locked = {"head_pan": 0.3, "left_w2": -0.7, "l_gripper_l_finger_joint": 0.01, "r_gripper_l_finger_joint": 0.004}
    robot = vc.load_robot("erd:baxter", {"locked": locked})
    assert robot.nq == 13 and robot.n_constraints == 0
    full = pin.buildModelFromUrdf(str(example_robot_path("baxter")))
    q_ref = pin.neutral(full)
    for name, value in {**locked, "l_gripper_r_finger_joint": -0.01, "r_gripper_r_finger_joint": -0.004}.items():
        q_ref[full.joints[full.getJointId(name)].idx_q] = value
    reduced = pin.buildReducedModel(
        full, [full.getJointId(n) for n in (*locked, "l_gripper_r_finger_joint", "r_gripper_r_finger_joint")], q_ref
    )
    assert [reduced.names[i] for i in range(1, reduced.njoints)] == list(robot.joint_names)
    ours, theirs = robot.pin_model.createData(), reduced.createData()
    rng = np.random.default_rng(3)
    for _ in range(3):
        q = rng.uniform(-1.0, 1.0, robot.nq)
        assert np.allclose(pin.crba(robot.pin_model, ours, q), pin.crba(reduced, theirs, q), rtol=1e-12, atol=1e-12)
        assert np.allclose(
            pin.computeGeneralizedGravity(robot.pin_model, ours, q),
            pin.computeGeneralizedGravity(reduced, theirs, q),
            rtol=1e-12,
            atol=1e-12,
        )
        pin.framesForwardKinematics(robot.pin_model, ours, q)
        pin.framesForwardKinematics(reduced, theirs, q)
        for frame in ("l_gripper_r_finger_tip", "r_gripper_l_finger_tip", "head_camera_link"):
            a = ours.oMf[robot.pin_model.getFrameId(frame)]
            b = theirs.oMf[reduced.getFrameId(frame)]
            assert np.allclose(a.homogeneous, b.homogeneous, atol=1e-12), frame
    with pytest.raises(vc.SystemConfigError, match=r"locked: joint\(s\) \['head_tilt'\] not in the URDF"):
        vc.load_robot("erd:baxter", {"locked": ["head_tilt"]})
    with pytest.raises(vc.SystemConfigError, match="locked.head_pan: expected a finite number"):
        vc.load_robot("erd:baxter", {"locked": {"head_pan": "up"}})


def test_a_joint_is_locked_within_its_limits_at_their_boundary_and_anywhere_where_it_states_none():
    """``locked`` refuses a position beyond the joint's URDF limits by more than their slack, 1e-9 × the largest of 1
    and |limit| (2e-9 for [−1, 2]): 1e-9 beyond the upper limit accepted, 4e-9 refused, naming the joint and its
    limits; a joint whose ``<limit>`` states no range (lower = upper = 0, as URDFs write a joint that gives only effort
    and velocity) is locked at any position."""
    from vi_control.model.generate import planar_chain_urdf

    chain = planar_chain_urdf(2, joint_type="revolute")
    limited = chain.replace('lower="-3.14159" upper="3.14159"', 'lower="-1.0" upper="2.0"', 1)
    assert vc.load_robot(limited, {"locked": {"joint1": 2.0 + 1e-9}}).nq == 1
    with pytest.raises(vc.SystemConfigError, match=r"locked.joint1: 2 is outside joint 'joint1''s limits \[-1, 2\]"):
        vc.load_robot(limited, {"locked": {"joint1": 2.0 + 4e-9}})
    unstated = chain.replace('lower="-3.14159" upper="3.14159"', 'lower="0" upper="0"', 1)
    robot = vc.load_robot(unstated, {"locked": {"joint1": 0.4}})
    assert robot.nq == 1 and robot.joint_names == ["joint2"]
