"""Children die with their parent (launcher.die_with_parent): a node process whose starter is SIGKILLed — a test run
stopped by its timeout, a main job killed — ends too, instead of spinning on with parent 1. The starter here is a real
process that starts a real simulator node through ``NodeProcess`` and is then killed without any chance to clean up."""

import os
import signal
import subprocess
import sys
import time

import pytest

pytest.importorskip("rclpy")

from vi_control.ros.launcher import domain_id_for  # noqa: E402

pytestmark = pytest.mark.ros

STARTER = """
import sys, time
from vi_control.ros.launcher import NodeProcess
p = NodeProcess("simulator_node", int(sys.argv[1]), overrides=dict(model="pendulum", dt=0.01, mode="realtime"),
                log_dir=sys.argv[2], namespace="/orphan_test")
print(p.proc.pid, flush=True)
p.wait_for_log("pendulum: nq=1", 60.0)
print("up", flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1].split()[0] != "Z"  # (a zombie has died: only its parent's wait is due)
    except (FileNotFoundError, IndexError):
        return False


def test_a_node_ends_when_its_starter_is_killed(request, tmp_path):
    starter = subprocess.Popen(
        [sys.executable, "-c", STARTER, str(domain_id_for(request.node.name)), str(tmp_path)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        child = int(starter.stdout.readline())
        assert starter.stdout.readline().strip() == "up", (tmp_path / "simulator_node.log").read_text()
        assert _alive(child)
        starter.send_signal(signal.SIGKILL)
        starter.wait(10)
        deadline = time.monotonic() + 15.0
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(child), f"node {child} outlived its starter"
        log = (tmp_path / "simulator_node.log").read_text()
        assert "Traceback" not in log, log[-2000:]  # (SIGTERM from the kernel: the clean stop)
    finally:
        if starter.poll() is None:
            starter.kill()
        try:
            os.kill(child, signal.SIGKILL)
        except (ProcessLookupError, UnboundLocalError):
            pass
