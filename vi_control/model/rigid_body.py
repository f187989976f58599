"""A single rigid body on SO(3) or SE(3) from a small validated YAML (Jimenez2013, §5.1, §6.1).

What the Lie-group integrator and the DMOC planner need, and nothing else: the inertia tensor 𝕀 (a cylinder,
a diagonal or a full matrix; SE(3) adds the mass), the actuators as columns of the input matrix B of
f(ξ, u) = Hξ + Bu + w(g) (thrusters: body force direction d at body point r → (r × d, d); torquers: axis),
the drag H (Jimenez2013, §6.1: a(W) = Hτ⁻¹(W), H negative definite; given here as the positive damping
−H), and gravity and buoyancy (world forces at the centre of mass and at the centre of buoyancy, giving the
configuration-dependent wrench w(g) of §5.2). Schema (every key is checked; errors name the key)::

    name: uuv
    group: SE3                       # SO3 | SE3
    mass: 3.0                        # kg (SE3)
    inertia: {cylinder: {radius: 0.05, length: 0.4, axis: x}}   # or [Ixx, Iyy, Izz] or a 3×3 matrix [kg m²]
    thruster_layout: {type: seed002_uuv, c: 0.06, d: 0.06, limit: 5.0}   # §6.1's five thrusters, or:
    actuators:                       # [{name, direction, position (thrusters), type: force|torque, limit}]
      - {name: tx, type: torque, direction: [1, 0, 0], limit: 1.0}
    drag: [0.02, 0.05, 0.05, 1.0, 3.0, 3.0]   # −H: diagonal (n) or n×n matrix, positive semidefinite
    gravity: [0, 0, -9.81]           # m/s², world frame (default 0)
    buoyancy: {force: 29.43, center: [0, 0, 0]}   # N up (against gravity), centre in the body frame
    planning: {...}                  # free-form, read by vi_control.planning.dmoc (horizon, duration, maneuvers)

``load_rigid_body(source, mass_scale=, drag_scale=)`` accepts a path, a bundled name (config/<name>.yaml) or a
mapping. The object also answers what the nodes ask of a robot model (name, hash, actuated names, effort limits).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass, field

import numpy as np

from .bundled import share_dir
from .errors import ModelError, unknown_keys
from .limits import MASS_SCALE_RANGE, MAX_COEFFICIENT, MAX_FORCE, MAX_GRAVITY, MAX_INERTIA, MAX_LENGTH, MAX_MASS, Bound
from .scalars import is_real
from .yaml_io import YAMLFormatError, load_yaml, read_text_file

__all__ = [
    "RigidBodyConfigError",
    "Actuator",
    "RigidBodyModel",
    "load_rigid_body",
    "is_rigid_body_source",
    "seed002_thrusters",
    "cylinder_inertia",
]

_TOP_KEYS = {
    "name",
    "group",
    "mass",
    "inertia",
    "actuators",
    "thruster_layout",
    "drag",
    "gravity",
    "buoyancy",
    "planning",
}
_ACTUATOR_KEYS = {"name", "type", "direction", "position", "limit"}
_DIMS = {"SO3": 3, "SE3": 6}

# The stated range of every number of a rigid-body YAML (key → Bound; ``[]``: each entry of a list), what the
# validation below reads and test/robustness/test_boundaries_tables.py tries at both ends: the ranges of URDFs and
# system YAML
# (model.limits). Beyond them the arithmetic gives up, not the physics: a 1e300 m cylinder radius overflowed (r²)
# with an OverflowError, and gravity of 1e10 m/s² or an actuator at 1e300 m were accepted. The smallest mass and
# lengths keep m·r² a normal double (a mass of 5e-324 kg gave a cylinder of zero inertia, accepted). ``inertia[]``
# and ``drag[]`` are the diagonal forms; a full matrix's entries are bounded in magnitude by the same upper end.
_SIGNED = {"gravity[]": MAX_GRAVITY, "actuators[].position[]": MAX_LENGTH, "buoyancy.center[]": MAX_LENGTH}
MIN_LENGTH = 1e-6  # m: a cylinder's radius or length, a thruster arm
RIGID_BODY_BOUNDS: dict[str, Bound] = {
    "mass": Bound(1e-12, MAX_MASS),
    "inertia[]": Bound(0.0, MAX_INERTIA, low_open=True),
    "drag[]": Bound(0.0, MAX_COEFFICIENT),
    "inertia.cylinder.radius": Bound(MIN_LENGTH, MAX_LENGTH),
    "inertia.cylinder.length": Bound(MIN_LENGTH, MAX_LENGTH),
    "thruster_layout.c": Bound(MIN_LENGTH, MAX_LENGTH),
    "thruster_layout.d": Bound(MIN_LENGTH, MAX_LENGTH),
    "thruster_layout.limit": Bound(0.0, MAX_COEFFICIENT, low_open=True),  # (or inf: unlimited)
    "actuators[].limit": Bound(0.0, MAX_COEFFICIENT, low_open=True),  # (or inf)
    "buoyancy.force": Bound(0.0, MAX_FORCE),
    **{k: Bound(-b, b) for k, b in _SIGNED.items()},
}
# load_rigid_body's arguments
SCALE_BOUNDS: dict[str, Bound] = {k: Bound(*MASS_SCALE_RANGE) for k in ("mass_scale", "drag_scale", "buoyancy_scale")}


class RigidBodyConfigError(ModelError):
    """A rigid-body YAML is malformed or physically impossible; the message names the key."""


@dataclass(frozen=True)
class Actuator:
    """One input: a force along ``direction`` applied at ``position`` (body frame), or a torque about it."""

    name: str
    kind: str  # 'force' | 'torque'
    direction: tuple[float, float, float]
    position: tuple[float, float, float] = (0.0, 0.0, 0.0)
    limit: float = math.inf

    def column(self, dim: int) -> np.ndarray:
        """This input's column of B: (r × d, d) for a force on SE(3), (d, 0) / d for a torque."""
        d, r = np.array(self.direction), np.array(self.position)
        if self.kind == "torque":
            return d if dim == 3 else np.concatenate([d, np.zeros(3)])
        return np.concatenate([np.cross(r, d), d])


