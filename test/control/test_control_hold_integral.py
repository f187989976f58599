"""Integral action of the hold (TrackingController ``hold_integral_gain``): under a plant 10 % heavier than the
planner's model, the proportional DLQR hold of a pendulum held out sideways settles off its pose, and the
integral action takes the offset away and ends applying the plant's own holding torque (Pinocchio's rnea of the
heavier model); the sum is clamped at the effort limit (anti-windup) where the pose cannot be held; before the
plan's end nothing is added, and a controller timer faster than the plan's steps integrates once per step."""

import numpy as np
import pinocchio as pin
import pytest

import vi_control as vc
from vi_control.control.hold import hold_gain
from vi_control.control.plan import Plan
from vi_control.control.tracking import tracking_law

Q_HOLD = np.array([0.4])  # rad: out sideways, gravity's torque m g l sin 0.4 = 3.8 N·m (limit 5 N·m)


def _hold_plan(vi, q, N=3):
    K, x_eq, u_eq = hold_gain(vi, q, np.diag([100.0, 10.0]), 0.1 * np.eye(1))
    return Plan(
        times=np.arange(N + 1) * vi.dt,
        X=np.tile(x_eq, (N + 1, 1)),
        U=np.tile(u_eq, (N, 1)),
        K=np.tile(K, (N, 1, 1)),
        dt=vi.dt,
        model_name="pendulum",
        model_hash=vi.robot.hash,
        joint_names=["theta"],
        input_names=["theta"],
        K_final=K,
        U_final=u_eq,
    )


def _run(ki, steps=3000, q0=Q_HOLD, plant_scale=1.1, repeat=1):
    model = vc.MidpointVI(vc.load_robot("pendulum"), 0.01)
    plant = vc.MidpointVI(vc.load_robot("pendulum", mass_scale=plant_scale), 0.01)
    plan = _hold_plan(model, Q_HOLD)
    law = tracking_law(plan, model, hold_integral_gain=ki)
    x = plant.state_from_configurations(q0, q0)
    for k in range(steps):
        for _ in range(repeat):  # a controller timer `repeat` times faster than the states: the same k again
            u, _ = law.command(k, x)
        x = plant.step(x, u)
    return plant, law, x, u


def test_integral_action_removes_the_offset_of_a_heavier_plant():
    plant, _, x_p, u_p = _run(0.0)
    offset = abs(x_p[0] - Q_HOLD[0])
    assert offset > 5e-3  # the proportional hold sags under the extra 10 % of gravity
    plant, law, x_i, u_i = _run(20.0)
    assert abs(x_i[0] - Q_HOLD[0]) < 1e-6 < 1e-3 * offset
    r = plant.robot
    tau = pin.rnea(r.pin_model, r.create_data(), Q_HOLD, np.zeros(1), np.zeros(1))  # the plant's holding torque
    assert u_i[0] == pytest.approx(tau[0], rel=1e-4)
    assert u_p[0] != pytest.approx(tau[0], rel=1e-2)


def test_integral_is_clamped_at_the_effort_limit_and_counts_plan_steps_not_ticks():
    """A plant 3× heavier needs 3 × 3.8 N·m > the 5 N·m limit: the sum stops at the limit (k_i z = 5, not
    growing without bound), the command is clamped and finite. Ten ticks per state integrate as one."""
    _, law, x, u = _run(20.0, steps=2000, plant_scale=3.0)
    assert law.ki * abs(law.z[0]) == pytest.approx(5.0) and abs(u[0]) <= 5.0 and np.isfinite(x).all()
    _, once, x1, _ = _run(20.0, steps=300)
    _, tenfold, x10, _ = _run(20.0, steps=300, repeat=10)
    assert np.array_equal(once.z, tenfold.z) and np.array_equal(x1, x10)


def test_nothing_is_added_before_the_plan_ends_and_a_zero_gain_is_the_plain_law():
    model = vc.MidpointVI(vc.load_robot("pendulum"), 0.01)
    plan = _hold_plan(model, Q_HOLD, N=50)
    x = model.state_from_configurations(Q_HOLD - 0.01, Q_HOLD - 0.01)
    with_i, plain = tracking_law(plan, model, hold_integral_gain=20.0), tracking_law(plan, model)
    for k in range(50):
        assert np.array_equal(with_i.command(k, x)[0], plain.command(k, x)[0])
    assert with_i.command(50, x)[0][0] > plain.command(50, x)[0][0]  # the hold: below the pose, pushes up more
    with pytest.raises(ValueError, match="hold_integral_gain must be ≥ 0"):
        tracking_law(plan, model, hold_integral_gain=-1.0)
