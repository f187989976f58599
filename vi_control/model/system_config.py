"""The system YAML: what a URDF cannot say, validated key by key.

Schema (every key optional)::

    name: my_robot               # overrides the URDF's robot name
    floating_base: false         # true: 6 virtual joints world -> URDF root (x, y, z, then ZYX angles)
    gravity: [0.0, 0.0, -9.81]
    actuated:                    # default: every non-prescribed, non-floating-base joint, URDF effort limit
      - joint: shoulder
        effort_limit: 5.0        # optional, overrides the URDF <limit effort>
    damping: {shoulder: 0.1}     # viscous joint damping, overrides URDF <dynamics damping>
    prescribed: [string_left]    # kinematic joints: their next value is an input (Johnson2015, §VIII-B)
    locked: {head_pan: 0.3, gripper: 0.0}   # or a list (at 0): welded at that position (joints mimicking them too)
    constraints:                 # holonomic constraints h(q) = 0 (Johnson2015, eq. 28)
      - type: coincident         # point_a on link_a == point_b on link_b ("world" allowed)
        link_a: l3
        point_a: [0, 0, -1]
        link_b: world
        point_b: [1, 0, 0]
        axes: [x, z]             # optional subset of world axes (planar loops need two)
      - {type: distance, link_a: a, point_a: [0,0,0], link_b: b, point_b: [0,0,0], distance: 1.0}
      - {type: plane, link: foot, point: [0,0,0], normal: [0,0,1], offset: 0.0}
      - {type: joints, joints: [phi, phi_front], coefficients: [1, -1], offset: 0.0}   # Σ cᵢ qᵢ = offset
    nonholonomic:                # velocity constraints A(q) q̇ = 0 (Kobilarov2010, §3), integrated by the GNI
      - {type: knife_edge, link: body, point: [-0.5, 0, 0], direction: [0, 1, 0]}  # no slip along direction
      - {type: rolling, link: wheel, radius: 0.05, axis: [0, 1, 0], normal: [0, 0, 1],
         components: [longitudinal, lateral]}  # contact point of a disk at rest on the plane ⊥ normal
    inertia_policy: strict       # 'repair': project non-physical URDF inertias to the nearest physical one

URDF ``<mimic>`` tags become ``joints`` constraints q_j − m·q_i = o automatically (model.robot). Numbers must
lie in the ranges of ``model.limits`` (a 1e300 distance would overflow inside h(q)). The text is read by
``model.yaml_io`` (YAML 1.2 core scalars, no base-60 or yes/no surprises).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import SystemConfigError, unknown_keys
from .limits import MAX_COEFFICIENT, MAX_GRAVITY, MAX_LENGTH, Bound
from .scalars import is_real
from .yaml_io import YAMLFormatError, load_yaml, read_text_file

_TOP_KEYS = {
    "gravity",
    "actuated",
    "damping",
    "prescribed",
    "constraints",
    "nonholonomic",
    "name",
    "floating_base",
    "inertia_policy",
    "locked",
}
INERTIA_POLICIES = ("strict", "repair")
_ROLLING_COMPONENTS = ("longitudinal", "lateral")
_AXES = {"x": 0, "y": 1, "z": 2}


@dataclass(frozen=True)
class Constraint:
    """One holonomic constraint between link points (or a linear relation of joints), in the YAML's vocabulary."""

    type: str  # "coincident" | "distance" | "plane" | "joints"
    link_a: str
    point_a: tuple[float, float, float]
    link_b: str = "world"
    point_b: tuple[float, float, float] = (0.0, 0.0, 0.0)
    axes: tuple[int, ...] = (0, 1, 2)
    distance: float = 0.0
    normal: tuple[float, float, float] = (0.0, 0.0, 1.0)
    offset: float = 0.0
    joints: tuple[str, ...] = ()  # type "joints": Σ coefficients[i]·q[joints[i]] = offset
    coefficients: tuple[float, ...] = ()

    @property
    def size(self) -> int:
        return len(self.axes) if self.type == "coincident" else 1


