"""control.intake.StateIntake without ROS: what the controller node does with each joint state, decided on decoded
arrays and stamps — stamps (stale, future, backwards, never set), republished states, a clock that went back,
another driver's joints, NaN and wrong sizes, the model's limits — against the expected verdicts, and the estimate
against the discrete Legendre transform of the pair (q(t − Δt), q(t)) (Johnson2015, eq. 1b) computed by the integrator.
"""

import numpy as np
import pytest

from vi_control.control.intake import (
    FAULT_BACKWARDS,
    FAULT_FUTURE,
    FAULT_INVALID_STATE,
    FAULT_LIMITS,
    FAULT_OVERSPEED,
    FAULT_STALE,
    OVERSPEED_TRUST,
    Estimate,
    Fault,
    JointLimits,
    Republished,
    StateIntake,
)
from vi_control.integrators.midpoint import MidpointVI

DT, TIMEOUT = 0.01, 0.5


@pytest.fixture(scope="module")
def vi(pendulum_robot):
    return MidpointVI(pendulum_robot, DT)


class Recorder:
    """What the intake reports besides its verdicts: the notices and the clock resets (with the state then)."""

    def __init__(self):
        self.notices, self.resets = [], []


@pytest.fixture
def intake(vi):
    # the pendulum's θ is continuous (bound 10 rad here); its URDF velocity limit 20 rad/s × 1.5 = 30 rad/s
    rec = Recorder()
    it = StateIntake(
        vi,
        JointLimits(vi.robot, 0.25, 10.0, 1.5, 1e3),
        TIMEOUT,
        notice=rec.notices.append,
        on_clock_back=lambda t, last: rec.resets.append((t, last, it.state)),
    )
    it.rec = rec
    return it


def _q(v: float) -> np.ndarray:
    return np.array([v])


def test_a_measured_velocity_gives_the_momentum_m_qdot_less_half_a_step_of_gravity(intake, vi):
    """p = M(q)q̇ − (Δt/2)g(q) (Pinocchio's crba and gravity here; the pendulum's holding torque is g): the inverse of
    the wire's q̇_k = M⁻¹(p_k + (Δt/2)g(q_k)) (docs/concepts/ros.md)."""
    import pinocchio as pin

    q, qdot = _q(0.3), _q(-1.2)
    est = intake.joint_state(1.0, q, qdot, now=1.0)
    assert isinstance(est, Estimate) and est is intake.state and intake.ever_valid
    M = pin.crba(vi.robot.pin_model, vi.robot.create_data(), q)
    g = pin.computeGeneralizedGravity(vi.robot.pin_model, vi.robot.create_data(), q)
    assert est.t == 1.0 and np.allclose(est.x, np.concatenate([q, M @ qdot - DT / 2 * g]), rtol=0, atol=1e-14)
    qdot[0] = 99.0  # the caller's buffer, reused for the next message: the state keeps its own copy
    assert est.qdot[0] == -1.2


def test_positions_only_need_two_samples_and_give_the_legendre_transform_of_the_pair(intake, vi):
    assert intake.joint_state(1.0, _q(0.3), None, now=1.0) is None  # nothing to difference yet
    assert intake.state is None and not intake.ever_valid and intake.last_stamp == 1.0
    est = intake.joint_state(1.0 + DT, _q(0.31), None, now=1.0 + DT)
    assert np.allclose(est.x, vi.state_from_configurations(_q(0.3), _q(0.31)), rtol=0, atol=1e-12)
    assert np.array_equal(est.qdot, vi.velocity(est.x))  # no measured q̇: the estimate's, for the safe damping


