"""Locating robot descriptions: bundled models (urdf/, config/) and example-robot-data's URDFs."""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path

import numpy as np

from .errors import URDFError
from .robot import RobotModel, load_urdf, wrap_angle
from .urdf import lock_joints
from .visuals import bundled_visuals
from .yaml_io import read_text_file

_PKG = "vi_control"


def share_dir() -> Path:
    """Directory holding urdf/, config/, launch/: the source tree, else the install's share/."""
    src = Path(__file__).resolve().parents[2]
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


# name -> (URDF stem in urdf/, system YAML stem in config/ or None). Several systems may share one URDF.
BUNDLED = {
    "pendulum": ("pendulum", "pendulum"),
    "double_pendulum": ("double_pendulum", None),
    "acrobot": ("double_pendulum", "acrobot"),
    "cartpole": ("cartpole", "cartpole"),
    "chain10": ("chain10", None),
    "biped5": ("biped5", "biped5"),
    "biped5_stance": ("biped5", "biped5_stance"),  # single support: stance foot pinned (MorenoMartin2022, §V-C gait)
    "biped5_pinned": ("biped5_pinned", "biped5_pinned"),  # the same, stance foot as the root (minimal coordinates)
    "arm7": ("arm7", None),
    "fourbar": ("fourbar", "fourbar"),
    # Johnson2015 systems maintained with their own generators/tests (§VII-A, §VII-B, §VIII-B).
    "spherical_pendulum": ("spherical_pendulum", "spherical_pendulum"),
    "cartesian_pendulum": ("cartesian_pendulum", "cartesian_pendulum"),
    "marionette": ("marionette", "marionette"),
    # Kobilarov2010 nonholonomic systems (docs/concepts/nonholonomic.md): GNI (make_integrator("gni", ...)) and RDP.
    "sleigh": ("sleigh", "sleigh"),
    "snakeboard": ("snakeboard", "snakeboard"),
    "rolling_disk": ("rolling_disk", "rolling_disk"),
    "diffdrive": ("diffdrive", "diffdrive"),
}
"""The bundled models by name: (URDF stem in urdf/, system YAML stem in config/ or None). Several systems may share
one URDF (``acrobot`` is the double pendulum with only the elbow actuated); ``vc.load_robot(name)`` loads one."""

# Bundled URDFs written by vi_control.model.generate.planar_chain_urdf (a test holds the files equal).
GENERATED = {
    "chain10": dict(n=10),
    "double_pendulum": dict(
        n=2,
        name="double_pendulum",
        joint_names=["shoulder", "elbow"],
        link_names=["upper_link", "lower_link"],
        tip="tip",
        effort=20.0,
    ),
}


def bundled_models() -> dict[str, tuple[str, str | None]]:
    """Registry of bundled systems: name -> (URDF path, system YAML path or None)."""
    out = {}
    for name, (urdf, cfg) in BUNDLED.items():
        out[name] = (bundled_urdf(urdf), None if cfg is None else str(share_dir() / "config" / f"{cfg}.yaml"))
    return out


def load_bundled(name: str, **kwargs) -> RobotModel:
    """``load_urdf`` on a bundled system by name (e.g. 'acrobot'); kwargs go to load_urdf."""
    if name not in BUNDLED:
        raise URDFError(f"no bundled model named {name!r}; bundled: {sorted(BUNDLED)}")
    urdf, cfg = bundled_models()[name]
    return load_urdf(urdf, cfg, **kwargs)


# Four-bar link lengths (urdf/fourbar.urdf): crank, coupler, rocker, ground pivot distance.
FOURBAR_LENGTHS = (0.3, 0.9, 0.7, 1.0)


def fourbar_initial_configuration(crank_angle: float = 0.0, elbow_up: bool = True) -> np.ndarray:
    """q = (crank, coupler, rocker) relative angles closing the four-bar loop h(q) = 0 for a crank angle.

    Closed form: the coupler-rocker joint B is an intersection of the circle of radius ``coupler`` about the
    crank tip A and the circle of radius ``rocker`` about the ground pivot D; ``elbow_up`` takes the one
    with larger z. A rotation θ about y maps the link axis +x to (cos θ, 0, −sin θ).
    """
    a, b, c, d = FOURBAR_LENGTHS

    def heading(v: np.ndarray) -> float:  # angle θ of an (x, z) direction, in the joint convention above
        return math.atan2(-v[1], v[0])

    A = a * np.array([math.cos(crank_angle), -math.sin(crank_angle)])
    D = np.array([d, 0.0])
    e = D - A
    L = float(np.linalg.norm(e))
    along = (b * b - c * c + L * L) / (2 * L)
    h2 = b * b - along * along
    if h2 < 0:
        raise ValueError(f"four-bar cannot close at crank angle {crank_angle}")
    u = e / L
    perp = np.array([-u[1], u[0]])
    B = [A + along * u + s * math.sqrt(h2) * perp for s in (1.0, -1.0)]
    B = max(B, key=lambda p: p[1]) if elbow_up else min(B, key=lambda p: p[1])
    phi = [crank_angle, heading(B - A), heading(D - B)]
    q = np.array([phi[0], phi[1] - phi[0], phi[2] - phi[1]])
    return wrap_angle(q)


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


