"""``ddp.feedback_initial_guess``, the one closed-loop initial guess (the task's ``initial_guess: feedback``, the
collocation polish, the warm start of a re-plan): bit for bit the inputs of the two call patterns it replaced
(``shooting.feedback_initial_guess``: TV-LQR of the reference, rolled out from the step's predictor;
``pipeline.warm_start_inputs``: a plan's own gains, the stage passes' rollout warm-started on the plan), and inputs
that really are the law u_k = clip(U_k + K_k (X_k ⊖ x_k)) along the rollout they produce (re-simulated here step by
step with the integrator alone)."""

import dataclasses

import numpy as np
import pytest

from vi_control.control.lqr import tv_lqr
from vi_control.linearization import linearize
from vi_control.planning import compiled, load_task, make_system, plan_task, reference_trajectory, start_state
from vi_control.planning.ddp import feedback_initial_guess, stage_passes
from vi_control.planning.pipeline import initial_inputs, input_limits
from vi_control.planning.shooting import input_bounds, rollout


@pytest.fixture(scope="module", params=["task_pendulum_swingup_bounded", "task_cartpole_swingup"])
def case(request):
    task = load_task(request.param)
    vi = make_system(task)
    x0 = start_state(task, vi)
    X_ref, U_ref = reference_trajectory(task, vi, x0)
    W = tuple(task.weight(w, "lqr", n, vi.nq) for w, n in (("Q", vi.nx), ("R", vi.nu), ("Qf", vi.nx)))
    plan, _ = plan_task(vi, task)
    x1 = x0.copy()
    x1[0] += 0.01  # a re-plan's start, off the plan's
    return task, vi, x0, x1, X_ref, U_ref, W, plan


def _law_along_rollout(vi, x0, X, U_nom, K, limits, U):
    """max |U_k − clip(U_nom,k + K_k (X_k ⊖ x_k))| with x_k the integrator's own rollout of U from x0 (its Newton
    started elsewhere: the states agree to the step's tolerance, ~1e-8, the inputs to K times that)."""
    lo, hi = input_bounds(limits, vi.nu)
    x, err = np.asarray(x0, float), 0.0
    for k in range(len(U)):
        u = np.clip(U_nom[k] + K[k] @ vi.state.diff(x, X[k]), lo, hi)
        err = max(err, np.abs(u - U[k]).max())
        x = vi.step(x, U[k])
    return err


def test_reference_gains_are_the_old_feedback_guess_bit_for_bit(case):
    task, vi, x0, _, X_ref, U_ref, W, _ = case
    limits = input_limits(task, vi)
    got = feedback_initial_guess(vi, x0, X_ref, U_ref, weights=W, input_limits=limits)
    # the old shooting.feedback_initial_guess(vi, x0, X_ref, U_ref, Q, R, Qf, input_limits)
    lins = [linearize(vi, X_ref[k], U_ref[k]) for k in range(len(U_ref))]
    K, _ = tv_lqr(np.array([lin.A for lin in lins]), np.array([lin.B for lin in lins]), *W)
    lo, hi = input_bounds(limits, vi.nu)
    old = rollout(vi, x0, U_ref, lo=lo, hi=hi, X_nom=X_ref, K=-K)[1]
    assert np.array_equal(got, old)
    fb = dataclasses.replace(task, initial_guess="feedback")
    assert np.array_equal(initial_inputs(fb, vi, x0, X_ref, U_ref), old)  # the task's rule: the same inputs
    assert _law_along_rollout(vi, x0, X_ref, U_ref, K, limits, got) <= 1e-5
    assert not np.array_equal(got, np.clip(U_ref, lo, hi))  # the feedback acted: not the open-loop guess


@pytest.mark.parametrize("path", ["compiled", "numpy"])
def test_plan_gains_are_the_old_warm_start_inputs_bit_for_bit(case, path, monkeypatch):
    task, vi, _, x1, _, _, _, plan = case
    monkeypatch.setattr(compiled, "ENABLED", path == "compiled")
    limits = input_limits(task, vi)
    got = feedback_initial_guess(vi, x1, plan.X, plan.U, K=plan.K, input_limits=limits)
    # the old pipeline.warm_start_inputs(vi, x0, X, U, K, input_limits)
    lo, hi = input_bounds(limits, vi.nu)
    stages = stage_passes(vi, len(plan.U), lo, hi, second_order=False)
    assert stages.compiled == (path == "compiled")
    old = np.array(stages.rollout(x1, plan.U, plan.X, -plan.K)[1])
    assert np.array_equal(got, old)
    assert _law_along_rollout(vi, x1, plan.X, plan.U, plan.K, limits, got) <= 1e-5
    assert np.abs(got - plan.U).max() > 1e-6  # started 0.01 off: the gains corrected it


def test_a_step_that_fails_gives_none_and_the_gains_come_one_way(case):
    _, vi, x0, x1, X_ref, U_ref, W, plan = case
    assert feedback_initial_guess(vi, x1, plan.X, plan.U, K=plan.K * 1e9) is None  # unbounded: a step blows up
    for gains in (dict(), dict(K=plan.K, weights=W)):
        with pytest.raises(ValueError, match="the gains K or the weights"):
            feedback_initial_guess(vi, x0, X_ref, U_ref, **gains)


def test_reference_guess_is_the_feedback_guess_or_else_the_reference_open_loop(case):
    """``ddp.reference_feedback_guess``, the one fallback of the task's feedback guess and the collocation polishes:
    the feedback guess when its rollout succeeds, else a copy of U_ref (a start the reference's gains cannot hold:
    the rollout from x0 displaced by 1e3 in every momentum fails a step)."""
    from vi_control.integrators.base import StepError
    from vi_control.planning.ddp import reference_feedback_guess

    task, vi, x0, _, X_ref, U_ref, W, _ = case
    limits = input_limits(task, vi)
    got = reference_feedback_guess(vi, x0, X_ref, U_ref, W, limits)
    assert np.array_equal(got, feedback_initial_guess(vi, x0, X_ref, U_ref, weights=W, input_limits=limits))
    far = x0.copy()
    far[vi.nq :] += 1e3
    with pytest.raises(StepError):
        vi.step(far, U_ref[0])  # (the first step of the rollout already fails)
    assert feedback_initial_guess(vi, far, X_ref, U_ref, weights=W, input_limits=limits) is None
    fallback = reference_feedback_guess(vi, far, X_ref, U_ref, W, limits)
    assert np.array_equal(fallback, U_ref) and not np.shares_memory(fallback, U_ref)
