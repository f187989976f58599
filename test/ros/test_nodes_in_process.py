"""The nodes in this process on real rclpy (no node processes): a cleanup destroys every publisher, subscription,
service and timer the configure made, and a configure after it makes the same set again (no duplicates); the
controller's integrator follows a plan's Δt (rebuilt for another Δt, kept for the same); the planner re-publishes its
latest plan every ``republish_period`` while active, and stops when deactivated, and predicts the state at any instant
under the running plan; the recorder node records the topics its parameters name; ``make_executor`` gives stderr
back."""

import dataclasses
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("rclpy")

from in_process import node_in_process  # noqa: E402
from rclpy.lifecycle import TransitionCallbackReturn as R  # noqa: E402

from vi_control.control.plan import Plan  # noqa: E402
from vi_control.ros.common import PLAN_QOS  # noqa: E402


def _entities(node) -> dict[str, list[str]]:
    """The node's own entities by kind: topic or service names (sorted, repeated if created twice), timer count."""
    return dict(
        publishers=sorted(p.topic_name for p in node.publishers),
        subscriptions=sorted(s.topic_name for s in node.subscriptions),
        services=sorted(s.srv_name for s in node.services),
        timers=[str(len(list(node.timers)))],
    )


def _make(kind: str):
    if kind == "controller":
        from vi_control.ros.controller_node import ControllerNode

        return ControllerNode, ["-p", "model:=pendulum"]
    if kind == "simulator":
        from vi_control.ros.simulator_node import SimulatorNode

        return SimulatorNode, ["-p", "model:=pendulum", "-p", "mode:=lockstep"]
    from vi_control.ros.planner_node import PlannerNode

    return PlannerNode, ["-p", "plan_on_startup:=false", "-p", "republish_period:=0.5"]


@pytest.mark.parametrize("kind", ["controller", "simulator", "planner"])
def test_cleanup_destroys_what_configure_made_and_configure_makes_it_again(kind, request):
    cls, params = _make(kind)
    with node_in_process(request.node.name, cls, params) as node:
        active = _entities(node)  # autostarted: configured and active
        assert node.trigger_deactivate() == R.SUCCESS
        assert node.trigger_cleanup() == R.SUCCESS
        bare = _entities(node)
        own = {k: sorted(set(active[k]) - set(bare[k])) for k in ("publishers", "subscriptions", "services")}
        # configure made topics of its own (commands, states, plans, diagnostics) and cleanup took every one back
        assert own["publishers"] and own["subscriptions"], (active, bare)
        for k in ("publishers", "subscriptions", "services"):
            assert not [n for n in bare[k] if n in own[k]], (k, bare[k])
        assert int(bare["timers"][0]) < int(active["timers"][0]) or active["timers"] == ["0"], (active, bare)
        assert node.trigger_configure() == R.SUCCESS
        assert node.trigger_activate() == R.SUCCESS
        assert _entities(node) == active  # the same set again, none twice


def _hanging_plan(robot, dt: float, n: int = 5) -> Plan:
    """The pendulum hanging at rest: the state (q, p) = 0, no input, zero gains — admitted by every limit."""
    return Plan(
        times=dt * np.arange(n + 1),
        X=np.zeros((n + 1, 2)),
        U=np.zeros((n, 1)),
        K=np.zeros((n, 1, 2)),
        dt=dt,
        model_name=robot.name,
        model_hash=robot.hash,
        joint_names=list(robot.joint_names),
        input_names=list(robot.actuated),
        U_final=np.zeros(1),
        K_final=np.zeros((1, 2)),
    )


def test_a_plan_for_another_model_is_refused_by_its_number(controller_in_process):
    """A plan made for another model (its content hash differs) is refused with its sequence number — the refusal the
    planner's request status reads (``on_refuse``: the controller's ~/plan_refused) — and not run."""
    import dataclasses

    from vi_control.ros.messages import plan_to_message

    node = controller_in_process
    told: list[tuple[int, str]] = []
    node.runner.on_refuse = lambda seq, why, kind: told.append((seq, why))
    other = dataclasses.replace(_hanging_plan(node.robot, node.vi.dt), model_hash="0" * 16)
    node._accept_plan(plan_to_message(other, 7))
    assert [seq for seq, _ in told] == [7] and "plan 7 was made for model 0000000000000000" in told[0][1], told
    assert node.runner.pending is None and node.runner.law is None


def test_a_lockstep_controller_steps_the_simulator_to_a_plan_that_starts_later(request):
    """Lockstep (trigger joint_state on a simulation clock): with no plan the controller commands nothing — the
    simulator steps only on a command and waits for the first plan, the robot still — but a plan that waits for a
    later start while none runs is stepped to under the safe command (the hold), one command per state, and entered
    at its start. Uncommanded, the controller would wait for a state at that start and the simulator for a command:
    for good."""
    from rclpy.parameter import Parameter

    from vi_control.ros.controller_node import ControllerNode

    params = ["-p", "model:=pendulum", "-p", "trigger:=joint_state", "-p", "use_sim_time:=true"]
    with node_in_process(request.node.name, ControllerNode, params) as node:
        assert node.lockstep()
        assert node.set_parameters_atomically([Parameter("state_timeout", value=30.0)]).successful
        dt, sent = node.vi.dt, []
        node.publish = lambda u: sent.append(np.array(u, float))
        node.on_joint_state(_joint_state(0.0, 0.0, 0.0))  # (the simulation clock has not started: now = 0)
        assert sent == [] and node.runner.law is None  # no plan: nothing commanded
        node.runner.queue(1, _hanging_plan(node.robot, dt).shifted(3 * dt), False)  # starts 3 steps on
        for k in range(1, 3):
            node.on_joint_state(_joint_state(k * dt, 0.0, 0.0))
            assert len(sent) == k and node.runner.law is None  # the hold (at rest: its gravity torque 0)
        assert np.abs(sent[-1]).max() < 1e-9 and node.counts["hold"] == 2
        node.on_joint_state(_joint_state(3 * dt, 0.0, 0.0))
        assert node.runner.active_seq == 1 and len(sent) == 3  # entered at its start, commanded by its law


def test_the_controller_rebuilds_its_integrator_for_a_plan_of_another_dt_only(controller_in_process):
    from vi_control.ros.messages import plan_to_message

    node = controller_in_process
    dt0, vi0 = node.vi.dt, node.vi
    node._accept_plan(plan_to_message(_hanging_plan(node.robot, dt0), 1))
    assert node.vi is vi0  # the same Δt: the integrator (and its compiled step) kept
    other = 2.0 * dt0
    node._accept_plan(plan_to_message(_hanging_plan(node.robot, other), 2))
    node._building[1].result(timeout=120)  # (built in the background: a_plan_of_another_dt_is_entered_once_...)
    node.tick()  # (the executor's thread takes it)
    assert node.vi is not vi0 and node.vi.dt == other
    # the state estimate and the law run on the rebuilt system
    assert node.intake.vi is node.vi and node.runner.vi is node.vi


def test_the_planner_republishes_its_latest_plan_while_active(request):
    """republish_period 0.2 s: the start-up plan arrives once when published and again every 0.2 s; deactivated,
    nothing more."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from std_msgs.msg import UInt8MultiArray

    from vi_control.ros.common import LATCHED_QOS
    from vi_control.ros.planner_node import PlannerNode

    params = ["-p", "republish_period:=0.2", "-p", "startup_wait:=0.0", "-p", "controller_name:=''"]
    with node_in_process(request.node.name, PlannerNode, params) as planner:
        listener = rclpy.create_node("listener", context=planner.context)
        got: list[bytes] = []
        listener.create_subscription(
            UInt8MultiArray, planner.pub_plan.topic_name, lambda m: got.append(bytes(m.data)), LATCHED_QOS
        )
        ex = SingleThreadedExecutor(context=planner.context)
        ex.add_node(planner)
        ex.add_node(listener)

        def spin(seconds: float, until=lambda: False) -> None:
            end = time.monotonic() + seconds
            while time.monotonic() < end and not until():
                ex.spin_once(timeout_sec=0.02)

        spin(60.0, lambda: len(got) >= 1)  # the start-up plan (solved in the planner's worker)
        assert got, "no plan within 60 s"
        first = len(got)
        # 0.2 s apart: 5 in 1.1 s unloaded; the count is not timed (a 2-worker run once had fewer in 1.1 s)
        spin(10.0, lambda: len(got) - first >= 4)
        assert len(got) - first >= 4, len(got)
        assert all(g == got[0] for g in got)  # the same plan each time
        assert planner.trigger_deactivate() == R.SUCCESS
        spin(0.1)
        n = len(got)
        spin(0.7)
        assert len(got) == n
        ex.shutdown()
        listener.destroy_node()


def test_making_the_executor_leaves_the_callers_stderr_in_place(monkeypatch):
    """rclpy's EventsExecutor enables faulthandler, which needs a stderr with a file descriptor: make_executor lends
    it the process's real one and gives back what the caller had (a notebook's or pytest's capture)."""
    import io
    import sys

    from vi_control.ros.common import make_executor

    captured = io.StringIO()  # no fileno(): what a notebook's stderr is
    monkeypatch.setattr(sys, "stderr", captured)
    ex = make_executor()
    assert sys.stderr is captured
    ex.shutdown()


def test_the_recorder_node_records_the_topics_its_parameters_name(request, tmp_path):
    """vi_recorder's parameters choose the file and the controller's and planner's names: a command published on
    <controller_name>/commands is in the file (read back with the mcap reader) under the node's namespace."""
    import rclpy
    from mcap.reader import make_reader
    from rclpy.executors import SingleThreadedExecutor
    from std_msgs.msg import Float64MultiArray

    from vi_control.ros.recorder_node import RecorderNode

    path = tmp_path / "run.mcap"
    params = ["-p", f"path:={path}", "-p", "controller_name:=arm_controller", "-p", "planner_name:=arm_planner"]
    with node_in_process(request.node.name, RecorderNode, params) as rec:
        ns = rec.get_namespace()
        talker = rclpy.create_node("talker", namespace=ns, context=rec.context)
        pub = talker.create_publisher(Float64MultiArray, "arm_controller/commands", 10)
        ex = SingleThreadedExecutor(context=rec.context)
        ex.add_node(rec)
        ex.add_node(talker)
        end = time.monotonic() + 20.0
        while time.monotonic() < end and rec.file.counts[f"{ns}/arm_controller/commands"] < 3:
            pub.publish(Float64MultiArray(data=[1.5, -2.25]))
            ex.spin_once(timeout_sec=0.05)
        ex.shutdown()
        talker.destroy_node()
    with open(path, "rb") as f:
        reader = make_reader(f)
        topics = {c.topic for c in reader.get_summary().channels.values()}
        commands = [m for _, ch, m in reader.iter_messages() if ch.topic == f"{ns}/arm_controller/commands"]
    assert {f"{ns}/arm_controller/commands", f"{ns}/arm_planner/plan", f"{ns}/arm_planner/trajectory"} <= topics
    assert len(commands) >= 3


