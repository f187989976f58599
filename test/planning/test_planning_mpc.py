"""Receding-horizon control (planning.mpc): the windows a cycle plans, the principle of optimality (a cycle from the
executing plan's own state at its own time re-plans that plan), the
``mpc:`` section of a task validated at its boundaries, and the closed loop on a plant the planner's model does not
match (the panda 20 % heavier on every link: MPC ends nearer the goal than the TV-LQR tracking of one plan)."""

import dataclasses

import numpy as np
import pytest
from plan_runner import plan_runner

import vi_control as vc
from vi_control.control.tracking import tracking_law
from vi_control.integrators import make_integrator
from vi_control.planning import load_task
from vi_control.planning.cost import QuadraticTrackingCost
from vi_control.planning.mpc import MPCSettings, RecedingHorizon, cycle_accepted, mpc_settings
from vi_control.planning.task_values import TaskError


@pytest.fixture(scope="module")
def panda():
    task = load_task("task_panda_reach")
    return task, make_integrator("midpoint", task.load_robot(), task.dt)


def test_windows_recede_or_shrink_over_the_tasks_reference(panda):
    task, vi = panda
    m = RecedingHorizon(vi, task, MPCSettings(period=0.1, horizon=8))
    m.start()
    X, U = m.window(0)
    assert len(U) == 8 and np.array_equal(X, m.X_ref[:9]) and np.array_equal(U, m.U_ref[:8])
    X, U = m.window(17)  # past the task's end (N = 20): its last point repeated
    assert len(U) == 8 and np.array_equal(X[:4], m.X_ref[17:21]) and np.all(X[4:] == m.X_ref[-1])
    assert np.all(U[3:] == m.U_ref[-1])
    s = RecedingHorizon(vi, task, MPCSettings(period=0.1, shrinking=True, min_horizon=3))
    s.start()
    assert [len(s.window(k)[1]) for k in (0, 5, 16, 17, 19, 30)] == [20, 15, 4, 3, 3, 3]


def test_the_tasks_end_is_where_its_reference_ends_and_a_followed_request_is_said(panda):
    """``ended(t)``: the reference's last step (N = 20 at Δt = 0.05 from t0 = 2) at or before t — from the rounding of
    ``step_at``, t0 + 19.5 Δt on; ``followed`` while the cycles continue a request's plan, until ``start``."""
    task, vi = panda
    m = RecedingHorizon(vi, task, MPCSettings(period=0.1, shrinking=True, min_horizon=4))
    assert not m.ended(100.0)  # (not started: no deadline)
    first = m.start(t0=2.0)
    dt = task.dt
    assert not m.ended(2.0 + 19.49 * dt) and m.ended(2.0 + 19.51 * dt) and m.ended(2.0 + 20 * dt)
    assert not m.followed
    m.follow(first.result, 3.0)
    assert m.followed and not m.ended(3.0 + 19.49 * dt) and m.ended(3.0 + 20 * dt)
    m.start(t0=5.0)
    assert not m.followed


def test_a_cycle_from_the_plans_own_state_replans_that_plan(panda):
    """Principle of optimality: the optimal plan's tail is optimal for the remaining window (shrinking), so a cycle
    started on the plan at its own time returns it — to the optimizer's tolerance — and is accepted."""
    task, vi = panda
    m = RecedingHorizon(
        vi, task, MPCSettings(period=0.1, shrinking=True, min_horizon=2, max_iterations=10, tolerance=1e-10)
    )
    first = m.start(t0=5.0)
    assert first.accepted and first.plan.times[0] == 5.0
    plan = first.plan
    cyc = m.cycle(5.0 + 6 * vi.dt, plan.X[6], plan)
    assert cyc.step == 6 and cyc.accepted and cyc.plan.horizon == 14
    assert cyc.plan.times[0] == pytest.approx(5.0 + 6 * vi.dt)
    assert np.abs(cyc.plan.X - plan.X[6:]).max() < 1e-4, np.abs(cyc.plan.X - plan.X[6:]).max()
    assert cyc.result.cost <= cyc.warm_cost + 1e-12
    # the warm start is the plan's own tail from the step after the cycle's first (the law's): its cost is the cost
    # of the plan's steps 7… over the window the optimizer plans (step 6 is the law's own)
    W = task.weight_table(vi.nx, vi.nu, vi.nq)
    tail = QuadraticTrackingCost(*m.window(7), W["weights", "Q"], W["weights", "R"], W["weights", "Qf"])
    assert cyc.warm_cost == pytest.approx(tail.calc(plan.X[7:], plan.U[7:]), rel=1e-8)


