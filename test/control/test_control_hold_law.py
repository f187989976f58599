"""The hold (``control.tracking.HoldLaw``, the controller's ``safe_mode: hold``): gravity compensation from the model
plus the DLQR hold gain about a configuration, checked against Pinocchio (its generalized gravity, and a plant it
integrates itself with ``aba`` at 1 ms under the held command); and the runner's use of it: the target is the
configuration measured when the hold began (it does not follow a falling arm), a stale or refused state gets the
gravity torque alone while ``stale_hold`` then zero, entering a plan releases it, a vehicle damps instead."""

import dataclasses

import numpy as np
import pinocchio as pin
import pytest

import vi_control as vc
from vi_control.control.intake import Estimate
from vi_control.control.runner import PlanRunner
from vi_control.control.tracking import HoldLaw
from vi_control.integrators import make_integrator

Q_PANDA = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])


@pytest.fixture(scope="module")
def panda():
    robot = vc.load_robot("erd:panda")
    return robot, make_integrator("midpoint", robot, 0.01)


def _pinocchio_plant(robot, q, v, command, seconds, h=1e-3, period=2e-3):
    """Pinocchio's own forward dynamics (aba), semi-implicit Euler at ``h``, the command held ``period`` (a 500 Hz
    effort controller): an integrator vi_control does not use. Returns the largest |q − q(0)| and the final q."""
    model, data = robot.pin_model, robot.pin_model.createData()
    q, v, q_start, dev = q.copy(), v.copy(), q.copy(), 0.0
    per = int(round(period / h))
    for i in range(int(round(seconds / h))):
        if i % per == 0:
            tau = command(q, v)
        v = v + h * pin.aba(model, data, q, v, tau)
        q = q + h * v
        dev = max(dev, float(np.abs(q - q_start).max()))
    return dev, q


def test_the_holding_input_is_pinocchios_generalized_gravity(panda):
    robot, vi = panda
    hold = HoldLaw(vi, (100.0, 1.0, 0.01))
    rng = np.random.default_rng(3)
    for q in [Q_PANDA] + [Q_PANDA + rng.uniform(-0.5, 0.5, 7) for _ in range(3)]:
        hold.engage(q)
        g = pin.computeGeneralizedGravity(robot.pin_model, robot.pin_model.createData(), q)
        assert np.allclose(hold.feedforward(), np.clip(g, -robot.effort_limits, robot.effort_limits), atol=1e-9)
        assert hold.gain_failure is None


def test_the_hold_keeps_the_panda_still_under_pinocchios_dynamics(panda):
    robot, vi = panda
    hold = HoldLaw(vi, (100.0, 1.0, 0.01))
    hold.engage(Q_PANDA)

    def held(q, v):  # the discrete state a controller estimates from a measured velocity (q − Δt q̇, q)
        return hold.command(vi.state_from_configurations(q - vi.dt * v, q))[0]

    still, _ = _pinocchio_plant(robot, Q_PANDA, np.zeros(7), held, 2.0)
    assert still < 1e-6  # gravity compensated exactly: nothing moves
    # pushed 0.05 rad and moving: pulled back to the target, no joint beyond its effort limit on the way
    q1 = Q_PANDA + 0.05 * np.array([1, -1, 1, -1, 1, -1, 1])
    torques = []

    def recorded(q, v):
        u = held(q, v)
        torques.append(u)
        return u

    _, q_end = _pinocchio_plant(robot, q1, 0.2 * np.ones(7), recorded, 3.0)
    assert np.abs(q_end - Q_PANDA).max() < 1e-3
    assert np.all(np.abs(torques) <= robot.effort_limits + 1e-12)


