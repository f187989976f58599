"""URDF validation and loading into a Pinocchio model.

Pinocchio's parser is the parser; this module only checks what Pinocchio accepts silently or
reports vaguely (missing parents, loops, unphysical inertias, unsupported joints) so the user
gets an error naming the joint or link, and rewrites ``continuous`` joints as unbounded
revolute joints so every configuration variable is an angle (Johnson2015 works in generalized
coordinates; Pinocchio would otherwise use a (cos, sin) pair).
"""

from __future__ import annotations

import logging
import os
import threading
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

from . import urdf_grammar
from .errors import URDFError
from .inertia import check_against_pinocchio, composite_inertias, inertia_problem, link_inertia, repair_inertia
from .limits import MAX_LINKS
from .urdf_grammar import keep_attribute_whitespace
from .yaml_io import read_text_file

log = logging.getLogger("vi_control.model")

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
    inertials: dict[str, tuple] = field(default_factory=dict)  # link -> (mass, inertia at CoM, xyz, rpy)
    placements: dict[str, tuple] = field(default_factory=dict)  # joint -> (xyz, rpy) of its <origin>
    mimic: dict[str, tuple[str, float, float]] = field(default_factory=dict)  # joint -> (mimicked, mult., offset)
    repaired: tuple[str, ...] = ()  # links whose inertia the 'repair' policy replaced

    def preorder(self) -> list[str]:
        """Links from the root, every parent before its children."""
        below: dict[str, list[str]] = {}
        for _, _, parent, child in self.edges:
            below.setdefault(parent, []).append(child)
        order, stack = [], [self.root]
        while stack:
            order.append(stack.pop())
            stack.extend(below.get(order[-1], []))
        return order

    def subtree_masses(self) -> dict[str, float]:
        """link -> mass of the link and of every link below it (through fixed and moving joints)."""
        below: dict[str, list[str]] = {}
        for _, _, parent, child in self.edges:
            below.setdefault(parent, []).append(child)
        order = self.preorder()
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
    if "\x00" in source or len(source) > 4096:
        raise URDFError("URDF must be a file path or XML text starting with '<'")
    return read_text_file(source, "URDF", URDFError)


def _fromstring(xml: str) -> ET.Element:
    if "<!ENTITY" in xml:  # tinyxml2 (the C++ parser) reads no DTD: an entity is text to it; expansion is a risk
        raise URDFError("URDF declares DTD entities (<!ENTITY ...>), which the URDF parser does not read")
    try:
        return ET.fromstring(keep_attribute_whitespace(xml))
    except ET.ParseError as e:
        raise URDFError(f"malformed URDF XML: {e}") from None


def _link_inertial(link: ET.Element, name: str, policy: str, repairs: list[str]) -> tuple | None:
    """(mass, inertia about the CoM, xyz, rpy) of a link, physical (checked, or repaired under ``repair``)."""
    data = urdf_grammar.inertial(link, name)
    if data is None:
        return None
    mass, inertia, xyz, rpy = data
    problem = inertia_problem(mass, inertia)
    if problem is not None:
        if policy != "repair" or mass < 0:
            hint = " (inertia_policy: repair projects it to the nearest physical inertia)" if mass >= 0 else ""
            raise URDFError(f"link {name!r}: {problem}{hint}")
        inertia = repair_inertia(name, mass, inertia)
        el = link.find("inertial/inertia")
        for key, (a, b) in zip(urdf_grammar.INERTIA_KEYS, ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))):
            el.set(key, repr(float(inertia[a, b])))
        repairs.append(name)
    return mass, inertia, xyz, rpy


def _position_limits(jname: str, jtype: str, lim: dict, warn: bool) -> tuple[float, float]:
    """(lower, upper) of a moving joint. ``lower == upper`` (CAD exporters such as sw_urdf_exporter write
    ``lower="0" upper="0"`` for a joint they know no range of; ``<limit>`` is required on revolute and
    prismatic joints and its bounds default to 0) would pin a *moving* joint to one position — every
    measurement beyond the controller's margin refused, a collocation problem infeasible — so it means "not
    given", with a warning naming the joint; a joint that truly cannot move is a ``fixed`` joint."""
    if jtype == "continuous":
        return -np.inf, np.inf
    lower, upper = lim.get("lower", 0.0), lim.get("upper", 0.0)
    if lower == upper:
        if warn:
            log.warning(
                "joint %r (%s): <limit lower=%g upper=%g> leaves no range; read as no position limits "
                "(make it a fixed joint if it must not move)",
                jname,
                jtype,
                lower,
                upper,
            )
        return -np.inf, np.inf
    return lower, upper


