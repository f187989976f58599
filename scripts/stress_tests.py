"""Run test files (or test ids) again and again under CPU load, to find failures that depend on it
(docs/guides/testing.md, "Load-dependent failures").

    .venv/bin/python scripts/stress_tests.py test/ros/test_ros_dds.py test/ros/test_ros_e2e.py --reps 5 --busy 2
    .venv/bin/python scripts/stress_tests.py test/ros/test_ros_lockstep.py --reps 20 --stop 0.02 0.4

``--busy K`` runs K busy loops meanwhile (a loaded 2-core CI machine); ``--stop A B`` starves the node processes of
each run as a loaded scheduler does, harder: one of them at a time is stopped (SIGSTOP) for a random A…B s, then
continued, again and again. Only processes this script started are touched: the busy loops, and the descendants of
each pytest run (the nodes it starts). Stopping a real-time loop's node for hundreds of milliseconds is a fault of
its own (a robot whose driver froze), so judge those tests by ``--busy`` runs; ``--stop`` finds what lockstep,
discovery and message order assume. Each run's output and node logs stay in ``--out`` (pytest's --basetemp);
``summary.txt`` there has a line per run, and the last lines printed are a table per target (runs, failures, the
failed test ids).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def descendants(root: int) -> list[int]:
    """Process ids below ``root`` (from /proc)."""
    children: dict[int, list[int]] = defaultdict(list)
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            children[int(stat.rsplit(")", 1)[1].split()[1])].append(int(entry))
    out, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def is_node(pid: int) -> bool:
    try:
        return b"vi_control.ros." in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def starve(root: int, pause: tuple[float, float], done: threading.Event, rng: random.Random) -> int:
    """Stop one node process below ``root`` at a time for a random ``pause`` until ``done``; the number of stops."""
    stops = 0
    while not done.is_set():
        nodes = [p for p in descendants(root) if is_node(p)]
        if nodes:
            pid = rng.choice(nodes)
            try:
                os.kill(pid, signal.SIGSTOP)
                stops += 1
                done.wait(rng.uniform(*pause))
            except ProcessLookupError:
                pass
            finally:
                try:
                    os.kill(pid, signal.SIGCONT)
                except ProcessLookupError:
                    pass
        done.wait(rng.uniform(0.05, 0.3))
    return stops


def stop_tree(proc: subprocess.Popen) -> None:
    """End a pytest run and the processes below it: continued (none left stopped), pytest ended (it may not
    heed SIGINT: rclpy takes that signal to shut its context down), its node processes then SIGINTed, SIGKILLed
    after 5 s."""
    below = descendants(proc.pid)
    for pid in below:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)
    proc.kill()
    proc.wait()
    for sig in (signal.SIGINT, signal.SIGKILL):
        alive = [p for p in below if Path(f"/proc/{p}").exists()]
        for pid in alive:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + 5.0
        while alive and time.monotonic() < deadline:
            time.sleep(0.1)
            alive = [p for p in alive if Path(f"/proc/{p}").exists()]


def run_once(target: str, basetemp: Path, pause: tuple[float, float] | None, rng: random.Random) -> dict:
    """One pytest run of ``target``: return code, wall time, load, failed ids, stops."""
    t0 = time.monotonic()
    log = basetemp.parent / f"{basetemp.name}.log"
    with open(log, "w") as out:
        # (the repository's addopts apply: -q, not the slow cases, unless a test id names one)
        proc = subprocess.Popen(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rfE", f"--basetemp={basetemp}", target],
            cwd=REPO,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=dict(os.environ, ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST", MPLBACKEND="Agg"),
        )
        done, stops = threading.Event(), [0]
        starver = (
            threading.Thread(target=lambda: stops.__setitem__(0, starve(proc.pid, pause, done, rng)), daemon=True)
            if pause
            else None
        )
        if starver:
            starver.start()
        try:
            rc = proc.wait()
        finally:
            done.set()
            if starver:
                starver.join()
            if proc.poll() is None:  # interrupted: this run's processes go too, none left stopped
                stop_tree(proc)
    failed = [
        ln.split()[1] for ln in log.read_text(errors="replace").splitlines() if ln.startswith(("FAILED ", "ERROR "))
    ]
    return dict(
        rc=rc, seconds=time.monotonic() - t0, load=os.getloadavg()[0], failed=failed, stops=stops[0], log=str(log)
    )


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("targets", nargs="+", help="test files or test ids")
    ap.add_argument("--reps", type=int, default=3, help="runs of each target (interleaved)")
    ap.add_argument("--busy", type=int, default=0, help="busy-loop processes meanwhile")
    ap.add_argument("--stop", type=float, nargs=2, metavar=("MIN", "MAX"), help="starve node processes [s]")
    ap.add_argument("--out", default="", help="directory for logs and summary.txt (default: a new temporary one)")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    out = Path(a.out or tempfile.mkdtemp(prefix="stress_tests_"))
    out.mkdir(parents=True, exist_ok=True)
    previous = signal.signal(signal.SIGTERM, _interrupt)  # (as Ctrl-C: the current run's processes end too)
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(a.busy)]
    rng, results = random.Random(a.seed), defaultdict(list)
    try:
        for rep in range(1, a.reps + 1):
            for target in a.targets:
                name = "".join(c if c.isalnum() or c in "._-" else "_" for c in target)
                r = run_once(target, out / f"{name}_{rep}", tuple(a.stop) if a.stop else None, rng)
                results[target].append(r)
                line = (
                    f"{time.strftime('%H:%M:%S')} rep={rep} rc={r['rc']} {r['seconds']:.0f}s load={r['load']:.1f} "
                    f"stops={r['stops']} {target} {' '.join(r['failed'])}"
                )
                print(line, flush=True)
                with open(out / "summary.txt", "a") as f:
                    f.write(line + "\n")
    finally:
        for p in busy:
            p.kill()
            p.wait()
        signal.signal(signal.SIGTERM, previous)
    print("\n| target | runs | failed runs | failed tests |\n|---|---|---|---|")
    for target, rs in results.items():
        failed = sorted({t for r in rs for t in r["failed"]})
        print(f"| {target} | {len(rs)} | {sum(r['rc'] != 0 for r in rs)} | {', '.join(failed) or '—'} |")
    print(f"\nlogs: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
