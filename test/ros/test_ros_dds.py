"""Nodes as separate processes over real DDS: fault handling of the simulator and the controller.

Each test has its own ROS_DOMAIN_ID and localhost discovery; node processes are killed in the fixture's
teardown even when the test fails.
"""

import time

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")

from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import UInt8MultiArray  # noqa: E402

from vi_control.ros.common import LATCHED_QOS  # noqa: E402
from vi_control.ros.messages import RawFloat64MultiArray, plan_to_message, split_seconds  # noqa: E402

pytestmark = pytest.mark.ros
DISCOVERY = 30.0  # s: process start-up (imports, model build) plus DDS discovery on a loaded 2-core machine


def stamped_command(u, t: float) -> bytes:
    """A serialized command with the values ``u`` that answers the joint state stamped ``t`` (as a controller's)."""
    cmd = RawFloat64MultiArray(len(u))
    cmd.data[:] = u
    cmd.set_stamp(*split_seconds(t))
    return bytes(cmd)


def lockstep_step(rec, u, node=None, timeout: float = 10.0, answers: float | None = None) -> tuple:
    """Command a lockstep simulator once through the recorder ``rec`` (``answers``: the command names the state of
    that stamp, as a controller's): the (receive, stamp, q, effort) of the state that step published — the first one
    recorded with a later stamp, not simply the next one recorded: an idle simulator republishes its current state
    every idle_publish_period, and a republish sent just before the command was handled arrives after it was sent
    (flakehunt: the next state was such a republish under load)."""
    # the recorder's subscription may match the simulator after the caller's own did: its first state awaited
    assert rec.wait_for(lambda: len(rec.states) > 0, timeout), node.log()[-2000:] if node else "no state recorded"
    with rec.lock:
        last = max(s[1] for s in rec.states)
    if answers is None:
        rec.publish_command(u)
    else:
        rec.cmd_pub.publish(stamped_command(u, answers))
    assert rec.wait_for(lambda: rec.states[-1][1] > last, timeout), node.log()[-2000:] if node else last
    with rec.lock:
        return next(s for s in rec.states if s[1] > last)


@pytest.mark.parametrize("on_bad_command, fallback", [("hold", 0.8), ("zero", 0.0)])
def test_simulator_rejects_bad_commands_and_keeps_running(ros, pendulum_vi, on_bad_command, fallback):
    sim = ros.start(
        "simulator_node",
        model="pendulum",
        dt=0.1,
        mode="lockstep",
        initial_positions=[0.2],
        initial_velocities=[0.5],
        on_bad_command=on_bad_command,
    )
    rec = ros.recorder(["theta"])
    assert rec.wait_for(lambda: rec.states, DISCOVERY), sim.log()
    assert rec.wait_for(lambda: rec.cmd_pub.get_subscription_count() > 0, DISCOVERY)
    assert rec.wait_for(lambda: rec.robot_description is not None, 10.0)  # latched URDF for robot_state_publisher
    assert rec.robot_description == pendulum_vi.robot.urdf_xml
    vi = pendulum_vi
    # the node's x_0 is the discrete state of the pair (q_0 − Δt q̇_0, q_0), as the planner's start state
    x = vi.state_from_configurations(np.array([0.2 - 0.1 * 0.5]), np.array([0.2]))
    state = lockstep_step(rec, [0.8], sim)
    x = vi.step(x, np.array([0.8]))
    assert state[2][0] == pytest.approx(x[0], abs=1e-12)  # the node steps the same map
    for bad in ([float("nan")], [1.0, 2.0], []):
        state = lockstep_step(rec, bad, sim)
        x = vi.step(x, np.array([fallback]))  # the last valid command ('hold') or zero is applied
        assert state[3][0] == pytest.approx(fallback)
        assert state[2][0] == pytest.approx(x[0], abs=1e-12)
    assert sim.wait_for_log("rejected command (NaN/inf entries)", 5.0)
    assert sim.wait_for_log("rejected command (size 2 != 1)", 5.0)
    state = lockstep_step(rec, [1e300], sim)  # the actuator saturates at the URDF/YAML effort limit
    assert state[3][0] == pytest.approx(5.0)
    assert sim.alive


def test_simulator_holds_state_when_a_step_does_not_converge(ros):
    # Δt = 2 s with p = 3: Newton on the DEL equation (Johnson2015, eq. 6a) does not converge
    sim = ros.start(
        "simulator_node", model="pendulum", dt=2.0, mode="lockstep", initial_velocities=[3.0], idle_publish_period=0.1
    )
    rec = ros.recorder(["theta"])
    assert rec.wait_for(lambda: rec.states and rec.cmd_pub.get_subscription_count() > 0, DISCOVERY), sim.log()
    for _ in range(2):
        rec.publish_command([5.0])
        assert sim.wait_for_log("step 0 failed, state held", 10.0), sim.log()
    time.sleep(0.3)
    assert sim.alive
    assert {s[1] for s in rec.states} == {0.0}  # only the initial state, republished while idle
    assert all(np.isfinite(s[2]).all() for s in rec.states)