def test_the_planners_prediction_to_any_instant(request):
    """predict_at: at a whole number of steps after the measurement it is ``predict`` (the running plan's law at
    each step's own time, here a time-varying feedforward), between two steps the linear interpolation of the two."""
    from vi_control.ros.planner_node import PlannerNode

    params = ["-p", "plan_on_startup:=false", "-p", "controller_name:=''"]
    with node_in_process(request.node.name, PlannerNode, params) as planner:
        vi, robot = planner.vi, planner.robot
        dt, n = vi.dt, 12
        U = 0.5 * np.sin(np.arange(n) / 3.0)[:, None]
        X, _ = vi.simulate(np.array([0.3, 0.0]), U)
        plan = dataclasses.replace(_hanging_plan(robot, dt, n), X=X, U=U, times=1.0 + dt * np.arange(n + 1))
        planner.schedule.add(plan)
        x = X[2] + np.array([0.01, 0.0])  # measured off the plan at its third knot
        t = 1.0 + 2 * dt
        whole = planner.predict_at(t, x, t + 5 * dt)
        np.testing.assert_array_equal(whole, planner.schedule.predict(vi, t, x, 5, t + 5 * dt))
        ref, state = [], x
        for k in range(2, 8):  # by hand: the plan's feedforward at each step (zero gains)
            ref.append(state)
            state = vi.step(state, U[k])
        np.testing.assert_allclose(whole, ref[5], rtol=0, atol=1e-12)
        between = planner.predict_at(t, x, t + 4.25 * dt)
        np.testing.assert_allclose(between, ref[4] + 0.25 * (ref[5] - ref[4]), rtol=0, atol=1e-12)


def _joint_state(t: float, q, qdot, names=("theta",)) -> bytes:
    """A JointState stamped ``t``, serialized as the nodes' joint_states callbacks take it."""
    from rclpy.serialization import serialize_message
    from sensor_msgs.msg import JointState

    from vi_control.ros.messages import split_seconds

    m = JointState(name=list(names), position=np.atleast_1d(q).tolist(), velocity=np.atleast_1d(qdot).tolist())
    m.header.stamp.sec, m.header.stamp.nanosec = split_seconds(t)
    return serialize_message(m)


def _record_statuses(planner, monkeypatch) -> list[dict]:
    """The planner's ~/request_status values as it publishes them (each a dict: request, kind, source, state, …)."""
    statuses: list[dict] = []
    publish = planner.pub_status.publish

    def record(msg):
        statuses.append({v.key: v.value for v in msg.status[0].values})
        return publish(msg)

    monkeypatch.setattr(planner.pub_status, "publish", record)
    return statuses


def _pendulum_mpc_planner(tmp_path, mpc: str = "{period: 0.1, max_iterations: 5}") -> list[str]:
    """Planner arguments: mode mpc on a pendulum task (0.5 rad in 2 s, a cycle every 0.1 s; ``mpc``: its section), no
    start-up plan, no controller to wait for."""
    task = tmp_path / "pendulum_mpc.yaml"
    task.write_text(
        "name: pendulum_mpc\nmodel: pendulum\ndt: 0.1\nhorizon: 20\nstart: {q: [0.0], qdot: [0.0]}\n"
        "goal: {q: [0.5]}\nreference: {type: goal}\nweights: {Q: [10.0, 1.0], R: 1.0, Qf: [100.0, 1.0]}\n"
        f"mpc: {mpc}\n"
    )
    return ["-p", f"task:={task}", "-p", "mode:=mpc", "-p", "plan_on_startup:=false", "-p", "controller_name:=''"]


def test_an_mpc_cycle_without_a_joint_state_is_skipped_not_the_task_restarted(request, tmp_path):
    """Mode mpc, no usable joint state when a cycle runs (none received, or the newest one refused): the cycle is
    skipped with a warning. Solved anyway it was the task's first plan again — from the task's start pose, on a new
    time origin — which a controller would start while the arm is elsewhere."""
    from log_record import RecordingLogger

    from vi_control.ros.planner_node import PlannerNode
    from vi_control.ros.planner_requests import Request

    params = _pendulum_mpc_planner(tmp_path)
    with node_in_process(request.node.name, PlannerNode, params) as planner:
        planner.warn.logger = logged = RecordingLogger(planner.warn.logger)
        assert planner.mpc is not None and planner.mpc.t0 is None and not planner.states
        planner._plan(planner._job(Request("mpc"), "mpc", None, 0.0))
        assert planner.mpc.t0 is None and planner._latest is None and planner.last_plan is None
        assert "mpc: no usable joint state" in logged.text() and "cycle skipped" in logged.text()


def test_a_cycle_refused_after_the_tasks_end_with_nothing_running_plans_the_task_again(request, tmp_path):
    """Mode mpc, shrinking horizon: a cycle refused as beyond the limits after the task's end while no plan of ours
    runs (the robot was stopped on the way and is held; every min_horizon window would ask for the rest of the
    motion in a few steps) plans the task again from the measured state — a new run, a new deadline — once per
    run. Not before the task's end, not while a plan of ours still runs, not while the cycles follow a request, not
    while a request waits to be solved."""
    from log_record import RecordingLogger

    from vi_control.ros.planner_node import PlannerNode
    from vi_control.ros.planner_requests import Request

    params = _pendulum_mpc_planner(tmp_path, "{period: 0.1, max_iterations: 5, shrinking: true, min_horizon: 2}")
    with node_in_process(request.node.name, PlannerNode, params) as planner:
        planner.warn.logger = logged = RecordingLogger(planner.warn.logger)
        planner.on_joint_state(_joint_state(planner._now(), 0.0, 0.0))
        planner._plan(planner._job(Request("task"), "test", None, 0.0))
        first, t0 = planner.last_plan, planner.mpc.t0
        end = t0 + 20 * 0.1  # (the first plan's end too)
        assert first.times[-1] == pytest.approx(end)
        planner._maybe_restart_task(end - 0.1)  # before the task's end
        planner.last_plan = first.shifted(t0 + 0.5)  # a plan of ours that runs past the end
        planner._maybe_restart_task(end)
        planner.last_plan, planner.mpc.followed = first, True  # the cycles follow a joint trajectory request
        planner._followed = Request("trajectory")
        planner._maybe_restart_task(end)
        assert planner.mpc_counts["restarts"] == 0 and planner.mpc.t0 == t0 and planner.last_plan is first
        planner.mpc.followed = False
        now = planner._now()
        planner.mpc.t0 = t0 = now - 3.0  # the task began 3 s ago: it ended 1 s ago
        planner.last_plan = first.shifted(now - 2.5)  # and our last plan 0.5 s ago: the arm held since
        planner.on_joint_state(_joint_state(now, 0.2, 0.0))  # (0.3 rad short of the goal)
        planner._pending = planner._job(Request("task"), "a request that waits", None, 0.0)
        planner._maybe_restart_task(now)  # (it plans next: not superseded by a restart)
        assert planner.mpc_counts["restarts"] == 0
        planner._pending = None
        planner._maybe_restart_task(now)
        assert planner.mpc_counts["restarts"] == 1 and "the task is planned again" in logged.text()
        deadline = time.monotonic() + 30.0
        while planner._worker is not None and time.monotonic() < deadline:  # (the task request's solve)
            time.sleep(0.02)
        again = planner.last_plan
        assert again is not first and planner.mpc.t0 != t0 and again.X[0][0] == pytest.approx(0.2, abs=1e-9)
        assert planner.mpc.t0 == pytest.approx(float(again.times[0]))  # (planned from the held arm: a new run)
        planner.mpc.t0, planner.last_plan = t0, first.shifted(now - 2.5)  # as if that plan had been refused too:
        planner._maybe_restart_task(now)  # the run it restarted is not restarted again
        assert planner.mpc_counts["restarts"] == 1


def test_a_task_plan_that_ended_without_the_controllers_entry_is_planned_again(request, tmp_path):
    """Mode mpc with a controller to wait for: the cycles wait for its ``plan_entered`` of the task's plan. If that
    plan ends without it (no controller ran, or one that started since dropped it as ended: a CI run held the panda
    120 s so, its planner waiting), the task is planned again from the measured state — a plan a controller can
    enter — said and counted (``mpc_restarts``); not while that plan still runs, nor while the cycles follow a
    request's plan (the task is not what was asked for last)."""
    from log_record import RecordingLogger

    from vi_control.ros.planner_node import PlannerNode
    from vi_control.ros.planner_requests import Request

    params = _pendulum_mpc_planner(tmp_path) + ["-p", "controller_name:=vi_controller", "-p", "start_delay:=0.0"]
    with node_in_process(request.node.name, PlannerNode, params) as planner:
        planner.warn.logger = logged = RecordingLogger(planner.warn.logger)
        planner.on_joint_state(_joint_state(planner._now(), 0.0, 0.0))
        planner._plan(planner._job(Request("task"), "test", None, 0.0))
        first = planner.last_plan
        assert first is not None and planner.entered_seq is None
        planner._mpc_tick()  # (it runs: wait)
        assert planner._worker is None and planner.mpc_counts["restarts"] == 0 and planner.last_plan is first
        assert "waiting for vi_controller/plan_entered" in logged.text()
        now = planner._now()
        planner.last_plan = ended = first.shifted(now - 2.5)  # (ended 0.5 s ago, never entered)
        planner.on_joint_state(_joint_state(now, 0.1, 0.0))
        planner.mpc.followed = True  # (a joint trajectory request's plan: not the task, nor planned again — held)
        planner._followed = Request("trajectory")
        planner._mpc_tick()
        assert planner._worker is None and planner.mpc_counts["restarts"] == 0 and planner.last_plan is ended
        assert "a joint trajectory request is not planned again by itself" in logged.text()
        planner.mpc.followed = False
        planner._mpc_tick()
        deadline = time.monotonic() + 30.0
        while planner._worker is not None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert planner.mpc_counts["restarts"] == 1 and "without vi_controller entering it" in logged.text()
        again = planner.last_plan
        assert again is not ended and again.X[0][0] == pytest.approx(0.1, abs=1e-9) and again.times[-1] > now
        planner._mpc_tick()  # (the new plan runs: wait again)
        assert planner._worker is None and planner.mpc_counts["restarts"] == 1


