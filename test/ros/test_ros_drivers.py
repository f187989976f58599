"""Joint states as real robot drivers publish them (the operator's audit): extra joints in any order, another
driver's joints on the same topic, positions only at rates other than 1/Δt and with jitter, effort filled,
header stamps never set.

References: the discrete Legendre transform of configurations on an analytic (linear) path q(t) = a + b·t,
where the interpolated q(t − Δt) is exact; the law u = U_k + K_k (X_k − x) in numpy.
"""

import re
import time

import numpy as np
import pytest
from log_record import stamped_lines

from vi_control.control.tracking import StateEstimator
from vi_control.integrators.midpoint import MidpointVI

DT = 0.01  # the plan's Δt: a 100 Hz plan
A, B = np.pi - 0.05, 0.02  # q(t) = A + B·t: a slow drift through the upright position (|u| well below 5 N·m)


def _q(t: float) -> np.ndarray:
    return np.array([A + B * t])


@pytest.fixture(scope="module")
def vi_100hz(pendulum_robot):
    return MidpointVI(pendulum_robot, DT)


def _ns(t: float) -> float:
    """t on a whole nanosecond: a stamp (sec, nanosec) carries it unchanged (the law's reference at 1e-9)."""
    return round(t * 1e9) * 1e-9


def _exact(vi, t: float) -> np.ndarray:
    """The discrete state of the pair (q(t − Δt), q(t)) (Johnson2015, eq. 1b)."""
    return vi.state_from_configurations(_q(t - DT), _q(t))


def _velocity_state(q: np.ndarray, qdot) -> np.ndarray:
    """(q, p) from a measured velocity without an effort: p = m l² q̇ − (Δt/2) m g l sin q of the bundled pendulum
    (1 kg at 1 m, g = 9.8; the holding torque for the applied one): the inverse of the wire's q̇ = M⁻¹(p + (Δt/2)τ)
    (docs/concepts/ros.md)."""
    return np.concatenate([q, np.asarray(qdot, float) - DT / 2 * 9.8 * np.sin(q)])


def test_configuration_estimate_at_driver_rates_other_than_the_plan(vi_100hz, rng):
    """A positions-only driver at 500 Hz with ±30 % jitter, then at 50 Hz, against a Δt = 10 ms plan: the estimate
    is the discrete state of (q(t − Δt), q(t)) (it used to be None: no command at all); with a measured velocity
    a slow driver's q̇ is used; a gap beyond max_gap or a clock that went back gives nothing to guess from."""
    vi = vi_100hz
    est = StateEstimator(vi, "configurations")
    t, n_estimates = 1.0, 0
    for _ in range(60):  # 500 Hz ± 30 %: five or so samples per Δt
        t += 0.002 * (1.0 + 0.3 * rng.uniform(-1.0, 1.0))
        x = est.update(t, _q(t), None)
        if x is not None:
            n_estimates += 1
            assert x == pytest.approx(_exact(vi, t), abs=1e-10)
    assert n_estimates >= 54  # all but the first Δt
    for _ in range(10):  # 50 Hz (2Δt apart), positions only: the finite difference of the last two samples
        t += 0.02
        assert est.update(t, _q(t), None) == pytest.approx(_exact(vi, t), abs=1e-10)
    t += 0.02
    v_meas = np.array([B + 0.1])  # a measured velocity (here deliberately not the path's): used when slower
    assert est.update(t, _q(t), v_meas) == pytest.approx(_velocity_state(_q(t), v_meas), abs=1e-12)
    t += 0.0095  # t − Δt lies between samples 2Δt apart: the measured velocity still wins
    assert est.update(t, _q(t), v_meas) == pytest.approx(_velocity_state(_q(t), v_meas), abs=1e-12)
    t += 0.0095  # now between samples 0.95Δt apart: the configurations win over the measured velocity
    assert est.update(t, _q(t), v_meas) == pytest.approx(_exact(vi, t), abs=1e-10)
    t += 0.2  # a drop-out longer than max_gap: no finite difference across it
    assert est.update(t, _q(t), None) is None
    assert est.update(t - 1.0, _q(t - 1.0), None) is None  # the clock went back: the history starts afresh
    assert est.update(t - 1.0 + DT, _q(t - 1.0 + DT), None) == pytest.approx(_exact(vi, t - 1.0 + DT), abs=1e-10)


