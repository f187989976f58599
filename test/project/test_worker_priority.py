"""The process tests' worker puts the other pytest-xdist workers in the background (test/support/worker_priority.py):
real processes, a parent with three children as xdist's controller has its workers — the one that calls sets its two
siblings to BACKGROUND_NICE and leaves itself, its parent and a process of another parent as they were."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from worker_priority import BACKGROUND_NICE

SUPPORT = Path(__file__).resolve().parents[1] / "support"

# The controller: three children (the caller last) and one grandchild under the first (a compiler a worker started
# earlier: not a sibling). Prints each one's niceness after the caller is done.
CONTROLLER = textwrap.dedent(
    """
    import os, subprocess, sys, time
    sleep = [sys.executable, "-c", "import time; time.sleep(60)"]
    env = dict(os.environ, PYTEST_XDIST_WORKER="gw9")
    kids = [subprocess.Popen(sleep, env=env) for _ in range(2)]
    grandchild = subprocess.Popen([sys.executable, "-c",
        "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
        "time.sleep(60)"])
    time.sleep(0.5)
    caller = subprocess.run([sys.executable, "-c",
        "import sys; sys.path.insert(0, sys.argv[1]); import worker_priority as w; "
        "print(sorted(w.background_other_workers())); print(w.background_other_workers()); "
        "import os; print(os.getpriority(os.PRIO_PROCESS, 0))", sys.argv[1]],
        env=env, capture_output=True, text=True)
    print(caller.stdout, caller.stderr, file=sys.stderr)
    lines = caller.stdout.split("\\n")
    kids.append(grandchild)
    print(lines[0]); print(lines[1]); print(lines[2])
    print(sorted(k.pid for k in kids))
    print([os.getpriority(os.PRIO_PROCESS, k.pid) for k in kids[:2]])
    print(os.getpriority(os.PRIO_PROCESS, 0))
    for k in kids:
        k.kill()
    """
)


def test_the_other_workers_go_to_the_background_and_nothing_else(tmp_path):
    res = subprocess.run(
        [sys.executable, "-c", CONTROLLER, str(SUPPORT)], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert res.returncode == 0, res.stderr[-2000:]
    set_pids, second, own, siblings, kids_nice, parent_nice = res.stdout.strip().splitlines()
    # the caller's siblings are exactly the controller's other children (the grandchild is not among them)
    assert eval(set_pids) == eval(siblings), res.stdout
    assert eval(second) == [], "a second call changes nothing"
    assert eval(kids_nice) == [BACKGROUND_NICE] * 2, res.stdout
    assert int(own) == os.getpriority(os.PRIO_PROCESS, 0) and int(parent_nice) == int(own), res.stdout


def test_outside_a_worker_nothing_is_touched(monkeypatch):
    import worker_priority as w

    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    assert w.other_workers() == []
