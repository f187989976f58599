"""Every lifecycle transition of every node, performed over DDS: configure, activate,
deactivate, cleanup and shutdown from each state they start from (unconfigured, inactive, active) of the
simulator, the planner and the controller, in one test process on its own domain (``launcher.domain_id_for``). Each
node type runs as three processes (one per state it is shut down from, in namespaces of their own); after every
transition the node's ~/get_state says the state the lifecycle defines, transitions a state does not have are
refused and leave it there, and a shutdown from any state ends the process with exit code 0."""

import pytest

rclpy = pytest.importorskip("rclpy")

from lifecycle_msgs.msg import Transition as T  # noqa: E402
from lifecycle_msgs.srv import GetState  # noqa: E402

from vi_control.ros.launcher import NodeProcess  # noqa: E402

pytestmark = pytest.mark.ros

NODES = {
    "simulator_node": ("vi_simulator", dict(model="pendulum", dt=0.1, mode="lockstep")),
    "controller_node": ("vi_controller", dict(model="pendulum", dt=0.1, trigger="joint_state")),
    "planner_node": ("vi_planner", dict(task="task_pendulum_swingup_bounded", plan_on_startup=False)),
}
# (transition, the state after it, whether the lifecycle has it from the state before)
RUNS = {
    "active": [
        (T.TRANSITION_ACTIVATE, "unconfigured", False),
        (T.TRANSITION_CONFIGURE, "inactive", True),
        (T.TRANSITION_ACTIVATE, "active", True),
        (T.TRANSITION_CLEANUP, "active", False),
        (T.TRANSITION_DEACTIVATE, "inactive", True),
        (T.TRANSITION_ACTIVATE, "active", True),
        (T.TRANSITION_DEACTIVATE, "inactive", True),
        (T.TRANSITION_CLEANUP, "unconfigured", True),
        (T.TRANSITION_CONFIGURE, "inactive", True),
        (T.TRANSITION_ACTIVATE, "active", True),
        (T.TRANSITION_ACTIVE_SHUTDOWN, "finalized", True),
    ],
    "inactive": [
        (T.TRANSITION_CONFIGURE, "inactive", True),
        (T.TRANSITION_DEACTIVATE, "inactive", False),
        (T.TRANSITION_INACTIVE_SHUTDOWN, "finalized", True),
    ],
    "unconfigured": [
        (T.TRANSITION_DEACTIVATE, "unconfigured", False),
        (T.TRANSITION_UNCONFIGURED_SHUTDOWN, "finalized", True),
    ],
}


def _state(rec, node: str) -> str:
    return rec.call(GetState, f"{node}/get_state", GetState.Request(), timeout=60.0).current_state.label


def test_every_transition_of_every_node_over_dds(ros):
    rec = ros.recorder(["theta"], record_states=False)
    procs = {}
    for module, (name, over) in NODES.items():
        for run in RUNS:
            ns = f"{ros.ns}_{run}"
            p = NodeProcess(
                module,
                ros.domain,
                overrides=dict(over, autostart=False),
                log_dir=str(ros.log_dir),
                name=f"{name}_{run}",
                namespace=ns,
            )
            ros.procs.append(p)
            procs[module, run] = (p, f"{ns}/{name}")
    for (module, run), (p, node) in procs.items():
        assert _state(rec, node) == "unconfigured", p.log()
        for transition, after, valid in RUNS[run]:
            ok = rec.transition(node, transition)
            assert ok == valid, (module, run, transition, p.log()[-2000:])
            if after == "finalized":
                p.proc.wait(30)
                assert p.proc.returncode == 0, (module, run, p.log()[-2000:])
            else:
                assert _state(rec, node) == after, (module, run, transition, p.log()[-2000:])
