"""Shared fixtures: bundled models and example-robot-data robots, loaded once per session."""

import os

# Before numpy loads OpenBLAS: the matrices here are tiny, and on a loaded 2-core machine a multithreaded
# OpenBLAS stalls milliseconds per call waiting for its threads (planner tests ~10x slower).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pytest

from vi_control.integrators.midpoint import MidpointVI
from vi_control.model import load_robot
from vi_control.model.bundled import bundled_config, bundled_urdf

# The test helpers (test/support: benchmark loaders, docs parsing, driver scripts) and the fixtures' modules of
# every folder (a plan builder of test/ros used by a control test) importable from every test folder.
_HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(_HERE / "support")] + sorted(
    str(d) for d in _HERE.iterdir() if d.is_dir() and d.name not in ("support", "data", "__pycache__")
)


@pytest.fixture(scope="session")
def pendulum_robot():
    return load_robot(bundled_urdf("pendulum"), bundled_config("pendulum"))


@pytest.fixture(scope="session")
def pendulum_vi(pendulum_robot):
    return MidpointVI(pendulum_robot, 0.1)


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


@pytest.fixture
def ros(request, tmp_path):
    """Node processes and recorders of one ROS test: own domain and namespace, all stopped at teardown."""
    pytest.importorskip("rclpy")
    from ros_session import Session

    h = Session(request.node.name, str(tmp_path))
    try:
        yield h
    finally:
        h.close()


@pytest.fixture
def controller_in_process(request):
    """A controller node (pendulum, autostarted: active) in this process on real rclpy, own domain and namespace."""
    pytest.importorskip("rclpy")
    from in_process import node_in_process

    from vi_control.ros.controller_node import ControllerNode

    with node_in_process(request.node.name, ControllerNode, ["-p", "model:=pendulum"]) as node:
        yield node


def _serial(item) -> bool:
    """Runs node processes over DDS or a Ray cluster: timing-bound, and each starts several processes."""
    return (
        item.get_closest_marker("ros") is not None
        or item.path.name.startswith("test_ros_")
        or item.path.name == "test_sweep_ray.py"
    )


def pytest_runtest_setup(item):
    if _serial(item):
        from worker_priority import background_other_workers

        background_other_workers()


def pytest_collection_modifyitems(config, items):
    """With pytest-xdist (scripts/test.sh runs two workers): every DDS/Ray test in one group, so they run one at a
    time on one worker while the other worker takes the computational tests — never two node launches competing
    for the 2 cores with each other. Without xdist the mark does nothing. The group is not moved to the front: in
    collection order it starts after the computational tests up to test_r*, so most of it runs beside a nearly idle
    worker (put first, it ran beside the heaviest compiles, done 1.5 min sooner, and the split-driver reach tracked
    0.042 rad against its 0.04 bound). The process tests' worker puts the other in the background
    (``background_other_workers``)."""
    for item in items:
        if _serial(item):
            item.add_marker(pytest.mark.xdist_group("processes"))
