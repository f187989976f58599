"""Plan libraries (serial): every goal's plan saved in the Plan format with an index, identical to planning the
task for that goal directly; bad library input named. The same library on Ray is in test_sweep_ray.py."""

import json

import numpy as np
import pytest

from vi_control.control.plan import Plan
from vi_control.planning import TaskError, load_task, plan_task
from vi_control.sweep import SweepConfigError, plan_library
from vi_control.sweep.library import task_mapping
from vi_control.sweep.rollout import cached_system, portable_spec

TASK = "task_pendulum_swingup"
GOALS = [["pi"], [-2.8]]


def test_library_saves_each_goal_plan_as_planning_it_directly(tmp_path):
    res = plan_library(TASK, GOALS, tmp_path / "lib", backend="serial", progress=False)
    index = json.loads((tmp_path / "lib" / "index.json").read_text())
    assert index["task"] == "pendulum_swingup" and index["model"] == "pendulum"
    assert [p["goal"] for p in index["plans"]] == [[np.pi], [-2.8]] and res.stats.errors == 0
    task = load_task(TASK)
    vi = cached_system(portable_spec(task.model_spec), task.dt)
    for entry, goal in zip(index["plans"], (np.pi, -2.8)):
        plan = Plan.load(str(tmp_path / "lib" / entry["file"]))
        mapping, _ = task_mapping(TASK)
        direct, r = plan_task(vi, load_task({**mapping, "goal": {"q": [goal]}}))
        for name in ("X", "U", "K", "K_final", "U_final"):
            assert np.array_equal(getattr(plan, name), getattr(direct, name)), name
        assert entry["converged"] and entry["iterations"] == r.iterations and entry["cost"] == r.cost
        assert plan.model_hash == vi.robot.hash
    assert index["plans"][0]["final_goal_error"] < 1e-6  # the upright is an equilibrium: the plan ends on it
    # a second run finds every plan in results.jsonl and plans nothing
    again = plan_library(TASK, GOALS, tmp_path / "lib", backend="serial", progress=False)
    assert (again.stats.computed, again.stats.resumed) == (0, 2) and again.index == res.index


def test_library_input_errors_name_the_key(tmp_path):
    with pytest.raises(SweepConfigError, match="grid.elbow: no joint of that name"):
        plan_library(TASK, {"grid": {"elbow": [1.0]}}, tmp_path / "a", backend="serial")
    with pytest.raises(SweepConfigError, match=r"goals\[0\]: expected 1 entries"):
        plan_library(TASK, [[1.0, 2.0]], tmp_path / "b", backend="serial")
    mapping, _ = task_mapping(TASK)
    with pytest.raises(TaskError, match="reference.q_after"):
        plan_library(
            {**mapping, "reference": {"type": "step", "q_after": [1.0]}}, [[1.0]], tmp_path / "c", backend="serial"
        )