@dataclass(frozen=True)
class NonholonomicConstraint:
    """Velocity constraints A(q) q̇ = 0 of one contact (Kobilarov2010, §3, the rows μᵃ(q) of eq. 4).

    ``knife_edge``: the velocity of ``point`` (link frame) along the link-fixed ``direction`` vanishes (a skate
    or a wheel that cannot slip sideways; one row). ``rolling``: a disk of ``radius`` about the link-frame
    ``axis`` through ``point`` rolls without slipping on the plane with world ``normal``: the material point at
    the contact has no velocity in that plane, by ``components`` (longitudinal: along the rolling direction
    n × a; lateral: along n × (n × a)); one row each.
    """

    type: str  # "knife_edge" | "rolling"
    link: str
    point: tuple[float, float, float] = (0.0, 0.0, 0.0)
    direction: tuple[float, float, float] = (0.0, 1.0, 0.0)
    radius: float = 0.0
    axis: tuple[float, float, float] = (0.0, 1.0, 0.0)
    normal: tuple[float, float, float] = (0.0, 0.0, 1.0)
    components: tuple[str, ...] = _ROLLING_COMPONENTS

    @property
    def size(self) -> int:
        return len(self.components) if self.type == "rolling" else 1


@dataclass
class SystemConfig:
    gravity: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, -9.81]))
    actuated: dict[str, float | None] | None = None  # joint -> effort limit override (None: URDF)
    damping: dict[str, float] = field(default_factory=dict)
    prescribed: list[str] = field(default_factory=list)
    locked: dict[str, float] = field(default_factory=dict)  # joint -> position it is welded at (model.urdf)
    constraints: list[Constraint] = field(default_factory=list)
    nonholonomic: list[NonholonomicConstraint] = field(default_factory=list)
    floating_base: bool = False
    name: str | None = None
    inertia_policy: str = "strict"


def _finite(v: Any) -> bool:
    """A real number (not bool) that is finite; ints too large for a float are not."""
    if not is_real(v):
        return False
    try:
        return bool(np.isfinite(float(v)))
    except OverflowError:
        return False


# The stated range of every number of a system YAML (docs/reliability.md; vi_control.model.limits), as a table the
# validation reads and test_boundaries_tables.py tries at both ends of each entry. Keys: ``[]`` each entry of
# a list, ``*`` any joint, ``[type=…]`` a constraint of that type.
_LENGTH, _SIGNED_COEF = Bound(-MAX_LENGTH, MAX_LENGTH), Bound(-MAX_COEFFICIENT, MAX_COEFFICIENT)
SYSTEM_BOUNDS: dict[str, Bound] = {
    "gravity[]": Bound(-MAX_GRAVITY, MAX_GRAVITY),
    "actuated[].effort_limit": Bound(0.0, MAX_COEFFICIENT, low_open=True),
    "damping.*": Bound(0.0, MAX_COEFFICIENT),
    "locked.*": _LENGTH,
    "constraints[type=joints].coefficients[]": _SIGNED_COEF,
    "constraints[type=joints].offset": _SIGNED_COEF,
    "constraints[type=plane].normal[]": _LENGTH,
    "constraints[type=plane].point[]": _LENGTH,
    "constraints[type=plane].offset": _LENGTH,
    "constraints[type=distance].point_a[]": _LENGTH,
    "constraints[type=distance].point_b[]": _LENGTH,
    "constraints[type=distance].distance": Bound(0.0, MAX_LENGTH, low_open=True),
    "constraints[type=coincident].point_a[]": _LENGTH,
    "constraints[type=coincident].point_b[]": _LENGTH,
    "nonholonomic[type=knife_edge].point[]": _LENGTH,
    "nonholonomic[type=knife_edge].direction[]": _LENGTH,
    "nonholonomic[type=rolling].point[]": _LENGTH,
    "nonholonomic[type=rolling].radius": Bound(0.0, MAX_LENGTH),
    "nonholonomic[type=rolling].axis[]": _LENGTH,
    "nonholonomic[type=rolling].normal[]": _LENGTH,
}


def _refusal(v: float, key: str, b: Bound) -> str | None:
    """Why ``v`` is outside ``b`` in the words a user reads ("must be positive", "beyond the supported range")."""
    if b.contains(v):
        return None
    if b.low == 0.0 and (v <= 0 if b.low_open else v < 0):
        return f"{key}: must be {'positive' if b.low_open else 'non-negative'} ({b.describe()}), got {v}"
    return f"{key}: {v!r} is beyond the supported range {b} (vi_control.model.limits)"


