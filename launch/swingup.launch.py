"""Pendulum swing-up: simulator + planner + controller (the main job's configuration, in lockstep on the
simulator's /clock: planner and controller run with use_sim_time).

    ros2 launch vi_control swingup.launch.py
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
                parameters=[_config("ros_simulator.yaml"), {"use_sim_time": False}],
            ),  # it is the clock
            Node(
                package="vi_control",
                executable="vi_planner",
                name="vi_planner",
                output="screen",
                remappings=CLOCK,
                parameters=[_config("ros_planner.yaml"), {"use_sim_time": True}],
            ),
            Node(
                package="vi_control",
                executable="vi_controller",
                name="vi_controller",
                output="screen",
                remappings=CLOCK,
                parameters=[_config("ros_controller.yaml"), {"use_sim_time": True}],
            ),
        ]
    )