def test_raw_reader_ignores_other_drivers_and_keeps_its_cache(rng):
    """Arm and gripper drivers alternating on one topic: the gripper's message is a ForeignJointState (ignored by
    the nodes), the arm's are read correctly before and after it. A message with only some joints is an error for a
    reader that needs them all (a goal); one reading a driver of several (``partial``) reads them and says which."""
    pytest.importorskip("rclpy")
    from rclpy.serialization import serialize_message
    from sensor_msgs.msg import JointState

    from vi_control.ros.messages import ForeignJointState, RawJointStateReader

    arm = ["j1", "j2", "j3"]
    raw = RawJointStateReader(arm)
    for trial in range(20):
        q = rng.normal(size=3)
        names = ["wheel_left", "j3", "j1", "finger", "j2"]  # extra joints, another order
        m = JointState(name=names, position=[0.5, q[2], q[0], 0.01, q[1]], effort=[1.0] * 5)
        m.header.stamp.sec = 10 + trial
        assert raw.read_raw(serialize_message(m)) == (10.0 + trial, False) and np.array_equal(raw.q, q)
        gripper = JointState(name=["finger", "finger_2"], position=[0.01, 0.02])
        with pytest.raises(ForeignJointState, match="none of the model's joints"):
            raw.read_raw(serialize_message(gripper))
    wrist = serialize_message(JointState(name=["j1", "j2", "finger"], position=[0.5, 0.25, 0.0], velocity=[1.0] * 3))
    with pytest.raises(ValueError, match=r"lacks joint\(s\) \['j3'\]") as info:
        raw.read_raw(wrist)
    assert not isinstance(info.value, ForeignJointState)
    partial = RawJointStateReader(arm, partial=True)
    for _ in range(2):  # (the cached order too)
        assert partial.read_raw(wrist) == (0.0, True) and partial.carried.tolist() == [True, True, False]
        assert partial.q[:2].tolist() == [0.5, 0.25]
        nan_in_j3 = JointState(name=["j1", "j2", "j3"], position=[0.1, 0.2, np.nan])
        with pytest.raises(ValueError, match="positions contain NaN"):  # a joint it carries: refused as before
            partial.read_raw(serialize_message(nan_in_j3))
    assert partial.carried is None and partial.q[:2].tolist() == [0.1, 0.2]  # all carried (the NaN one refused)


