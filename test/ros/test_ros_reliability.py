"""Nodes over real DDS: unconverged plans stay off the wire unless asked for, are marked
when they go out, are refused by controllers unless told otherwise; a flood of bad commands is not a log flood."""

import time

import numpy as np
import pytest

pytest.importorskip("rclpy")

from sensor_msgs.msg import JointState  # noqa: E402
from test_ros_dds import DISCOVERY  # noqa: E402

from vi_control.control.runner import HOLD_WEIGHTS  # noqa: E402
from vi_control.control.tracking import HoldLaw, TrackingController  # noqa: E402
from vi_control.model.bundled import share_dir  # noqa: E402
from vi_control.ros.messages import FLAG_CONVERGED, split_seconds  # noqa: E402

pytestmark = pytest.mark.ros


def _two_iteration_task(tmp_path) -> str:
    """Johnson2015's swing-up stopped after 2 DDP iterations: far from converged (cost ~1e4, not ~1e2)."""
    text = (share_dir() / "config" / "task_pendulum_swingup.yaml").read_text()
    text = text.replace(
        "optimizer: {method: ddp, max_iterations: 50, tolerance: 1.0e-6}",
        "optimizer: {method: ddp, max_iterations: 2, tolerance: 1.0e-6}",
    )
    assert "max_iterations: 2" in text
    path = tmp_path / "task_two_iterations.yaml"
    path.write_text(text)
    return str(path)


def test_unconverged_plan_is_not_published_by_default(ros, tmp_path):
    planner = ros.start("planner_node", task=_two_iteration_task(tmp_path), startup_wait=0.0)
    rec = ros.recorder(["theta"])
    assert planner.wait_for_log("plan not published: the optimizer did not converge", DISCOVERY), planner.log()
    time.sleep(2.0)  # a latched plan would have arrived by now (republish period 1 s)
    assert rec.plan_message is None and "published plan" not in planner.log()
    assert planner.alive


def test_unconverged_plan_goes_out_marked_and_only_a_willing_controller_tracks_it(ros, tmp_path, pendulum_vi):
    """publish_unconverged: the plan arrives with its converged flag clear; a default controller refuses it and
    commands nothing; one with accept_unconverged tracks it: its command is u = U_0 + K_0 (X_0 − x) of that plan."""
    planner = ros.start("planner_node", task=_two_iteration_task(tmp_path), startup_wait=0.0, publish_unconverged=True)
    refusing = ros.start(
        "controller_node",
        name="refusing",
        model="pendulum",
        dt=0.1,
        trigger="joint_state",
        controller_name="refusing_controller",
        state_estimate="velocities",  # (every copy of the state below: the same estimate, the same hold command)
    )
    willing = ros.start(
        "controller_node",
        name="willing",
        model="pendulum",
        dt=0.1,
        trigger="joint_state",
        controller_name="willing_controller",
        accept_unconverged=True,
        state_estimate="velocities",
    )
    rec_no = ros.recorder(["theta"], controller_name="refusing_controller", name="rec_refusing")
    rec_yes = ros.recorder(["theta"], controller_name="willing_controller", name="rec_willing", record_states=False)
    assert rec_no.wait_for(lambda: rec_no.plan_message is not None, DISCOVERY), planner.log()
    seq, plan, flags = rec_no.plan()
    assert not flags & FLAG_CONVERGED and not plan.converged
    assert planner.wait_for_log("UNCONVERGED, best effort", DISCOVERY), planner.log()
    assert refusing.wait_for_log(f"plan {seq} rejected: marked unconverged", DISCOVERY), refusing.log()
    assert willing.wait_for_log(f"accepted plan {seq}", DISCOVERY), willing.log()
    assert "UNCONVERGED (best effort)" in willing.log()

    # one joint state (with a velocity: the estimate needs no history) to both controllers
    # both controllers, the planner and this recorder itself listen to joint_states (one message: all must match)
    assert rec_no.wait_for(lambda: rec_no.state_pub.get_subscription_count() >= 4, DISCOVERY)
    # and each controller's commands reach its recorder (the only publisher on the topic): the
    # willing one's answer to the first state is the one at step 0, the refusing one answers that state alone (its
    # hold), and a command sent before the reader matched is lost
    assert rec_yes.wait_for(lambda: rec_yes.count_publishers("willing_controller/commands") > 0, DISCOVERY)
    assert rec_no.wait_for(lambda: rec_no.count_publishers("refusing_controller/commands") > 0, DISCOVERY)
    q, qdot, t = np.array([0.05]), np.array([0.2]), time.time()  # fresh on the controllers' wall clock
    msg = JointState(name=["theta"], position=q.tolist(), velocity=qdot.tolist())
    msg.header.stamp.sec, msg.header.stamp.nanosec = split_seconds(t)
    # the plan starts on receipt (no measured state when planned): step 0 at this state
    x = np.concatenate([q, qdot - pendulum_vi.dt / 2 * 9.8 * np.sin(q)])  # p = m l² q̇ − (Δt/2) m g l sin q
    law = TrackingController(plan, pendulum_vi.state, pendulum_vi.robot.effort_limits, system=pendulum_vi)
    expected, _ = law.command(0, x)
    assert abs(expected[0]) > 0.1  # distinguishable from the watchdog's safe commands (zero before any state)
    # the same state, freshly stamped, until it is answered (a best-effort subscriber may drop a message sent before
    # it matched the publisher): the copy that arrives first enters the plan at its step 0, whose command is expected
    # — until both controllers have answered: each subscriber may miss a copy the other took (a fresh-clone CI run: the
    # willing one answered the first copy, the refusing one never had a state, and the loop had stopped)
    answered = lambda: any(np.allclose(c, expected, rtol=1e-9, atol=1e-9) for _, c in rec_yes.commands)  # noqa: E731
    for _ in range(int(DISCOVERY / 0.5)):
        msg.header.stamp.sec, msg.header.stamp.nanosec = split_seconds(time.time())
        rec_no.state_pub.publish(msg)
        if rec_yes.wait_for(answered, 0.5) and rec_no.wait_for(lambda: rec_no.commands, 0.5):
            break
    assert answered(), (expected, rec_yes.commands[-5:], willing.log())
    time.sleep(1.0)
    # the refusing controller never tracks the plan: without one it holds the measured q (safe_mode hold: gravity
    # compensation and the hold gain), then, the state gone stale, its gravity torque alone, then zero
    assert not any(np.allclose(c, expected, rtol=1e-6, atol=1e-6) for _, c in rec_no.commands), rec_no.commands
    hold = HoldLaw(pendulum_vi, tuple(HOLD_WEIGHTS.values()))
    hold.engage(q)
    allowed = [hold.command(x)[0], hold.feedforward(), np.zeros(1)]
    assert rec_no.wait_for(lambda: rec_no.commands, DISCOVERY), refusing.log()
    assert all(any(np.allclose(c, a, rtol=1e-9, atol=1e-9) for a in allowed) for _, c in rec_no.commands), (
        allowed,
        rec_no.commands,
        refusing.log(),
    )
    assert all(p.alive for p in (planner, refusing, willing))


