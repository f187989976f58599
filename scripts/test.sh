#!/usr/bin/env bash
# Sets up the venv if needed, then runs the test suite. Extra arguments go to pytest.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$repo/scripts/setup_env.sh"
cd "$repo"
# Keep DDS traffic on this machine; each ROS test also picks its own ROS_DOMAIN_ID.
export ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST
export MPLBACKEND=Agg
set +e
"$VI_CONTROL_VENV/bin/python" -m pytest "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then echo "pytest collected no tests: failing" >&2; exit 1; fi
exit "$rc"