def test_controller_with_real_drivers_over_dds(ros, vi_100hz, rng):
    """One controller process on a /clock this test plays, a Δt = 10 ms hold plan (constant K: u = K (X − x)):
    (1) an arm driver at ~500 Hz ± 30 % with positions only, extra joints in another order, efforts filled, and
    a gripper driver on the same topic with its own joints only: every arm state after the first Δt answered with
    the law's value, no safe command; (2) the arm driver at 50 Hz; (3) header stamps never set (0): stamped on
    receipt, the law's value instead of "stale" safe commands."""
    from sensor_msgs.msg import JointState
    from std_msgs.msg import UInt8MultiArray
    from test_ros_dds import DISCOVERY, _pendulum_hold_plan

    from vi_control.ros.common import LATCHED_QOS, RECORD_QOS
    from vi_control.ros.messages import plan_to_message, split_seconds

    vi = vi_100hz
    ctrl = ros.start(
        "controller_node",
        model="pendulum",
        dt=DT,
        trigger="joint_state",
        state_timeout=0.5,
        safe_mode="damping",
        safe_damping=2.0,
        use_sim_time=True,
        log_throttle_period=30.0,
    )
    rec = ros.recorder(["theta"], record_states=False)
    plan = _pendulum_hold_plan(vi, 2000, t0=1.0)
    rec.create_publisher(UInt8MultiArray, "vi_planner/plan", LATCHED_QOS).publish(plan_to_message(plan, 5))
    gripper = rec.create_publisher(JointState, "joint_states", RECORD_QOS)  # a second driver, its own writer
    assert ctrl.wait_for_log("accepted plan 5", DISCOVERY), ctrl.report()
    assert rec.wait_for(
        lambda: rec.state_pub.get_subscription_count() > 0 and gripper.get_subscription_count() > 0, DISCOVERY
    )
    assert rec.wait_for(lambda: rec.count_publishers("effort_controller/commands") > 0, DISCOVERY)  # (commands heard)

    def law(x):
        return float((plan.K[0] @ (plan.X[0] - x))[0])

    def arm(t: float, stamp: float, v=()):
        msg = JointState(
            name=["wheel_left", "theta", "finger_2"],
            position=[0.3, float(_q(t)[0]), 0.01],
            velocity=list(v),
            effort=[0.0, 1.5, 0.0],
        )
        msg.header.stamp.sec, msg.header.stamp.nanosec = split_seconds(stamp)
        return msg

    def send(t: float, msg, answered: bool = True):
        n0 = len(rec.commands)
        rec.publish_clock(t)
        rec.state_pub.publish(msg)
        if not answered:
            return None
        assert rec.wait_for(lambda: len(rec.commands) > n0, 10.0), ctrl.report()
        return rec.commands[-1][1][0]

    def gripper_state(t: float) -> JointState:
        g = JointState(name=["finger_1", "finger_2"], position=[0.01, 0.01], velocity=[0.0, 0.0])
        g.header.stamp.sec, g.header.stamp.nanosec = split_seconds(t)
        return g

    # the gripper's driver first, until the controller has heard it (its reader may match the writer later than
    # the writer matches it): ignored, its names logged once, nothing commanded
    deadline = time.monotonic() + DISCOVERY
    while "names none of the model's joints" not in ctrl.log() and time.monotonic() < deadline:
        gripper.publish(gripper_state(1.0))
        time.sleep(0.05)
    assert "names none of the model's joints (got ['finger_1', 'finger_2']): ignored" in ctrl.log(), ctrl.report()
    assert not rec.commands
    # (1) ~500 Hz with jitter, positions only; the gripper's driver in between
    t, stamps, n_answered = 1.0, [], 0
    for i in range(40):
        t = _ns(t + 0.002 * (1.0 + 0.3 * rng.uniform(-1.0, 1.0)))
        has_before = any(s <= t - DT for s in stamps)  # the history reaches back one Δt
        stamps.append(t)
        u = send(t, arm(t, t), answered=has_before)
        if has_before:
            n_answered += 1
            assert u == pytest.approx(law(_exact(vi, t)), abs=1e-9), ctrl.report()
        else:
            time.sleep(0.02)
        if i % 3 == 0:
            gripper.publish(gripper_state(t - 0.001))
    assert n_answered >= 30
    # (2) the same driver at 50 Hz, still positions only: the finite difference of its samples
    for _ in range(10):
        t = _ns(t + 0.02)
        assert send(t, arm(t, t)) == pytest.approx(law(_exact(vi, t)), abs=1e-9), ctrl.report()
    # (3) stamps never set: the receipt time on the controller's clock (velocities given; the clock set first)
    for i in range(3):
        t = _ns(t + (0.2 if i == 0 else DT))  # (0.2 s: beyond max_gap, within state_timeout)
        rec.publish_clock(t)
        time.sleep(0.3)
        u = send(t, arm(t, 0.0, v=[0.0, B, 0.0]))
        # the first after a gap beyond max_gap: the measured q̇ = B; then the sample Δt back (stamped on receipt on
        # this clock, which stands at t): the configurations
        x = _velocity_state(_q(t), [B]) if i == 0 else _exact(vi, t)
        assert u == pytest.approx(law(x), abs=1e-9), ctrl.report()
    time.sleep(0.3)
    log = ctrl.log()
    assert len(rec.commands) == n_answered + 13, log  # one command per arm state: no safe command in between
    assert log.count("names none of the model's joints") == 1  # said once for that name list
    assert "header.stamp = 0" in log and "safe command" not in log and "lacks joint" not in log


