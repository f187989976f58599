"""Inelastic joint stops (vi_control.integrators.stops): the URDF position limits held as unilateral constraints on
the midpoint VI's step, checked against what an end stop does — never crossed, the kinetic energy along the stopped
joint lost and nothing else (the continuous impact map with Pinocchio's mass matrix), the static load carried, a
joint let go as soon as it moves away — and bit-identical free steps where no limit is reached."""

import numpy as np
import pinocchio as pin
import pytest

import vi_control as vc
from vi_control.model.generate import planar_chain_urdf


def _chain(n: int, lower: float, upper: float) -> vc.RobotModel:
    urdf = planar_chain_urdf(n, joint_type="revolute")
    first = urdf.replace('lower="-3.14159" upper="3.14159"', f'lower="{lower}" upper="{upper}"', 1)
    return vc.load_robot(first)


def test_a_pendulum_stops_at_its_limit_loses_its_kinetic_energy_and_swings_back_without_crossing():
    """Thrown at 3 rad/s against its 0.5 rad stop: it ends the impact step exactly at the stop, at rest a step
    later; from there the (then conservative) swing reaches −0.5 rad, the other stop, at rest — the energy of a
    pendulum released at 0.5 rad, m g (l/2)(1 − cos 0.5) above the hanging rest, to O(Δt²) — and never goes beyond
    either stop."""
    robot = _chain(1, -0.5, 0.5)
    dt = 1e-3
    vi = vc.MidpointVI(robot, dt)
    stops = vc.JointStops(vi)
    x = vi.state_from_configurations(np.array([0.3 - 3.0 * dt]), np.array([0.3]))
    X, held = [x], []
    for k in range(3000):
        x = stops.step(x, np.zeros(1), step_index=k)
        X.append(x)
        held.append(bool(stops.active))
    q = np.array(X)[:, 0]
    assert q.max() == pytest.approx(0.5, abs=1e-12) and q.min() >= -0.5 - 1e-12
    first = held.index(True)
    # the impact step ends at the stop with the momentum of its partial motion, the next takes it (at rest against
    # the stop: p = −(Δt/2)∇V); then gravity pulls it back: let go, not glued
    assert held[first : first + 3] == [True, True, False]
    rest = vi.energy(vi.state_from_configurations(np.zeros(1), np.zeros(1)))
    E = np.array([vi.energy(x) for x in X[first + 2 :]]) - rest
    analytic = 1.0 * 9.81 * 0.5 * (1 - np.cos(0.5))
    assert np.abs(E / analytic - 1).max() < 2e-3
    assert q[first + 2 :].min() == pytest.approx(-0.5, abs=2e-3)  # swings to the other stop and no further


def test_the_impact_keeps_the_momentum_the_stop_allows():
    """Two links, the shoulder thrown into its stop while the elbow is still: the elbow's velocity right after the
    impact is the continuous inelastic impact map's, q̇⁺ = q̇⁻ − M⁻¹e₁(e₁ᵀq̇⁻)/(e₁ᵀM⁻¹e₁) with Pinocchio's M at the
    impact, to O(Δt) (the step straddles the impact)."""
    robot = _chain(2, -0.5, 0.5)
    for dt, tol in ((1e-3, 0.05), (1e-4, 0.006)):
        vi = vc.MidpointVI(robot, dt)
        stops = vc.JointStops(vi)
        q0 = np.array([0.45, 0.0])
        x = vi.state_from_velocity(q0, np.array([4.0, 0.0]))
        k = 0
        while True:
            before = x
            x = stops.step(x, np.zeros(2), step_index=k)
            k += 1
            if stops.active:
                break
        q = x[:2]
        M = pin.crba(robot.pin_model, robot.create_data(), q)
        Minv = np.linalg.inv(M)
        v_minus = vi.velocity(before)
        e = np.array([1.0, 0.0])
        v_plus = v_minus - Minv @ e * (e @ v_minus) / (e @ Minv @ e)
        after = stops.step(x, np.zeros(2), step_index=k)  # its finite difference: the velocity after the impact
        v_after = (after[:2] - x[:2]) / dt
        assert q[0] == pytest.approx(0.5, abs=1e-12)
        assert abs(v_after[1] - v_plus[1]) < tol * abs(v_plus[1])