def test_gravity_alone_lets_a_pushed_arm_drift_where_the_hold_pulls_it_back(panda):
    """What the feedback adds: with the feed-forward alone (a stale state's command) a velocity is not removed."""
    robot, vi = panda
    hold = HoldLaw(vi, (100.0, 1.0, 0.01))
    hold.engage(Q_PANDA)
    v0 = 0.05 * np.ones(7)
    drift, _ = _pinocchio_plant(robot, Q_PANDA, v0, lambda q, v: hold.feedforward(), 0.5)
    held, _ = _pinocchio_plant(
        robot, Q_PANDA, v0, lambda q, v: hold.command(vi.state_from_configurations(q - vi.dt * v, q))[0], 0.5
    )
    assert drift > 0.02 and held < 0.01


def test_torques_beyond_the_effort_limits_are_clamped(panda):
    robot, vi = panda
    weak = dataclasses.replace(robot, effort_limits=robot.effort_limits * 0.01)  # gravity needs more than 0.87 N·m
    hold = HoldLaw(make_integrator("midpoint", weak, 0.01), (100.0, 1.0, 0.01))
    hold.engage(Q_PANDA)
    u, clamped = hold.command(vi.state_from_configurations(Q_PANDA + 0.1, Q_PANDA + 0.1))
    assert clamped and np.all(np.abs(u) <= weak.effort_limits + 1e-15)
    assert np.all(np.abs(hold.feedforward()) <= weak.effort_limits + 1e-15)


def test_weights_are_checked_at_their_boundary(panda):
    _, vi = panda
    HoldLaw(vi, (0.0, 0.0, 1e-12))
    for bad in [(-1e-12, 1.0, 1.0), (1.0, -1e-12, 1.0), (1.0, 1.0, 0.0), (np.nan, 1.0, 1.0), (1.0, 1.0, np.inf)]:
        with pytest.raises(ValueError, match="hold weights"):
            HoldLaw(vi, bad)
    with pytest.raises(RuntimeError, match="nothing engaged"):
        HoldLaw(vi, (1.0, 1.0, 1.0)).command(np.zeros(vi.nx))


class _Log:
    def __init__(self):
        self.lines = []

    def info(self, text):
        self.lines.append(text)

    warning = info


def _runner(vi, vehicle=False, **settings):
    log = _Log()
    p = (
        dict(
            accept_unconverged=False,
            safe_damping=1.0,
            safe_mode="hold",
            gain_scale=1.0,
            retime_tolerance=0.0,
            start_tolerance=0.0,
            path_tolerance=0.0,
            goal_tolerance=0.0,
            goal_time_tolerance=1.0,
        )
        | settings
    )
    runner = PlanRunner(
        vi.robot,
        vi,
        p,
        vehicle,
        vi.robot.joint_names,
        np.arange(len(vi.robot.actuated)),
        log,
        lambda kind, text, level="warning": log.lines.append(text),
    )
    return runner, log


def _estimate(vi, t, q, v=None):
    v = np.zeros(vi.nq) if v is None else v
    return Estimate(t, vi.state_from_configurations(q - vi.dt * v, q), v)


def test_the_runner_holds_where_the_hold_began_not_where_the_arm_goes(panda):
    robot, vi = panda
    runner, log = _runner(vi)
    u0 = runner.safe_input("hold", _estimate(vi, 0.0, Q_PANDA))
    assert np.allclose(runner.hold.target, Q_PANDA) and any("holding q" in line for line in log.lines)
    # the arm sags 0.02 rad at the shoulder: the command pushes it back up (the target stays)
    sagged = Q_PANDA + np.array([0, 0.02, 0, 0, 0, 0, 0])
    u1 = runner.safe_input("hold", _estimate(vi, 0.01, sagged))
    assert np.allclose(runner.hold.target, Q_PANDA)
    g_sag = pin.computeGeneralizedGravity(robot.pin_model, robot.pin_model.createData(), sagged)
    assert (u1 - g_sag)[1] < -1.0 and abs(u0[1] - u1[1]) > 1.0  # a restoring torque beyond gravity's change
    # stale: the gravity torque of the target alone while stale_hold, then zero
    ff = runner.safe_input("hold", _estimate(vi, 0.01, sagged), fresh=False, stale_hold=True)
    assert np.allclose(ff, runner.hold.feedforward())
    assert np.array_equal(
        runner.safe_input("hold", _estimate(vi, 0.01, sagged), fresh=False, stale_hold=False), np.zeros(vi.nu)
    )
    # nothing ever measured: zero (there is no configuration to hold)
    fresh_runner, _ = _runner(vi)
    assert np.array_equal(fresh_runner.safe_input("hold", None, fresh=False, stale_hold=True), np.zeros(vi.nu))


