"""MCAP recordings of a run: the main job's closed loop over DDS recorded by ``bag.BagRecorder`` (the
``mcap`` writer, raw CDR from DDS), read back by ``rosbags`` — another library, its own CDR decoder — and by
``mcap-ros2-support``'s decoder (what ``vi_view`` uses): ROS schema names, every topic, monotone stamps, and the
same samples that the main job's own subscriber (an ordinary rclpy subscription) received.
"""

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("rclpy")
rosbags = pytest.importorskip("rosbags")

from vi_control.model.bundled import bundled_urdf  # noqa: E402

TYPES = {
    "joint_states": "sensor_msgs/msg/JointState",
    "effort_controller/commands": "std_msgs/msg/Float64MultiArray",
    "vi_planner/trajectory": "trajectory_msgs/msg/JointTrajectory",
    "vi_planner/plan": "std_msgs/msg/UInt8MultiArray",
    "vi_controller/controller_state": "trajectory_msgs/msg/JointTrajectory",
    "diagnostics": "diagnostic_msgs/msg/DiagnosticArray",
    "clock": "rosgraph_msgs/msg/Clock",
    "robot_description": "std_msgs/msg/String",
    "vi_planner/request_status": "diagnostic_msgs/msg/DiagnosticArray",
}


@pytest.fixture(scope="module")
def recorded_run(tmp_path_factory):
    from vi_control.ros.launcher import domain_id_for
    from vi_control.ros.main_job import run_closed_loop

    tmp = tmp_path_factory.mktemp("bag")
    run = run_closed_loop(domain_id_for("test_ros_bag"), str(tmp / "logs"), hold_time=0.5, record=str(tmp / "run.mcap"))
    assert not run.error, run.error + "\n" + "\n".join(f"--- {k}\n{v[-2000:]}" for k, v in run.logs.items())
    return run, Path(run.recording)


def _rosbags_messages(path: Path) -> dict[str, list]:
    from rosbags.highlevel import AnyReader

    out: dict[str, list] = {}
    with AnyReader([path]) as reader:
        for conn in reader.connections:
            out.setdefault(conn.topic, [])
        for conn, t, raw in reader.messages():
            out[conn.topic].append((t, reader.deserialize(raw, conn.msgtype)))
    return out


def test_schemas_are_the_ros_ones(recorded_run):
    from mcap.reader import make_reader

    _, path = recorded_run
    with open(path, "rb") as f:
        reader = make_reader(f)
        assert reader.get_header().profile == "ros2"
        summary = reader.get_summary()
    channels = {c.topic: c for c in summary.channels.values()}
    ns = next(t for t in channels if t.endswith("/joint_states"))[: -len("/joint_states")]
    for rel, type_name in TYPES.items():
        channel = channels[f"{ns}/{rel}"]
        schema = summary.schemas[channel.schema_id]
        assert (schema.name, schema.encoding, channel.message_encoding) == (type_name, "ros2msg", "cdr")
    latched = channels[f"{ns}/robot_description"].metadata["offered_qos_profiles"]
    assert "durability: 1" in latched  # transient local: a replay re-latches the description


def test_rosbags_reads_every_topic_with_monotone_stamps(recorded_run):
    run, path = recorded_run
    msgs = _rosbags_messages(path)
    ns = next(t for t in msgs if t.endswith("/joint_states"))[: -len("/joint_states")]
    counts = {rel: len(msgs[f"{ns}/{rel}"]) for rel in TYPES}
    for rel in (
        "joint_states",
        "effort_controller/commands",
        "vi_planner/trajectory",
        "vi_planner/plan",
        "vi_controller/controller_state",
        "diagnostics",
        "clock",
        "robot_description",
    ):
        assert counts[rel] > 0, counts
    assert counts["joint_states"] >= len(run.q) and counts["effort_controller/commands"] >= 50
    from mcap.reader import make_reader

    with open(path, "rb") as f:  # in the order written: log times (receive times) never go back
        log_times = [m.log_time for _, _, m in make_reader(f).iter_messages(log_time_order=False)]
    assert len(log_times) == sum(len(v) for v in msgs.values()) and np.all(np.diff(log_times) >= 0)
    stamps = [m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec for _, m in msgs[f"{ns}/joint_states"]]
    assert np.all(np.diff(stamps) >= 0), "joint state stamps go back"
    clock = [m.clock.sec + 1e-9 * m.clock.nanosec for _, m in msgs[f"{ns}/clock"]]
    assert np.all(np.diff(clock) >= 0), "the recorded /clock goes back"


def test_contents_equal_what_went_over_dds(recorded_run):
    """Every joint state the main job's own subscriber received is in the recording, in order, bit for bit;
    the trajectory and the robot description are the ones published."""
    run, path = recorded_run
    msgs = _rosbags_messages(path)
    ns = next(t for t in msgs if t.endswith("/joint_states"))[: -len("/joint_states")]
    bag = [
        (m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec, np.asarray(m.position), np.asarray(m.effort))
        for _, m in msgs[f"{ns}/joint_states"]
    ]
    i = 0
    for stamp, q, effort in zip(run.stamps, run.q, run.effort, strict=True):
        while i < len(bag) and not (bag[i][0] == stamp and np.array_equal(bag[i][1], q)):
            i += 1
        assert i < len(bag), f"the sample at t = {stamp} received over DDS is not in the recording"
        assert np.array_equal(bag[i][2], effort)
        i += 1
    ((_, traj),) = msgs[f"{ns}/vi_planner/trajectory"][-1:]
    assert list(traj.joint_names) == list(run.trajectory.joint_names)
    assert [list(p.positions) for p in traj.points] == [list(p.positions) for p in run.trajectory.points]
    ((_, desc),) = msgs[f"{ns}/robot_description"]
    assert desc.data == Path(bundled_urdf("pendulum")).read_text()


def test_vi_views_reader_agrees_with_rosbags(recorded_run):
    """The view's replay (mcap-ros2-support's decoder) holds the same joint states as rosbags decodes, and the
    planned trajectory as its ghost."""
    from vi_control.view import load_replay

    run, path = recorded_run
    replay = load_replay(path)
    msgs = _rosbags_messages(path)
    ns = next(t for t in msgs if t.endswith("/joint_states"))[: -len("/joint_states")]
    states = [m for _, m in msgs[f"{ns}/joint_states"]]
    assert replay.robot.name == "pendulum" and len(replay.times) == len(states)
    assert np.array_equal(replay.q[:, 0], [m.position[0] for m in states])
    assert np.array_equal(replay.times, [m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec for m in states])
    assert replay.plan_q is not None and np.array_equal(
        replay.plan_q[:, 0], [p.positions[0] for p in run.trajectory.points]
    )
