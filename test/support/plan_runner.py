"""A control.runner.PlanRunner for tests without a node: the settings the runner reads, with tolerances and
re-timing off and damping as the safe command (not the node's defaults), overridable per test."""

from __future__ import annotations

import logging

import numpy as np

from vi_control.control.runner import PlanRunner

RUNNER_SETTINGS = dict(
    accept_unconverged=False,
    gain_scale=1.0,
    retime_tolerance=0.0,
    start_tolerance=0.0,
    path_tolerance=0.0,
    goal_tolerance=0.0,
    goal_time_tolerance=0.5,
    safe_mode="damping",
    safe_damping=1.0,
)


def plan_runner(vi, logger=None, warn=None, **settings) -> PlanRunner:
    """A runner of joint-space plans on ``vi`` (torques on its actuated joints); ``logger`` (.info/.warning) and
    ``warn(kind, text, level)`` default to a quiet logger and a no-op."""
    return PlanRunner(
        vi.robot,
        vi,
        RUNNER_SETTINGS | settings,
        False,
        vi.robot.joint_names,
        np.asarray(vi.idx_act),
        logger if logger is not None else logging.getLogger("plan_runner"),
        warn if warn is not None else (lambda *a, **k: None),
    )
