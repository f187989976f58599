#!/usr/bin/env bash
# Sets up the venv if needed, then runs the main job: pendulum swing-up simulated, planned and
# controlled through the three ROS 2 nodes (separate processes), printing a summary and writing a plot.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$repo/scripts/setup_env.sh"
cd "$repo"
export ROS_AUTOMATIC_DISCOVERY_RANGE=${ROS_AUTOMATIC_DISCOVERY_RANGE:-LOCALHOST}
export MPLBACKEND=Agg
exec "$VI_CONTROL_VENV/bin/python" -m vi_control.ros.main_job "$@"