def test_mpc_section_is_validated_at_its_boundaries():
    base = "name: t\nmodel: pendulum\ndt: 0.1\nhorizon: 20\nweights: {Q: [1.0, 1.0], R: 1.0}\n"
    ok = load_task(
        base + "mpc: {period: 0.1, horizon: 20, max_iterations: 1, tolerance: 1.0e-9, shrinking: true,"
        " min_horizon: 20}\n"
    )
    assert mpc_settings(ok) == MPCSettings(
        period=0.1, horizon=20, shrinking=True, min_horizon=20, max_iterations=1, tolerance=1e-9
    )
    assert load_task(base + "mpc: {period: 2.0}\n").mpc["period"] == 2.0  # = horizon·dt
    for bad, key in [
        ("{period: 0.0999}", "mpc.period"),
        ("{period: 2.0001}", "mpc.period"),
        ("{horizon: 0}", "mpc.horizon"),
        ("{max_iterations: 0}", "mpc.max_iterations"),
        ("{tolerance: 0.0}", "mpc.tolerance"),
        ("{shrinking: 1}", "mpc.shrinking"),
        ("{horizon: 5, min_horizon: 6}", "mpc.min_horizon"),
        ("{perid: 0.1}", "perid"),
    ]:
        with pytest.raises(TaskError, match=key):
            load_task(base + f"mpc: {bad}\n")
    with pytest.raises(TaskError, match="mpc: receding-horizon"):
        load_task(
            base + "goal: {q: [pi]}\noptimizer: {method: collocation_lg2}\ncollocation: {nodes: 4}\n"
            "mpc: {period: 0.1}\n"
        )
    assert mpc_settings(load_task(base)) == MPCSettings(period=0.1)


def test_mpc_ends_nearer_the_goal_than_one_plan_on_a_heavier_panda(panda):
    """The reach planned on the nominal model, run on a panda 20 % heavier on every link (Δt = 50 ms, the command
    held each step, the re-plan from the true state every 0.1 s, no delay): TV-LQR tracking of the one plan ends
    0.05 rad off, MPC (shrinking toward the task's end, 10 iterations a cycle) nearer. Neither removes the offset of
    the wrong gravity model at the hold (that is the controller's hold_integral_gain)."""
    task, vi = panda
    plant = make_integrator("midpoint", vc.load_robot("erd:panda", mass_scale=1.2), task.dt)

    def final_error(mpc: bool) -> float:
        m = RecedingHorizon(vi, task, MPCSettings(period=0.1, shrinking=True, min_horizon=4, max_iterations=10))
        plan = m.start().plan
        x, law = plan.X[0].copy(), tracking_law(plan, vi)
        for k in range(60):
            t = k * vi.dt
            if mpc and k and k % m.steps_per_cycle == 0:
                cyc = m.cycle(t, x, plan)
                if cyc.accepted:
                    plan, law = cyc.plan, tracking_law(cyc.plan, vi)
            x = plant.step(x, law.command(law.index(t), x)[0])
        return float(np.abs(x[:7] - task.goal_q).max())

    tvlqr, mpc = final_error(False), final_error(True)
    assert mpc < 0.75 * tvlqr, (mpc, tvlqr)


class _Quiet:
    def info(self, _m):
        pass

    def warning(self, _m):
        pass


