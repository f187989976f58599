"""Real-time scheduling of the controller (``realtime_priority``, what lets it answer 1 kHz joint states on a
loaded machine: benchmarks/bench_ros.py): every thread of the node's process runs SCHED_FIFO while it tracks,
and a refusal by the OS is a clear message, not a crash."""

import os
import subprocess
import sys
import time

import numpy as np
import pytest

from vi_control.ros.common import realtime_scheduling

pytestmark = pytest.mark.ros

CHILD = """
import os, resource
from vi_control.ros.common import realtime_scheduling
if os.geteuid() == 0:  # root (CAP_SYS_NICE) may always: become an ordinary user
    os.setgid(65534)
    os.setuid(65534)
resource.setrlimit(resource.RLIMIT_RTPRIO, (0, 0))
print(realtime_scheduling(50))
print(os.sched_getscheduler(0) == os.SCHED_OTHER)
"""


def test_refusal_is_a_message_and_changes_nothing():
    out = subprocess.run(
        [sys.executable, "-c", CHILD],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)),
    )
    assert out.returncode == 0, out.stderr
    why, unchanged = out.stdout.strip().splitlines()[-2:]
    assert "SCHED_FIFO priority 50 refused" in why and "rtprio" in why and "CAP_SYS_NICE" in why
    assert unchanged == "True"


def test_bad_priority_and_pid():
    with pytest.raises(ValueError, match="0…99"):
        realtime_scheduling(100)
    assert "cannot list the threads" in realtime_scheduling(10, pid=2**22 + 12345)


def _policies(pid: int) -> set[tuple[int, int]]:
    out = set()
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            out.add((os.sched_getscheduler(int(tid)), os.sched_getparam(int(tid)).sched_priority))
        except ProcessLookupError:
            pass
    return out


def test_controller_threads_run_fifo_and_still_answer_states(ros, pendulum_vi):
    from sensor_msgs.msg import JointState
    from std_msgs.msg import UInt8MultiArray
    from test_ros_dds import DISCOVERY, _pendulum_hold_plan

    from vi_control.ros.common import LATCHED_QOS
    from vi_control.ros.messages import plan_to_message

    vi = pendulum_vi
    ctrl = ros.start(
        "controller_node",
        model="pendulum",
        dt=vi.dt,
        trigger="joint_state",
        state_timeout=5.0,
        state_estimate="velocities",
        realtime_priority=30,
    )
    rec = ros.recorder(["theta"])
    plan = _pendulum_hold_plan(vi, 500, t0=0.0)  # 50 s: the state below arrives during the plan
    rec.create_publisher(UInt8MultiArray, "vi_planner/plan", LATCHED_QOS).publish(
        plan_to_message(plan, 5, start_on_receipt=True)
    )
    assert ctrl.wait_for_log("accepted plan 5", DISCOVERY), ctrl.log()
    if "refused" in ctrl.log():
        pytest.skip("this machine refuses SCHED_FIFO (no rtprio limit / CAP_SYS_NICE): " + ctrl.log()[-300:])
    assert ctrl.wait_for_log("SCHED_FIFO priority 30 for every thread", 5.0), ctrl.log()
    assert _policies(ctrl.proc.pid) == {(os.SCHED_FIFO, 30)}
    assert rec.wait_for(lambda: rec.state_pub.get_subscription_count() > 0, DISCOVERY)
    assert rec.wait_for(lambda: rec.count_publishers("effort_controller/commands") > 0, DISCOVERY)  # (commands heard)
    q = np.array([np.pi - 0.05])
    msg = JointState(name=["theta"], position=q.tolist(), velocity=[0.0])
    msg.header.stamp = rec.get_clock().now().to_msg()
    rec.state_pub.publish(msg)
    assert rec.wait_for(lambda: len(rec.commands) > 0, 10.0), ctrl.log()
    x_meas = np.concatenate([q, -vi.dt / 2 * 9.8 * np.sin(q)])  # q̇ = 0: p = −(Δt/2) m g l sin q, held still
    u_expected = plan.K[0] @ vi.state.diff(x_meas, plan.X[0])  # u = U_k + K_k (X_k ⊖ x), U = 0, X and K constant
    assert rec.commands[-1][1][0] == pytest.approx(u_expected[0], abs=1e-9)
    time.sleep(0.1)
    assert ctrl.alive
