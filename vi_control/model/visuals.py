"""Simple visual geometry for URDFs that have none, and the dynamics-only text that the model hash covers.

``add_visuals`` gives every link with an ``<inertial>`` a shape whose own inertia would be the link's (a box,
a cylinder or a sphere from the principal moments; a sphere for a point mass), plus thin rods from the link's
origin to its child joints and to a point mass when the shape does not reach them, with a color per link. The
visuals are inserted as text, each on its own line (or, in one-line links, right before ``</link>``), so
``dynamics_text`` — the URDF without ``<visual>``, ``<collision>`` and ``<material>`` elements — gives back
the file exactly as it was: the model hash (``RobotModel.hash``) is the same with and without visuals.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin

# The elements that draw a robot and do not change its dynamics (the hash leaves them out); a leading run of
# whitespace goes with each, so text with them inserted by add_visuals strips back to the original exactly.
_DRAWING = re.compile(r"\s*<(visual|collision|material)\b(?:[^>]*?/>|.*?</\1\s*>)", re.DOTALL)
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)

PALETTE = (
    "0.18 0.42 0.78 1",
    "0.90 0.52 0.12 1",
    "0.25 0.66 0.33 1",
    "0.78 0.22 0.28 1",
    "0.55 0.38 0.75 1",
    "0.12 0.62 0.66 1",
)
ROD_COLOR = "0.55 0.55 0.58 1"
ROD_RADIUS = 0.012
MIN_SIZE = 0.01  # no dimension of a shape below this [m]


def dynamics_text(xml: str) -> str:
    """The URDF text without what only draws the robot (``<visual>``, ``<collision>``, ``<material>``).

    Comments are kept as they are (an element inside a comment is left alone)."""
    out, pos = [], 0
    for c in _COMMENT.finditer(xml):
        out += [_DRAWING.sub("", xml[pos : c.start()]), c.group(0)]
        pos = c.end()
    out.append(_DRAWING.sub("", xml[pos:]))
    return "".join(out)


def _vec(text: str | None, default: str = "0 0 0") -> np.ndarray:
    return np.array([float(v) for v in (text or default).split()])


def _num(v: float) -> str:
    s = f"{v:.6g}"
    return "0" if s in ("-0", "0") else s


def _origin(xyz: np.ndarray, R: np.ndarray) -> str:
    rpy = pin.rpy.matrixToRpy(R) if not np.allclose(R, np.eye(3), atol=1e-12) else np.zeros(3)
    return f'<origin xyz="{" ".join(_num(v) for v in xyz)}" rpy="{" ".join(_num(v) for v in rpy)}"/>'


def _frame_with_z(axis: np.ndarray) -> np.ndarray:
    """A rotation whose third column is the unit vector ``axis`` (URDF cylinders lie along z)."""
    z = axis / np.linalg.norm(axis)
    if abs(abs(z[2]) - 1) < 1e-12:  # along ±z already (a cylinder is the same turned over)
        return np.eye(3)
    helper = np.array([1.0, 0, 0]) if abs(z[0]) < 0.9 else np.array([0, 1.0, 0])
    x = np.cross(helper, z)
    x /= np.linalg.norm(x)
    return np.column_stack([x, np.cross(z, x), z])


def _body_shape(mass: float, inertia: np.ndarray, cap: float) -> tuple[str, str, np.ndarray, np.ndarray]:
    """(kind, geometry element, rotation in the inertial frame, half extents) of a uniform solid with this
    mass and inertia: a sphere (three equal moments), a cylinder (two), a box (none), a sphere for a point.

    A solid longer than ``cap`` (an inertia that no body of the link's size has, e.g. a paper's lumped values)
    is scaled down uniformly to that length: the same shape and proportions, so its inertia stays proportional."""
    lam, V = np.linalg.eigh(inertia)
    if np.linalg.det(V) < 0:
        V[:, 0] = -V[:, 0]
    if lam.max() <= 1e-12 or mass <= 0:
        r = float(np.clip(0.08 * np.cbrt(max(mass, 0.0)), 0.03, 0.1))
        return "sphere", f'<sphere radius="{_num(r)}"/>', np.eye(3), np.full(3, r)
    close = [abs(lam[i] - lam[j]) <= 0.02 * lam.max() for i, j in ((0, 1), (1, 2), (0, 2))]
    if all(close):
        r = float(np.sqrt(2.5 * lam.mean() / mass))
        r = max(min(r, cap / 2), MIN_SIZE)
        return "sphere", f'<sphere radius="{_num(r)}"/>', np.eye(3), np.full(3, r)
    if any(close):
        k = 2 if close[0] else 0  # the odd moment: the cylinder's axis
        r = float(np.sqrt(2 * lam[k] / mass))
        h = float(np.sqrt(max(12 * lam[1] / mass - 3 * r * r, 0.0)))
        scale = min(1.0, cap / max(2 * r, h))
        r, h = max(scale * r, MIN_SIZE / 2), max(scale * h, MIN_SIZE)
        R = _frame_with_z(V[:, k])
        return "cylinder", f'<cylinder radius="{_num(r)}" length="{_num(h)}"/>', R, np.array([r, r, h / 2])
    dims = np.array([float(np.sqrt(max(6 * (lam.sum() - 2 * lam[i]) / mass, 0.0))) for i in range(3)])
    dims = np.maximum(dims * min(1.0, cap / dims.max()), MIN_SIZE)
    return "box", f'<box size="{" ".join(_num(d) for d in dims)}"/>', V, dims / 2


def _visual(geometry: str, xyz: np.ndarray, R: np.ndarray, color: str, material: str, collision: bool) -> str:
    out = (
        f"<visual>{_origin(xyz, R)}<geometry>{geometry}</geometry>"
        f'<material name="{material}"><color rgba="{color}"/></material></visual>'
    )
    if collision:
        out += f"<collision>{_origin(xyz, R)}<geometry>{geometry}</geometry></collision>"
    return out


def link_visuals(
    link: ET.Element,
    child_offsets: list[np.ndarray],
    color: str,
    material: str,
    collision: bool = False,
    fit: bool = False,
) -> list[str]:
    """The ``<visual>`` (and ``<collision>``) elements drawn for one link with an ``<inertial>``, as text."""
    inertial = link.find("inertial")
    origin = inertial.find("origin")
    com = _vec(origin.get("xyz") if origin is not None else None)
    R_in = pin.rpy.rpyToMatrix(*_vec(origin.get("rpy") if origin is not None else None))
    mass = float(inertial.find("mass").get("value"))
    i = inertial.find("inertia")
    g = {k: float(i.get(k, "0")) for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")}
    inertia = np.array([[g["ixx"], g["ixy"], g["ixz"]], [g["ixy"], g["iyy"], g["iyz"]], [g["ixz"], g["iyz"], g["izz"]]])
    # fit: no longer than the link's reach to its joints and centre of mass (at least 0.3 m).
    reach = [np.linalg.norm(p) for p in child_offsets] + [2 * np.linalg.norm(com)]
    kind, geometry, R_shape, half = _body_shape(mass, inertia, cap=max(1.2 * max(reach), 0.3) if fit else np.inf)
    R = R_in @ R_shape
    out = [_visual(geometry, com, R, color, material, collision)]
    targets = [p for p in child_offsets if np.linalg.norm(p) > 1e-9]
    if np.linalg.norm(com) > 1e-9:
        targets.append(com)

    def inside(p: np.ndarray) -> bool:
        local = R.T @ (p - com)
        if kind == "sphere":
            return bool(np.linalg.norm(local) <= half[0] + 0.02)
        return bool(np.all(np.abs(local) <= half + 0.02))

    for n, p in enumerate(targets):  # a rod from the joint to p, unless the shape spans both ends
        if not (inside(np.zeros(3)) and inside(p)) and not any(np.allclose(p, q) for q in targets[:n]):
            length = float(np.linalg.norm(p))
            out.append(
                _visual(
                    f'<cylinder radius="{_num(ROD_RADIUS)}" length="{_num(length)}"/>',
                    p / 2,
                    _frame_with_z(p),
                    ROD_COLOR,
                    "vi_rod",
                    collision,
                )
            )
    return out


def add_visuals(xml: str, collision: bool = False, fit: bool = False) -> str:
    """``xml`` with visual geometry (and, if ``collision``, the same collision geometry) on every link that has an
    ``<inertial>`` with mass and no ``<visual>`` yet. ``dynamics_text`` of the result is ``dynamics_text(xml)``.

    ``fit``: for lumped inertias that no solid of the link's size has (a paper's values: RABBIT, the snakeboard's
    wheels), each solid is scaled down, keeping its proportions, to the link's reach."""
    root = ET.fromstring(xml.encode())
    offsets: dict[str, list[np.ndarray]] = {}
    for j in root.findall("joint"):
        o = j.find("origin")
        offsets.setdefault(j.find("parent").get("link"), []).append(_vec(o.get("xyz") if o is not None else None))
    blocks: dict[str, list[str]] = {}
    for n, link in enumerate(l for l in root.findall("link") if l.find("inertial") is not None):
        if link.find("visual") is None and float(link.find("inertial/mass").get("value", "0")) > 0:
            blocks[link.get("name")] = link_visuals(
                link,
                offsets.get(link.get("name"), []),
                PALETTE[n % len(PALETTE)],
                f"vi_color{n % len(PALETTE)}",
                collision,
                fit,
            )
    out, pos = [], 0
    masked = _COMMENT.sub(lambda c: " " * len(c.group(0)), xml)  # find elements outside comments only
    for m in re.finditer(r'<link\s+name\s*=\s*"([^"]*)"[^>]*?(/?)>', masked):
        name = m.group(1)
        if name not in blocks or m.group(2):
            continue
        end = masked.index("</link>", m.end())
        ws = re.search(r"\s*$", masked[m.end() : end]).group(0)
        at = end - len(ws)
        indent = ws + "  " if "\n" in ws else ""
        out += [xml[pos:at], "".join(indent + b for b in blocks[name])]
        pos = at
    out.append(xml[pos:])
    return "".join(out)


# How the bundled URDFs (urdf/, those not written by a generator) got their visuals: ``add_visuals`` options per
# file. Wheeled robots carry collisions too (Gazebo's contacts with the ground).
BUNDLED_VISUALS = {
    "biped5": dict(fit=True),
    "biped5_pinned": dict(fit=True),
    "snakeboard": dict(fit=True, collision=True),
    "diffdrive": dict(collision=True),
    "rolling_disk": dict(collision=True),
    "sleigh": dict(collision=True),
}


def bundled_visuals(stem: str, xml: str) -> str:
    """A bundled URDF (by file stem) with its visuals drawn afresh: what urdf/<stem>.urdf holds."""
    return add_visuals(dynamics_text(xml), **BUNDLED_VISUALS.get(stem, {}))
