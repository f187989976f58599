"""Monitoring outputs read back and checked against their definition, computed independently here: the controller's
``~/controller_state`` (reference, feedback, error = reference − feedback modulo 2π on continuous joints, output =
the command sent) and its ``/diagnostics`` values read over DDS (plan, step k = nearest step of t − t₀ on the
plan's grid, horizon, counts of joint states and commands, rates); the simulator's late-command counts
(``CommandTiming``: a step from state k on the command answering state j < k is k − j steps late) and its
/diagnostics values; the planner's MPC counts; every reported key defined in docs/concepts/ros.md; the simulator's
odometry twist in the chassis frame. In-process on real rclpy (the controller and simulator nodes, autostarted)."""

import math
import re
import time
from pathlib import Path

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")

from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from rclpy.serialization import serialize_message  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

from vi_control.control.plan import Plan  # noqa: E402
from vi_control.ros.common import STREAM_QOS  # noqa: E402
from vi_control.ros.messages import plan_to_message, split_seconds  # noqa: E402
from vi_control.ros.supervision import (  # noqa: E402
    OK,
    WARN,
    CommandTiming,
    LoopTiming,
    controller_diagnostics,
    planner_diagnostics,
    simulator_diagnostics,
)

N, SEQ = 12, 7


def _wrap(a: float) -> float:
    """a modulo 2π into [−π, π), by math.remainder (not the package's wrap_angle)."""
    return math.remainder(a, 2 * math.pi)


def _plan(node, t0: float) -> Plan:
    """A pendulum plan whose gain acts on the angle only: u_k = U_k + K_k,q·(q_ref − q), independent of how the
    controller turns a measured velocity into momentum."""
    r, dt = node.robot, node.vi.dt
    k = np.arange(N + 1)
    X = np.stack([0.3 * np.sin(0.7 * k), np.zeros(N + 1)], axis=1)
    K = np.zeros((N, 1, 2))
    K[:, 0, 0] = 2.0 + 0.1 * k[:N]
    return Plan(
        times=t0 + dt * k,
        X=X,
        U=(0.05 * k[:N] - 0.2)[:, None],
        K=K,
        dt=dt,
        model_name=r.name,
        model_hash=r.hash,
        joint_names=r.joint_names,
        input_names=list(r.actuated),
        K_final=np.array([[1.5, 0.0]]),
        U_final=np.array([0.125]),
    )


def _joint_state(t: float, q: float, qdot: float) -> bytes:
    m = JointState(name=["theta"], position=[q], velocity=[qdot])
    m.header.stamp.sec, m.header.stamp.nanosec = split_seconds(t)
    return serialize_message(m)


def _read_diagnostics(node, listener) -> tuple[int, str, dict]:
    """One /diagnostics report of the controller, read by another node over DDS: (level, message, values)."""
    got = []
    listener.create_subscription(DiagnosticArray, "/diagnostics", got.append, STREAM_QOS)
    deadline = time.monotonic() + 20.0
    while node.diag_pub.get_subscription_count() < 1 and time.monotonic() < deadline:
        rclpy.spin_once(listener, timeout_sec=0.05)
    node.publish_diagnostics()
    while not got and time.monotonic() < deadline:
        rclpy.spin_once(listener, timeout_sec=0.05)
    assert len(got) == 1, f"{len(got)} /diagnostics messages read back within 20 s"
    (status,) = got[0].status
    assert status.name == f"{node.get_namespace().rstrip('/')}/{node.get_name()}"
    return int.from_bytes(status.level, "little"), status.message, {kv.key: kv.value for kv in status.values}


