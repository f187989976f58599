"""control.runner.PlanRunner without ROS: which plan the controller follows and what it commands — admission, entry
at the stated start (at once on receipt, re-timed when late with the robot still at X_0), path and goal tolerances,
a clock that went back, faults and the safe command — against the expected decisions, and its commands against the
law u = U_k + K_k (X_k − x) evaluated here in numpy (Johnson2015, §VIII)."""

import dataclasses

import numpy as np
import pytest
from plan_runner import plan_runner
from scipy.linalg import solve_discrete_are

from vi_control.control.intake import Estimate, Fault
from vi_control.control.plan import Plan
from vi_control.control.runner import FAULT_GOAL, FAULT_PATH, PlanRunner
from vi_control.linearization import linearize

DT_RANGE = (1e-5, 10.0)
X_UP = np.array([np.pi, 0.0])


class Log:
    """A log sink: the runner's info and warning lines, and its throttled warnings as (kind, text, level)."""

    def __init__(self):
        self.info, self.warning, self.throttled = [], [], []

    def __call__(self, kind, text, level="warning"):
        self.throttled.append((kind, text, level))


@pytest.fixture(scope="module")
def upright(pendulum_vi):
    """A plan that holds the pendulum upright (θ = π, u = 0) with the LQR gain of scipy's DARE, N = 20, t₀ = 1."""
    vi = pendulum_vi
    lin = linearize(vi, X_UP, np.zeros(1))
    Q, R = np.diag([10.0, 1.0]), np.eye(1)
    P = solve_discrete_are(lin.A, lin.B, Q, R)
    K = np.linalg.solve(R + lin.B.T @ P @ lin.B, lin.B.T @ P @ lin.A)
    N = 20
    return Plan(
        times=1.0 + np.arange(N + 1) * vi.dt,
        X=np.tile(X_UP, (N + 1, 1)),
        U=np.zeros((N, 1)),
        K=np.tile(K, (N, 1, 1)),
        dt=vi.dt,
        model_name="pendulum",
        model_hash=vi.robot.hash,
        joint_names=["theta"],
        input_names=["theta"],
    )


@pytest.fixture
def runner(pendulum_vi):
    log = Log()
    logger = type(
        "Logger", (), {"info": lambda self, m: log.info.append(m), "warning": lambda self, m: log.warning.append(m)}
    )()
    r = plan_runner(pendulum_vi, logger, log, retime_tolerance=0.01)
    r.log = log
    return r


def _law(plan, k, x):
    """u_k = U_k + K_k (X_k − x), clamped to the pendulum's ±5 N·m."""
    return np.clip(plan.U[k] + plan.K[k] @ (plan.X[k] - x), -5.0, 5.0)


def test_admission(runner, upright):
    assert runner.admit(3, upright, DT_RANGE)
    runner.queue(3, upright, False)
    assert runner.pending == (3, upright, False) and "accepted plan 3: N=20" in runner.log.info[-1]
    assert not runner.admit(3, upright, DT_RANGE) and not runner.log.throttled  # a re-publish: silently
    loose = dataclasses.replace(upright, converged=False)
    assert not runner.admit(4, loose, DT_RANGE) and "accept_unconverged" in runner.log.throttled[-1][1]
    runner.p["accept_unconverged"] = True  # a live parameter: read at each use
    assert runner.admit(4, loose, DT_RANGE)
    wide = dataclasses.replace(upright, K=np.zeros((20, 1, 1)))
    assert not runner.admit(5, wide, DT_RANGE) and "nx, nu, ndx = (2, 1, 1)" in runner.log.throttled[-1][1]
    assert not runner.admit(6, upright, (0.2, 1.0)) and "outside [0.2, 1] s" in runner.log.throttled[-1][1]


def test_a_plan_waits_for_its_start_then_commands_the_law(runner, upright):
    runner.queue(1, upright, False)
    x = X_UP + np.array([0.02, -0.01])
    assert runner.command(0.94, x) is None and runner.law is None  # t₀ − Δt/2 not reached
    k, u = runner.command(0.96, x)
    assert k == 0 and runner.pending is None and runner.active_seq == 1
    assert np.allclose(u, _law(upright, 0, x), rtol=0, atol=1e-12)
    k, u = runner.command(1.0 + 7 * upright.dt + 0.004, x)  # the nearest sample
    assert k == 7 and np.allclose(u, _law(upright, 7, x), rtol=0, atol=1e-12)


