"""The simulator's /diagnostics on a running clock: steps taken on a late command (one that answered an older state
than the step's: the loop state → controller → command did not close within the step's wall time) and the measured
real-time factor. The bookkeeping (supervision.CommandTiming) is checked alone, then over real DDS against a
simulator process whose commands the test stamps."""

import time

import numpy as np
import pytest

pytest.importorskip("rclpy")

from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from std_msgs.msg import Float64MultiArray, MultiArrayDimension  # noqa: E402
from test_ros_dds import DISCOVERY  # noqa: E402

from vi_control.ros.common import STREAM_QOS  # noqa: E402
from vi_control.ros.messages import COMMAND_STAMP_PREFIX, split_seconds  # noqa: E402
from vi_control.ros.supervision import OK, WARN, CommandTiming, simulator_diagnostics  # noqa: E402


def test_command_timing_counts_each_step_on_an_older_states_command():
    dt = 0.01
    timing = CommandTiming(dt)
    timing.window(0)
    timing.step(0)  # no command yet (the zero command): never late
    timing.command(split_seconds(1 * dt))  # answers state 1 ...
    timing.step(1)  # ... and steps from it: on time
    timing.step(2)  # the same command one step on: 1 late
    timing.step(3)  # 2 late
    timing.command(split_seconds(3 * dt))  # the answer to state 3 came after its step: state 4's step is 1 late
    timing.step(4)
    assert (timing.late_steps, timing.max_lag) == (3, 2)
    steps, late, lag, rtf = timing.window(5)
    assert (steps, late, lag) == (5, 3, 2) and rtf > 0
    timing.command(None)  # another tool's command names no state: never late
    for k in range(5, 49):
        timing.step(k)
    timing.command(split_seconds(49 * dt))
    timing.step(49)
    assert timing.window(50)[:3] == (45, 0, 0) and (timing.late_steps, timing.max_lag) == (3, 2)
    # stamps of far times (a day of simulation at 1 ms) still name their step exactly
    fine = CommandTiming(1e-3)
    fine.command(split_seconds(86_400_000 * 1e-3))
    fine.step(86_400_000)
    fine.step(86_400_001)
    assert (fine.late_steps, fine.max_lag) == (1, 1)


def test_simulator_diagnostics_levels():
    timing = CommandTiming(0.01)
    args = dict(mode="realtime", requested_rtf=1.0, k=100, dt=0.01, timing=timing, counts=dict(rejected_commands=2))
    level, status, values = simulator_diagnostics(False, False, window=(0, 0, 0, 0.0), **args)
    assert (level, status) == (WARN, "inactive")
    level, status, values = simulator_diagnostics(True, False, window=(50, 3, 2, 0.97), **args)
    assert level == OK and status == "0.97x real time, 3 of 50 steps on a late command", status
    assert values["late_command_steps_in_period"] == 3 and values["rejected_commands"] == 2
    assert values["sim_time"] == "1" and values["max_command_lag_steps_in_period"] == 2
    level, status, _ = simulator_diagnostics(True, False, window=(50, 0, 0, 0.5), **args)
    assert level == WARN and "cannot keep pace" in status, status
    level, status, _ = simulator_diagnostics(True, True, window=(0, 0, 0, 0.0), **args)
    assert (level, status) == (OK, "end_time reached")
    level, status, _ = simulator_diagnostics(True, False, window=(0, 0, 0, 0.0), **args)
    assert level == WARN and status.startswith("not stepping"), status
    args.update(mode="lockstep", requested_rtf=None)
    level, status, _ = simulator_diagnostics(True, False, window=(7, 0, 0, 0.01), **args)
    assert (level, status) == (OK, "lockstep, 7 steps")


def _stamped(value: float, t: float | None) -> Float64MultiArray:
    msg = Float64MultiArray(data=[value])
    if t is not None:
        sec, nsec = split_seconds(t)
        msg.layout.dim = [MultiArrayDimension(label=f"{COMMAND_STAMP_PREFIX}{sec:011d}.{nsec:09d}", size=1, stride=1)]
    return msg


