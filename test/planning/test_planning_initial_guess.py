"""``ddp.feedback_initial_guess``, the one closed-loop initial guess (the task's ``initial_guess: feedback``, the
collocation polish, the warm start of a re-plan): the inputs of the two call patterns it replaced (bit for bit, or
to round-off where the compiled stages solve and linearize the reference in C)
(``shooting.feedback_initial_guess``: TV-LQR of the reference, rolled out from the step's predictor;
``pipeline.warm_start_inputs``: a plan's own gains, the stage passes' rollout warm-started on the plan), and inputs
that really are the law u_k = clip(U_k + K_k (X_k ⊖ x_k)) along the rollout they produce (re-simulated here step by
step with the integrator alone)."""

import dataclasses

import numpy as np
import pytest

from vi_control.control.lqr import tv_lqr
from vi_control.integrators.base import StepError
from vi_control.linearization import linearize
from vi_control.planning import compiled, load_task, make_system, plan_task, reference_trajectory, start_state
from vi_control.planning.ddp import feedback_initial_guess, stage_passes
from vi_control.planning.pipeline import initial_inputs, input_limits
from vi_control.planning.shooting import input_bounds, rollout

# A panda goal (rad, within the URDF limits) whose reach from the bundled start its TV-LQR gains about the goal cannot
# hold: 2.1 rad on joint 3 and 1.7 on joint 7 away, with joint 2 leaning 1.4 rad further forward.
FAR_PANDA_GOAL = [0.06, 0.64, -1.86, -1.14, -0.98, 1.31, 2.49]


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


@pytest.mark.parametrize("path", ["compiled", "numpy"])
def test_reference_gains_are_the_old_feedback_guess(case, path, monkeypatch):
    """The numpy stages give the old guess bit for bit; the compiled ones (each reference stage solved and linearized
    in C, the rollout from the step's predictor in C) the same inputs to round-off."""
    task, vi, x0, _, X_ref, U_ref, W, _ = case
    monkeypatch.setattr(compiled, "ENABLED", path == "compiled")
    limits = input_limits(task, vi)
    lo, hi = input_bounds(limits, vi.nu)
    assert stage_passes(vi, len(U_ref), lo, hi, second_order=False).compiled == (path == "compiled")
    got = feedback_initial_guess(vi, x0, X_ref, U_ref, weights=W, input_limits=limits)
    # the old shooting.feedback_initial_guess(vi, x0, X_ref, U_ref, Q, R, Qf, input_limits)
    lins = [linearize(vi, X_ref[k], U_ref[k]) for k in range(len(U_ref))]
    K, _ = tv_lqr(np.array([lin.A for lin in lins]), np.array([lin.B for lin in lins]), *W)
    old = rollout(vi, x0, U_ref, lo=lo, hi=hi, X_nom=X_ref, K=-K)[1]
    if path == "numpy":
        assert np.array_equal(got, old)
    else:  # (Newton's last iterate and the products' order differ: 1e-13 here)
        assert np.abs(got - old).max() <= 1e-10 * (1.0 + np.abs(old).max())
    fb = dataclasses.replace(task, initial_guess="feedback")
    assert np.array_equal(initial_inputs(fb, vi, x0, X_ref, U_ref), got)  # the task's rule: the same inputs
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


