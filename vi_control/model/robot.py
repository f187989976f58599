"""RobotModel: the one kinematic tree (URDF via Pinocchio + system YAML) that every algorithm reads."""

from __future__ import annotations

import functools
import hashlib
import os
from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

from .constraint_rows import check_constraint_rank
from .errors import SystemConfigError, URDFError
from .limits import MASS_SCALE_RANGE, Bound
from .mass_structure import check_mass_structure
from .system_config import INERTIA_POLICIES, Constraint, NonholonomicConstraint, SystemConfig, load_system_config
from .urdf import (
    FLOATING_BASE_PREFIX,
    JointInfo,
    ParsedURDF,
    add_floating_base,
    build_pinocchio_model,
    check_inertias,
    lock_joints,
    parse_urdf,
    read_urdf_text,
)
from .visuals import dynamics_text


def wrap_angle(a: np.ndarray) -> np.ndarray:
    """Angles to [−π, π): continuous joints' coordinates are only meaningful modulo 2π.

    Angles already in [−π, π) are returned exactly (the modulo arithmetic would round them).
    """
    a = np.asarray(a, float)
    return np.where((a >= -np.pi) & (a < np.pi), a, (a + np.pi) % (2 * np.pi) - np.pi)[()]


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
    floating_base: bool = False
    masses: dict[str, float] = field(default_factory=dict)  # link -> mass (URDF mass × mass_scale)
    mass_scale: float = 1.0  # every link's mass and inertia were multiplied by this (model mismatch)
    nonholonomic: tuple[NonholonomicConstraint, ...] = ()  # velocity constraints A(q)q̇ = 0 (Kobilarov2010)

    @property
    def total_mass(self) -> float:
        return float(sum(self.masses.values()))

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

    @property
    def n_nonholonomic(self) -> int:
        """Rows of A(q): the nonholonomic constraint equations."""
        return sum(c.size for c in self.nonholonomic)

    def joint_index(self, name: str) -> int:
        return self.joint_names.index(name)

    def create_data(self) -> pin.Data:
        return self.pin_model.createData()

    @property
    def hash(self) -> str:
        """Content hash of everything that defines the dynamics (for caches and saved plans).

        The URDF enters without what only draws the robot (``<visual>``, ``<collision>``, ``<material>``:
        ``visuals.dynamics_text``), so adding or changing visuals keeps a model's hash and its saved plans."""
        h = _urdf_digest(self.urdf_xml).copy()
        h.update(np.asarray(self.gravity, float).tobytes())
        h.update(repr((self.actuated, self.prescribed, self.constraints)).encode())
        if self.nonholonomic:  # (absent from the hash of holonomic models: their saved plans stay valid)
            h.update(repr(self.nonholonomic).encode())
        h.update(np.asarray(self.damping, float).tobytes())
        if self.mass_scale != 1.0:
            h.update(np.float64(self.mass_scale).tobytes())
        return h.hexdigest()[:16]

    def neutral(self) -> np.ndarray:
        return np.zeros(self.nq)


@functools.lru_cache(maxsize=32)
def _urdf_digest(urdf_xml: str) -> hashlib._Hash:
    """sha256 fed with the URDF's ``dynamics_text``: its regular expressions over a panda's URDF take ~0.2 ms, a
    few percent of a plan, and every plan stamps the hash (callers ``copy()`` before they update it)."""
    return hashlib.sha256(dynamics_text(urdf_xml).encode())


