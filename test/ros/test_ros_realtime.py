"""Time and hand-over over real DDS: plans that start at a stated time on a running clock,
start-up in any order, and the standard trajectory and goal inputs.

Every node but the simulator runs on the simulator's /clock (use_sim_time). Each test has its own domain and
namespace(s); node processes are stopped in the fixture's teardown.
"""

import itertools
import time

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")

import handover  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray, UInt8MultiArray  # noqa: E402
from test_ros_dds import DISCOVERY, _pendulum_hold_plan  # noqa: E402
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint  # noqa: E402

from vi_control.control.tracking import tracking_law  # noqa: E402
from vi_control.ros.common import LATCHED_QOS, RECORD_VOLATILE_QOS, STREAM_QOS  # noqa: E402
from vi_control.ros.launcher import NodeProcess  # noqa: E402
from vi_control.ros.messages import command_stamp, plan_to_message, split_seconds  # noqa: E402
from vi_control.ros.recorder import Recorder  # noqa: E402

pytestmark = pytest.mark.ros
STRONG = handover.STRONG


def test_plan_handover_on_a_running_clock(ros):
    """A plan starts at a stated future time; the controller enters it within ±1 step and the
    swing-up succeeds, run after run (10 runs: the slow variant and benchmarks/bench_ros.py --handover)."""
    runs = handover.handover_runs(ros, 2, DISCOVERY)
    assert all(handover.handover_ok(r) for r in runs), runs


@pytest.mark.slow
def test_plan_handover_ten_runs(ros):
    runs = handover.handover_runs(ros, 10, DISCOVERY)
    assert all(handover.handover_ok(r) for r in runs), runs


def test_start_up_order_never_matters(ros, tmp_path, pendulum_vi):
    """All six orders, 0.7 s apart, each in its own namespace (three at a time): the lockstep
    simulator never steps before the plan (nothing is commanded before a first valid state), the plan is
    made from the measured state at t = 0 and entered at k = 0, and the closed loop tracks it to round-off."""
    model = dict(model="pendulum", system_yaml=STRONG)
    # A lockstep run steps as fast as the controller answers, and the simulator keeps its last 1000 states for
    # late or slow readers: an unbounded run overwrote the plan phase before a recorder starved under load had
    # read it (1 sample of it, once). end_time makes the run 120 steps: the recorder always gets all of them.
    over = {
        "simulator_node": dict(model, dt=0.1, mode="lockstep", end_time=12.0),
        "planner_node": dict(model, task="task_pendulum_swingup", use_sim_time=True, startup_wait=60.0),
        "controller_node": dict(model, dt=0.1, trigger="joint_state", use_sim_time=True),
    }
    orders = list(itertools.permutations(over))
    for batch in (orders[:3], orders[3:]):
        runs = []
        for order in batch:
            i = orders.index(order)
            ns = f"{ros.ns}_{i}"
            rec = Recorder(["theta"], name=f"rec_{i}", namespace=ns)
            ros.recorders.append(rec)
            runs.append((order, ns, rec, {}))
        for step in range(3):  # the first node of every order, then the second, ...
            for order, ns, _, procs in runs:
                name = order[step]
                procs[name] = NodeProcess(
                    name, ros.domain, overrides=over[name], log_dir=str(tmp_path), name=f"{name}{ns[-2:]}", namespace=ns
                )
                ros.procs.append(procs[name])
            time.sleep(0.7)
            # a started simulator publishes its initial state (and republishes it while idle): wait until the
            # recorder has discovered it, or under load it may see the run only after its end (nothing to check)
            for _, _, rec, procs in runs:
                if "simulator_node" in procs:
                    assert rec.wait_for(lambda rec=rec: rec.states, 30.0), procs["simulator_node"].log()[-2000:]
        for order, _, rec, procs in runs:
            _check_start_up(order, rec, procs)
            for p in procs.values():
                p.stop()