def _vec(val: Any, key: str, n: int, table: str) -> tuple[float, ...]:
    """``n`` finite numbers, each within ``SYSTEM_BOUNDS[table]``."""
    if not isinstance(val, list | tuple) or len(val) != n:
        raise SystemConfigError(f"{key}: expected a list of {n} numbers, got {val!r}")
    out = []
    for v in val:
        if not _finite(v):
            raise SystemConfigError(f"{key}: expected finite numbers, got {val!r}")
        msg = _refusal(float(v), key, SYSTEM_BOUNDS[table])
        if msg is not None:
            raise SystemConfigError(msg)
        out.append(float(v))
    return tuple(out)


def _num(val: Any, key: str, table: str) -> float:
    """A finite number within ``SYSTEM_BOUNDS[table]``."""
    if not _finite(val):
        raise SystemConfigError(f"{key}: expected a finite number, got {val!r}")
    msg = _refusal(float(val), key, SYSTEM_BOUNDS[table])
    if msg is not None:
        raise SystemConfigError(msg)
    return float(val)


def _str(val: Any, key: str) -> str:
    if val is None:
        raise SystemConfigError(f"{key}: required (a link or joint name)")
    if not isinstance(val, str) or not val:
        raise SystemConfigError(f"{key}: expected a name (string), got {val!r}")
    return val


def _constraint(i: int, c: Any) -> Constraint:
    key = f"constraints[{i}]"
    if not isinstance(c, dict):
        raise SystemConfigError(f"{key}: expected a mapping, got {type(c).__name__}")
    ctype = c.get("type")
    allowed = {
        "coincident": {"type", "link_a", "point_a", "link_b", "point_b", "axes"},
        "distance": {"type", "link_a", "point_a", "link_b", "point_b", "distance"},
        "plane": {"type", "link", "point", "normal", "offset"},
        "joints": {"type", "joints", "coefficients", "offset"},
    }
    if not isinstance(ctype, str) or ctype not in allowed:
        raise SystemConfigError(f"{key}.type: must be one of {sorted(allowed)}, got {ctype!r}")
    extra = set(c) - allowed[ctype]
    if extra:
        raise SystemConfigError(f"{key}: {unknown_keys(extra, allowed[ctype])} for a {ctype} constraint")
    if ctype == "joints":
        names = c.get("joints")
        if not isinstance(names, list) or not names or len(set(map(str, names))) != len(names):
            raise SystemConfigError(f"{key}.joints: expected a list of distinct joint names, got {names!r}")
        names = tuple(_str(n, f"{key}.joints[{j}]") for j, n in enumerate(names))
        if "coefficients" not in c:
            raise SystemConfigError(f"{key}.coefficients: required for a joints constraint")
        coef = _vec(c["coefficients"], f"{key}.coefficients", len(names), "constraints[type=joints].coefficients[]")
        if not any(coef):
            raise SystemConfigError(f"{key}.coefficients: must not all be zero")
        return Constraint(
            type="joints",
            link_a="world",
            point_a=(0.0, 0.0, 0.0),
            joints=names,
            coefficients=coef,
            offset=_num(c.get("offset", 0.0), f"{key}.offset", "constraints[type=joints].offset"),
        )
    if ctype == "plane":
        normal = np.array(_vec(c.get("normal", [0, 0, 1]), f"{key}.normal", 3, "constraints[type=plane].normal[]"))
        if np.linalg.norm(normal) < 1e-12:
            raise SystemConfigError(f"{key}.normal: must be non-zero")
        return Constraint(
            type="plane",
            link_a=_str(c.get("link"), f"{key}.link"),
            point_a=_vec(c.get("point", [0, 0, 0]), f"{key}.point", 3, "constraints[type=plane].point[]"),
            normal=tuple(normal / np.linalg.norm(normal)),
            offset=_num(c.get("offset", 0.0), f"{key}.offset", "constraints[type=plane].offset"),
        )
    common = dict(
        type=ctype,
        link_a=_str(c.get("link_a"), f"{key}.link_a"),
        point_a=_vec(c.get("point_a", [0, 0, 0]), f"{key}.point_a", 3, f"constraints[type={ctype}].point_a[]"),
        link_b=_str(c.get("link_b", "world"), f"{key}.link_b"),
        point_b=_vec(c.get("point_b", [0, 0, 0]), f"{key}.point_b", 3, f"constraints[type={ctype}].point_b[]"),
    )
    if ctype == "distance":
        if "distance" not in c:
            raise SystemConfigError(f"{key}.distance: required for a distance constraint")
        distance = _num(c["distance"], f"{key}.distance", "constraints[type=distance].distance")
        return Constraint(**common, distance=distance)
    axes = c.get("axes", ["x", "y", "z"])
    if (
        not isinstance(axes, list)
        or not axes
        or not all(isinstance(a, str) and a in _AXES for a in axes)
        or len(set(axes)) != len(axes)
    ):
        raise SystemConfigError(f"{key}.axes: expected distinct names from [x, y, z], got {axes!r}")
    return Constraint(**common, axes=tuple(_AXES[a] for a in axes))


