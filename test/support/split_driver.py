"""One driver of several (a test helper run as its own process): it subscribes to the simulator's joint states and
publishes only the joints named on its command line on ``split_joint_states`` — every ``every``-th simulator step
by stamp (k = round(t / dt)), with the simulator's stamp, positions and velocities. Two of these make one robot's
joints come from two drivers at different rates, as an arm driver and a separate wrist driver do.

    python split_driver.py <namespace> <joint,joint,...> <every> <dt>
"""

import sys

import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from sensor_msgs.msg import JointState

from vi_control.ros.common import STREAM_QOS


def main() -> None:
    namespace, joints, every, dt = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3]), float(sys.argv[4])
    rclpy.init()
    node = Node(f"driver_{'_'.join(joints)}", namespace=namespace)
    pub = node.create_publisher(JointState, "split_joint_states", STREAM_QOS)

    def relay(msg: JointState) -> None:
        t = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
        if round(t / dt) % every:
            return
        idx = [list(msg.name).index(n) for n in joints]
        out = JointState(name=joints, position=[msg.position[i] for i in idx])
        if len(msg.velocity) == len(msg.name):
            out.velocity = [msg.velocity[i] for i in idx]
        out.header = msg.header
        pub.publish(out)

    node.create_subscription(JointState, "joint_states", relay, STREAM_QOS)
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == "__main__":
    main()