def test_operator_clock_reset_live_rate_and_controller_restart(ros, vi_100hz):
    """A timer controller on a /clock this test plays, tracking a plan from t₀ = 1 with U_k = 0.3: (1) `rate` set
    live through the parameter service changes the commands per second of the clock; (2) the clock jumps back
    before t₀ (a simulator reset): the measured configuration held until t₀ — not U_0 + K_0(X_0 − x) held for the
    whole wait — and the plan is entered again at its start (the first tick from t₀ on); (3) the controller
    killed (SIGKILL) and restarted while the clock runs: it takes the latched plan and enters it at the clock's
    step with the law's value."""
    import signal

    from sensor_msgs.msg import JointState
    from std_msgs.msg import UInt8MultiArray
    from test_ros_dds import DISCOVERY, _pendulum_hold_plan
    from test_ros_interfaces import _set

    from vi_control.control.runner import HOLD_WEIGHTS
    from vi_control.control.tracking import HoldLaw
    from vi_control.ros.common import LATCHED_QOS
    from vi_control.ros.messages import plan_to_message, split_seconds

    vi = vi_100hz
    params = dict(
        model="pendulum",
        dt=DT,
        trigger="timer",
        rate=20.0,
        state_timeout=0.5,
        use_sim_time=True,
        state_estimate="velocities",
        log_throttle_period=30.0,
    )
    ctrl = ros.start("controller_node", **params)
    rec = ros.recorder(["theta"], record_states=False)
    plan = _pendulum_hold_plan(vi, 2000, t0=1.0)
    plan.U[:] = 0.3
    rec.create_publisher(UInt8MultiArray, "vi_planner/plan", LATCHED_QOS).publish(plan_to_message(plan, 5))
    assert ctrl.wait_for_log("accepted plan 5", DISCOVERY), ctrl.report()
    assert rec.wait_for(lambda: rec.state_pub.get_subscription_count() > 0, DISCOVERY)
    assert rec.wait_for(lambda: rec.count_publishers("effort_controller/commands") > 0, DISCOVERY)  # (commands heard)
    q = np.array([np.pi - 0.02])
    u_law = 0.3 + float((plan.K[0] @ (plan.X[0] - _velocity_state(q, [0.0])))[0])  # (state_estimate velocities)

    def play(t_from: float, t_to: float) -> list[float]:
        """The clock and a joint state (at rest at q) every 10 ms of sim time; the commands that came meanwhile."""
        n0 = len(rec.commands)
        for i in range(int(round((t_to - t_from) / 0.01))):
            t = _ns(t_from + 0.01 * i)
            rec.publish_clock(t)
            msg = JointState(name=["theta"], position=q.tolist(), velocity=[0.0])
            msg.header.stamp.sec, msg.header.stamp.nanosec = split_seconds(t)
            rec.state_pub.publish(msg)
            time.sleep(0.005)
        time.sleep(0.3)
        return [c[1][0] for c in rec.commands[n0:]]

    at_20 = play(1.0, 2.0)
    assert ctrl.wait_for_log("entered plan 5 at k=", 5.0), ctrl.report()
    assert _set(rec, "vi_controller", rate=50.0) == [(True, "")]
    at_50 = play(2.0, 3.0)
    assert 10 <= len(at_20) <= 25 and 30 <= len(at_50) <= 60, (len(at_20), len(at_50))
    assert at_50 == pytest.approx([u_law] * len(at_50), abs=1e-9)
    # (2) a simulator reset takes the clock back to 0.3 s: the measured configuration held until the plan's start
    # (safe_mode hold: gravity compensation + the hold gain at q; not the plan's U_0 + K_0 (X_0 − x) early)
    hold = HoldLaw(vi, tuple(HOLD_WEIGHTS.values()))
    hold.engage(q)
    u_hold = float(hold.command(vi.state_from_configurations(q, q))[0][0])
    waiting = play(0.3, 0.9)
    assert len(waiting) >= 6 and waiting == pytest.approx([u_hold] * len(waiting), abs=1e-9), ctrl.report()
    assert ctrl.wait_for_log("the clock went back: state t=0.3", 5.0), ctrl.report()
    # told by the first state after the reset that came with the clock's jump — /clock and the joint states are two
    # topics with no order between them: a loaded CI run's state t = 0.30 came before the clock went back (judged on
    # the old clock: stale), and t = 0.31 told it
    back = re.search(r"the clock went back: state t=([0-9.]+) after t=([0-9.]+)", ctrl.log())
    assert back and 0.3 <= float(back[1]) <= 0.35 and float(back[2]) == 2.99, ctrl.report()
    assert ctrl.wait_for_log("plan 5 starts at t=1.0000 again", 5.0)
    again = play(0.9, 2.0)  # 20 ticks of 20 Hz from t₀ = 1.0: at least half (a starved executor merges ticks)
    entries = [int(e.split()[0]) for e in ctrl.log().split("entered plan 5 at k=")[1:]]
    assert len(entries) == 2 and entries[1] <= 6, ctrl.report()  # at the first 20 Hz tick from t₀ on
    _held_then_law(again, u_hold, u_law)  # (held until t₀ − Δt/2, then the law)
    # (3) the controller dies and comes back while the clock runs on: the latched plan, entered at the clock's k
    ctrl.signal(signal.SIGKILL)
    ctrl2 = ros.start("controller_node", **params)
    t = t_restart = 2.0
    deadline = time.monotonic() + DISCOVERY
    while "entered plan 5" not in ctrl2.log() and time.monotonic() < deadline:
        play(t, t + 0.1)
        t += 0.1
    assert "entered plan 5 at k=" in ctrl2.log(), ctrl2.report()
    k = int(ctrl2.log().split("entered plan 5 at k=")[1].split()[0])
    assert round((t_restart - 1.0) / DT) <= k <= round((t - 1.0) / DT)  # late: at the clock's step, not from 0
    resumed = play(t, t + 1.0)  # 20 ticks: at least half
    # (commands of the restarted controller sent before it had the latched plan may still arrive: it held q)
    _held_then_law(resumed, u_hold, u_law)


