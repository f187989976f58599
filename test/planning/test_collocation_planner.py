"""Collocation through the planner: task YAML (optimizer.method: collocation_lg | collocation_lg2) → plan_task →
a Plan that is exactly VI-feasible with TV-LQR gains; bad tasks raise TaskError naming the key, failed solves
PlanningError with IPOPT's status."""

import copy

import numpy as np
import pytest
import yaml

from vi_control.model.bundled import share_dir
from vi_control.planning import load_task, make_system, plan_task
from vi_control.planning.collocation.planner import resample
from vi_control.planning.errors import PlanningError
from vi_control.planning.evaluate import simulate_plan
from vi_control.planning.task import TaskError


def _task_dict(name: str) -> dict:
    return yaml.safe_load((share_dir() / "config" / f"{name}.yaml").read_text())


def _vi_feasibility(vi, plan) -> float:
    return max(float(np.abs(vi.step(plan.X[k], plan.U[k]) - plan.X[k + 1]).max()) for k in range(plan.horizon))


@pytest.fixture(scope="module")
def pendulum_plan():
    task = load_task("task_pendulum_mintime_lg2")
    vi = make_system(task)
    plan, res = plan_task(vi, task)
    return task, vi, plan, res


def test_minimum_time_pendulum_plan_is_vi_feasible_with_gains(pendulum_plan):
    task, vi, plan, res = pendulum_plan
    sol = res.collocation
    assert res.converged and res.method == "collocation_lg2" and sol.status == "Solve_Succeeded"
    assert 2.3 < sol.tf < 2.45  # free final time (MorenoMartin2022, eq. 22)
    assert plan.horizon == int(np.ceil(sol.tf / vi.dt - 1e-9)) < task.horizon  # the plan ends at t_f
    assert _vi_feasibility(vi, plan) < 1e-8  # each step equals vi.step
    np.testing.assert_array_equal(plan.X[0], vi.state_from_configurations([0.0], [0.0]))
    assert np.abs(plan.U).max() <= 5.0 + 1e-12
    assert plan.K.shape == (plan.horizon, 1, 2) and np.all(np.isfinite(plan.K)) and plan.K_final is not None
    assert abs(plan.X[-1, 0] - np.pi) < 5e-3
    t = plan.times
    q_col = sol.q(np.minimum(t, sol.tf))[:, 0]
    assert np.abs(plan.X[:, 0] - q_col).max() < 0.05  # the polish stays on the collocated trajectory


def test_plan_tracks_in_closed_loop_from_a_perturbed_start(pendulum_plan):
    _, vi, plan, _ = pendulum_plan
    x0 = plan.X[0] + np.array([0.05, 0.0])
    X, _ = simulate_plan(vi, plan, x0, feedback=True, extra_steps=50, clamp=True)
    assert abs(X[-1, 0] - np.pi) < 0.02
    X_open, _ = simulate_plan(vi, plan, x0, feedback=False, extra_steps=50)
    assert abs(X_open[-1, 0] - np.pi) > 0.1


def test_lg_and_fixed_time_cartpole_through_plan_task():
    """Kelly's cart-pole by LG (task dict), fixed t_f = horizon·dt: VI-feasible, at the goal."""
    d = _task_dict("task_cartpole_swingup_lg2")
    d["optimizer"]["method"] = "collocation_lg"
    d["collocation"]["nodes"] = 20
    task = load_task(d)
    vi = make_system(task)
    plan, res = plan_task(vi, task)
    assert res.method == "collocation_lg" and res.converged and plan.horizon == task.horizon
    assert _vi_feasibility(vi, plan) < 1e-8
    np.testing.assert_allclose(plan.X[-1, :2], [1.0, np.pi], atol=5e-3)
    assert np.abs(plan.U).max() <= 20.0 + 1e-12


def test_resampling_holds_the_goal_after_the_final_time(pendulum_plan):
    _, vi, _, res = pendulum_plan
    sol = res.collocation
    x0 = vi.state_from_configurations([0.0], [0.0])
    X, U = resample(vi, sol, x0, 150, np.array([5.0]), np.array([np.pi]))
    assert X.shape == (151, 2) and U.shape == (150, 1)
    late = np.arange(151) * vi.dt > sol.tf
    np.testing.assert_allclose(X[late], np.tile(vi.state_from_configurations([np.pi], [np.pi]), (late.sum(), 1)))
    k = 40  # mid-swing: the midpoint-sampled input of the polynomial
    assert U[k, 0] == pytest.approx(np.clip(sol.u([(k + 0.5) * vi.dt])[0, 0], -5, 5))


