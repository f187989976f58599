"""A task's scalar weights (planning.task: ``R: 1.0`` as well as ``R: [..]``) are checked as the vector ones are:
at the coefficient bound 1e12 accepted, the next double refused naming the key, text refused."""

import math

import numpy as np
import pytest
import yaml

from vi_control.model.bundled import share_dir
from vi_control.model.limits import MAX_COEFFICIENT
from vi_control.planning.task import load_task
from vi_control.planning.task_values import TaskError


def _task(**weights):
    with open(share_dir() / "config" / "task_pendulum_swingup_bounded.yaml") as f:
        cfg = yaml.safe_load(f)
    return load_task(dict(cfg, weights=dict(cfg["weights"], **weights)))


def test_a_scalar_weight_at_the_bound_is_taken_and_beyond_it_refused():
    task = _task(R=MAX_COEFFICIENT)
    assert np.array_equal(task.weight("R", "weights", 1), [[MAX_COEFFICIENT]])
    for bad, match in ((math.nextafter(MAX_COEFFICIENT, math.inf), "R"), ("heavy", "R")):
        with pytest.raises(TaskError, match=match):
            _task(R=bad).weight("R", "weights", 1)


def test_the_weight_table_is_every_weight_and_follows_the_tasks_values():
    """``Task.weight_table``: each entry is ``Task.weight`` of its group and name (hold ← lqr ← weights fall-backs
    included), a fresh copy each call (a caller's change reaches neither the task nor the next call), and a weight
    changed in the task's dicts is read anew (the memo is keyed by the raw values)."""
    task = load_task("task_panda_reach")
    table = task.weight_table(14, 7, 7)
    assert set(table) == {(g, w) for g in ("weights", "lqr", "hold") for w in ("Q", "R", "Qf")} - {("hold", "Qf")}
    for (g, w), W in table.items():
        assert np.array_equal(W, task.weight(w, g, 7 if w == "R" else 14, 7)), (g, w)
    table["lqr", "Q"][0, 0] = -1.0
    assert task.weight_table(14, 7, 7)["lqr", "Q"][0, 0] == 100.0
    task.lqr["R"] = 0.5
    again = task.weight_table(14, 7, 7)
    assert np.array_equal(np.diag(again["lqr", "R"]), np.full(7, 0.5))
    assert np.array_equal(np.diag(again["hold", "R"]), np.full(7, 0.01))  # (hold's own R)
    del task.hold["R"]  # now hold's R falls back to lqr's
    assert np.array_equal(np.diag(task.weight_table(14, 7, 7)["hold", "R"]), np.full(7, 0.5))
