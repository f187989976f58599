"""What the three nodes share: parameter tables, the model from parameters, QoS."""

from __future__ import annotations

import os
import sys

from rcl_interfaces.msg import ParameterDescriptor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from ..model.bundled import share_dir
from ..model.robot import RobotModel
from ..model.spec import ModelSpec

# name -> (default, description). A default of None declares a list parameter that may be empty.
MODEL_PARAMETERS: dict[str, tuple] = {
    "model": ("pendulum", "bundled model name (acrobot, cartpole, ...: its URDF and system YAML), erd:<name> "
                          "(example-robot-data: erd:panda, erd:ur5, ...), or a URDF path; used when urdf_path "
                          "and robot_description are empty (then it only names the model)"),
    "urdf_path": ("", "URDF file; overrides `model`"),
    "robot_description": ("", "URDF XML text; overrides `urdf_path` and `model`"),
    "system_yaml": ("", "system YAML file or inline YAML text (vi_control.model.system_config); default "
                        "config/<model>.yaml if present"),
    "integrator": ("midpoint", "discrete mechanics: 'midpoint' (seed 000), 'gni' (seed 003: models with "
                               "nonholonomic constraints) or, simulator only, 'linear_time' (seed 001: O(n) DRNEA "
                               "+ RIQN for long chains)"),
}

# Plans and the URDF are state, not a stream: a late subscriber must still get the latest one.
LATCHED_QOS = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)
STREAM_QOS = QoSProfile(depth=10, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE)
# A controller wants the newest joint state, not a backlog of old ones.
LATEST_QOS = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE)
# Publishers of streams someone may record (the simulator's joint states) keep a deeper history, so a slow
# reliable reader (the main job's recorder during a fast lockstep run) catches up instead of losing samples.
RECORD_QOS = QoSProfile(depth=1000, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE)


def declare_parameters(node: Node, table: dict[str, tuple]) -> dict:
    """Declare every parameter of ``table`` with its description; return their values (None lists -> [])."""
    values = {}
    for name, (default, description) in table.items():
        node.declare_parameter(name, default, ParameterDescriptor(description=description, dynamic_typing=True))
        v = node.get_parameter(name).value
        values[name] = [] if v is None and default is None else v
    return values


def model_spec_from_parameters(p: dict, mass_scale: float = 1.0) -> ModelSpec:
    """The ModelSpec named by the MODEL_PARAMETERS values (vi_control.model.spec: one resolver for all)."""
    return ModelSpec.from_parameters(model=p["model"], urdf_path=p["urdf_path"],
                                     robot_description=p["robot_description"], system_yaml=p["system_yaml"],
                                     mass_scale=mass_scale)


def robot_from_parameters(p: dict, mass_scale: float = 1.0) -> tuple[RobotModel, str]:
    """RobotModel and its URDF text from the MODEL_PARAMETERS values."""
    spec = model_spec_from_parameters(p, mass_scale)
    return spec.load(), spec.urdf_text()


def command_joints(p: dict, robot: RobotModel) -> list[str]:
    """The `joints` parameter (command entry order), default the actuated joints; must be a permutation."""
    joints = list(p["joints"]) or list(robot.actuated)
    if sorted(joints) != sorted(robot.actuated):
        raise ValueError(f"parameter joints {joints} must be a permutation of the actuated joints {robot.actuated}")
    return joints


def resolve_config(path: str) -> str:
    """A config file given as a path, or by name relative to the package's config/ directory."""
    if os.path.isfile(path):
        return path
    for cand in (share_dir() / path, share_dir() / "config" / path, share_dir() / "config" / f"{path}.yaml"):
        if cand.is_file():
            return str(cand)
    raise FileNotFoundError(f"no config file {path!r} (looked in {share_dir() / 'config'})")


def run_node(node_cls: type, args: list[str] | None = None) -> None:
    """Standard entry point: rclpy init with ``--ros-args``, spin until Ctrl-C/SIGTERM, clean shutdown."""
    import rclpy
    from rclpy.executors import ExternalShutdownException

    rclpy.init(args=sys.argv if args is None else args)
    node = None
    try:
        node = node_cls()
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        if node is not None:
            node.destroy_node()
        if rclpy.ok():
            rclpy.try_shutdown()