@pytest.mark.parametrize(
    "edit, key",
    [
        (lambda d: d["collocation"].update(nodes=2), "collocation.nodes"),
        (lambda d: d["collocation"].pop("nodes"), "collocation.nodes"),
        (lambda d: d.pop("collocation"), "collocation"),
        (lambda d: d["optimizer"].update(method="collocation_lgl"), "optimizer.method"),
        (lambda d: d["collocation"].update(final_time="fixed"), "collocation.cost"),
        (lambda d: d["collocation"].update(spline=True), "collocation"),
        (lambda d: d["collocation"].update(intervals=0), "collocation.intervals"),
        (lambda d: d["collocation"].update(t_guess=-1.0), "collocation.t_guess"),
        (lambda d: d["collocation"].update(dynamics="index3"), "collocation.dynamics"),
        (lambda d: d.pop("goal"), "goal.q"),
        (lambda d: d["collocation"].update(polish_tolerance=0.0), "collocation.polish_tolerance"),
    ],
)
def test_bad_collocation_tasks_name_the_key(edit, key):
    d = copy.deepcopy(_task_dict("task_pendulum_mintime_lg2"))
    edit(d)
    with pytest.raises(TaskError, match=key.replace(".", r"\.")):
        load_task(d)


def test_collocation_block_is_rejected_for_shooting_methods():
    d = _task_dict("task_pendulum_mintime_lg2")
    d["optimizer"]["method"] = "ddp"
    with pytest.raises(TaskError, match="collocation"):
        load_task(d)


def test_infeasible_task_raises_planning_error_with_the_ipopt_status():
    """Upright in 0.4 s with |u| ≤ 5 N·m: IPOPT fails; plan_task raises PlanningError (status, iterations)."""
    d = _task_dict("task_pendulum_mintime_lg2")
    d.update(horizon=20)  # 0.4 s
    d["collocation"].update(final_time="fixed", cost="effort", nodes=8)
    del d["collocation"]["t_guess"]  # (a guess of the free final time: refused with a fixed one)
    d["optimizer"]["max_iterations"] = 150
    task = load_task(d)
    with pytest.raises(PlanningError) as e:
        plan_task(make_system(task), task)
    assert e.value.status and e.value.iterations > 0 and e.value.solver == "ipopt"


def test_polish_tolerance_is_in_the_units_of_the_cost(pendulum_plan):
    """The VI polish stops on |dJ| < collocation.polish_tolerance, in the cost's units like optimizer.tolerance: the
    minimum-time pendulum with every weight × 2⁻³⁰ and the tolerance with it plans what the unscaled task plans. A
    fixed 1e-6 (before the option) stopped the scaled polish at once, reported converged, 3.7e-2 rad off the goal."""
    _, _, plan1, res1 = pendulum_plan
    d = copy.deepcopy(_task_dict("task_pendulum_mintime_lg2"))
    s = 2.0**-30
    for group in ("weights", "lqr", "hold"):
        d[group] = {k: (np.asarray(v, float) * s).tolist() for k, v in d[group].items()}
    for tol, expect_same in ((1e-6 * s, True), (1e-6, False)):
        d["collocation"]["polish_tolerance"] = tol
        task = load_task(d)
        plan, res = plan_task(make_system(task), task)
        off = float(np.abs(plan.X[:, 0] - plan1.X[:, 0]).max())
        assert res.converged
        if expect_same:
            assert res.iterations == res1.iterations and off < 1e-9, (res.iterations, res1.iterations, off)
        else:  # the unscaled tolerance is met before the polish moves: a plan off the unscaled one
            assert res.iterations < res1.iterations and off > 1e-3, (res.iterations, off)


def test_a_solution_evaluates_each_time_on_its_own_intervals_polynomial(pendulum_plan):
    """``CollocationSolution.q/v/u`` at a time evaluate the polynomial of the interval holding it (an interval's
    start belongs to it; times before the first and after the last extrapolate those): three intervals, each
    answering with its index."""
    import dataclasses

    _, _, _, res = pendulum_plan

    class Interval:
        def __init__(self, i, t0):
            self.i, self.t0 = i, t0

        def q(self, t, order=0):
            return np.full((len(t), 1), float(self.i))

        velocity = q

        def u(self, t):
            return np.full((len(t), 1), float(self.i))

    sol = dataclasses.replace(res.collocation, segments=[Interval(0, 0.0), Interval(1, 1.0), Interval(2, 2.0)])
    t = [-0.5, 0.0, 0.5, 0.999, 1.0, 1.5, 2.0, 2.5, 9.0]
    want = [0, 0, 0, 0, 1, 1, 2, 2, 2]
    for f in (sol.q, sol.v, sol.u):
        assert f(t)[:, 0].tolist() == want
