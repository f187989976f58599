"""``vi_view``: the browser view of a plan file, a recording, or a live robot over DDS.

    vi_view plan.npz                 # replay a plan (the robot follows it)
    vi_view out/main_job.mcap        # replay a recording: executed motion, plan as the translucent ghost
    vi_view --namespace /run         # live: the simulator's robot_description and joint_states, the planner's
                                     # trajectory as the ghost (ROS_DOMAIN_ID from the environment)
    vi_view run.mcap --html run.html # write a self-contained offline HTML replay and exit

Prints the URL to open; serves until Ctrl-C. ``ViewNode`` is the live part as a node a process can compose
(the main job's ``--view``).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time

import numpy as np
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from trajectory_msgs.msg import JointTrajectory

from .common import JOINT_STATES_QOS, LATCHED_QOS, ThrottledLog
from .messages import stamp_seconds, time_seconds


class ViewNode(Node):
    """Follows a robot live: builds the view from the first ``robot_description``, poses the robot at the newest
    ``joint_states`` and the ghost at the planner's ``trajectory`` at the same time, ``rate`` times a second.

    A message it cannot draw (a description that does not load, a joint state or trajectory whose arrays do not match
    its names or hold non-finite numbers, a drawing that fails) is skipped with a throttled warning that says why:
    nothing raises out of its callbacks, which would end the executor and every node on it (the main job's recorder
    shares the view's). A trajectory is checked once, when it arrives: a bad one is said once and clears the ghost
    (the plan it replaced no longer runs, so drawing that would mislead)."""

    def __init__(
        self,
        namespace: str = "",
        planner_name: str = "vi_planner",
        rate: float = 20.0,
        name: str = "vi_view",
        context=None,
        on_ready=None,
    ):
        super().__init__(name, namespace=namespace, context=context)
        self.view = None
        self._on_ready = on_ready
        self._lock = threading.Lock()
        self._state: JointState | None = None
        self._ghost: GhostPath | None = None
        self.frames_shown = 0
        self.ghost_shown: np.ndarray | None = None  # (the ghost's pose in the last frame drawn, None: hidden)
        self.warn = ThrottledLog(self.get_logger(), 2.0)
        self.create_subscription(String, "robot_description", self._on_description, LATCHED_QOS)
        self.create_subscription(JointState, "joint_states", self._on_state, JOINT_STATES_QOS)
        self.create_subscription(JointTrajectory, f"{planner_name}/trajectory", self._on_trajectory, LATCHED_QOS)
        self.create_timer(1.0 / rate, self._draw)

    def _on_description(self, msg: String) -> None:
        if self.view is not None:
            return
        from ..model.spec import ModelSpec
        from ..view import RobotView

        try:
            robot = ModelSpec.parse(msg.data).load()
            view = RobotView(robot)
        except Exception as e:  # (a node boundary: any model or viewer failure is reported, the next one tried)
            self.get_logger().error(f"robot_description: no view: {type(e).__name__}: {e}")
            return
        self.view = view
        self.get_logger().info(f"view of {robot.name!r}: {self.view.url}")
        if self._on_ready is not None:
            self._on_ready(self.view)

    def _on_trajectory(self, msg: JointTrajectory) -> None:
        try:
            ghost = GhostPath.of(msg)
        except ValueError as e:
            self.warn("trajectory", f"trajectory: {e}: no ghost")
            ghost = None
        with self._lock:
            self._ghost = ghost

    def _on_state(self, msg: JointState) -> None:
        with self._lock:
            self._state = msg

    def _draw(self) -> None:
        with self._lock:
            state, path = self._state, self._ghost
        if self.view is None or state is None:
            return
        names = self.view.robot.joint_names
        index = {n: i for i, n in enumerate(state.name)}
        if not all(n in index for n in names):
            return
        if len(state.position) != len(state.name):
            self.warn(
                "state size", f"joint_states: {len(state.position)} positions for {len(state.name)} names: not drawn"
            )
            return
        q = np.array([state.position[index[n]] for n in names])
        if not np.all(np.isfinite(q)):
            self.warn("state nan", "joint_states: a position of the robot's joints is not finite: not drawn")
            return
        ghost = None if path is None else path.at(names, stamp_seconds(state))
        try:
            self.view.show(q, ghost)
        except Exception as e:  # (the viewer's server gone, …: the node and its executor go on)
            self.warn("draw", f"view: drawing failed: {type(e).__name__}: {e}", level="error")
            return
        self.frames_shown += 1
        self.ghost_shown = ghost


class GhostPath:
    """A planner's ``trajectory`` as the view draws it: joint names, absolute times (n,) and positions (n, joints),
    checked once (``of``)."""

    def __init__(self, names: list[str], times: np.ndarray, q: np.ndarray):
        self.names, self.times, self.q = names, times, q

    @classmethod
    def of(cls, traj: JointTrajectory) -> GhostPath | None:
        """The path of a trajectory message, None for one without points; ValueError if its points do not match its
        joint names, hold non-finite numbers or go back in time."""
        if not traj.points:
            return None
        names = list(traj.joint_names)
        if any(len(p.positions) != len(names) for p in traj.points):
            raise ValueError(f"a point's positions do not match its {len(names)} joint names")
        t0 = stamp_seconds(traj)
        times = np.array([t0 + time_seconds(p.time_from_start) for p in traj.points])
        q = np.array([list(p.positions) for p in traj.points], dtype=float).reshape(len(times), len(names))
        if not (np.all(np.isfinite(times)) and np.all(np.isfinite(q))):
            raise ValueError("a time or position is not finite")
        if np.any(np.diff(times) < 0):
            raise ValueError("its points go back in time")
        return cls(names, times, q)

    def at(self, names: list[str], t: float) -> np.ndarray | None:
        """Positions of ``names`` at time t (held at the ends), or None where the path lacks one of them."""
        if not all(n in self.names for n in names):
            return None
        return np.array([np.interp(t, self.times, self.q[:, self.names.index(n)]) for n in names])


def _replay(args) -> int:
    from ..view import RobotView, load_replay, view_replay, write_html

    replay = load_replay(args.source, args.model or None)
    if args.html:
        print(f"[vi_view] wrote {write_html(replay, args.html)}")
        return 0
    view = view_replay(replay, RobotView(replay.robot, ghost=replay.plan_q is not None))
    print(
        f"[vi_view] {args.source}: {len(replay.times)} samples over {replay.times[-1] - replay.times[0]:.3g} s"
        f"{', plan as the ghost' if replay.plan_q is not None else ''}"
    )
    print(f"[vi_view] open {view.url}  (Controls > Animations: play, time slider); Ctrl-C to quit", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        view.close()
    return 0


def _live(args) -> int:
    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    rclpy.init(args=["vi_view"])
    node = ViewNode(
        namespace=args.namespace,
        planner_name=args.planner_name,
        on_ready=lambda v: print(f"[vi_view] open {v.url}  (Ctrl-C to quit)", flush=True),
    )
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    print(
        f"[vi_view] waiting for {node.resolve_topic_name('robot_description')} "
        f"(ROS_DOMAIN_ID={os.environ.get('ROS_DOMAIN_ID', '0')})",
        flush=True,
    )
    try:
        while rclpy.ok():
            executor.spin_once(timeout_sec=0.1)
    except KeyboardInterrupt:
        pass
    finally:
        if node.view is not None:
            node.view.close()
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="vi_view",
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n".join(__doc__.splitlines()[2:8]),
    )
    ap.add_argument("source", nargs="?", default="", help="a plan (.npz) or a recording (.mcap); none: live")
    ap.add_argument(
        "--model",
        default="",
        help="the model to draw (bundled name, erd:<name>, URDF path): "
        "overrides the plan's model name or the recorded robot_description",
    )
    ap.add_argument("--html", default="", help="write a self-contained HTML replay to this path and exit")
    ap.add_argument("--namespace", default="", help="live: the run's namespace (the simulator's)")
    ap.add_argument("--planner-name", default="vi_planner", help="live: the planner node's name (its trajectory)")
    args = ap.parse_args(sys.argv[1:] if argv is None else argv)
    # SIGTERM unwinds like Ctrl-C, through the finally that stops the meshcat server (a process of its own).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if args.source:
        return _replay(args)
    if args.html:
        ap.error("--html needs a plan or a recording")
    return _live(args)


if __name__ == "__main__":
    sys.exit(main())
