"""The marionette of Johnson2015, §VIII-B: a jointed body hanging from six strings.

22 dynamic configuration variables, 18 kinematic (prescribed) ones and 6 holonomic constraints
=> nq = 40, 80 states x = (q, p), 18 inputs (the next string-end positions ρ_{k+1}, no torques).

Dynamic part (22): the torso on a virtual floating base (prismatic x, y, z then revolute yaw z,
pitch y, roll x — Euler angles, singular only at pitch = ±π/2, far from hanging poses), a head
(neck pitch, yaw), two arms (shoulder pitch, roll, yaw; elbow) and two legs (hip pitch, roll;
knee). Kinematic part (18): six strings; string i ends at a control point whose world
coordinates are three prismatic joints from the world (x, y, z), so ρ is the puppeteer's hand
positions directly. Constraints (6): each string has a fixed length between its control point
and its attachment on the body (``distance`` constraints: head top, upper back, both hands, both
knees), as the massless strings of Johnson2015, ref. [32] modelled as rigid links.

Every link has positive mass (the virtual links and string ends small ones) because the URDF
layer requires each moving body to carry mass; the string chains are separate branches from the
world, so their mass never couples into the dynamic block of M(q).

``write_marionette_files()`` regenerates urdf/marionette.urdf and config/marionette.yaml.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml

from .robot import RobotModel, load_urdf
from .visuals import add_visuals

G = 9.81
STRING_LENGTH = 1.0
# Body segments: (mass [kg], length [m]) of a ~1.1 m tall wooden puppet.
_TORSO = (1.0, 0.5)
_HEAD = (0.3, 0.2)
_UPPER_ARM = (0.15, 0.26)
_FOREARM = (0.1, 0.24)
_THIGH = (0.25, 0.35)
_SHIN = (0.2, 0.35)
_SMALL = 0.01  # virtual links and string ends
_DAMPING = 0.02  # N·m·s/rad on the anatomical joints

# String name -> (body link, attachment point in that link's frame).
STRINGS: dict[str, tuple[str, tuple[float, float, float]]] = {
    "head": ("head", (0.0, 0.0, _HEAD[1])),
    "back": ("torso", (-0.08, 0.0, 0.2)),
    "left_hand": ("left_forearm", (0.0, 0.0, -_FOREARM[1])),
    "right_hand": ("right_forearm", (0.0, 0.0, -_FOREARM[1])),
    "left_knee": ("left_thigh", (0.0, 0.0, -_THIGH[1])),
    "right_knee": ("right_thigh", (0.0, 0.0, -_THIGH[1])),
}
# Default string directions (attachment -> control point), splayed as on a real control bar: vertical
# strings would leave the head, back and knee rows of Dh nearly dependent (all lift through base_z).
STRING_DIRECTIONS: dict[str, tuple[float, float, float]] = {
    "head": (0.2, 0.0, 1.0),
    "back": (-0.5, 0.0, 1.0),
    "left_hand": (0.3, 0.5, 1.0),
    "right_hand": (0.3, -0.5, 1.0),
    "left_knee": (0.6, 0.2, 1.0),
    "right_knee": (0.6, -0.2, 1.0),
}
TORSO_HEIGHT = 1.2  # world z of the torso centre in the design pose


def _f(v) -> str:
    return " ".join(f"{float(a):.10g}" for a in np.atleast_1d(v))


def _rod(mass: float, length: float, radius: float, sign: float = -1.0) -> str:
    """Solid cylinder along ±z from the link origin (centre of mass at its middle)."""
    ixx = mass * (3 * radius**2 + length**2) / 12.0
    izz = mass * radius**2 / 2.0
    return (
        f'<inertial><origin xyz="0 0 {_f(sign * length / 2)}"/><mass value="{mass}"/>'
        f'<inertia ixx="{ixx:.6g}" ixy="0" ixz="0" iyy="{ixx:.6g}" iyz="0" izz="{izz:.6g}"/></inertial>'
    )


def _box(mass: float, sx: float, sy: float, sz: float) -> str:
    ixx, iyy, izz = (mass * (b**2 + c**2) / 12.0 for b, c in ((sy, sz), (sx, sz), (sx, sy)))
    return (
        f'<inertial><origin xyz="0 0 0"/><mass value="{mass}"/>'
        f'<inertia ixx="{ixx:.6g}" ixy="0" ixz="0" iyy="{iyy:.6g}" iyz="0" izz="{izz:.6g}"/></inertial>'
    )


def _small() -> str:
    i = 1e-5
    return (
        f'<inertial><origin xyz="0 0 0"/><mass value="{_SMALL}"/>'
        f'<inertia ixx="{i}" ixy="0" ixz="0" iyy="{i}" iyz="0" izz="{i}"/></inertial>'
    )


_AXES = {"x": "1 0 0", "y": "0 1 0", "z": "0 0 1"}


def _joint(
    name: str,
    jtype: str,
    parent: str,
    child: str,
    axis: str,
    xyz=(0.0, 0.0, 0.0),
    lim: float = 3.14159,
    damping: float = 0.0,
) -> str:
    return (
        f'<joint name="{name}" type="{jtype}"><parent link="{parent}"/><child link="{child}"/>'
        f'<origin xyz="{_f(xyz)}" rpy="0 0 0"/><axis xyz="{_AXES[axis]}"/>'
        f'<limit lower="{-lim}" upper="{lim}" effort="0" velocity="100"/>'
        f'<dynamics damping="{damping}" friction="0"/></joint>'
    )


def _chain(
    parts: list[str],
    parent: str,
    joints: list[tuple[str, str, str]],
    xyz,
    last: str,
    last_inertial: str,
    damping: float = 0.0,
) -> None:
    """Serial joints at one point: (joint name, type, axis); intermediate links are small."""
    for i, (jn, jt, ax) in enumerate(joints):
        child = last if i == len(joints) - 1 else f"{jn}_link"
        parts.append(f'<link name="{child}">{last_inertial if child == last else _small()}</link>')
        lim = 10.0 if jt == "prismatic" else 3.14159
        parts.append(_joint(jn, jt, parent, child, ax, xyz if i == 0 else (0, 0, 0), lim, damping))
        parent = child


def marionette_urdf() -> str:
    """URDF XML of the marionette (z up, torso centre at ``TORSO_HEIGHT`` when q_base = 0)."""
    p: list[str] = [
        '<?xml version="1.0"?>',
        "<!-- Generated by vi_control.model.marionette (seed 000 §VIII-B); do not edit by hand. -->",
        '<robot name="marionette">',
        '<link name="stage"/>',
    ]
    d = _DAMPING
    _chain(
        p,
        "stage",
        [
            ("base_x", "prismatic", "x"),
            ("base_y", "prismatic", "y"),
            ("base_z", "prismatic", "z"),
            ("torso_yaw", "revolute", "z"),
            ("torso_pitch", "revolute", "y"),
            ("torso_roll", "revolute", "x"),
        ],
        (0, 0, TORSO_HEIGHT),
        "torso",
        _box(_TORSO[0], 0.15, 0.3, 0.5),
    )
    _chain(
        p,
        "torso",
        [("neck_pitch", "revolute", "y"), ("neck_yaw", "revolute", "z")],
        (0, 0, _TORSO[1] / 2),
        "head",
        _rod(_HEAD[0], _HEAD[1], 0.09, sign=1.0),
        d,
    )
    for side, s in (("left", 1.0), ("right", -1.0)):
        _chain(
            p,
            "torso",
            [
                (f"{side}_shoulder_pitch", "revolute", "y"),
                (f"{side}_shoulder_roll", "revolute", "x"),
                (f"{side}_shoulder_yaw", "revolute", "z"),
            ],
            (0, s * 0.2, 0.2),
            f"{side}_upper_arm",
            _rod(*_UPPER_ARM, 0.03),
            d,
        )
        _chain(
            p,
            f"{side}_upper_arm",
            [(f"{side}_elbow", "revolute", "y")],
            (0, 0, -_UPPER_ARM[1]),
            f"{side}_forearm",
            _rod(*_FOREARM, 0.025),
            d,
        )
        _chain(
            p,
            "torso",
            [(f"{side}_hip_pitch", "revolute", "y"), (f"{side}_hip_roll", "revolute", "x")],
            (0, s * 0.1, -_TORSO[1] / 2),
            f"{side}_thigh",
            _rod(*_THIGH, 0.04),
            d,
        )
        _chain(
            p,
            f"{side}_thigh",
            [(f"{side}_knee", "revolute", "y")],
            (0, 0, -_THIGH[1]),
            f"{side}_shin",
            _rod(*_SHIN, 0.035),
            d,
        )
    for name in STRINGS:
        _chain(
            p,
            "stage",
            [(f"string_{name}_{a}", "prismatic", a) for a in "xyz"],
            (0, 0, 0),
            f"string_{name}_end",
            _small(),
        )
    p.append("</robot>")
    return add_visuals("\n".join(p) + "\n")  # drawn only: the model hash leaves visuals out


def marionette_robot() -> RobotModel:
    """The bundled marionette (urdf/marionette.urdf + config/marionette.yaml)."""
    from .bundled import bundled_config, bundled_urdf  # bundled.py lists this module's files

    return load_urdf(bundled_urdf("marionette"), bundled_config("marionette"))


def prescribed_joints() -> list[str]:
    return [f"string_{name}_{a}" for name in STRINGS for a in "xyz"]


def design_pose() -> dict[str, float]:
    """A relaxed hanging pose: elbows and knees slightly bent (joint name -> value)."""
    return {
        "left_elbow": -0.3,
        "right_elbow": -0.3,
        "left_hip_pitch": -0.15,
        "right_hip_pitch": -0.15,
        "left_knee": 0.3,
        "right_knee": 0.3,
    }


def marionette_system() -> dict:
    """System YAML mapping: gravity, no torques, 18 prescribed string coordinates, 6 string lengths."""
    return {
        "name": "marionette",
        "gravity": [0.0, 0.0, -G],
        "actuated": [],
        "prescribed": prescribed_joints(),
        "constraints": [
            {
                "type": "distance",
                "link_a": f"string_{name}_end",
                "point_a": [0.0, 0.0, 0.0],
                "link_b": link,
                "point_b": [float(c) for c in pt],
                "distance": STRING_LENGTH,
            }
            for name, (link, pt) in STRINGS.items()
        ],
    }


def _attachment_points(robot, q: np.ndarray) -> np.ndarray:
    """World positions (6, 3) of the string attachments on the body at configuration q."""
    import pinocchio as pin

    model = robot.pin_model
    data = model.createData()
    pin.framesForwardKinematics(model, data, q)
    out = []
    for link, pt in STRINGS.values():
        M = data.oMf[model.getFrameId(link, pin.FrameType.BODY)]
        out.append(M.translation + M.rotation @ np.asarray(pt))
    return np.array(out)


def default_controls(robot) -> np.ndarray:
    """ρ (18,) in ``robot.prescribed`` order: control points one string length from the design-pose
    attachments along ``STRING_DIRECTIONS``, then the hands raised 0.15 m and spread 0.05 m, so the
    design pose is not consistent with the strings: ``initial_guess`` starts the projection onto h(q) = 0.
    """
    q = np.zeros(robot.nq)
    for jn, v in design_pose().items():
        q[robot.joint_index(jn)] = v
    names = list(STRINGS)
    dirs = np.array([STRING_DIRECTIONS[n] for n in names])
    pts = _attachment_points(robot, q) + STRING_LENGTH * dirs / np.linalg.norm(dirs, axis=1, keepdims=True)
    for side, s in (("left_hand", 1.0), ("right_hand", -1.0)):
        pts[names.index(side)] += (0.0, 0.05 * s, 0.15)
    value = {f"string_{n}_{a}": pts[i, j] for i, n in enumerate(names) for j, a in enumerate("xyz")}
    return np.array([value[jn] for jn in robot.prescribed])


def initial_guess(robot: RobotModel, rho: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(q, weights) to start the projection onto h(q) = 0 (``mechanics.constraints.consistent_state``).

    q: the design pose with the string control points ρ (default ``default_controls``); weights (per dynamic
    coordinate): the floating base 10× stiffer than the limbs, so the strings move the limbs rather than
    the whole puppet.
    """
    q = np.zeros(robot.nq)
    for jn, v in design_pose().items():
        q[robot.joint_index(jn)] = v
    idx_k = [robot.joint_index(n) for n in robot.prescribed]
    q[idx_k] = default_controls(robot) if rho is None else np.asarray(rho, float)
    w = np.array([0.1 if n.startswith(("base_", "torso_")) else 1.0 for n in robot.dynamic_joints])
    return q, w


def write_marionette_files(root: str | Path | None = None) -> tuple[Path, Path]:
    """Write urdf/marionette.urdf and config/marionette.yaml under ``root`` (default: the source tree)."""
    root = Path(root) if root is not None else Path(__file__).resolve().parents[2]
    urdf, cfg = root / "urdf" / "marionette.urdf", root / "config" / "marionette.yaml"
    urdf.write_text(marionette_urdf(), encoding="utf-8")
    header = "# Generated by vi_control.model.marionette (Johnson2015, §VIII-B); regenerate, do not edit.\n"
    body = yaml.safe_dump(marionette_system(), sort_keys=False, default_flow_style=None)
    cfg.write_text(header + body, encoding="utf-8")
    return urdf, cfg


if __name__ == "__main__":
    for path in write_marionette_files():
        print(path)