def _check_start_up(order, rec, procs) -> None:
    ctrl, sim, planner = procs["controller_node"], procs["simulator_node"], procs["planner_node"]
    assert rec.wait_for(lambda: rec.plan() is not None, 120.0), (order, planner.log()[-2000:])
    plan = rec.plan()[1]
    t_end = plan.times[-1] + 0.5
    assert rec.wait_for(lambda: rec.states and rec.states[-1][1] >= t_end, 120.0), (
        f"{order}\n{ctrl.report()}\n{sim.report()}\n{planner.report()}"
    )
    assert plan.times[0] == 0.0, order  # planned from the unmoved start
    assert "planning from the measured state at t=0" in planner.log(), order
    assert handover.entries(ctrl.log())[0][1] == 0, order
    assert "safe command" not in ctrl.log(), (order, ctrl.log())
    with rec.lock:
        states = list(rec.states)
    # (a recorder that discovers the simulator late under load may miss a few samples; those it has must match)
    err = [abs(q[0] - plan.X[int(round(t / 0.1)), 0]) for _, t, q, _ in states if t <= plan.times[-1] + 1e-9]
    worst = int(np.argmax(err)) if err else -1  # (failed once, 2026-11-23: 4.3e-5; the logs say where it went off)
    assert len(err) > 30 and max(err) < 1e-6, (
        order,
        len(err),
        max(err, default=None),
        len(states),
        worst,
        [round(s[1], 3) for s in states[:60]],
        ctrl.log()[-3000:],
        sim.log()[-2000:],
    )  # the same discrete map


def test_a_republished_state_is_answered_again_with_a_command_naming_it(ros):
    """The lockstep start-up race (CI, 2026-11-23, order planner, simulator, controller): the controller answered the
    simulator's state before its command writer had matched the simulator's reader, the command went nowhere
    (volatile), and a republished state was answered only once: the loop stood still. Now every republish is
    answered, with the same command naming the state's stamp (messages.command_stamp), so a reader that matched late
    gets it, and a lockstep simulator steps once per state however many answers cross
    (test_ros_interfaces::test_lockstep_simulator_steps_once_per_state_whatever_answers_it). Here the test plays the
    lockstep simulator: state t = 1 republished until answered, then again; a second command reader appears."""
    model = dict(model="pendulum", system_yaml=STRONG)
    planner = ros.start("planner_node", **model, task="task_pendulum_swingup", use_sim_time=True)
    ctrl = ros.start("controller_node", **model, dt=0.1, trigger="joint_state", use_sim_time=True)
    rec = ros.recorder(["theta"])
    stamps: list = []  # the state each command received by `rec` names
    rec.create_subscription(
        Float64MultiArray, "effort_controller/commands", lambda m: stamps.append(command_stamp(m)), RECORD_VOLATILE_QOS
    )
    state_pub = rec.create_publisher(JointState, "joint_states", STREAM_QOS)  # volatile, as the simulator's idle one

    def republish() -> None:
        rec.publish_clock(1.0)
        msg = JointState(name=["theta"], position=[0.0], velocity=[0.0])
        msg.header.stamp.sec = 1
        state_pub.publish(msg)

    def answered(r, n: int) -> bool:
        republish()
        return r.wait_for(lambda: len(r.commands) >= n, 0.2)  # (0.2 s: the simulator's idle_publish_period)

    assert rec.wait_for(lambda: answered(rec, 1), 60.0), (ctrl.report(), planner.report())
    assert "entered plan" in ctrl.log(), ctrl.log()
    first = rec.commands[0][1]
    for n in (2, 3):  # the same state again: the same command again (republished until then: 0.2 s may not do)
        assert rec.wait_for(lambda n=n: answered(rec, n), 10.0), ctrl.log()
    late = ros.recorder(["theta"], name="late_reader", record_states=False)
    assert late.wait_for(lambda: late.count_publishers("effort_controller/commands") > 0, DISCOVERY)
    assert late.wait_for(lambda: answered(late, 1), 10.0), ctrl.log()
    assert all(np.array_equal(c, first) for _, c in rec.commands + late.commands), (rec.commands, late.commands)
    assert rec.wait_for(lambda: len(stamps) == len(rec.commands), 5.0)
    assert set(stamps) == {(1, 0)}, stamps  # each names the state t = 1 it answers