def test_a_plan_that_starts_after_the_waiting_one_follows_it_and_a_halfway_tick_enters_the_later_step(runner, upright):
    """Two plans queued before the first has started (MPC: a cycle's plan arrives before the last cycle's starts):
    each is entered at its own start, not the later instead of the earlier; one that starts no later than the plan
    waiting replaces it; the earlier delivered again after the later is not new. A tick exactly halfway between two
    steps (t₀ − Δt/2 of a plan) runs the later step, in the law's index as in the entry of a plan starting there."""
    dt = upright.dt
    later = upright.shifted(1.0 + 5 * dt)
    runner.queue(1, upright, False)
    runner.queue(2, later, False)
    assert runner.pending[0] == 1 and [f[0] for f in runner.following] == [2]
    assert not runner.admit(1, upright, DT_RANGE) and not runner.log.throttled  # plan 1 delivered again: not new
    assert runner.command(1.0, X_UP)[0] == 0 and runner.active_seq == 1
    assert runner.command(1.0 + 4 * dt, X_UP)[0] == 4 and runner.active_seq == 1
    assert runner.law.index(1.0 + 4.5 * dt) == 5  # halfway: the later step
    assert runner.command(1.0 + 4.5 * dt, X_UP)[0] == 0 and runner.active_seq == 2  # entered at t₀ − Δt/2
    runner.queue(3, upright.shifted(2.0), False)
    runner.queue(4, upright.shifted(3.0), False)
    runner.queue(5, upright.shifted(2.0 + 0.4 * dt), False)  # the same step as plan 3: replaces it and plan 4
    assert runner.pending[0] == 5 and runner.following == []


def test_start_on_receipt_and_late_plans(runner, upright):
    runner.queue(1, upright, True)  # starts with the next state, whatever its stamp says
    assert runner.command(-5.0, X_UP)[0] == 0 and runner.law.plan.times[0] == -5.0
    runner.queue(2, upright, False)
    dt = upright.dt
    k, _ = runner.command(1.52, X_UP)  # 5 steps late, the robot still at X_0 (plan 1 over): re-timed to now
    # by whole steps to its first instant not before now (t₀ + 6Δt = 1.6): U_0 from now until 1.65
    assert k == 0 and runner.law.plan.times[0] == upright.times[0] + 6 * dt
    assert "re-timed by 6 steps (to t0=1.6000): 5 steps late" in runner.log.info[-1]
    assert runner.command(1.64, X_UP)[0] == 0 and runner.command(1.66, X_UP)[0] == 1
    runner.queue(3, upright, False)
    k, _ = runner.command(1.5, X_UP + np.array([0.1, 0.0]))  # moved away meanwhile: the plan's clock holds
    assert k == 5 and runner.log.throttled[-1][0] == "late plan" and "not re-timed" in runner.log.throttled[-1][1]


def test_a_plan_that_ended_before_it_could_be_entered_is_dropped(runner, upright):
    """As ros2_controllers' JTC refuses a trajectory that ends in the past: a plan first due at or after its step N
    (from t_N − Δt/2, where the law would only hold X_N wherever the robot is) is not entered — what ran before
    goes on, or the hold — and the next in line is; one due a tick earlier is entered at k = N − 1. Unless it is
    re-timed: the robot still at its X_0 and no plan running (a plan from rest that came late) runs from now."""
    dt, N, away = upright.dt, upright.horizon, X_UP + np.array([0.1, 0.0])  # away from X_0: no re-timing
    runner.queue(1, upright, False)
    assert runner.command(1.0 + (N - 0.5) * dt - 1e-6, away)[0] == N - 1 and runner.active_seq == 1
    runner.queue(2, upright.shifted(3.0), False)
    k, u = runner.command(3.0 + (N - 0.5) * dt, away)  # plan 2's step N: dropped, plan 1's hold of X_N goes on
    assert runner.active_seq == 1 and runner.pending is None and k == runner.law.index(3.0 + (N - 0.5) * dt)
    kind, text, _ = runner.log.throttled[-1]
    assert kind == "plan ended" and text.startswith(f"plan 2 not entered: it ended at t={3.0 + N * dt:.4f}")
    assert text.endswith("plan 1 goes on")
    runner.stop()
    runner.queue(3, upright.shifted(5.0), False)
    runner.queue(4, upright.shifted(5.0 + (N + 5) * dt), False)  # follows plan 3
    assert runner.command(5.0 + (N + 4.6) * dt, away)[0] == 0  # plan 3 ended: dropped; plan 4 entered at its start
    ended = [text for kind, text, _ in runner.log.throttled if kind == "plan ended"]
    assert runner.active_seq == 4 and ended[-1].startswith("plan 3 not entered") and ended[-1].endswith("hold goes on")
    runner.stop()  # ended, the robot still at its X_0, nothing running (a plan from rest delivered late): re-timed
    runner.queue(5, upright.shifted(8.0), False)
    assert runner.command(8.0 + (N + 3) * dt, X_UP)[0] == 0 and runner.active_seq == 5
    assert f"re-timed by {N + 3} steps" in runner.log.info[-1]


