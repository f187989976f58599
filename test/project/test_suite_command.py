"""The suite's command (scripts/test.sh): a test that kills its worker fails the run at once, and names the test.

With a crashed worker replaced, pytest-xdist 3.8's loadgroup scheduling can wait for good at the end of the run
(pytest-dev/pytest-xdist#1323, #1378): two CI runs whose worker died of a segfault hung at 99 % until killed. A CI
job would sit out its time limit and report nothing.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def suite_options() -> list[str]:
    """The pytest options of scripts/test.sh (two workers, as CI runs it), without the caller's arguments."""
    line = next(ln for ln in (REPO / "scripts" / "test.sh").read_text().splitlines() if " -m pytest " in ln)
    words = shlex.split(line.split(" -m pytest ", 1)[1])
    return ["2" if w == "${VI_CONTROL_TEST_WORKERS:-2}" else w for w in words if w != "$@"]


def test_a_worker_that_dies_fails_the_run_at_once_and_names_its_test(tmp_path):
    (tmp_path / "test_dies.py").write_text(
        textwrap.dedent(
            """
            import os
            import time

            def test_before():
                time.sleep(0.2)

            def test_dies():
                os.abort()

            def test_after():
                time.sleep(0.2)
            """
        )
    )
    (tmp_path / "test_others.py").write_text(
        "import time\n\n" + "".join(f"def test_{i}():\n    time.sleep(0.3)\n\n\n" for i in range(6))
    )
    options = suite_options()
    assert "--max-worker-restart" in options and options[options.index("--max-worker-restart") + 1] == "0"
    res = subprocess.run(
        [sys.executable, "-m", "pytest", *options, "-p", "no:cacheprovider", "-o", "addopts=", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,  # (the hang this guards against never ends)
    )
    assert res.returncode == 1, res.stdout[-2000:]
    assert "crashed while running 'test_dies.py::test_dies'" in res.stdout, res.stdout[-2000:]
