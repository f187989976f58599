"""Every conversion between seconds and message time fields, tried off whole numbers: a stamp of
3.999999999 s, a nanosecond past a second, wall-clock times (1.8e9 s), Δt that are no binary fractions (0.1 s).
The reference is exact rational arithmetic (fractions.Fraction of the double), not the code's own formula."""

import math
from fractions import Fraction

import numpy as np
import pytest
from builtin_interfaces.msg import Time
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from vi_control import load_robot
from vi_control.control.plan import Plan
from vi_control.ros.messages import (
    RawFloat64MultiArray,
    RawJointStateReader,
    command_stamp,
    plan_entered_from_message,
    plan_entered_message,
    plan_to_trajectory,
    split_seconds,
    stamp_seconds,
)
from vi_control.ros.planner_requests import trajectory_request

TIMES = [
    3.999999999,
    0.999999999,
    1e-9,
    2e-9 / 3,
    0.5,
    0.1,
    1.8e9 + 0.123456789,
    1_700_000_000.999999,
    -0.25,
    -1e-9,
    2.0**31 - 2 + 0.5,
    2.0**31 - 1,
    4e6 + 0.000000001,
]


@pytest.mark.parametrize("t", TIMES)
def test_split_seconds_is_the_nearest_nanosecond(t):
    """(sec, nanosec) is the double t to the nearest nanosecond, nanosec in [0, 10⁹). round(t·1e9) — the former
    formula — rounded t·1e9 to a double first: 51 ns off at 1.8e9 + 0.123456789 s (up to 128 ns there)."""
    sec, nsec = split_seconds(t)
    assert isinstance(sec, int) and isinstance(nsec, int) and 0 <= nsec < 10**9
    err = abs(Fraction(sec) + Fraction(nsec, 10**9) - Fraction(t))
    assert err <= Fraction(1, 2 * 10**9) + Fraction(1, 10**15), (t, sec, nsec, float(err))  # (the double t itself)


@pytest.mark.parametrize("t", [math.nan, math.inf, -math.inf, 2.0**31 - 0.5, -(2.0**31) - 1, "1.0", None, 10**400])
def test_split_seconds_refuses_what_no_time_field_carries(t):
    with pytest.raises(ValueError, match=r"^time t: expected finite seconds"):
        split_seconds(t)


def _joint_state(sec: int, nsec: int) -> JointState:
    m = JointState()
    m.name, m.position, m.velocity = ["theta"], [0.25], [0.5]
    m.header.stamp.sec, m.header.stamp.nanosec = sec, nsec
    return m


@pytest.mark.parametrize(
    "sec, nsec",
    [
        (3, 999_999_999),
        (3, 1),
        (0, 999_999_999),
        (4_000_000, 123_456_789),
        (1_800_000_000, 999_999_999),
        (1_800_000_000, 1),
    ],
)
def test_a_stamp_read_as_seconds_keeps_its_nanoseconds(sec, nsec):
    """stamp_seconds (rclpy message) and the controller's raw reader (CDR bytes) give sec + nanosec·10⁻⁹ to the
    double's resolution; back through split_seconds the stamp comes back exactly for simulated times (below 2²² s,
    where doubles resolve a nanosecond) and to within half the double's spacing at wall-clock times."""
    m = _joint_state(sec, nsec)
    exact = Fraction(sec) + Fraction(nsec, 10**9)
    reader = RawJointStateReader(["theta"])
    t_raw, has_v = reader.read_raw(bytes(serialize_message(m)))
    for t in (stamp_seconds(m), t_raw):
        assert abs(Fraction(t) - exact) <= Fraction(math.ulp(t)), (t, float(exact))
    assert has_v and reader.q[0] == 0.25 and reader.stamp == (sec, nsec)
    back = split_seconds(stamp_seconds(m))
    if sec < 2**22:
        assert back == (sec, nsec)
    else:
        assert abs(back[0] * 10**9 + back[1] - (sec * 10**9 + nsec)) <= math.ulp(float(sec)) * 1e9 / 2 + 1


@pytest.mark.parametrize("sec, nsec", [(3, 999_999_999), (0, 1), (-5, 999_999_999), (1_800_000_000, 5)])
def test_a_command_names_the_stamp_it_answers_exactly(sec, nsec):
    """The controller's command label ("answers t=<sec>.<nanosec>") through CDR and back: the stamp, digit for
    digit (the lockstep simulator steps only on an exact match)."""
    cmd = RawFloat64MultiArray(2)
    cmd.data[:] = [1.5, -2.5]
    cmd.set_stamp(sec, nsec)
    msg = deserialize_message(bytes(cmd), Float64MultiArray)
    assert command_stamp(msg) == (sec, nsec) and list(msg.data) == [1.5, -2.5]


@pytest.mark.parametrize("dt", [0.1, 0.3125, 1e-3, 0.0999999999, 7e-5])
def test_trajectory_times_from_start_are_the_plans_times(dt):
    """A plan's JointTrajectory carries time_from_start = t_k − t_0 as (sec, nanosec); the planner's request reader
    turns them back into seconds (and the header stamp): each k·Δt to the nearest nanosecond, whatever Δt."""
    N = 40
    t0 = 1.8e9 + 0.5  # (a wall-clock plan: t_k − t_0 is what the message carries)
    plan = Plan(
        times=t0 + dt * np.arange(N + 1),
        X=np.zeros((N + 1, 2)),
        U=np.zeros((N, 1)),
        K=np.zeros((N, 1, 2)),
        dt=dt,
        model_name="pendulum",
        model_hash="0123456789abcdef",
        joint_names=["theta"],
        input_names=["theta"],
        K_final=np.zeros((1, 2)),
        U_final=np.zeros(1),
    )
    msg = plan_to_trajectory(plan, np.zeros((N + 1, 1)), [0], Time(sec=5, nanosec=999_999_999))
    request = trajectory_request(msg, load_robot("pendulum"))
    got = request.times
    assert abs(Fraction(request.start) - (5 + Fraction(999_999_999, 10**9))) <= Fraction(math.ulp(6.0))
    for k, (p, t) in enumerate(zip(msg.points, got)):
        rel = Fraction(plan.times[k]) - Fraction(plan.times[0])
        assert 0 <= p.time_from_start.nanosec < 10**9
        assert abs(Fraction(p.time_from_start.sec) + Fraction(p.time_from_start.nanosec, 10**9) - rel) <= Fraction(
            1, 2 * 10**9
        ) + Fraction(math.ulp(float(rel) or 1e-300))
        assert abs(t - float(rel)) <= 1e-9


@pytest.mark.parametrize("t", [t for t in TIMES if t >= 0.0])
def test_plan_entered_carries_the_start_to_the_nanosecond_and_the_plan_number_exactly(t):
    """The controller's plan_entered (a Header) through serialization: the sequence number (microseconds since the
    epoch: beyond a double's 2^53) exact, the start within half a nanosecond; a frame_id that is no plan number is
    refused by name."""
    seq = 2**63 - 7
    msg = deserialize_message(serialize_message(plan_entered_message(seq, t)), type(plan_entered_message(1, 0.0)))
    got_seq, got_t = plan_entered_from_message(msg)
    assert got_seq == seq
    assert abs(Fraction(got_t) - Fraction(t)) <= Fraction(1, 2 * 10**9) + Fraction(abs(t)) * Fraction(1, 2**52)
    for bad in ("", "-3", "12a", "1.5", "\u00b2"):
        msg.frame_id = bad
        with pytest.raises(ValueError, match="frame_id"):
            plan_entered_from_message(msg)
