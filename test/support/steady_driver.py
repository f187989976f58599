"""A robot driver that holds still (a test helper run as its own process): publishes ``JointState`` on
``joint_states`` at ``rate`` Hz, stamped with the wall clock as a hardware driver stamps them, the positions given on
its command line and zero velocities — the 1 kHz stream a planner and a controller must live beside. It paces
itself on absolute deadlines (no drift) and stops on SIGINT/SIGTERM.

    python steady_driver.py <namespace> <joint,joint,...> <q,q,...> <rate>
"""

import signal
import sys
import time

import rclpy
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions
from sensor_msgs.msg import JointState

from vi_control.ros.common import SENSOR_QOS


def main() -> None:
    namespace, joints = sys.argv[1], sys.argv[2].split(",")
    q, rate = [float(v) for v in sys.argv[3].split(",")], float(sys.argv[4])
    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    node = Node("steady_driver", namespace=namespace)
    pub = node.create_publisher(JointState, "joint_states", SENSOR_QOS)
    msg = JointState(name=joints, position=q, velocity=[0.0] * len(q))
    stop = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.append(1))
    period, deadline = 1.0 / rate, time.monotonic()
    while not stop:
        msg.header.stamp = node.get_clock().now().to_msg()
        pub.publish(msg)
        deadline += period
        pause = deadline - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        else:
            deadline = time.monotonic()  # fell behind (a loaded machine): no burst to catch up
    node.destroy_node()
    rclpy.try_shutdown()


if __name__ == "__main__":
    main()