def test_the_first_state_republished_after_the_clock_moved_on_is_still_the_first_state(ros, pendulum_vi):
    """A lockstep simulator's first state is stamped 0, as are the states of a driver that never stamps, which the
    controller stamps on receipt. A republish of the first state sent before the first step can reach the controller
    after that step's /clock (DDS orders one writer's samples, not two topics'): stamped on receipt, it was a new
    state at t = Δt with the first state's positions, answered with U_1 + K_1 (X_1 ⊖ x_0), and the simulator's real
    state of t = Δt was then taken for its republish and answered with that same command: a step off the plan
    (flakehunt: 1.4e-5 rad in 3 of ~100 runs of test_ros_lockstep). A zero stamp right after the first state, the
    clock within state_timeout of 0, is now that state again. Here the test plays the lockstep simulator."""
    vi = pendulum_vi
    ctrl = ros.start("controller_node", model="pendulum", dt=vi.dt, trigger="joint_state", use_sim_time=True)
    rec = ros.recorder(["theta"])
    answers: list = []  # (the state it names, the command) of every command
    rec.create_subscription(
        Float64MultiArray,
        "effort_controller/commands",
        lambda m: answers.append((command_stamp(m), m.data[0])),
        RECORD_VOLATILE_QOS,
    )
    plan = _pendulum_hold_plan(vi, 50, t0=0.0)
    rec.create_publisher(UInt8MultiArray, "vi_planner/plan", LATCHED_QOS).publish(plan_to_message(plan, 3))
    assert ctrl.wait_for_log("accepted plan 3", DISCOVERY), ctrl.report()
    state_pub = rec.create_publisher(JointState, "joint_states", STREAM_QOS)
    q0, q1 = np.pi - 0.05, np.pi - 0.049

    def send(t: float, stamp: float, q: float, n: int, timeout: float = 10.0) -> bool:
        """The clock at t, a state stamped ``stamp``; whether there are ``n`` answers within ``timeout``."""
        rec.publish_clock(t)
        msg = JointState(name=["theta"], position=[q], velocity=[0.0])
        msg.header.stamp.sec, msg.header.stamp.nanosec = split_seconds(stamp)
        state_pub.publish(msg)
        return rec.wait_for(lambda: len(answers) >= n, timeout)

    # the first state until answered (its reader may match this writer after the writer matched it)
    assert rec.wait_for(lambda: send(0.0, 0.0, q0, 1, 0.2), DISCOVERY), ctrl.report()
    law = tracking_law(plan, vi)
    x0 = np.array([q0, -vi.dt / 2 * 9.8 * np.sin(q0)])  # q̇ = 0, no effort: held still, p = −(Δt/2) m g l sin q
    first = ((0, 0), pytest.approx(law.command(0, x0)[0][0], abs=1e-12))
    assert answers[0] == first
    assert send(vi.dt, 0.0, q0, len(answers) + 1), ctrl.report()  # the first step's clock, then t = 0 republished
    x1 = vi.state_from_configurations(np.array([q0]), np.array([q1]))
    send(vi.dt, vi.dt, q1, 0)  # the state of the first step
    step = (0, 100_000_000)
    assert rec.wait_for(lambda: any(a[0] == step for a in answers), 10.0), (answers, ctrl.report())
    assert next(a for a in answers if a[0] == step) == (step, pytest.approx(law.command(1, x1)[0][0], abs=1e-12))
    assert all(a == first for a in answers if a[0] != step), answers  # the rest: t = 0, answered alike


def _settled(rec, rate: float) -> bool:
    """The recorded joint has moved less than ``rate`` rad/s over the last second of stamps."""
    with rec.lock:
        states = list(rec.states)
    if len(states) < 2 or states[-1][1] - states[0][1] < 1.0:
        return False
    last = states[-1]
    first = next(s for s in reversed(states) if last[1] - s[1] >= 1.0)
    return abs(last[2][0] - first[2][0]) <= rate * (last[1] - first[1])


