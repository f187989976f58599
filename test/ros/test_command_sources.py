"""Two controllers on one robot: a plant refuses the commands of two publishers that command within
``command_conflict_window`` of each other (supervision.PublisherSources), and says so. The rule at its boundary, the
message info it reads under each executor (real rclpy, in process), the simulator in lockstep in process; the MuJoCo
plant against a real controller over DDS: test_ros_mujoco_plant."""

from __future__ import annotations

import time

import numpy as np
import pytest

pytest.importorskip("rclpy")

from in_process import node_in_process, rclpy_context, record_logs  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402

from vi_control.ros.common import make_executor, with_message_info  # noqa: E402
from vi_control.ros.supervision import (  # noqa: E402
    ERROR,
    OK,
    CommandTiming,
    PublisherSources,
    publisher_gid,
    simulator_diagnostics,
)

A, B, C = b"a" * 16, b"b" * 16, b"c" * 16


def test_a_command_is_refused_while_another_publisher_commanded_within_the_window():
    s = PublisherSources(0.5)
    assert s.admit(A, 0.0) and s.admit(A, 0.25) and not s.conflict
    assert not s.admit(B, 0.75)  # A commanded 0.5 s before: just inside the window
    assert s.conflict and s.sources() == [A, B]
    assert not s.admit(A, 1.0)  # both refused while both command
    assert not s.admit(A, 1.25)  # B's last command 0.5 s before: still inside
    assert s.admit(A, 1.25 + 2**-20) and not s.conflict and s.sources() == []  # just outside: A alone again
    # a publisher that takes over just after the window (a restarted controller) is no conflict
    assert s.admit(C, 1.75 + 2**-19) and not s.conflict
    # the middleware names no publisher: admitted, and what was recorded forgotten
    assert not s.admit(A, 1.8) and s.sources() == [C, A]
    assert s.admit(None, 1.8) and not s.conflict and s.admit(A, 1.9)


def test_publishers_of_disjoint_parts_do_not_conflict_and_of_a_shared_one_do():
    """Joint states: an arm's driver (joints 0–6) and a gripper's (7, 8) on one topic are no conflict; a third
    publisher of every joint (a joint_state_publisher) conflicts with both, one of the arm's joints with the arm's
    only — and the gripper's states are used on meanwhile."""
    s = PublisherSources(0.5)
    arm, gripper = frozenset(range(7)), frozenset({7, 8})
    assert s.admit(A, 0.0, arm) and s.admit(B, 0.01, gripper) and s.admit(A, 0.02, arm) and not s.conflict
    assert not s.admit(C, 0.03, None) and s.sources() == [B, A, C]  # (by their last message)
    assert not s.admit(B, 0.04, gripper) and not s.admit(A, 0.05, arm)
    s = PublisherSources(0.5)
    assert s.admit(A, 0.0, arm) and s.admit(B, 0.01, gripper)
    assert not s.admit(C, 0.02, frozenset({3})) and s.sources() == [A, C]
    assert s.admit(B, 0.03, gripper) and not s.admit(A, 0.04, arm)  # the gripper's go on, the arm's do not
    assert s.admit(A, 0.52 + 2**-20, arm) and s.admit(B, 0.53, gripper) and not s.conflict  # C silent for the window


def test_a_zero_window_admits_every_publisher():
    s = PublisherSources(0.0)
    assert all(s.admit(g, 0.0) for g in (A, B, C, A)) and not s.conflict


def test_publisher_gid_reads_rclpys_message_info():
    assert publisher_gid({"publisher_gid": {"implementation_identifier": "rmw", "data": A}}) == A
    assert publisher_gid({"publisher_gid": {"data": [1, 2]}}) == bytes([1, 2])
    for info in (None, {}, {"publisher_gid": None}, {"publisher_gid": {"data": b""}}):
        assert publisher_gid(info) is None


def test_the_simulator_diagnostics_say_error_while_commands_conflict():
    args = dict(mode="realtime", requested_rtf=1.0, k=10, dt=0.01, timing=CommandTiming(0.01))
    level, status, values = simulator_diagnostics(
        True, False, window=(50, 0, 0, 1.0), counts=dict(conflicting_commands=3), conflicting=True, **args
    )
    assert level == ERROR and "two publishers" in status and values["conflicting_commands"] == 3
    level, _, _ = simulator_diagnostics(True, False, window=(50, 0, 0, 1.0), counts={}, **args)
    assert level == OK


