"""A recording the file system refuses (disk full: Linux's /dev/full answers every write with ENOSPC): the MCAP writer
stops with the cause instead of raising into its subscription callback — which would end the executor that spins it
and every node on it (the main job's live view shares the recorder's) — and the recorder says so once, in its log.
What reached the disk before stays readable; a recording that never fails is unchanged."""

import errno
import os
import time

import numpy as np
import pytest

pytest.importorskip("rclpy")

from vi_control.ros.bag import McapFile  # noqa: E402

FULL = "/dev/full"
pytestmark = pytest.mark.skipif(not os.path.exists(FULL), reason="no /dev/full on this system")


def test_a_full_disk_stops_the_file_with_its_cause_and_drops_what_follows():
    f = McapFile(FULL)
    f.add_topic("/joint_states", "sensor_msgs/msg/JointState")
    data = np.random.default_rng(0).bytes(1000)  # (random: the writer's zstd cannot shrink it below its buffers)
    results = [f.write("/joint_states", data) for _ in range(3000)]  # 3 MB
    assert f.error is not None and f.error.errno == errno.ENOSPC
    first_refused = results.index(False)
    assert all(results[:first_refused]) and not any(results[first_refused:])
    assert f.counts["/joint_states"] == first_refused and f.dropped == 3000 - first_refused
    f.close()  # (no index can be written: no raise either)
    f.close()


def test_a_recording_that_never_fails_is_whole(tmp_path):
    from mcap.reader import make_reader

    f = McapFile(tmp_path / "run.mcap")
    f.add_topic("/joint_states", "sensor_msgs/msg/JointState")
    assert all(f.write("/joint_states", bytes(100), log_time_ns=i) for i in range(500))
    f.close()
    assert f.error is None and f.dropped == 0
    assert not f.write("/joint_states", bytes(100))  # (after close: dropped, not an error)
    with open(tmp_path / "run.mcap", "rb") as fh:
        assert sum(1 for _ in make_reader(fh).iter_messages()) == 500


def test_the_recorder_node_survives_a_full_disk_and_the_executor_goes_on(request):
    """The recorder on /dev/full beside another node on one executor: joint states published at it fill the disk;
    the executor's spin raises nothing, the other node still receives every message, and the recorder logged the
    stop once."""
    import rclpy
    from in_process import rclpy_context, record_logs
    from rclpy.executors import SingleThreadedExecutor
    from sensor_msgs.msg import JointState

    from vi_control.ros.bag import BagRecorder
    from vi_control.ros.common import RECORD_QOS

    with rclpy_context(request.node.name) as ctx:
        ns = f"/bag_faults_{os.getpid()}"
        recorder = BagRecorder(FULL, namespace=ns, context=ctx)
        other = rclpy.create_node("bag_faults_peer", namespace=ns, context=ctx)
        try:
            logged = record_logs(recorder)
            received = []
            other.create_subscription(JointState, "joint_states", received.append, 100)
            pub = other.create_publisher(JointState, "joint_states", RECORD_QOS)  # (latched, as the simulator's)
            ex = SingleThreadedExecutor(context=ctx)
            ex.add_node(recorder)
            ex.add_node(other)
            rng = np.random.default_rng(0)
            f = recorder.file

            def settled() -> bool:  # (both nodes took every message sent)
                return len(received) >= sent and sum(f.counts.values()) + f.dropped >= sent

            sent = 0
            for _ in range(800):  # 4.8 kB of random numbers a message (the writer's zstd cannot shrink them): 3.8 MB
                q = rng.standard_normal((3, 200))
                pub.publish(JointState(name=[f"j{i}" for i in range(200)], position=q[0], velocity=q[1], effort=q[2]))
                sent += 1
                deadline = time.monotonic() + 10.0
                while not settled() and time.monotonic() < deadline:
                    ex.spin_once(timeout_sec=0.05)
            assert f.error is not None and f.error.errno == errno.ENOSPC, (f.counts, len(received))
            assert len(received) == sent
            errors = [text for level, text in logged.messages if level == "error"]
            assert len(errors) == 1 and "recording stopped" in errors[0] and "No space left on device" in errors[0]
            recorder.close()
            assert len([1 for level, _ in logged.messages if level == "error"]) == 1  # (said once)
        finally:
            recorder.destroy_node()
            other.destroy_node()
