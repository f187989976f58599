"""Pendulum swing-up: simulator + planner + controller (the main job's configuration, in lockstep).

    ros2 launch vi_control swingup.launch.py
"""

from launch.substitutions import PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

from launch import LaunchDescription


def _config(name):
    return PathJoinSubstitution([FindPackageShare("vi_control"), "config", name])


def generate_launch_description():
    return LaunchDescription([
        Node(package="vi_control", executable="vi_simulator", name="vi_simulator", output="screen",
             parameters=[_config("ros_simulator.yaml")]),
        Node(package="vi_control", executable="vi_planner", name="vi_planner", output="screen",
             parameters=[_config("ros_planner.yaml")]),
        Node(package="vi_control", executable="vi_controller", name="vi_controller", output="screen",
             parameters=[_config("ros_controller.yaml")]),
    ])