def test_start_tolerance_refuses_a_plan_entered_from_the_hold_far_from_its_reference(runner, upright):
    """start_tolerance (MoveIt's allowed_start_tolerance): a plan entered while none runs whose configuration at the
    step it is entered at is farther than the tolerance from the measured one is not entered — its feedback would
    drive the arm at the effort limits — and the hold goes on, said; just inside it is entered. Judged at the step
    of entry or the one before (a late plan against X_k or X_{k−1}, not X_0: one step late, the held arm is at X_0),
    and not at a hand-over from a running plan (an MPC cycle's X_0 is a prediction: refusing it would leave the old
    plan to run out)."""
    dt, tol = upright.dt, 0.05
    runner.p["start_tolerance"] = tol
    runner.queue(1, upright, False)
    assert runner.command(1.0, X_UP + np.array([1.001 * tol, 0.0])) is None  # (just outside)
    assert runner.law is None and runner.pending is None
    kind, text, _ = runner.log.throttled[-1]
    assert kind == "start tolerance" and text.startswith("plan 1 not entered: at its step 0 its theta is 0.05")
    assert text.endswith("beyond start_tolerance 0.05; the hold goes on")
    runner.queue(2, upright.shifted(2.0), False)
    k, _ = runner.command(2.0, X_UP + np.array([0.999 * tol, 0.0]))  # (just inside)
    assert k == 0 and runner.active_seq == 2
    # a late plan whose X_5 is where the arm is, its X_0 0.08 away (not re-timed: the arm is not at X_0)
    ramp = dataclasses.replace(upright, X=upright.X + np.outer(0.016 * np.arange(21), [1.0, 0.0])).shifted(4.0)
    runner.stop()
    runner.queue(3, ramp, False)
    k, _ = runner.command(4.0 + 5 * dt, ramp.X[5])
    assert k == 5 and runner.active_seq == 3
    # a hand-over: plan 3 runs, plan 4 starts 0.2 away from the arm — entered (the check is for entries from the hold)
    runner.queue(4, upright.shifted(4.0 + 7 * dt), False)
    k, _ = runner.command(4.0 + 7 * dt, X_UP + np.array([0.2, 0.0]))
    assert k == 0 and runner.active_seq == 4
    runner.stop()  # nothing runs: the same plan from 0.2 away is refused
    runner.queue(5, upright.shifted(6.0), False)
    assert runner.command(6.0, X_UP + np.array([0.2, 0.0])) is None and runner.active_seq is None
    # one step late (not re-timed: that starts at two) with the arm still at X_0, its step 1 0.08 further: entered
    fast = dataclasses.replace(upright, X=upright.X + np.outer(0.08 * np.minimum(np.arange(21), 1), [1.0, 0.0]))
    runner.queue(6, fast.shifted(7.0), False)
    k, _ = runner.command(7.0 + dt, fast.X[0])
    assert k == 1 and runner.active_seq == 6
    # two steps late and off X_0 (so not re-timed), its X_1 and X_2 both 1.001 × tol away: refused — of the kind
    # "plan late" (nothing of it ran because it came late: the planner plans the request again from the measured state)
    runner.stop()
    runner.queue(7, fast.shifted(8.0), False)
    assert runner.command(8.0 + 2 * dt, fast.X[1] + np.array([1.001 * tol, 0.0])) is None
    kind, text, _ = runner.log.throttled[-1]
    assert kind == "plan late" and "at its step 2 its theta is 0.05" in text, runner.log.throttled[-1]
    # one step late (the step of entry 1), X_0 and X_1 both 1.001 × tol away: refused as on time — wrong for where the
    # arm is, not late (a plan one step late is entered at its step 1)
    runner.queue(8, fast.shifted(9.0), False)
    assert runner.command(9.0 + dt, fast.X[1] + np.array([1.001 * tol, 0.0])) is None
    kind, text, _ = runner.log.throttled[-1]
    assert kind == "start tolerance" and "at its step 1 its theta is 0.05" in text, runner.log.throttled[-1]


