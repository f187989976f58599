"""Starting nodes as separate processes without ros2 launch (absent here): main job, tests, benchmarks."""

from __future__ import annotations

import ctypes
import hashlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from ..model.bundled import share_dir

# Absolute topics by ROS convention, remapped into a run's namespace (the recorder reads them relative). For the
# clock this is also what a namespace needs: the simulator publishes `clock` relative (<ns>/clock), and rclpy's
# TimeSource reads the absolute /clock — `-r /clock:=<ns>/clock` (as `-r /clock:=clock` in launch/*.py) joins them.
GLOBAL_TOPICS = ("clock", "diagnostics")


def run_namespace(key: str) -> str:
    """A namespace of one's own: a run that shares a domain (1 in 100 chance) still does not hear another."""
    return f"/vi_{os.getpid()}_{hashlib.sha256(key.encode()).hexdigest()[:8]}"


def domain_id_for(key: str) -> int:
    """A ROS_DOMAIN_ID in 1…100 of one's own (tests, the main job), so parallel runs do not hear each other."""
    return 1 + int(hashlib.sha256(f"{key}:{os.getpid()}".encode()).hexdigest(), 16) % 100


def ros_environment(domain_id: int) -> dict[str, str]:
    """Environment for a node process: own domain, localhost discovery, ament index at the venv."""
    env = dict(os.environ)
    env.update(
        ROS_DOMAIN_ID=str(domain_id),
        ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST",
        PYTHONUNBUFFERED="1",
        RCUTILS_LOGGING_BUFFERED_STREAM="0",
    )
    env.setdefault("AMENT_PREFIX_PATH", sys.prefix)
    return env


def set_domain(domain_id: int) -> None:
    """Same settings for this process (before rclpy.init)."""
    os.environ.update(
        {k: v for k, v in ros_environment(domain_id).items() if k.startswith(("ROS_", "AMENT_", "RCUTILS_"))}
    )


PR_SET_PDEATHSIG = 1  # prctl(2)


def die_with_parent(sig: int = signal.SIGTERM) -> None:
    """In a child before exec (``preexec_fn``): the kernel sends it ``sig`` when its parent dies, however the parent
    dies (SIGKILL, a test run's timeout) — a node started here must not spin on, orphaned, at 40–60 % of a core.
    If the parent died before this ran, the child ends at once. (The kernel counts the thread that started the
    child as its parent: start nodes from a thread that outlives them, as the main job and the tests do.)"""
    parent = os.getppid()
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) != 0:
        return  # not Linux: the process group (start_new_session) is what the starter kills on a clean stop
    if os.getppid() != parent:
        os._exit(1)


class NodeProcess:
    """One node (``python -m vi_control.ros.<module>``) with params files plus overrides and topic remappings
    (``remaps``: {from: to}, as ``-r from:=to``); output in a log file."""

    def __init__(
        self,
        module: str,
        domain_id: int,
        params_files: list[str] = (),
        overrides: dict | None = None,
        log_dir: str | None = None,
        name: str | None = None,
        namespace: str = "",
        remaps: dict[str, str] | None = None,
    ):
        self.module, self.name = module, name or module
        self.log_dir = Path(log_dir or tempfile.mkdtemp(prefix="vi_control_"))
        self.log_dir.mkdir(parents=True, exist_ok=True)
        args = [sys.executable, "-m", f"vi_control.ros.{module}", "--ros-args"]
        if namespace:
            # The absolute topics too: two runs that share a domain must not share a clock or diagnostics.
            args += ["-r", f"__ns:={namespace}"] + [a for t in GLOBAL_TOPICS for a in ("-r", f"/{t}:={namespace}/{t}")]
        for src, dst in (remaps or {}).items():
            args += ["-r", f"{src}:={dst}"]
        for f in params_files:
            args += ["--params-file", str(f if os.path.isfile(f) else share_dir() / "config" / f)]
        if overrides:
            path = self.log_dir / f"{self.name}_overrides.yaml"
            path.write_text(yaml.safe_dump({"/**": {"ros__parameters": overrides}}))
            args += ["--params-file", str(path)]
        self.log_path = self.log_dir / f"{self.name}.log"
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            args,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=ros_environment(domain_id),
            start_new_session=True,
            preexec_fn=die_with_parent,
        )

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def log(self) -> str:
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text(errors="replace")

    def report(self, chars: int = 2000) -> str:
        """For a failed check's message: whether the process still runs (else its exit code) and its log's tail —
        from a fatal error's first line when there is one (faulthandler writes the crashing thread first)."""
        text = self.log()
        i = text.find("Fatal Python error")
        tail = text[i : i + 2 * chars] if i >= 0 else text[-chars:]
        state = "running" if self.alive else f"exited with {self.proc.returncode}"
        return f"--- {self.name} ({state})\n{tail}"

    def wait_for_log(self, text: str, timeout: float) -> bool:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if text in self.log():
                return True
            if not self.alive:
                return text in self.log()
            time.sleep(0.05)
        return False

    def signal(self, sig: int) -> None:
        if self.alive:
            os.killpg(self.proc.pid, sig)

    def stop(self, timeout: float = 5.0) -> int | None:
        """SIGINT (clean rclpy shutdown), then SIGKILL if it does not exit in time."""
        if self.alive:
            self.signal(signal.SIGCONT)
            self.signal(signal.SIGINT)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.signal(signal.SIGKILL)
                try:
                    self.proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    pass  # unkillable (e.g. stuck in the kernel): nothing more a parent can do
        self._log.close()
        return self.proc.returncode