def test_controller_state_and_diagnostics_match_their_definition(controller_in_process):
    node = controller_in_process
    Parameter = rclpy.parameter.Parameter
    # every tick fills ~/controller_state; stamps of 0.3 s ago stay fresh on a loaded machine
    assert node.set_parameters_atomically(
        [Parameter("state_publish_rate", value=1e4), Parameter("state_timeout", value=30.0)]
    ).successful
    dt = node.vi.dt
    t0 = node._now() - 0.3  # (every stamp below lies in the past)
    assert (N + 3) * dt < 0.25
    plan = _plan(node, t0)
    node.on_plan(plan_to_message(plan, SEQ))
    assert node.runner.pending is not None and node.runner.pending[0] == SEQ
    rng = np.random.default_rng(40)
    checked, steps = 0, N + 3
    states0, commands0 = node.intake.counts["states"], node.counts["commands"]
    for j in range(steps):
        t = t0 + j * dt + rng.uniform(-0.3, 0.3) * dt  # off the grid: k is the nearest step
        k = j
        q_ref = plan.X[min(k, N), 0]
        # a measured angle a whole turn off every third step: the error is modulo 2π
        q = q_ref + rng.uniform(-0.4, 0.4) + (2 * math.pi if j % 3 == 1 else 0.0)
        qdot = rng.uniform(-1, 1)
        node.on_joint_state(_joint_state(t, q, qdot))
        node.tick()
        e = _wrap(q_ref - q)
        u_ref, kq = (plan.U[k, 0], plan.K[k, 0, 0]) if k < N else (plan.U_final[0], plan.K_final[0, 0])
        u = float(np.clip(u_ref + kq * e, -5.0, 5.0))
        # the command sent is u = U_k + K_k (X_k ⊖ x): positive gain, reference above the angle → more torque
        assert node.cmd.data[0] == pytest.approx(u, abs=1e-12)
        m = node.state_msg.msg
        if (m.header.stamp.sec, m.header.stamp.nanosec) != split_seconds(t):
            continue  # (throttled: this tick did not fill the message)
        checked += 1
        ref, fb, err, out = m.points
        assert m.joint_names == ["theta"]
        assert ref.positions[0] == pytest.approx(q_ref, abs=1e-12)
        assert fb.positions[0] == q and fb.velocities[0] == qdot  # the measurement as received, unwrapped
        assert err.positions[0] == pytest.approx(e, abs=1e-12) and -math.pi <= err.positions[0] <= math.pi
        assert err.velocities[0] == pytest.approx(ref.velocities[0] - qdot, abs=1e-12)  # reference − feedback
        assert ref.effort[0] == pytest.approx(u_ref, abs=1e-12) and out.effort[0] == pytest.approx(u, abs=1e-12)
        from_start = ref.time_from_start.sec + 1e-9 * ref.time_from_start.nanosec
        assert from_start == pytest.approx(k * dt, abs=1e-9)  # k·Δt, seconds
    assert checked >= steps // 2, checked

    listener = rclpy.create_node("monitoring_listener")
    try:
        level, message, values = _read_diagnostics(node, listener)
    finally:
        listener.destroy_node()
    # the last state is 2 steps past the horizon: the plan's end is held
    assert (level, message) == (OK, f"holding the end of plan {SEQ}") and values["state"] == message
    assert values["plan"] == str(SEQ) and values["pending_plan"] == ""
    assert values["horizon"] == str(N) and values["k"] == str(steps - 1)
    assert int(values["joint_states"]) - states0 == steps
    assert int(values["commands"]) - commands0 == steps
    assert values["safe_commands"] == "0" and values["last_fault"] == ""
    assert float(values["joint_state_rate_hz"]) >= 0 and float(values["command_rate_hz"]) >= 0