def test_a_restart_overtaken_by_the_controllers_late_entry_of_the_plan_is_dropped(request, tmp_path, monkeypatch):
    """Mode mpc: the task's plan ended without the controller's entry, so the task is planned again (a restart) — but
    during that solve the controller enters the ended plan after all (it reached it late and re-timed it to start
    from the held robot, CI s61a). The restart's plan, from the held state before that entry, would replace the
    running plan mid-motion with a new task plan whose first command is not the running law's: it is dropped
    ('superseded', said why), the re-timed plan stays the one the cycles continue."""
    import threading

    from vi_control.ros.messages import plan_entered_message
    from vi_control.ros.planner_node import PlannerNode
    from vi_control.ros.planner_requests import Request

    params = _pendulum_mpc_planner(tmp_path) + ["-p", "controller_name:=vi_controller", "-p", "start_delay:=0.0"]
    with node_in_process(request.node.name, PlannerNode, params) as planner:
        statuses = _record_statuses(planner, monkeypatch)
        planner.on_joint_state(_joint_state(planner._now(), 0.0, 0.0))
        planner._plan(planner._job(Request("task"), "test", None, 0.0))
        seq, now = planner.last_seq, planner._now()
        planner.last_plan = ended = planner.last_plan.shifted(now - 2.5)  # (ended 0.5 s ago, never entered)
        planner.on_joint_state(_joint_state(now, 0.0, 0.0))  # (held at its start)
        started, release, real_solve = threading.Event(), threading.Event(), planner._mpc_solve

        def gated_solve(*args, **kwargs):
            started.set()
            assert release.wait(60.0)
            return real_solve(*args, **kwargs)

        monkeypatch.setattr(planner, "_mpc_solve", gated_solve)
        planner._mpc_tick()
        assert started.wait(60.0) and planner.mpc_counts["restarts"] == 1
        worker = planner._worker
        t0 = float(ended.times[0]) + 60 * planner.vi.dt  # the controller re-timed it by 60 steps
        planner.on_plan_entered(plan_entered_message(seq, t0))
        release.set()
        worker.join(60.0)
        assert not worker.is_alive() and planner._worker is None
        assert planner.last_seq == seq and planner.entered_seq == seq  # (no plan of the restart went out)
        assert float(planner.last_plan.times[0]) == pytest.approx(t0, abs=1e-9)
        restart = [s for s in statuses if s["source"] == "mpc restart"]
        assert [s["state"] for s in restart] == ["planning", "superseded"], restart
        assert f"vi_controller entered plan {seq} after all" in restart[-1]["reason"], restart


def test_an_mpc_restart_waiting_for_the_robot_to_rest_is_dropped_when_the_controller_enters_the_plan(
    request, tmp_path, monkeypatch
):
    """The restart of a task whose plan ended unentered waits for a moving robot to rest (no plan of ours runs, so
    far as the planner knows) — and the motion is that plan's, entered late by the controller after all: on its
    ``plan_entered`` the restart is dropped at once ('superseded'), not planned once the plan is over, and the worker
    is free for the MPC cycles that now continue it."""
    from in_process import record_logs

    from vi_control.ros.messages import plan_entered_message
    from vi_control.ros.planner_node import PlannerNode
    from vi_control.ros.planner_requests import Request

    params = _pendulum_mpc_planner(tmp_path) + [
        "-p", "controller_name:=vi_controller", "-p", "start_delay:=0.0", "-p", "state_estimate:=velocities"
    ]  # fmt: skip
    with node_in_process(request.node.name, PlannerNode, params) as planner:
        logged = record_logs(planner).messages
        statuses = _record_statuses(planner, monkeypatch)
        planner.on_joint_state(_joint_state(planner._now(), 0.0, 0.0))
        planner._plan(planner._job(Request("task"), "test", None, 0.0))
        seq, now = planner.last_seq, planner._now()
        planner.last_plan = ended = planner.last_plan.shifted(now - 2.5)  # (ended 0.5 s ago, never entered)
        planner.states.clear()
        planner.on_joint_state(_joint_state(now, 0.05, 1.0))  # moving: the controller runs that plan, re-timed
        planner._mpc_tick()
        end = time.monotonic() + 30.0
        while not any("the robot moves" in m for _, m in logged) and time.monotonic() < end:
            time.sleep(0.01)
        assert planner.mpc_counts["restarts"] == 1 and planner._worker is not None, logged
        planner.on_plan_entered(plan_entered_message(seq, float(ended.times[0]) + 60 * planner.vi.dt))
        end = time.monotonic() + 5.0
        while planner._worker is not None and time.monotonic() < end:
            time.sleep(0.01)
        assert planner._worker is None and planner.last_seq == seq and planner.entered_seq == seq
        restart = [s["state"] for s in statuses if s["source"] == "mpc restart"]
        assert restart == ["planning", "superseded"], statuses


def test_a_planner_with_no_plan_running_waits_for_a_moving_robot_to_rest_before_planning(
    request, tmp_path, monkeypatch
):
    """No plan of this planner runs (a planner restarted mid-motion) and the robot moves: a plan from this state
    would start start_delay and the solve later from where the robot was, and be handed over from the running plan
    with a jump. The request waits, said once, until every joint is at most ``rest_velocity`` (0.05 rad/s here:
    0.049 plans at once, 0.051 waits), and is planned from the state at rest; a newer request while it waits
    supersedes it. ``rest_velocity`` 0: never waits."""
    from in_process import record_logs
    from rclpy.parameter import Parameter

    from vi_control.ros.planner_node import PlannerNode
    from vi_control.ros.planner_requests import Request

    params = _pendulum_mpc_planner(tmp_path) + ["-p", "mode:=plan", "-p", "state_estimate:=velocities"]
    with node_in_process(request.node.name, PlannerNode, params) as planner:
        logged = record_logs(planner).messages
        statuses = _record_statuses(planner, monkeypatch)
        assert planner.p["rest_velocity"] == 0.05

        def states(q: float, qdot: float) -> None:
            planner.states.clear()
            planner.on_joint_state(_joint_state(planner._now(), q, qdot))

        def solved(job, seconds: float = 60.0) -> bool:
            end = time.monotonic() + seconds
            while time.monotonic() < end and not any(
                s["request"] == str(job.id) and s["state"] in ("accepted", "superseded", "refused") for s in statuses
            ):
                time.sleep(0.01)
            return planner._worker is None or any(s["request"] == str(job.id) for s in statuses)

        def outcome(job) -> list[str]:
            return [s["state"] for s in statuses if s["request"] == str(job.id)]

        states(0.1, 0.049)  # (just inside: at rest)
        job = planner._submit(Request("task"), "test")
        assert solved(job) and outcome(job)[-1] == "accepted", statuses
        assert planner.last_plan.X[0][0] == pytest.approx(0.1, abs=1e-9)
        assert not any("the robot moves" in m for _, m in logged)
        states(0.2, 0.051)  # (just outside: moving under a plan this planner did not make)
        planner.last_plan = None  # (a restarted planner: none of its own)
        waiting = planner._submit(Request("task"), "test")
        time.sleep(0.5)
        assert outcome(waiting) == ["planning"] and planner.last_plan is None, statuses
        assert sum("the robot moves (theta at 0.051 per second" in m for _, m in logged) == 1, logged
        newer = planner._submit(Request("task"), "~/replan")  # supersedes the one that waits
        time.sleep(0.3)
        assert outcome(waiting)[-1] == "superseded", statuses
        assert outcome(newer) == ["queued", "planning"] and planner.last_plan is None, statuses
        states(0.3, 0.0)  # at rest: planned from here
        assert solved(newer) and outcome(newer)[-1] == "accepted", statuses
        assert planner.last_plan.X[0][0] == pytest.approx(0.3, abs=1e-9)
        assert any("the robot is at rest" in m for _, m in logged), logged
        assert planner.set_parameters_atomically([Parameter("rest_velocity", value=0.0)]).successful
        states(0.4, 2.0)
        planner.last_plan = None
        job = planner._submit(Request("task"), "test")  # (0: never waits)
        assert solved(job) and outcome(job)[-1] == "accepted", statuses
        assert planner.last_plan.X[0][0] == pytest.approx(0.4, abs=1e-9)


def test_a_goal_request_plan_that_ended_without_the_controllers_entry_is_planned_again_toward_that_goal(
    request, tmp_path
):
    """Mode mpc, the cycles following a ~/goal request's plan that ended without the controller's entry (a controller
    restarted meanwhile dropped it as ended): that goal — not the task's — is planned again from the measured state,
    a new run the cycles follow, said and counted; before, the planner waited for the entry for good and the arm was
    held short of the goal the user asked for."""
    from log_record import RecordingLogger

    from vi_control.ros.planner_node import PlannerNode
    from vi_control.ros.planner_requests import Request

    params = _pendulum_mpc_planner(tmp_path) + ["-p", "controller_name:=vi_controller", "-p", "start_delay:=0.0"]
    with node_in_process(request.node.name, PlannerNode, params) as planner:
        planner.warn.logger = logged = RecordingLogger(planner.warn.logger)
        planner.on_joint_state(_joint_state(planner._now(), 0.0, 0.0))
        goal = np.array([-0.4])  # (the task's goal is +0.5)
        planner._plan(planner._job(Request("goal", goal=goal), "~/goal", None, 0.0))
        asked = planner.last_plan
        assert planner.mpc.followed and planner.entered_seq is None
        assert asked.X[-1][0] == pytest.approx(-0.4, abs=0.05)
        planner._mpc_tick()  # (it runs: wait for its entry)
        assert planner._worker is None and planner.mpc_counts["restarts"] == 0
        now = planner._now()
        planner.last_plan = ended = asked.shifted(now - 2.5)  # (ended 0.5 s ago, never entered)
        planner.on_joint_state(_joint_state(now, -0.1, 0.0))  # (held 0.3 rad short of the goal)
        planner._mpc_tick()
        deadline = time.monotonic() + 30.0
        while planner._worker is not None and time.monotonic() < deadline:
            time.sleep(0.02)
        text = logged.text()
        assert planner.mpc_counts["restarts"] == 1 and "the request's plan ended at" in text, text
        assert "the goal request is planned again from the measured state" in text, text
        again = planner.last_plan
        assert again is not ended and again.times[-1] > now and planner.mpc.followed
        assert again.X[0][0] == pytest.approx(-0.1, abs=1e-9) and again.X[-1][0] == pytest.approx(-0.4, abs=0.05)
        assert planner._followed.kind == "goal" and np.array_equal(planner._followed.goal, goal)
        planner._mpc_tick()  # (the new plan runs: wait again)
        assert planner._worker is None and planner.mpc_counts["restarts"] == 1