@pytest.mark.parametrize("events", [True, False])
def test_with_message_info_gets_each_publishers_gid_under_both_executors(events, request):
    """Real rclpy, two publishers and a subscriber in one process: the callback gets (msg, info) and the two
    publishers' GIDs as the graph lists them — under the EventsExecutor (which passes the pair as one argument) and
    the single-threaded executor (two)."""
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.node import Node

    got: list[tuple[float, bytes | None]] = []
    with rclpy_context(request.node.name) as ctx:
        nodes = [Node(n, context=ctx) for n in ("talker_a", "talker_b", "listener")]
        pubs = [n.create_publisher(Float64MultiArray, "/cs/commands", 10) for n in nodes[:2]]
        nodes[2].create_subscription(
            Float64MultiArray,
            "/cs/commands",
            with_message_info(lambda m, i: got.append((m.data[0], publisher_gid(i)))),
            10,
        )
        ex = make_executor(ctx) if events else SingleThreadedExecutor(context=ctx)
        if events:
            assert type(ex).__name__ == "EventsExecutor"
        for n in nodes:
            ex.add_node(n)
        end = time.monotonic() + 20.0
        while time.monotonic() < end and not {1.0, 2.0} <= {v for v, _ in got}:
            pubs[0].publish(Float64MultiArray(data=[1.0]))
            pubs[1].publish(Float64MultiArray(data=[2.0]))
            ex.spin_once(timeout_sec=0.05)
        graph = {e.node_name: bytes(e.endpoint_gid) for e in nodes[2].get_publishers_info_by_topic("/cs/commands")}
        ex.shutdown(timeout_sec=1.0)
        for n in nodes:
            n.destroy_node()
    by_value = dict(got)
    assert by_value[1.0] == graph["talker_a"] and by_value[2.0] == graph["talker_b"] and len(graph) == 2, (got, graph)


def test_the_lockstep_simulator_refuses_two_publishers_and_steps_on_the_last_valid_command(request):
    """Lockstep, window 0.5 s: A's command steps with its torque; B's, 0.5 s later at most, is refused — the step
    still happens (as on a bad command: the loop goes on), under A's last command ('hold'), said once naming both
    publishers and counted; A's next command, while B is within the window, is refused too; once B has been silent
    longer than the window, A's command is applied again and that is said. Its command_timeout names no brakes in the
    refusal: lockstep has none."""
    from vi_control.ros.simulator_node import SimulatorNode

    params = ["-p", "model:=pendulum", "-p", "mode:=lockstep", "-p", "dt:=0.01", "-p", "initial_positions:=[0.5]"]
    # (command_timeout set: a lockstep simulator has no brakes — it waits for commands — and its refusal must not
    # name them)
    params += ["-p", "command_conflict_window:=0.3", "-p", "command_timeout:=0.2"]
    with node_in_process(request.node.name, SimulatorNode, params) as sim:
        logged = record_logs(sim).messages
        vi = sim.vi

        def command(u: float, gid: bytes) -> np.ndarray:
            x0 = sim.x.copy()
            sim.on_command(Float64MultiArray(data=[u]), {"publisher_gid": {"data": gid}})
            return x0

        x0 = command(1.0, A)
        assert np.array_equal(sim.x, vi.step(x0, np.array([1.0])))  # stepped under A's torque
        x0 = command(-3.0, B)
        assert np.array_equal(sim.x, vi.step(x0, np.array([1.0])))  # B refused: stepped under A's last command
        x0 = command(2.0, A)
        assert np.array_equal(sim.x, vi.step(x0, np.array([1.0])))  # A refused too while B is within the window
        errors = [m for _, m in logged if "2 publishers within command_conflict_window 0.3 s" in m]
        assert len(errors) == 1 and "refused (the last valid command)" in errors[0] and "brakes" not in errors[0], (
            logged
        )
        assert sim.counts["conflicting_commands"] == 2 and sim.sources.conflict
        time.sleep(0.35)
        x0 = command(2.0, A)
        assert np.array_equal(sim.x, vi.step(x0, np.array([2.0])))  # A alone again: applied
        assert any("from one publisher again" in m for _, m in logged), logged
        assert not sim.sources.conflict
        command(2.0, B)  # (a conflict again, ended by a command whose publisher the middleware does not name)
        x0 = sim.x.copy()
        sim.on_command(Float64MultiArray(data=[3.0]), {})  # (admitted: nothing to tell it apart by)
        assert np.array_equal(sim.x, vi.step(x0, np.array([3.0])))
        assert any("from one publisher again (a publisher the middleware gives no GID)" in m for _, m in logged)


