"""The live view's node on messages it cannot draw, on real rclpy in this process (the meshcat server it starts; no
browser): a description that does not load, joint states whose positions do not match their names or are not finite,
a trajectory whose points do not match its joint names or go back in time. Each is skipped with a warning that says
why, nothing raises out of the node's callbacks (the executor it shares with the main job's recorder goes on), and the
next good message is drawn."""

import os

import pytest

pytest.importorskip("rclpy")


def test_the_view_skips_what_it_cannot_draw_and_says_why(request):
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from sensor_msgs.msg import JointState
    from std_msgs.msg import String
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    from vi_control.model.bundled import bundled_urdf
    from vi_control.ros.common import LATCHED_QOS, RECORD_QOS
    from vi_control.ros.launcher import domain_id_for, set_domain
    from vi_control.ros.view_node import ViewNode

    domain = domain_id_for(request.node.name)
    set_domain(domain)
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=domain)
    ns = f"/view_faults_{os.getpid()}"
    view_node = pub = None
    said = []
    try:
        view_node = ViewNode(namespace=ns, context=ctx, rate=100.0)
        logger = view_node.get_logger()
        warning, error = logger.warning, logger.error

        def capture_warning(msg, **kw):  # (one function per severity: rclpy keeps a call site's severity fixed)
            said.append(msg)
            return warning(msg, **kw)

        def capture_error(msg, **kw):
            said.append(msg)
            return error(msg, **kw)

        logger.warning, logger.error = capture_warning, capture_error
        pub = rclpy.create_node("view_faults_sim", namespace=ns, context=ctx)
        desc = pub.create_publisher(String, "robot_description", LATCHED_QOS)
        states = pub.create_publisher(JointState, "joint_states", RECORD_QOS)
        plans = pub.create_publisher(JointTrajectory, "vi_planner/trajectory", LATCHED_QOS)
        ex = SingleThreadedExecutor(context=ctx)
        ex.add_node(view_node)
        ex.add_node(pub)

        def spin_until(predicate, limit: int = 300) -> bool:
            for _ in range(limit):
                if predicate():
                    return True
                ex.spin_once(timeout_sec=0.05)
            return predicate()

        broken = "<robot name='x'><link name='a'/><joint name='j' type='revolute'><parent link='a'/>"
        broken += "<child link='b'/><axis xyz='0 0 1'/></joint></robot>"  # (link b does not exist)
        desc.publish(String(data=broken))
        assert spin_until(lambda: any("robot_description: no view" in m for m in said)), said
        assert view_node.view is None
        desc.publish(String(data=open(bundled_urdf("pendulum")).read()))
        assert spin_until(lambda: view_node.view is not None)

        def shown_after(msg: JointState, n: int = 10) -> int:  # (frames drawn while ``msg`` is the newest state)
            before = view_node.frames_shown
            states.publish(msg)
            for _ in range(n):
                ex.spin_once(timeout_sec=0.05)
            return view_node.frames_shown - before

        assert shown_after(JointState(name=["theta"], position=[]), 10) == 0
        assert any("0 positions for 1 names" in m for m in said), said
        assert shown_after(JointState(name=["theta"], position=[float("nan")]), 10) == 0
        assert any("not finite: not drawn" in m for m in said), said
        good = JointState(name=["theta"], position=[0.3])
        assert spin_until(lambda: shown_after(good) > 0), said

        def trajectory(*points: tuple[float, list[float]]) -> JointTrajectory:
            t = JointTrajectory(joint_names=["theta"])
            for sec, q in points:
                p = JointTrajectoryPoint(positions=q)
                p.time_from_start.sec = int(sec)
                t.points.append(p)
            return t

        for bad, why in (
            (trajectory((0, [0.1]), (1, [0.2, 0.3])), "do not match its 1 joint names"),
            (trajectory((1, [0.1]), (0, [0.2])), "go back in time"),
            (trajectory((0, [0.1]), (1, [float("inf")])), "not finite"),
        ):
            plans.publish(bad)
            assert spin_until(lambda w=why: any(w in m and "no ghost" in m for m in said)), (why, said)
            assert spin_until(lambda: shown_after(good) > 0)  # (the robot drawn without its ghost)
            said.clear()  # (the next bad kind is "trajectory" too: a fresh capture, once throttling allows)
            view_node.warn._last.clear()
        plans.publish(trajectory((0, [0.1]), (1, [0.2])))
        assert spin_until(lambda: shown_after(good) > 0)
        assert not said, said  # a good trajectory: drawn, nothing to say
    finally:
        if view_node is not None and view_node.view is not None:
            view_node.view.close()
        for n in (view_node, pub):
            if n is not None:
                n.destroy_node()
        rclpy.try_shutdown(context=ctx)