def test_stale_and_future_stamps_are_refused_and_forget_the_state(intake):
    assert isinstance(intake.joint_state(1.0, _q(0.3), _q(0.0), now=1.0), Estimate)
    v = intake.joint_state(1.0, _q(0.3), _q(0.0), now=1.0 + TIMEOUT + 0.01)
    assert isinstance(v, Fault) and v.kind == FAULT_STALE and "0.510 s old" in v.detail
    assert intake.state is None and intake.ever_valid  # (it was valid once: the node damps from here on)
    v = intake.joint_state(3.0, _q(0.3), _q(0.0), now=3.0 - TIMEOUT - 0.01)
    assert v.kind == FAULT_FUTURE and "0.510 s ahead" in v.detail
    assert isinstance(intake.joint_state(2.0, _q(0.3), _q(0.0), now=2.0 + TIMEOUT), Estimate)  # at the bound: used
    assert isinstance(intake.joint_state(2.6, _q(0.3), _q(0.0), now=2.6 - TIMEOUT), Estimate)  # ahead by it: used


def test_the_same_stamp_again_is_republished_and_keeps_the_state_and_the_history(intake, vi):
    assert intake.joint_state(1.0, _q(0.3), None, now=1.0) is None
    first = intake.joint_state(1.0 + DT, _q(0.31), None, now=1.0 + DT)
    again = intake.joint_state(1.0 + DT, _q(0.31), None, now=1.05)
    assert again == Republished(1.0 + DT) and intake.state is first
    nxt = intake.joint_state(1.0 + 2 * DT, _q(0.32), None, now=1.05)  # the history was not restarted
    assert np.allclose(nxt.x, vi.state_from_configurations(_q(0.31), _q(0.32)), rtol=0, atol=1e-12)
    assert intake.counts["states"] == 4


def test_stamps_going_back_are_refused_unless_the_clock_went_back_with_them(intake):
    intake.joint_state(5.0, _q(0.3), _q(0.0), now=5.0)
    v = intake.joint_state(4.9, _q(0.3), _q(0.0), now=5.0)  # the clock still at 5: a driver's stamps went back
    assert v.kind == FAULT_BACKWARDS and "stamp 4.9000 after 5.0000" in v.detail and not intake.rec.resets
    old = intake.joint_state(5.01, _q(0.3), _q(0.0), now=5.01)
    est = intake.joint_state(0.2, _q(0.1), _q(0.0), now=0.2)  # a simulator reset: stamps and clock back together
    assert intake.rec.resets == [(0.2, 5.01, old)]  # told before the new state replaced the old one
    assert isinstance(est, Estimate) and est.t == 0.2 and intake.last_stamp == 0.2


def test_a_clock_reset_restarts_the_positions_only_history(intake):
    intake.joint_state(5.0, _q(0.3), None, now=5.0)
    assert isinstance(intake.joint_state(5.0 + DT, _q(0.3), None, now=5.0 + DT), Estimate)
    assert intake.joint_state(0.1, _q(0.3), None, now=0.1) is None  # no sample before 0.1 − Δt after the reset
    assert len(intake.rec.resets) == 1


def test_unstamped_states_are_stamped_on_receipt_and_said_once(intake):
    est = intake.joint_state(0.0, _q(0.3), _q(0.0), now=3.0)
    assert est.t == 3.0 and intake.counts["unstamped"] == 1
    assert intake.joint_state(0.0, _q(0.3), _q(0.0), now=3.01).t == 3.01
    assert intake.counts["unstamped"] == 2 and len(intake.rec.notices) == 1
    assert "header.stamp = 0" in intake.rec.notices[0]


def test_a_zero_stamp_on_a_clock_at_zero_is_a_true_one(intake):
    """A lockstep simulation's first state: stamp 0 on a clock at 0, nothing to say. Republished before the first
    step, it can arrive after that step's clock: still the first state (not a new one stamped on receipt, which the
    real state of that step would then have been taken for a republish of) — while the clock is within the timeout
    of 0; later a zero stamp is a driver's that does not stamp."""
    first = intake.joint_state(0.0, _q(0.3), _q(0.0), now=0.0)
    assert first.t == 0.0 and not intake.rec.notices
    assert intake.joint_state(0.0, _q(0.3), _q(0.0), now=DT) == Republished(0.0) and intake.state is first
    step = intake.joint_state(DT, _q(0.31), _q(1.0), now=DT)  # the first step's state: new, from both samples
    assert np.allclose(step.x, intake.vi.state_from_configurations(_q(0.3), _q(0.31)), rtol=0, atol=1e-12)
    assert intake.counts["unstamped"] == 1  # (the one on the clock at 0)
    intake.reset()
    assert intake.joint_state(0.0, _q(0.3), _q(0.0), now=0.0).t == 0.0
    assert intake.joint_state(0.0, _q(0.3), _q(0.0), now=TIMEOUT + DT).t == TIMEOUT + DT  # stamped on receipt


