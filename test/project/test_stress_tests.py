"""scripts/stress_tests.py (load-dependent failures, docs/guides/testing.md): one run of a fast test file under a busy
loop is summarized; starving stops and continues only the node processes below the given root."""

import importlib.util
import os
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "stress_tests.py"
spec = importlib.util.spec_from_file_location("stress_tests", SCRIPT)
stress = importlib.util.module_from_spec(spec)
spec.loader.exec_module(stress)


def test_a_run_under_a_busy_loop_is_summarized(tmp_path, capsys):
    args = ["test/ros/test_ros_throttled_log.py", "--reps", "1", "--busy", "1", "--out", str(tmp_path)]
    assert stress.main(args) == 0
    line = (tmp_path / "summary.txt").read_text().splitlines()
    assert len(line) == 1 and " rep=1 rc=0 " in line[0] and line[0].endswith("test/ros/test_ros_throttled_log.py ")
    assert "| test/ros/test_ros_throttled_log.py | 1 | 0 | — |" in capsys.readouterr().out


def test_starving_stops_and_continues_the_node_processes_below_the_root():
    # a parent with two children: a "node" (its command line names a vi_control.ros module) and another process
    code = (
        "import subprocess, sys, time; kids = [subprocess.Popen([sys.executable, '-c', 'import time; "
        "time.sleep(30)', arg]) for arg in ('vi_control.ros.fake_node', 'other')]; time.sleep(30)"
    )
    parent = subprocess.Popen([sys.executable, "-c", code])
    try:
        deadline = time.monotonic() + 20.0
        while len(stress.descendants(parent.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        kids = stress.descendants(parent.pid)
        node = [p for p in kids if stress.is_node(p)]
        assert len(kids) == 2 and len(node) == 1
        done, result = threading.Event(), []
        starver = threading.Thread(
            target=lambda: result.append(stress.starve(parent.pid, (0.05, 0.1), done, random.Random(1)))
        )
        starver.start()
        stopped = False
        while not stopped and time.monotonic() < deadline:  # the node is seen stopped ('T'), the other never
            stopped = Path(f"/proc/{node[0]}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T"
            time.sleep(0.005)
        done.set()
        starver.join()
        assert stopped and result[0] >= 1
        for pid in kids:  # all running again
            assert Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in "RS"
    finally:
        for pid in stress.descendants(parent.pid):
            os.kill(pid, 9)
        parent.kill()
        parent.wait()