def _resolve(parsed: ParsedURDF, model: pin.Model, cfg: SystemConfig) -> dict:
    order = [model.names[i] for i in range(1, model.njoints)]
    joints = tuple(parsed.joints[n] for n in order)
    names = set(order)
    for key, group in (("damping", cfg.damping), ("prescribed", cfg.prescribed), ("actuated", cfg.actuated or {})):
        for jn in group:
            if jn not in names:
                what = "is a fixed joint" if jn in parsed.fixed_joints else "does not exist"
                raise SystemConfigError(f"{key}: joint {jn!r} {what} (moving joints: {order})")
    if len(set(cfg.prescribed)) != len(cfg.prescribed):
        raise SystemConfigError("prescribed: a joint is listed twice")
    links = set(parsed.links) | {"world"}
    for i, c in enumerate(cfg.constraints):
        for ln in (c.link_a, c.link_b):
            if ln not in links:
                raise SystemConfigError(f"constraints[{i}]: link {ln!r} does not exist")
        for jn in c.joints:
            if jn not in names:
                what = "is a fixed joint" if jn in parsed.fixed_joints else "does not exist"
                raise SystemConfigError(f"constraints[{i}]: joint {jn!r} {what} (moving joints: {order})")
    for i, c in enumerate(cfg.nonholonomic):
        if c.link not in parsed.links:
            raise SystemConfigError(
                f"nonholonomic[{i}]: link {c.link!r} does not exist (links: {sorted(parsed.links)})"
            )
    # a floating base, and a joint that mimics another (URDF <mimic>), is not actuated unless the YAML says so
    mimic = set(parsed.mimic)
    if cfg.actuated is None:
        actuated = tuple(
            n
            for n in order
            if n not in cfg.prescribed
            and n not in mimic
            and not (cfg.floating_base and n.startswith(FLOATING_BASE_PREFIX))
        )
        limits = [parsed.joints[n].effort_limit for n in actuated]
    else:
        both = set(cfg.actuated) & set(cfg.prescribed)
        if both:
            raise SystemConfigError(f"actuated: joint(s) {sorted(both)} are also prescribed")
        actuated = tuple(n for n in order if n in cfg.actuated)
        limits = [cfg.actuated[n] if cfg.actuated[n] is not None else parsed.joints[n].effort_limit for n in actuated]
    # URDF effort 0 on a continuous joint means "not given".
    limits = [np.inf if (lim is None or lim <= 0) else lim for lim in limits]
    damping = np.array([cfg.damping.get(n, parsed.joints[n].damping) for n in order])
    return dict(
        joints=joints,
        actuated=actuated,
        effort_limits=np.array(limits, float),
        damping=damping,
        prescribed=tuple(n for n in order if n in cfg.prescribed),
    )


def mimic_constraints(parsed: ParsedURDF, cfg: SystemConfig) -> list[Constraint]:
    """URDF ``<mimic>`` as linear holonomic couplings q_joint − multiplier·q_mimicked = offset (a ``joints``
    constraint; docs/concepts/model.md). A joint the system YAML already couples by a ``joints`` constraint is left to
    the YAML's (the way around a ``<mimic>`` naming a joint the URDF lacks)."""
    given = {j for c in cfg.constraints if c.type == "joints" for j in c.joints}
    for j, (m, _, _) in parsed.mimic.items():
        if j not in given and m not in parsed.joints:
            what = "a fixed joint" if m in parsed.fixed_joints else "not a joint of this URDF"
            raise URDFError(
                f"joint {j!r} <mimic>: joint {m!r} is {what} (a joints constraint on {j!r} in the "
                "system YAML replaces the URDF's)"
            )
        if j not in given and m == j:
            raise URDFError(f"joint {j!r} <mimic>: a joint cannot mimic itself")
    return [
        Constraint(
            type="joints", link_a="world", point_a=(0.0, 0.0, 0.0), joints=(j, m), coefficients=(1.0, -a), offset=b
        )
        for j, (m, a, b) in parsed.mimic.items()
        if j not in given
    ]


def scale_inertias(model: pin.Model, scale: float) -> None:
    """Multiply every body's mass and rotational inertia by ``scale`` in place (centres of mass unchanged)."""
    for i in range(1, model.njoints):
        I = model.inertias[i]
        model.inertias[i] = pin.Inertia(I.mass * scale, I.lever.copy(), I.inertia * scale)


