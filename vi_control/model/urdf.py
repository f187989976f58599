"""URDF validation and loading into a Pinocchio model.

Pinocchio's parser is the parser; this module only checks what Pinocchio accepts silently or
reports vaguely (missing parents, loops, unphysical inertias, unsupported joints) so the user
gets an error naming the joint or link, and rewrites ``continuous`` joints as unbounded
revolute joints so every configuration variable is an angle (seed 000 works in generalized
coordinates; Pinocchio would otherwise use a (cos, sin) pair).
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

from .errors import URDFError

SUPPORTED_JOINTS = ("revolute", "continuous", "prismatic", "fixed")
_UNBOUNDED = 1e6


@dataclass(frozen=True)
class JointInfo:
    """One moving joint of the tree, in configuration order."""

    name: str
    type: str  # "revolute" | "continuous" | "prismatic"
    parent: str
    child: str
    axis: np.ndarray
    lower: float = -np.inf
    upper: float = np.inf
    velocity_limit: float = np.inf
    effort_limit: float = np.inf
    damping: float = 0.0
    friction: float = 0.0

    @property
    def continuous(self) -> bool:
        return self.type == "continuous"


@dataclass
class ParsedURDF:
    """What the URDF says beyond Pinocchio's model: joint metadata and link masses."""

    name: str
    xml: str
    joints: dict[str, JointInfo] = field(default_factory=dict)
    fixed_joints: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    root: str = ""


def read_urdf_text(source: str) -> str:
    """Return URDF XML text from a file path or from the XML string itself."""
    text = source.lstrip()
    if text.startswith("<"):
        return source
    if not os.path.isfile(source):
        raise URDFError(f"URDF file not found: {source!r}")
    with open(source, encoding="utf-8") as f:
        return f.read()


def _floats(text: str | None, n: int, what: str, default: list[float]) -> np.ndarray:
    if text is None:
        return np.array(default, dtype=float)
    try:
        vals = [float(t) for t in text.split()]
    except ValueError as e:
        raise URDFError(f"{what}: cannot read numbers from {text!r}") from e
    if len(vals) != n:
        raise URDFError(f"{what}: expected {n} numbers, got {len(vals)} ({text!r})")
    return np.array(vals)


def _attr_float(el: ET.Element | None, key: str, what: str, default: float) -> float:
    if el is None or el.get(key) is None:
        return default
    try:
        return float(el.get(key))
    except ValueError as e:
        raise URDFError(f"{what}: attribute {key}={el.get(key)!r} is not a number") from e


def _link_mass(link: ET.Element, name: str) -> float:
    inertial = link.find("inertial")
    if inertial is None:
        return 0.0
    mass = _attr_float(inertial.find("mass"), "value", f"link {name!r} <mass>", 0.0)
    if not np.isfinite(mass) or mass < 0.0:
        raise URDFError(f"link {name!r}: mass must be non-negative and finite, got {mass}")
    return mass


def _check_inertia(link: ET.Element, name: str) -> None:
    el = link.find("inertial/inertia")
    if el is None:
        raise URDFError(f"link {name!r}: <inertial> has a mass but no <inertia>")
    keys = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
    v = {k: _attr_float(el, k, f"link {name!r} <inertia>", 0.0) for k in keys}
    inertia = np.array(
        [[v["ixx"], v["ixy"], v["ixz"]], [v["ixy"], v["iyy"], v["iyz"]], [v["ixz"], v["iyz"], v["izz"]]]
    )
    if not np.all(np.isfinite(inertia)):
        raise URDFError(f"link {name!r}: inertia has non-finite entries")
    eig = np.linalg.eigvalsh(inertia)
    tol = 1e-12 * max(1.0, float(np.max(np.abs(eig))))
    # A point mass (zero rotational inertia) is admitted: the seed-000 pendulum is one.
    if eig[0] < -tol:
        raise URDFError(
            f"link {name!r}: inertia matrix is not positive (semi-)definite "
            f"(eigenvalues {np.array2string(eig, precision=4)})"
        )
    a, b, c = eig
    if a + b < c - tol:
        raise URDFError(f"link {name!r}: principal moments {eig} violate the triangle inequality")