def _unit(val: Any, key: str, table: str) -> tuple[float, float, float]:
    v = np.array(_vec(val, key, 3, table))
    n = float(np.linalg.norm(v))
    if n < 1e-12:
        raise SystemConfigError(f"{key}: must be non-zero")
    return tuple((v / n).tolist())


def _nonholonomic(i: int, c: Any) -> NonholonomicConstraint:
    key = f"nonholonomic[{i}]"
    if not isinstance(c, dict):
        raise SystemConfigError(f"{key}: expected a mapping, got {type(c).__name__}")
    ctype = c.get("type")
    allowed = {
        "knife_edge": {"type", "link", "point", "direction"},
        "rolling": {"type", "link", "point", "radius", "axis", "normal", "components"},
    }
    if not isinstance(ctype, str) or ctype not in allowed:
        raise SystemConfigError(f"{key}.type: must be one of {sorted(allowed)}, got {ctype!r}")
    extra = set(c) - allowed[ctype]
    if extra:
        raise SystemConfigError(f"{key}: {unknown_keys(extra, allowed[ctype])} for a {ctype} constraint")
    common = dict(
        type=ctype,
        link=_str(c.get("link"), f"{key}.link"),
        point=_vec(c.get("point", [0, 0, 0]), f"{key}.point", 3, f"nonholonomic[type={ctype}].point[]"),
    )
    if ctype == "knife_edge":
        return NonholonomicConstraint(
            **common,
            direction=_unit(
                c.get("direction", [0, 1, 0]), f"{key}.direction", "nonholonomic[type=knife_edge].direction[]"
            ),
        )
    if "radius" not in c:
        raise SystemConfigError(f"{key}.radius: required for a rolling constraint")
    comps = c.get("components", list(_ROLLING_COMPONENTS))
    if (
        not isinstance(comps, list)
        or not comps
        or not all(isinstance(x, str) and x in _ROLLING_COMPONENTS for x in comps)
        or len(set(comps)) != len(comps)
    ):
        raise SystemConfigError(
            f"{key}.components: expected distinct names from {list(_ROLLING_COMPONENTS)}, got {comps!r}"
        )
    axis = _unit(c.get("axis", [0, 1, 0]), f"{key}.axis", "nonholonomic[type=rolling].axis[]")
    normal = _unit(c.get("normal", [0, 0, 1]), f"{key}.normal", "nonholonomic[type=rolling].normal[]")
    radius = _num(c["radius"], f"{key}.radius", "nonholonomic[type=rolling].radius")
    return NonholonomicConstraint(
        **common,
        radius=radius,
        axis=axis,
        normal=normal,
        components=tuple(x for x in _ROLLING_COMPONENTS if x in comps),
    )