def test_every_plan_not_run_is_told_once_to_on_refuse(runner, upright):
    """``on_refuse(seq, why, kind)`` (the controller's ~/plan_refused, the planner's request status): called for a plan
    rejected on arrival and for one not entered (ended before it could be — kind "plan ended", which the planner plans
    again —, or beyond start_tolerance), with the logged reason, once per plan — the planner re-publishes its latest
    plan every second — and never for a plan that runs, nor for one replaced while it waited."""
    told: list[tuple[int, str]] = []
    kinds: list[str] = []
    runner.on_refuse = lambda seq, why, kind: (told.append((seq, why)), kinds.append(kind))
    loose = dataclasses.replace(upright, converged=False)
    assert not runner.admit(1, loose, DT_RANGE) and not runner.admit(1, loose, DT_RANGE)  # (again: a re-publish)
    assert told == [(1, runner.log.throttled[-1][1])] and "marked unconverged" in told[0][1]
    runner.queue(2, upright, False)
    runner.queue(3, upright, False)  # replaces plan 2 while it waits: not a refusal
    assert runner.command(1.0, X_UP)[0] == 0 and runner.active_seq == 3 and len(told) == 1
    N, dt = upright.horizon, upright.dt
    runner.queue(4, upright.shifted(3.0), False)
    runner.command(3.0 + (N + 0.5) * dt, X_UP + np.array([0.1, 0.0]))  # plan 4's end passed: dropped
    assert told[-1][0] == 4 and told[-1][1].startswith("plan 4 not entered: it ended") and kinds[-1] == "plan ended"
    runner.stop()
    runner.p["start_tolerance"] = 0.05
    runner.queue(5, upright.shifted(6.0), False)
    assert runner.command(6.0, X_UP + np.array([0.1, 0.0])) is None
    assert told[-1][0] == 5 and "beyond start_tolerance 0.05" in told[-1][1] and len(told) == 3
    assert kinds[-1] == "start tolerance"


def test_path_and_goal_tolerances_abort_the_plan(runner, upright):
    runner.p["path_tolerance"] = 0.05
    runner.queue(1, upright, False)
    f = runner.command(1.0, X_UP + np.array([0.1, 0.0]))
    assert isinstance(f, Fault) and f.kind == FAULT_PATH and "of theta = 0.1 > 0.05" in f.detail
    assert runner.command(1.1, X_UP) == f  # aborted: the safe command until another plan comes
    runner.queue(2, upright.shifted(2.0), False)
    assert runner.command(2.0, X_UP)[0] == 0 and runner.aborted is None
    runner.p["path_tolerance"], runner.p["goal_tolerance"] = 0.0, 0.01
    end = 2.0 + 20 * upright.dt
    assert runner.command(end + 0.4, X_UP + np.array([0.1, 0.0]))[0] == 24  # after the end, within 0.5 s
    f = runner.command(end + 0.6, X_UP + np.array([0.1, 0.0]))
    assert f.kind == FAULT_GOAL and "|q_N − q| = 0.1 > 0.01" in f.detail
    runner.queue(3, upright.shifted(5.0), False)
    runner.command(5.0, X_UP)
    assert runner.command(5.0 + 20 * upright.dt, X_UP)[0] == 20 and runner.goal_reached
    assert "goal reached" in runner.log.info[-1]


def test_a_clock_that_went_back_requeues_the_plan_for_its_start(runner, upright):
    runner.queue(1, upright, False)
    assert runner.command(1.1, X_UP)[0] == 1
    plan = runner.active_plan
    assert runner.clock_went_back(0.3, 1.1)  # the plan starts after 0.3: it waits for its start again
    assert runner.law is None and runner.active_seq is None
    assert runner.pending[0] == 1 and runner.pending[1] is plan and runner.pending[2] is False
    assert "plan 1 starts at t=1.0000 again" in runner.log.warning[-1]
    assert runner.command(0.5, X_UP) is None
    assert runner.command(1.0, X_UP)[0] == 0  # re-entered at k = 0
    assert not runner.clock_went_back(1.1, 1.5)  # back, but still inside the plan: it goes on
    assert runner.law is not None and runner.log.warning[-1].startswith("the clock went back")


