"""The safe command's damping capped to how long it is held (control.runner.PlanRunner.damping_cap): −D·q̇ held over
a period T gives q̇ ← (I − T·D·(M⁻¹)_aa) q̇, which reverses a light joint's velocity (and grows it once T·d/M > 2).
The cap is checked against Pinocchio's M(q) (crba), and by holding the command over a zero-gravity panda stepped by
the midpoint VI at 10 steps per period: its energy falls at every period with the cap and grows without it (the
wrist's d·T/M₇₇ ≈ 3 at 50 Hz with d = 1 N·m·s/rad, the default)."""

import numpy as np
import pinocchio as pin
import pytest

import vi_control as vc
from vi_control.control.intake import Estimate, JointLimits, StateIntake
from vi_control.control.runner import PlanRunner, command_hold
from vi_control.model.bundled import bundled_urdf, example_robot_urdf

T = 0.02  # a 50 Hz command
Q_PANDA = np.array([0.0, -0.3, 0.0, -2.0, 0.0, 1.8, 0.8])


def _runner(vi, d, act_q_index):
    logger = type("Logger", (), {"info": lambda self, m: None, "warning": lambda self, m: None})()
    return PlanRunner(
        vi.robot,
        vi,
        dict(safe_damping=d, safe_mode="damping"),
        False,
        vi.robot.joint_names,
        np.asarray(act_q_index),
        logger,
        lambda *a, **k: None,
    )


def pinocchio_mass_matrix(robot, q):
    """M(q) by Pinocchio's crba (independent of our mass matrices), symmetrized."""
    M = pin.crba(robot.pin_model, robot.create_data(), q)  # (upper triangle)
    return np.triu(M) + np.triu(M, 1).T


@pytest.fixture(scope="module")
def panda():
    robot = vc.load_robot(example_robot_urdf("panda"), {"gravity": [0.0, 0.0, 0.0]})
    return vc.make_integrator("midpoint", robot, T / 10)


def test_the_cap_is_the_row_sum_bound_of_pinocchios_inverse_inertia(panda):
    r = _runner(panda, 1.0, np.arange(7))
    x = panda.state_from_velocity(Q_PANDA, np.zeros(7))
    A = np.linalg.inv(pinocchio_mass_matrix(panda.robot, Q_PANDA))
    cap = r.damping_cap(x, T)
    assert cap == pytest.approx(1.0 / (T * np.abs(A).sum(axis=1)), rel=1e-9)
    d = np.minimum(1.0, cap)
    assert d[6] < 0.3 and np.all(d[:4] == 1.0)  # the wrist is capped, the heavy joints keep d
    lam = np.linalg.eigvals(T * np.diag(d) @ A).real.max()
    assert 0.5 < lam <= 1.0  # no mode reverses within the period (and the bound is not idle)
    assert np.linalg.eigvals(T * A).real.max() > 2.0  # uncapped (d = 1): a mode that grows
    # the command is −min(d, cap)·q̇ on each joint
    v = np.linspace(-1.0, 1.0, 7)
    u = r.safe_input("damping", Estimate(0.0, x, v), period=T)
    assert u == pytest.approx(-d * v, rel=1e-12)
    assert r.safe_input("damping", Estimate(0.0, x, v)) == pytest.approx(-v)  # no period: d as set
    assert r.damping_cap(x, 10 * T) == pytest.approx(cap / 10, rel=1e-12)


def _shoulder_prescribed():
    """The double pendulum with its shoulder prescribed (its input is its position), its elbow actuated, Δt = 0.1 s."""
    return vc.make_integrator(
        "midpoint",
        vc.load_robot(bundled_urdf("double_pendulum"), {"prescribed": ["shoulder"], "actuated": ["elbow"]}),
        0.1,
    )