def cylinder_inertia(mass: float, radius: float, length: float, axis: str = "x") -> np.ndarray:
    """Solid cylinder about its centre: m r²/2 about its axis, m(3r² + L²)/12 about the other two."""
    i = "xyz".index(axis)
    diag = np.full(3, mass * (3 * radius**2 + length**2) / 12.0)
    diag[i] = 0.5 * mass * radius**2
    return np.diag(diag)


def seed002_thrusters(c: float, d: float, limit: float = math.inf) -> tuple[Actuator, ...]:
    """The five thrusters of Jimenez2013, §6.1 as geometry, reproducing b(W, u) exactly:

    b₁ = d(u₅ − u₄), b₂ = c((u₁ + u₂)/2 − u₃), b₃ = c sin(π/3)(u₂ − u₁), b₄ = u₁ + u₂ + u₃, b₅ = u₄ + u₅, b₆ = 0.
    Thrusters 1–3 push along body x from a ring of radius c (at 120°); 4 and 5 push along body y at z = ±d.
    """
    s = math.sin(math.pi / 3)
    ex, ey = (1.0, 0.0, 0.0), (0.0, 1.0, 0.0)
    return (
        Actuator("thruster_1", "force", ex, (0.0, c * s, 0.5 * c), limit),
        Actuator("thruster_2", "force", ex, (0.0, -c * s, 0.5 * c), limit),
        Actuator("thruster_3", "force", ex, (0.0, 0.0, -c), limit),
        Actuator("thruster_4", "force", ey, (0.0, 0.0, d), limit),
        Actuator("thruster_5", "force", ey, (0.0, 0.0, -d), limit),
    )