def test_controller_rates_are_counts_per_second_between_reports(controller_in_process):
    """joint_state_rate_hz and command_rate_hz: the counts' increase over the wall time between two reports,
    bracketed here by the times read before and after each report (no timing assumption)."""
    node = controller_in_process
    before_first = time.monotonic()
    node.publish_diagnostics()
    after_first = time.monotonic()
    t = node._now() - 0.01  # (stamps in the past, none from the future)
    n = 25
    for j in range(n):
        node.on_joint_state(_joint_state(t + 1e-4 * j, 0.1, 0.0))
        node.tick()  # (no plan: holds the measured angle, one command per tick)
    listener = rclpy.create_node("monitoring_listener")
    try:
        before_second = time.monotonic()
        _, _, values = _read_diagnostics(node, listener)  # (publish_diagnostics runs after a match: later still)
        after_second = time.monotonic()
    finally:
        listener.destroy_node()
    assert values["hold_commands"] == str(n) and values["commands"] == str(n)
    for key in ("joint_state_rate_hz", "command_rate_hz"):
        rate = float(values[key])  # (printed to 0.1 Hz)
        assert n / (after_second - before_first) - 0.05 <= rate <= n / (before_second - after_first) + 0.05
    assert values["state"] == "holding the measured configuration (no plan)"
    assert values["hold_target"] == f"{0.1:.4f}"


def test_another_publisher_on_the_command_topic_is_warned_and_named(controller_in_process):
    """A second controller on the robot — a second launch in the same domain and namespace, so a node of this one's
    own name — publishing on its command topic: seen in the ROS graph at the next diagnostics period, warned once
    naming it, /diagnostics WARN where they would be OK (holding the measured configuration) with
    ``other_command_publishers`` 1; gone, said as info, and OK again. Its own publisher is never counted."""
    from in_process import record_logs
    from std_msgs.msg import Float64MultiArray

    node = controller_in_process
    logged = record_logs(node).messages
    node.on_joint_state(_joint_state(node._now(), 0.1, 0.0))
    node.tick()  # (no plan: holding, level OK)

    def level() -> tuple[int, str, dict]:
        node.publish_diagnostics()  # (a report: the command topic looked at)
        return controller_diagnostics(
            node.active,
            node.runner,
            node.intake,
            node.counts,
            (0.0, 0.0),
            0.0,
            None,
            (0, 0.0, 0.0),
            0,
            len(node.command_publishers),
        )

    def warned() -> list[str]:
        return [m for _, m in logged if "another publisher on this controller's command topic" in m]

    assert level()[0] == OK and node.command_publishers == {} and not warned()
    name = f"{node.get_namespace().rstrip('/')}/{node.get_name()}"
    other = rclpy.create_node(node.get_name(), namespace=node.get_namespace())
    try:
        pub = other.create_publisher(Float64MultiArray, node.pub.topic_name, 10)
        deadline = time.monotonic() + 20.0
        while not node.command_publishers and time.monotonic() < deadline:
            level()
            time.sleep(0.05)
        lvl, status, values = level()
        assert list(node.command_publishers.values()) == [name] and lvl == WARN, (node.command_publishers, status)
        assert "1 other publisher(s) on the command topic" in status and values["other_command_publishers"] == 1
        (text,) = warned()  # (said once, however many periods it stays)
        assert name in text and node.pub.topic_name in text and "command_conflict_window" in text, text
        other.destroy_publisher(pub)
        while node.command_publishers and time.monotonic() < deadline + 20.0:
            level()
            time.sleep(0.05)
        assert level()[0] == OK and node.command_publishers == {}
        assert any("the only publisher on" in m for _, m in logged), logged
    finally:
        other.destroy_node()


def test_command_timing_counts_late_steps_and_lag():
    """A step from state k under the command that answered state j is k − j steps late when k > j; a command
    naming no state is never late. Totals and per-window counts against a count kept here."""
    dt = 0.01
    timing = CommandTiming(dt)
    rng = np.random.default_rng(7)
    late = lag = 0
    for k in range(200):
        if rng.uniform() < 0.2:
            answered = None
            timing.command(None)
        else:
            answered = k - int(rng.integers(0, 4))
            sec, nsec = split_seconds(answered * dt)  # the stamp of state `answered` (off whole numbers)
            timing.command((sec, nsec))
        timing.step(k)
        if answered is not None and k > answered:
            late, lag = late + 1, max(lag, k - answered)
    assert (timing.late_steps, timing.max_lag) == (late, lag) and late > 0
    steps, w_late, w_lag, rtf = timing.window(200)
    assert (steps, w_late, w_lag) == (200, late, lag) and rtf > 0
    steps, w_late, w_lag, _ = timing.window(200)  # the next window starts empty
    assert (steps, w_late, w_lag) == (0, 0, 0) and timing.late_steps == late