def _held_then_law(commands: list[float], u_hold: float, u_law: float) -> None:
    """The commands are the hold's, then (at least 10) the law's, nothing else."""
    i = next((i for i, c in enumerate(commands) if abs(c - u_law) < 1e-9), len(commands))
    assert commands[:i] == pytest.approx([u_hold] * i, abs=1e-9), commands
    assert len(commands) - i >= 10 and commands[i:] == pytest.approx([u_law] * (len(commands) - i), abs=1e-9)


def test_goal_sent_before_any_joint_state_waits_for_one(ros):
    """An operator's goal on ~/goal before the driver's first joint state (wall clock): the planner waits
    startup_wait for a state and plans from it (q = 0.3 at rest), not from the task's x₀ (q = 0)."""
    from sensor_msgs.msg import JointState
    from test_ros_dds import DISCOVERY

    from vi_control.ros.common import STREAM_QOS
    from vi_control.ros.messages import split_seconds

    planner = ros.start(
        "planner_node",
        model="pendulum",
        task="task_pendulum_swingup",
        plan_on_startup=False,
        startup_wait=20.0,
        expected_solve_time=3.0,
    )
    rec = ros.recorder(["theta"], record_states=False)
    goal_pub = rec.create_publisher(JointState, "vi_planner/goal", STREAM_QOS)
    assert rec.wait_for(
        lambda: goal_pub.get_subscription_count() > 0 and rec.state_pub.get_subscription_count() > 0, DISCOVERY
    ), planner.report()
    assert planner.wait_for_log("task task_pendulum_swingup on pendulum", DISCOVERY), planner.report()
    for _ in range(10):  # (until heard: the planner's reader may match this writer later than it matches them)
        goal_pub.publish(JointState(name=["theta"], position=[np.pi]))
        if planner.wait_for_log("re-planning", 1.0):
            break
    assert planner.wait_for_log("re-planning", 1.0), planner.report()
    time.sleep(0.5)  # the driver comes up after the goal
    deadline = time.monotonic() + 20.0
    while "planning from" not in planner.log() and time.monotonic() < deadline:
        msg = JointState(name=["theta"], position=[0.3], velocity=[0.0])
        msg.header.stamp.sec, msg.header.stamp.nanosec = split_seconds(time.time())
        rec.state_pub.publish(msg)
        time.sleep(0.05)
    log = planner.log()
    assert "planning from the measured state" in log and "task's x_0" not in log, log


def test_planner_stamps_unstamped_joint_states_on_receipt(ros):
    """A driver that never sets header.stamp (0): the planner stamps its states on receipt with its own (wall)
    clock, so it plans from them — not from the task's x₀, and not from a state 'stamped' in 1970 — and the plan
    starts on that clock, at the measured q = 0.3."""
    from sensor_msgs.msg import JointState
    from test_ros_dds import DISCOVERY

    planner = ros.start(
        "planner_node", model="pendulum", task="task_pendulum_swingup", startup_wait=20.0, expected_solve_time=3.0
    )
    rec = ros.recorder(["theta"], record_states=False)
    assert rec.wait_for(lambda: rec.state_pub.get_subscription_count() > 0, DISCOVERY), planner.report()
    t_sent = time.time()
    deadline = time.monotonic() + 30.0
    while "planning from" not in planner.log() and time.monotonic() < deadline:
        rec.state_pub.publish(JointState(name=["theta"], position=[0.3], velocity=[0.0]))  # stamp 0
        time.sleep(0.05)
    log = planner.log()
    assert "planning from the measured state at t=" in log and "task's x_0" not in log, log
    t_m = float(log.split("planning from the measured state at t=")[1].split(",")[0])
    assert t_sent - 5.0 < t_m < time.time() + 1.0, (t_m, t_sent)  # the time of receipt, on the wall clock
    assert rec.wait_for(lambda: rec.plan() is not None, 60.0), planner.report()
    plan = rec.plan()[1]
    assert t_m < plan.times[0] < t_m + 30.0
    assert plan.X[0, 0] == pytest.approx(0.3, abs=1e-6)


