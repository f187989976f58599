"""More tasks: cart-pole and acrobot swing-up, panda reaching under gravity — each reaches its goal.

Every task's plan is checked against independent facts: each step is a midpoint step of the plan's input,
the input bounds hold, the final state is the goal within a tolerance, and the TV-LQR closed loop from a
perturbed start ends near the goal where the open loop does not (for the unstable swing-ups).
"""

import numpy as np
import pytest

from vi_control.control.plan import state_error
from vi_control.integrators.midpoint import StepError
from vi_control.planning import load_task, make_system, plan_task, start_state
from vi_control.planning.evaluate import simulate_plan


def _plan(name, compile=None):
    task = load_task(f"task_{name}")
    vi = make_system(task, compile=compile)
    plan, res = plan_task(vi, task)
    return task, vi, plan, res


def _check_feasible(vi, plan, limits):
    X1 = np.array([vi.step(x, u) for x, u in zip(plan.X[:-1], plan.U)])
    assert np.allclose(X1, plan.X[1:], atol=1e-8)
    assert np.all(np.abs(plan.U[:, : vi.n_torques]) <= limits + 1e-12)


def _goal_error(vi, task, x):
    """|goal − q| per joint, continuous joints modulo 2π."""
    x_goal = np.concatenate([task.goal_q, np.zeros(vi.nq)])
    return np.abs(state_error(x_goal, np.concatenate([x[: vi.nq], np.zeros(vi.nq)]), vi.robot.continuous_mask))[: vi.nq]


@pytest.mark.parametrize(
    "name, perturbation",
    [
        ("cartpole_swingup", [0.1, 0.1, 0.0, 0.0]),
        ("acrobot_swingup", [0.05, -0.05, 0.0, 0.0]),
    ],
)
def test_underactuated_swingup_reaches_the_upright(name, perturbation):
    task, vi, plan, res = _plan(name)
    assert res.converged, res.stop_reason
    _check_feasible(vi, plan, vi.robot.effort_limits)
    assert _goal_error(vi, task, plan.X[-1]).max() < 5e-3
    assert np.abs(plan.X[-1, vi.nq :]).max() < 0.05  # nearly at rest
    x0 = plan.X[0] + np.asarray(perturbation)
    Xc, _ = simulate_plan(vi, plan, x0, feedback=True, clamp=True)
    assert _goal_error(vi, task, Xc[-1]).max() < 0.05
    # Open loop from the same start leaves the plan: by more than 0.3 rad or m in q before a step may fail (a
    # tumbling chain can outrun the midpoint step's Newton solve) — not merely "some StepError" — and, if every
    # step succeeds, away from the goal at the end.
    x, departed, failed = x0, 0.0, False
    for k, u in enumerate(plan.U):
        try:
            x = vi.step(x, u)
        except StepError:
            failed = True
            break
        departed = max(departed, np.abs(state_error(plan.X[k + 1], x, vi.robot.continuous_mask)[: vi.nq]).max())
    assert departed > 0.3, (k, departed)
    assert failed or _goal_error(vi, task, x).max() > 0.3


def test_panda_reaches_a_joint_space_goal_under_gravity():
    # CasADi's VM for the 7-DOF derivatives: no gcc wait on a cold cache (~1 min here); 12 iterations are cheap.
    task, vi, plan, res = _plan("panda_reach", compile=False)
    assert res.converged and res.iterations <= 20, res.stop_reason
    _check_feasible(vi, plan, vi.robot.effort_limits)
    assert np.abs(plan.X[-1, :7] - task.goal_q).max() < 2e-3
    # At the end it holds still under gravity: U_final is Pinocchio's gravity torque at the final q.
    import pinocchio as pin

    m = vi.robot.pin_model
    g = pin.computeGeneralizedGravity(m, m.createData(), plan.X[-1, :7])
    assert np.allclose(plan.U_final, g, atol=1e-9 * max(1.0, np.abs(g).max()))
    # Closed loop from a perturbed start, then 20 steps of the hold gain: stays at the goal.
    x0 = start_state(task, vi) + np.concatenate([0.05 * np.ones(7), np.zeros(7)])
    Xc, _ = simulate_plan(vi, plan, x0, feedback=True, extra_steps=20)
    assert np.abs(Xc[-1, :7] - task.goal_q).max() < 1e-2


def test_plan_too_fast_for_the_urdf_velocity_limits_is_warned_in_the_log():
    """The panda reach squeezed into 0.3 s (horizon 6 of Δt = 0.05 instead of 20): central differences of the planned
    configurations exceed a URDF ``<limit velocity>`` — independent of q̇ = M⁻¹p — and plan_task logs the warning
    that names the joint; the bundled 1 s reach logs none."""
    import dataclasses

    from vi_control.planning.pipeline import velocity_limit_excess

    for horizon, fast in ((6, True), (20, False)):
        task = dataclasses.replace(load_task("task_panda_reach"), horizon=horizon)
        vi = make_system(task)
        lines = []
        plan, _ = plan_task(vi, task, log=lines.append)
        warned = [s for s in lines if "exceeds the velocity limits" in s]
        limit = np.array([j.velocity_limit for j in vi.robot.joints])
        q = plan.X[:, : vi.nq]
        assert bool(np.any(np.abs(q[2:] - q[:-2]) / (2 * task.dt) > limit)) == fast
        assert warned == ([f"warning: {velocity_limit_excess(vi, plan.X)}"] if fast else [])
