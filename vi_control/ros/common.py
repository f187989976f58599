"""What the three nodes share: parameter tables, model loading from parameters, QoS, the integrator factory."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from rcl_interfaces.msg import ParameterDescriptor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from .. import integrators
from ..model import load_robot
from ..model.robot import RobotModel
from ..robots import bundled_config, example_robot_urdf, share_dir

# name -> (default, description). A default of None declares a list parameter that may be empty.
MODEL_PARAMETERS: dict[str, tuple] = {
    "model": ("pendulum", "bundled model (urdf/<model>.urdf with config/<model>.yaml) or an example-robot-data "
                          "name (panda, ur5, ...); used when urdf_path and robot_description are empty"),
    "urdf_path": ("", "URDF file; overrides `model`"),
    "robot_description": ("", "URDF XML text; overrides `urdf_path` and `model`"),
    "system_yaml": ("", "system YAML file or inline YAML text (vi_control.model.system_config); default "
                        "config/<model>.yaml if present"),
    "integrator": ("midpoint", "discrete mechanics: 'midpoint' (seed 000) or, simulator only, 'linear_time' "
                               "(seed 001: O(n) DRNEA + RIQN for long chains)"),
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


def _scale_masses(xml: str, scale: float) -> str:
    """URDF with every <mass> and <inertia> scaled (a model-mismatch knob for the simulator)."""
    if scale == 1.0:
        return xml

    def mass(m: re.Match) -> str:
        return f'{m.group(1)}{float(m.group(2)) * scale!r}{m.group(3)}'

    xml = re.sub(r'(<mass\s+value=")([^"]+)(")', mass, xml)
    for key in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"):
        xml = re.sub(rf'(\b{key}=")([^"]+)(")', mass, xml)
    return xml


def robot_from_parameters(p: dict, mass_scale: float = 1.0) -> tuple[RobotModel, str]:
    """RobotModel and its URDF text from the MODEL_PARAMETERS values."""
    name = p["model"]
    system = p["system_yaml"] or None
    if p["robot_description"]:
        xml = p["robot_description"]
    elif p["urdf_path"]:
        xml = Path(p["urdf_path"]).read_text(encoding="utf-8")
    else:
        bundled = share_dir() / "urdf" / f"{name}.urdf"
        xml = bundled.read_text(encoding="utf-8") if bundled.is_file() else example_robot_urdf(name)
        system = system or bundled_config(name)
    if system and not os.path.isfile(system) and os.path.isfile(share_dir() / system):
        system = str(share_dir() / system)
    # anything else is passed on as inline YAML text (load_robot accepts path, text or dict)
    robot = load_robot(_scale_masses(xml, mass_scale), system, name=name or None)
    return robot, xml


def make_integrator(robot: RobotModel, dt: float, name: str = "midpoint", linearizable: bool = False):
    """The one place the ROS layer constructs a discrete system (vi_control.integrators.make_integrator).

    Planner and controller need the exact linearization, which only the midpoint VI provides
    (``linearizable=True``); the simulator may step either integrator.
    """
    if linearizable and name != "midpoint":
        raise ValueError(f"integrator {name!r} has no linearization: planner and controller need 'midpoint'")
    return integrators.make_integrator(name, robot, dt)


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