def test_faults_are_counted_until_a_command_succeeds_and_the_safe_input(runner, upright):
    runner.record_fault("joint states stale", "no joint state for 0.6 s")
    runner.record_fault("joint states stale", "no joint state for 0.7 s")
    assert runner.fault == "joint states stale" and runner.fault_counts == {"joint states stale": 2}
    kind, text, _ = runner.log.throttled[-1]
    assert kind == "joint states stale" and text.endswith("0.7 s -> safe command (damping)")
    runner.record_fault("invalid joint state", "joint state lacks joint(s) ['theta'] (got ['x'])")
    assert runner.log.throttled[-1][0] == "invalid joint state: joint state lacks joint"  # per reason
    runner.queue(1, upright, False)
    runner.command(1.0, X_UP)
    assert runner.fault is None and "valid again after: invalid joint state" in runner.log.info[-1]
    state = Estimate(1.0, X_UP, np.array([2.0]))
    assert runner.safe_input("damping", state) == pytest.approx([-2.0])  # −d·q̇
    assert runner.safe_input("damping", state._replace(qdot=np.array([10.0]))) == pytest.approx([-5.0])  # clamped
    assert runner.safe_input("zero", state) == pytest.approx([0.0])
    assert runner.safe_input("damping", None) == pytest.approx([0.0])  # no velocity known
    # a stale state's q̇ is no feedback (a constant torque the watchdog would repeat): zero torque
    assert runner.safe_input("damping", state, fresh=False) == pytest.approx([0.0], abs=0)


def test_a_plan_whose_own_states_the_intake_would_refuse_is_rejected_before_the_robot_moves():
    """The panda reach with R = 0.01 on every joint (the bundled task before its per-joint R) turns joint 7 at
    4.9 rad/s, beyond 1.5 × its URDF limit of 2.61: the controller would take the safe command mid-motion at the
    first measured state of that step, so the plan is refused at admission naming the joint and the time. The
    bundled task's plan (per-joint R) is admitted under the same limits."""
    import vi_control as vc
    from vi_control.control.intake import JointLimits
    from vi_control.planning import load_task, make_system

    task = load_task("task_panda_reach")
    vi = make_system(task)
    log = Log()
    logger = type("Logger", (), {"info": lambda self, m: None, "warning": lambda self, m: None})()
    runner = PlanRunner(
        vi.robot, vi, dict(accept_unconverged=False), False, vi.robot.joint_names, np.arange(7), logger, log
    )
    limits = JointLimits(vi.robot, 0.25, 1e4, 1.5, 1e3)  # the controller's defaults
    plan, _ = vc.plan_task(vi, task)
    assert runner.admit(1, plan, DT_RANGE, limits)
    fast = dataclasses.replace(task, weights={**task.weights, "R": 0.01})
    plan, _ = vc.plan_task(vi, fast)
    assert not runner.admit(2, plan, DT_RANGE, limits)
    text = log.throttled[-1][1]
    assert "plan 2 rejected: its state at t = 0.05 s (k = 1) has velocity of panda_joint7" in text, text
    speed = float(text.split("panda_joint7 = ")[1].split(" ")[0])
    assert abs(speed) > 1.5 * 2.61 and speed == pytest.approx(vi.velocity(plan.X[1])[6])


def test_a_late_plan_is_re_timed_only_while_no_plan_runs_and_each_entry_is_announced(runner, upright):
    """A plan that arrives late while another runs was planned on that one's timeline (an MPC cycle, a re-plan in
    motion: X_0 where that law takes the robot at t₀): entered late at its own step, never re-timed — up to the
    running plan's last step; from there on the robot is at rest and a late plan starts now. ``on_enter`` hears
    every entry with the start as run."""
    dt, entered = upright.dt, []
    runner.on_enter = lambda seq, plan: entered.append((seq, float(plan.times[0])))
    runner.queue(1, upright, False)
    assert runner.command(1.0, X_UP)[0] == 0 and entered == [(1, 1.0)]  # runs over [1, 3)
    runner.queue(2, upright.shifted(2.0), False)
    k, _ = runner.command(2.0 + 5 * dt, X_UP)  # 5 steps late, the robot at X_0, plan 1 running
    assert k == 5 and entered[-1] == (2, 2.0) and "it follows plan 1" in runner.log.throttled[-1][1]
    runner.queue(3, upright.shifted(3.0), False)  # plan 2 runs over [2, 4): its last instant still runs it
    end = float(runner.active_plan.times[-1])
    assert runner.command(np.nextafter(end, 0.0), X_UP)[0] == 10 and entered[-1] == (3, 3.0)
    runner.queue(4, upright.shifted(4.5), False)  # plan 3 runs over [3, 5): at 5 it is over
    assert runner.command(5.01, X_UP)[0] == 0 and entered[-1] == (4, 4.5 + 6 * dt)  # (5 steps late: by 6)
    assert runner.law.plan.times[0] == 4.5 + 6 * dt