def _split_driver(domain: int, namespace: str, joints: str, every: int, dt: float, log_dir):
    """test/support/split_driver.py as its own process: one driver publishing ``joints`` every ``every``-th step."""
    import subprocess
    import sys
    from pathlib import Path

    from vi_control.ros.launcher import die_with_parent, ros_environment

    log = open(Path(log_dir) / f"driver_{joints.replace(',', '_')}.log", "w")
    driver = Path(__file__).resolve().parents[1] / "support" / "split_driver.py"
    return subprocess.Popen(
        [sys.executable, str(driver), namespace, joints, str(every), str(dt)],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=ros_environment(domain),
        start_new_session=True,
        preexec_fn=die_with_parent,
    )


def _late_commands(snapshots: list[dict], t0: float, t1: float) -> tuple[int, int]:
    """(steps on a late command, largest lag in steps) of the simulator between sim times t0 and t1, from its
    /diagnostics snapshots (cumulative counts; the window is widened to the snapshots around it, back to the
    simulator's start if none came before t0: a subscription that matched late)."""
    times = [float(s["sim_time"]) for s in snapshots]
    after = [i for i, t in enumerate(times) if t >= t1]
    assert after, f"no simulator /diagnostics after t = {t1}: {times}"
    j, before = after[0], [i for i, t in enumerate(times) if t <= t0]
    if not before:
        return int(snapshots[j]["late_command_steps"]), int(snapshots[j]["max_command_lag_steps"])
    i = before[-1]
    late = int(snapshots[j]["late_command_steps"]) - int(snapshots[i]["late_command_steps"])
    return late, max(int(s["max_command_lag_steps_in_period"]) for s in snapshots[i + 1 : j + 1])


def _stop(proc) -> None:
    import os
    import signal
    import subprocess

    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(5.0)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5.0)


REACH_100HZ = """name: double_pendulum_reach_100hz
model: {bundled: double_pendulum}
dt: 0.01
horizon: 150
start: {q: [0.3, 0.2], qdot: [0, 0]}
goal: {q: [0.6, -0.4]}
reference: {type: goal, u: hold}
initial_guess: hold_start
weights: {Q: {q: 1.0, p: 0.1}, R: 1.0, Qf: {q: 1.0e+4, p: 1.0e+3}}
optimizer: {method: ddp, max_iterations: 50, tolerance: 1.0e-6}
lqr: {Q: {q: 100.0, p: 1.0}, R: 0.01, Qf: {q: 100.0, p: 1.0}}
hold: {Q: {q: 100.0, p: 1.0}, R: 0.01}
"""


def _driver_gaps(log: str, t0: float, t1: float) -> list[float]:
    """How long a driver's joints had been missing [s] in each of the controller's "joint state incomplete … (last
    seen … ago)" warnings stamped between the wall-clock times t0 and t1."""
    return [
        float(line.split("(last seen ")[1].split()[0])
        for t, line in stamped_lines(log, "joint state incomplete")
        if "(last seen " in line and t0 <= t <= t1
    ]