@dataclass(frozen=True)
class RigidBodyModel:
    """Immutable description of one rigid body (the ``robot`` of a LieGroupVI)."""

    name: str
    group: str  # 'SO3' | 'SE3'
    mass: float
    inertia: np.ndarray  # (3, 3) rotational inertia about the centre of mass, body frame
    actuators: tuple[Actuator, ...]
    damping: np.ndarray  # (n, n) = −H, positive semidefinite
    gravity: np.ndarray = field(default_factory=lambda: np.zeros(3))
    buoyancy_force: float = 0.0
    buoyancy_center: np.ndarray = field(default_factory=lambda: np.zeros(3))
    planning: dict = field(default_factory=dict)
    mass_scale: float = 1.0
    drag_scale: float = 1.0
    buoyancy_scale: float = 1.0
    source: str = ""  # canonical text of the description (hashed)

    # ---- dynamics --------------------------------------------------------------------------------
    @property
    def dim(self) -> int:
        return _DIMS[self.group]

    @property
    def nq(self) -> int:
        return 9 if self.group == "SO3" else 12

    @property
    def spatial_inertia(self) -> np.ndarray:
        """𝕀: 𝔤 → 𝔤* (Jimenez2013, §5.1): J for SO(3), blockdiag(J, m I₃) for SE(3) (origin at the centre of mass)."""
        if self.group == "SO3":
            return np.array(self.inertia, float)
        out = np.zeros((6, 6))
        out[:3, :3], out[3:, 3:] = self.inertia, self.mass * np.eye(3)
        return out

    @property
    def unit_momentum(self) -> float:
        """The body's momentum at unit velocity: the largest diagonal entry of 𝕀 (its mass, or a principal moment)
        [kg or kg·m²]; the scale of the stopping rules (``NewtonSettings.for_model``, DMOC's unit body)."""
        return float(np.max(np.diag(self.spatial_inertia)))

    @property
    def input_matrix(self) -> np.ndarray:
        """B (n, m): the body wrench of input u is B u (Jimenez2013, §6.1's b(W, u))."""
        return (
            np.column_stack([a.column(self.dim) for a in self.actuators]) if self.actuators else np.zeros((self.dim, 0))
        )

    @property
    def drag_matrix(self) -> np.ndarray:
        """H = −damping: the drag wrench is H ξ (Jimenez2013, §6.1, a(W) = Hτ⁻¹(W) per unit time)."""
        return -np.asarray(self.damping, float)

    @property
    def weight(self) -> np.ndarray:
        """World force m·g at the centre of mass."""
        return self.mass * np.asarray(self.gravity, float)

    @property
    def buoyancy(self) -> np.ndarray:
        """World buoyancy force: ``buoyancy_force`` against gravity (zero without gravity)."""
        g = np.asarray(self.gravity, float)
        n = float(np.linalg.norm(g))
        return np.zeros(3) if n == 0.0 else -self.buoyancy_force * g / n

    @property
    def has_restoring_wrench(self) -> bool:
        """True if gravity and buoyancy leave a configuration-dependent wrench w(g) ≠ 0 somewhere."""
        if self.group == "SO3":
            return False
        net = self.weight + self.buoyancy
        # a trim by scaled numbers is exact to round-off, relative to the weight (a floor of 1e-12 N took a 3 kg
        # vehicle 1 % off trim, masses × 2⁻⁴⁰, for trimmed)
        scale = 1e-12 * float(np.abs(self.weight).max())
        return bool(np.abs(net).max() > scale or (np.any(self.buoyancy != 0.0) and np.any(self.buoyancy_center != 0.0)))

    # ---- what nodes and plans ask of a model ------------------------------------------------------------
    @property
    def actuated(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.actuators)

    @property
    def effort_limits(self) -> np.ndarray:
        return np.array([a.limit for a in self.actuators], float)

    @property
    def joint_names(self) -> list[str]:
        """Labels of the stored configuration coordinates (rotation entries row by row, then position)."""
        names = [f"R{i}{j}" for i in range(3) for j in range(3)]
        return names + (["x", "y", "z"] if self.group == "SE3" else [])

    prescribed: tuple = ()
    constraints: tuple = ()

    @property
    def continuous_mask(self) -> np.ndarray:
        return np.zeros(self.nq, bool)

    @property
    def total_mass(self) -> float:
        return float(self.mass)

    @property
    def hash(self) -> str:
        """Content hash of everything that defines the dynamics (plans carry it; nodes compare it)."""
        h = hashlib.sha256(self.source.encode())
        h.update(np.array([self.mass_scale, self.drag_scale, self.buoyancy_scale], float).tobytes())
        return h.hexdigest()[:16]


