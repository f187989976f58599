"""The priority of the pytest-xdist workers beside the one that runs the process tests (test/conftest.py).

Beside another worker's gcc builds at equal priority, a slower 2-core machine starved the nodes of a process test — a
500 Hz command loop saw gaps of 340 ms, the held panda of a path-tolerance abort drifted 0.48 rad, a diagnostics
period came 0.2 s late (CI s60c). The worker that starts the first process test therefore puts the other workers in
the background for the rest of the run: the kernel gives their CPU-bound tests ~1/10 of a core's share against the
nodes (nice 0), the idle time still theirs. Raising another process's niceness needs no privilege (lowering it would:
it stays raised, and the compilers and installs they start later inherit it).
"""

from __future__ import annotations

import os
from pathlib import Path

BACKGROUND_NICE = 10
_backgrounded = False


def other_workers() -> list[int]:
    """The pids of this xdist worker's siblings (its controller's other children), from /proc; [] outside a worker."""
    if not os.environ.get("PYTEST_XDIST_WORKER") or not Path("/proc").is_dir():
        return []
    me, parent, pids = os.getpid(), os.getppid(), []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == me:
            continue
        try:  # (the name in parentheses may hold spaces: the ppid is the second field after its closing one)
            if int((d / "stat").read_text().rsplit(")", 1)[1].split()[1]) == parent:
                pids.append(int(d.name))
        except (OSError, ValueError, IndexError):  # (a process that ended meanwhile)
            continue
    return pids


def background_other_workers() -> list[int]:
    """The other workers at BACKGROUND_NICE (never lowered), once per worker; returns the pids it set (or tried)."""
    global _backgrounded
    if _backgrounded:
        return []
    _backgrounded = True
    pids = other_workers()
    for pid in pids:
        try:
            os.setpriority(os.PRIO_PROCESS, pid, max(BACKGROUND_NICE, os.getpriority(os.PRIO_PROCESS, pid)))
        except OSError:
            pass
    return pids