def test_a_plan_the_controller_refuses_turns_its_request_status_to_refused_with_the_reason(request, tmp_path):
    """The controller's ~/plan_refused (seq, why) of a plan this planner published: the request that made it, which
    read 'accepted', gets 'refused' with the controller's reason and the plan's number, once; a refusal of a plan
    it never published (another planner's) changes nothing, and one that names no plan is ignored with a warning."""
    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
    from log_record import RecordingLogger
    from rclpy.executors import SingleThreadedExecutor

    from vi_control.ros.messages import plan_refused_message
    from vi_control.ros.planner_node import STATUS_QOS, PlannerNode
    from vi_control.ros.planner_requests import Request

    params = _pendulum_mpc_planner(tmp_path) + ["-p", "controller_name:=vi_controller", "-p", "mode:=plan"]
    with node_in_process(request.node.name, PlannerNode, params) as planner:
        planner.warn.logger = logged = RecordingLogger(planner.warn.logger)
        listener = rclpy.create_node("listener", context=planner.context)
        got: list[dict] = []
        listener.create_subscription(
            DiagnosticArray,
            planner.pub_status.topic_name,
            lambda m: got.extend({kv.key: kv.value for kv in st.values} for st in m.status),
            STATUS_QOS,
        )
        ex = SingleThreadedExecutor(context=planner.context)
        ex.add_node(planner)
        ex.add_node(listener)

        def spin(until, seconds: float = 10.0) -> bool:
            end = time.monotonic() + seconds
            while time.monotonic() < end and not until():
                ex.spin_once(timeout_sec=0.02)
            return until()

        planner.on_joint_state(_joint_state(planner._now(), 0.0, 0.0))
        planner._plan(planner._job(Request("task"), "~/replan", None, 0.0))
        seq = planner.last_seq
        assert spin(lambda: any(s["state"] == "accepted" for s in got)), got
        planner.on_plan_refused(plan_refused_message(seq + 1, "not ours"))  # (another planner's plan)
        planner.on_plan_refused(DiagnosticStatus(name="plan_refused", message="no plan named"))
        assert "plan_refused ignored" in logged.text()
        why = f"plan {seq} not entered: at its step 0 its theta is 0.3 from the measured one, beyond start_tolerance"
        planner.on_plan_refused(plan_refused_message(seq, why))
        planner.on_plan_refused(plan_refused_message(seq, why))  # (said twice: one status)
        assert spin(lambda: any(s["state"] == "refused" for s in got)), got
        spin(lambda: False, 0.3)
        refused = [s for s in got if s["state"] == "refused"]
        assert len(refused) == 1 and refused[0]["plan"] == str(seq), got
        assert refused[0]["reason"] == f"vi_controller does not run plan {seq}: {why}"
        assert refused[0]["request"] == next(s["request"] for s in got if s["state"] == "accepted")
        # a plan refused on receipt: the controller's answer handled before this planner's worker sent 'accepted'
        # (a CI run's sender saw refused, then accepted) — the interleaving forced here: still accepted, then refused
        send = planner._status

        def refused_first(job, state, message, **values):
            if state == "accepted":
                planner.on_plan_refused(plan_refused_message(int(values["plan"]), "refused on receipt"))
            send(job, state, message, **values)

        planner._status = refused_first
        planner._plan(planner._job(Request("task"), "~/replan", None, 0.0))
        again = str(planner.last_seq)
        assert spin(lambda: [s["state"] for s in got if s.get("plan") == again] == ["accepted", "refused"]), got
        assert next(s for s in got if s.get("plan") == again and s["state"] == "refused")["reason"].endswith(
            "refused on receipt"
        )
        ex.shutdown()
        listener.destroy_node()


def test_a_plan_that_reached_the_controller_after_its_end_is_planned_again(request, tmp_path):
    """Mode plan: a plan the controller dropped because it reached it after its end (~/plan_refused of kind "plan
    ended": a plan writer matched late under load — CI's heavier-panda run received its start-up plan 1.7 s late,
    0.6 s after its end, and held the arm for good) never ran: its request is planned again from the measured state,
    warned — up to ``LATE_REPLANS`` times, then an error and the request stays refused. So is one refused as "plan
    late" (steps after its start, the held arm sagged from its X_0: not re-timed, beyond start_tolerance). A refusal of
    another kind (start_tolerance on time: the plan is wrong for where the arm is) is not planned again, nor a request
    a newer one followed."""
    from in_process import record_logs

    from vi_control.ros.messages import plan_refused_message
    from vi_control.ros.planner_node import LATE_REPLANS, PlannerNode
    from vi_control.ros.planner_requests import Request

    params = _pendulum_mpc_planner(tmp_path) + ["-p", "controller_name:=vi_controller", "-p", "mode:=plan"]
    with node_in_process(request.node.name, PlannerNode, params) as planner:
        logged = record_logs(planner).messages
        planner.on_joint_state(_joint_state(planner._now(), 0.0, 0.0))

        def next_plan(after: int) -> int:
            end = time.monotonic() + 60.0
            while (planner.last_seq == after or planner._worker is not None) and time.monotonic() < end:
                time.sleep(0.01)
            assert planner.last_seq != after and planner._worker is None, logged
            return planner.last_seq

        def ended(seq: int) -> None:
            why = f"plan {seq} not entered: it ended at t=1.0, before it could be entered (state t=1.6)"
            planner.on_plan_refused(plan_refused_message(seq, why, "plan ended"))

        planner._submit(Request("task"), "start-up")
        seq = next_plan(None)
        for n in range(1, LATE_REPLANS + 1):
            ended(seq)
            seq = next_plan(seq)  # planned again
            assert sum("after its end (delivered late)" in m for _, m in logged) == n, logged
        ended(seq)
        time.sleep(0.3)
        assert planner.last_seq == seq and planner._worker is None  # not again
        assert any(f"not planned again ({LATE_REPLANS} times already)" in m for _, m in logged), logged
        # refused as late (steps after its start, the held arm no longer at its X_0): planned again too
        planner._submit(Request("task"), "~/replan")
        seq = next_plan(seq)
        why = f"plan {seq} not entered: at its step 4 its theta is 0.3 from the measured one, beyond start_tolerance"
        planner.on_plan_refused(plan_refused_message(seq, why, "plan late"))
        seq = next_plan(seq)
        assert any("after its start, the robot no longer at its start (delivered late)" in m for _, m in logged)
        # another kind of refusal: the request stays refused
        planner._submit(Request("task"), "~/replan")
        seq = next_plan(seq)
        why = f"plan {seq} not entered: at its step 0 its theta is 0.3 from the measured one, beyond start_tolerance"
        planner.on_plan_refused(plan_refused_message(seq, why, "start tolerance"))
        time.sleep(0.3)
        assert planner.last_seq == seq and planner._worker is None
        # a newer request followed: the late one is not planned again
        planner._submit(Request("task"), "~/replan")
        first = seq = next_plan(seq)
        planner._submit(Request("task"), "~/replan")
        seq = next_plan(seq)
        ended(first)
        time.sleep(0.3)
        assert planner.last_seq == seq and planner._worker is None


def test_an_mpc_cycle_the_controller_refuses_is_counted_in_diagnostics(request, tmp_path):
    """Mode mpc: a cycle's plan the controller does not run (its ~/plan_refused: the latched, ended plans a
    restarted controller drops) is counted (``mpc_controller_refused``, WARN in /diagnostics) and said in the
    throttled log — a cycle is a quiet job, with no status of its own on ~/request_status."""
    from log_record import RecordingLogger

    from vi_control.ros.messages import plan_refused_message
    from vi_control.ros.planner_node import PlannerNode
    from vi_control.ros.planner_requests import Request
    from vi_control.ros.supervision import WARN, planner_diagnostics

    params = _pendulum_mpc_planner(tmp_path) + ["-p", "start_delay:=0.0"]
    with node_in_process(request.node.name, PlannerNode, params) as planner:
        planner.warn.logger = logged = RecordingLogger(planner.warn.logger)
        planner.on_joint_state(_joint_state(planner._now(), 0.0, 0.0))
        planner._plan(planner._job(Request("task"), "test", None, 0.0))
        first = planner.last_seq
        planner.on_joint_state(_joint_state(float(planner.last_plan.times[0]) + 0.01, 0.0, 0.0))
        planner._plan(planner._job(Request("mpc"), "mpc", None, 0.0))
        cycle = planner.last_seq
        assert cycle != first and planner.mpc_counts["cycles"] == 1
        planner.on_plan_refused(plan_refused_message(cycle, f"plan {cycle} not entered: it ended at t=9"))
        assert planner.mpc_counts["controller_refused"] == 1 and f"does not run plan {cycle}" in logged.text()
        level, status, values = planner_diagnostics(True, False, planner.mpc, planner.mpc_counts, 0.0, None)
        assert level == WARN and "1 controller_refused" in status and values["mpc_controller_refused"] == 1
        planner.on_plan_refused(plan_refused_message(first, "the task's plan: a request, not a cycle"))
        assert planner.mpc_counts["controller_refused"] == 1


def test_an_mpc_cycle_from_a_stale_joint_state_is_skipped_warned_and_counted(request, tmp_path):
    """Mode mpc, the driver's joint states stopped: a cycle whose newest state is older than ``state_timeout`` on the
    node's clock is skipped — the controller holds the arm on such a state, and the planner's prediction from it would
    grow with its age (a dead driver: minutes of roll-out per cycle, reported as overruns) — warned, counted in
    /diagnostics (``mpc_stale``, WARN) and not among the cycles; the first fresh state's cycle runs. The rule is the
    controller's: stale only beyond the timeout (an age of exactly the timeout is fresh)."""
    from log_record import RecordingLogger

    from vi_control.ros.planner_node import PlannerNode
    from vi_control.ros.planner_requests import Request
    from vi_control.ros.supervision import WARN, planner_diagnostics

    timeout = 0.25  # (a binary fraction: the boundary below is exact)
    params = _pendulum_mpc_planner(tmp_path) + ["-p", "start_delay:=0.0", "-p", f"state_timeout:={timeout}"]
    with node_in_process(request.node.name, PlannerNode, params) as planner:
        planner.warn.logger = logged = RecordingLogger(planner.warn.logger)
        planner.on_joint_state(_joint_state(planner._now(), 0.0, 0.0))
        planner._plan(planner._job(Request("task"), "test", None, 0.0))
        first, t0 = planner.last_plan, planner.mpc.t0
        assert first is not None and t0 is not None
        while planner._now() < t0 + timeout + 0.2:
            time.sleep(0.02)
        planner.on_joint_state(_joint_state(t0 + 0.01, 0.05, 0.0))  # (after the plan's start, ≥ 0.2 s too old)
        planner._plan(planner._job(Request("mpc"), "mpc", None, 0.0))
        assert planner.last_plan is first
        assert planner.mpc_counts["stale"] == 1 and planner.mpc_counts["cycles"] == 0, planner.mpc_counts
        assert "mpc: the newest joint state is" in logged.text() and "cycle skipped" in logged.text()
        level, status, values = planner_diagnostics(True, False, planner.mpc, planner.mpc_counts, 0.0, first)
        assert level == WARN and status == "mpc: 0 cycles, 0 overruns, 1 stale" and values["mpc_stale"] == 1
        planner.on_joint_state(_joint_state(planner._now() - 0.5 * timeout, 0.05, 0.0))  # (fresh)
        planner._plan(planner._job(Request("mpc"), "mpc", None, 0.0))
        assert planner.mpc_counts["cycles"] == 1 and planner.mpc_counts["stale"] == 1, planner.mpc_counts
        assert planner.last_plan is not first
        planner._now = lambda: 10.0  # (the boundary on a clock that stands still, where 10 − 0.25 is exact)
        assert not planner._stale(10.0 - timeout) and planner._stale(float(np.nextafter(10.0 - timeout, 0.0)))
        assert planner.mpc_counts["stale"] == 2