def test_the_command_does_not_jump_when_the_controller_switches_plans(panda):
    """Many switches through the controller's PlanRunner (control.runner): the heavier panda run by the runner at
    Δt, an MPC cycle every 0.1 s from the state predicted one step ahead under the executing law (the solve's lead),
    each new plan queued for that start and entered there by the runner. At every switch the new law's command at the
    switch's time and state equals the old law's (the cycle's step 0 is the executing law's own step: planning.mpc),
    and for states nearby too — so the command's change across a switch is the old law's own change between steps,
    never more than the largest change between steps within one plan (a new plan's own U_0 from the true state
    differs from the executing law there by up to 4.9 N·m on this run, where the law's step changes are ≤ 4.7)."""
    task, vi = panda
    plant = make_integrator("midpoint", vc.load_robot("erd:panda", mass_scale=1.2), task.dt)
    runner = plan_runner(vi, _Quiet())
    m = RecedingHorizon(vi, task, MPCSettings(period=0.1, shrinking=True, min_horizon=4, max_iterations=10))
    first = m.start(t0=0.0).plan
    runner.queue(0, first, False)
    rng = np.random.default_rng(0)
    x, commands, seqs, same = first.X[0].copy(), [], [], []
    for k in range(60):
        t = k * vi.dt
        if k % m.steps_per_cycle == 1:
            law = runner.law
            x_lead = vi.step(x, law.command(law.index(t), x)[0])
            cyc = m.cycle(t + vi.dt, x_lead, runner.active_plan)
            if cyc.accepted:
                runner.queue(k, cyc.plan, False)
        old = runner.law
        _, u = runner.command(t, x)
        if old is not None and runner.law is not old:  # a switch: both laws at this time, here and nearby
            for dx in [np.zeros(vi.nx)] + [1e-2 * rng.standard_normal(vi.nx) for _ in range(3)]:
                u_new = runner.law.command(runner.law.index(t), x + dx)[0]
                same.append(np.abs(u_new - old.command(old.index(t), x + dx)[0]).max())
        commands.append(u)
        seqs.append(runner.active_seq)
        x = plant.step(x, u)
    change = np.abs(np.diff(commands, axis=0)).max(axis=1)  # change[i - 1]: from tick i − 1 to tick i
    switches = [i for i in range(1, len(seqs)) if seqs[i] != seqs[i - 1]]
    within = max(change[i - 1] for i in range(1, len(seqs)) if i not in switches)
    assert len(switches) >= 25 and len(same) == 4 * len(switches)
    assert max(same) < 1e-9, max(same)
    assert max(change[i - 1] for i in switches) <= within, (within, [change[i - 1] for i in switches])
    assert np.abs(x[:7] - task.goal_q).max() < 0.045  # (one plan's TV-LQR ends 0.052 off: the previous test)


def test_cycles_parse_no_weights_and_plan_as_fresh_tasks(panda, monkeypatch):
    """Every window's task is the cycle task with its horizon replaced, and shares the weights the task parsed (the
    memo goes with ``dataclasses.replace``): receding cycles parse none. The plans are those of cycles whose tasks
    parse their weights anew (the memo emptied before each)."""
    from vi_control.planning.task import Task

    _, vi = panda
    task = load_task("task_panda_reach")  # (its own: the fixture's task has parsed its weights before)
    parses = []
    original = Task._resolve_weight
    monkeypatch.setattr(Task, "_resolve_weight", lambda self, *a: parses.append(a[:2]) or original(self, *a))
    m = RecedingHorizon(vi, task, MPCSettings(period=0.1, horizon=8, max_iterations=2))
    plan = m.start().plan
    assert parses, "the first plan parses the weights"
    counts, plans = [], []
    for j in range(1, 4):
        parses.clear()
        cyc = m.cycle(j * 2 * vi.dt, plan.X[2], plan)
        counts.append(len(parses))
        plans.append(cyc.plan)
        plan = cyc.plan
    assert counts == [0, 0, 0], counts
    fresh = RecedingHorizon(vi, task, MPCSettings(period=0.1, horizon=8, max_iterations=2))
    plan = fresh.start().plan
    for j, kept in enumerate(plans, start=1):
        task._resolved.clear()  # (the memo every window shares: parsed anew for this cycle)
        parses.clear()
        plan = fresh.cycle(j * 2 * vi.dt, plan.X[2], plan).plan
        assert parses and np.array_equal(plan.U, kept.U) and np.array_equal(plan.K, kept.K)


