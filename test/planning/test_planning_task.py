"""Task YAML validation and plan_task on the seed-000 pendulum swing-up (REFERENCE §2)."""

import numpy as np
import pytest

from vi_control.linearization import linearize
from vi_control.model.bundled import share_dir
from vi_control.planning import TaskError, load_task, make_system, plan_task, reference_trajectory

PENDULUM_TASK = str(share_dir() / "config" / "task_pendulum_swingup.yaml")  # independent of the working dir


@pytest.fixture(scope="module")
def swingup(pendulum_vi):
    task = load_task(PENDULUM_TASK)
    lines: list[str] = []
    plan, res = plan_task(pendulum_vi, task, log=lines.append)
    return task, plan, res, lines


def test_load_task_reads_the_paper_setup():
    t = load_task(PENDULUM_TASK)
    assert (t.dt, t.horizon, t.method) == (0.1, 100, "ddp")
    assert t.goal_q[0] == pytest.approx(np.pi)
    assert t.reference["type"] == "step" and t.reference["step_index"] == 50


@pytest.mark.parametrize(
    "patch, key",
    [
        ({"dt": -0.1}, "dt"),
        ({"horizon": 0}, "horizon"),
        ({"horizon": 2.5}, "horizon"),
        ({"optimizer": {"method": "newton"}}, "optimizer.method"),
        ({"optimizer": {"max_iterations": 0}}, "optimizer.max_iterations"),
        ({"goal": {"q": ["pi/0"]}}, "goal.q[0]"),
        ({"goal": {"q": ["__import__('os')"]}}, "goal.q[0]"),
        ({"weights": {"R": 1.0}}, "weights.Q"),
        ({"input_limits": "sometimes"}, "input_limits"),
        ({"reference": {"type": "spline"}}, "reference"),
        ({"bogus": 1}, "bogus"),
        ({"model": {"bundled": "pendulum", "example": "panda"}}, "model"),
    ],
)
def test_load_task_errors_name_the_key(patch, key):
    d = {"model": "pendulum", "dt": 0.1, "horizon": 10, "weights": {"Q": 1.0, "R": 1.0}, **patch}
    if key == "weights.Q":
        d["weights"] = patch["weights"]
    with pytest.raises(TaskError, match=key.replace("[", r"\[").replace("]", r"\]")):
        t = load_task(d)
        reference_trajectory(t, make_system(t))  # some keys are checked against the model


def test_load_task_sources_agree():
    """A path, a bare name in config/, YAML text and a dict give the same task."""
    with open(PENDULUM_TASK) as f:
        text = f.read()
    import yaml

    urdf_model = {"urdf": str(share_dir() / "urdf" / "pendulum.urdf"), "system": "../config/pendulum.yaml"}
    tasks = [
        load_task(PENDULUM_TASK),
        load_task("task_pendulum_swingup"),
        load_task(text),
        load_task(yaml.safe_load(text)),
    ]
    # A model given by URDF and system paths (relative to the task file's directory, else config/).
    t = load_task(PENDULUM_TASK)
    t.model = urdf_model
    assert t.load_robot().hash == tasks[0].load_robot().hash
    assert all(t.weights == tasks[0].weights and t.reference == tasks[0].reference for t in tasks)
    with pytest.raises(TaskError, match="not found"):
        load_task("task_that_does_not_exist")


def test_weight_sizes_are_checked_against_the_model(pendulum_vi):
    t = load_task({"model": "pendulum", "dt": 0.1, "horizon": 10, "weights": {"Q": [1, 2, 3], "R": 1}})
    with pytest.raises(TaskError, match="weights.Q"):
        plan_task(pendulum_vi, t)


def test_plan_task_swings_the_pendulum_up(swingup, pendulum_vi):
    task, plan, res, lines = swingup
    assert res.converged and res.iterations <= 14  # Johnson2015, Fig. 3: second-order method, 14 iterations
    assert abs(res.decrement_history[-1]) < 1e-6
    # Feasible: every plan step is a midpoint step of its input (one step at a time: the upright
    # is unstable, so a whole open-loop re-simulation amplifies round-off by ~e^{5√g}).
    X1 = np.array([pendulum_vi.step(x, u) for x, u in zip(plan.X[:-1], plan.U)])
    assert np.allclose(X1, plan.X[1:], atol=1e-9)
    assert plan.X[-1, 0] == pytest.approx(np.pi, abs=1e-3)
    assert plan.K.shape == (100, 1, 2) and plan.times[-1] == pytest.approx(10.0)
    assert any("converged" in s for s in lines) and sum("iter" in s for s in lines) == res.iterations + 1
    # Cost decreases monotonically (line search accepts decreases only).
    assert np.all(np.diff(res.cost_history) <= 1e-12)