def test_entering_a_plan_or_restarting_releases_the_hold(panda):
    _, vi = panda
    runner, _ = _runner(vi)
    runner.safe_input("hold", _estimate(vi, 0.0, Q_PANDA))
    assert runner.hold.engaged
    runner.reset()  # (activate)
    assert not runner.hold.engaged
    runner.safe_input("hold", _estimate(vi, 0.0, Q_PANDA + 0.1))
    assert np.allclose(runner.hold.target, Q_PANDA + 0.1)
    plan = vc.Plan(
        times=np.array([0.0, vi.dt]),
        X=np.tile(vi.state_from_configurations(Q_PANDA, Q_PANDA), (2, 1)),
        U=np.zeros((1, vi.nu)),
        K=np.zeros((1, vi.nu, vi.nx)),
        dt=vi.dt,
        model_name="panda",
        model_hash=vi.robot.hash,
        joint_names=vi.robot.joint_names,
        input_names=list(vi.robot.actuated),
    )
    runner.queue(7, plan, start_on_receipt=False)
    out = runner.command(0.0, vi.state_from_configurations(Q_PANDA, Q_PANDA))
    assert out[0] == 0 and runner.active_seq == 7 and not runner.hold.engaged


def test_a_hold_weight_change_gives_a_stiffer_gain(panda):
    _, vi = panda
    soft, stiff = HoldLaw(vi, (1.0, 1.0, 0.01)), HoldLaw(vi, (1e4, 1.0, 0.01))
    soft.engage(Q_PANDA)
    stiff.engage(Q_PANDA)
    x = vi.state_from_configurations(Q_PANDA + 0.01, Q_PANDA + 0.01)
    d_soft = soft.command(x)[0] - soft.feedforward()
    d_stiff = stiff.command(x)[0] - stiff.feedforward()
    assert np.linalg.norm(d_stiff) > 3 * np.linalg.norm(d_soft)


def test_a_vehicle_damps_where_an_arm_holds():
    pend = make_integrator("midpoint", vc.load_robot("pendulum"), 0.01)
    runner, _ = _runner(pend, vehicle=True)
    assert runner.hold is None
    v = np.array([0.5])
    u = runner.safe_input("hold", Estimate(0.0, pend.state_from_configurations(np.zeros(1), np.zeros(1)), v))
    assert u[0] == pytest.approx(-1.0 * 0.5)  # −d·q̇ with safe_damping 1


def test_a_nonholonomic_robot_gets_no_hold_gain_whatever_the_round_off():
    """A parked diff-drive's linearization leaves its sideways motion to no input (Brockett 1983): the DLQR about it
    is refused by name, not by a Riccati iteration whose verdict on those marginal modes hinged on round-off (it
    converged with LAPACK's LU of R_y and not with ours, the same matrix to 1e-16). The plan then carries no hold gain
    and says why; the law holds with its last TV-LQR gain."""
    from vi_control.control.hold import hold_gain
    from vi_control.planning import load_task, make_system, plan_task

    task = load_task("task_diffdrive_parking")
    vi = make_system(task, "gni")
    with pytest.raises(np.linalg.LinAlgError, match=r"diffdrive\w* is nonholonomic.*Brockett"):
        hold_gain(vi, np.zeros(vi.nq), np.eye(vi.nx), np.eye(vi.nu))
    said = []
    plan, res = plan_task(vi, task, log=said.append)
    assert res.converged and plan.K_final is None
    assert any("no hold gain about the final state" in s and "nonholonomic" in s for s in said), said


