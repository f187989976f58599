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