# ---- loading and validation ------------------------------------------------------------------------------
def _vec(v, key: str, n: int | None = None, table: str | None = None) -> np.ndarray:
    """A list of numbers (or one); ``n`` entries if given, each within ``RIGID_BODY_BOUNDS[table]``."""
    if is_real(v):
        v = [v]
    if not isinstance(v, (list, tuple)) or not all(map(is_real, v)):
        raise RigidBodyConfigError(f"{key}: expected a list of numbers, got {v!r}")
    if not all(map(Bound(None, None).contains, v)):  # (NaN, inf, an int beyond float range: OverflowError)
        raise RigidBodyConfigError(f"{key}: entries must be finite, got {v!r}")
    a = np.array(v, float)
    if n is not None and a.size != n:
        raise RigidBodyConfigError(f"{key}: expected {n} numbers, got {a.size}")
    if not np.all(np.isfinite(a)):
        raise RigidBodyConfigError(f"{key}: entries must be finite, got {v!r}")
    if table is not None:
        b = RIGID_BODY_BOUNDS[table]
        bad = [i for i, x in enumerate(a.tolist()) if not b.contains(x)]
        if bad:
            raise RigidBodyConfigError(
                f"{key}[{bad[0]}]: must be {b.describe()} (the supported range), got {a[bad[0]]:g}"
            )
    return a


def _positive(v, key: str, allow_inf: bool = False, table: str | None = None) -> float:
    """A positive number within ``RIGID_BODY_BOUNDS[table or key]`` (``allow_inf``: or inf, 'unlimited')."""
    if isinstance(v, str) and allow_inf and v.strip().lower() in ("inf", ".inf"):
        return math.inf
    if allow_inf and is_real(v) and v == math.inf:
        return math.inf
    b = RIGID_BODY_BOUNDS[table or key]
    if not is_real(v) or not (v > 0) or not Bound(None, None).contains(v):  # (NaN, ±inf, ints beyond float range)
        raise RigidBodyConfigError(f"{key}: must be a positive {'number' if allow_inf else 'finite number'}, got {v!r}")
    if not b.contains(float(v)):
        raise RigidBodyConfigError(
            f"{key}: must be {b.describe()}{' or inf' if allow_inf else ''} (the supported range), got {v!r}"
        )
    return float(v)


def _matrix(v, key: str, n: int) -> np.ndarray:
    """A symmetric n×n matrix, or its diagonal; entries within ±(the table's upper end) — the lower end, a
    positive (semi)definite matrix, is the caller's check."""
    high = RIGID_BODY_BOUNDS[f"{key}[]"].high
    if isinstance(v, (list, tuple)) and v and all(isinstance(r, (list, tuple)) for r in v):
        rows = [_vec(r, f"{key}[{i}]", n) for i, r in enumerate(v)]
        if max(np.abs(r).max() for r in rows) > high:
            raise RigidBodyConfigError(f"{key}: entries must be within ±{high:g} (the supported range)")
        if len(rows) != n:
            raise RigidBodyConfigError(f"{key}: expected a {n}×{n} matrix, got {len(rows)} rows")
        M = np.array(rows)
        if np.abs(M - M.T).max() > 1e-12 * np.abs(M).max():  # (round-off relative to M, whatever its unit)
            raise RigidBodyConfigError(f"{key}: matrix must be symmetric")
        return 0.5 * (M + M.T)
    d = _vec(v, key, n)
    if np.abs(d).max() > high:
        raise RigidBodyConfigError(f"{key}: entries must be within ±{high:g} (the supported range), got {v!r}")
    return np.diag(d)


