"""Locating robot descriptions: bundled models (urdf/, config/) and example-robot-data's URDFs."""

from __future__ import annotations

import os
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from .model.errors import URDFError

_PKG = "vi_control"


def share_dir() -> Path:
    """Directory holding urdf/, config/, launch/: the source tree, else the install's share/."""
    src = Path(__file__).resolve().parent.parent
    if (src / "urdf").is_dir() and (src / "package.xml").is_file():
        return src
    for prefix in [sys.prefix, *os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep)]:
        cand = Path(prefix) / "share" / _PKG
        if (cand / "urdf").is_dir():
            return cand
    raise FileNotFoundError("cannot locate vi_control's share directory (urdf/, config/)")


def bundled_urdf(name: str) -> str:
    """Path of a bundled URDF, e.g. ``bundled_urdf('pendulum')``."""
    p = share_dir() / "urdf" / f"{name}.urdf"
    if not p.is_file():
        raise URDFError(f"no bundled URDF named {name!r} in {p.parent}")
    return str(p)


def bundled_config(name: str) -> str | None:
    """Path of a bundled system YAML, or None if the model needs none."""
    p = share_dir() / "config" / f"{name}.yaml"
    return str(p) if p.is_file() else None


def example_robot_data_dir() -> Path:
    """Root of example-robot-data's robots/ (the PyPI wheel ships it under cmeel.prefix)."""
    for base in sys.path:
        cand = Path(base) / "cmeel.prefix" / "share" / "example-robot-data" / "robots"
        if cand.is_dir():
            return cand
    raise FileNotFoundError("example-robot-data is not installed (pip install example-robot-data)")


_ERD = {
    "panda": ("panda_description/urdf/panda.urdf", ["panda_finger_joint1", "panda_finger_joint2"]),
    "ur5": ("ur_description/urdf/ur5_robot.urdf", []),
    "ur3": ("ur_description/urdf/ur3_robot.urdf", []),
    "ur10": ("ur_description/urdf/ur10_robot.urdf", []),
    "talos_arm": ("talos_data/robots/talos_left_arm.urdf", []),
    "double_pendulum": ("double_pendulum_description/urdf/double_pendulum.urdf", []),
    "z1": ("z1_description/urdf/z1.urdf", []),
}


def lock_joints(xml: str, names: list[str]) -> str:
    """Rewrite the named joints as fixed (e.g. panda's two finger joints)."""
    root = ET.fromstring(xml)
    found = set()
    for j in root.findall("joint"):
        if j.get("name") in names:
            j.set("type", "fixed")
            for m in j.findall("mimic"):
                j.remove(m)
            found.add(j.get("name"))
    missing = set(names) - found
    if missing:
        raise URDFError(f"cannot lock joint(s) {sorted(missing)}: not in the URDF")
    return ET.tostring(root, encoding="unicode")


def example_robot_urdf(name: str) -> str:
    """URDF XML of an example-robot-data robot, with joints locked as vi_control uses it."""
    if name not in _ERD:
        raise KeyError(f"unknown example robot {name!r}; known: {sorted(_ERD)}")
    rel, locked = _ERD[name]
    path = example_robot_data_dir() / rel
    xml = path.read_text(encoding="utf-8")
    return lock_joints(xml, locked) if locked else xml
