"""control.schedule.PlanSchedule: which plan the controller runs when, as the planner predicts it — against the
controller's own runner (control.runner.PlanRunner fed the same plans) and against rollouts written out here.

The case it exists for: a cycle whose lead a clock-rate transient stretched starts seconds ahead; the next cycle
starts earlier, so it replaces that one, and must continue — and predict under — the plan that runs until then
(the planner used the latest published plan: a 6 N·m jump at the switch in a loaded CI run of test_ros_mpc)."""

import dataclasses

import numpy as np
import pytest
from plan_runner import plan_runner

from vi_control.control.plan import Plan
from vi_control.control.schedule import PlanSchedule


def _plan(vi, start_step: int, N: int, u: float) -> Plan:
    """A plan of constant torque ``u`` without feedback (K = 0: its law is U_k), from ``start_step``·Δt."""
    return Plan(
        times=(start_step + np.arange(N + 1)) * vi.dt,
        X=np.zeros((N + 1, 2)),
        U=np.full((N, 1), u),
        K=np.zeros((N, 1, 2)),
        dt=vi.dt,
        model_name="pendulum",
        model_hash=vi.robot.hash,
        joint_names=["theta"],
        input_names=["theta"],
    )


def _rollout(vi, x, torques):
    for u in torques:
        x = vi.step(x, np.array([u]))
    return x


@pytest.fixture
def plans(pendulum_vi):
    """A: from 0, 40 steps of +1 N·m; B: from step 30 (a cycle stretched ahead), −2 N·m."""
    return _plan(pendulum_vi, 0, 40, 1.0), _plan(pendulum_vi, 30, 40, -2.0)


def test_a_cycle_before_the_stretched_one_continues_the_plan_that_runs(pendulum_vi, plans):
    vi, (A, B) = pendulum_vi, plans
    s = PlanSchedule()
    s.add(A)
    s.add(B)
    assert [p is q for p, q in zip(s.plans, [A, B])] == [True, True]
    t_start = 9 * vi.dt  # the next cycle starts before B: B is replaced, A runs until then
    assert (
        len(s.remaining(t_start)) == 1
        and s.remaining(t_start)[0] is A
        and PlanSchedule.in_force(s.remaining(t_start), t_start) is A
    )
    x = np.array([0.1, 0.0])
    got = s.predict(vi, 2 * vi.dt, x, 7, t_start)
    assert np.allclose(got, _rollout(vi, x, [1.0] * 7), rtol=0, atol=1e-12)
    assert not np.allclose(got, _rollout(vi, x, [-2.0] * 7), atol=1e-3)  # (B's law: what the planner used)
    # a cycle after B's start: A until B's step 0 begins (29.5 Δt), B from there
    got = s.predict(vi, 2 * vi.dt, x, 33, 35 * vi.dt)
    assert np.allclose(got, _rollout(vi, x, [1.0] * 28 + [-2.0] * 5), rtol=0, atol=1e-12)
    # published, the earlier cycle replaces B
    C = _plan(vi, 9, 40, 0.5)
    s.add(C)
    assert len(s.plans) == 2 and s.plans[0] is A and s.plans[1] is C


def test_where_no_plan_runs_the_robot_stays_where_it_was_measured(pendulum_vi, plans):
    vi, (A, _) = pendulum_vi, plans
    s = PlanSchedule()
    x = np.array([0.3, 0.0])
    assert np.array_equal(s.predict(vi, 0.0, x, 5, 1.0), x)  # nothing published: held
    s.add(A)
    assert np.array_equal(s.predict(vi, 41 * vi.dt, x, 5, 50 * vi.dt), x)  # A over: its law holds X_N
    # measured before A starts: held until A's step 0 begins (−Δt/2), then A (steps at 0 and Δt)
    got = s.predict(vi, -3 * vi.dt, x, 5, 10 * vi.dt)
    assert np.allclose(got, _rollout(vi, x, [1.0] * 2), rtol=0, atol=1e-12)
    s.clear()
    assert s.plans == []