def test_in_mode_mpc_the_cycles_continue_a_goal_request_not_the_tasks_goal(request, tmp_path):
    """Mode mpc, a goal sent on ~/goal while the task's plan runs: its plan is published and the next cycles continue
    it (planning.mpc.RecedingHorizon.follow) — before, the next cycle planned the task's window again and turned the
    arm back toward the task's goal within one period; a trajectory on ~/joint_trajectory the same. ~/replan (the
    task) makes the cycles the task's again."""
    from vi_control.ros.planner_node import PlannerNode
    from vi_control.ros.planner_requests import Request

    params = _pendulum_mpc_planner(tmp_path) + ["-p", "start_delay:=0.0"]  # (the task: 0 → 0.5 rad in 2 s)
    with node_in_process(request.node.name, PlannerNode, params) as planner:

        def cycle_from(plan, k: int):  # (measured where ``plan`` has the arm at its step k, then one cycle)
            q, qdot = plan.X[k, 0], planner.vi.velocity(plan.X[k])[0]
            planner.on_joint_state(_joint_state(float(plan.times[k]) + 0.01, q, qdot))
            planner._plan(planner._job(Request("mpc"), "mpc", None, 0.0))
            return planner.last_plan

        planner.on_joint_state(_joint_state(planner._now(), 0.0, 0.0))
        planner._plan(planner._job(Request("task"), "test", None, 0.0))
        first = planner.last_plan
        assert first.X[-1, 0] > 0.3
        planner._plan(planner._job(Request("goal", goal=np.array([-0.5])), "~/goal", None, 0.0))
        to_goal = planner.last_plan
        assert to_goal is not first and to_goal.X[-1, 0] < -0.45 and planner.mpc.t0 == to_goal.times[0]
        cyc = cycle_from(to_goal, 3)
        assert planner.mpc_counts["accepted"] == 1 and cyc is not to_goal
        k = int(round((cyc.times[-1] - to_goal.times[0]) / to_goal.dt))  # (the goal plan's step at the cycle's end)
        assert abs(cyc.X[-1, 0] - to_goal.X[min(k, to_goal.horizon), 0]) < 0.05, (cyc.X[:, 0], to_goal.X[:, 0])
        points = Request("trajectory", times=np.array([1.0, 2.0]), positions=np.array([[-0.3], [-0.2]]), joints=[0])
        planner._plan(planner._job(points, "~/joint_trajectory", None, 0.0))
        path = planner.last_plan  # (a trajectory request: its plan and reference continued the same way)
        assert path is not cyc and planner.mpc.t0 == path.times[0] and planner.mpc.X_ref[-1, 0] == -0.2
        cyc = cycle_from(path, 3)
        k = int(round((cyc.times[-1] - path.times[0]) / path.dt))
        assert abs(cyc.X[-1, 0] - path.X[min(k, path.horizon), 0]) < 0.05, (cyc.X[:, 0], path.X[:, 0])
        planner._plan(planner._job(Request("task"), "~/replan", None, 0.0))
        again = planner.last_plan
        assert again.X[-1, 0] > 0.3 and planner.mpc.t0 == again.times[0]
        assert cycle_from(again, 3).X[-1, 0] > 0.3  # (the task's goal again)


def test_an_mpc_cycle_from_before_its_plans_start_waits_and_says_so_only_when_the_clock_went_back(request, tmp_path):
    """Mode mpc, a cycle whose newest joint state is before the start of the plan the cycles continue: silent while no
    cycle has run since that start (the first plan not started yet: the robot held until then); after a cycle from a
    later state, the clock went back (a simulator reset) — still skipped (the controller enters that plan again at its
    start), now with a warning saying so."""
    from log_record import RecordingLogger

    from vi_control.ros.planner_node import PlannerNode
    from vi_control.ros.planner_requests import Request

    params = _pendulum_mpc_planner(tmp_path) + ["-p", "start_delay:=0.0", "-p", "state_timeout:=3600.0"]
    with node_in_process(request.node.name, PlannerNode, params) as planner:
        planner.warn.logger = logged = RecordingLogger(planner.warn.logger)
        t = planner._now()
        planner.on_joint_state(_joint_state(t, 0.0, 0.0))
        planner._plan(planner._job(Request("task"), "test", None, 0.0))
        t0 = planner.mpc.t0
        planner.on_joint_state(_joint_state(t0 - 0.05, 0.0, 0.0))  # (just before the first plan's start)
        planner._plan(planner._job(Request("mpc"), "mpc", None, 0.0))
        assert planner.mpc_counts["cycles"] == 0 and "clock went back" not in logged.text()
        planner.on_joint_state(_joint_state(t0 + 0.05, 0.0, 0.0))
        planner._plan(planner._job(Request("mpc"), "mpc", None, 0.0))
        assert planner.mpc_counts["cycles"] == 1 and planner.mpc_last_state_t == t0 + 0.05

        planner.on_joint_state(_joint_state(t0 - 5.0, 0.0, 0.0))
        last = planner.last_plan
        planner._plan(planner._job(Request("mpc"), "mpc", None, 0.0))
        assert planner.mpc_counts["cycles"] == 1 and planner.last_plan is last
        assert "the clock went back (a simulator reset?)" in logged.text(), logged.messages


def test_an_mpc_tick_while_a_request_is_solved_is_no_overrun(request, tmp_path, monkeypatch):
    """Mode mpc: a goal request being solved (a gate around the real solve holds it) when the period comes due — no
    cycle ran over, so nothing is counted or warned as an overrun (/diagnostics' mpc_overruns), and no cycle is
    queued behind it (the request's plan is what the next cycles continue); once it is published, the next tick starts
    a cycle. (A cycle that overruns is counted: test_an_mpc_cycle_that_overruns_its_period_is_counted…)"""
    import threading

    from log_record import RecordingLogger

    import vi_control.ros.planner_node as planner_module
    from vi_control.ros.planner_node import PlannerNode
    from vi_control.ros.planner_requests import Request

    started, release = threading.Event(), threading.Event()
    real_solve = planner_module.solve_request

    def gated_solve(*args, **kwargs):
        started.set()
        assert release.wait(60.0)
        return real_solve(*args, **kwargs)

    monkeypatch.setattr(planner_module, "solve_request", gated_solve)
    params = _pendulum_mpc_planner(tmp_path) + ["-p", "start_delay:=0.0"]
    with node_in_process(request.node.name, PlannerNode, params) as planner:
        planner.warn.logger = logged = RecordingLogger(planner.warn.logger)
        planner.on_joint_state(_joint_state(planner._now(), 0.0, 0.0))
        planner._plan(planner._job(Request("task"), "test", None, 0.0))  # (the task's plan: not through the gate)
        assert planner.mpc.t0 is not None and planner.last_plan is not None
        planner._submit(Request("goal", goal=np.array([-0.5])), "~/goal")
        assert started.wait(60.0)
        worker = planner._worker
        planner._mpc_tick()
        planner._mpc_tick()
        assert planner.mpc_counts["overruns"] == 0 and planner._pending is None, planner.mpc_counts
        assert "overran" not in logged.text()
        release.set()
        worker.join(60.0)
        assert not worker.is_alive() and planner._worker is None and planner._solving is None
        planner.on_joint_state(_joint_state(max(planner._now(), planner.mpc.t0) + 0.05, -0.1, 0.0))
        planner._mpc_tick()  # (nothing being solved: a cycle)
        if planner._worker is not None:
            planner._worker.join(60.0)
        assert planner.mpc_counts["cycles"] == 1 and planner.mpc_counts["overruns"] == 0, planner.mpc_counts


@pytest.mark.parametrize("mode", ["plan", "mpc"])
def test_vehicle_mode_configures_with_mode_plan_and_refuses_mode_mpc_with_the_reason(request, mode):
    """Vehicle mode plans each goal pose once (DMOC); ``mode: mpc`` there was ignored without a word — a user asking
    for receding-horizon control got single plans. Now configure refuses it and says what to set; mode plan (the
    other choice) configures."""
    from vi_control.ros.planner_node import PlannerNode

    params = ["-p", "vehicle:=vehicle_uuv", "-p", f"mode:={mode}", "-p", "autostart:=false"]
    with node_in_process(request.node.name, PlannerNode, params) as planner:
        if mode == "plan":
            planner.configure()
            assert planner.mpc is None and planner.settings is not None
        else:
            with pytest.raises(ValueError, match="mode: 'mpc' re-plans a joint-space task.*set mode 'plan'"):
                planner.configure()


@pytest.mark.parametrize("slow_timer", [False, True])
def test_the_background_spinner_drains_what_was_received_before_it_closes(slow_timer):
    """``main_job.BackgroundSpinner.close`` (the recording's and the live view's executor) takes what the
    subscriptions already received before it stops: 200 messages published at once, then closed at once, are all
    seen — the bag of a run holds its last joint states (a CI run's bag once missed the last one). Also beside a
    timer whose callback takes longer than the drain's quiet time (the live view drawing under load): it once ended
    the drain with messages still queued; the timers are cancelled first (they need not run any more)."""
    import rclpy
    from std_msgs.msg import Float64

    from vi_control.ros.launcher import domain_id_for, set_domain
    from vi_control.ros.main_job import BackgroundSpinner

    domain = domain_id_for("test_the_background_spinner_drains")
    set_domain(domain)
    rclpy.init(domain_id=domain)  # (the default context, as the main job's)
    try:
        sub_node = rclpy.create_node("drain_sub")
        pub_node = rclpy.create_node("drain_pub")
        got = []
        qos = rclpy.qos.QoSProfile(depth=1000, reliability=rclpy.qos.ReliabilityPolicy.RELIABLE)
        sub_node.create_subscription(Float64, "drain", lambda m: got.append(m.data), qos)
        ticks = []  # (the slow timer's start times)
        if slow_timer:  # (every 20 ms, 2 × QUIET_S long)
            sub_node.create_timer(
                0.02, lambda: (ticks.append(time.monotonic()), time.sleep(2 * BackgroundSpinner.QUIET_S))
            )
        pub = pub_node.create_publisher(Float64, "drain", qos)
        spinner = BackgroundSpinner([sub_node])
        deadline = time.monotonic() + 10.0
        while pub.get_subscription_count() < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        for i in range(200):
            pub.publish(Float64(data=float(i)))
        closing = time.monotonic()
        spinner.close()
        assert got == [float(i) for i in range(200)], (len(got), got[-3:])
        # the drain cancelled the timers: at most those the spin loop and a cached wait may start (uncancelled,
        # the slow timer ran on through the whole drain, DRAIN_MAX_S, one callback every 2 × QUIET_S)
        assert sum(t >= closing for t in ticks) <= 2, [round(t - closing, 3) for t in ticks if t >= closing]
        pub_node.destroy_node()
        sub_node.destroy_node()
    finally:
        rclpy.try_shutdown()


