"""The live view (``vi_view`` without a file, the main job's ``--view``) over DDS: ``ViewNode`` takes the model from
``robot_description`` and follows ``joint_states``; headless Chromium on the view's URL (the meshcat server's page,
over its websocket) renders the robot where the newest joint state puts it.
"""

import os

import numpy as np
import pytest

pytest.importorskip("rclpy")

from vi_control.view.browser import find_chromium, screenshot  # noqa: E402

pytestmark = pytest.mark.skipif(
    find_chromium() is None,
    reason="no chromium on PATH: apt-get install chromium (Debian), as scripts/setup_env.sh does when run as root",
)


def test_live_view_follows_joint_states(tmp_path):
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from sensor_msgs.msg import JointState
    from std_msgs.msg import String

    from vi_control.model.bundled import bundled_urdf
    from vi_control.ros.common import LATCHED_QOS, RECORD_QOS
    from vi_control.ros.launcher import domain_id_for, set_domain
    from vi_control.ros.view_node import ViewNode

    domain = domain_id_for("test_live_view")
    set_domain(domain)
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=domain)
    ns = f"/view_{os.getpid()}"
    executor = SingleThreadedExecutor(context=context)
    view_node = ViewNode(namespace=ns, context=context, rate=50.0)
    pub_node = rclpy.create_node("fake_simulator", namespace=ns, context=context)
    shots = []
    try:
        desc = pub_node.create_publisher(String, "robot_description", LATCHED_QOS)
        states = pub_node.create_publisher(JointState, "joint_states", RECORD_QOS)
        desc.publish(String(data=open(bundled_urdf("double_pendulum")).read()))
        executor.add_node(view_node)
        executor.add_node(pub_node)

        def spin_until(predicate, limit: int = 600) -> bool:
            for _ in range(limit):  # at most 600 × 0.1 s: discovery can take seconds on a loaded machine
                if predicate():
                    return True
                executor.spin_once(timeout_sec=0.1)
            return predicate()

        assert spin_until(lambda: view_node.view is not None), "no view: robot_description not received"
        view = view_node.view
        assert view.robot.joint_names == ["shoulder", "elbow"]
        view.frame([np.zeros(2), np.array([1.5, 0.8])])
        for k, q in enumerate(([0.0, 0.0], [1.5, 0.8])):
            shown = view_node.frames_shown
            msg = JointState(name=["shoulder", "elbow"], position=q)
            msg.header.stamp.sec = k
            states.publish(msg)
            assert spin_until(lambda s=shown: view_node.frames_shown > s + 2), "joint_states not followed"
            shots.append(screenshot(view.url, tmp_path / f"live{k}.png", budget_ms=2500))
    finally:
        if view_node.view is not None:
            view_node.view.close()
        executor.shutdown(timeout_sec=1.0)
        view_node.destroy_node()
        pub_node.destroy_node()
        rclpy.try_shutdown(context=context)
    from PIL import Image

    a, b = (np.asarray(Image.open(p).convert("RGB"), dtype=int) for p in shots)
    moved = np.abs(a - b).max(axis=2) > 40
    assert moved.sum() > 500, f"only {moved.sum()} pixels changed between the two live joint states"