def test_loop_timing_counts_a_tick_more_than_two_periods_after_the_last():
    """A tick exactly two periods after the one before is on time, one a hair later is late (its gap returned and
    counted); the state age is now − the state's stamp; a window starts empty, the totals stay; ``restart`` forgets
    the last tick (no gap across a rearmed timer); without a period (ticks on joint states) no tick is late."""
    period = 0.002
    loop = LoopTiming(period)
    assert loop.tick(0.0, -0.001) is None  # the first tick: no gap to judge
    assert loop.tick(0.004, 0.003) is None  # exactly 2 periods (0.004 − 0.0 = 2 × 0.002 in binary too)
    late_at = 0.004 + 0.004 * (1 + 1e-9)  # just past 2 periods after the last
    assert loop.tick(late_at, late_at - 0.0035) == late_at - 0.004
    assert loop.tick(late_at + 0.001, late_at) is None
    assert (loop.ticks, loop.late_ticks) == (4, 1)
    late, gap, age = loop.window()
    assert late == 1 and gap == late_at - 0.004 and age == pytest.approx(0.0035, abs=1e-15)
    assert loop.window() == (0, 0.0, 0.0) and loop.late_ticks == 1 and loop.max_gap == gap
    loop.restart(period)
    assert loop.tick(10.0, None) is None and loop.window() == (0, 0.0, 0.0)  # (no state: no age)
    assert loop.tick(10.1, 10.05) == pytest.approx(0.1) and loop.late_ticks == 2
    free = LoopTiming(None)
    assert free.tick(0.0, 0.0) is None and free.tick(5.0, 4.5) is None
    assert free.late_ticks == 0 and free.window() == (0, 0.0, 0.5)
    assert free.recent_gap(5.0) == 0.0


def test_loop_timing_recent_gap_is_the_longest_late_gap_of_the_last_half_second():
    """``recent_gap(now)``: the longest gap of the late ticks within ``RECENT`` (0.5 s) before now — how long the
    driver may hold a command while the loop is starved (the brake's damping cap) — 0 when none was late then, and a
    late tick from a clock that since went back is forgotten."""
    loop = LoopTiming(0.002)
    loop.tick(0.0, None)
    loop.tick(0.002, None)
    assert loop.recent_gap(0.002) == 0.0  # on time: the period alone
    loop.tick(0.042, None)  # 40 ms late
    loop.tick(0.044, None)
    loop.tick(0.069, None)  # 25 ms
    assert loop.recent_gap(0.069) == pytest.approx(0.04)
    assert loop.recent_gap(0.042 + LoopTiming.RECENT - 1e-6) == pytest.approx(0.04)  # (just inside the window)
    assert loop.recent_gap(0.042 + LoopTiming.RECENT + 1e-6) == pytest.approx(0.025)  # the 40 ms one left it
    assert loop.recent_gap(0.069 + LoopTiming.RECENT + 1e-6) == 0.0
    loop.tick(1.0, None)  # late again (931 ms), then the clock goes back
    assert loop.recent_gap(0.5) == 0.0