def test_a_refused_or_failed_mpc_cycle_is_counted_and_warned_in_diagnostics(request, tmp_path):
    """Mode mpc on the system clock (a real arm's: t ~ 1.8e9 s): the task's first plan is made and runs, and a cycle
    whose plan is beyond the limits (from a measured 25 rad/s, the URDF's 20 × 1.0 allowed) is refused: logged as an
    error, counted in /diagnostics (``mpc_refused``; a failed solve in ``mpc_failed`` the same way) and WARN, and the
    last plan goes on. (A fresh-clone CI run once had 30 of 36 cycles end neither accepted nor counted; and on the
    system clock every plan of this mode was a PlanError: its times, moved from 1.8e9 s to 0, kept 2.4e-7 s
    rounding.)"""

    from log_record import RecordingLogger

    from vi_control.ros.planner_node import PlannerNode
    from vi_control.ros.planner_requests import Request
    from vi_control.ros.supervision import planner_diagnostics

    params = _pendulum_mpc_planner(tmp_path)
    params += ["-p", "velocity_limit_factor:=1.0", "-p", "start_delay:=0.0"]
    with node_in_process(request.node.name, PlannerNode, params) as planner:
        planner.on_joint_state(_joint_state(planner._now(), 0.0, 0.0))
        planner._plan(planner._job(Request("task"), "test", None, 0.0))
        assert planner.mpc.t0 is not None and planner.last_plan is not None
        first = planner.last_plan
        assert first.times[0] > 1e9 and np.allclose(np.diff(first.times), 0.1, rtol=0, atol=1e-6)
        t = max(planner._now(), planner.mpc.t0) + 0.05
        planner.on_joint_state(_joint_state(t, 0.0, 25.0))
        planner.warn.logger = logged = RecordingLogger(planner.warn.logger)
        for _ in range(3):  # (the same refusal three periods in a row: counted three times, logged once)
            planner._plan(planner._job(Request("mpc"), "mpc", None, 0.0))
        counts = dict(planner.mpc_counts)
        assert (counts["cycles"], counts["refused"], counts["failed"], counts["accepted"]) == (3, 3, 0, 0), counts
        assert planner.last_plan is first
        errors = [text for level, text in logged.messages if level == "error"]
        assert len(errors) == 1 and "(mpc from mpc): refused: plan beyond the limits" in errors[0], logged.messages
        level, status, values = planner_diagnostics(True, False, planner.mpc, planner.mpc_counts, 0.0, first)
        assert status == "mpc: 3 cycles, 3 refused, 0 overruns" and values["mpc_refused"] == 3


def _push_the_held_panda(node, held: float, seconds: float, plant_clock: bool) -> tuple:
    """The panda held at its start pose on a Pinocchio plant (aba, 1 ms steps), the controller fed a state and
    ticked every ``held`` seconds (the driver holds each command that long), its first joint pushed to 4.2 rad/s
    (1.29 × its bound), run for ``seconds``; ``plant_clock``: the node's clock is the plant's (so its ticks are late
    by ``held``), else the wall clock (stamps in the past, fresh for ``state_timeout`` 30 s). Returns (the largest
    |q̇| after each command, q, q̇, q_0, the bound)."""
    import pinocchio as pin
    from rclpy.parameter import Parameter

    assert node.set_parameters_atomically([Parameter("state_timeout", value=30.0)]).successful
    robot = node.robot
    model, data = robot.pin_model, robot.pin_model.createData()
    t0, h, clock = node._now() - 5.0, 1e-3, [0.0]
    if plant_clock:
        node._now = lambda: t0 + clock[0]

    def feed(t: float, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        clock[0] = t
        node.on_joint_state(_joint_state(t0 + t, q, v, robot.joint_names))
        node.tick()
        return np.array(node.cmd.data)

    q0 = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])
    q, v = q0.copy(), np.zeros(7)
    for i in range(3):
        feed(i * held, q, v)  # at rest: the hold engages at q0
    v[0] = 4.2
    peak = []
    for i in range(3, 3 + int(seconds / held)):
        tau = feed(i * held, q, v)
        for _ in range(int(round(held / h))):
            v = v + h * pin.aba(model, data, q, v, tau)
            q = q + h * v
        peak.append(float(np.abs(v).max()))
    return peak, q, v, q0, 1.5 * robot.joints[0].velocity_limit


def test_an_overspeeding_arm_is_braked_with_feedback_not_let_go(request):
    """A joint faster than its bound (velocity_limit_factor × the URDF limit: 1.5 × 2.175 rad/s on the panda's first
    joint) is the robot's own motion: the controller keeps the state and holds with its feedback, which brakes.
    Plant: Pinocchio's forward dynamics (aba, 1 ms, the command held 5 ms: 200 Hz), holding the start pose, its first
    joint pushed to 4.2 rad/s. Refused as a bad message (before), the state gave no feedback: the held pose's gravity
    torque, then zero — that joint spun on, and the arm fell (a 20 %-heavier panda at 1.9× its URDF limit swung 3 rad
    away in test_ros_mpc on a loaded machine)."""
    from vi_control.control.intake import FAULT_OVERSPEED
    from vi_control.ros.controller_node import ControllerNode

    with node_in_process(request.node.name, ControllerNode, ["-p", "model:=erd:panda"]) as node:
        peak, q, v, q0, bound = _push_the_held_panda(node, 0.005, 3.0, plant_clock=False)
        assert node.runner.fault_counts.get(FAULT_OVERSPEED, 0) > 0
        assert max(peak[20:]) < bound, peak[:30]  # under the bound within 0.1 s
        assert np.abs(q - q0).max() < 0.2 and np.abs(v).max() < 0.05, (q - q0, v)  # back at the pose, at rest


def test_a_starved_command_loop_brakes_and_holds_for_how_long_its_commands_are_held(request):
    """The panda pushed to 4.2 rad/s while the 500 Hz command loop is starved: each command held 40 ms by the driver
    (20 periods; the node's clock is the plant's, so its ticks are late by that much). The brake's damping is capped
    for the longest recent gap between ticks (``safe_hold_time``), not for the 2 ms period: capped for 2 ms and held
    40 ms it reversed the light joints' velocities every command and grew them — the arm at 164 rad/s (a CI run's
    MuJoCo panda: 6.9 rad/s, 2.5 rad away). And the hold that follows the brake feeds back the measured q̇ while the
    loop is starved (``_feedback_state``): the configurations' p, a velocity ~Δt/2 old, made it cycle at 3–5 rad/s.
    Nothing runs away (every velocity under twice the bound), and within 1.5 s the arm is at rest where it was held."""
    from vi_control.ros.controller_node import ControllerNode

    held = 0.04
    params = ["-p", "model:=erd:panda", "-p", "dt:=0.05", "-p", "rate:=500.0"]
    with node_in_process(request.node.name, ControllerNode, params) as node:
        peak, q, _, q0, bound = _push_the_held_panda(node, held, 3.0, plant_clock=True)
        assert node.safe_hold_time() == pytest.approx(held, abs=1e-5)  # (t0 ~1.8e9 s: stamps to ~0.2 µs)
        assert np.all(np.isfinite(peak)) and max(peak) < 2 * bound, [round(p, 2) for p in peak]
        settled = max(peak[int(1.5 / held) :])
        assert settled < 0.05 and np.abs(q - q0).max() < 0.05, ([round(p, 2) for p in peak], q - q0)


def test_after_an_overspeed_aborted_the_plan_the_hold_takes_over_with_feedback(request):
    """The panda reach tracked on a plant 20 % heavier on every link (Pinocchio's aba, 1 ms, the command held 5 ms)
    until its first joint is pushed to 4.2 rad/s (1.29 × its bound) 0.3 s in: the plan is aborted and the arm braked,
    and once the velocities are within their bounds the hold — engaged where the brake began — holds it with its
    position feedback. Before, every later tick re-reported the abort as an over-speed and kept braking (damping and
    the model's gravity torque, no position feedback): a loaded CI run's heavier panda sagged from there into its
    end stops on five joints."""
    import pinocchio as pin
    from rclpy.parameter import Parameter

    from vi_control.control.intake import FAULT_OVERSPEED
    from vi_control.planning import load_task, plan_task
    from vi_control.ros.controller_node import ControllerNode

    task = load_task("task_panda_reach")
    with node_in_process(request.node.name, ControllerNode, ["-p", "model:=erd:panda", "-p", f"dt:={task.dt}"]) as node:
        assert node.set_parameters_atomically([Parameter("state_timeout", value=30.0)]).successful
        robot = node.robot
        plan, _ = plan_task(node.runner.vi, task)
        model = pin.Model(robot.pin_model)
        for i in range(1, model.njoints):  # the plant: every link 20 % heavier than the controller's model
            inertia = model.inertias[i]
            model.inertias[i] = pin.Inertia(1.2 * inertia.mass, inertia.lever, 1.2 * inertia.inertia)
        data = model.createData()
        bound = 1.5 * robot.joints[0].velocity_limit
        t0, h, period = node._now() - 10.0, 1e-3, 0.005  # (stamps on the plant's time, all past)
        q, v = plan.X[0, :7].copy(), np.zeros(7)
        node.runner.queue(1, plan, True)  # (started by the first state)
        n, peak, braked_at = int(round(period / h)), [], None
        for i in range(int(4.0 / period)):
            if i == int(0.3 / period):
                v[0] = 4.2  # pushed
            node.on_joint_state(_joint_state(t0 + i * period, q, v, robot.joint_names))
            node.tick()
            if braked_at is None and node.runner.aborted is not None:
                braked_at = q.copy()
            tau = np.array(node.cmd.data)
            for _ in range(n):
                v = v + h * pin.aba(model, data, q, v, tau)
                q = q + h * v
            peak.append(float(np.abs(v).max()))
        print(
            f"peak after 0.2 s of braking {max(peak[int(0.5 / period) :]):.3f} rad/s (bound {bound:.3f}); at the end "
            f"{np.abs(v).max():.4f} rad/s, {np.abs(q - braked_at).max():.4f} rad from where the brake began"
        )
        assert node.runner.aborted is not None and node.runner.aborted[0] == FAULT_OVERSPEED
        assert braked_at is not None and max(peak[int(0.5 / period) :]) < bound, peak[60:90]
        # at rest, held near where the brake began (the hold's offset under 20 % more gravity than it compensates)
        assert np.abs(v).max() < 0.05 and np.abs(q - braked_at).max() < 0.3, (v, q - braked_at)


def test_a_plan_of_another_dt_is_entered_once_its_system_is_built_while_the_loop_goes_on(
    request, tmp_path, monkeypatch
):
    """The controller's system is at its dt parameter (0.01 s) until a plan brings another Δt (0.05 s): that system
    is built in the background — here on an empty compile cache, so gcc runs for seconds — while each tick still
    commands the hold; the plan is entered once it is ready, with the state estimate on the new Δt. (Built in the
    plan's callback, the first plan of a differently configured controller stopped the command stream for that
    long.)"""

    from vi_control.ros.controller_node import ControllerNode
    from vi_control.ros.messages import plan_to_message

    monkeypatch.setenv("VI_CONTROL_CACHE", str(tmp_path / "cold_cache"))
    with node_in_process(request.node.name, ControllerNode, ["-p", "model:=pendulum"]) as node:
        assert node.vi.dt == 0.01
        r = node.robot

        def state(q: float) -> None:
            node.on_joint_state(_joint_state(node._now(), q, 0.0))

        state(0.2)
        node.tick()
        dt = 0.05
        plan = _hanging_plan(r, dt, 10).shifted(node._now() + 2.0)  # (starts after any build's seconds)
        node.on_plan(plan_to_message(plan, 11))
        assert node._building is not None and not node._building[1].done()  # (the callback did not build it)
        assert node.vi.dt == 0.01 and node.runner.pending is None
        holds = node.counts["hold"]
        deadline = time.monotonic() + 120.0
        while node._building is not None and time.monotonic() < deadline:
            state(0.2)
            node.tick()
            time.sleep(0.01)
        assert node._building is None and node.counts["hold"] > holds  # held meanwhile
        assert node.vi.dt == dt and node.intake.vi.dt == dt
        queued = node.runner.pending[0] if node.runner.pending is not None else None
        assert 11 in (queued, node.runner.active_seq)  # (queued, or entered already if its start has come)


