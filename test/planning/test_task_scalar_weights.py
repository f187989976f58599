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
