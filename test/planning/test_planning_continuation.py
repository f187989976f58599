"""Continuation in the running state weight (planning.continuation): the acrobot swing-up through Q × 30 and Q × 5.

What it must give: a solution of the task itself (not of a scaled stage: re-solving from it changes nothing), within
the task's iteration cap for all stages together, and a count that no longer depends on how each step is solved
(the convergence tests from perturbed guesses are in test_planning_convergence.py)."""

import numpy as np
import pytest

from vi_control.planning import load_task, make_system, plan_task, reference_trajectory, start_state
from vi_control.planning.continuation import weight_continuation
from vi_control.planning.cost import QuadraticTrackingCost
from vi_control.planning.task import TaskError


@pytest.fixture(scope="module")
def acrobot():
    task = load_task("task_acrobot_swingup")
    vi = make_system(task)
    logs = []
    plan, res = plan_task(vi, task, log=logs.append)
    return task, vi, plan, res, logs


def test_the_acrobot_plan_goes_through_its_stages_and_solves_the_task_itself(acrobot):
    task, vi, plan, res, logs = acrobot
    assert task.continuation == {"Q_scale": (30.0, 5.0), "iterations": 20}
    stages = [m for m in logs if m.startswith("[continuation]")]
    assert [m.split(":")[0] for m in stages] == ["[continuation] Q × 30", "[continuation] Q × 5"]
    assert res.converged and res.method.endswith("+continuation") and res.iterations <= task.max_iterations
    assert np.abs(plan.X[-1, :2] - task.goal_q).max() < 1e-5
    # an optimum of the task, not of a stage: warm-started from it, the task's own solve has nothing left to do
    again, r = plan_task(vi, task, warm_start=plan)
    assert r.converged and r.iterations <= 2 and abs(r.cost - res.cost) <= 1e-6 * res.cost
    assert len(res.cost_history) >= res.iterations  # the stages' histories are kept


def test_the_same_inputs_planned_by_chord_and_exact_newton_take_nearly_the_same_iterations(acrobot):
    """Without the stages, seed 11's plan took 101 iterations with chord Newton and 84 with exact (measured). With
    them 73 and 77 — the two runs end at the acrobot's two nearby optima (J 137.043 and 136.997, 3e-4 apart:
    the last stage still chooses between those on round-off; docs/benchmarks/planner.md)."""
    task = acrobot[0]
    counts = {}
    for newton in ("chord", "exact"):
        vi = make_system(task, newton=newton)
        X_ref, U_ref = reference_trajectory(task, vi, start_state(task, vi))
        U0 = U_ref + np.random.default_rng(11).normal(0.0, 2.0, U_ref.shape)  # bench_convergence's seed 11
        _, res = plan_task(vi, task, U0=U0)
        assert res.converged
        counts[newton] = (res.iterations, res.cost)
    (n1, J1), (n2, J2) = counts.values()
    assert abs(n1 - n2) <= 10 and abs(J1 - J2) <= 5e-4 * J1, counts  # measured 4 (margin: other round-off)


def test_continuation_options_are_validated_naming_the_key():
    base = {
        "name": "t",
        "model": "acrobot",
        "dt": 0.025,
        "horizon": 40,
        "goal": {"q": ["pi", 0.0]},
        "weights": {"Q": 0.1, "R": 0.1, "Qf": 1.0},
    }

    def task(**opt):
        return load_task({**base, "optimizer": {"max_iterations": 60, **opt}})

    assert task(continuation={"Q_scale": [10]}).continuation == {"Q_scale": (10.0,), "iterations": 20}
    assert task().continuation == {}
    for cont, match in (
        ({"Q_scale": [10], "steps": 3}, r"optimizer.continuation: unknown key\(s\) \['steps'\]"),
        ({"iterations": 5}, "optimizer.continuation.Q_scale: missing"),
        ({"Q_scale": [10, -1]}, "optimizer.continuation.Q_scale: expected positive"),
        ({"Q_scale": [10], "iterations": 0}, "optimizer.continuation.iterations"),
        (
            {"Q_scale": [30, 5, 2], "iterations": 20},
            "3 stages × 20 iterations leave none of optimizer.max_iterations = 60",
        ),
        ([30, 5], "optimizer.continuation: expected a mapping"),
    ):
        with pytest.raises(TaskError, match=match):
            task(continuation=cont)
    with pytest.raises(TaskError, match="optimizer.continuation: only for optimizer.method ddp or ilqr"):
        task(method="gradient", continuation={"Q_scale": [10]})


def test_weight_continuation_refuses_stages_without_room():
    cost = QuadraticTrackingCost(np.zeros((3, 2)), np.zeros((2, 1)), 1.0, 1.0, 1.0)
    for scales, n, match in (((), 5, "scales"), ((2.0, np.nan), 5, "scales"), ((2.0, 3.0), 5, "leave none")):
        with pytest.raises(ValueError, match=match):
            weight_continuation(lambda *a: None, cost, np.zeros((2, 1)), scales, n, 10)
