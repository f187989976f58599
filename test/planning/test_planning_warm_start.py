"""Warm re-plans: a previous plan followed from a new start, and the terminal multiplier estimated there.

The multiplier estimate is checked against the augmented Lagrangian's own converged multiplier (an independent
route to the same λ), the warm re-plan against the cold plan from the same start (same optimum).
"""

import dataclasses

import numpy as np
import pytest

from vi_control.planning import load_task, make_system, plan_task, reference_trajectory, start_state
from vi_control.planning.augmented import terminal_constrained_ddp, terminal_multiplier
from vi_control.planning.cost import QuadraticTrackingCost
from vi_control.planning.pipeline import input_limits
from vi_control.planning.task import TaskError


@pytest.fixture(scope="module")
def cartpole():
    task = load_task("task_cartpole_swingup")
    vi = make_system(task)
    plan, res = plan_task(vi, task)
    assert res.converged
    return task, vi, plan, res


def _cost(task, vi):
    x0 = start_state(task, vi)
    X_ref, U_ref = reference_trajectory(task, vi, x0)
    W = [task.weight(w, "weights", n, vi.nq) for w, n in (("Q", vi.nx), ("R", vi.nu), ("Qf", vi.nx))]
    return x0, QuadraticTrackingCost(X_ref, U_ref, *W)


def test_multiplier_estimate_at_the_solution_is_the_augmented_lagrangians_multiplier(cartpole):
    task, vi, plan, res = cartpole
    x0, cost = _cost(task, vi)
    lam = terminal_multiplier(vi, cost, x0, plan.U, input_limits(task, vi))
    ref = res.terminal_multiplier
    assert np.abs(ref).max() > 1.0  # the goal constraint is active: a real multiplier to compare
    assert np.allclose(lam, ref, rtol=1e-3, atol=1e-3 * np.abs(ref).max()), (lam, ref)


def test_warm_start_from_the_plan_itself_is_already_converged(cartpole):
    task, vi, plan, res = cartpole
    again, r = plan_task(vi, task, warm_start=plan)
    assert r.converged and r.iterations <= 2, r
    assert np.abs(again.X - plan.X).max() < 1e-6


def test_warm_replan_from_a_moved_start_reaches_the_cold_plans_optimum_in_fewer_iterations(cartpole):
    task, vi, plan, _ = cartpole
    x0 = start_state(task, vi).copy()
    x0[0] += 0.05  # the cart 5 cm off
    warm, rw = plan_task(vi, task, x0=x0, warm_start=plan)
    cold, rc = plan_task(vi, task, x0=x0)
    assert rw.converged and rc.converged
    assert abs(rw.cost - rc.cost) <= 1e-5 * rc.cost, (rw.cost, rc.cost)
    assert np.abs(warm.X[-1] - cold.X[-1]).max() < 1e-5
    # measured 10 against 57 (cart-pole counts vary by a few between Newton variants, docs/benchmarks/planner.md)
    assert rw.iterations < rc.iterations / 2, (rw.iterations, rc.iterations)


def test_a_multiplier_given_at_the_solution_needs_no_outer_walk(cartpole):
    task, vi, plan, res = cartpole
    x0, cost = _cost(task, vi)
    kw = dict(
        input_limits=input_limits(task, vi),
        tolerance=task.tolerance,
        constraint_tolerance=task.constraint_tolerance,
        penalty=task.penalty,
    )
    cold = terminal_constrained_ddp(vi, cost, x0, plan.U, cost.X_ref[-1], **kw)
    warm = terminal_constrained_ddp(vi, cost, x0, plan.U, cost.X_ref[-1], multiplier=res.terminal_multiplier, **kw)
    assert warm.converged and cold.converged
    assert warm.iterations <= 2 < cold.iterations, (warm.iterations, cold.iterations)  # measured 0 and 33