def test_simulator_counts_steps_on_a_late_command_over_dds(ros):
    """A realtime pendulum (Δt = 20 ms) gets one command that answers its first state and nothing after: every later
    step runs on it, k steps late at step k. Its /diagnostics say so exactly (the counts and the step are read in
    one callback): between two reports the late steps grow by the steps taken, and the largest lag is the last
    step's index. A command that names no state (another tool's) ends it; a NaN command is counted as rejected. The
    measured real-time factor follows the asked one, set live (1×, then 4×), as the period is."""
    dt = 0.02
    sim = ros.start("simulator_node", model="pendulum", dt=dt, mode="realtime", diagnostics_period=0.1)
    rec = ros.recorder(["theta"])
    reports: list[dict] = []
    rec.create_subscription(
        DiagnosticArray,
        "diagnostics",
        lambda m: reports.extend(
            {v.key: v.value for v in st.values} for st in m.status if st.name.endswith("vi_simulator")
        ),
        STREAM_QOS,
    )
    assert rec.wait_for(lambda: rec.cmd_pub.get_subscription_count() > 0 and len(reports) > 2, DISCOVERY), sim.log()

    n = len(reports)
    for _ in range(50):  # (best effort: repeated until it arrives)
        rec.cmd_pub.publish(_stamped(0.0, 0.0))
        if rec.wait_for(lambda: any(int(r["late_command_steps"]) > 0 for r in reports[n:]), 0.2):
            break

    def all_late(r: dict) -> bool:  # a period wholly under the stale command
        return 0 < int(r["steps_in_period"]) == int(r["late_command_steps_in_period"])

    assert rec.wait_for(lambda: sum(map(all_late, reports[n:])) >= 2, 20.0), (reports[n:], sim.log())
    a, b = [r for r in reports[n:] if all_late(r)][:2]  # every step from a's period on runs on the stale command
    steps = int(b["step"]) - int(a["step"])
    assert steps > 0 and int(b["late_command_steps"]) - int(a["late_command_steps"]) == steps, (a, b)
    assert int(b["max_command_lag_steps"]) == int(b["step"]) - 1, b  # the step from k − 1 ran on state 0's command
    assert float(b["sim_time"]) == pytest.approx(int(b["step"]) * dt, abs=1e-9)

    def on_time(r: dict) -> bool:
        return int(r["steps_in_period"]) > 0 and int(r["late_command_steps_in_period"]) == 0

    n = len(reports)
    for _ in range(50):  # a command that names no state: nothing is late from now on
        rec.cmd_pub.publish(_stamped(0.0, None))
        if rec.wait_for(lambda: any(map(on_time, reports[n:])), 0.3):
            break
    assert rec.wait_for(lambda: sum(map(on_time, reports[n:])) >= 2, 20.0), (reports[n:], sim.log())
    c, d = [r for r in reports[n:] if on_time(r)][:2]
    assert int(d["step"]) > int(c["step"]) and d["late_command_steps"] == c["late_command_steps"], (c, d)
    for _ in range(50):
        rec.cmd_pub.publish(_stamped(float("nan"), None))
        if rec.wait_for(lambda: int(reports[-1]["rejected_commands"]) > 0, 0.2):
            break
    assert int(reports[-1]["rejected_commands"]) > 0 and "rejected command" in sim.log(), sim.log()

    def measured(k: int) -> float:
        n = len(reports)
        assert rec.wait_for(lambda: len(reports) >= n + k, 30.0), sim.log()
        return float(np.median([float(r["real_time_factor"]) for r in reports[n + 1 :]]))

    from test_ros_interfaces import _set

    # periods of 25 steps at 1× (set live): a step's jitter across a period's end moves a period's rate by 4 %
    assert _set(rec, "vi_simulator", diagnostics_period=0.5) == [(True, "")]
    at_one = measured(4)
    assert _set(rec, "vi_simulator", real_time_factor=4.0) == [(True, "")]
    time.sleep(0.3)
    at_four = measured(4)
    # a timer cannot run ahead of its period; a loaded machine may lag behind it (4× asks a step every 5 ms)
    assert 0.3 < at_one < 1.1 and at_four > 1.5 * at_one, (at_one, at_four)