@pytest.mark.parametrize("seed", range(6))
def test_the_schedule_runs_the_plan_the_controller_runs(pendulum_vi, seed):
    """Plans published in a random order of starts (each before its start, some half a step off the grid), as a
    planner's cycles come: at every tick (Δt/4 apart) the controller's runner has entered the plan the schedule
    says runs then."""
    vi, rng = pendulum_vi, np.random.default_rng(seed)
    runner = plan_runner(vi, accept_unconverged=True, safe_mode="zero")
    s, seqs = PlanSchedule(), {}
    publish = {}  # tick -> plans published then
    for i in range(12):
        start = int(rng.integers(2, 60)) + (0.5 if rng.random() < 0.2 else 0.0)
        at = int(rng.integers(0, max(1, int(4 * start) - 2)))  # (a tick before its start)
        publish.setdefault(at, []).append(_plan(vi, 0, 20, float(i)).shifted(start * vi.dt))
    x = np.zeros(2)
    for tick in range(4 * 90):
        t = tick * vi.dt / 4
        for p in publish.get(tick, []):
            seq = len(seqs) + 1
            seqs[id(p)] = seq
            s.add(p)
            runner.queue(seq, p, False)
        runner.command(t, x)
        s.prune(t)
        running = PlanSchedule.in_force(s.plans, t)
        assert runner.active_seq == (seqs[id(running)] if running is not None else None), (tick, t)


def test_a_plan_is_predicted_to_its_last_step_and_held_from_its_end(pendulum_vi, plans):
    """A's last step runs from 39 Δt (its law's U_39); at 40 Δt, its end (times[-1]), the robot is held where it was
    (the controller's hold about X_N, not predicted): three steps from 39 Δt are one step of A's law, then nothing."""
    vi, (A, _) = pendulum_vi, plans
    s = PlanSchedule()
    s.add(A)
    x = np.array([0.1, 0.0])
    got = s.predict(vi, 39 * vi.dt, x, 3, 42 * vi.dt)
    np.testing.assert_allclose(got, _rollout(vi, x, [1.0]), rtol=0, atol=1e-12)
    np.testing.assert_array_equal(s.predict(vi, 40 * vi.dt, x, 3, 43 * vi.dt), x)


def test_a_cycle_starts_on_the_running_plans_grid_and_never_at_a_plans_start_step(pendulum_vi):
    """``PlanSchedule.cycle_start``: the first step of the plan in force at the wanted time that is not before it (a
    time within 1e-9 Δt of a step is that step), never before that plan's start, and never at the step a scheduled
    plan starts at — there the cycle follows by one step, whichever plan's start it is: the running one's own, a later
    one's on the same grid (in force from half a step before its start), or one half a step off the grid."""
    dt = pendulum_vi.dt
    a = _plan(pendulum_vi, 0, 20, 0.0)
    start = PlanSchedule.cycle_start
    assert start([a], 3.4 * dt, dt) == pytest.approx(4 * dt, abs=1e-15)
    assert start([a], 4 * dt, dt) == pytest.approx(4 * dt, abs=1e-15)
    assert start([a], (4 + 1e-6) * dt, dt) == pytest.approx(5 * dt, abs=1e-15)
    assert start([a], -2 * dt, dt) == pytest.approx(dt, abs=1e-15)  # (not before a, and not at a's own start)
    b = _plan(pendulum_vi, 10, 20, 0.0)
    assert start([a, b], 8.2 * dt, dt) == pytest.approx(9 * dt, abs=1e-15)
    assert start([a, b], 9.4 * dt, dt) == pytest.approx(11 * dt, abs=1e-15)  # a's step 10 is b's start: one later
    assert start([a, b], 9.5 * dt, dt) == pytest.approx(11 * dt, abs=1e-15)  # b in force: its own start, one later
    half = dataclasses.replace(b, times=b.times + 0.5 * dt)  # b starting at 10.5 Δt, half a step off a's grid
    assert start([a, half], 9.2 * dt, dt) == pytest.approx(11 * dt, abs=1e-15)  # 10 Δt runs half's step 0