def _pendulum_hold_plan(vi, N: int, t0: float):
    from test_ros_tracking import _hold_upright_plan

    plan = _hold_upright_plan(vi, N)
    plan.times = plan.times + t0
    return plan


def send_state(rec, node, t: float, q, v, names=("theta",), watchdog=None) -> np.ndarray:
    """Publish /clock at t and a JointState stamped t through the recorder; the command the controller ``node``
    answered it with (a joint_state-triggered controller answers every state, a refused one with its safe command).
    ``watchdog``: the safe command the controller's watchdog sends when this clock finds its last state stale — it
    comes before the answer (the clock first) and is skipped, not taken for the answer (flakehunt: it was, under
    load, when the test read the commands between the two)."""
    msg = JointState(name=list(names), position=list(q), velocity=list(v))
    msg.header.stamp.sec, msg.header.stamp.nanosec = split_seconds(t)
    # the answer is read from the recorder: its reader must have matched the controller's command writer (the only
    # publisher there: a recorder creates its own only when it commands), or an answer sent before is lost
    topic = f"{rec.controller_name}/commands"
    assert rec.wait_for(lambda: rec.count_publishers(topic) > 0, DISCOVERY), node.log()
    n0 = len(rec.commands)
    rec.publish_clock(t)
    rec.state_pub.publish(msg)

    def answer():
        with rec.lock:
            new = [c[1] for c in rec.commands[n0:]]
        return next((u for u in new if watchdog is None or not np.allclose(u, watchdog, rtol=0, atol=1e-12)), None)

    assert rec.wait_for(lambda: answer() is not None, 10.0), node.log()
    return answer()


def test_controller_tracks_then_goes_safe_on_stale_or_invalid_states(ros, pendulum_vi):
    vi = pendulum_vi
    # on simulation time: the test plays the simulator's /clock, and joint-state stamps are judged on it
    ctrl = ros.start(
        "controller_node",
        model="pendulum",
        dt=0.1,
        trigger="joint_state",
        state_timeout=0.6,
        safe_mode="damping",
        safe_damping=2.0,
        use_sim_time=True,
    )
    rec = ros.recorder(["theta"])
    plan = _pendulum_hold_plan(vi, 50, t0=1.0)
    rec.create_publisher(UInt8MultiArray, "vi_planner/plan", LATCHED_QOS).publish(plan_to_message(plan, 42))
    assert ctrl.wait_for_log("accepted plan 42", DISCOVERY), ctrl.log()
    assert rec.wait_for(lambda: rec.state_pub.get_subscription_count() > 0, DISCOVERY)

    def send(t, q, v, names=("theta",), watchdog=None):
        return send_state(rec, ctrl, t, q, v, names, watchdog)

    # two configurations one Δt apart: x from the discrete Legendre transform, then u = U_k + K_k (X_k − x)
    q_prev, q = np.array([np.pi - 0.1]), np.array([np.pi - 0.08])
    send(1.0 + 3 * vi.dt, q_prev, [0.0])
    u = send(1.0 + 4 * vi.dt, q, [])  # no velocity: p from configurations
    x = vi.state_from_configurations(q_prev, q)
    assert u[0] == pytest.approx((plan.K[4] @ (plan.X[4] - x))[0], abs=1e-9)

    # joint states stop arriving while the clock runs on: the watchdog's safe command is zero torque, not −d·q̇ with
    # the last q̇ (stale: no feedback, a constant torque repeated while states stay away)
    n0 = len(rec.commands)
    for i in range(12):
        rec.publish_clock(1.0 + 4 * vi.dt + 0.1 * (i + 1))
        time.sleep(0.1)
    assert ctrl.wait_for_log("joint states stale", 5.0), ctrl.log()
    # (the log line is written before the command reaches the recorder)
    assert rec.wait_for(lambda: len(rec.commands) > n0, 5.0) and rec.commands[n0][1] == pytest.approx([0.0], abs=0)
    assert abs(vi.velocity(x)[0]) > 0.1  # (there was a velocity to damp)

    # a NaN state: refused, no trustworthy velocity either — zero torque (as the watchdog's, which may come between)
    n0 = len(rec.commands)
    send_state(rec, ctrl, 1.0 + 4 * vi.dt + 1.3, [np.nan], [0.0])
    assert ctrl.wait_for_log("invalid joint state: joint state positions contain NaN", 5.0)
    assert all(c[1][0] == 0.0 for c in rec.commands[n0:])
    # a message with none of the model's joints (another driver's, or misnamed): ignored, its names logged once
    msg = JointState(name=["elbow"], position=[np.pi], velocity=[0.3])
    msg.header.stamp.sec, msg.header.stamp.nanosec = split_seconds(1.0 + 4 * vi.dt + 1.4)
    n0 = len(rec.commands)
    rec.state_pub.publish(msg)
    assert ctrl.wait_for_log("names none of the model's joints (got ['elbow']): ignored", 5.0), ctrl.log()
    assert len(rec.commands) == n0
    assert ctrl.alive
    # valid states again: tracking resumes
    send(1.0 + 17 * vi.dt, q_prev, [0.0])
    u = send(1.0 + 18 * vi.dt, q, [])
    assert u[0] == pytest.approx((plan.K[18] @ (plan.X[18] - x))[0], abs=1e-9)
    assert ctrl.wait_for_log("tracking resumed", 5.0)


