"""MCAP recordings of a run with ROS 2 message schemas (rosbag2's storage format since Iron).

``BagRecorder`` subscribes to a run's topics *raw* — the CDR bytes exactly as they came over DDS — and writes each
message to one MCAP file with the ``mcap`` library: profile ``ros2``, message encoding ``cdr``, schemas named as
ROS names them (``sensor_msgs/msg/JointState``) in the ``ros2msg`` encoding, built from the ``.msg`` files that the
message packages install. ``ros2 bag play run.mcap`` on a full install plays it; ``rosbags`` and
``mcap-ros2-support`` read it. A thin adapter: no decoding, one write per message, log time = receive time.

``vi_recorder`` (``recorder_node``) runs it as a node of its own (``--ros-args -p path:=run.mcap -r __ns:=/run``);
the main job and the tests compose it in their process.
"""

from __future__ import annotations

import re
import sys
import threading
import time
from pathlib import Path

from rclpy.node import Node
from rclpy.qos import QoSProfile

from .common import LATCHED_QOS, PLAN_QOS, RECORD_QOS, RECORD_VOLATILE_QOS

_PRIMITIVES = {
    "bool",
    "byte",
    "char",
    "float32",
    "float64",
    "int8",
    "uint8",
    "int16",
    "uint16",
    "int32",
    "uint32",
    "int64",
    "uint64",
    "string",
    "wstring",
}
_SEPARATOR = "=" * 80

# (topic relative to the run's namespace, ROS type, QoS): what a run publishes. {c}/{p}: controller/planner names.
TOPICS = (
    ("joint_states", "sensor_msgs/msg/JointState", RECORD_QOS),
    ("{c}/commands", "std_msgs/msg/Float64MultiArray", RECORD_VOLATILE_QOS),
    ("{p}/trajectory", "trajectory_msgs/msg/JointTrajectory", LATCHED_QOS),
    ("{p}/plan", "std_msgs/msg/UInt8MultiArray", PLAN_QOS),  # (every plan, as the controller gets them)
    ("{p}/request_status", "diagnostic_msgs/msg/DiagnosticArray", RECORD_VOLATILE_QOS),
    ("vi_controller/controller_state", "trajectory_msgs/msg/JointTrajectory", RECORD_VOLATILE_QOS),
    ("diagnostics", "diagnostic_msgs/msg/DiagnosticArray", RECORD_VOLATILE_QOS),
    ("clock", "rosgraph_msgs/msg/Clock", RECORD_VOLATILE_QOS),
    ("robot_description", "std_msgs/msg/String", LATCHED_QOS),
)


def _msg_file(type_name: str) -> Path:
    """The installed .msg file of ``pkg/msg/Name`` (the message package's share/ directory)."""
    pkg, _, name = type_name.split("/")
    try:
        from ament_index_python.packages import get_package_share_directory

        share = Path(get_package_share_directory(pkg))
    except Exception:  # no ament index (AMENT_PREFIX_PATH unset): the venv's share/
        share = Path(sys.prefix) / "share" / pkg
    return share / "msg" / f"{name}.msg"


def _dependencies(text: str, pkg: str) -> list[str]:
    """Message types a .msg text refers to, as ``pkg/msg/Name``, in order of first use."""
    out: list[str] = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line or "=" in line.split()[-1] or len(line.split()) < 2:
            continue
        field_type = re.sub(r"\[.*\]$", "", line.split()[0])
        field_type = re.sub(r"<=\d+$", "", field_type)
        if field_type in _PRIMITIVES:
            continue
        dep = field_type.split("/") if "/" in field_type else [pkg, field_type]
        name = f"{dep[0]}/msg/{dep[-1]}"
        if name not in out:
            out.append(name)
    return out


def message_definition(type_name: str) -> str:
    """The ``ros2msg`` schema of a type: its .msg text, then each type it uses (depth first, once), each after a
    line of 80 '=' and ``MSG: pkg/Name`` — the concatenation rosbag2 writes."""
    seen: list[str] = []

    def visit(name: str) -> None:
        for dep in _dependencies(_msg_file(name).read_text(encoding="utf-8"), name.split("/")[0]):
            if dep not in seen:
                seen.append(dep)
                visit(dep)

    visit(type_name)
    parts = [_msg_file(type_name).read_text(encoding="utf-8").rstrip("\n")]
    for dep in seen:
        pkg, _, name = dep.split("/")
        parts.append(f"{_SEPARATOR}\nMSG: {pkg}/{name}\n" + _msg_file(dep).read_text(encoding="utf-8").rstrip("\n"))
    return "\n".join(parts) + "\n"


def _offered_qos(qos: QoSProfile) -> str:
    """rosbag2's ``offered_qos_profiles`` channel metadata (so a replay re-offers a latched topic as latched)."""
    return (
        f"- history: 1\n  depth: {qos.depth}\n  reliability: {int(qos.reliability)}\n"
        f"  durability: {int(qos.durability)}\n  deadline:\n    sec: 2147483647\n    nsec: 4294967295\n"
        "  lifespan:\n    sec: 2147483647\n    nsec: 4294967295\n  liveliness: 1\n"
        "  liveliness_lease_duration:\n    sec: 2147483647\n    nsec: 4294967295\n"
        "  avoid_ros_namespace_conventions: false\n"
    )