def test_a_build_under_way_at_cleanup_gives_its_system_to_no_later_configuration(request, tmp_path, monkeypatch):
    """A plan's Δt (0.05 s) has the controller build that system in the background (an empty compile cache: gcc for
    seconds); the node is cleaned up and configured again meanwhile, at its dt parameter (0.01 s). The old build
    belongs to the old configuration: once it is done, the new one keeps its own system (before, the next tick put
    the 0.05 s system in, under a configuration whose dt and plans say 0.01 s). Destroying the node ends the build
    thread."""
    import threading

    from vi_control.ros.controller_node import ControllerNode
    from vi_control.ros.messages import plan_to_message

    monkeypatch.setenv("VI_CONTROL_CACHE", str(tmp_path / "cold_cache"))
    with node_in_process(request.node.name, ControllerNode, ["-p", "model:=pendulum"]) as node:
        plan = _hanging_plan(node.robot, 0.05, 10).shifted(node._now() + 2.0)
        node.on_plan(plan_to_message(plan, 11))
        assert node._building is not None
        old_build = node._building[1]
        assert node.trigger_deactivate() == R.SUCCESS
        assert node.trigger_cleanup() == R.SUCCESS
        assert node.trigger_configure() == R.SUCCESS
        assert node.trigger_activate() == R.SUCCESS
        assert node.vi.dt == 0.01
        old_build.result(timeout=120.0)  # (the old build's system exists now)
        node.tick()
        assert node.vi.dt == 0.01 and node.intake.vi.dt == 0.01 and node._building is None
        builders = [t for t in threading.enumerate() if t.name.startswith("vi_controller_build")]
        assert builders  # (the thread that built it, idle now)
    deadline = time.monotonic() + 10.0
    while any(t.is_alive() for t in builders) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not any(t.is_alive() for t in builders)  # destroy_node ended it


@pytest.mark.parametrize("burst", [5, PLAN_QOS.depth, PLAN_QOS.depth + 1])
def test_every_plan_of_a_burst_reaches_the_controller_in_order(request, burst):
    """Consecutive MPC plans continue each other's law at the switch, so the controller must get every one. Plans
    published back to back by the planner's own publisher while the controller's executor does not run (a loaded
    machine: its plan callback later than the next plan) all reach it and wait in order — up to the plan topic's
    depth (``common.PLAN_QOS``, 10): of a burst one longer, the oldest is dropped and the last 10 wait (the bound
    docs/concepts/ros.md states: a controller stalled for more than 10 MPC periods loses plans). With a one-deep
    queue only the last arrived: a fresh-clone CI run lost one plan of an MPC chain, and the controller switched from
    the plan before it to the plan after it with a jump of 11.4 N·m on the panda."""
    from rclpy.executors import SingleThreadedExecutor

    from vi_control.ros.controller_node import ControllerNode
    from vi_control.ros.messages import plan_to_message
    from vi_control.ros.planner_node import PlannerNode

    params = ["-p", "model:=pendulum", "-p", "plan_on_startup:=false"]
    with node_in_process(request.node.name, ControllerNode, params) as ctrl:
        planner = PlannerNode()
        try:
            deadline = time.monotonic() + 30.0
            while planner.pub_plan.get_subscription_count() < 1 and time.monotonic() < deadline:
                time.sleep(0.02)
            assert planner.pub_plan.get_subscription_count() == 1  # (matched: the live path, not the latched replay)
            sent, t0 = list(range(101, 101 + burst)), ctrl._now() + 30.0
            for i, seq in enumerate(sent):  # (each following the one before, as an MPC chain's)
                plan = _hanging_plan(ctrl.robot, ctrl.vi.dt, 10).shifted(t0 + 0.05 * i)
                planner.pub_plan.publish(plan_to_message(plan, seq))
            seqs = sent[-PLAN_QOS.depth :]
            time.sleep(0.5)  # (delivered to the controller's reader meanwhile)
            executor = SingleThreadedExecutor()
            executor.add_node(ctrl)
            deadline = time.monotonic() + 10.0

            def queued() -> list[int]:
                pending = [] if ctrl.runner.pending is None else [ctrl.runner.pending[0]]
                return pending + [f[0] for f in ctrl.runner.following]

            while queued() != seqs and time.monotonic() < deadline:
                executor.spin_once(timeout_sec=0.05)
            assert queued() == seqs, ctrl.runner._admitted
            executor.remove_node(ctrl)
        finally:
            planner.destroy_node()


def test_a_controller_that_joins_late_runs_the_latest_plan_of_the_chain(request):
    """The plan topic keeps the last plans for a late subscriber (``common.PLAN_QOS``): a controller started after an
    MPC chain's plans were published gets them all, in order, and its first tick goes through those that have
    started to the latest — it runs that one, not the oldest."""
    from rclpy.executors import SingleThreadedExecutor

    from vi_control.ros.controller_node import ControllerNode
    from vi_control.ros.messages import plan_to_message
    from vi_control.ros.planner_node import PlannerNode

    params = ["-p", "model:=pendulum", "-p", "plan_on_startup:=false"]
    with node_in_process(request.node.name, PlannerNode, params) as planner:
        from vi_control.model.spec import ModelSpec

        robot = ModelSpec(source="pendulum").load()
        seqs, t0 = [201, 202, 203, 204, 205], time.time() - 0.3
        for i, seq in enumerate(seqs):  # (started 0.3 s ago, one every 0.05 s; the last still runs)
            planner.pub_plan.publish(plan_to_message(_hanging_plan(robot, 0.01, 40).shifted(t0 + 0.05 * i), seq))
        ctrl = ControllerNode()
        try:
            executor = SingleThreadedExecutor()
            executor.add_node(ctrl)
            deadline = time.monotonic() + 30.0
            while len(ctrl.runner._admitted) < len(seqs) and time.monotonic() < deadline:
                executor.spin_once(timeout_sec=0.05)
            assert list(ctrl.runner._admitted) == seqs
            ctrl.on_joint_state(_joint_state(ctrl._now(), 0.0, 0.0))
            ctrl.tick()
            assert ctrl.runner.active_seq == seqs[-1] and ctrl.runner.pending is None
            executor.remove_node(ctrl)
        finally:
            ctrl.destroy_node()


def test_a_solve_under_way_when_the_planner_is_deactivated_is_never_published(request, tmp_path, monkeypatch):
    """An operator deactivates the planner to stop what it was planning, cleans it up, configures and activates it
    again — all while a solve runs. That solve is not published, not even once the node is active again (it was
    checked against ``active`` at publish time alone: a quick re-activation let the old plan out, and a controller
    would have run it). The solve is held until the node is active again by a gate around the real solve."""
    import threading

    import vi_control.ros.planner_node as planner_module
    from vi_control.ros.planner_node import PlannerNode
    from vi_control.ros.planner_requests import Request

    started, reactivated = threading.Event(), threading.Event()
    real_solve = planner_module.solve_request

    def gated_solve(*args, **kwargs):
        started.set()
        assert reactivated.wait(60.0)
        return real_solve(*args, **kwargs)

    monkeypatch.setattr(planner_module, "solve_request", gated_solve)
    params = [*_pendulum_mpc_planner(tmp_path), "-p", "mode:=plan"]
    with node_in_process(request.node.name, PlannerNode, params) as planner:
        planner.on_joint_state(_joint_state(planner._now(), 0.0, 0.0))
        job = planner._job(Request("task"), "test", None, 0.0)
        worker = threading.Thread(target=planner._plan, args=(job,))
        worker.start()
        assert started.wait(60.0)
        for transition in ("deactivate", "cleanup", "configure", "activate"):
            assert getattr(planner, f"trigger_{transition}")() == R.SUCCESS, transition
        assert planner.active
        planner.on_joint_state(_joint_state(planner._now(), 0.0, 0.0))
        reactivated.set()
        worker.join(60.0)
        assert not worker.is_alive()
        assert planner.last_plan is None and planner.last_seq is None  # nothing published


def test_an_mpc_cycle_that_overruns_its_period_is_counted_and_the_last_plan_goes_on(request, tmp_path):
    """Mode mpc, a cycle still being solved when the next ones come due (the panda reach over 3000 steps: a cycle
    of a few hundred ms against a 0.1 s period): each tick that finds it running is an overrun — counted in
    /diagnostics (WARN), warned (throttled) — and starts nothing: no second solve queued behind it (it would plan
    from a state already old), the plan that runs goes on. The cycle itself finishes and is published as usual."""
    from log_record import RecordingLogger

    from vi_control.ros.planner_node import PlannerNode
    from vi_control.ros.planner_requests import Request
    from vi_control.ros.supervision import WARN, planner_diagnostics

    task = tmp_path / "panda_long_mpc.yaml"
    text = (Path(__file__).resolve().parents[2] / "config" / "task_panda_reach.yaml").read_text()
    task.write_text(text.replace("horizon: 20", "horizon: 3000") + "mpc: {period: 0.1, max_iterations: 10}\n")
    params = ["-p", f"task:={task}", "-p", "mode:=mpc", "-p", "plan_on_startup:=false", "-p", "controller_name:=''"]
    params += ["-p", "start_delay:=0.0"]
    with node_in_process(request.node.name, PlannerNode, params) as planner:
        planner.warn.logger = logged = RecordingLogger(planner.warn.logger)
        names = planner.vi.robot.joint_names
        q0 = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])
        planner.on_joint_state(_joint_state(planner._now(), q0, np.zeros(7), names))
        planner._plan(planner._job(Request("task"), "test", None, 0.0))
        first = planner.last_plan
        assert planner.mpc.t0 is not None and first is not None and first.horizon == 3000
        t = max(planner._now(), planner.mpc.t0) + 0.05
        planner.on_joint_state(_joint_state(t, q0 + 0.1, np.zeros(7), names))  # (off the plan: the cycle has work)
        planner._submit(Request("mpc"), "mpc")
        worker = planner._worker
        planner._mpc_tick()
        planner._mpc_tick()
        assert worker is not None and planner._worker is worker and worker.is_alive()  # (still solving)
        assert planner.mpc_counts["overruns"] == 2 and planner._pending is None
        assert planner.last_plan is first  # (the running plan goes on)
        level, status, values = planner_diagnostics(True, True, planner.mpc, planner.mpc_counts, 0.0, first)
        assert level == WARN and values["mpc_overruns"] == 2, (status, values)
        # (warned once: the warning is throttled, the count is not)
        assert logged.text().count("mpc: a cycle overran its period (0.1 s): the last plan goes on (1 overruns)") == 1
        worker.join(60.0)
        counts = dict(planner.mpc_counts)
        assert counts["cycles"] == 1 and counts["accepted"] + counts["not_accepted"] == 1, counts
        assert counts["overruns"] == 2 and planner._worker is None
        assert counts["accepted"] == 0 or planner.last_plan is not first  # (an accepted cycle is published)


