"""The process tests' worker puts the other pytest-xdist workers in the background (test/support/worker_priority.py):
real processes, a parent with four children as xdist's controller has its workers — the one that calls sets its three
siblings to BACKGROUND_NICE and leaves itself, its parent and a process of another parent as they were."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from ast import literal_eval
from pathlib import Path

from worker_priority import BACKGROUND_NICE

SUPPORT = Path(__file__).resolve().parents[1] / "support"

# The controller: four children — two sleepers, a third that has started a child of its own (a compiler a worker
# started earlier: not a sibling), and the caller last. Prints what the caller returned and its niceness, the
# siblings' pids, the third one's child's pid, the siblings' niceness and its own.
CONTROLLER = textwrap.dedent(
    """
    import os, subprocess, sys, time
    sleep = [sys.executable, "-c", "import time; time.sleep(60)"]
    env = dict(os.environ, PYTEST_XDIST_WORKER="gw9")
    kids = [subprocess.Popen(sleep, env=env) for _ in range(2)]
    third = subprocess.Popen([sys.executable, "-c",
        "import subprocess, sys, time; g = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
        "print(g.pid, flush=True); time.sleep(60)"], stdout=subprocess.PIPE, text=True)
    grandchild = int(third.stdout.readline())
    caller = subprocess.run([sys.executable, "-c",
        "import sys; sys.path.insert(0, sys.argv[1]); import worker_priority as w; "
        "print(sorted(w.background_other_workers())); print(w.background_other_workers()); "
        "import os; print(os.getpriority(os.PRIO_PROCESS, 0))", sys.argv[1]],
        env=env, capture_output=True, text=True)
    print(caller.stderr, file=sys.stderr)
    kids.append(third)
    print(caller.stdout.strip())
    print(sorted(k.pid for k in kids))
    print(grandchild)
    print([os.getpriority(os.PRIO_PROCESS, k.pid) for k in kids] + [os.getpriority(os.PRIO_PROCESS, grandchild)])
    print(os.getpriority(os.PRIO_PROCESS, 0))
    os.kill(grandchild, 9)
    for k in kids:
        k.kill()
    """
)


def test_the_other_workers_go_to_the_background_and_nothing_else(tmp_path):
    res = subprocess.run(
        [sys.executable, "-c", CONTROLLER, str(SUPPORT)], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert res.returncode == 0, res.stderr[-2000:]
    set_pids, second, own, siblings, grandchild, nice, parent_nice = res.stdout.strip().splitlines()
    # the caller's siblings are exactly the controller's other children (the third one's child is not among them)
    assert literal_eval(set_pids) == literal_eval(siblings), res.stdout
    assert int(grandchild) not in literal_eval(set_pids), res.stdout
    assert literal_eval(second) == [], "a second call changes nothing"
    base = os.getpriority(os.PRIO_PROCESS, 0)
    assert literal_eval(nice) == [max(BACKGROUND_NICE, base)] * 3 + [base], res.stdout
    assert int(own) == base and int(parent_nice) == base, res.stdout


def test_outside_a_worker_nothing_is_touched(monkeypatch):
    import worker_priority as w

    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    assert w.other_workers() == []
