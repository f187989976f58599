"""config/ros_simulator.yaml starts every bundled model: ``model:=acrobot`` used to fail with
"initial_positions … need 2 entries" (the file held the pendulum's one-joint start). In process, no DDS: the node
configures from the file plus ``model``, at a start that satisfies the model's constraints."""

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.lifecycle import TransitionCallbackReturn  # noqa: E402

from vi_control.model.bundled import BUNDLED  # noqa: E402
from vi_control.ros.common import resolve_config  # noqa: E402
from vi_control.ros.simulator_node import SimulatorNode  # noqa: E402


def _configured(model: str) -> tuple[bool, np.ndarray | None, object]:
    """(configure succeeded, q_0, the integrator) of a simulator node from ros_simulator.yaml with ``model``."""
    rclpy.init(
        args=[
            "--ros-args",
            "--params-file",
            resolve_config("ros_simulator.yaml"),
            "-p",
            f"model:={model}",
            "-p",
            "autostart:=false",
            "--log-level",
            "error",
        ]
    )
    try:
        node = SimulatorNode()
        try:
            ok = node.trigger_configure() == TransitionCallbackReturn.SUCCESS
            return ok, (node.x0[: node.vi.nq].copy() if ok else None), (node.vi if ok else None)
        finally:
            node.destroy_node()
    finally:
        rclpy.shutdown()


def test_every_bundled_model_configures_from_the_simulator_yaml():
    failed = []
    for model in BUNDLED:
        ok, q0, vi = _configured(model)
        if not ok:
            failed.append(model)
            continue
        if vi.robot.constraints:  # unset initial_positions: zeros projected onto h(q) = 0
            assert not vi.configuration_violation(q0), model
        else:
            assert np.array_equal(q0, np.zeros(vi.nq)), model
        if vi.robot.n_nonholonomic:  # the GNI, not the midpoint VI that refuses such a model
            assert type(vi).__name__ == "GeometricNonholonomicIntegrator", model
    assert not failed, f"configure failed from ros_simulator.yaml for {failed}"
