"""Two controllers on one robot: a plant refuses the commands of two publishers that command within
``command_conflict_window`` of each other (supervision.CommandSources), and says so. The rule at its boundary, the
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
    CommandSources,
    CommandTiming,
    publisher_gid,
    simulator_diagnostics,
)

A, B, C = b"a" * 16, b"b" * 16, b"c" * 16


def test_a_command_is_refused_while_another_publisher_commanded_within_the_window():
    s = CommandSources(0.5)
    assert s.admit(A, 0.0) and s.admit(A, 0.25) and not s.conflict
    assert not s.admit(B, 0.75)  # A commanded 0.5 s before: just inside the window
    assert s.conflict and s.sources() == [A, B]
    assert not s.admit(A, 1.0)  # both refused while both command
    assert not s.admit(A, 1.25)  # B's last command 0.5 s before: still inside
    assert s.admit(A, 1.25 + 2**-20) and not s.conflict  # just outside: A alone again
    assert s.sources() == [A]
    # a publisher that takes over just after the window (a restarted controller) is no conflict
    assert s.admit(C, 1.75 + 2**-19) and s.sources() == [C]
    # the middleware names no publisher: admitted, and what was recorded forgotten
    assert not s.admit(A, 1.8) and s.admit(None, 1.8) and not s.conflict and s.sources() == []


def test_a_zero_window_admits_every_publisher():
    s = CommandSources(0.0)
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
    longer than the window, A's command is applied again and that is said."""
    from vi_control.ros.simulator_node import SimulatorNode

    params = ["-p", "model:=pendulum", "-p", "mode:=lockstep", "-p", "dt:=0.01", "-p", "initial_positions:=[0.5]"]
    params += ["-p", "command_conflict_window:=0.3"]
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
        assert len(errors) == 1 and "refused (the last valid command)" in errors[0], logged
        assert sim.counts["conflicting_commands"] == 2 and sim.sources.conflict
        time.sleep(0.35)
        x0 = command(2.0, A)
        assert np.array_equal(sim.x, vi.step(x0, np.array([2.0])))  # A alone again: applied
        assert any("from one publisher again" in m for _, m in logged), logged
        assert not sim.sources.conflict