@pytest.mark.parametrize("name", ["task_pendulum_swingup_bounded", "task_cartpole_swingup", "task_panda_reach"])
def test_compiled_reference_jacobians_are_linearize_of_every_stage(name):
    """``CompiledStages.reference_jacobians``: each stage's step solved from the reference's own state (not from the
    stage before: a step reference jumps, which no rollout follows) and linearized, in two C calls — the A_k, B_k of
    ``linearize(vi, X[k], U[k])`` per stage to round-off, also where the inputs lie outside the box (a reference's
    inputs are not clipped). None where a stage's step fails, as the numpy path."""
    task = load_task(name)
    vi = make_system(task)
    x0 = start_state(task, vi)
    X_ref, U_ref = reference_trajectory(task, vi, x0)
    N = len(U_ref)
    X = X_ref.copy()
    X[N // 2 :, : vi.nq] += 0.3  # a jump half way (no trajectory of the dynamics)
    U = U_ref + 0.5 * np.sin(np.arange(N * vi.nu)).reshape(N, vi.nu)
    lim = np.full(vi.nu, 1e-3)  # (every input outside it)
    stages = stage_passes(vi, N, -lim, lim, second_order=False)
    assert stages.compiled
    A, B = stages.reference_jacobians(X, U)
    lins = [linearize(vi, X[k], U[k]) for k in range(N)]
    for k, lin in enumerate(lins):
        scale = 1.0 + np.abs(lin.A).max() + np.abs(lin.B).max()
        assert np.abs(A[k] - lin.A).max() <= 1e-10 * scale and np.abs(B[k] - lin.B).max() <= 1e-10 * scale, k
    far = X.copy()
    far[N - 1, vi.nq :] += 1e3  # the last stage's step cannot be solved
    with pytest.raises(StepError):
        linearize(vi, far[N - 1], U[N - 1])
    assert stages.reference_jacobians(far, U) is None
    with pytest.raises(ValueError, match="reference: X"):
        stages.reference_jacobians(X[:-1], U)


def test_the_feedback_guess_that_fails_holds_the_start():
    """``initial_guess: feedback`` where the reference's TV-LQR gains cannot hold the start (the panda reach to a goal
    beyond what its gains about the goal reach: the clipped closed loop from the start fails a step) falls back to the
    start held (``hold_start``), which the optimizer can start from — not to the reference's inputs open loop, which
    from the start cannot be simulated either (a joint would turn by more than π in one step)."""
    from vi_control.planning.pipeline import hold_start_guess

    task = dataclasses.replace(load_task("task_panda_reach"), goal_q=FAR_PANDA_GOAL)
    vi = make_system(task)
    x0 = start_state(task, vi)
    X_ref, U_ref = reference_trajectory(task, vi, x0)
    W = tuple(task.weight(w, "lqr", n, vi.nq) for w, n in (("Q", vi.nx), ("R", vi.nu), ("Qf", vi.nx)))
    limits = input_limits(task, vi)
    assert feedback_initial_guess(vi, x0, X_ref, U_ref, weights=W, input_limits=limits) is None
    lo, hi = input_bounds(limits, vi.nu)
    assert rollout(vi, x0, np.clip(U_ref, lo, hi)) is None  # (the old fallback, open loop, fails too)
    got = initial_inputs(task, vi, x0, X_ref, U_ref)
    assert np.array_equal(got, hold_start_guess(task, vi, x0, len(U_ref)))
    plan, res = plan_task(vi, task)
    assert res.converged


def test_hold_start_from_a_moving_start_is_the_hold_law_along_its_own_rollout():
    """``hold_start`` from a moving start (a re-plan, an MPC cycle, the feedback guess's fallback): the inputs of
    x₀'s configuration held by its DLQR hold gain in closed loop — u_k = clip(u_eq + K (x_eq ⊖ x_k)) along the rollout
    they produce (re-simulated here step by step), with (K, x_eq, u_eq) ``hold_gain`` at q₀ under the task's ``hold``
    weights — which brings the arm, moving at up to 0.5 rad/s, back to q₀ and stops it there within the horizon,
    where the gravity torque alone (open loop) lets it run away (a step fails, the wrist at 20+ rad/s)."""
    from vi_control.control.hold import hold_gain, holding_input
    from vi_control.planning.pipeline import hold_start_guess

    task = load_task("task_panda_reach")
    vi = make_system(task)
    q0 = np.asarray(task.q0, float)
    qdot = np.array([0.5, -0.3, 0.2, 0.4, -0.5, 0.3, 0.1])
    x0 = vi.state_from_configurations(q0 - vi.dt * qdot, q0)
    N = 20
    U = hold_start_guess(task, vi, x0, N)
    assert U.shape == (N, vi.nu)
    K, x_eq, u_eq = hold_gain(vi, q0, task.weight("Q", "hold", vi.nx, vi.nq), task.weight("R", "hold", vi.nu, vi.nq))
    limits = input_limits(task, vi)
    err = _law_along_rollout(vi, x0, np.tile(x_eq, (N + 1, 1)), np.tile(u_eq, (N, 1)), np.tile(K, (N, 1, 1)), limits, U)
    assert err <= 1e-6 * (1.0 + np.abs(U).max())
    assert np.abs(U - u_eq).max() > 1.0  # (not the gravity torque: the gain acts)

    def configurations(inputs):  # (q_k of the rollout; p is a discrete momentum, M⁻¹p ≠ 0 at rest under gravity)
        x, Q = x0, [q0]
        for u in inputs:
            x = vi.step(x, u)
            Q.append(x[: vi.nq])
        return np.array(Q)

    held = configurations(U)
    assert np.abs(held[-1] - q0).max() < 1e-3 and np.abs(held[-1] - held[-2]).max() / vi.dt < 1e-2
    with pytest.raises(StepError):
        configurations(np.tile(holding_input(vi, q0)[0], (N, 1)))


@pytest.mark.parametrize(
    "name, chosen", [("task_pendulum_swingup_bounded", "reference"), ("task_panda_reach", "feedback")]
)
def test_auto_starts_from_the_feedback_guess_only_where_its_rollout_costs_less_than_half(name, chosen):
    """``initial_guess: auto`` rolls out both candidates and takes the feedback guess only if its rollout costs less
    than half the reference inputs': the bounded pendulum's feedback rollout from the bottom costs 0.72× the
    reference's (kept: the reference; the feedback guess leads to a worse local optimum there), the panda's reference
    inputs (the goal's gravity torque from the start) cannot even be simulated (infinite cost: the feedback guess).
    The optimizer's first cost is the chosen rollout's."""
    from vi_control.planning.cost import QuadraticTrackingCost
    from vi_control.planning.pipeline import lqr_weights

    task = dataclasses.replace(load_task(name), initial_guess="auto")
    vi = make_system(task)
    x0 = start_state(task, vi)
    X_ref, U_ref = reference_trajectory(task, vi, x0)
    W = task.weight_table(vi.nx, vi.nu, vi.nq)
    cost = QuadraticTrackingCost(X_ref, U_ref, W["weights", "Q"], W["weights", "R"], W["weights", "Qf"])
    limits = input_limits(task, vi)
    lo, hi = input_bounds(limits, vi.nu)
    U_fb = feedback_initial_guess(vi, x0, X_ref, U_ref, weights=lqr_weights(task, vi), input_limits=limits)
    J = {}
    for kind, U in (("reference", U_ref), ("feedback", U_fb)):
        ro = rollout(vi, x0, U, lo=lo, hi=hi)
        J[kind] = np.inf if ro is None else cost.calc(ro[0], ro[1])
    assert (J["feedback"] < 0.5 * J["reference"]) == (chosen == "feedback")
    _, res = plan_task(vi, task)
    assert res.cost_history[0] == pytest.approx(J[chosen], rel=1e-9)


def _panda_reference():
    task = load_task("task_panda_reach")
    vi = make_system(task)
    x0 = start_state(task, vi)
    X_ref, U_ref = reference_trajectory(task, vi, x0)
    W = tuple(task.weight(w, "lqr", n, vi.nq) for w, n in (("Q", vi.nx), ("R", vi.nu), ("Qf", vi.nx)))
    return task, vi, x0, X_ref, U_ref, W


def test_a_goal_reference_is_linearized_once_as_every_stage():
    """A reference that holds one state under one input (the goal reference) has one step at every stage:
    ``ddp._reference_jacobians`` linearizes it once — the A_k, B_k of every stage's own linearization (the compiled
    stagewise pass) to round-off. A reference with one stage different is linearized stage by stage."""
    from vi_control.planning.ddp import _reference_jacobians

    task, vi, x0, X_ref, U_ref, _ = _panda_reference()
    N = len(U_ref)
    lo, hi = input_bounds(input_limits(task, vi), vi.nu)
    stages = stage_passes(vi, N, lo, hi, second_order=False)
    assert stages.compiled and (X_ref == X_ref[0]).all() and (U_ref == U_ref[0]).all()
    A, B = _reference_jacobians(vi, stages, X_ref, U_ref)
    A_all, B_all = stages.reference_jacobians(X_ref, U_ref)
    assert A.shape == A_all.shape and B.shape == B_all.shape
    assert np.abs(A - A_all).max() <= 1e-10 * (1 + np.abs(A_all).max())
    assert np.abs(B - B_all).max() <= 1e-10 * (1 + np.abs(B_all).max())
    U = U_ref.copy()
    U[-1] += 1.0  # the last stage another step: its own A_k, B_k
    A2, B2 = _reference_jacobians(vi, stages, X_ref, U)
    lin = linearize(vi, X_ref[-2], U[-1])
    assert np.abs(A2[-1] - lin.A).max() <= 1e-10 * (1 + np.abs(lin.A).max())
    assert np.abs(A2[-1] - A[-1]).max() > 1e-6  # (and it differs from the held step's)
    far = X_ref.copy()
    far[:, vi.nq :] += 1e3  # a held state whose step cannot be solved: None, as the stagewise pass
    assert _reference_jacobians(vi, stages, far, U_ref) is None


def test_a_goal_references_gains_are_remembered_per_goal_and_weights(monkeypatch):
    """The feedback guess's TV-LQR gains about a goal reference depend on the goal, its holding input, the weights and
    N — not on x0: the compiled stages remember them (``ddp._reference_gains``), so a second guess to the same goal
    from another start linearizes nothing and sweeps no Riccati, and its inputs are bit for bit those computed
    afresh. Another goal, other weights (R just changed) or another holding input compute anew; the kept gains are
    read-only (every rollout shares them) and at most ``GOAL_GAINS_KEPT`` goals are kept."""
    import importlib

    ddp_mod = importlib.import_module("vi_control.planning.ddp")
    task, vi, x0, X_ref, U_ref, W = _panda_reference()
    limits = input_limits(task, vi)
    lo, hi = input_bounds(limits, vi.nu)
    stages = stage_passes(vi, len(U_ref), lo, hi, second_order=False)
    stages.goal_gains.clear()
    calls = []
    real = ddp_mod.tv_lqr
    monkeypatch.setattr(ddp_mod, "tv_lqr", lambda *a: calls.append(1) or real(*a))
    x1 = x0.copy()
    x1[0] += 0.05
    first = feedback_initial_guess(vi, x0, X_ref, U_ref, weights=W, input_limits=limits)
    again = feedback_initial_guess(vi, x1, X_ref, U_ref, weights=W, input_limits=limits)
    assert len(calls) == 1 and len(stages.goal_gains) == 1
    (K_kept,) = stages.goal_gains.values()
    assert not K_kept.flags.writeable
    stages.goal_gains.clear()
    fresh = feedback_initial_guess(vi, x1, X_ref, U_ref, weights=W, input_limits=limits)
    assert len(calls) == 2 and np.array_equal(again, fresh) and not np.array_equal(first, again)
    R2 = W[1].copy()
    R2[0, 0] *= 1 + 1e-15  # (its last bit: other weights)
    feedback_initial_guess(vi, x1, X_ref, U_ref, weights=(W[0], R2, W[2]), input_limits=limits)
    U2 = U_ref + 1e-9  # another holding input
    feedback_initial_guess(vi, x1, X_ref, U2, weights=W, input_limits=limits)
    assert len(calls) == 4 and len(stages.goal_gains) == 3
    monkeypatch.setattr(ddp_mod, "GOAL_GAINS_KEPT", 3)
    X3 = X_ref.copy()
    X3[:, 0] += 1e-3  # another goal: the oldest kept one goes
    feedback_initial_guess(vi, x1, X3, U_ref, weights=W, input_limits=limits)
    assert len(calls) == 5 and len(stages.goal_gains) == 3
    feedback_initial_guess(vi, x1, X_ref, U_ref, weights=W, input_limits=limits)
    assert len(calls) == 6  # (it was the oldest)


@pytest.mark.parametrize("path", ["compiled", "numpy"])
def test_ddp_starts_from_the_guess_rollout_as_it_is(path, monkeypatch):
    """``ddp(..., initial=feedback_rollout(...))`` takes the guess's own rollout instead of replaying its inputs (one
    rollout fewer) and ends where the replay does; a rollout of other inputs, from another start or of another system
    is not used."""
    from vi_control.planning import QuadraticTrackingCost
    from vi_control.planning.ddp import ddp, feedback_rollout

    monkeypatch.setattr(compiled, "ENABLED", path == "compiled")
    task, vi, x0, X_ref, U_ref, W = _panda_reference()
    limits = input_limits(task, vi)
    cost = QuadraticTrackingCost(
        X_ref, U_ref, *(task.weight(w, "weights", n, vi.nq) for w, n in (("Q", 14), ("R", 7), ("Qf", 14)))
    )
    ro = feedback_rollout(vi, x0, X_ref, U_ref, weights=W, input_limits=limits)
    assert ro.compiled == (path == "compiled")
    calls = []
    stages = stage_passes(vi, len(U_ref), *input_bounds(limits, vi.nu))
    original = type(stages).rollout
    monkeypatch.setattr(type(stages), "rollout", lambda self, *a, **k: calls.append(1) or original(self, *a, **k))
    runs, other = {}, ro.U.copy()
    other[0, 0] += 1e-6
    for name, U0, initial in (
        ("replay", ro.U, None),
        ("initial", ro.U, ro),
        ("other inputs", other, ro),
        ("other start", ro.U, ro._replace(X=ro.X + 1e-3)),
        ("other system", ro.U, ro._replace(system=make_system(task))),  # (the same model, another object)
    ):
        calls.clear()
        runs[name] = ddp(vi, cost, x0, U0, limits, tolerance=1e-6, initial=initial), len(calls)
    (replay, n_replay), (taken, n_taken) = runs["replay"], runs["initial"]
    assert n_taken == n_replay - 1 and taken.iterations == replay.iterations and taken.converged
    assert abs(taken.cost - replay.cost) <= 1e-9 * replay.cost
    assert np.abs(taken.U - replay.U).max() <= 1e-6
    for name in ("other inputs", "other start", "other system"):
        res, n = runs[name]
        assert n == n_replay, name  # (replayed: the rollout given is not theirs)
    plain = ddp(vi, cost, x0, other, limits, tolerance=1e-6)
    assert np.array_equal(runs["other inputs"][0].U, plain.U)
