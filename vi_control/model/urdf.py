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
    masses: dict[str, float] = field(default_factory=dict)  # link -> URDF <mass> (0 if none)
    edges: list[tuple[str, str, str, str]] = field(default_factory=list)  # (joint, type, parent, child)

    def subtree_masses(self) -> dict[str, float]:
        """link -> mass of the link and of every link below it (through fixed and moving joints)."""
        below: dict[str, list[str]] = {}
        for _, _, parent, child in self.edges:
            below.setdefault(parent, []).append(child)
        order, stack = [], [self.root]
        while stack:  # pre-order from the root; reversed, every child comes before its parent
            order.append(stack.pop())
            stack.extend(below.get(order[-1], []))
        out: dict[str, float] = {}
        for link in reversed(order):
            out[link] = self.masses.get(link, 0.0) + sum(out[c] for c in below.get(link, []))
        return out


def read_urdf_text(source: str | os.PathLike) -> str:
    """Return URDF XML text from a file path or from the XML string itself."""
    if isinstance(source, os.PathLike):
        source = os.fspath(source)
    if not isinstance(source, str):
        raise URDFError(f"URDF must be a file path or XML text, got {type(source).__name__}")
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
    el = inertial.find("inertia")
    if mass == 0.0 and el is not None:
        moments = [_attr_float(el, k, f"link {name!r} <inertia>", 0.0) for k in ("ixx", "iyy", "izz")]
        if any(m != 0.0 for m in moments):
            raise URDFError(f"link {name!r}: zero mass but non-zero rotational inertia {moments}")
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
    seen_joints: set[str] = set()
    for j in root.findall("joint"):
        jname = j.get("name")
        jtype = j.get("type")
        if not jname:
            raise URDFError("a <joint> has no name")
        if jname in seen_joints:
            raise URDFError(f"joint {jname!r} is defined twice")
        seen_joints.add(jname)
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
        out.edges.append((jname, jtype, parent, child))
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
            f"URDF joints form a loop (no root link) among links {sorted(links)}" if not roots
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
    # Every link with mass must have a physical inertia. Whether every moving body carries mass is
    # checked by robot.check_mass_structure once the prescribed (kinematic) joints are known.
    for lname, link in links.items():
        out.masses[lname] = _link_mass(link, lname)
        if out.masses[lname] > 0.0:
            _check_inertia(link, lname)
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


FLOATING_BASE_PREFIX = "floating_base_"
# (suffix, type, axis): translations x, y, z then ZYX Euler angles, world -> URDF root.
_FLOATING_BASE = (("x", "prismatic", "1 0 0"), ("y", "prismatic", "0 1 0"), ("z", "prismatic", "0 0 1"),
                  ("rz", "continuous", "0 0 1"), ("ry", "continuous", "0 1 0"), ("rx", "continuous", "1 0 0"))


def add_floating_base(parsed: ParsedURDF) -> str:
    """URDF XML with six virtual joints ``floating_base_{x,y,z,rz,ry,rx}`` from a new 'world' link to the root.

    The five links between them are massless: validation accepts them because a massive body follows
    (robot.check_mass_structure). The rotation is parametrized by ZYX Euler angles, so the base's mass
    matrix is singular at pitch ±π/2 (gimbal lock), like any three-angle parametrization.
    """
    if "world" in parsed.links:
        raise URDFError("floating_base: the URDF already has a link named 'world' (its root is fixed to the world)")
    root = ET.fromstring(parsed.xml)
    parent = "world"
    new = [ET.Element("link", name="world")]
    for i, (suffix, jtype, axis) in enumerate(_FLOATING_BASE):
        child = parsed.root if i == len(_FLOATING_BASE) - 1 else f"{FLOATING_BASE_PREFIX}link_{suffix}"
        if child != parsed.root:
            if child in parsed.links:
                raise URDFError(f"floating_base: the URDF already has a link named {child!r}")
            new.append(ET.Element("link", name=child))
        j = ET.Element("joint", name=FLOATING_BASE_PREFIX + suffix, type=jtype)
        ET.SubElement(j, "parent", link=parent)
        ET.SubElement(j, "child", link=child)
        ET.SubElement(j, "axis", xyz=axis)
        lim = {"effort": "0", "velocity": "0"}
        if jtype == "prismatic":
            lim.update(lower=str(-_UNBOUNDED), upper=str(_UNBOUNDED))
        ET.SubElement(j, "limit", **lim)
        new.append(j)
        parent = child
    for i, el in enumerate(new):
        root.insert(i, el)
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