# example-robot-data's Python loaders (``example_robot_data.load(name)``, not shipped with the data package we pin)
# know some robots by names that are no file stem. ``erd:`` names URDF files, so those names are refused, naming the
# file the loader reads and what else the loader does: loader name -> (erd: spelling of its URDF, what it adds).
_FREE_FLYER = "adds a free-flyer base (here: floating_base: true in the system YAML)"
_TALOS = _FREE_FLYER + " and rotor inertias from talos.srdf (not read by vi_control)"
ERD_LOADER_NAMES = {
    "talos": ("talos_reduced", _TALOS),
    "talos_box": ("talos_reduced_box", _TALOS),
    "talos_full": ("talos_full_v2", _TALOS),
    "talos_full_box": ("talos_full_v2_box", _TALOS),
    "talos_legs": (
        "talos_reduced",
        _TALOS + ", and keeps only the legs, built in Python: no URDF file holds that "
        "model (lock the other joints with the system YAML's `locked`)",
    ),
    "anymal": ("anymal_b_simple_description/robots/anymal.urdf", _FREE_FLYER),
    "anymal_c": ("anymal_c_simple_description/urdf/anymal.urdf", _FREE_FLYER),
    "anymal_kinova": ("anymal-kinova", _FREE_FLYER),
    "b1_z1": ("b1-z1", _FREE_FLYER),
    "alexander": ("alexander_v1.lowerBodyOnly", _FREE_FLYER),
    "borinot": ("borinot_flying_arm_2", _FREE_FLYER),
    "g1": ("g1_29dof_rev_1_0", _FREE_FLYER),
    "g1_with_hands": ("g1_29dof_with_hand_rev_1_0", _FREE_FLYER),
    "hector": ("quadrotor_base", _FREE_FLYER),
    "hextilt": ("hextilt_flying_arm_5", _FREE_FLYER),
    "hyq": ("hyq_no_sensors", _FREE_FLYER),
    "solo8": ("solo", _FREE_FLYER),
    "asr_twodof": ("TwoDofs", ""),
    "ur3_limited": ("ur3_joint_limited_robot", ""),
    "ur5_limited": ("ur5_joint_limited_robot", ""),
    "ur10_limited": ("ur10_joint_limited_robot", ""),
}


def _loader_name_hint(name: str) -> str:
    """For an example-robot-data loader name: which erd: spelling reads the same URDF (else "")."""
    if name not in ERD_LOADER_NAMES:
        return ""
    spelling, adds = ERD_LOADER_NAMES[name]
    return (
        f" ({name!r} is example-robot-data's Python loader name, not a URDF file: that loader reads "
        f"erd:{spelling}" + (f"; it also {adds}" if adds else "") + ")"
    )


def example_robot_path(name: str) -> Path:
    """The URDF file of ``erd:<name>``: a name of ``_ERD`` (the robots vi_control's tests use), else the one
    file ``<name>.urdf`` anywhere in example-robot-data (``baxter``, ``xarm7``, ``so100``,
    ``double_pendulum_continuous``), else a path relative to its robots/ directory
    (``anymal_c_simple_description/urdf/anymal.urdf``, for names that occur twice)."""
    try:
        root = example_robot_data_dir()
    except FileNotFoundError as e:
        raise URDFError(str(e)) from None
    if name in _ERD:
        return root / _ERD[name][0]
    rel = root / name
    if name.endswith(".urdf") and rel.is_file() and root.resolve() in rel.resolve().parents:
        return rel
    found = sorted(root.rglob(f"{name}.urdf")) if name and "/" not in name and "*" not in name else []
    if len(found) == 1:
        return found[0]
    if found:
        raise URDFError(
            f"example robot {name!r} is ambiguous: erd:<path> with one of "
            f"{[str(f.relative_to(root)) for f in found]}{_loader_name_hint(name)}"
        )
    hint = _loader_name_hint(name)
    if hint:  # (the whole list of names would bury the one spelling that answers)
        raise URDFError(f"unknown example robot {name!r}{hint}")
    names = sorted(set(_ERD) | {f.stem for f in root.rglob("*.urdf")})
    raise URDFError(
        f"unknown example robot {name!r}: erd:<name> takes one of {names}, or a .urdf path relative to {root}"
    )


def example_robot_urdf(name: str) -> str:
    """URDF XML of an example-robot-data robot, with joints locked as vi_control uses it (``_ERD``)."""
    xml = read_text_file(example_robot_path(name), "URDF", URDFError)
    locked = _ERD[name][1] if name in _ERD else []
    return lock_joints(xml, locked) if locked else xml


def main(argv: list[str] | None = None) -> int:
    """``python -m vi_control.model.bundled [--check]``: redraw the visuals of the bundled URDFs in urdf/
    (``visuals.bundled_visuals``); ``--check`` only lists the stale ones (exit 1 if any)."""
    check = "--check" in (sys.argv[1:] if argv is None else argv)
    stale = []
    for path in sorted((share_dir() / "urdf").glob("*.urdf")):
        if path.stem in GENERATED or path.stem == "marionette":  # their generators draw them
            continue
        text = path.read_text(encoding="utf-8")
        new = bundled_visuals(path.stem, text)
        if new != text:
            stale.append(path.name)
            if not check:
                path.write_text(new, encoding="utf-8")
    print(("stale: " if check else "redrawn: ") + (", ".join(stale) or "none"))
    return 1 if check and stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
