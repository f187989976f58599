"""Every plan a planner returns respects its limits at every knot: a property test over random
requests. Random goals inside the joint limits (half of them with joints on an end stop), random durations (from a
third of what the velocity-limit rule picks to twice it), horizons, weights and shooting methods, on the cart-pole
(a slider with end stops at ±2 m, an effort limit of 20 N) and the arm7 chain; each plan either comes back within
the limits or is refused by name (PlanLimitsError, PlanningError). Goals on an end stop were overshot (the
cart-pole's slider to 2.07 m, an arm7 joint 0.02 rad past its limit) and the plans returned: the request now refuses
them. Checked here independently of the planner's own check: every knot's positions against the URDF limits,
inputs against the effort limits, and velocities q̇ = M(q)⁻¹p from Pinocchio's CRBA against velocity_limit_factor ×
the URDF velocity limits — what the controller enforces on the plan's states."""

import numpy as np
import pinocchio as pin
import pytest

import vi_control as vc
from vi_control.planning.errors import PlanLimitsError, PlanningError
from vi_control.planning.limits import VELOCITY_LIMIT_FACTOR
from vi_control.planning.requests import goal_duration, plan_goal
from vi_control.planning.task import load_task

SEED = 40


def _task(rng, model: str, nq: int) -> dict:
    return {
        "model": model,
        "dt": float(rng.choice([0.02, 0.05])),
        "horizon": int(rng.integers(20, 50)),
        "weights": {
            "Q": [float(10.0 ** rng.uniform(0, 2))] * nq + [1.0] * nq,
            "R": float(10.0 ** rng.uniform(-2, 0)),
            "Qf": [1e3] * nq + [10.0] * nq,
        },
        "input_limits": "model",
        "optimizer": {"method": str(rng.choice(["ddp", "ilqr"])), "max_iterations": 40},
    }


def _violations(vi, robot, plan) -> list[str]:
    out = []
    nq = vi.nq
    lo = np.array([j.lower for j in robot.joints])
    hi = np.array([j.upper for j in robot.joints])
    vlim = np.array([j.velocity_limit for j in robot.joints])
    elim = np.asarray(robot.effort_limits, float)
    model, data = robot.pin_model, robot.pin_model.createData()
    for k, x in enumerate(plan.X):
        q, p = x[:nq], x[nq:]
        bad = (q < lo - 1e-9 * np.maximum(1, np.abs(lo))) | (q > hi + 1e-9 * np.maximum(1, np.abs(hi)))
        if bad.any():
            out.append(f"k={k}: position {q[bad]} beyond [{lo[bad]}, {hi[bad]}]")
        M = pin.crba(model, data, q)
        M = np.triu(M) + np.triu(M, 1).T
        qdot = np.linalg.solve(M, p)
        vb = np.isfinite(vlim) & (vlim > 0) & (np.abs(qdot) > VELOCITY_LIMIT_FACTOR * vlim * (1 + 1e-9))
        if vb.any():
            out.append(f"k={k}: velocity {qdot[vb]} beyond {VELOCITY_LIMIT_FACTOR} × {vlim[vb]}")
    U = plan.U[:, : vi.n_torques]
    over = np.abs(U) > np.where(elim > 0, elim, np.inf) * (1 + 1e-9)
    if over.any():
        out.append(f"inputs {U[over][:3]} beyond {elim}")
    return out


@pytest.mark.parametrize("model, urdf, n", [("cartpole", "cartpole", 16), ("arm7", "arm7", 4)])
def test_random_requests_give_plans_within_their_limits_or_a_refusal(model, urdf, n):
    rng = np.random.default_rng(SEED)
    robot = vc.load_robot(model)
    outcomes = []
    for i in range(n):
        d = _task(rng, model, robot.nq)
        task = load_task(d)
        vi = vc.MidpointVI(robot, task.dt)
        lo = np.array([j.lower if np.isfinite(j.lower) else -np.pi for j in robot.joints])
        hi = np.array([j.upper if np.isfinite(j.upper) else np.pi for j in robot.joints])
        goal = rng.uniform(lo, hi)
        at_stop = rng.random() < 0.5  # half the goals on an end stop: an overshoot would leave the limits
        goal = np.where(at_stop & (rng.random(robot.nq) < 0.5), np.where(rng.random(robot.nq) < 0.5, lo, hi), goal)
        factor = float(rng.uniform(0.3, 2.0))
        T = factor * goal_duration(vi, np.zeros(robot.nq), goal, task.horizon * task.dt)
        try:
            plan, _ = plan_goal(vi, task, None, goal, duration=T)
        except (PlanLimitsError, PlanningError) as e:
            if isinstance(e, PlanLimitsError):  # names the joint, the knot's time and the limit
                assert e.joint in robot.joint_names and 0 <= e.time <= T + 1 and f"{e.joint}" in str(e)
            outcomes.append(("refused", getattr(e, "quantity", "planning")))
            continue
        bad = _violations(vi, robot, plan)
        assert not bad, (i, d, goal.tolist(), T, bad[:3])
        outcomes.append(("planned", T))
    assert any(o[0] == "planned" for o in outcomes), outcomes