def test_controller_reports_its_late_ticks_and_state_age_in_diagnostics(controller_in_process):
    """The controller's ticks (timer trigger at 100 Hz: period 10 ms) at chosen times on its clock: gaps of 10, 30
    and 19.5 ms — one late tick — from states up to 60.5 ms old; /diagnostics, read over DDS, carries them; the next
    report's window starts empty while the total stays."""
    node = controller_in_process
    assert node.p["trigger"] == "timer" and node.p["rate"] == 100.0
    t = node._now() - 0.1  # (a stamp in the past, fresh for the default state_timeout of 0.5 s)
    node.on_joint_state(_joint_state(t, 0.1, 0.0))
    for dt in (0.001, 0.011, 0.041, 0.0605):
        node.tick(now=t + dt)
    listener = rclpy.create_node("monitoring_listener")
    try:
        level, _, values = _read_diagnostics(node, listener)
        _, _, after = _read_diagnostics(node, listener)
    finally:
        listener.destroy_node()
    assert level == OK and values["state"] == "holding the measured configuration (no plan)"
    assert (values["late_ticks"], values["late_ticks_in_period"]) == ("1", "1")
    assert float(values["max_tick_gap_s_in_period"]) == pytest.approx(0.03, abs=1e-4)
    assert float(values["max_state_age_s_in_period"]) == pytest.approx(0.0605, abs=1e-4)
    assert (after["late_ticks"], after["late_ticks_in_period"]) == ("1", "0")
    assert after["max_tick_gap_s_in_period"] == after["max_state_age_s_in_period"] == "0.0000"