def _state(t: float, names: list[str], q: list[float]) -> bytes:
    from rclpy.serialization import serialize_message
    from sensor_msgs.msg import JointState

    from vi_control.ros.messages import split_seconds

    m = JointState(name=names, position=q, velocity=[0.0] * len(q))
    m.header.stamp.sec, m.header.stamp.nanosec = split_seconds(t)
    return serialize_message(m)


def test_the_controller_reports_joint_states_of_one_joint_from_two_publishers(request):
    """The double pendulum's joints from two drivers (shoulder, elbow: disjoint) are no conflict; a third publisher of
    both joints (a joint_state_publisher's zeros) is — said once as an error naming the publishers, /diagnostics
    ERROR, its states counted — but reported only: every state still reaches the intake's checks. After the window
    without it: said, and the diagnostics leave ERROR. With the window 0 nothing is watched."""
    from vi_control.ros.controller_node import ControllerNode
    from vi_control.ros.supervision import controller_diagnostics

    params = ["-p", "model:=double_pendulum", "-p", "dt:=0.01", "-p", "joint_state_conflict_window:=0.3"]
    params += ["-p", "state_timeout:=30.0"]
    with node_in_process(request.node.name, ControllerNode, params) as node:
        logged = record_logs(node).messages

        def info(gid: bytes) -> dict:
            return {"publisher_gid": {"implementation_identifier": "rmw_fastrtps_cpp", "data": gid}}

        def level() -> int:
            return controller_diagnostics(
                True,
                node.runner,
                node.intake,
                node.counts,
                (0.0, 0.0),
                state_publishers=len(node.state_sources.conflicting),
            )[0]

        t = node._now() - 0.2
        for j in range(5):
            node.on_joint_state(_state(t + 0.01 * j, ["shoulder"], [0.1]), info(A))
            node.on_joint_state(_state(t + 0.01 * j + 0.005, ["elbow"], [0.2]), info(B))
        assert not node.state_sources.conflict and node.counts["conflicting_joint_states"] == 0
        assert not [m for _, m in logged if "publishers within joint_state_conflict_window" in m], logged
        states = node.intake.counts["states"]
        node.on_joint_state(_state(t + 0.06, ["shoulder", "elbow"], [0.0, 0.0]), info(C))
        node.on_joint_state(_state(t + 0.07, ["shoulder"], [0.1]), info(A))
        node.on_joint_state(_state(t + 0.075, ["elbow"], [0.2]), info(B))
        errors = [m for _, m in logged if "publishers within joint_state_conflict_window 0.3 s" in m]
        assert len(errors) == 1 and "from 3 publishers" in errors[0] and "joint_state_publisher" in errors[0], logged
        assert node.counts["conflicting_joint_states"] == 3 and level() == ERROR
        assert node.intake.counts["states"] == states + 3  # reported, not refused
        time.sleep(0.35)
        node.on_joint_state(_state(t + 0.5, ["shoulder"], [0.1]), info(A))
        node.on_joint_state(_state(t + 0.505, ["elbow"], [0.2]), info(B))
        assert any("one publisher per joint again" in m for _, m in logged), logged
        assert not node.state_sources.conflict and level() != ERROR
        node.on_joint_state(_state(t + 0.51, ["shoulder", "elbow"], [0.0, 0.0]), info(C))
        assert node.state_sources.conflict and level() == ERROR
        node.set_parameters([rclpy_parameter("joint_state_conflict_window", 0.0)])  # (live: not watched from now)
        assert not node.state_sources.conflict and level() != ERROR
        node.on_joint_state(_state(t + 0.52, ["shoulder", "elbow"], [0.0, 0.0]), info(C))
        assert not node.state_sources.conflict and node.counts["conflicting_joint_states"] == 4


