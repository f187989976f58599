"""Running independent tasks on Ray (a local instance by default, a cluster by address) or serially.

``run_tasks(fn, items, shared)`` calls ``fn(payload, shared)`` for every ``(key, payload)``: on Ray each
call is one task (``max_retries`` re-runs a task whose worker process died), ``shared`` goes to the object
store once. Whatever ``fn`` raises becomes an error record ``{"error": ..., "traceback": ...}`` instead of
failing the sweep; a task whose retries are exhausted (its workers killed) gets an error record too. Records
reach the ``ResultStore`` (JSON lines) as they arrive, so an interrupted sweep resumes where it stopped, and
they are returned in key order, so the outcome does not depend on scheduling: the serial backend runs the
same wrapper in this process, and the records are identical bit for bit (JSON keeps every float exactly).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
import traceback
from collections.abc import Callable, Iterable
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ..model.scalars import is_integer
from .rollout import SweepError

BACKENDS = ("ray", "serial")


def call_task(fn: Callable[[dict, dict], dict], key, payload: dict, shared: dict) -> dict:
    """``fn(payload, shared)`` with the task's key; an exception becomes the record's ``error``."""
    try:
        rec = fn(payload, shared)
    except Exception as e:  # noqa: BLE001 - one bad task must not fail the sweep: it is recorded
        rec = {"error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc(limit=8)}
    rec["key"] = key
    return rec


class ResultStore:
    """Records as JSON lines after a header line; reopening with the same header resumes.

    A different header (another sweep's settings) is refused with the differing keys named; a torn last
    line (the process died mid-write) is dropped.
    """

    def __init__(self, path: str | os.PathLike, header: dict):
        self.path = Path(path)
        self.header = json.loads(json.dumps(header))  # as it will read back
        self.done: dict = {}
        if self.path.exists() and self.path.stat().st_size > 0:
            self._resume()
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text(json.dumps({"header": self.header}) + "\n")
        self._f = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - closed by close()

    def _resume(self) -> None:
        lines = self.path.read_text(encoding="utf-8").split("\n")
        try:
            old = json.loads(lines[0])["header"]
        except RecursionError:  # (json's scanner recurses per nesting level)
            raise SweepError(f"{self.path}: line 1: JSON nested too deeply, not a results file of vi_sweep") from None
        except (ValueError, KeyError, TypeError):
            raise SweepError(f"{self.path}: not a results file of vi_sweep (no header line)") from None
        if not isinstance(old, dict):
            raise SweepError(f"{self.path}: line 1: the header is not a JSON object, not a results file of vi_sweep")
        if old != self.header:
            keys = sorted(k for k in set(old) | set(self.header) if old.get(k) != self.header.get(k))
            raise SweepError(
                f"{self.path} holds the results of a different sweep (differs in {keys}); "
                "choose another output directory or delete it"
            )
        good = [lines[0]]
        for i, line in enumerate(lines[1:], 2):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError:  # torn write at the end: that task is simply run again
                break
            except RecursionError:
                raise SweepError(f"{self.path}: line {i}: JSON nested too deeply, not a record of vi_sweep") from None
            key = rec.get("key") if isinstance(rec, dict) else None
            if (
                not isinstance(key, (str, int, list))
                or isinstance(key, bool)
                or (isinstance(key, list) and not all(isinstance(k, (str, int, float)) for k in key))
            ):
                raise SweepError(f"{self.path}: line {i}: not a record of vi_sweep (its 'key' is {key!r})")
            self.done[_key(key)] = rec
            good.append(line)
        self.path.write_text("\n".join(good) + "\n")

    def append(self, rec: dict) -> None:
        self._f.write(json.dumps(rec) + "\n")
        self._f.flush()
        self.done[_key(rec["key"])] = rec

    def close(self) -> None:
        self._f.close()


def _key(k):
    return tuple(k) if isinstance(k, list) else k


class Progress:
    """A one-line progress bar on stderr (redrawn in place on a terminal; otherwise a line every 10 %, and at
    least every ``every`` seconds while samples complete: long sweeps are never silent for long)."""

    every = 10.0

    def __init__(self, total: int, label: str, enabled: bool = True, stream=None):
        self.total, self.label, self.enabled = total, label, enabled
        self.stream = stream or sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.n = self.errors = 0
        self.t0 = time.perf_counter()
        self._last_decile = -1
        self._last_line = self.t0

    def start(self) -> None:
        """Start the clock (when the first task is submitted, after any Ray start-up)."""
        self.t0 = time.perf_counter()

    def update(self, rec: dict) -> None:
        self.n += 1
        self.errors += "error" in rec
        if not self.enabled or self.total == 0:
            return
        frac = self.n / self.total
        decile = int(frac * 10)
        now = time.perf_counter()
        if not self.tty and decile == self._last_decile and self.n != self.total and now - self._last_line < self.every:
            return
        self._last_decile, self._last_line = decile, now
        el = now - self.t0
        eta = el / self.n * (self.total - self.n)
        bar = "#" * int(frac * 30)
        line = (
            f"[{self.label}] |{bar:<30}| {self.n}/{self.total}  errors {self.errors}  "
            f"{el:.1f} s elapsed, ~{eta:.0f} s left"
        )
        end = "\n" if (not self.tty or self.n == self.total) else ""
        self.stream.write(("\r" if self.tty else "") + line + end)
        self.stream.flush()


@dataclass
class RunStats:
    """What a run did: tasks computed now, taken from the results file, errors; Ray start-up and run time."""

    total: int = 0
    computed: int = 0
    resumed: int = 0
    errors: int = 0
    startup_s: float = 0.0
    run_s: float = 0.0
    backend: str = "serial"
    cluster_cpus: float = 0.0
    records: list = field(default_factory=list)


@contextmanager
def ray_session(address: str | None = None, num_cpus: int | None = None):
    """A Ray connection for the block: the one already initialised (left running), a new local instance
    with ``num_cpus`` (default: this machine's CPUs), or the cluster at ``address`` ('auto' = the one
    ``ray start`` made on this node). Yields the start-up time in seconds (0 when reused)."""
    import ray

    if ray.is_initialized():
        yield 0.0
        return
    t0 = time.perf_counter()
    opts = dict(include_dashboard=False, logging_level=logging.WARNING)
    if address:
        ray.init(address=address, **opts)
    else:  # "local": never attach to a cluster some other job started on this machine
        ray.init(address="local", num_cpus=num_cpus or os.cpu_count(), **opts)
    try:
        yield time.perf_counter() - t0
    finally:
        ray.shutdown()


def run_tasks(
    fn: Callable[[dict, dict], dict],
    items: Iterable[tuple],
    shared: dict,
    *,
    store: ResultStore | None = None,
    backend: str = "ray",
    address: str | None = None,
    num_cpus: int | None = None,
    max_retries: int = 3,
    progress: bool = True,
    label: str = "vi_sweep",
    on_result: Callable[[dict], dict | None] | None = None,
) -> RunStats:
    """Run ``fn(payload, shared)`` for every ``(key, payload)`` of ``items``; returns RunStats whose
    ``records`` are in key order. Keys already in ``store`` are not run again. ``on_result(rec)`` sees each
    new record before it is stored and may return a replacement (e.g. with a plan written to a file)."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if not is_integer(max_retries) or max_retries < 0:
        raise ValueError(f"max_retries must be a non-negative integer, got {max_retries!r}")
    items = list(items)
    keys = [_key(k) for k, _ in items]
    if len(set(keys)) != len(keys):
        raise ValueError("run_tasks: task keys must be unique")
    done = dict(store.done) if store is not None else {}
    todo = [(k, p) for k, p in items if _key(k) not in done]
    stats = RunStats(total=len(items), resumed=len(items) - len(todo), backend=backend)
    bar = Progress(len(todo), label, progress)

    def accept(rec: dict) -> None:
        if on_result is not None:
            rec = on_result(rec) or rec
        if store is not None:
            store.append(rec)
        done[_key(rec["key"])] = rec
        stats.computed += 1
        bar.update(rec)

    if backend == "serial" or not todo:
        bar.start()
        t0 = time.perf_counter()
        for k, p in todo:
            accept(call_task(fn, k, p, shared))
        stats.run_s = time.perf_counter() - t0
    else:
        with ray_session(address, num_cpus) as startup:
            stats.startup_s = startup
            bar.start()
            _run_ray(fn, todo, shared, max_retries, accept, stats)
    stats.records = [done[k] for k in keys]
    stats.errors = sum("error" in r for r in stats.records)
    return stats


def _run_ray(fn, todo: list[tuple], shared: dict, max_retries: int, accept, stats: RunStats) -> None:
    import ray
    from ray.exceptions import RayError

    stats.cluster_cpus = float(ray.cluster_resources().get("CPU", 0.0))
    remote = ray.remote(num_cpus=1, max_retries=max_retries)(call_task)
    shared_ref = ray.put(shared)
    # A bounded window of tasks in flight: memory stays flat for sweeps of any size, and the queue is deep
    # enough that no CPU of the cluster waits for the driver.
    window = max(8, 4 * int(stats.cluster_cpus or 1))
    queue = list(reversed(todo))
    pending: dict = {}
    t0 = time.perf_counter()
    try:
        while queue or pending:
            while queue and len(pending) < window:
                k, p = queue.pop()
                pending[remote.remote(fn, k, p, shared_ref)] = k
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                k = pending.pop(ref)
                try:
                    rec = ray.get(ref)
                except RayError as e:  # the worker died more than max_retries times, or Ray itself failed
                    rec = {"error": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", "key": k}
                accept(rec)
    except BaseException:  # interrupted: what arrived is stored; cancel the rest so nothing runs on
        for ref in pending:
            ray.cancel(ref)  # queued ones never start; a running one finishes unobserved (no worker killed)
        raise
    finally:
        stats.run_s = time.perf_counter() - t0
