"""Exceptions raised by the model layer: each names the offending file, joint, link or key."""


class ModelError(ValueError):
    """Base class for every error in a robot description or system file."""


class URDFError(ModelError):
    """The URDF is missing, malformed, or describes something vi_control cannot simulate."""


class SystemConfigError(ModelError):
    """The system YAML is malformed, has a wrong type, or names a joint/link that does not exist."""
