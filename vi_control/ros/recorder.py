"""Recorder node: joint states, commands and the latest plan, with receive times (main job, tests, benchmarks).

Runs in the caller's process on a background executor thread; ``publish_command`` and friends let a test
talk to the nodes under test.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import rclpy
from nav_msgs.msg import Odometry
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String, UInt8MultiArray
from trajectory_msgs.msg import JointTrajectory

from .common import LATCHED_QOS, RECORD_QOS, RECORD_VOLATILE_QOS, STREAM_QOS
from .messages import joint_state_arrays, plan_from_message, split_seconds, stamp_seconds


class Recorder(Node):
    def __init__(
        self,
        joint_names: list[str],
        controller_name: str = "effort_controller",
        planner_name: str = "vi_planner",
        name: str = "vi_recorder",
        record_states: bool = True,
        namespace: str = "",
        odometry: bool = False,
        state_qos=RECORD_QOS,
    ):
        """``state_qos``: the joint-state subscription's QoS; RECORD_QOS (reliable, the last 1000 on joining)
        records every sample, a best-effort one only the newest (a rate measurement: a reliable reader slows a
        fast writer, and one that lost a sample delivers nothing newer until the writer's heartbeat repairs it)."""
        super().__init__(name, namespace=namespace)
        self.joint_names, self.controller_name = joint_names, controller_name
        self.lock = threading.Lock()
        self.states: list[tuple[float, float, np.ndarray, np.ndarray]] = []  # (receive, stamp, q, effort)
        self.commands: list[tuple[float, np.ndarray]] = []  # (receive, data)
        self.odometry: list[tuple[float, str, np.ndarray]] = []  # (stamp, child frame, (x, y, z, qx, qy, qz, qw))
        self.odometry_messages: list[Odometry] = []  # the same messages whole (pose and twist: vehicle mode)
        self.plan_message: UInt8MultiArray | None = None
        if record_states:
            self.create_subscription(JointState, "joint_states", self._on_state, state_qos)
        if record_states or odometry:
            self.create_subscription(Odometry, "odom", self._on_odometry, RECORD_QOS)
        self.create_subscription(
            Float64MultiArray, f"{controller_name}/commands", self._on_command, RECORD_VOLATILE_QOS
        )
        self.trajectory: JointTrajectory | None = None
        self.create_subscription(
            JointTrajectory, f"{planner_name}/trajectory", lambda m: setattr(self, "trajectory", m), LATCHED_QOS
        )
        self.robot_description: str | None = None
        self.create_subscription(
            String, "robot_description", lambda m: setattr(self, "robot_description", m.data), LATCHED_QOS
        )
        self.create_subscription(
            UInt8MultiArray, f"{planner_name}/plan", lambda m: setattr(self, "plan_message", m), LATCHED_QOS
        )
        self._cmd_pub = None  # (``cmd_pub``: created at first use)
        self.state_pub = self.create_publisher(JointState, "joint_states", RECORD_QOS)
        self.clock_pub = self.create_publisher(Clock, "clock", STREAM_QOS)  # a run's /clock (launcher remaps it)
        self._closing = False
        self._executor = SingleThreadedExecutor(context=self.context)
        self._executor.add_node(self)
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        while not self._closing and rclpy.ok(context=self.context):
            try:
                self._executor.spin_once(timeout_sec=0.05)
            except Exception:  # shutdown race
                if self._closing or not rclpy.ok(context=self.context):
                    return
                raise

    def _on_state(self, msg: JointState) -> None:
        now = time.monotonic()
        try:
            q, _ = joint_state_arrays(msg, self.joint_names)
        except ValueError:
            return
        idx = [list(msg.name).index(n) for n in self.joint_names]
        eff = np.asarray(msg.effort, float)[idx] if len(msg.effort) == len(msg.name) else np.zeros(len(idx))
        with self.lock:
            self.states.append((now, stamp_seconds(msg), q, eff))

    def _on_odometry(self, msg: Odometry) -> None:
        p, o = msg.pose.pose.position, msg.pose.pose.orientation
        with self.lock:
            pose = np.array([p.x, p.y, p.z, o.x, o.y, o.z, o.w])
            self.odometry.append((stamp_seconds(msg), msg.child_frame_id, pose))
            self.odometry_messages.append(msg)

    def _on_command(self, msg: Float64MultiArray) -> None:
        with self.lock:
            self.commands.append((time.monotonic(), np.asarray(msg.data, float)))

    def plan(self, model_name: str = "", model_hash: str = "", input_names: list[str] = ()):
        """(seq, Plan, flags) of the latest plan, or None."""
        msg = self.plan_message
        if msg is None:
            return None
        try:
            return plan_from_message(msg, model_name, model_hash, self.joint_names, list(input_names))
        except ValueError:
            return None

    def wait_for(self, predicate, timeout: float, period: float = 0.02) -> bool:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if predicate():
                return True
            time.sleep(period)
        return bool(predicate())

    # Services that only read: a request to them may be sent again. Just after discovery a request can be lost — the
    # server has matched the client's request writer but not yet its response reader (wait_for_service is already
    # true; ros2/rclpy#1191) — and a lost read is asked again, where a transition, which may have happened, is not.
    READ_ONLY_SERVICES = frozenset(
        {
            "GetState",
            "GetAvailableStates",
            "GetAvailableTransitions",
            "GetParameters",
            "ListParameters",
            "DescribeParameters",
            "GetParameterTypes",
        }
    )
    RESEND_AFTER = 2.0  # [s] a read-only request unanswered this long is sent again

    def call(self, srv_type, name: str, request, timeout: float = 30.0):
        """A service call (relative names: in this node's namespace); AssertionError if it does not answer within
        ``timeout``. A read-only service's request is sent again every ``RESEND_AFTER`` s until then."""
        client = self.create_client(srv_type, name)
        try:
            assert client.wait_for_service(timeout_sec=timeout), f"no service {name}"
            end = time.monotonic() + timeout
            again = self.RESEND_AFTER if srv_type.__name__ in self.READ_ONLY_SERVICES else timeout
            future = client.call_async(request)
            while not self.wait_for(future.done, min(again, max(end - time.monotonic(), 0.0))):
                assert time.monotonic() < end, f"{name} did not answer"
                future = client.call_async(request)
            return future.result()
        finally:
            self.destroy_client(client)

    def transition(self, node: str, transition: int) -> bool:
        """A lifecycle transition of ``node`` (lifecycle_msgs/Transition id) through its ~/change_state."""
        from lifecycle_msgs.msg import Transition
        from lifecycle_msgs.srv import ChangeState

        req = ChangeState.Request(transition=Transition(id=transition))
        return self.call(ChangeState, f"{node}/change_state", req).success

    def publish_clock(self, t: float) -> None:
        """Play the simulator: simulation time t on the run's /clock."""
        msg = Clock()
        msg.clock.sec, msg.clock.nanosec = split_seconds(t)
        self.clock_pub.publish(msg)

    @property
    def cmd_pub(self):
        """The publisher on the controller's command topic, created at first use: a recorder that does not command is
        no second publisher there (a controller warns of one: ``ControllerNode._watch_command_topic``)."""
        if self._cmd_pub is None:
            self._cmd_pub = self.create_publisher(Float64MultiArray, f"{self.controller_name}/commands", STREAM_QOS)
        return self._cmd_pub

    def publish_command(self, values) -> None:
        self.cmd_pub.publish(Float64MultiArray(data=[float(v) for v in values]))

    def close(self) -> None:
        self._closing = True
        self._thread.join(timeout=2.0)
        self._executor.shutdown(timeout_sec=1.0)
        self.destroy_node()
