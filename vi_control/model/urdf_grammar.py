"""URDF attributes read exactly as the C++ parser reads them (urdfdom, which Pinocchio uses), with our errors.

urdfdom reads every number with ``strToDouble``: a ``std::stringstream`` in the classic locale, ``ss >> d``,
then "failed or not at end of input" is an error. So leading white space is skipped, trailing white space
is an error, and the number is ``[+-]?(digits[.digits]|.digits)([eE][+-]?digits)`` in ASCII; ``inf``,
``nan``, hex, ``1_0``, Unicode digits, ``1,5`` and out-of-range values (``1e400``) are errors, ``1e-400``
is 0. Vectors (``xyz``, ``rpy``, ``size``, ``scale``, ``rgba``) are split at single spaces, empty pieces
skipped, each piece read as above. Python's ``float()`` accepts far more (``" 1.0 "``, ``"1_0"``,
``"١"``, ``"inf"``), and urdfdom does not stop at every error: a bad ``<inertial>`` is *dropped* with a
line on stderr and the link silently becomes massless (or keeps a mass with a partial inertia). Hence this
module checks every element urdfdom parses, by urdfdom's rules, before Pinocchio sees the XML, and raises
``URDFError`` naming the link or joint, the element and the attribute.

XML parsers normalize a literal tab or newline inside an attribute value to a space (expat does, as the
XML specification says); tinyxml2 — urdfdom's XML library — keeps them, so ``xyz="1<TAB>0 0"`` is an
error there. ``keep_attribute_whitespace`` escapes them before parsing so that both parsers see the same
characters.
"""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET

import numpy as np

from .errors import URDFError
from .limits import MAX_COEFFICIENT, MAX_INERTIA, MAX_LENGTH, MAX_MASS