def test_a_torque_into_the_stop_is_carried_and_one_away_from_it_lets_go():
    """10 N·m pushing the pendulum into its stop (gravity's torque there is 2.35 N·m): held every step at exactly
    the bound — the free step alone would turn it beyond — until the torque reverses, when it leaves the stop
    at the first step."""
    robot = _chain(1, -0.5, 0.5)
    vi = vc.MidpointVI(robot, 0.01)
    stops = vc.JointStops(vi)
    x = vi.state_from_configurations(np.array([0.5]), np.array([0.5]))
    for k in range(200):
        free = vi.step(x, np.array([10.0]), step_index=k)
        x = stops.step(x, np.array([10.0]), step_index=k)
        assert free[0] > 0.5 and x[0] == pytest.approx(0.5, abs=1e-12) and stops.active == ((0, 0.5),)
    x = stops.step(x, np.array([-10.0]), step_index=200)
    assert x[0] < 0.5 and stops.active == ()


def test_free_steps_are_the_vi_s_own_and_continuous_joints_have_no_stops():
    """Where no limit is reached, a step with stops is bit-identical to the VI's; the bundled pendulum's continuous
    joint has no stop at all (it can turn over)."""
    robot = _chain(2, -2.0, 2.0)
    vi = vc.MidpointVI(robot, 0.01)
    stops = vc.JointStops(vi)
    x = vi.state_from_configurations(np.array([0.3, -0.2]), np.array([0.31, -0.2]))
    for k in range(100):
        x_stops, x_vi = stops.step(x, np.array([0.5, -0.2]), step_index=k), vi.step(x, np.array([0.5, -0.2]))
        assert np.array_equal(x_stops, x_vi)
        x = x_vi
    assert not vc.JointStops(vc.MidpointVI(vc.load_robot("pendulum"), 0.01)).stopped


def test_two_joints_at_their_stops_at_once_and_a_start_beyond_a_limit_is_left_alone():
    """Both joints of a chain driven into their stops hold both (the active set grows until nothing crosses); a
    joint that starts beyond its limit (a simulator started there; it warns) is not snapped onto it."""
    second = planar_chain_urdf(2, joint_type="revolute").replace(
        'lower="-3.14159" upper="3.14159"', 'lower="-0.3" upper="0.3"'
    )
    robot = vc.load_robot(second)
    vi = vc.MidpointVI(robot, 0.01)
    stops = vc.JointStops(vi)
    x = vi.state_from_configurations(np.array([0.2, 0.2]), np.array([0.25, 0.25]))
    for k in range(30):
        x = stops.step(x, np.array([20.0, 20.0]), step_index=k)
        assert np.all(x[:2] <= 0.3 + 1e-12)
    assert stops.active == ((0, 0.3), (1, 0.3))
    x = vi.state_from_configurations(np.array([0.5, 0.0]), np.array([0.5, 0.0]))
    assert np.array_equal(stops.step(x, np.zeros(2)), vi.step(x, np.zeros(2)))


def test_only_the_midpoint_vi_has_stops():
    with pytest.raises(TypeError, match="joint stops need the midpoint VI"):
        vc.JointStops(vc.make_integrator("linear_time", _chain(2, -0.5, 0.5), 0.01))


@pytest.mark.parametrize("lower, upper", [(0.2, 0.5), (-0.5, -0.2)])
def test_a_joint_whose_range_excludes_zero_stops_at_its_limit(lower, upper):
    """Limits on one side of zero — a range [0.2, 0.5] rad (or its mirror): thrown at 3 rad/s from the range's middle
    toward its far limit, the joint ends exactly there, held; a range test centred on zero would have let it pass."""
    robot = _chain(1, lower, upper)
    dt = 1e-3
    vi = vc.MidpointVI(robot, dt)
    stops = vc.JointStops(vi)
    mid, far = 0.5 * (lower + upper), upper if upper > 0 else lower
    v = 3.0 * np.sign(far - mid)
    x = vi.state_from_configurations(np.array([mid - v * dt]), np.array([mid]))
    q = []
    for k in range(300):
        x = stops.step(x, np.zeros(1), step_index=k)
        q.append(x[0])
    q = np.array(q)
    assert np.abs(q - mid).max() == pytest.approx(abs(far - mid), abs=1e-12)
    assert np.all((q >= lower - 1e-12) & (q <= upper + 1e-12))