def test_another_drivers_joints_are_counted_and_said_once_per_name_list(intake):
    est = intake.joint_state(1.0, _q(0.3), _q(0.0), now=1.0)
    gripper, wheels = "names none of the model's joints (got ['finger'])", "(got ['wheel_l', 'wheel_r'])"
    assert [intake.foreign(r) for r in (gripper, gripper, wheels, gripper)] == [True, False, True, False]
    assert intake.counts == dict(states=5, foreign=4, unstamped=0)
    assert intake.state is est  # not a fault of ours: the last state stands


def test_nan_and_wrong_sizes(intake, vi):
    v = intake.joint_state(1.0, _q(np.nan), _q(0.0), now=1.0)
    assert v == Fault(FAULT_INVALID_STATE, "joint state positions contain NaN/inf")
    v = intake.joint_state(1.0, np.array([0.3, 0.4]), None, now=1.0)
    assert v.kind == FAULT_INVALID_STATE and "2 positions for the model's 1" in v.detail
    assert intake.state is None and intake.last_stamp is None  # nothing was taken from them
    # velocities that are not nq finite values are none (a driver without them): the configurations decide
    assert intake.joint_state(1.0, _q(0.3), _q(np.inf), now=1.0) is None
    est = intake.joint_state(1.0 + DT, _q(0.31), np.zeros(3), now=1.0 + DT)
    assert np.allclose(est.x, vi.state_from_configurations(_q(0.3), _q(0.31)), rtol=0, atol=1e-12)
    v = intake.invalid("malformed joint state message (struct.error)")  # the decoder's refusal
    assert v.kind == FAULT_INVALID_STATE and intake.state is None and intake.counts["states"] == 5


def test_limits_on_positions_measured_velocities_and_the_estimates_velocity(intake):
    """Positions beyond the bounds are refused (the state forgotten). A measured velocity beyond its bound (30) is the
    robot's own over-speed up to OVERSPEED_TRUST × the bound: FAULT_OVERSPEED with the state kept — the safe
    command's feedback — (30.001, 300: just outside and at the edge); beyond that no plausible reading: refused
    (300.01). An estimated velocity (no measured one: a jump between two configurations) beyond the bound is
    refused."""
    v = intake.joint_state(1.0, _q(10.5), _q(0.0), now=1.0)
    assert v.kind == FAULT_LIMITS and "position of theta = 10.5 outside [-10, 10]" in v.detail
    assert intake.state is None
    assert isinstance(intake.joint_state(1.05, _q(0.3), _q(30.0), now=1.05), Estimate)  # at the bound: accepted
    for t, qdot in ((1.1, 30.001), (1.15, 30.0 * OVERSPEED_TRUST)):
        v = intake.joint_state(t, _q(0.3), _q(qdot), now=t)
        assert v.kind == FAULT_OVERSPEED and f"velocity of theta = {qdot:g} beyond ±30" in v.detail
        assert intake.state.t == t and intake.state.qdot[0] == qdot  # kept: the feedback that brakes
        assert intake.state.x[0] == 0.3 and intake.state.x[1] > 0.9 * qdot  # p ~ m l² q̇ (m = l = 1)
    v = intake.joint_state(1.2, _q(0.3), _q(300.01), now=1.2)
    assert v.kind == FAULT_LIMITS and "velocity of theta = 300.01 beyond ±300" in v.detail and intake.state is None
    assert intake.joint_state(1.2, _q(0.3), None, now=1.2) is None
    v = intake.joint_state(1.2 + DT, _q(0.8), None, now=1.2 + DT)  # 0.5 rad in one Δt: ~50 rad/s
    assert v.kind == FAULT_LIMITS and "velocity of theta" in v.detail and intake.state is None