@pytest.mark.parametrize("burst", [400])
def test_a_burst_of_bad_commands_is_not_a_log_flood(ros, burst):
    """Every bad command is still answered (lockstep: one step each, with the held command), but the warning is
    throttled: a few lines per kind of fault, not one per message (1.6 MB per 2 min before)."""
    sim = ros.start("simulator_node", model="pendulum", dt=0.01, mode="lockstep", idle_publish_period=10.0)
    rec = ros.recorder(["theta"])
    assert rec.wait_for(lambda: rec.states and rec.cmd_pub.get_subscription_count() > 0, DISCOVERY), sim.log()
    n0, t0 = len(rec.states), time.monotonic()
    for i in range(burst):  # as fast as the simulator answers (a deeper burst would only fill the QoS queue)
        rec.publish_command([float("nan")] if i % 2 else [1.0, 2.0])
        assert rec.wait_for(lambda i=i: len(rec.states) >= n0 + i + 1, 10.0), (i, sim.log()[-2000:])
    elapsed = time.monotonic() - t0
    time.sleep(0.5)
    lines = [ln for ln in sim.log().splitlines() if "rejected command" in ln]
    kinds = {"NaN/inf": [ln for ln in lines if "NaN/inf" in ln], "size": [ln for ln in lines if "size 2" in ln]}
    bound = 2 + int(elapsed / 2.0)  # throttle period 2 s, per kind
    assert all(1 <= len(v) <= bound for v in kinds.values()), (elapsed, lines)
    assert sim.alive


def test_a_node_that_crashes_while_constructing_leaves_its_traceback(tmp_path):
    """run_node enables faulthandler before the node exists (the EventsExecutor enables it only once made: a node
    killed between its first log line and its executor left no traceback, so the next test's report had none).
    The crash is the constructing thread's own (pthread_kill, as a fault in a C extension is): a process-directed
    os.kill may be delivered to one of rclpy's threads while the constructor returns and the main thread goes on
    (CI, 2026-11-28: the dump showed the main thread importing for the executor, no ``__init__``)."""
    import signal as sig
    import subprocess
    import sys

    script = tmp_path / "crash.py"
    script.write_text(
        "import signal, threading\nfrom vi_control.ros.common import run_node\n\n"
        "class Crashing:\n    def __init__(self):\n"
        "        signal.pthread_kill(threading.get_ident(), signal.SIGSEGV)\n\n"
        "run_node(Crashing, [])\n"
    )
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert out.returncode == -sig.SIGSEGV, (out.returncode, out.stderr)
    assert "Fatal Python error: Segmentation fault" in out.stderr and "in __init__" in out.stderr, out.stderr


def test_a_crashed_node_is_reported_with_its_fatal_error(ros):
    """NodeProcess.report (what a failed ROS test prints): a node killed by SIGSEGV shows its exit code and the
    fatal-error section faulthandler wrote (the EventsExecutor enables it), not only the log's last lines."""
    import signal as sig

    sim = ros.start("simulator_node", model="pendulum")
    assert sim.wait_for_log("mode=", DISCOVERY), sim.log()
    assert "(running)" in sim.report()
    sim.signal(sig.SIGSEGV)
    sim.proc.wait(10.0)
    text = sim.report()
    assert f"exited with {-sig.SIGSEGV}" in text, text
    assert "Fatal Python error: Segmentation fault" in text and "most recent call first" in text, text