def parse_urdf(xml: str) -> ParsedURDF:
    """Validate URDF XML and collect joint metadata; raises URDFError naming what is wrong."""
    try:
        root = ET.fromstring(xml)
    except ET.ParseError as e:
        raise URDFError(f"malformed URDF XML: {e}") from e
    if root.tag != "robot":
        raise URDFError(f"URDF root element must be <robot>, got <{root.tag}>")
    out = ParsedURDF(name=root.get("name", "robot"), xml=xml)
    links = {}
    for link in root.findall("link"):
        lname = link.get("name")
        if not lname:
            raise URDFError("a <link> has no name")
        if lname in links:
            raise URDFError(f"link {lname!r} is defined twice")
        links[lname] = link
    if not links:
        raise URDFError("URDF has no <link>")
    out.links = list(links)
    parent_of: dict[str, str] = {}
    children: dict[str, list[tuple[str, str]]] = {}
    moving_children: set[str] = set()
    for j in root.findall("joint"):
        jname = j.get("name")
        jtype = j.get("type")
        if not jname:
            raise URDFError("a <joint> has no name")
        if jtype not in SUPPORTED_JOINTS:
            raise URDFError(
                f"joint {jname!r} has unsupported type {jtype!r}; supported: {', '.join(SUPPORTED_JOINTS)}"
                + (" (a floating base is added with floating_base: true in the system YAML)"
                   if jtype == "floating" else "")
            )
        pel, cel = j.find("parent"), j.find("child")
        if pel is None or cel is None:
            raise URDFError(f"joint {jname!r} needs both <parent> and <child>")
        parent, child = pel.get("link"), cel.get("link")
        if parent not in links:
            raise URDFError(f"joint {jname!r}: parent link {parent!r} does not exist")
        if child not in links:
            raise URDFError(f"joint {jname!r}: child link {child!r} does not exist")
        if child in parent_of:
            raise URDFError(
                f"joint {jname!r}: link {child!r} already has parent {parent_of[child]!r} — the URDF is "
                "not a tree (close loops with a holonomic constraint in the system YAML)"
            )
        parent_of[child] = parent
        children.setdefault(parent, []).append((jname, child))
        if jtype == "fixed":
            out.fixed_joints.append(jname)
            continue
        if j.find("mimic") is not None:
            raise URDFError(f"joint {jname!r} uses <mimic>, which is not supported (model it as a "
                            "holonomic constraint in the system YAML instead)")
        moving_children.add(child)
        axis = _floats(j.find("axis").get("xyz") if j.find("axis") is not None else None, 3,
                       f"joint {jname!r} <axis>", [1.0, 0.0, 0.0])
        nrm = np.linalg.norm(axis)
        if nrm < 1e-12:
            raise URDFError(f"joint {jname!r}: axis is zero")
        lim, dyn = j.find("limit"), j.find("dynamics")
        if jtype in ("revolute", "prismatic") and lim is None:
            raise URDFError(f"joint {jname!r} ({jtype}) needs a <limit> element")
        what = f"joint {jname!r} <limit>"
        info = JointInfo(
            name=jname, type=jtype, parent=parent, child=child, axis=axis / nrm,
            lower=-np.inf if jtype == "continuous" else _attr_float(lim, "lower", what, 0.0),
            upper=np.inf if jtype == "continuous" else _attr_float(lim, "upper", what, 0.0),
            velocity_limit=_attr_float(lim, "velocity", what, np.inf),
            effort_limit=_attr_float(lim, "effort", what, np.inf),
            damping=_attr_float(dyn, "damping", f"joint {jname!r} <dynamics>", 0.0),
            friction=_attr_float(dyn, "friction", f"joint {jname!r} <dynamics>", 0.0),
        )
        if info.lower > info.upper:
            raise URDFError(f"joint {jname!r}: lower limit {info.lower} > upper limit {info.upper}")
        if info.damping < 0 or info.friction < 0:
            raise URDFError(f"joint {jname!r}: damping and friction must be non-negative")
        out.joints[jname] = info
    roots = [name for name in links if name not in parent_of]
    if len(roots) != 1:
        # No root at all means every link has a parent: a cycle.
        raise URDFError(
            "URDF joints form a loop (no root link)" if not roots
            else f"URDF is not one tree: several root links {roots}"
        )
    out.root = roots[0]
    seen, stack = set(), [out.root]
    while stack:
        lname = stack.pop()
        seen.add(lname)
        stack.extend(c for _, c in children.get(lname, []))
    if len(seen) != len(links):
        raise URDFError(f"URDF joints form a loop among links {sorted(set(links) - seen)}")
    # Every moving body (a moving joint's child plus the links welded to it, which Pinocchio
    # merges) must carry mass; every link with mass must have a physical inertia.
    fixed_children = {p: [c for jn, c in cs if jn in out.fixed_joints] for p, cs in children.items()}

    def body_mass(lname: str) -> float:
        return _link_mass(links[lname], lname) + sum(body_mass(c) for c in fixed_children.get(lname, []))

    for lname, link in links.items():
        if _link_mass(link, lname) > 0.0:
            _check_inertia(link, lname)
    for info in out.joints.values():
        if body_mass(info.child) <= 0.0:
            raise URDFError(
                f"link {info.child!r} (child of moving joint {info.name!r}) has zero mass: "
                "a moving body needs a positive <mass>"
            )
    return out


def _continuous_as_revolute(xml: str) -> str:
    root = ET.fromstring(xml)
    for j in root.findall("joint"):
        if j.get("type") == "continuous":
            j.set("type", "revolute")
            lim = j.find("limit")
            if lim is None:
                lim = ET.SubElement(j, "limit")
            lim.set("lower", str(-_UNBOUNDED))
            lim.set("upper", str(_UNBOUNDED))
            lim.set("effort", lim.get("effort", "0"))
            lim.set("velocity", lim.get("velocity", "0"))
    return ET.tostring(root, encoding="unicode")


def build_pinocchio_model(parsed: ParsedURDF) -> pin.Model:
    """Pinocchio model with one angle (or length) per moving joint: nq == nv."""
    try:
        model = pin.buildModelFromXML(_continuous_as_revolute(parsed.xml))
    except Exception as e:  # Pinocchio raises bare RuntimeError/ValueError
        raise URDFError(f"Pinocchio could not build the model: {e}") from e
    if model.nq != model.nv:
        raise URDFError(f"unexpected joint parametrization (nq={model.nq}, nv={model.nv})")
    return model