def test_the_cap_sees_the_inertia_of_the_actuated_joints_with_prescribed_ones_held():
    q = np.array([0.3, -0.7])
    acrobot = vc.make_integrator(
        "midpoint", vc.load_robot(bundled_urdf("double_pendulum"), {"actuated": ["elbow"]}), 0.1
    )
    A = np.linalg.inv(pinocchio_mass_matrix(acrobot.robot, q))
    x = acrobot.state_from_velocity(q, np.zeros(2))
    assert _runner(acrobot, 1.0, [1]).damping_cap(x, 0.1) == pytest.approx([1.0 / (0.1 * A[1, 1])], rel=1e-9)
    held = _shoulder_prescribed()
    M = pinocchio_mass_matrix(held.robot, q)
    x = np.concatenate([q, np.zeros(2)])
    r = _runner(held, 1.0, [1])
    assert r.damping_cap(x, 0.1) == pytest.approx([M[1, 1] / 0.1], rel=1e-9)  # M_dd⁻¹ = 1/M₂₂, not (M⁻¹)₂₂
    assert M[1, 1] * A[1, 1] > 1.5  # (the two differ)


def _energies(vi, runner, period, x0, periods):
    """Energy at every period of the safe command held (ZOH) over ``period`` (10 midpoint steps per period)."""
    x, E = x0.copy(), [vi.energy(x0)]
    steps = int(round(period / vi.dt))
    for k in range(periods):
        u = runner.safe_input("damping", Estimate(k * period, x, vi.velocity(x)), period=period)
        for _ in range(steps):
            x = vi.step(x, u)
        E.append(vi.energy(x))
    return np.array(E)


def test_held_capped_damping_takes_energy_out_at_every_period_where_uncapped_pumps_it_in(panda):
    x0 = panda.state_from_velocity(Q_PANDA, np.array([0.3, -0.2, 0.4, 0.5, -0.6, 0.7, 1.0]))
    r = _runner(panda, 1.0, np.arange(7))
    capped = _energies(panda, r, T, x0, 100)
    assert np.all(np.diff(capped) < 0.0)
    assert capped[-1] < 0.25 * capped[0]
    r.damping_cap = lambda x, period: np.full(7, np.inf)  # the same command without the cap
    uncapped = _energies(panda, r, T, x0, 100)
    assert uncapped.max() > 2.0 * uncapped[0]


def test_a_command_is_held_for_the_timer_period_or_the_joint_states_interval():
    assert command_hold("timer", 50.0, 0.01, 0.001) == pytest.approx(0.02)
    assert command_hold("joint_state", 50.0, 0.01, 0.03) == pytest.approx(0.03)  # a driver slower than Δt
    assert command_hold("joint_state", 50.0, 0.01, 0.001) == pytest.approx(0.01)  # at least Δt (a lockstep step)
    assert command_hold("joint_state", 50.0, 0.01, None) == pytest.approx(0.01)  # one state so far


def test_the_intake_measures_the_interval_between_accepted_states(pendulum_vi):
    intake = StateIntake(pendulum_vi, JointLimits(pendulum_vi.robot, 0.25, 1e4, 1.5, 1e3), 0.5, "velocities")
    assert intake.state_interval is None
    for t in (1.0, 1.03, 1.07):
        assert isinstance(intake.joint_state(t, np.array([0.1]), np.zeros(1), t), Estimate)
    assert intake.state_interval == pytest.approx(0.04)
    intake.reset()
    assert intake.state_interval is None


def test_the_safe_command_holds_prescribed_joints_where_they_were_last_measured():
    """A model with a prescribed joint (its input is its position): the safe command holds it where it was last
    measured — from a valid state its measured position; from none (a stale or refused state) the last one measured —
    and is None until a position was measured at all (commanding 0 would move the joint there)."""
    held = _shoulder_prescribed()
    r = _runner(held, 1.0, [1])
    assert r.safe_input("zero", None) is None
    x = np.array([0.4, -0.2, 0.0, 0.5])
    u = r.safe_input("damping", Estimate(0.0, x, np.array([0.0, 0.5])))
    assert list(u) == [pytest.approx(-0.5), 0.4]  # (the elbow damped, −d·q̇ with no period given; the shoulder held)
    x2 = np.array([0.7, -0.2, 0.0, 0.0])
    assert r.safe_input("zero", Estimate(0.1, x2, np.zeros(2)))[1] == 0.7
    assert list(r.safe_input("zero", None)) == [0.0, 0.7]  # (no state: the last measured position held)