def _inertia(v, mass: float) -> np.ndarray:
    if isinstance(v, dict):
        unknown = set(v) - {"cylinder"}
        if unknown or "cylinder" not in v:
            raise RigidBodyConfigError(
                f"inertia: expected {{cylinder: {{radius, length, axis}}}}, got keys {sorted(v)}"
            )
        cyl = v["cylinder"]
        if not isinstance(cyl, dict) or set(cyl) - {"radius", "length", "axis"}:
            raise RigidBodyConfigError(f"inertia.cylinder: expected keys radius, length, axis; got {cyl!r}")
        axis = cyl.get("axis", "x")
        if axis not in ("x", "y", "z"):
            raise RigidBodyConfigError(f"inertia.cylinder.axis: expected x, y or z, got {axis!r}")
        J = cylinder_inertia(
            mass,
            _positive(cyl.get("radius"), "inertia.cylinder.radius"),
            _positive(cyl.get("length"), "inertia.cylinder.length"),
            axis,
        )
        if not np.diag(J).min() > 0 or J.max() > MAX_INERTIA:
            raise RigidBodyConfigError(
                f"inertia.cylinder: principal moments {np.diag(J).tolist()} kg m² (mass "
                f"{mass:g} kg) must be positive and at most {MAX_INERTIA:g}"
            )
        return J
    J = _matrix(v, "inertia", 3)
    ev = np.linalg.eigvalsh(J)
    if not ev.min() > 0:
        raise RigidBodyConfigError(
            f"inertia: not positive definite (eigenvalues {np.round(ev, 12).tolist()}): "
            "a rigid body's inertia tensor must have positive principal moments"
        )
    a, b, c = np.sort(ev)
    if a + b < c * (1 - 1e-9):
        raise RigidBodyConfigError(
            f"inertia: principal moments {np.round(ev, 12).tolist()} violate the triangle "
            "inequality I₁ + I₂ ≥ I₃: no mass distribution has them"
        )
    return J


def _actuators(cfg: dict, group: str) -> tuple[Actuator, ...]:
    if "thruster_layout" in cfg and "actuators" in cfg:
        raise RigidBodyConfigError("give actuators or thruster_layout, not both")
    if "thruster_layout" in cfg:
        lay = cfg["thruster_layout"]
        if group != "SE3":
            raise RigidBodyConfigError("thruster_layout: thrusters need group SE3")
        if not isinstance(lay, dict) or lay.get("type") != "seed002_uuv" or set(lay) - {"type", "c", "d", "limit"}:
            raise RigidBodyConfigError(f"thruster_layout: expected {{type: seed002_uuv, c, d, limit}}, got {lay!r}")
        return seed002_thrusters(
            _positive(lay.get("c"), "thruster_layout.c"),
            _positive(lay.get("d"), "thruster_layout.d"),
            _positive(lay.get("limit", math.inf), "thruster_layout.limit", allow_inf=True),
        )
    acts = cfg.get("actuators", [])
    if not isinstance(acts, list):
        raise RigidBodyConfigError(f"actuators: expected a list, got {acts!r}")
    out, names = [], set()
    for i, a in enumerate(acts):
        key = f"actuators[{i}]"
        if not isinstance(a, dict):
            raise RigidBodyConfigError(f"{key}: expected a mapping, got {a!r}")
        unknown = set(a) - _ACTUATOR_KEYS
        if unknown:
            raise RigidBodyConfigError(f"{key}: {unknown_keys(unknown, _ACTUATOR_KEYS)}")
        name = a.get("name")
        if not isinstance(name, str) or not name or name in names:
            raise RigidBodyConfigError(f"{key}.name: expected a unique non-empty string, got {name!r}")
        names.add(name)
        kind = a.get("type", "force" if group == "SE3" else "torque")
        if kind not in ("force", "torque") or (group == "SO3" and kind == "force"):
            raise RigidBodyConfigError(
                f"{key}.type: expected {'torque' if group == 'SO3' else 'force or torque'}, got {kind!r}"
            )
        d = _vec(a.get("direction"), f"{key}.direction", 3)
        nd = float(np.linalg.norm(d))
        if abs(nd - 1.0) > 1e-9:
            raise RigidBodyConfigError(f"{key}.direction: must be a unit vector (norm {nd:.6g})")
        r = _vec(a.get("position", [0.0, 0.0, 0.0]), f"{key}.position", 3, "actuators[].position[]")
        lim = _positive(a.get("limit", math.inf), f"{key}.limit", allow_inf=True, table="actuators[].limit")
        out.append(Actuator(name, kind, tuple(d), tuple(r), lim))
    return tuple(out)