def test_a_shrinking_horizons_windows_share_the_weights_parsed_once(panda, monkeypatch):
    """A shrinking horizon plans a window of a new length every cycle; the windows' tasks share the weights the
    first plan parsed: no cycle parses them. A task made with other weights parses its own (the memo is keyed by the
    raw values), and the memo the tasks share is bounded (``MEMO_ENTRIES``)."""
    from vi_control.planning import task as task_module
    from vi_control.planning.task import Task

    _, vi = panda
    task = load_task("task_panda_reach")
    parses = []
    original = Task._resolve_weight
    monkeypatch.setattr(Task, "_resolve_weight", lambda self, *a: parses.append(a[:2]) or original(self, *a))
    m = RecedingHorizon(vi, task, MPCSettings(period=vi.dt, shrinking=True, min_horizon=2, max_iterations=1))
    plan = m.start().plan
    assert parses, "the first plan parses the weights"
    parses.clear()
    lengths = []
    for j in range(1, 4):
        cyc = m.cycle(j * vi.dt, plan.X[1], plan)
        plan = cyc.plan
        lengths.append(cyc.plan.horizon)
    assert len(set(lengths)) == 3, lengths  # (three window lengths: three tasks)
    assert parses == [], parses
    heavier = dataclasses.replace(task, weights={**task.weights, "R": 0.5})
    W = heavier.weight_table(vi.nx, vi.nu, vi.nq)
    assert ("R", "weights") in parses and np.array_equal(W["weights", "R"], 0.5 * np.eye(vi.nu))
    assert not np.array_equal(task.weight_table(vi.nx, vi.nu, vi.nq)["weights", "R"], W["weights", "R"])
    # bounded: tasks of ever new weights sharing one memo (a node's requests) keep at most MEMO_ENTRIES matrices
    monkeypatch.setattr(task_module, "MEMO_ENTRIES", 40)
    for r in np.linspace(0.1, 1.0, 12):
        dataclasses.replace(task, weights={**task.weights, "R": float(r)}).weight_table(vi.nx, vi.nu, vi.nq)
        assert len(task._resolved) <= 40
    assert task.weight_table(vi.nx, vi.nu, vi.nq)["weights", "R"][0, 0] == 0.01  # (still right after a clear)


def test_a_cycle_is_accepted_at_the_boundaries_of_its_rule():
    """``cycle_accepted``: a finite cost, and converged or a merit no higher than the continuation's — equal is
    accepted, one ulp higher is not; a converged plan of a higher merit is (it met the tolerance), a non-finite cost
    never is, and without a continuation (cold, inf) any finite plan is."""
    m = 57.90731
    assert cycle_accepted(10.0, False, m, m)
    assert not cycle_accepted(10.0, False, m, np.nextafter(m, np.inf))
    assert cycle_accepted(10.0, False, m, np.nextafter(m, -np.inf))
    assert cycle_accepted(10.0, True, m, m + 1.0)
    for bad in (np.nan, np.inf):
        assert not cycle_accepted(bad, True, m, m - 1.0)
    assert cycle_accepted(10.0, False, np.inf, 1e300)
    assert not cycle_accepted(10.0, False, np.inf, np.nan)


