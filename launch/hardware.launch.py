"""Planner + controller against a real robot or Gazebo (gz_ros2_control): joint states in, effort commands out.

The robot side publishes sensor_msgs/JointState on `joint_states` (best effort or reliable) and accepts
std_msgs/Float64MultiArray on `<controller_name>/commands` (ros2_control's JointGroupEffortController, or
forward_command_controller with effort interfaces). See docs/guides/on_your_robot.md.

    ros2 launch vi_control hardware.launch.py model:=pendulum controller_name:=effort_controller
    ros2 launch vi_control hardware.launch.py use_sim_time:=true robot_description_topic:=/robot_description  # Gazebo
"""

from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

from launch import LaunchDescription


def _config(name):
    return PathJoinSubstitution([FindPackageShare("vi_control"), "config", name])


def generate_launch_description():
    arg = LaunchConfiguration
    sim_time = ParameterValue(arg("use_sim_time"), value_type=bool)
    remap = [("joint_states", arg("joint_states"))]
    common = {
        "use_sim_time": sim_time,
        "model": arg("model"),
        "robot_description_topic": arg("robot_description_topic"),
    }
    return LaunchDescription(
        [
            DeclareLaunchArgument(
                "model",
                default_value="pendulum",
                description="model of the robot (bundled name, "
                "erd:<name> or URDF path; with robot_description_topic it names the system YAML)",
            ),
            DeclareLaunchArgument(
                "task",
                default_value="task_pendulum_swingup_bounded",
                description="task YAML (the default fits the bundled pendulum's 5 N·m limit)",
            ),
            DeclareLaunchArgument(
                "controller_name",
                default_value="effort_controller",
                description="commands go to <controller_name>/commands",
            ),
            DeclareLaunchArgument("joint_states", default_value="/joint_states", description="joint state topic"),
            DeclareLaunchArgument(
                "use_sim_time", default_value="false", description="true in Gazebo: stamps and plan times on /clock"
            ),
            DeclareLaunchArgument(
                "robot_description_topic",
                default_value="",
                description="take the URDF from this topic (e.g. /robot_description) instead of `model`",
            ),
            Node(
                package="vi_control",
                executable="vi_planner",
                name="vi_planner",
                output="screen",
                remappings=remap,
                parameters=[_config("ros_hardware_planner.yaml"), {**common, "task": arg("task")}],
            ),
            Node(
                package="vi_control",
                executable="vi_controller",
                name="vi_controller",
                output="screen",
                remappings=remap,
                parameters=[
                    _config("ros_hardware_controller.yaml"),
                    {**common, "controller_name": arg("controller_name")},
                ],
            ),
        ]
    )