def test_an_over_speed_is_braked_by_capped_damping_and_gravity_not_by_the_hold_law(panda):
    """``PlanRunner.brake_input`` (the command on FAULT_OVERSPEED): the held configuration's gravity torque minus
    d·q̇, d capped for the command's hold (``damping_cap``) — no position feedback, so the torque does not depend on
    where the arm is. On Pinocchio's plant with the command held 50 ms (a stalling loop), from 4.2 rad/s on the first
    joint, over the 0.2 s of an over-speed: the brake lowers the top speed at every command, below the bound (3.26);
    the hold law's saturated position feedback (what the over-speed got at first) drives the arm faster instead
    (a fresh-clone CI run's MuJoCo panda, its plant stalling 0.2 s: from 3.5 to 60 rad/s)."""
    robot, vi = panda
    runner, _ = _runner(vi, safe_damping=50.0)
    period = 0.05
    runner.safe_input("hold", _estimate(vi, 0.0, Q_PANDA))  # the hold engaged at rest
    v = np.zeros(7)
    v[0] = 4.2
    moved = Q_PANDA + np.array([0.3, 0, 0, 0, 0, 0, 0])
    u_here = runner.brake_input("hold", _estimate(vi, 0.0, Q_PANDA, v), period)
    u_there = runner.brake_input("hold", _estimate(vi, 0.0, moved, v), period)
    d = np.minimum(50.0, runner.damping_cap(_estimate(vi, 0.0, Q_PANDA, v).x, period))
    assert np.allclose(u_here, np.clip(runner.hold.feedforward() - d * v, -robot.effort_limits, robot.effort_limits))
    assert u_here[0] < 0 and np.allclose(u_here, u_there, atol=1e-9 * np.abs(u_here).max())  # no position feedback

    def brake(q, qd):
        return runner.brake_input("hold", _estimate(vi, 0.0, q, qd), period)

    def hold_law(q, qd):
        return runner.hold.command(vi.state_from_configurations(q - vi.dt * qd, q))[0]

    speeds = {}
    for name, law in (("brake", brake), ("hold law", hold_law)):
        model, data = robot.pin_model, robot.pin_model.createData()
        q, qd, top = Q_PANDA.copy(), v.copy(), []
        for i in range(int(0.2 / 1e-3) + 1):
            if i % 50 == 0:
                tau = law(q, qd)
                top.append(float(np.abs(qd).max()))
            qd = qd + 1e-3 * pin.aba(model, data, q, qd, tau)
            q = q + 1e-3 * qd
        speeds[name] = top
    assert all(b < a for a, b in zip(speeds["brake"], speeds["brake"][1:])), speeds
    assert speeds["brake"][-1] < 1.5 * robot.joints[0].velocity_limit and max(speeds["hold law"]) > 4.2, speeds


def test_a_pose_without_a_hold_gain_is_held_by_its_gravity_torque(panda):
    """Where no hold gain can be computed (the Riccati iteration capped at one doubling sweep: it does not converge)
    the hold still engages — its gravity torque alone, no feedback — and says why in ``gain_failure``."""
    import functools

    from vi_control.control.lqr import dlqr

    robot, vi = panda
    hold = HoldLaw(vi, (100.0, 1.0, 0.01), riccati=functools.partial(dlqr, max_iterations=1))
    hold.engage(Q_PANDA)
    assert hold.engaged and "did not converge" in hold.gain_failure
    g = pin.computeGeneralizedGravity(robot.pin_model, robot.pin_model.createData(), Q_PANDA)
    x = vi.state_from_configurations(Q_PANDA - 0.01, Q_PANDA + 0.02)  # off the target, moving: no feedback acts
    assert np.allclose(hold.command(x)[0], g, atol=1e-9) and np.allclose(hold.feedforward(), g, atol=1e-9)
