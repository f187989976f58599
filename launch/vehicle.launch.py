"""Underwater vehicle (Jimenez2013, §6.1): simulator + DMOC planner + algebra TV-LQR controller, in lockstep on the
simulator's /clock (planner and controller run with use_sim_time).

    ros2 launch vi_control vehicle.launch.py
    ros2 topic pub --once /vi_planner/goal geometry_msgs/PoseStamped \
        "{header: {frame_id: odom}, pose: {position: {x: 2.0, y: 1.0}, orientation: {z: 0.7071068, w: 0.7071068}}}"
"""

from launch.substitutions import PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

from launch import LaunchDescription


def _config(name):
    return PathJoinSubstitution([FindPackageShare("vi_control"), "config", name])


# The simulator publishes `clock` in its namespace (/clock in the root one); rclpy reads the absolute /clock:
# remapped, a planner or controller pushed into a namespace with its simulator reads that namespace's clock.
CLOCK = [("/clock", "clock")]


def generate_launch_description():
    return LaunchDescription(
        [
            Node(
                package="vi_control",
                executable="vi_simulator",
                name="vi_simulator",
                output="screen",
                parameters=[_config("ros_vehicle_simulator.yaml"), {"use_sim_time": False}],
            ),  # it is the clock
            Node(
                package="vi_control",
                executable="vi_planner",
                name="vi_planner",
                output="screen",
                remappings=CLOCK,
                parameters=[_config("ros_vehicle_planner.yaml"), {"use_sim_time": True}],
            ),
            Node(
                package="vi_control",
                executable="vi_controller",
                name="vi_controller",
                output="screen",
                remappings=CLOCK,
                parameters=[_config("ros_vehicle_controller.yaml"), {"use_sim_time": True}],
            ),
        ]
    )