def test_admission_takes_a_dt_at_either_edge_of_its_range(runner, upright):
    """The Δt range is closed: Δt at its lower or upper edge admitted, one ulp outside refused."""
    dt = upright.dt
    assert runner.admit(1, upright, (dt, dt))
    assert not runner.admit(2, upright, (np.nextafter(dt, 1.0), 1.0))
    assert not runner.admit(3, upright, (1e-5, np.nextafter(dt, 0.0)))


def test_a_plan_two_steps_late_on_the_running_timeline_is_not_re_timed(runner, upright):
    """One step late is on time (entered at k = 1); from two steps late a plan that follows a running one is entered
    at its own step, not re-timed — the boundary of the rule the test above checks 5 steps late."""
    runner.queue(1, upright, False)
    assert runner.command(1.0, X_UP)[0] == 0
    runner.queue(2, upright.shifted(2.0), False)
    k, _ = runner.command(2.0 + 2 * upright.dt, X_UP)
    assert k == 2 and runner.law.plan.times[0] == 2.0 and "it follows plan 1" in runner.log.throttled[-1][1]


def test_a_late_plan_is_not_re_timed_while_the_robot_moves_at_x0s_configuration(runner, upright):
    """Re-timing needs the robot at X_0 in q *and* q̇ (retime_tolerance 0.01): at X_0's configuration but turning at
    0.05 rad/s more, the late plan keeps its clock (it was planned from rest there: started now it would fight the
    motion)."""
    runner.queue(1, upright, False)
    x = X_UP.copy()
    x[1] += 0.05 * float(np.linalg.inv(runner.vi.mass_matrix(X_UP[:1]))[0, 0]) ** -1  # p for 0.05 rad/s more
    ev = abs(runner.vi.velocity(x)[0] - runner.vi.velocity(X_UP)[0])
    assert 0.04 < ev < 0.06
    k, _ = runner.command(1.0 + 5 * upright.dt, x)
    assert k == 5 and runner.law.plan.times[0] == 1.0
    assert "0 in q, " in runner.log.throttled[-1][1] and "not re-timed" in runner.log.throttled[-1][1]


def test_the_path_tolerance_holds_at_the_plans_last_state_and_the_goal_time_at_its_end(runner, upright):
    """The path tolerance is checked up to k = N (the plan's last state) inclusive; the goal, once the plan is over,
    aborts strictly after goal_time_tolerance (0.5 s) — at that instant the law still commands."""
    runner.p["path_tolerance"] = 0.05
    runner.queue(1, upright, False)
    end = float(upright.times[-1])
    assert runner.command(1.0, X_UP)[0] == 0 and runner.command(end - upright.dt, X_UP)[0] == 19
    f = runner.command(end, X_UP + np.array([0.1, 0.0]))
    assert isinstance(f, Fault) and f.kind == FAULT_PATH and "aborted at k=20" in f.detail
    runner.p["path_tolerance"], runner.p["goal_tolerance"] = 0.0, 0.01
    runner.queue(2, upright.shifted(5.0), False)
    runner.command(5.0, X_UP)
    last = float(runner.active_plan.times[-1]) + runner.p["goal_time_tolerance"]
    assert runner.command(last, X_UP + np.array([0.1, 0.0]))[0] == 25
    f = runner.command(np.nextafter(last, np.inf), X_UP + np.array([0.1, 0.0]))
    assert isinstance(f, Fault) and f.kind == FAULT_GOAL


def test_a_clock_that_went_back_into_a_plans_first_step_keeps_the_plan(runner, upright):
    """A plan's step 0 runs from t₀ − Δt/2: a clock back to t₀ − 0.4 Δt is still inside the plan (it goes on); to
    t₀ − 0.6 Δt, before it (the plan waits for its start again)."""
    dt = upright.dt
    runner.queue(1, upright, False)
    assert runner.command(1.1, X_UP)[0] == 1
    assert not runner.clock_went_back(1.0 - 0.4 * dt, 1.1) and runner.law is not None
    assert runner.clock_went_back(1.0 - 0.6 * dt, 1.1) and runner.law is None and runner.pending[0] == 1