def test_joint_trajectory_and_goal_inputs(ros, pendulum_vi):
    """A JointTrajectory on the planner's ~/joint_trajectory becomes a VI-feasible plan with
    TV-LQR gains that the controller tracks; a JointState on ~/goal re-plans toward it."""
    vi = pendulum_vi  # Δt = 0.1: the planner's task and the simulator
    model = dict(model="pendulum", system_yaml=STRONG)
    ros.start("simulator_node", **model, dt=0.1, mode="lockstep")
    planner = ros.start(
        "planner_node",
        **model,
        task="task_pendulum_swingup",
        plan_on_startup=False,
        use_sim_time=True,
        expected_solve_time=3.0,
    )
    ctrl = ros.start("controller_node", **model, dt=0.1, trigger="joint_state", use_sim_time=True)
    rec = ros.recorder(["theta"])
    traj_pub = rec.create_publisher(JointTrajectory, "vi_planner/joint_trajectory", STREAM_QOS)
    goal_pub = rec.create_publisher(JointState, "vi_planner/goal", STREAM_QOS)
    assert rec.wait_for(
        lambda: rec.states and traj_pub.get_subscription_count() > 0 and goal_pub.get_subscription_count() > 0,
        DISCOVERY,
    ), planner.log()
    assert planner.wait_for_log("first state to plan from", DISCOVERY), planner.log()
    msg = JointTrajectory(joint_names=["theta"])
    for t, q in ((1.0, 0.5), (2.0, 1.0)):
        pt = JointTrajectoryPoint(positions=[q])
        pt.time_from_start.sec, pt.time_from_start.nanosec = int(t), int(round((t % 1) * 1e9))
        msg.points.append(pt)
    traj_pub.publish(msg)
    assert rec.wait_for(lambda: rec.plan() is not None, 60.0), planner.log()
    seq, plan, _ = rec.plan()
    assert plan.horizon == 25 and plan.converged  # 2 s of points and 0.5 s at rest on the last one
    for k in range(plan.horizon):  # VI-feasible: the plan is a trajectory of the discrete system
        assert np.allclose(vi.step(plan.X[k], plan.U[k]), plan.X[k + 1], atol=1e-9), k
    # through the points (the task's weights trade tracking against effort) and at rest on the last one
    assert abs(plan.X[10, 0] - 0.5) < 0.05 and abs(plan.X[20, 0] - 1.0) < 0.05 and abs(plan.X[25, 0] - 1.0) < 0.1
    # (from its start as the controller runs it: re-timed by whole steps if it came late with the robot at X_0)
    assert rec.wait_for(lambda: any(e[0] == seq for e in handover.entries(ctrl.log())), 30.0), ctrl.log()
    t0 = plan.times[0] + handover.retimed_steps(ctrl.log()).get(seq, 0) * plan.dt
    assert rec.wait_for(lambda: rec.states[-1][1] >= t0 + 3.0, 30.0), ctrl.log()
    with rec.lock:
        measured = {round(s[1], 6): s[2][0] for s in rec.states}
    assert abs(measured[round(t0 + 1.0, 6)] - plan.X[10, 0]) < 1e-6  # tracked (same discrete map)
    assert abs(measured[round(t0 + 3.0, 6)] - 1.0) < 0.15  # and held near the last point
    # the goal arrives with the robot at rest on its hold (a plan arriving late on the racing lockstep clock is then
    # re-timed: the robot is still at X_0); the hold's LQR settles over several seconds of sim time
    assert rec.wait_for(lambda: _settled(rec, 1e-3), 60.0), ctrl.log()
    goal = JointState(name=["theta"], position=[np.pi])
    goal_pub.publish(goal)
    assert rec.wait_for(lambda: rec.plan()[0] != seq, 60.0), planner.log()
    seq2, plan2, _ = rec.plan()
    assert abs(plan2.X[-1, 0] - np.pi) < 0.02
    # entered on time, or re-timed on arrival (a lockstep clock races ahead while the planner solves, at an
    # unpredictable rate; punctuality on a real-time clock is test_plan_handover_on_a_running_clock's subject)
    assert rec.wait_for(lambda: any(e[0] == seq2 for e in handover.entries(ctrl.log())), 30.0), ctrl.log()
    _, k, t_entry, _ = next(e for e in handover.entries(ctrl.log()) if e[0] == seq2)
    assert rec.wait_for(lambda: rec.states[-1][1] >= t_entry + (plan2.horizon - k) * vi.dt + 1.0, 60.0), ctrl.log()
    assert handover.upright_error(rec.states[-1][2][0]) < 0.02, ctrl.log()
