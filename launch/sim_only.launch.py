"""Simulator only: the midpoint VI in real time, effort commands on <controller_name>/commands, joint states
and /clock out (run other nodes with use_sim_time:=true).

    ros2 launch vi_control sim_only.launch.py model:=pendulum
"""

from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

from launch import LaunchDescription


def generate_launch_description():
    config = PathJoinSubstitution([FindPackageShare("vi_control"), "config", "ros_simulator.yaml"])
    return LaunchDescription(
        [
            DeclareLaunchArgument("model", default_value="pendulum", description="bundled or example-robot-data model"),
            DeclareLaunchArgument("dt", default_value="0.01", description="integrator time step [s]"),
            Node(
                package="vi_control",
                executable="vi_simulator",
                name="vi_simulator",
                output="screen",
                parameters=[
                    config,
                    {
                        "use_sim_time": False,
                        "mode": "realtime",
                        "model": LaunchConfiguration("model"),
                        "dt": ParameterValue(LaunchConfiguration("dt"), value_type=float),
                    },
                ],
            ),
        ]
    )