def test_a_capped_terminal_constrained_cycle_is_measured_by_its_augmented_lagrangian(monkeypatch):
    """The cart-pole swing-up (terminal constraint: the augmented Lagrangian, planning.augmented) under MPC, each cycle
    capped at 3 iterations, the closed loop pushed by seeded input noise. Each cycle's ``warm_cost`` is the augmented
    Lagrangian of the executing plan's continuation (recomputed here: the receded plan followed from the cycle's start
    under its gains, λ by ``terminal_multiplier`` there, ρ the task's penalty), and the plan's merit is the same
    function at the plan — no higher, so every cycle is accepted. The cost alone would refuse some: meeting the
    constraint better costs J (measured: 8 of 14 cycles cost 1e-3 to 3e-2 more than the continuation)."""
    import sys

    from vi_control.planning.augmented import terminal_multiplier
    from vi_control.planning.ddp import feedback_rollout
    from vi_control.planning.pipeline import input_limits

    mpc = sys.modules[RecedingHorizon.__module__]
    task = load_task("task_cartpole_swingup")
    vi = make_integrator("midpoint", task.load_robot(), task.dt)
    W = task.weight_table(vi.nx, vi.nu, vi.nq)
    Q, R, Qf = W["weights", "Q"], W["weights", "R"], W["weights", "Qf"]
    limits = input_limits(task, vi)
    seen = []
    plan_task = mpc.plan_task

    def spied(vi_, task_, x0=None, log=None, reference=None, warm_start=None):
        plan, res = plan_task(vi_, task_, x0=x0, log=log, reference=reference, warm_start=warm_start)
        if warm_start is not None:
            cost = QuadraticTrackingCost(*reference, Q, R, Qf)
            go = feedback_rollout(vi_, x0, warm_start.X, warm_start.U, K=warm_start.K, input_limits=limits)
            lam = terminal_multiplier(vi_, cost, x0, go.U, limits)
            target = reference[0].copy()
            target[-1] -= np.linalg.solve(Qf + task.penalty * np.eye(vi.nx), lam)
            merit = QuadraticTrackingCost(target, reference[1], Q, R, Qf + task.penalty * np.eye(vi.nx))
            seen.append((merit.calc(go.X, go.U), merit.calc(res.X, res.U), cost.calc(go.X, go.U), res))
        return plan, res

    monkeypatch.setattr(mpc, "plan_task", spied)
    m = RecedingHorizon(vi, task, MPCSettings(period=0.1, shrinking=True, min_horizon=30, max_iterations=3))
    plan = m.start().plan
    law, x, rng, cycles = tracking_law(plan, vi), plan.X[0].copy(), np.random.default_rng(1), []
    for k in range(30):
        t = k * vi.dt
        if k and k % m.steps_per_cycle == 0:
            cyc = m.cycle(t, x, plan)
            cycles.append(cyc)
            if cyc.accepted:
                plan, law = cyc.plan, tracking_law(cyc.plan, vi)
        x = vi.step(x, law.command(law.index(t), x)[0] + 0.5 * rng.standard_normal(vi.nu))
    assert len(seen) == len(cycles) == 14
    costlier = capped = 0
    for cyc, (warm_merit, merit, warm_cost, res) in zip(cycles, seen):
        assert res is cyc.result
        assert cyc.warm_cost == pytest.approx(warm_merit, rel=1e-9, abs=1e-9)
        assert res.merits[1] == pytest.approx(merit, rel=1e-9, abs=1e-9)
        if not res.converged:  # (capped: measured, all 14)
            capped += 1
            assert merit <= warm_merit and cyc.accepted
            costlier += res.cost > warm_cost
    assert capped >= 10 and costlier >= 3, (capped, costlier)


def test_the_first_command_of_a_cycle_is_the_executing_laws_within_the_limits(panda):
    """A cycle that continues the executing plan starts with that law's command at its start — clamped to the task's
    input limits, as the controller would send it: pushed 0.5 rad off the plan the law asks the wrists for more than
    their 12 N·m, the new plan's U_0 is the clamped command (some entry at its limit), K_0 the law's own gain."""
    task, vi = panda
    m = RecedingHorizon(vi, task, MPCSettings(period=0.1, horizon=8, max_iterations=2))
    plan = m.start().plan
    law = tracking_law(plan, vi)
    x = plan.X[4].copy()
    x[:7] += 0.5
    raw, _ = law.feedback(4, x)
    limits = np.asarray(vi.robot.effort_limits, float)
    assert np.any(np.abs(raw) > limits)
    cyc = m.cycle(4 * vi.dt, x, plan)
    assert np.array_equal(cyc.plan.U[0], np.clip(raw, -limits, limits))
    assert np.any(np.abs(cyc.plan.U[0]) == limits) and np.all(np.abs(cyc.plan.U) <= limits)
    assert np.array_equal(cyc.plan.K[0], law.reference(4)[2]) and np.array_equal(cyc.plan.X[0], x)


def test_a_cycle_continues_the_law_only_at_a_step_of_the_executing_plan(panda):
    """The seamless switch needs the cycle's start on the executing plan's grid: up to ¼ Δt off (a clock's jitter) the
    cycle starts with the law's step there; 0.26 Δt off it plans from the state itself (a cold window), whose first
    gain is its own TV-LQR's, not the law's."""
    task, vi = panda
    m = RecedingHorizon(vi, task, MPCSettings(period=0.1, horizon=8, max_iterations=2))
    plan = m.start().plan
    law = tracking_law(plan, vi)
    K4 = law.reference(4)[2]
    near = m.cycle((4 + 0.24) * vi.dt, plan.X[4], plan)
    assert np.array_equal(near.plan.K[0], K4) and np.array_equal(near.plan.U[0], law.feedback(4, plan.X[4])[0])
    off = m.cycle((4 + 0.26) * vi.dt, plan.X[4], plan)
    assert off.warm_cost == np.inf and np.abs(off.plan.K[0] - K4).max() > 1e-3
    assert off.plan.times[0] == (4 + 0.26) * vi.dt


