"""Mutation testing over a curated list: does the suite notice a small, plausible bug?

Each mutation of ``benchmarks/mutations.py`` is applied to a temporary COPY of the repository (never to the
working tree), and only the test files it names run against that copy (``python -m pytest -x`` with the copy
first on PYTHONPATH, a timeout per mutation; node processes of ROS tests inherit the path). A failing run kills
the mutation, a passing one lets it survive, a timeout, or a test process killed by a signal
(a crash the mutation caused), counts as killed (reported as such). C sources are
mutated like Python ones: the compile cache is keyed by the source, so a mutated kernel is compiled for the run.

Why not mutmut: it mutates in place, runs the whole suite per mutant and knows nothing of our generated and
compiled backends; a curated list names the defects a reviewer would worry about, and each mutation's tests.

    python benchmarks/mutation.py                 # every mutation; score table per subpackage
    python benchmarks/mutation.py --markdown      # the table as in docs/guides/testing.md
    python benchmarks/mutation.py --only hold_R_x100 plan_gains_shifted --jobs 2

The score is reported, not asserted (CI time stays bounded); ``test/project/test_mutation_harness.py`` checks that the
harness tells a killed mutation from a surviving one and that every curated snippet still exists.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mutations import MUTATIONS, Mutation  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
# What a test run needs of the repository (share_dir() wants urdf/ and package.xml next to the package).
# everything a test may read: the docs and benchmarks too (tests check docs examples and benchmark scripts)
COPIED = (
    "vi_control",
    "test",
    "config",
    "urdf",
    "launch",
    "resource",
    "package.xml",
    "setup.py",
    "setup.cfg",
    "pyproject.toml",
    "docs",
    "benchmarks",
    "scripts",
    "requirements",
    "requirements.txt",
    "README.md",
    "mkdocs.yml",
    "CHANGELOG.md",
    "LICENSE",
)
SUBPACKAGES = ("model", "mechanics", "integrators", "linearization", "control", "planning", "sweep", "nodes")


class MutationError(ValueError):
    """A mutation that cannot be applied: its original snippet is missing or not unique."""


@dataclass
class Outcome:
    mutation: Mutation
    status: str  # killed | crashed | survived | timeout | error
    seconds: float
    output: str = ""

    @property
    def killed(self) -> bool:
        return self.status in ("killed", "crashed", "timeout")

    @property
    def reason(self) -> str:
        """pytest's first FAILED/ERROR line: which test noticed (a collection error is no kill to be proud of); for a
        crash, the signal that killed the test process."""
        lines = self.output.splitlines()
        return next((ln.strip() for ln in lines if ln.startswith(("FAILED ", "ERROR ", "crashed: "))), "")


def copy_repository(dst: Path, src: Path = ROOT, names: Sequence[str] = COPIED) -> Path:
    """The parts of the repository a test run needs (``names``), copied under ``dst`` (no caches, no venv, no .git)."""
    dst.mkdir(parents=True, exist_ok=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")
    for name in names:
        s = src / name
        if s.is_dir():
            shutil.copytree(s, dst / name, ignore=ignore)
        elif s.is_file():
            shutil.copy2(s, dst / name)
    return dst


def apply(root: Path, m: Mutation) -> None:
    """Replace the mutation's unique original snippet in ``root``'s copy of its file."""
    path = root / m.file
    text = path.read_text()
    n = text.count(m.original)
    if n != 1:
        raise MutationError(f"{m.name}: the original snippet occurs {n} times in {m.file} (expected once)")
    path.write_text(text.replace(m.original, m.replacement))


def environment(root: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        PYTHONPATH=os.pathsep.join([str(root)] + [p for p in [env.get("PYTHONPATH")] if p]),
        OPENBLAS_NUM_THREADS="1",
        ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST",
        MPLBACKEND="Agg",
        PYTHONDONTWRITEBYTECODE="1",
    )
    return env


def run_tests(root: Path, tests: Sequence[str], timeout: float) -> tuple[str, float, str]:
    """pytest on ``tests`` in the copy at ``root``: (passed | failed | timeout | error, seconds, output tail).

    On timeout pytest gets SIGINT first (its fixtures then stop any node processes), SIGKILL after 20 s."""
    args = [
        sys.executable,
        "-m",
        "pytest",
        "-x",
        "-q",
        "-p",
        "no:cacheprovider",
        "-o",
        "addopts=",
        "-m",
        "not slow",
        *tests,
    ]
    t0 = time.monotonic()
    with tempfile.TemporaryFile("w+") as out:
        proc = subprocess.Popen(
            args, cwd=root, env=environment(root), stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            rc = proc.wait(timeout)
            # (a test process killed by a signal — a segfault or abort the mutation caused — is a failed run for CI)
            status = "crashed" if rc < 0 else {0: "passed", 1: "failed"}.get(rc, "error")
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGINT)
            try:
                proc.wait(20.0)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            status = "timeout"
        out.seek(0)
        tail = out.read()[-3000:] + (f"\ncrashed: killed by signal {-rc}" if status == "crashed" else "")
    return status, time.monotonic() - t0, tail


def run_mutation(m: Mutation, timeout: float, work: Path | None = None) -> Outcome:
    """Apply ``m`` to a fresh copy of the repository and run its tests there."""
    with tempfile.TemporaryDirectory(prefix=f"vi_mut_{m.name}_", dir=work) as d:
        root = copy_repository(Path(d) / "repo")
        apply(root, m)
        status, seconds, tail = run_tests(root, m.tests, timeout)
    return Outcome(m, {"passed": "survived", "failed": "killed"}.get(status, status), seconds, tail)


def check_copy_is_imported(root: Path) -> None:
    """The copy, not the editable install of the working tree, must be what ``import vi_control`` finds."""
    out = subprocess.run(
        [sys.executable, "-c", "import vi_control; print(vi_control.__file__)"],
        cwd=root,
        env=environment(root),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    if not Path(out).resolve().is_relative_to(root.resolve()):
        raise RuntimeError(f"the mutated copy is not what gets imported: vi_control from {out}")


def score_table(outcomes: Iterable[Outcome], markdown: bool = False) -> str:
    """Killed / total per subpackage, and the survivors by name."""
    rows: dict[str, list[Outcome]] = {}
    for o in outcomes:
        rows.setdefault(o.mutation.subpackage, []).append(o)
    order = [s for s in SUBPACKAGES if s in rows] + sorted(set(rows) - set(SUBPACKAGES))
    lines = (
        ["| subpackage | killed / total | survivors |", "|---|---|---|"]
        if markdown
        else [f"{'subpackage':<14} {'killed':>8}  survivors"]
    )
    total = killed = 0
    for s in order:
        k, n = sum(o.killed for o in rows[s]), len(rows[s])
        total, killed = total + n, killed + k
        surv = (
            ", ".join(
                o.mutation.name + ("" if o.status == "survived" else f" ({o.status})") for o in rows[s] if not o.killed
            )
            or "—"
        )
        lines.append(f"| {s} | {k} / {n} | {surv} |" if markdown else f"{s:<14} {k:>3} / {n:<3}  {surv}")
    lines.append(f"| **all** | **{killed} / {total}** | |" if markdown else f"{'all':<14} {killed:>3} / {total:<3}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="*", default=None, help="mutation names (default: all)")
    ap.add_argument("--area", nargs="*", default=None, help="subpackages (default: all)")
    ap.add_argument("--jobs", type=int, default=1, help="mutations run in parallel (2 cores: 1 or 2)")
    ap.add_argument("--timeout", type=float, default=900.0, help="per mutation [s]")
    ap.add_argument("--no-baseline", action="store_true", help="skip the unmutated run of the selected tests")
    ap.add_argument("--markdown", action="store_true", help="print the score table as Markdown")
    ap.add_argument("--list", action="store_true", help="list the mutations and exit")
    a = ap.parse_args(argv)
    chosen = [
        m for m in MUTATIONS if (a.only is None or m.name in a.only) and (a.area is None or m.subpackage in a.area)
    ]
    if a.list or not chosen:
        for m in chosen:
            print(f"{m.subpackage:<14} {m.name:<40} {'audit' if m.issue else '':<9} {m.description}")
        return 0 if chosen or a.list else 2
    if not a.no_baseline:  # the selected tests must pass unmutated, or a "kill" means nothing
        with tempfile.TemporaryDirectory(prefix="vi_mut_baseline_") as d:
            root = copy_repository(Path(d) / "repo")
            check_copy_is_imported(root)
            tests = sorted({t for m in chosen for t in m.tests})
            status, seconds, tail = run_tests(root, tests, a.timeout * 2)
            print(f"baseline ({len(tests)} test selections, unmutated copy): {status} in {seconds:.0f} s", flush=True)
            if status != "passed":
                print(tail)
                return 2
    outcomes = []

    def one(m: Mutation) -> Outcome:
        o = run_mutation(m, a.timeout)
        print(f"{o.status:<9} {o.seconds:6.0f} s  {m.subpackage:<14} {m.name:<40} {o.reason[:150]}", flush=True)
        return o

    with ThreadPoolExecutor(max(1, a.jobs)) as pool:
        outcomes = list(pool.map(one, chosen))
    for o in outcomes:
        if o.status == "error":
            print(f"--- {o.mutation.name}: pytest error\n{o.output}")
    print()
    print(score_table(outcomes, a.markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