# ``ss >> double`` after skipping the classic locale's white space; ASCII digits only.
_NUMBER = re.compile(r"[ \t\n\v\f\r]*[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_WS = " \t\n\v\f\r"
_JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar")
INERTIA_KEYS = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")

# Start tags (quotes honoured) and the markup whose text must not be touched.
_MARKUP = re.compile(
    r"<!--.*?-->|<!\[CDATA\[.*?\]\]>|<\?.*?\?>|<!DOCTYPE(?:[^\[>]|\[.*?\])*>"
    r"|<[A-Za-z_:](?:[^<>\"']|\"[^\"]*\"|'[^']*')*>",
    re.S,
)
_QUOTED = re.compile(r"\"[^\"]*\"|'[^']*'")
_ESCAPES = {"\t": "&#9;", "\n": "&#10;"}


def keep_attribute_whitespace(xml: str) -> str:
    """XML text whose attribute values keep literal tabs and newlines through an XML parser (module docstring).

    Line ends are normalized first (CR LF and CR to LF), as every XML parser does on input.
    """
    xml = xml.replace("\r\n", "\n").replace("\r", "\n")
    if "\t" not in xml and "\n" not in xml:
        return xml

    def tag(m: re.Match) -> str:
        t = m.group()
        if t.startswith(("<!", "<?")) or ("\t" not in t and "\n" not in t):
            return t
        return _QUOTED.sub(lambda q: "".join(_ESCAPES.get(c, c) for c in q.group()), t)

    return _MARKUP.sub(tag, xml)


def urdf_double(text: str | None) -> float | None:
    """The value urdfdom's strToDouble reads from ``text``, or None where it raises (module docstring)."""
    if text is None or not _NUMBER.fullmatch(text):
        return None
    value = float(text.lstrip(_WS))
    return value if math.isfinite(value) else None  # out of range: failbit in the C++ stream


def urdf_vector(text: str | None, n: int = 3) -> list[float] | None:
    """urdfdom's Vector3 (n = 3) or Color (n = 4) parse: None where it fails."""
    if text is None:
        return None
    values = [urdf_double(piece) for piece in text.split(" ") if piece != ""]
    if len(values) != n or any(v is None for v in values):
        return None
    return values


def number(
    el: ET.Element, key: str, owner: str, required: bool = False, default: float = 0.0, bound: float | None = None
) -> float:
    """Attribute ``key`` of element ``el`` read as urdfdom reads it; URDFError naming owner, element, attribute."""
    raw = el.get(key)
    if raw is None:
        if required:
            raise URDFError(f"{owner} <{el.tag}>: attribute {key} is required")
        return default
    value = urdf_double(raw)
    if value is None:
        raise URDFError(
            f"{owner} <{el.tag}>: attribute {key}={raw!r} is not a number (the URDF parser reads "
            "ASCII [+-]digits[.digits][e[+-]digits], leading spaces only, no inf/nan)"
        )
    if bound is not None and abs(value) > bound:
        raise URDFError(
            f"{owner} <{el.tag}>: attribute {key}={raw!r} is beyond the supported range ±{bound:g} "
            "(vi_control.model.limits)"
        )
    return value


def vector(el: ET.Element, key: str, owner: str, n: int = 3, bound: float | None = None) -> np.ndarray | None:
    """Vector attribute (None when absent); URDFError naming owner, element, attribute when urdfdom rejects it."""
    raw = el.get(key)
    if raw is None:
        return None
    values = urdf_vector(raw, n)
    if values is None:
        raise URDFError(
            f"{owner} <{el.tag}>: attribute {key}={raw!r} is not {n} numbers separated by spaces "
            "(the URDF parser's grammar)"
        )
    out = np.array(values)
    if bound is not None and np.abs(out).max() > bound:
        raise URDFError(
            f"{owner} <{el.tag}>: attribute {key}={raw!r} is beyond the supported range ±{bound:g} "
            "(vi_control.model.limits)"
        )
    return out


def origin(el: ET.Element | None, owner: str) -> tuple[np.ndarray, np.ndarray]:
    """(xyz, rpy) of an <origin> child of ``el`` (zeros when absent), checked and in range."""
    o = None if el is None else el.find("origin")
    if o is None:
        return np.zeros(3), np.zeros(3)
    xyz = vector(o, "xyz", owner, bound=MAX_LENGTH)
    rpy = vector(o, "rpy", owner, bound=MAX_LENGTH)
    return (np.zeros(3) if xyz is None else xyz), (np.zeros(3) if rpy is None else rpy)


def inertial(link: ET.Element, name: str) -> tuple[float, np.ndarray, np.ndarray, np.ndarray] | None:
    """(mass, inertia 3×3 about the CoM in the inertial frame, xyz, rpy) of a link's <inertial>, or None.

    Every rule of urdfdom's parseInertial (a failure there drops the whole element) plus our ranges.
    """
    el = link.find("inertial")
    if el is None:
        return None
    owner = f"link {name!r}"
    xyz, rpy = origin(el, owner + " <inertial>")
    m = el.find("mass")
    if m is None:
        raise URDFError(f"{owner}: <inertial> needs a <mass> element")
    mass = number(m, "value", owner, required=True, bound=MAX_MASS)
    i = el.find("inertia")
    if i is None:
        raise URDFError(f"{owner}: <inertial> has a mass but no <inertia>")
    v = {k: number(i, k, owner, required=True, bound=MAX_INERTIA) for k in INERTIA_KEYS}
    inertia = np.array([[v["ixx"], v["ixy"], v["ixz"]], [v["ixy"], v["iyy"], v["iyz"]], [v["ixz"], v["iyz"], v["izz"]]])
    return mass, inertia, xyz, rpy


def _geometry(parent: ET.Element, owner: str) -> None:
    g = parent.find("geometry")
    if g is None:
        raise URDFError(f"{owner} <{parent.tag}>: needs a <geometry> element")
    shape = next(iter(g), None)
    if shape is None:
        raise URDFError(f"{owner} <{parent.tag}><geometry>: contains no shape element")
    where = f"{owner} <{parent.tag}>"
    if shape.tag == "sphere":
        number(shape, "radius", where, required=True)
    elif shape.tag == "box":
        if shape.get("size") is None:
            raise URDFError(f"{where} <box>: attribute size is required")
        vector(shape, "size", where)
    elif shape.tag == "cylinder":
        number(shape, "length", where, required=True)
        number(shape, "radius", where, required=True)
    elif shape.tag == "mesh":
        if shape.get("filename") is None:
            raise URDFError(f"{where} <mesh>: attribute filename is required")
        vector(shape, "scale", where)
    else:
        raise URDFError(f"{where} <geometry>: unknown shape <{shape.tag}> (sphere, box, cylinder, mesh)")


def _material(m: ET.Element, owner: str) -> None:
    if m.get("name") is None:
        raise URDFError(f"{owner} <material>: attribute name is required")
    c = m.find("color")
    if c is not None and c.get("rgba") is not None:
        rgba = vector(c, "rgba", f"{owner} <material {m.get('name')!r}>", n=4)
        if np.any((rgba < 0) | (rgba > 1)):
            raise URDFError(
                f"{owner} <material {m.get('name')!r}> <color>: rgba components must be in [0, 1], "
                f"got {c.get('rgba')!r}"
            )


def check_link(link: ET.Element, name: str) -> None:
    """Visual and collision elements of a link, as urdfdom parses them (inertial: ``inertial``)."""
    owner = f"link {name!r}"
    for tag in ("visual", "collision"):
        for el in link.findall(tag):
            origin(el, f"{owner} <{tag}>")
            _geometry(el, owner)
            if tag == "visual" and el.find("material") is not None:
                _material(el.find("material"), f"{owner} <visual>")


def check_materials(root: ET.Element) -> None:
    """Top-level <material> elements: named, unique, colors readable, a color or a texture file each."""
    seen: set[str] = set()
    for m in root.findall("material"):
        _material(m, "robot")
        c, t = m.find("color"), m.find("texture")
        if (c is None or c.get("rgba") is None) and (t is None or t.get("filename") is None):
            raise URDFError(f"material {m.get('name')!r}: needs <color rgba=...> or <texture filename=...>")
        if m.get("name") in seen:
            raise URDFError(f"material {m.get('name')!r} is defined twice")
        seen.add(m.get("name"))


def check_robot(root: ET.Element) -> None:
    """<robot> needs a name; a version attribute, if any, must be 1.0 (the only one urdfdom reads)."""
    if root.get("name") is None:
        raise URDFError("<robot> needs a name attribute")
    version = root.get("version")
    if version is not None:
        parts = version.split(".")
        ok = len(parts) == 2 and all(re.fullmatch(r"[ \t\n\v\f\r]*[+-]?[0-9]+", p) for p in parts)
        if not ok or (int(parts[0]), int(parts[1])) != (1, 0):
            raise URDFError(f"<robot> version={version!r}: only URDF version 1.0 is supported")


def check_joint_elements(j: ET.Element, name: str, jtype: str) -> dict:
    """Every child urdfdom parses for a joint; returns the numbers vi_control uses (limits, dynamics, mimic)."""
    owner = f"joint {name!r}"
    if jtype not in _JOINT_TYPES:
        raise URDFError(f"{owner} has unknown type {jtype!r}")
    out: dict = {"xyz_rpy": origin(j, owner + " <origin>")}
    axis = j.find("axis")
    out["axis"] = None if axis is None or jtype in ("fixed", "floating") else vector(axis, "xyz", owner)
    lim = j.find("limit")
    if lim is not None:
        out["limit"] = {
            k: number(lim, k, owner, required=k in ("effort", "velocity"))
            for k in ("lower", "upper", "effort", "velocity")
        }
    elif jtype in ("revolute", "prismatic"):
        raise URDFError(f"{owner} ({jtype}) needs a <limit> element")
    safety = j.find("safety_controller")
    if safety is not None:
        for k in ("soft_lower_limit", "soft_upper_limit", "k_position", "k_velocity"):
            number(safety, k, owner, required=k == "k_velocity")
    cal = j.find("calibration")
    if cal is not None:
        for k in ("rising", "falling"):
            number(cal, k, owner)
    mimic = j.find("mimic")
    if mimic is not None:
        if mimic.get("joint") is None:
            raise URDFError(f"{owner} <mimic>: attribute joint is required")
        out["mimic"] = (
            mimic.get("joint"),
            number(mimic, "multiplier", owner, default=1.0, bound=MAX_COEFFICIENT),
            number(mimic, "offset", owner, default=0.0, bound=MAX_COEFFICIENT),
        )
    dyn = j.find("dynamics")
    if dyn is not None:
        if dyn.get("damping") is None and dyn.get("friction") is None:
            raise URDFError(f"{owner} <dynamics>: needs damping or friction")
        out["dynamics"] = {k: number(dyn, k, owner, bound=MAX_COEFFICIENT) for k in ("damping", "friction")}
    return out