def test_a_refusal_and_a_reset_restart_the_estimate(intake):
    intake.joint_state(1.0, _q(0.3), None, now=1.0)
    assert intake.joint_state(1.0 + DT, _q(0.3), None, now=2.0).kind == FAULT_STALE
    assert intake.joint_state(2.0, _q(0.3), None, now=2.0) is None  # the sample at 1.0 is forgotten
    assert isinstance(intake.joint_state(2.0 + DT, _q(0.3), None, now=2.0 + DT), Estimate)
    intake.reset()
    assert (intake.state, intake.last_stamp, intake.ever_valid) == (None, None, False)
    assert intake.joint_state(2.0 + 2 * DT, _q(0.3), None, now=2.0 + 2 * DT) is None


def test_a_plans_time_step_is_the_estimates_from_then_on(intake, pendulum_robot):
    vi2 = MidpointVI(pendulum_robot, 2 * DT)
    intake.set_system(vi2)
    intake.joint_state(1.0, _q(0.3), None, now=1.0)
    assert intake.joint_state(1.0 + DT, _q(0.305), None, now=1.0 + DT) is None  # half a Δt: nothing before t − Δt
    est = intake.joint_state(1.0 + 2 * DT, _q(0.31), None, now=1.0 + 2 * DT)
    assert np.allclose(est.x, vi2.state_from_configurations(_q(0.3), _q(0.31)), rtol=0, atol=1e-12)


def test_a_pose_state_is_checked_by_its_stamp_only(intake, vi):
    x = vi.state_from_configurations(_q(0.3), _q(0.3))
    est = intake.pose_state(1.0, x, np.array([0.5]), now=1.0)
    assert isinstance(est, Estimate) and est.t == 1.0 and est.x is x and est.qdot[0] == 0.5
    assert intake.pose_state(1.0, x, np.array([0.5]), now=1.0) == Republished(1.0)
    assert intake.pose_state(0.2, x, np.array([0.5]), now=1.0).kind == FAULT_STALE


def test_joint_limits_at_their_boundaries():
    """The cart-pole's slider (URDF ±2 m, margin 0.25 → ±2.25; 10 m/s × 1.5) and its continuous hinge (±10 turns
    of count, 50 rad/s × 1.5): each bound itself accepted, the next double beyond refused with the joint's name; a
    joint without a URDF velocity limit bounded by ``max_velocity``."""
    from vi_control.control.intake import JointLimits
    from vi_control.model import load_robot

    limits = JointLimits(load_robot("cartpole"), 0.25, 10.0, 1.5, 30.0)
    up, down = np.inf, -np.inf
    for q, bound, name in ((0, 2.25, "slider"), (0, -2.25, "slider"), (1, 10.0, "hinge"), (1, -10.0, "hinge")):
        x = np.zeros(2)
        x[q] = bound
        assert limits.check(x, None) is None
        x[q] = np.nextafter(bound, up if bound > 0 else down)
        assert f"position of {name} = " in limits.check(x, None)
    for j, vmax in ((0, 15.0), (1, 75.0)):
        for sign in (1.0, -1.0):
            v = np.zeros(2)
            v[j] = sign * vmax
            assert limits.check(np.zeros(2), v) is None
            v[j] = np.nextafter(sign * vmax, sign * np.inf)
            assert f"beyond ±{vmax:.6g}" in limits.check(np.zeros(2), v)
    # a joint whose URDF gives no velocity limit (the diff-drive's passive yaw: inf) is bounded by max_velocity
    robot = load_robot("diffdrive")
    limits = JointLimits(robot, 0.25, 10.0, 1.5, 30.0)
    j = [k for k, jt in enumerate(robot.joints) if not np.isfinite(jt.velocity_limit)][0]
    v = np.zeros(robot.nq)
    v[j] = 30.0
    assert limits.overspeed(v) is None and limits.vmax[j] == 30.0
    v[j] = np.nextafter(30.0, np.inf)
    assert f"velocity of {robot.joint_names[j]} = " in limits.overspeed(v)