def test_hold_gain_stabilizes_the_final_state(swingup, pendulum_vi):
    _, plan, _, _ = swingup
    assert plan.U_final[0] == pytest.approx(0.0, abs=1e-6)  # upright: no gravity torque
    lin = linearize(pendulum_vi, np.array([np.pi, 0.0]), plan.U_final)
    assert np.abs(np.linalg.eigvals(lin.A)).max() > 1.0  # upright is open-loop unstable ...
    assert np.abs(np.linalg.eigvals(lin.A - lin.B @ plan.K_final)).max() < 1.0  # ... and held by K_final


@pytest.mark.parametrize("method", ["ilqr", "gradient"])
def test_every_method_plans_the_same_swingup(swingup, pendulum_vi, method):
    task, plan_ddp, res_ddp, _ = swingup
    t = load_task(PENDULUM_TASK)
    t.method, t.max_iterations = method, 200
    plan, res = plan_task(pendulum_vi, t)
    assert res.converged and res.method == method
    assert res.cost == pytest.approx(res_ddp.cost, rel=1e-7)
    assert np.allclose(plan.X, plan_ddp.X, atol=1e-3) and plan.weights["method"] == method


def test_plan_task_starts_from_a_measured_state(pendulum_vi):
    """The ROS planner re-plans from the measured x0 (here swinging at 0.3 rad, 0.5 momentum)."""
    task = load_task(PENDULUM_TASK)
    x0 = np.array([0.3, 0.5])
    plan, res = plan_task(pendulum_vi, task, x0=x0)
    assert res.converged and np.array_equal(plan.X[0], x0)
    assert plan.X[-1, 0] == pytest.approx(np.pi, abs=1e-3)


def test_bounded_swingup_task_pumps_within_the_torque_limit(pendulum_vi):
    from vi_control.planning.evaluate import simulate_plan

    task = load_task("task_pendulum_swingup_bounded")
    plan, res = plan_task(pendulum_vi, task)
    assert res.converged and np.abs(plan.U).max() <= 5.0 + 1e-12
    assert np.sum(np.abs(plan.U[:, 0]) >= 5.0 - 1e-9) > 5  # saturated for a while: needs the bounds
    assert plan.X[-1, 0] == pytest.approx(np.pi, abs=0.02)
    X, U = simulate_plan(pendulum_vi, plan, plan.X[0] + np.array([0.05, 0.0]), clamp=True, extra_steps=30)
    assert np.abs(U).max() <= 5.0 and abs(X[-1, 0] - np.pi) < 0.02


@pytest.mark.parametrize("name", ["task_pendulum_swingup", "task_pendulum_swingup_bounded"])
def test_replanning_from_the_top_holds_it(pendulum_vi, name):
    """A step reference starts from the measured state: re-planning at the goal must not swing down first."""
    plan, res = plan_task(pendulum_vi, load_task(name), x0=np.array([np.pi - 0.02, 0.05]))
    assert res.converged
    assert np.abs(plan.X[:, 0] - np.pi).max() < 0.05 and abs(plan.X[-1, 0] - np.pi) < 1e-3


def test_feedback_initial_guess_reaches_the_same_optimum_faster(swingup, pendulum_vi):
    _, plan_ref, res_ref, _ = swingup
    task = load_task(PENDULUM_TASK)
    task.initial_guess = "feedback"  # TV-LQR of the step reference itself, rolled out closed loop
    plan, res = plan_task(pendulum_vi, task)
    assert res.converged and res.iterations < res_ref.iterations
    assert res.cost == pytest.approx(res_ref.cost, rel=1e-9) and np.allclose(plan.X, plan_ref.X, atol=1e-4)
