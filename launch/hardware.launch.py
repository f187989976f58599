"""Planner + controller against a real robot (or Gazebo): existing joint states in, effort commands out.

The robot side must publish sensor_msgs/JointState on `joint_states` and accept std_msgs/Float64MultiArray
on `<controller_name>/commands` (ros2_control's forward_command_controller for effort interfaces).

    ros2 launch vi_control hardware.launch.py task:=task_pendulum_swingup model:=pendulum \
        controller_name:=effort_controller joint_states:=/joint_states
"""

from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

from launch import LaunchDescription


def _config(name):
    return PathJoinSubstitution([FindPackageShare("vi_control"), "config", name])


def generate_launch_description():
    model, controller = LaunchConfiguration("model"), LaunchConfiguration("controller_name")
    remap = [("joint_states", LaunchConfiguration("joint_states"))]
    return LaunchDescription([
        DeclareLaunchArgument("model", default_value="pendulum", description="model of the real robot"),
        DeclareLaunchArgument("task", default_value="task_pendulum_swingup", description="task YAML"),
        DeclareLaunchArgument("controller_name", default_value="effort_controller",
                              description="commands go to <controller_name>/commands"),
        DeclareLaunchArgument("joint_states", default_value="/joint_states", description="joint state topic"),
        Node(package="vi_control", executable="vi_planner", name="vi_planner", output="screen", remappings=remap,
             parameters=[_config("ros_planner.yaml"), {"task": LaunchConfiguration("task")}]),
        Node(package="vi_control", executable="vi_controller", name="vi_controller", output="screen",
             remappings=remap,
             parameters=[_config("ros_hardware_controller.yaml"), {"model": model, "controller_name": controller}]),
    ])