def _parse(cfg: dict, mass_scale: float, drag_scale: float, buoyancy_scale: float | None) -> RigidBodyModel:
    if not isinstance(cfg, dict):
        raise RigidBodyConfigError(f"rigid body: expected a mapping, got {type(cfg).__name__}")
    unknown = set(cfg) - _TOP_KEYS
    if unknown:
        raise RigidBodyConfigError(f"{unknown_keys(unknown, _TOP_KEYS)}; allowed: {sorted(_TOP_KEYS)}")
    group = cfg.get("group")
    if not isinstance(group, str) or group not in _DIMS:
        raise RigidBodyConfigError(f"group: expected one of {sorted(_DIMS)}, got {group!r}")
    n = _DIMS[group]
    mass = _positive(cfg.get("mass", 1.0), "mass") if group == "SE3" or "mass" in cfg else 1.0
    if "inertia" not in cfg:
        raise RigidBodyConfigError("inertia: missing (a cylinder, a diagonal [Ixx, Iyy, Izz] or a 3×3 matrix)")
    J = _inertia(cfg["inertia"], mass)
    acts = _actuators(cfg, group)
    B = np.column_stack([a.column(n) for a in acts]) if acts else np.zeros((n, 0))
    if acts and np.linalg.matrix_rank(B) < len(acts):
        raise RigidBodyConfigError(
            f"actuators: the {len(acts)} input directions are linearly dependent "
            f"(rank {np.linalg.matrix_rank(B)}); each input must act independently"
        )
    D = _matrix(cfg.get("drag", [0.0] * n), "drag", n)
    if np.linalg.eigvalsh(D).min() < -1e-12 * np.abs(D).max():  # (relative: −1e-13 of a drag of 1e-13 is no round-off)
        raise RigidBodyConfigError(
            "drag: the damping −H must be positive semidefinite (Jimenez2013, §6.1: H negative "
            "definite); negative entries would add energy"
        )
    grav = _vec(cfg.get("gravity", [0.0, 0.0, 0.0]), "gravity", 3, "gravity[]")
    buoy = cfg.get("buoyancy", {})
    if not isinstance(buoy, dict) or set(buoy) - {"force", "center"}:
        raise RigidBodyConfigError(f"buoyancy: expected {{force, center}}, got {buoy!r}")
    bf = buoy.get("force", 0.0)
    msg = RIGID_BODY_BOUNDS["buoyancy.force"].refusal("buoyancy.force", bf)
    if msg is not None:
        raise RigidBodyConfigError(msg)
    bc = _vec(buoy.get("center", [0.0, 0.0, 0.0]), "buoyancy.center", 3, "buoyancy.center[]")
    if group == "SO3" and (np.any(grav != 0) or bf):
        raise RigidBodyConfigError(
            "gravity/buoyancy: an SO(3) body rotates about its centre of mass and feels no "
            "gravity torque; use group SE3"
        )
    planning = cfg.get("planning", {})
    if not isinstance(planning, dict):
        raise RigidBodyConfigError(f"planning: expected a mapping, got {planning!r}")
    name = cfg.get("name", "rigid_body")
    if not isinstance(name, str) or not name:
        raise RigidBodyConfigError(f"name: expected a non-empty string, got {name!r}")
    buoyancy_scale = mass_scale if buoyancy_scale is None else buoyancy_scale
    for key, s in (("mass_scale", mass_scale), ("drag_scale", drag_scale), ("buoyancy_scale", buoyancy_scale)):
        if not is_real(s) or not (math.isfinite(s) and s > 0):
            raise RigidBodyConfigError(f"{key}: must be a positive finite number, got {s!r}")
        msg = SCALE_BOUNDS[key].refusal(key, s)
        if msg is not None:  # (1e-300 overflowed in the planner's regularization, as for URDF models)
            raise RigidBodyConfigError(msg)
    source = json.dumps(cfg, sort_keys=True, default=str)
    return RigidBodyModel(
        name=name,
        group=group,
        mass=mass * mass_scale,
        inertia=J * mass_scale,
        actuators=acts,
        damping=D * drag_scale,
        gravity=grav,
        buoyancy_force=float(bf) * buoyancy_scale,
        buoyancy_center=bc,
        planning=planning,
        mass_scale=float(mass_scale),
        drag_scale=float(drag_scale),
        buoyancy_scale=float(buoyancy_scale),
        source=source,
    )


