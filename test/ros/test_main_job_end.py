"""When the main job's closed loop is done (``main_job.closed_loop_end``): the first plan's span plus the hold
time after the first answered joint state, or the end of a later time-stamped plan (a re-plan during the run) plus
the hold time when that is later; a plan started on receipt states no end of its own."""

import numpy as np
import pytest

pytest.importorskip("rclpy")

from vi_control.ros.main_job import closed_loop_end  # noqa: E402
from vi_control.ros.messages import FLAG_CONVERGED, FLAG_START_ON_RECEIPT  # noqa: E402


class _Timed:
    def __init__(self, t0: float, t1: float):
        self.times = np.linspace(t0, t1, 11)


def test_the_loop_ends_at_the_later_of_the_first_span_and_the_latest_stamped_plan():
    first, duration, hold = 2.0, 5.5, 1.0  # the first plan: 4.5 s + 1 s hold, answered from t = 2
    assert closed_loop_end(first, duration, None, hold) == 7.5
    # a re-plan stamped to run to t = 9: the loop waits for it and its hold
    assert closed_loop_end(first, duration, (2, _Timed(3.0, 9.0), FLAG_CONVERGED), hold) == 10.0
    # one that ends before the first plan's span: the span counts
    assert closed_loop_end(first, duration, (2, _Timed(3.0, 5.0), FLAG_CONVERGED), hold) == 7.5
    # started on receipt: its times are not simulation times yet
    latest = (2, _Timed(30.0, 90.0), FLAG_CONVERGED | FLAG_START_ON_RECEIPT)
    assert closed_loop_end(first, duration, latest, hold) == 7.5


def test_the_main_job_knows_the_latest_plans_trajectory_from_another_plans():
    """At its end the main job waits for the trajectory of the latest plan (a restarted planner's plan can arrive
    before its trajectory: CI held the killed planner's then): the planner's own message of that plan is its; one of
    another plan, or cut short, or none, is not."""
    from builtin_interfaces.msg import Time

    from vi_control.control.plan import Plan
    from vi_control.ros.main_job import _is_trajectory_of
    from vi_control.ros.messages import plan_to_trajectory

    def plan(q_end: float) -> Plan:
        X = np.stack([np.linspace(0.0, q_end, 5), np.zeros(5)], axis=1)
        return Plan(
            times=0.1 * np.arange(5),
            X=X,
            U=np.zeros((4, 1)),
            K=np.zeros((4, 1, 2)),
            dt=0.1,
            model_name="pendulum",
            model_hash="",
            joint_names=["theta"],
            input_names=["theta"],
        )

    def trajectory(p: Plan):
        return plan_to_trajectory(p, np.zeros((5, 1)), [0], Time())

    latest, earlier = plan(np.pi), plan(1.77)
    traj = trajectory(latest)
    assert _is_trajectory_of(traj, latest)
    assert not _is_trajectory_of(trajectory(earlier), latest)
    traj.points = traj.points[:-1]
    assert not _is_trajectory_of(traj, latest) and not _is_trajectory_of(None, latest)