def rclpy_parameter(name: str, value):
    from rclpy.parameter import Parameter

    return Parameter(name, value=value)


def test_the_planner_refuses_to_plan_from_joint_states_of_one_joint_from_two_publishers(request, tmp_path):
    """A goal request while the pendulum's joint comes from two publishers within ``joint_state_conflict_window``: it
    is refused with both named (the newest state may be the other publisher's), an MPC cycle skipped and counted;
    once only one has published for the window, the same request plans from its state. Window 0: not watched."""
    from test_nodes_in_process import _joint_state, _pendulum_mpc_planner

    from vi_control.ros.planner_node import PlannerNode
    from vi_control.ros.planner_requests import Request

    params = [*_pendulum_mpc_planner(tmp_path), "-p", "mode:=plan", "-p", "joint_state_conflict_window:=0.3"]
    with node_in_process(request.node.name, PlannerNode, params) as planner:
        statuses: list[dict] = []
        publish = planner.pub_status.publish

        def record(msg):
            statuses.append({v.key: v.value for v in msg.status[0].values} | {"message": msg.status[0].message})
            return publish(msg)

        planner.pub_status.publish = record

        def info(gid: bytes) -> dict:
            return {"publisher_gid": {"data": gid}}

        now = planner._now()
        planner.on_joint_state(_joint_state(now - 0.02, 0.1, 0.0), info(A))
        planner.on_joint_state(_joint_state(now - 0.01, 0.0, 0.0), info(B))  # (a joint_state_publisher's zero)
        planner.on_joint_state(_joint_state(now, 0.1, 0.0), info(A))
        why = planner.state_conflict()
        assert why is not None and "from 2 publishers within joint_state_conflict_window 0.3 s" in why, why
        planner._plan(planner._job(Request("goal", goal=[0.4]), "test", None, 0.0))
        assert statuses[-1]["state"] == "refused" and "no trustworthy measured state" in statuses[-1]["message"]
        assert planner.last_plan is None
        time.sleep(0.35)  # (B silent for longer than the window)
        planner.on_joint_state(_joint_state(planner._now() - 0.01, 0.1, 0.0), info(A))
        planner.on_joint_state(_joint_state(planner._now(), 0.1, 0.0), info(A))
        assert planner.state_conflict() is None
        planner._plan(planner._job(Request("goal", goal=[0.4]), "test", None, 0.0))
        assert statuses[-1]["state"] == "accepted", statuses[-1]
        assert planner.last_plan.X[0][0] == pytest.approx(0.1, abs=1e-9)  # (from A's state)
        planner.on_joint_state(_joint_state(planner._now(), 0.0, 0.0), info(B))
        assert planner.state_conflict() is not None
        planner.set_parameters([rclpy_parameter("joint_state_conflict_window", 0.0)])
        assert planner.state_conflict() is None


def test_a_bad_command_under_on_bad_command_zero_keeps_prescribed_joints_where_they_are(request):
    """The marionette (its strings' joints prescribed: their inputs are positions), lockstep, ``on_bad_command:
    zero``: a NaN command steps with zero torque and every prescribed joint's input at its position now — zero there
    would pull each string to 0 in one step."""
    from vi_control.ros.simulator_node import SimulatorNode

    params = ["-p", "model:=marionette", "-p", "mode:=lockstep", "-p", "on_bad_command:=zero"]
    with node_in_process(request.node.name, SimulatorNode, params) as sim:
        vi = sim.vi
        assert vi.nk > 0 and vi.n_torques < vi.nu
        u = np.full(vi.nu, 0.01)
        u[vi.n_torques :] = sim.x[: vi.nq][vi.idx_k] + 0.02  # (every prescribed joint moved off its start first)
        sim.on_command(Float64MultiArray(data=list(u)))
        x0 = sim.x.copy()
        assert np.all(x0[: vi.nq][vi.idx_k] != sim.x0[: vi.nq][vi.idx_k])  # (where they are is not their start)
        sim.on_command(Float64MultiArray(data=[float("nan")] * vi.nu))
        want = np.zeros(vi.nu)
        want[vi.n_torques :] = x0[: vi.nq][vi.idx_k]
        assert np.array_equal(sim.x, vi.step(x0, want))
        assert sim.counts["rejected_commands"] == 1