class McapFile:
    """One MCAP file of ROS 2 messages: ``add_topic`` once per topic, ``write`` the CDR bytes of each message.

    A write or the final index that the file system refuses (disk full, a removed medium: ``OSError``) stops the
    recording instead of raising into the caller — a subscription callback, whose exception would end the executor
    that spins it and every node on it: ``error`` holds the cause, later writes are dropped (``dropped`` counts them),
    what reached the disk stays there (without its index: ``mcap recover`` reads it)."""

    def __init__(self, path: str | Path):
        from mcap.writer import CompressionType, Writer

        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self.path = str(path)
        self._stream = open(path, "wb")  # noqa: SIM115 (closed by close())
        self._writer = Writer(self._stream, compression=CompressionType.ZSTD)
        self._writer.start(profile="ros2", library="vi_control")
        self._schemas: dict[str, int] = {}
        self._channels: dict[str, int] = {}
        self._sequence = 0
        self._lock = threading.Lock()
        self.counts: dict[str, int] = {}
        self.error: OSError | None = None
        self.dropped = 0

    def add_topic(self, topic: str, type_name: str, qos: QoSProfile | None = None) -> None:
        with self._lock:
            if type_name not in self._schemas:
                self._schemas[type_name] = self._writer.register_schema(
                    name=type_name, encoding="ros2msg", data=message_definition(type_name).encode()
                )
            meta = {"offered_qos_profiles": _offered_qos(qos)} if qos is not None else {}
            self._channels[topic] = self._writer.register_channel(
                topic=topic, message_encoding="cdr", schema_id=self._schemas[type_name], metadata=meta
            )
            self.counts[topic] = 0

    def write(self, topic: str, data: bytes, log_time_ns: int | None = None) -> bool:
        """Append one message; False if it was dropped (the file closed, or stopped by ``error``)."""
        t = time.time_ns() if log_time_ns is None else log_time_ns
        with self._lock:
            if self._stream.closed:
                self.dropped += self.error is not None
                return False
            try:
                self._writer.add_message(
                    channel_id=self._channels[topic],
                    log_time=t,
                    publish_time=t,
                    data=bytes(data),
                    sequence=self._sequence,
                )
            except OSError as e:
                self._fail(e)
                self.dropped += 1
                return False
            self._sequence += 1
            self.counts[topic] += 1
            return True

    def _fail(self, e: OSError) -> None:
        self.error = e
        try:  # (what the buffers still hold cannot be written either)
            self._stream.close()
        except OSError:
            pass

    def close(self) -> None:
        with self._lock:
            if not self._stream.closed:
                try:
                    self._writer.finish()
                    self._stream.close()
                except OSError as e:
                    self._fail(e)


class BagRecorder(Node):
    """Records a run's topics (``TOPICS``, in this node's namespace) into an MCAP file, raw.

    Composed in a process (``BagRecorder(path, namespace=ns)``, spun by the caller's executor) or run alone as
    ``vi_recorder`` (``recorder_node``: its parameters name them). ``close()`` finishes the file."""

    def __init__(
        self,
        path: str,
        namespace: str = "",
        controller_name: str = "effort_controller",
        planner_name: str = "vi_planner",
        name: str = "vi_bag_recorder",
        context=None,
    ):
        super().__init__(name, namespace=namespace, context=context)
        self._open(path, controller_name, planner_name)

    def _open(self, path: str, controller_name: str, planner_name: str) -> None:
        self.file = McapFile(path)
        for rel, type_name, qos in TOPICS:
            topic = rel.format(c=controller_name, p=planner_name)
            msg_type = _import_type(type_name)
            resolved = self.resolve_topic_name(topic)
            self.file.add_topic(resolved, type_name, qos)
            self.create_subscription(msg_type, topic, lambda data, t=resolved: self._record(t, data), qos, raw=True)
        self._reported = False
        self.get_logger().info(f"recording to {self.file.path}")

    def _record(self, topic: str, data: bytes) -> None:
        if not self.file.write(topic, data) and self.file.error is not None and not self._reported:
            self._report()

    def _report(self) -> None:
        self._reported = True
        f = self.file
        self.get_logger().error(
            f"recording stopped: {f.path}: {f.error.strerror or f.error} ({sum(f.counts.values())} messages written "
            "before; later ones are dropped, the other nodes go on). The file has no index: `mcap recover` reads "
            "what reached the disk"
        )

    def close(self) -> None:
        """Finish the file (its summary and index): it is readable only after this."""
        self.file.close()
        if self.file.error is not None and not self._reported:
            self._report()

    def destroy_node(self) -> None:
        self.close()
        super().destroy_node()


def _import_type(type_name: str):
    import importlib

    pkg, sub, name = type_name.split("/")
    return getattr(importlib.import_module(f"{pkg}.{sub}"), name)