@pytest.mark.parametrize("trigger", ["joint_state", "timer"])
def test_an_arm_too_fast_during_a_plan_aborts_it_and_is_braked(request, trigger):
    """A plan runs (the pendulum held hanging, zero gains: its law commands nothing); a joint state at 1.2 × the
    velocity bound (1.5 × the URDF's 20 rad/s) is the robot's own over-speed: the plan is aborted — the law that drove
    it there stops — and the command is the brake (damping −d·q̇, clamped), not the plan's zero; the next state at
    rest gets the safe command of an aborted plan, until a new plan comes. With either trigger: on the state itself,
    or on the timer's next tick (the state kept, its over-speed noted)."""
    from rclpy.parameter import Parameter

    from vi_control.control.intake import FAULT_OVERSPEED
    from vi_control.ros.controller_node import ControllerNode
    from vi_control.ros.messages import plan_to_message

    params = ["-p", "model:=pendulum", "-p", f"trigger:={trigger}"]
    with node_in_process(request.node.name, ControllerNode, params) as node:
        assert node.set_parameters_atomically([Parameter("state_timeout", value=30.0)]).successful
        dt, t0 = node.vi.dt, node._now() - 1.0  # (stamps in the past)
        node.on_plan(plan_to_message(_hanging_plan(node.robot, dt, 200).shifted(t0), 7))
        node.on_joint_state(_joint_state(t0, 0.0, 0.0))
        node.tick()
        assert node.runner.active_seq == 7 and node.runner.aborted is None and np.array(node.cmd.data)[0] == 0.0
        bound = 1.5 * node.robot.joints[0].velocity_limit
        node.on_joint_state(_joint_state(t0 + dt, 0.0, 1.2 * bound))
        node.tick()
        assert node.runner.aborted is not None and node.runner.aborted[0] == FAULT_OVERSPEED
        assert node.runner.fault_counts.get(FAULT_OVERSPEED, 0) >= 1
        assert np.array(node.cmd.data)[0] < 0.0  # braking against the motion
        node.on_joint_state(_joint_state(t0 + 2 * dt, 0.0, 0.0))
        node.tick()
        assert node.runner.aborted is not None  # (stays aborted: a plan resumes only with a new plan)


def test_a_joint_state_exactly_state_timeout_old_is_still_fresh(controller_in_process):
    """The controller's stale check at its boundary: a state exactly ``state_timeout`` old on the node's clock is
    used (the law's command, no fault); one ulp older is stale (the safe command, counted)."""
    from rclpy.parameter import Parameter

    from vi_control.control.intake import FAULT_STALE
    from vi_control.ros.messages import plan_to_message

    node = controller_in_process
    timeout = 0.25
    assert node.set_parameters_atomically([Parameter("state_timeout", value=timeout)]).successful
    dt, t0 = node.vi.dt, node._now() - 0.1
    plan = _hanging_plan(node.robot, dt, 200).shifted(t0)
    node.on_plan(plan_to_message(dataclasses.replace(plan, U=np.full((200, 1), 0.5)), 8))
    node.on_joint_state(_joint_state(t0, 0.0, 0.0))
    t = node.intake.state.t
    node.tick(now=t + timeout)
    assert np.array(node.cmd.data)[0] == 0.5 and not node.runner.fault_counts.get(FAULT_STALE)
    node.tick(now=np.nextafter(t + timeout, np.inf))
    assert node.runner.fault_counts.get(FAULT_STALE) == 1 and np.array(node.cmd.data)[0] != 0.5


def test_an_mpc_cycle_continues_the_plan_that_runs_at_its_start_not_the_latest(request, tmp_path):
    """A plan published to start 1 s later (a cycle whose lead a clock-rate transient stretched) is the latest, but
    at the next cycle's start the task's first plan still runs: that cycle continues the first plan's law (its step
    0's gain is the first plan's K_k there) and, starting earlier, replaces the stretched one."""
    from vi_control.control.tracking import plan_step
    from vi_control.ros.planner_node import PlannerNode
    from vi_control.ros.planner_requests import Request

    params = _pendulum_mpc_planner(tmp_path) + ["-p", "start_delay:=0.0"]
    with node_in_process(request.node.name, PlannerNode, params) as planner:
        planner.on_joint_state(_joint_state(planner._now(), 0.0, 0.0))
        planner._plan(planner._job(Request("task"), "test", None, 0.0))
        first = planner.last_plan
        stretched = first.shifted(float(first.times[0]) + 1.0)
        planner.schedule.add(stretched)  # (as the planner records a plan it publishes)
        planner.last_plan = stretched
        planner.on_joint_state(_joint_state(max(planner._now(), planner.mpc.t0) + 0.05, 0.0, 0.0))
        planner._plan(planner._job(Request("mpc"), "mpc", None, 0.0))
        cycle = planner.last_plan
        assert cycle is not stretched and cycle.times[0] < stretched.times[0]
        k = plan_step(float(cycle.times[0]), float(first.times[0]), first.dt)
        assert 0 <= k < first.horizon and np.array_equal(cycle.K[0], first.K[k])
        assert [p is stretched for p in planner.schedule.plans] == [False] * len(planner.schedule.plans)


def test_a_request_waiting_behind_a_solve_is_superseded_by_the_next_and_never_solved(request, tmp_path, monkeypatch):
    """Three requests while the first is being solved (a gate around the real solve holds it): the second waits
    (queued), the third replaces it — the second is reported superseded, naming the request that replaced it, and
    never solved — and once the first is published the third is solved and published too. Every request hears one
    outcome; the two solved are accepted, in order."""
    import threading

    import vi_control.ros.planner_node as planner_module
    from vi_control.ros.planner_node import PlannerNode
    from vi_control.ros.planner_requests import Request

    started, release = threading.Event(), threading.Event()
    real_solve, solved = planner_module.solve_request, []

    def gated_solve(request, *args, **kwargs):
        solved.append(request)
        started.set()
        assert release.wait(60.0)
        return real_solve(request, *args, **kwargs)

    monkeypatch.setattr(planner_module, "solve_request", gated_solve)
    params = [*_pendulum_mpc_planner(tmp_path), "-p", "mode:=plan"]
    with node_in_process(request.node.name, PlannerNode, params) as planner:
        statuses = _record_statuses(planner, monkeypatch)
        planner.on_joint_state(_joint_state(planner._now(), 0.0, 0.0))
        first = planner._submit(Request("task"), "test")
        assert started.wait(60.0)
        second = planner._submit(Request("task"), "test")
        third = planner._submit(Request("task"), "test")
        worker = planner._worker
        release.set()
        worker.join(60.0)
        assert not worker.is_alive() and planner._worker is None and planner._pending is None
        outcome = {}
        for s in statuses:
            outcome.setdefault(int(s["request"]), []).append(s["state"])
        assert outcome[first.id] == ["planning", "accepted"], outcome
        assert outcome[second.id] == ["queued", "superseded"], outcome
        assert outcome[third.id] == ["queued", "planning", "accepted"], outcome
        (reason,) = [s["reason"] for s in statuses if s["state"] == "superseded"]
        assert reason == f"request {third.id} came before it was solved"
        assert len(solved) == 2  # (the first and the third: the second never reached the solver)
        assert planner.last_seq is not None and planner.last_plan is not None


@pytest.mark.parametrize("timeout", [0.05, 0.0])
def test_the_simulator_brakes_when_commands_stop_for_command_timeout(timeout, request):
    """Real time, ``command_timeout`` 0.05 s at Δt = 0.01: after a valid command the pendulum (started 1 rad out)
    swings on under it for exactly 6 steps — the last from the state 0.05 s after the command (not beyond the
    timeout); the 7th would start 0.06 s after it: the brakes hold the joint where it is, at rest (the held state:
    q_{k−1} = q_k), said once; the next valid command releases them and the pendulum moves again from rest. With 0
    (the default) the last command stays applied: it swings on."""
    from in_process import record_logs
    from std_msgs.msg import Float64MultiArray

    from vi_control.control.hold import equilibrium_state
    from vi_control.ros.simulator_node import SimulatorNode

    params = ["-p", "model:=pendulum", "-p", "mode:=realtime", "-p", "dt:=0.01", "-p", "initial_positions:=[1.0]"]
    params += ["-p", f"command_timeout:={timeout}"]
    with node_in_process(request.node.name, SimulatorNode, params) as sim:
        logged = record_logs(sim).messages
        vi = sim.vi

        def steps(n: int) -> np.ndarray:
            out = []
            for _ in range(n):
                assert sim.advance()
                out.append(sim.x.copy())
            return np.array(out)

        sim.on_command(Float64MultiArray(data=[0.0]), None)
        free = steps(6)  # (from the states 0 … 0.05 s after the command: within the timeout)
        assert np.all(np.abs(np.diff(free[:, 0])) > 1e-4)  # (swinging under gravity)
        after = steps(20)
        braked = [m for _, m in logged if "brakes engaged" in m]
        if timeout == 0.0:
            assert np.all(np.abs(np.diff(after[:, 0])) > 1e-6) and not braked, logged
            return
        q = free[-1, 0]  # (where the brakes found it)
        assert np.all(after[:, 0] == q), after[:, 0]  # held there from the 6th step on
        assert np.allclose(after, equilibrium_state(vi, np.array([q])), rtol=0, atol=0)
        assert len(braked) == 1 and "no valid command for 0.06 s" in braked[0], logged
        sim.on_command(Float64MultiArray(data=[0.0]), None)
        assert any("brakes released" in m for _, m in logged), logged
        moving = steps(3)
        assert moving[-1, 0] != q and abs(moving[0, 0] - q) < abs(free[-1, 0] - free[-2, 0])  # (from rest)


@pytest.mark.parametrize(
    "param, value, match",
    [
        ("safe_mode", "explode", r"^parameter safe_mode must be one of \['hold', 'zero', 'damping'\], got 'explode'$"),
        ("safe_damping", "nan", r"parameter value \(nan\).*safe_damping out of range"),  # (rclpy's range check)
        ("safe_mode", "damping", None),  # (just inside: a choice, a finite number)
        ("safe_damping", "0.5", None),
    ],
)
def test_a_start_up_parameter_outside_its_choices_or_not_finite_stops_the_node(request, param, value, match):
    """A params file (or ``-p``) with a value the node's on-set callback would refuse later is refused at start-up
    too, naming the parameter and what it must be: the node is not built. rclpy checks the declared type and range
    (NaN is outside every range), the node its choices."""
    from vi_control.ros.controller_node import ControllerNode

    params = ["-p", "model:=pendulum", "-p", f"{param}:={value}"]
    if match is None:
        with node_in_process(request.node.name, ControllerNode, params) as node:
            assert str(node.get_parameter(param).value) == value
        return
    from rclpy.exceptions import InvalidParameterValueException

    with pytest.raises((ValueError, InvalidParameterValueException), match=match):
        with node_in_process(request.node.name, ControllerNode, params):
            pass