def _documented_keys() -> str:
    """The Diagnostics section of docs/concepts/ros.md: where every reported key is defined."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "concepts" / "ros.md").read_text()
    return text[text.index("### Diagnostics") : text.index("### Vehicle mode")]


def _undocumented(keys) -> list[str]:
    doc = _documented_keys()
    return [
        k
        for k in keys
        if not (k.startswith("faults: ") and '"faults: <kind>"' in doc) and not re.search(rf"\b{re.escape(k)}\b", doc)
    ]


def test_every_reported_key_is_defined_in_the_docs(controller_in_process):
    node = controller_in_process
    node.on_joint_state(_joint_state(node._now(), 0.1, 0.0))
    node.tick()  # (no plan: holding, so hold_target is reported too)
    _, _, controller = controller_diagnostics(
        node.active, node.runner, node.intake, node.counts, (0.0, 0.0), 0.0, node.loop, node.loop.window()
    )
    assert controller["hold_target"] != "" and not _undocumented(controller), _undocumented(controller)
    counts = dict(rejected_commands=0, saturated_commands=0, ignored_answers=0)  # (the simulator node's counts)
    _, _, simulator = simulator_diagnostics(
        True, False, "realtime", 1.0, 0, 0.01, (0, 0, 0, 0.0), CommandTiming(0.01), counts
    )
    assert not _undocumented(simulator), _undocumented(simulator)


def test_simulator_diagnostics_at_the_80_percent_boundary():
    timing = CommandTiming(0.002)
    timing.late_steps, timing.max_lag = 9, 3
    k, dt = 12345, 0.002
    level, status, values = simulator_diagnostics(
        True, False, "realtime", 1.0, k, dt, (500, 4, 2, 0.79), timing, {"commands": 501}
    )
    values = {key: str(v) for key, v in values.items()}  # (as diagnostics() puts them in KeyValues)
    assert level == WARN and "0.79x real time" in status  # below 80 % of the asked factor
    assert float(values["sim_time"]) == pytest.approx(k * dt, rel=1e-9)  # seconds, not steps
    assert values["step"] == str(k) and values["steps_in_period"] == "500"
    assert (values["late_command_steps"], values["late_command_steps_in_period"]) == ("9", "4")
    assert (values["max_command_lag_steps"], values["max_command_lag_steps_in_period"]) == ("3", "2")
    assert values["commands"] == "501" and float(values["real_time_factor"]) == 0.79
    level, status, _ = simulator_diagnostics(
        True, False, "realtime", 1.0, k, dt, (500, 4, 2, 0.81), timing, {"commands": 501}
    )
    assert level == OK and status == "0.81x real time, 4 of 500 steps on a late command"


def test_planner_diagnostics_mpc_counts():
    """The planner's MPC values are its counters under ``mpc_`` and the period of the RecedingHorizon it runs;
    WARN from the first overrun, refused or failed cycle on (one is the boundary), the status "waiting" until the first
    plan."""
    from vi_control.integrators import make_integrator
    from vi_control.planning import load_task
    from vi_control.planning.mpc import MPCSettings, RecedingHorizon

    task = load_task("task_pendulum_swingup")
    mpc = RecedingHorizon(make_integrator("midpoint", task.load_robot(), task.dt), task, MPCSettings(period=0.2))
    counts = dict(cycles=40, accepted=36, not_accepted=4, refused=0, failed=0, overruns=0)
    level, status, _ = planner_diagnostics(True, False, mpc, counts, 0.0, None)
    assert (level, status) == (OK, "mpc: waiting for the task's first plan")
    first = mpc.start(t0=2.5)
    level, status, values = planner_diagnostics(True, False, mpc, counts, 0.01234, first.plan)
    assert (level, status) == (OK, "mpc: 40 cycles, 0 overruns")
    assert {k: values[f"mpc_{k}"] for k in counts} == counts and values["mode"] == "mpc"
    assert values["mpc_last_solve_s"] == "0.0123" and values["mpc_period_s"] == "0.2"
    assert float(values["last_plan_start"]) == 2.5  # the plan's t₀ on the planner's clock, seconds
    level, status, _ = planner_diagnostics(True, False, mpc, dict(counts, overruns=1), 0.0, None)
    assert (level, status) == (WARN, "mpc: 40 cycles, 1 overruns")
    level, status, _ = planner_diagnostics(True, False, mpc, dict(counts, failed=1), 0.0, None)
    assert (level, status) == (WARN, "mpc: 40 cycles, 1 failed, 0 overruns")
    level, status, _ = planner_diagnostics(True, False, mpc, dict(counts, refused=2, failed=1), 0.0, None)
    assert (level, status) == (WARN, "mpc: 40 cycles, 2 refused, 1 failed, 0 overruns")


@pytest.fixture
def diffdrive_simulator(request):
    """A simulator node (the bundled diff-drive, GNI) in this process on real rclpy, own domain and namespace."""
    from in_process import node_in_process

    from vi_control.ros.simulator_node import SimulatorNode

    args = ["-p", "model:=diffdrive", "-p", "system_yaml:=''", "-p", "integrator:=gni", "-p", "dt:=0.05"]
    with node_in_process(request.node.name, SimulatorNode, args) as node:
        yield node


def test_odometry_twist_is_the_body_twist_of_the_chassis(diffdrive_simulator):
    """The simulator's nav_msgs/Odometry (ground truth of a mobile robot): pose of the chassis in the odom frame and
    its twist in the chassis (child) frame, as REP-105 and nav_msgs define it — for the planar base (x, y, ψ) that is
    (cos ψ ẋ + sin ψ ẏ, −sin ψ ẋ + cos ψ ẏ, 0) m/s and (0, 0, ψ̇) rad/s, not the world-frame (ẋ, ẏ)."""
    node = diffdrive_simulator
    rng = np.random.default_rng(105)
    for _ in range(6):
        q = np.concatenate([rng.uniform(-3, 3, size=2), [rng.uniform(-math.pi, math.pi)], rng.uniform(-9, 9, size=2)])
        v = rng.normal(size=5)
        m = node.odometry_message(node.get_clock().now().to_msg(), q, v)
        assert (m.header.frame_id, m.child_frame_id) == ("odom", "base_link")
        p, o, lin, ang = m.pose.pose.position, m.pose.pose.orientation, m.twist.twist.linear, m.twist.twist.angular
        assert [p.x, p.y] == pytest.approx(q[:2], abs=1e-12)
        yaw = 2 * math.atan2(o.z, o.w)
        assert abs(_wrap(yaw - q[2])) <= 1e-12 and abs(o.x) + abs(o.y) <= 1e-12  # a rotation about z by ψ
        c, s = math.cos(q[2]), math.sin(q[2])
        assert [lin.x, lin.y, lin.z] == pytest.approx([c * v[0] + s * v[1], -s * v[0] + c * v[1], 0.0], abs=1e-12)
        assert [ang.x, ang.y, ang.z] == pytest.approx([0.0, 0.0, v[2]], abs=1e-12)