def test_bad_warm_starts_and_multipliers_are_named(cartpole):
    task, vi, plan, _ = cartpole
    x0, cost = _cost(task, vi)
    with pytest.raises(ValueError, match="warm_start and U0"):
        plan_task(vi, task, U0=plan.U, warm_start=plan)
    short = load_task("task_cartpole_swingup")
    short.horizon = task.horizon - 10
    with pytest.raises(ValueError, match="warm_start: a plan with U"):
        plan_task(vi, short, warm_start=plan)
    # A Plan takes gains of any width up to nx (a Lie-group state's are ndx < nx wide); the compiled rollout that
    # follows the warm start reads (N, nu, nx) of them: it read past the end of these, and planned on.
    narrow = dataclasses.replace(plan, K=plan.K[:, :, :2], K_final=plan.K_final[:, :2])
    with pytest.raises(ValueError, match=r"warm_start: a plan with U .* and K \(60, 1, 2\), expected .* \(60, 1, 4\)"):
        plan_task(vi, task, warm_start=narrow)
    colloc = load_task("task_cartpole_swingup_lg2")
    with pytest.raises(TaskError, match="warm_start: only for the shooting methods"):
        plan_task(make_system(colloc), colloc, warm_start=plan)
    for bad, match in (
        ("guess", "multiplier: expected None, 'estimate'"),
        (np.zeros(3), "multiplier: expected 4"),
        (np.full(4, np.nan), "multiplier: expected 4"),
    ):
        with pytest.raises(ValueError, match=match):
            terminal_constrained_ddp(vi, cost, x0, plan.U, cost.X_ref[-1], multiplier=bad)


def test_a_receded_plan_continues_the_plan_then_holds_its_end(cartpole):
    _, _, plan, _ = cartpole
    n, s = plan.horizon, 7
    r = plan.receded(s)
    assert r.horizon == n and np.allclose(np.diff(r.times), plan.dt) and r.times[0] == pytest.approx(plan.times[s])
    assert np.array_equal(r.X[: n + 1 - s], plan.X[s:]) and np.all(r.X[n + 1 - s :] == plan.X[-1])
    assert np.array_equal(r.U[: n - s], plan.U[s:]) and np.all(r.U[n - s :] == plan.U_final)
    assert np.array_equal(r.K[: n - s], plan.K[s:]) and np.all(r.K[n - s :] == plan.K_final)
    assert np.array_equal(plan.receded(0).X, plan.X)
    for bad in (-1, n, 2.0, True):
        with pytest.raises(ValueError, match="steps: expected an integer"):
            plan.receded(bad)


def test_a_warm_start_that_cannot_be_followed_plans_cold_and_says_so():
    import dataclasses

    task = load_task("task_pendulum_swingup")  # no input bounds: gains × 1e9 blow a step up from 0.01 rad off
    vi = make_system(task)
    plan, _ = plan_task(vi, task)
    x0 = start_state(task, vi).copy()
    x0[0] += 0.01
    logs = []
    _, res = plan_task(vi, task, x0=x0, warm_start=dataclasses.replace(plan, K=plan.K * 1e9), log=logs.append)
    _, cold = plan_task(vi, task, x0=x0)
    assert any("cannot be followed from x0" in m and "planning cold" in m for m in logs), logs
    assert res.converged and res.iterations == cold.iterations and res.cost == pytest.approx(cold.cost, rel=1e-12)


def test_no_multiplier_estimate_at_inputs_that_cannot_be_simulated_falls_back_to_zero():
    from vi_control.planning.errors import PlanningError

    task = load_task("task_pendulum_swingup")
    vi = make_system(task)
    x0, cost = _cost(task, vi)
    logs = []
    with pytest.raises(PlanningError, match="initial guess cannot be simulated"):  # DDP's own verdict, not the
        terminal_constrained_ddp(
            vi,
            cost,
            x0,
            np.full((cost.N, vi.nu), 1e9),
            cost.X_ref[-1],  # estimate's
            multiplier="estimate",
            log=logs.append,
        )
    assert any("no multiplier estimate" in m and "starting from 0" in m for m in logs), logs
