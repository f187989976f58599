"""The live view's node on messages it cannot draw, on real rclpy in this process (the meshcat server it starts; no
browser): a description that does not load, joint states whose positions do not match their names or are not finite,
a trajectory whose points do not match its joint names or go back in time. Each is skipped with a warning that says
why (a trajectory's once, when it arrives, not at every frame), nothing raises out of the node's callbacks (the
executor it shares with the main job's recorder goes on), and the next good message is drawn."""

import os

import pytest

pytest.importorskip("rclpy")


def test_the_view_skips_what_it_cannot_draw_and_says_why(request):
    import rclpy
    from in_process import rclpy_context, record_logs

    from vi_control.ros.view_node import ViewNode

    with rclpy_context(request.node.name) as ctx:
        ns = f"/view_faults_{os.getpid()}"
        view_node = ViewNode(namespace=ns, context=ctx, rate=100.0)
        pub = rclpy.create_node("view_faults_sim", namespace=ns, context=ctx)
        try:
            _feed_bad_messages(view_node, pub, record_logs(view_node).messages)
        finally:
            if view_node.view is not None:
                view_node.view.close()
            view_node.destroy_node()
            pub.destroy_node()


def _feed_bad_messages(view_node, pub, logged: list) -> None:
    """Each bad message, then a good one, at ``view_node`` through ``pub``; ``logged``: (level, text) it logs."""
    from rclpy.executors import SingleThreadedExecutor
    from sensor_msgs.msg import JointState
    from std_msgs.msg import String
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    from vi_control.model.bundled import bundled_urdf
    from vi_control.ros.common import LATCHED_QOS, RECORD_QOS

    def said(text: str) -> bool:
        return any(text in m for _, m in logged)

    desc = pub.create_publisher(String, "robot_description", LATCHED_QOS)
    states = pub.create_publisher(JointState, "joint_states", RECORD_QOS)
    plans = pub.create_publisher(JointTrajectory, "vi_planner/trajectory", LATCHED_QOS)
    ex = SingleThreadedExecutor(context=view_node.context)
    ex.add_node(view_node)
    ex.add_node(pub)

    def spin_until(predicate, limit: int = 300) -> bool:
        for _ in range(limit):
            if predicate():
                return True
            ex.spin_once(timeout_sec=0.05)
        return predicate()

    broken = "<robot name='x'><link name='a'/><joint name='j' type='revolute'><parent link='a'/>"
    broken += "<child link='b'/><axis xyz='0 0 1'/></joint></robot>"  # (no <limit>, and link b does not exist)
    desc.publish(String(data=broken))
    assert spin_until(lambda: said("robot_description: no view")), logged
    assert view_node.view is None
    desc.publish(String(data=open(bundled_urdf("pendulum")).read()))
    assert spin_until(lambda: view_node.view is not None)

    def shown_after(msg: JointState, n: int = 10) -> int:  # (frames drawn while ``msg`` is the newest state)
        before = view_node.frames_shown
        states.publish(msg)
        for _ in range(n):
            ex.spin_once(timeout_sec=0.05)
        return view_node.frames_shown - before

    assert shown_after(JointState(name=["theta"], position=[])) == 0
    assert said("0 positions for 1 names"), logged
    assert shown_after(JointState(name=["theta"], position=[float("nan")])) == 0
    assert said("not finite: not drawn"), logged
    good = JointState(name=["theta"], position=[0.3])
    assert spin_until(lambda: shown_after(good) > 0), logged

    def trajectory(*points: tuple[float, list[float]]) -> JointTrajectory:
        t = JointTrajectory(joint_names=["theta"])
        for sec, q in points:
            p = JointTrajectoryPoint(positions=q)
            p.time_from_start.sec = int(sec)
            t.points.append(p)
        return t

    plans.publish(trajectory((0, [0.1]), (1, [0.2])))
    assert spin_until(lambda: shown_after(good) > 0 and view_node.ghost_shown is not None)
    for bad, why in (
        (trajectory((0, [0.1]), (1, [0.2, 0.3])), "do not match its 1 joint names"),
        (trajectory((1, [0.1]), (0, [0.2])), "go back in time"),
        (trajectory((0, [0.1]), (1, [float("inf")])), "not finite"),
    ):
        plans.publish(bad)
        assert spin_until(lambda w=why: said(w) and said("no ghost")), (why, logged)
        logged.clear()
        view_node.warn._last.clear()  # (the throttle would hide a second warning: said once means said once)
        assert spin_until(lambda: shown_after(good) > 0)
        assert view_node.ghost_shown is None  # (no ghost: the bad plan replaced the good one, which no longer runs)
        assert not logged, logged  # (checked when it arrived, not again at every frame)
    fine = trajectory((0, [0.1]), (1, [0.2]))
    fine.header.stamp.sec = 10
    plans.publish(fine)
    assert spin_until(lambda: view_node._ghost is not None)
    for t, q in ((10.5, 0.15), (9.0, 0.1), (12.0, 0.2)):  # (between its points, and held at both ends)
        at = JointState(name=["theta"], position=[0.3])
        at.header.stamp.sec, at.header.stamp.nanosec = int(t), int(round(t % 1 * 1e9))
        assert spin_until(lambda m=at: shown_after(m) > 0)
        assert view_node.ghost_shown == pytest.approx([q], abs=1e-12), (t, view_node.ghost_shown)
    assert not logged, logged  # a good trajectory: drawn, nothing to say
