#!/usr/bin/env bash
# Sets up the venv if needed, then runs the test suite. Extra arguments go to pytest.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$repo/scripts/setup_env.sh"
cd "$repo"
# Keep DDS traffic on this machine; each ROS test also picks its own ROS_DOMAIN_ID.
export ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST
export MPLBACKEND=Agg
# Lint and format first: they take seconds, the suite minutes.
"$VI_CONTROL_VENV/bin/ruff" check .
"$VI_CONTROL_VENV/bin/ruff" format --check .
# Two workers (pytest-xdist): the tests that start node processes or a Ray cluster run one at a time on one of
# them (test/conftest.py groups them), the rest beside. VI_CONTROL_TEST_WORKERS=0 runs everything in this process.
# A test that kills its worker (a segfault) fails the run at once, named: with a replaced worker, xdist 3.8's loadgroup
# scheduling can wait for good at the end of the run (pytest-dev/pytest-xdist#1323, #1378), which two CI runs did.
set +e
"$VI_CONTROL_VENV/bin/python" -m pytest -n "${VI_CONTROL_TEST_WORKERS:-2}" --dist loadgroup --max-worker-restart 0 "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then echo "pytest collected no tests: failing" >&2; exit 1; fi
exit "$rc"