def test_joints_split_over_two_drivers_are_merged_by_planner_and_controller(request, tmp_path):
    """The bundled double pendulum simulated in real time (Δt = 10 ms), its joint states relayed by two driver processes
    onto the topic the planner and controller hear: the shoulder every step (100 Hz) and the elbow every other step
    (50 Hz), each with the simulator's stamps, arriving in either order. The planner plans from the merged state
    (the simulator's q = 0 at rest, not the task's start (0.3, 0.2)); the controller tracks the 1.5 s reach (|q̈| up
    to 30 rad/s²) within 0.04 rad while the loop keeps its timing (the simulator's and the controller's /diagnostics:
    late commands, the elbow's extrapolation; a CI run once tracked to 0.051 with nothing to say why), within 0.1 rad
    when it slips (commands up to 3 steps late, the elbow up to 35 ms ahead), and holds the goal; a loop that
    stalled beyond that is reported, its tracking not judged. Measured (max |q − X_k| over the plan, on a loaded 2-core
    machine): one relay with both joints (the same test with one `_split_driver` of "shoulder,elbow"; by hand, to
    keep the suite short) 3e-14 to 1.5e-3 rad in four runs (a command that missed its step), two drivers 1.2e-2 to
    1.9e-2 rad in six (the simulator at real_time_factor 0.5, beside two busy loops: 0.7e-2 to 1.9e-2 in four) —
    the elbow extrapolated over 10 ms from samples 20 ms apart, its error entering p through ∂p/∂q ≈ M/Δt
    (in-process lockstep: 1.1–1.4e-2). Then, `joint_state_merge_age` set to 0.1 s and `state_timeout` to 0.25 s live,
    the elbow's driver stops: the controller names the missing joint once 0.1 s have passed and commands
    nothing new; its last state ages into a stale one (state_timeout), the safe command. (Kept short on purpose: until
    the elbow is missing the law tracks an extrapolated elbow, blind, at up to 20 N·m, and the simulator holds the last
    command until the safe one. With 0.2 s and the default 0.5 s, a CI run under load — two more test processes
    on its 2 cores — drove the elbow past 300 rad/s, where the Δt = 10 ms step is refused.) /diagnostics counts the
    partial messages and those that found the elbow missing."""
    pytest.importorskip("rclpy")
    import threading

    import handover

    from vi_control.ros.launcher import domain_id_for, run_namespace
    from vi_control.ros.main_job import run_closed_loop

    domain, ns, dt = domain_id_for(request.node.name), run_namespace(request.node.name), 0.01
    task = tmp_path / "task.yaml"
    task.write_text(REACH_100HZ)
    model = dict(model="double_pendulum", system_yaml="", dt=dt)
    # at half speed: the state's round trip through a driver and the controller back to the simulator has 20 ms of
    # wall time per step, not 10 (at 1×, two CI runs beside the other test worker tracked to 0.042 and 0.051 rad,
    # a command that came after the step it was for applied one step late)
    overrides = {
        "simulator": dict(
            model,
            mode="realtime",
            real_time_factor=0.5,
            initial_positions=[0.0, 0.0],
            initial_velocities=[0.0, 0.0],
            diagnostics_period=0.05,
        ),
        "controller": dict(model, trigger="joint_state", log_throttle_period=0.0, diagnostics_period=0.05),
        "planner": dict(model, task=str(task)),
    }
    split = {"joint_states": "split_joint_states"}  # the nodes hear only the drivers
    procs = [
        _split_driver(domain, ns, "shoulder", 1, dt, tmp_path),
        _split_driver(domain, ns, "elbow", 2, dt, tmp_path),
    ]
    stopped_at: list[float] = []
    diagnostics: list[dict] = []
    sim_diagnostics: list[dict] = []

    def stop_elbow_after_the_plan(nodes, rec):
        from diagnostic_msgs.msg import DiagnosticArray
        from test_ros_interfaces import _set

        def watch():
            # The plan's end as the controller runs it, from its entry: a plan that came late with the robot still
            # at X_0 is re-timed to its arrival (the planner's clock-rate estimate is 0 when the simulator was
            # starved while it measured, and the plan then starts where it was measured). Its stated end stopped
            # the elbow 0.27 s before the re-timed plan's: 1.8 rad off (flakehunt, under two busy loops).
            plan, entries = rec.plan()[1], []
            while not entries:
                if not nodes["controller"].alive:
                    return
                time.sleep(0.05)
                entries = handover.entries(nodes["controller"].log())
            _, k, t_entry, _ = entries[0]
            end = t_entry + (plan.horizon - k) * plan.dt + 0.3
            while not rec.wait_for(lambda: rec.states and rec.states[-1][1] >= end, 0.5):
                if not nodes["controller"].alive:
                    return
            # live: the controller waits longer for the elbow from now on (its log says when it gave up)
            stopped_at.append(_set(rec, "vi_controller", joint_state_merge_age=0.1, state_timeout=0.25))
            stopped_at.append(time.time())
            _stop(procs[1])

        def on_diagnostics(m):
            for st in m.status:
                for suffix, out in (("vi_controller", diagnostics), ("vi_simulator", sim_diagnostics)):
                    if st.name.endswith(suffix):
                        out.append({v.key: v.value for v in st.values})

        rec.create_subscription(DiagnosticArray, "diagnostics", on_diagnostics, 10)
        threading.Thread(target=watch, daemon=True).start()

    try:
        run = run_closed_loop(
            domain,
            str(tmp_path / "logs"),
            overrides=overrides,
            joint_names=["shoulder", "elbow"],
            hold_time=1.5,
            timeout=150.0,
            namespace=ns,
            on_start=stop_elbow_after_the_plan,
            remaps={"controller": split, "planner": split},
        )
    finally:
        for d in procs:
            _stop(d)
    logs = "\n".join(f"--- {n}\n{t[-3000:]}" for n, t in run.logs.items())
    assert not run.error, run.error + logs
    planner, controller = run.logs["planner"], run.logs["controller"]
    assert "planning from the measured state" in planner and "task's x_0" not in planner, logs
    plan = run.first_plan
    assert plan.X[0, :2] == pytest.approx([0.0, 0.0], abs=1e-3)  # both joints as measured, at rest
    starts = handover.retimed_starts(controller)
    if starts:  # (the plan came late, the simulator starved of CPU: it runs from the start it was re-timed to)
        plan = plan.shifted(next(iter(starts.values())))
    err = run.tracking_error(np.ones(2, bool), plan)
    assert np.isfinite(err).sum() > 0.8 * err.size, logs
    # The loop's timing over the plan, as the nodes measured it: steps on a late command (simulator) and how far the
    # controller extrapolated the elbow past its newest sample. Nominal: at most a few steps one step late, and the
    # elbow at most its own period (20 ms) plus 5 ms of delay ahead; then the 0.04 rad. A starved driver or
    # controller (a loaded machine) extrapolates further or answers later: the law still tracks, less closely.
    late = _late_commands(sim_diagnostics, plan.times[0], plan.times[-1])
    during = [d for d in diagnostics if d.get("k") not in (None, "") and 0 < int(d["k"]) <= plan.horizon]
    after = [d for d in diagnostics if d.get("k") not in (None, "") and int(d["k"]) > plan.horizon][:1]
    assert during and after, diagnostics
    ahead = max(float(d["max_extrapolation_s_in_period"]) for d in during + after)
    # A loop that stalled (a command more than 3 steps late, or the elbow extrapolated beyond 35 ms: a driver or the
    # controller starved of CPU for 60 ms of wall time or more) is judged by the rest of the test only: in a CI-like
    # run both drivers stalled for 80 ms, 33 steps ran on late commands (lag up to 10), the law saturated at the
    # effort limits and the reach went 1.6 rad off — what any controller does when its loop stops, not a merge fault.
    nominal = late[0] <= 5 and late[1] <= 1 and ahead <= 2 * dt + 0.005
    stalled = late[1] > 3 or ahead > 2 * dt + 0.015
    # The same stall just before the plan's entry is outside the diagnostics above (no step k yet): a fresh-clone CI
    # run had the elbow's messages missing for 0.17 s up to the entry (the controller waiting, "last seen … ago"), the
    # plan entered 2 steps late, 14 commands at the effort limits followed (4 in a nominal run) and 0.142 rad.
    assert "entered plan" in controller, logs
    missing = _driver_gaps(
        controller,
        stamped_lines(controller, "entered plan")[0][0] - 0.5,
        stopped_at[1] if len(stopped_at) > 1 else np.inf,
    )
    stalled = stalled or max(missing, default=0.0) > 2 * dt + 0.015
    print(
        f"two drivers: max tracking error {np.nanmax(np.abs(err)):.3g} rad; over the plan {late[0]} steps on a "
        f"late command (lag up to {late[1]}), the elbow extrapolated up to {1e3 * ahead:.1f} ms, a driver's joints "
        f"missing up to {1e3 * max(missing, default=0.0):.0f} ms from just before the entry"
        f"{': the loop stalled, tracking not judged' if stalled else ''}"
    )
    if not stalled:
        assert np.nanmax(np.abs(err)) < (4e-2 if nominal else 1e-1), (late, ahead, logs)
        held = (run.stamps > plan.times[-1] + 0.1) & (run.stamps < plan.times[-1] + 0.3)  # (before the elbow stops)
        assert held.any() and np.abs(run.q[held] - plan.X[-1, :2]).max() < 4e-2
    counts = diagnostics[-1] if diagnostics else {}
    assert stopped_at[0] == [(True, ""), (True, "")], logs
    after = [line for t, line in stamped_lines(controller) if t > stopped_at[1]]
    waiting = [line for line in after if "joint state incomplete: waiting for joint(s) ['elbow'] (last seen" in line]
    assert waiting, logs
    assert 0.1 <= float(waiting[0].split("(last seen ")[1].split()[0]) < 0.2, logs  # the live-set 0.1 s had passed
    # no new state since: it ages into a stale one (state_timeout, set to 0.25 s), the safe command
    assert any(
        "joint states stale: no joint state for" in line and "-> safe command (damping)" in line for line in after
    ), logs
    assert int(counts["partial_joint_states"]) > 300 and int(counts["waiting_joint_states"]) > 0, counts
