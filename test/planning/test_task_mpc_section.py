"""A task's ``mpc:`` section as planning.task parses it and planning.mpc reads it: every key kept, the defaults
where it has none."""

import yaml

from vi_control.model.bundled import share_dir
from vi_control.planning.mpc import mpc_settings
from vi_control.planning.task import load_task


def _task(**mpc):
    with open(share_dir() / "config" / "task_pendulum_swingup_bounded.yaml") as f:
        cfg = yaml.safe_load(f)
    cfg.pop("mpc", None)
    return load_task(dict(cfg, mpc=mpc) if mpc else cfg)


def test_every_key_is_kept():
    s = mpc_settings(_task(period=0.2, horizon=7, shrinking=True, min_horizon=3, max_iterations=4, tolerance=1e-5))
    assert (s.period, s.horizon, s.shrinking, s.min_horizon, s.max_iterations, s.tolerance) == (
        0.2,
        7,
        True,
        3,
        4,
        1e-5,
    )


def test_defaults_without_a_section():
    task = _task()
    s = mpc_settings(task)
    assert (s.period, s.horizon, s.shrinking, s.min_horizon, s.max_iterations, s.tolerance) == (
        max(0.1, task.dt),
        None,
        False,
        10,
        10,
        None,
    )
