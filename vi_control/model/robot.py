"""RobotModel: the one kinematic tree (URDF via Pinocchio + system YAML) that every algorithm reads."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from .errors import SystemConfigError
from .system_config import Constraint, SystemConfig, load_system_config
from .urdf import JointInfo, ParsedURDF, build_pinocchio_model, parse_urdf, read_urdf_text


@dataclass(frozen=True)
class RobotModel:
    """Immutable structure of a robot: tree, joint metadata, inputs and constraints.

    Configuration q has one entry per moving joint in Pinocchio's order (``joint_names``).
    Scratch buffers live in ``create_data()``, as in Pinocchio.
    """

    name: str
    urdf_xml: str
    pin_model: pin.Model
    joints: tuple[JointInfo, ...]
    gravity: np.ndarray
    actuated: tuple[str, ...]
    effort_limits: np.ndarray  # per actuated joint
    damping: np.ndarray  # per configuration variable
    prescribed: tuple[str, ...]
    constraints: tuple[Constraint, ...]
    links: tuple[str, ...]
    root_link: str

    @property
    def nq(self) -> int:
        return self.pin_model.nq

    @property
    def joint_names(self) -> list[str]:
        return [j.name for j in self.joints]

    @property
    def dynamic_joints(self) -> list[str]:
        return [j.name for j in self.joints if j.name not in self.prescribed]

    @property
    def continuous_mask(self) -> np.ndarray:
        return np.array([j.continuous for j in self.joints], dtype=bool)

    @property
    def n_constraints(self) -> int:
        return sum(c.size for c in self.constraints)

    def joint_index(self, name: str) -> int:
        return self.joint_names.index(name)

    def create_data(self) -> pin.Data:
        return self.pin_model.createData()

    @property
    def hash(self) -> str:
        """Content hash of everything that defines the dynamics (for caches and saved plans)."""
        h = hashlib.sha256(self.urdf_xml.encode())
        h.update(np.asarray(self.gravity, float).tobytes())
        h.update(repr((self.actuated, self.prescribed, self.constraints)).encode())
        h.update(np.asarray(self.damping, float).tobytes())
        return h.hexdigest()[:16]

    def neutral(self) -> np.ndarray:
        return np.zeros(self.nq)


def _resolve(parsed: ParsedURDF, model: pin.Model, cfg: SystemConfig) -> dict:
    order = [model.names[i] for i in range(1, model.njoints)]
    joints = tuple(parsed.joints[n] for n in order)
    names = set(order)
    for key, group in (("damping", cfg.damping), ("prescribed", cfg.prescribed),
                       ("actuated", cfg.actuated or {})):
        for jn in group:
            if jn not in names:
                raise SystemConfigError(f"{key}: joint {jn!r} does not exist (moving joints: {order})")
    if len(set(cfg.prescribed)) != len(cfg.prescribed):
        raise SystemConfigError("prescribed: a joint is listed twice")
    links = set(parsed.links) | {"world"}
    for i, c in enumerate(cfg.constraints):
        for ln in (c.link_a, c.link_b):
            if ln not in links:
                raise SystemConfigError(f"constraints[{i}]: link {ln!r} does not exist")
    if cfg.actuated is None:
        actuated = tuple(n for n in order if n not in cfg.prescribed)
        limits = [parsed.joints[n].effort_limit for n in actuated]
    else:
        both = set(cfg.actuated) & set(cfg.prescribed)
        if both:
            raise SystemConfigError(f"actuated: joint(s) {sorted(both)} are also prescribed")
        actuated = tuple(n for n in order if n in cfg.actuated)
        limits = [cfg.actuated[n] if cfg.actuated[n] is not None else parsed.joints[n].effort_limit
                  for n in actuated]
    # URDF effort 0 on a continuous joint means "not given".
    limits = [np.inf if (lim is None or lim <= 0) else lim for lim in limits]
    damping = np.array([cfg.damping.get(n, parsed.joints[n].damping) for n in order])
    return dict(joints=joints, actuated=actuated, effort_limits=np.array(limits, float),
                damping=damping, prescribed=tuple(n for n in order if n in cfg.prescribed))


def load_robot(urdf: str, system: str | dict | None = None, name: str | None = None) -> RobotModel:
    """Load a robot from a URDF path or XML string plus an optional system YAML (path, text or dict).

    Raises URDFError / SystemConfigError (both ValueError) naming what is wrong.
    """
    xml = read_urdf_text(urdf)
    parsed = parse_urdf(xml)
    model = build_pinocchio_model(parsed)
    cfg = load_system_config(system)
    model.gravity = pin.Motion(np.asarray(cfg.gravity, float), np.zeros(3))
    r = _resolve(parsed, model, cfg)
    return RobotModel(
        name=name or parsed.name, urdf_xml=xml, pin_model=model, gravity=np.asarray(cfg.gravity, float),
        constraints=tuple(cfg.constraints), links=tuple(parsed.links), root_link=parsed.root, **r,
    )
