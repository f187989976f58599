#!/usr/bin/env bash
# Creates .venv in the repo (if missing or stale) with the pinned dependencies (requirements.txt, which takes
# requirements/*.txt) and vi_control installed.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv="$repo/.venv"
py=${PYTHON:-python3.11}
command -v "$py" >/dev/null 2>&1 || py=python3
stamp="$venv/.vi_control_stamp"
want=$(cat "$repo/requirements.txt" "$repo"/requirements/*.txt "$repo/setup.py" | sha256sum | cut -d' ' -f1)
# A stale stamp, or vi_control itself gone from the venv (e.g. a `pip install --prefix` elsewhere uninstalled it).
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ] \
   || [ -z "$(ls "$venv"/lib/python3*/site-packages/__editable__.vi_control-*.pth 2>/dev/null)" ]; then
  echo "[setup] creating/updating $venv (pinned requirements)" >&2
  [ -x "$venv/bin/python" ] || "$py" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip >&2
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$repo/requirements.txt" >&2
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps -e "$repo" >&2
  echo "$want" > "$stamp"
fi
# A C compiler: vi_control compiles its own C and each model's generated code on first use (docs/architecture.md), from
# Debian's packages, only if absent, only as root, never interactive (VI_CONTROL_NO_APT=1 skips it).
if ! command -v "${CC:-gcc}" >/dev/null 2>&1 && ! command -v cc >/dev/null 2>&1 && [ "$(id -u)" = 0 ] \
   && [ -z "${VI_CONTROL_NO_APT:-}" ] && command -v apt-get >/dev/null 2>&1; then
  echo "[setup] installing gcc (Debian package): vi_control compiles its C on first use" >&2
  export DEBIAN_FRONTEND=noninteractive
  { apt-get install -y -q gcc libc6-dev >/dev/null 2>&1 \
    || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q gcc libc6-dev >/dev/null 2>&1; }; } \
    || echo "[setup] gcc could not be installed: vi_control's integrators will refuse, naming the fix" >&2
fi
# Headless Chromium for the browser-view tests (test/view/test_view_browser.py, test/ros/test_ros_view_live.py), from
# Debian's packages: only if absent, only as root, never interactive (VI_CONTROL_NO_APT=1 skips it); without it
# those tests skip, saying why.
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && [ -z "${VI_CONTROL_NO_APT:-}" ] \
   && command -v apt-get >/dev/null 2>&1; then
  echo "[setup] installing chromium (Debian package) for the browser-view tests" >&2
  export DEBIAN_FRONTEND=noninteractive
  { apt-get install -y -q chromium >/dev/null 2>&1 \
    || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium >/dev/null 2>&1; }; } \
    || echo "[setup] chromium could not be installed: the browser-view tests will skip" >&2
fi
# ament_index_python needs this; the ROS wheels set LD_LIBRARY_PATH themselves.
export AMENT_PREFIX_PATH="$venv"
export VI_CONTROL_VENV="$venv"
# Our matrices are small (tens of rows): BLAS threads only contend on 2 cores (a 7x21 solve took 13 ms instead of
# 12 us under load with the default thread pool).
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