def load_urdf(
    urdf: str,
    system: str | dict | None = None,
    name: str | None = None,
    floating_base: bool | None = None,
    mass_scale: float = 1.0,
    inertia_policy: str | None = None,
) -> RobotModel:
    """Load a robot from a URDF path or XML string plus an optional system YAML (path, text or dict): what
    ``load_robot`` (``model.spec``: bundled names, ``erd:<name>``, task mappings too) calls once it has resolved
    its model to a URDF.

    ``floating_base`` overrides the YAML key of the same name (6 virtual joints world -> root).
    ``mass_scale`` multiplies every link's mass and inertia (part of the model hash when ≠ 1).
    ``inertia_policy`` ('strict' | 'repair') overrides the YAML key: 'repair' projects non-physical URDF
    inertias to the nearest physical ones and logs each change (model.inertia). URDF ``<mimic>`` joints
    become holonomic ``joints`` constraints q_j − m·q_i = o (docs/concepts/model.md).
    Raises URDFError / SystemConfigError (both ValueError) naming what is wrong.
    """
    msg = Bound(*MASS_SCALE_RANGE).refusal("mass_scale", mass_scale)
    if msg is not None:
        raise SystemConfigError(msg)
    if inertia_policy is not None and inertia_policy not in INERTIA_POLICIES:
        raise SystemConfigError(f"inertia_policy: expected one of {list(INERTIA_POLICIES)}, got {inertia_policy!r}")
    if name is not None and (not isinstance(name, str) or not name.strip()):  # (it names plans and logs)
        raise SystemConfigError(f"name: expected a non-empty string, got {name!r}")
    if floating_base is not None and not isinstance(floating_base, (bool, np.bool_)):  # ("no" is truthy)
        raise SystemConfigError(f"floating_base: expected True or False, got {floating_base!r}")
    xml = read_urdf_text(urdf)
    cfg = load_system_config(system)
    if floating_base is not None:
        cfg.floating_base = bool(floating_base)
    try:
        return _build_robot(xml, cfg, inertia_policy or cfg.inertia_policy, name, float(mass_scale))
    except URDFError as e:  # name the file when there is one
        if xml is urdf:
            raise
        raise URDFError(f"{os.fspath(urdf)}: {e}") from None


def _build_robot(xml: str, cfg: SystemConfig, policy: str, name: str | None, mass_scale: float) -> RobotModel:
    parsed = parse_urdf(xml, policy)
    xml = parsed.xml  # with repaired inertias, if any
    if cfg.locked:  # welded where the YAML says, after the URDF's own checks
        xml = lock_joints(xml, cfg.locked, SystemConfigError)
        parsed = parse_urdf(xml, policy, warn=False)  # (warned once above)
    if cfg.floating_base:
        xml = add_floating_base(parsed)
        parsed = parse_urdf(xml, policy, warn=False)
    cfg.constraints = mimic_constraints(parsed, cfg) + list(cfg.constraints)
    model = build_pinocchio_model(parsed)
    check_inertias(parsed, model)
    model.gravity = pin.Motion(np.asarray(cfg.gravity, float), np.zeros(3))
    if mass_scale != 1.0:
        scale_inertias(model, mass_scale)
    r = _resolve(parsed, model, cfg)
    check_mass_structure(parsed, model, r["prescribed"], tuple(cfg.constraints))
    check_constraint_rank(model, [j.name for j in r["joints"]], tuple(cfg.constraints), tuple(cfg.nonholonomic))
    return RobotModel(
        name=name or cfg.name or parsed.name,
        urdf_xml=xml,
        pin_model=model,
        gravity=np.asarray(cfg.gravity, float),
        constraints=tuple(cfg.constraints),
        nonholonomic=tuple(cfg.nonholonomic),
        links=tuple(parsed.links),
        root_link=parsed.root,
        floating_base=cfg.floating_base,
        masses={k: m * mass_scale for k, m in parsed.masses.items()},
        mass_scale=mass_scale,
        **r,
    )