def test_realtime_simulator_and_timer_controller_hold_the_pendulum_up(ros, pendulum_vi):
    """Realtime mode end to end: 100 Hz timer controller with an LQR hold plan keeps θ near π; reset works."""
    from std_srvs.srv import Trigger

    vi = pendulum_vi  # Δt = 0.1 s, as the plan
    # The simulator runs from its start, before discovery completes: the pendulum may fall a long way before the
    # controller acts, so it gets a 15 N·m actuator (3× the gravity torque) to catch it from anywhere.
    strong = "{gravity: [0.0, 0.0, -9.8], actuated: [{joint: theta, effort_limit: 15.0}]}"
    sim = ros.start(
        "simulator_node",
        model="pendulum",
        system_yaml=strong,
        dt=0.1,
        mode="realtime",
        initial_positions=[np.pi - 0.05],
    )
    ctrl = ros.start(
        "controller_node",
        model="pendulum",
        system_yaml=strong,
        dt=0.1,
        trigger="timer",
        rate=20.0,
        state_timeout=1.0,
        use_sim_time=True,
    )  # the simulator's /clock
    rec = ros.recorder(["theta"])
    plan = _pendulum_hold_plan(vi, 10, t0=0.0)
    pub = rec.create_publisher(UInt8MultiArray, "vi_planner/plan", LATCHED_QOS)
    assert rec.wait_for(lambda: rec.states, DISCOVERY), sim.log()
    pub.publish(plan_to_message(plan, 7, start_on_receipt=True))
    assert ctrl.wait_for_log("accepted plan 7", DISCOVERY), ctrl.log()
    n0 = len(rec.states)
    assert rec.wait_for(lambda: len(rec.states) >= n0 + 60, 30.0)  # 6 s of simulated time at about real time
    tail = np.array([s[2][0] for s in rec.states[-5:]])
    assert np.abs((tail + np.pi) % (2 * np.pi) - np.pi).min() > np.pi - 0.05, ctrl.log()  # upright, modulo 2π
    stamps = [s[1] for s in rec.states[n0:]]
    assert np.allclose(np.diff(stamps), vi.dt)  # every step published, stamped with simulation time
    client = rec.create_client(Trigger, "vi_simulator/reset")
    assert client.wait_for_service(timeout_sec=DISCOVERY)
    # counted before the call: the reset's own state (published in the service callback) and the next step can
    # both reach the recorder before the service's response does
    n1 = len(rec.states)
    future = client.call_async(Trigger.Request())
    assert rec.wait_for(future.done, 10.0) and future.result().success
    # back at the initial state; the clock runs on (as Gazebo's reset_world: sim-time nodes never see it jump back)
    assert rec.wait_for(lambda: any(abs(s[2][0] - (np.pi - 0.05)) < 1e-9 for s in rec.states[n1:]), 5.0)
    i = next(i for i in range(n1, len(rec.states)) if abs(rec.states[i][2][0] - (np.pi - 0.05)) < 1e-9)
    assert rec.states[i][1] >= rec.states[n1 - 1][1]


def test_simulator_steps_the_linear_time_integrator_when_selected(ros):
    # The seed-001 integrator is selectable in the simulator by the `integrator` parameter
    from vi_control.integrators import make_integrator
    from vi_control.model.bundled import load_bundled

    sim = ros.start(
        "simulator_node",
        model="double_pendulum",
        dt=0.01,
        mode="lockstep",
        integrator="linear_time",
        initial_positions=[0.3, -0.2],
    )
    rec = ros.recorder(["shoulder", "elbow"])
    assert rec.wait_for(lambda: rec.states and rec.cmd_pub.get_subscription_count() > 0, DISCOVERY), sim.log()
    lt = make_integrator("linear_time", load_bundled("double_pendulum"), 0.01)
    x = lt.state_from_configurations(np.array([0.3, -0.2]), np.array([0.3, -0.2]))
    for k in range(5):
        state = lockstep_step(rec, [0.5, -0.25], sim)
        x = lt.step(x, np.array([0.5, -0.25]))
        assert state[1] == pytest.approx(0.01 * (k + 1)) and np.allclose(state[2], x[:2], atol=1e-10), k
    # planner and controller may use it too: it is Linearizable (symbolic trapezoidal L_d, Lee2016, eq. 9)
    from vi_control.integrators import Linearizable

    assert isinstance(make_integrator("linear_time", load_bundled("double_pendulum"), 0.01), Linearizable)
