"""The planner's clock-rate estimate (vi_control.ros.planner_node.ClockSamples), which scales the lead of every plan
made in motion: against the rates the samples were made with, at the boundaries of its window and spacing, and on
the two clocks that fooled it — one that has not heard /clock yet (reads 0) and one that went back."""

import time

import pytest

pytest.importorskip("rclpy")

from vi_control.ros.planner_node import ClockSamples, measured_clock_rate  # noqa: E402


def _feed(c: ClockSamples, rate: float, t0: float, wall0: float, n: int, dt: float = 0.05):
    for i in range(n):
        c.add(wall0 + i * dt, t0 + rate * i * dt)
    return wall0 + (n - 1) * dt


@pytest.mark.parametrize("rate", [0.0, 0.5, 1.0, 3.0])
def test_the_rate_is_the_clocks(rate):
    c = ClockSamples()
    wall = _feed(c, rate, 10.0, 100.0, 30)
    assert c.rate(wall) == pytest.approx(rate, rel=1e-9, abs=1e-12)


def test_a_clock_that_reads_zero_before_the_first_clock_message_is_not_sampled():
    """A sim-time planner that joined a simulation 10 s on: its first joint states arrive before /clock (node clock
    0). Counted, 0 → 10.8 s over 0.74 s of wall time read as a rate of 14."""
    c = ClockSamples()
    c.add(99.3, 0.0)
    wall = _feed(c, 1.0, 10.0, 99.35, 16)  # (0.75 s of real time)
    assert c.rate(wall) == pytest.approx(1.0, rel=1e-9)


def test_a_clock_that_went_back_starts_the_samples_again():
    c = ClockSamples()
    _feed(c, 1.0, 50.0, 100.0, 10)
    wall = _feed(c, 1.0, 2.0, 100.5, 8)  # a restarted simulator: 2 s, 48 s earlier
    assert c.rate(wall) == pytest.approx(1.0, rel=1e-9)


def test_window_span_and_spacing_at_their_boundaries():
    c = ClockSamples()
    c.add(100.0, 1.0)
    c.add(100.0 + ClockSamples.SPACING * 0.999, 1.5)  # closer than the spacing: not a sample
    assert len(c.samples) == 1
    for span, rate in ((ClockSamples.MIN_SPAN * 0.999, None), (ClockSamples.MIN_SPAN, 1.0)):
        c = ClockSamples()  # a span just under the minimum: no rate yet; just at it: a rate
        c.add(100.0, 1.0)
        c.add(100.0 + span, 1.0 + span)
        assert c.rate(100.3) == (None if rate is None else pytest.approx(rate, rel=1e-9))
    # the window: samples older than WINDOW s drop out (the rate of the last two seconds)
    c = ClockSamples()
    c.add(100.0, 1.0)  # (a clock that then ran at 2x)
    wall = _feed(c, 2.0, 5.0, 100.0 + ClockSamples.WINDOW, 10)
    assert c.rate(wall) == pytest.approx(2.0, rel=1e-9)


def _clock_from(arrives: float, rate: float, value: float):
    """A sim-time node clock: 0 until /clock arrives ``arrives`` s from now, then ``value`` running at ``rate``."""
    t0 = time.monotonic()

    def clock() -> float:
        t = time.monotonic() - t0
        return 0.0 if t < arrives else value + rate * (t - arrives)

    return clock


def test_the_measured_rate_starts_once_the_clock_has_been_heard():
    """The planner's fallback measurement (no samples yet): a lockstep clock standing at 1.0 s whose first /clock
    comes during the window was read from 0 as a rate of ~3 (CI s59g: the start-up plan 2 steps ahead of its state,
    the loop stood still); now the window starts once the clock reads, so a standing clock is 0 and a running one
    its rate; a clock never heard is 0."""
    assert measured_clock_rate(_clock_from(0.1, 0.0, 1.0)) == 0.0
    assert measured_clock_rate(_clock_from(0.1, 1.0, 5.0)) == pytest.approx(1.0, rel=0.05)
    assert measured_clock_rate(_clock_from(0.0, 0.0, 1.0)) == 0.0
    assert measured_clock_rate(lambda: 0.0, wait=0.1) == 0.0
    # heard only after the wait, during what would have been the window: still no rate from 0
    assert measured_clock_rate(_clock_from(0.15, 0.0, 1.0), wait=0.1) == 0.0