def parse_system_config(data: Any) -> SystemConfig:
    """Validate an already-loaded YAML mapping (None means all defaults)."""
    if data is None:
        return SystemConfig()
    if not isinstance(data, dict):
        raise SystemConfigError(f"system YAML must be a mapping at top level, got {type(data).__name__}")
    unknown = set(data) - _TOP_KEYS
    if unknown:
        raise SystemConfigError(f"{unknown_keys(unknown, _TOP_KEYS)}; allowed: {sorted(_TOP_KEYS)}")
    cfg = SystemConfig()
    if "floating_base" in data:
        if not isinstance(data["floating_base"], bool):
            raise SystemConfigError(f"floating_base: expected true or false, got {data['floating_base']!r}")
        cfg.floating_base = data["floating_base"]
    if "name" in data:
        cfg.name = _str(data["name"], "name")
    if "inertia_policy" in data:
        if data["inertia_policy"] not in INERTIA_POLICIES:
            raise SystemConfigError(
                f"inertia_policy: expected one of {list(INERTIA_POLICIES)}, got {data['inertia_policy']!r}"
            )
        cfg.inertia_policy = data["inertia_policy"]
    if "gravity" in data:
        cfg.gravity = np.array(_vec(data["gravity"], "gravity", 3, "gravity[]"))
    if "actuated" in data:
        act = data["actuated"]
        if not isinstance(act, list):
            raise SystemConfigError(f"actuated: expected a list, got {type(act).__name__}")
        cfg.actuated = {}
        for i, a in enumerate(act):
            jn = a if isinstance(a, str) else a.get("joint") if isinstance(a, dict) else None
            if isinstance(jn, str) and jn in cfg.actuated:
                raise SystemConfigError(f"actuated[{i}]: joint {jn!r} is listed twice")
            if isinstance(a, str):
                cfg.actuated[a] = None
            elif isinstance(a, dict) and set(a) <= {"joint", "effort_limit"}:
                name = _str(a.get("joint"), f"actuated[{i}].joint")
                lim = a.get("effort_limit")
                cfg.actuated[name] = (
                    None if lim is None else _num(lim, f"actuated[{i}].effort_limit", "actuated[].effort_limit")
                )
            else:
                raise SystemConfigError(f"actuated[{i}]: expected a joint name or {{joint, effort_limit}}, got {a!r}")
    if "damping" in data:
        d = data["damping"]
        if not isinstance(d, dict):
            raise SystemConfigError(f"damping: expected a mapping joint -> value, got {type(d).__name__}")
        cfg.damping = {_str(k, "damping key"): _num(v, f"damping.{k}", "damping.*") for k, v in d.items()}
    if "prescribed" in data:
        p = data["prescribed"]
        if not isinstance(p, list):
            raise SystemConfigError(f"prescribed: expected a list of joint names, got {type(p).__name__}")
        cfg.prescribed = [_str(v, f"prescribed[{i}]") for i, v in enumerate(p)]
    if "locked" in data:
        lk = data["locked"]
        if isinstance(lk, list):
            cfg.locked = {_str(v, f"locked[{i}]"): 0.0 for i, v in enumerate(lk)}
            if len(cfg.locked) < len(lk):
                raise SystemConfigError("locked: a joint is listed twice")
        elif isinstance(lk, dict):
            cfg.locked = {_str(k, "locked key"): _num(v, f"locked.{k}", "locked.*") for k, v in lk.items()}
        else:
            raise SystemConfigError(
                f"locked: expected a list of joint names or a mapping joint -> position, got {type(lk).__name__}"
            )
    if "constraints" in data:
        cs = data["constraints"]
        if not isinstance(cs, list):
            raise SystemConfigError(f"constraints: expected a list, got {type(cs).__name__}")
        cfg.constraints = [_constraint(i, c) for i, c in enumerate(cs)]
    if "nonholonomic" in data:
        nh = data["nonholonomic"]
        if not isinstance(nh, list):
            raise SystemConfigError(f"nonholonomic: expected a list, got {type(nh).__name__}")
        cfg.nonholonomic = [_nonholonomic(i, c) for i, c in enumerate(nh)]
    return cfg


def load_system_config(source: str | os.PathLike | dict | None) -> SystemConfig:
    """From a YAML file path, a YAML string, an already-parsed mapping, or None."""
    if source is None or isinstance(source, dict):
        return parse_system_config(source)
    is_path = isinstance(source, os.PathLike)
    if is_path:
        source = os.fspath(source)
    if not isinstance(source, str):
        raise SystemConfigError(f"system config must be a path, YAML text or a mapping, got {type(source).__name__}")
    text = source
    if is_path or ("\n" not in source and (source.endswith((".yaml", ".yml")) or os.path.sep in source)):
        text = read_text_file(source, "system YAML", SystemConfigError)
    where = f"{source}: " if text is not source else ""
    try:
        data = load_yaml(text)
    except YAMLFormatError as e:
        raise SystemConfigError(f"{where}system YAML is not valid YAML: {e}") from None
    try:
        return parse_system_config(data)
    except SystemConfigError as e:
        raise SystemConfigError(f"{where}{e}") from None