def parse_urdf(xml: str, inertia_policy: str = "strict", warn: bool = True) -> ParsedURDF:
    """Validate URDF XML and collect joint metadata; raises URDFError naming what is wrong.

    Every element the URDF parser reads is checked by its rules (model.urdf_grammar). ``inertia_policy``
    'repair' replaces non-physical inertias by the nearest physical ones (model.inertia); the returned
    ``xml`` then carries the repaired values. ``warn``: log the joints whose equal limits are read as none
    (False for re-parses of a URDF already warned about).
    """
    root = _fromstring(xml)
    if root.tag != "robot":
        raise URDFError(f"URDF root element must be <robot>, got <{root.tag}>")
    urdf_grammar.check_robot(root)
    urdf_grammar.check_materials(root)
    out = ParsedURDF(name=root.get("name", "robot"), xml=xml)
    links = {}
    for link in root.findall("link"):
        lname = link.get("name")
        if not lname:
            raise URDFError("a <link> has no name")
        if lname in links:
            raise URDFError(f"link {lname!r} is defined twice")
        links[lname] = link
        if len(links) > MAX_LINKS:
            raise URDFError(f"URDF has more than {MAX_LINKS} links, the supported maximum (vi_control.model.limits)")
    if not links:
        raise URDFError("URDF has no <link>")
    out.links = list(links)
    parent_of: dict[str, str] = {}
    children: dict[str, list[tuple[str, str]]] = {}
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
                + (
                    " (a floating base is added with floating_base: true in the system YAML)"
                    if jtype == "floating"
                    else ""
                )
            )
        el = urdf_grammar.check_joint_elements(j, jname, jtype)
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
        out.placements[jname] = el["xyz_rpy"]
        if jtype == "fixed":
            out.fixed_joints.append(jname)
            continue
        if "mimic" in el:
            out.mimic[jname] = el["mimic"]
        axis = np.array([1.0, 0.0, 0.0]) if el["axis"] is None else el["axis"]
        nrm = np.linalg.norm(axis)
        if nrm < 1e-12:
            raise URDFError(f"joint {jname!r}: axis is zero")
        lim = el.get("limit", {})
        dyn = el.get("dynamics", {})
        lower, upper = _position_limits(jname, jtype, lim, warn)
        info = JointInfo(
            name=jname,
            type=jtype,
            parent=parent,
            child=child,
            axis=axis / nrm,
            lower=lower,
            upper=upper,
            # velocity 0 is "not given", as effort 0 is (robot.actuation): a joint that may not move is fixed
            velocity_limit=lim.get("velocity", 0.0) or np.inf,
            effort_limit=lim.get("effort", np.inf),
            damping=dyn.get("damping", 0.0),
            friction=dyn.get("friction", 0.0),
        )
        if info.lower > info.upper:
            raise URDFError(f"joint {jname!r}: lower limit {info.lower} > upper limit {info.upper}")
        if info.damping < 0 or info.friction < 0:
            raise URDFError(f"joint {jname!r}: damping and friction must be non-negative")
        for k in ("effort", "velocity"):  # (Pinocchio's own refusal names neither the joint nor the attribute)
            if lim.get(k, 0.0) < 0:
                raise URDFError(f"joint {jname!r} <limit>: {k}={lim[k]:g} must be non-negative (0: unbounded)")
        out.joints[jname] = info
    roots = [name for name in links if name not in parent_of]
    if len(roots) != 1:
        # No root at all means every link has a parent: a cycle.
        raise URDFError(
            f"URDF joints form a loop (no root link) among links {sorted(links)}"
            if not roots
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
    repairs: list[str] = []
    for lname, link in links.items():
        urdf_grammar.check_link(link, lname)
        data = _link_inertial(link, lname, inertia_policy, repairs)
        out.masses[lname] = 0.0 if data is None else data[0]
        if data is not None:
            out.inertials[lname] = data
    out.repaired = tuple(repairs)
    if repairs:
        out.xml = ET.tostring(root, encoding="unicode")
    return out


def check_inertias(parsed: ParsedURDF, model: pin.Model) -> None:
    """Pinocchio's body inertias equal the URDF's (model.inertia.check_against_pinocchio)."""
    bodies = {name: link_inertia(*data) for name, data in parsed.inertials.items()}
    welded: dict[str, list[tuple[str, np.ndarray, np.ndarray]]] = {}
    child_of_joint = {}
    for jname, jtype, parent, child in parsed.edges:
        if jtype == "fixed":
            xyz, rpy = parsed.placements[jname]
            welded.setdefault(parent, []).append((child, pin.rpy.rpyToMatrix(*rpy), xyz))
        else:
            child_of_joint[jname] = child
    composites = composite_inertias(bodies, parsed.preorder(), welded)
    check_against_pinocchio(model, composites, parsed.root, child_of_joint)


def lock_joints(xml: str, positions: dict[str, float] | list[str], error: type[ValueError] = URDFError) -> str:
    """Rewrite the named joints as ``fixed`` at the given positions (a list: at 0), as Pinocchio's
    ``buildReducedModel`` does: the joint's motion at that position is folded into its origin (revolute and
    continuous: R_origin·R(axis, θ); prismatic: origin + R_origin·axis·d). A joint whose ``<mimic>`` follows a
    locked joint is locked too, at multiplier·θ + offset (a gripper's second finger with its first)."""
    positions = dict.fromkeys(positions, 0.0) if isinstance(positions, list) else dict(positions)
    root = _fromstring(xml)
    joints = {j.get("name"): j for j in root.findall("joint")}
    missing = sorted(set(positions) - set(joints))
    if missing:
        moving = [n for n, j in joints.items() if j.get("type") != "fixed"]
        raise error(f"locked: joint(s) {missing} not in the URDF (moving joints: {moving})")
    for name, value in positions.items():  # (the user's positions: a weld beyond the end stops is no robot's pose)
        lim = joints[name].find("limit")
        lo, hi = (0.0, 0.0) if lim is None else (float(lim.get("lower", 0.0)), float(lim.get("upper", 0.0)))
        slack = 1e-9 * max(1.0, abs(lo), abs(hi))
        if (
            joints[name].get("type") in ("revolute", "prismatic")
            and (lo, hi) != (0.0, 0.0)
            and not lo - slack <= value <= hi + slack
        ):
            raise error(f"locked.{name}: {value:g} is outside joint {name!r}'s limits [{lo:g}, {hi:g}]")
    for name, j in joints.items():  # followers of locked joints
        m = j.find("mimic")
        if m is not None and m.get("joint") in positions and name not in positions:
            positions[name] = float(m.get("multiplier", 1.0)) * positions[m.get("joint")] + float(m.get("offset", 0.0))
    for name, value in positions.items():
        j = joints[name]
        jtype = j.get("type")
        if jtype == "fixed":
            raise error(f"locked: joint {name!r} is already fixed")
        if jtype not in ("revolute", "continuous", "prismatic"):
            raise error(f"locked: joint {name!r} of type {jtype!r} cannot be locked")
        if value != 0.0:  # (at 0 the origin stays as written)
            origin = j.find("origin")
            if origin is None:
                origin = ET.SubElement(j, "origin")
            xyz = np.array([float(v) for v in origin.get("xyz", "0 0 0").split()])
            R = pin.rpy.rpyToMatrix(*[float(v) for v in origin.get("rpy", "0 0 0").split()])
            ax = j.find("axis")
            axis = np.array([float(v) for v in (ax.get("xyz", "1 0 0") if ax is not None else "1 0 0").split()])
            axis /= np.linalg.norm(axis)
            if jtype == "prismatic":
                xyz = xyz + R @ axis * value
            else:
                R = R @ pin.AngleAxis(value, axis).matrix()
            origin.set("xyz", " ".join(repr(float(v)) for v in xyz))
            origin.set("rpy", " ".join(repr(float(v)) for v in pin.rpy.matrixToRpy(R)))
        j.set("type", "fixed")
        for m in j.findall("mimic"):
            j.remove(m)
    return ET.tostring(root, encoding="unicode")


def _continuous_as_revolute(xml: str) -> str:
    root = _fromstring(xml)
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
_FLOATING_BASE = (
    ("x", "prismatic", "1 0 0"),
    ("y", "prismatic", "0 1 0"),
    ("z", "prismatic", "0 0 1"),
    ("rz", "continuous", "0 0 1"),
    ("ry", "continuous", "0 1 0"),
    ("rx", "continuous", "1 0 0"),
)


def add_floating_base(parsed: ParsedURDF) -> str:
    """URDF XML with six virtual joints ``floating_base_{x,y,z,rz,ry,rx}`` from a new 'world' link to the root.

    The five links between them are massless: validation accepts them because a massive body follows
    (robot.check_mass_structure). The rotation is parametrized by ZYX Euler angles, so the base's mass
    matrix is singular at pitch ±π/2 (gimbal lock), like any three-angle parametrization.
    """
    if "world" in parsed.links:
        raise URDFError("floating_base: the URDF already has a link named 'world' (its root is fixed to the world)")
    root = _fromstring(parsed.xml)
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


# Stack of the thread that runs Pinocchio's URDF parser: it recurses once per link of a chain (about 2 KB a level),
# and a 4000-link chain overflowed the main thread's 8 MB stack (SIGSEGV). 64 MB carry MAX_LINKS with room to spare.
PARSER_STACK_BYTES = 64 * 2**20


def build_pinocchio_model(parsed: ParsedURDF) -> pin.Model:
    """Pinocchio model with one angle (or length) per moving joint: nq == nv. Built in a thread of its own with a
    ``PARSER_STACK_BYTES`` stack, so a chain of up to MAX_LINKS links parses instead of overflowing the stack."""
    xml = _continuous_as_revolute(parsed.xml)
    out: dict = {}

    def build() -> None:
        try:
            out["model"] = pin.buildModelFromXML(xml)
        except Exception as e:  # Pinocchio raises bare RuntimeError/ValueError
            out["error"] = e

    previous = threading.stack_size(PARSER_STACK_BYTES)
    try:
        worker = threading.Thread(target=build, name="urdf-parser")
        worker.start()
    finally:
        threading.stack_size(previous)
    worker.join()
    if "error" in out:
        e = out["error"]
        raise URDFError(f"Pinocchio could not build the model: {e}") from e
    model = out["model"]
    if model.nq != model.nv:
        raise URDFError(f"unexpected joint parametrization (nq={model.nq}, nv={model.nv})")
    return model
