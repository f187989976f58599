"""Robot model layer: URDF (Pinocchio's parser) + system YAML -> RobotModel; ``ModelSpec`` names a model."""

from .errors import ModelError, SystemConfigError, URDFError
from .robot import RobotModel, load_urdf
from .spec import ModelSpec, load_robot
from .system_config import Constraint, SystemConfig, load_system_config

__all__ = [
    "ModelError",
    "URDFError",
    "SystemConfigError",
    "RobotModel",
    "load_robot",
    "load_urdf",
    "ModelSpec",
    "Constraint",
    "SystemConfig",
    "load_system_config",
]