def is_rigid_body_source(source) -> bool:
    """True for a mapping, or a path/bundled name whose YAML has a top-level ``group`` key."""
    if isinstance(source, dict):
        return "group" in source
    try:
        cfg = load_yaml(read_text_file(_resolve(source), "rigid body", RigidBodyConfigError))
    except (YAMLFormatError, RigidBodyConfigError):
        return False
    return isinstance(cfg, dict) and "group" in cfg


def _resolve(source: str) -> str:
    if os.path.isfile(source):
        return source
    cand = share_dir() / "config" / f"{source}.yaml"
    if cand.is_file():
        return str(cand)
    raise RigidBodyConfigError(f"rigid body: no file {source!r} and no bundled config/{source}.yaml")


def load_rigid_body(
    source: str | dict, mass_scale: float = 1.0, drag_scale: float = 1.0, buoyancy_scale: float | None = None
) -> RigidBodyModel:
    """A RigidBodyModel from a YAML path, a bundled name (config/<name>.yaml) or a mapping.

    Model mismatch for robustness tests: ``mass_scale`` multiplies mass and inertia, ``drag_scale`` the drag,
    ``buoyancy_scale`` the buoyancy force (default: ``mass_scale``, i.e. a heavier vehicle ballasted to the same
    trim, as every underwater vehicle is; give 1.0 for a vehicle that is simply heavy in water).
    Raises RigidBodyConfigError naming the key for anything invalid.
    """
    if isinstance(source, dict):
        return _parse(source, mass_scale, drag_scale, buoyancy_scale)
    if not isinstance(source, str) or not source.strip():
        raise RigidBodyConfigError(f"rigid body: expected a path, a bundled name or a mapping, got {source!r}")
    path = _resolve(source)
    try:
        cfg = load_yaml(read_text_file(path, "rigid body", RigidBodyConfigError))
    except YAMLFormatError as e:
        raise RigidBodyConfigError(f"{path}: not valid YAML ({e})") from None
    try:
        return _parse(cfg, mass_scale, drag_scale, buoyancy_scale)
    except RigidBodyConfigError as e:
        raise RigidBodyConfigError(f"{path}: {e}") from None