def test_a_cycle_whose_warm_start_cannot_be_followed_has_no_continuation_to_beat(panda):
    """Where the executing plan cannot be followed from the cycle's state (its states 2 rad off on the first joint
    from step 6 on: the rollout's Newton steps start from them and fail), plan_task plans cold and says so
    (``warm_started``); the cycle then has no continuation (``warm_cost`` inf, as a cold cycle) instead of the cold
    guess's merit, and its finite plan is accepted. The same plan followed is warm, its warm_cost the continuation's."""
    task, vi = panda
    said = []
    m = RecedingHorizon(vi, task, MPCSettings(period=0.1, horizon=8, max_iterations=2), log=said.append)
    plan = m.start().plan
    followed = m.cycle(4 * vi.dt, plan.X[4], plan)
    assert followed.result.warm_started and np.isfinite(followed.warm_cost)
    off = dataclasses.replace(plan, X=plan.X.copy())
    off.X[6:, 0] += 2.0
    said.clear()
    cyc = m.cycle(4 * vi.dt, plan.X[4], off)
    assert any("cannot be followed" in line for line in said)
    assert not cyc.result.warm_started and cyc.warm_cost == np.inf
    assert cyc.accepted and np.isfinite(cyc.result.cost)


def test_after_follow_the_cycles_continue_a_requests_plan_until_the_task_starts_again(panda):
    """A goal request's plan (planning.requests.plan_goal: a timed path with the ``lqr`` weights, then held): after
    ``follow`` the cycles window that plan's reference from its start with its weights — a cycle on the plan at its own
    time returns it (principle of optimality, as for the task's plan) and the windows past its end hold its goal —
    and ``start`` makes them the task's again. Without ``follow`` a cycle then windows the task's reference, toward
    the task's goal."""
    from vi_control.planning.requests import path_task, plan_goal

    task, vi = panda
    # (shrinking, windows long enough to reach the end of either reference: a cycle plans to the plan's own end)
    settings = MPCSettings(period=0.1, horizon=100, shrinking=True, min_horizon=2, max_iterations=10, tolerance=1e-10)
    m = RecedingHorizon(vi, task, settings)
    first = m.start(t0=5.0)
    goal = np.array([0.2, -0.5, 0.1, -2.0, 0.1, 1.7, 0.6])
    plan, res = plan_goal(vi, task, first.plan.X[0], goal)
    assert res.reference is not None and res.task == path_task(task)
    task_goal = m.X_ref[-1]
    assert np.array_equal(m.window(m.step_at(9.0 + 4 * vi.dt))[0][-1], task_goal)  # (unfollowed: the task's goal)
    m.follow(res, 9.0)
    X_ref, U_ref = res.reference
    assert m.t0 == 9.0 and np.array_equal(m.window(0)[0], X_ref[: len(m.window(0)[0])])
    assert np.all(m.window(len(U_ref) + 5)[0] == X_ref[-1])  # (past its end: its goal held)
    W = path_task(task).weight_table(vi.nx, vi.nu, vi.nq)
    cyc = m.cycle(9.0 + 4 * vi.dt, plan.X[4], plan.shifted(9.0))
    assert cyc.step == 4 and cyc.accepted and cyc.plan.horizon == plan.horizon - 4
    assert np.abs(cyc.plan.X - plan.X[4:]).max() < 1e-4, np.abs(cyc.plan.X - plan.X[4:]).max()
    tail = QuadraticTrackingCost(*m.window(5), W["weights", "Q"], W["weights", "R"], W["weights", "Qf"])
    assert cyc.warm_cost == pytest.approx(tail.calc(plan.X[5:], plan.U[5:]), rel=1e-8)  # (the path's weights)
    again = m.start(first.plan.X[0], t0=20.0)
    assert np.array_equal(again.plan.X, first.plan.X) and m.t0 == 20.0
    assert m._cycle_task.weights == dataclasses.replace(task, continuation={}).weights
    with pytest.raises(ValueError, match="does not say what it planned against"):
        m.follow(dataclasses.replace(res, reference=None), 0.0)
    with pytest.raises(ValueError, match="a reference X"):
        m.follow(dataclasses.replace(res, reference=(X_ref[:, :7], U_ref)), 0.0)
    with pytest.raises(ValueError, match="dt = 0.1 s for a loop at dt = 0.05 s"):
        m.follow(dataclasses.replace(res, task=dataclasses.replace(res.task, dt=0.1)), 0.0)
