"""``vi_inspect``: print what vi_control makes of a robot description (tree, masses, inputs, constraints).

Usage::

    vi_inspect urdf/arm7.urdf                    # a URDF file
    vi_inspect acrobot                           # a bundled model (its system YAML is used)
    vi_inspect erd:panda --floating-base         # an example-robot-data robot
    vi_inspect my.urdf --system my.yaml

Exit code 0 on success, 2 with a one-line ``vi_inspect: error: ...`` on a bad model or argument.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence

from .errors import ModelError
from .robot import RobotModel
from .spec import ModelSpec
from .urdf import parse_urdf


def _num(x: float) -> str:
    return "inf" if x == math.inf else "-inf" if x == -math.inf else f"{x:g}"


def _vec(v: Sequence[float]) -> str:
    return "[" + ", ".join(_num(float(a)) for a in v) + "]"


def _children(robot: RobotModel) -> dict[str, list[tuple[str, str, str]]]:
    """parent link -> [(joint, type, child link)] for every joint of the URDF, fixed ones included."""
    children: dict[str, list[tuple[str, str, str]]] = {}
    for jname, jtype, parent, child in parse_urdf(robot.urdf_xml, warn=False).edges:
        children.setdefault(parent, []).append((jname, jtype, child))
    return children


def static_links(robot: RobotModel) -> list[str]:
    """Links welded to the root (reached through fixed joints only): their mass never moves."""
    children, out, stack = _children(robot), [], [robot.root_link]
    while stack:
        link = stack.pop()
        out.append(link)
        stack.extend(c for _, t, c in children.get(link, []) if t == "fixed")
    return out


def tree_lines(robot: RobotModel) -> list[str]:
    """One line per joint, indented under its parent link (fixed joints included)."""
    info = {j.name: j for j in robot.joints}
    children = _children(robot)
    lines = [robot.root_link]

    def walk(link: str, indent: str) -> None:
        for jname, jtype, child in children.get(link, []):
            desc = f"{indent}└─ {jname} ({jtype}) {link} -> {child}"
            if jname in info:
                j = info[jname]
                i = robot.joint_index(jname)
                desc += (
                    f"  axis {_vec(j.axis)}  limits [{_num(j.lower)}, {_num(j.upper)}]"
                    f"  effort {_num(j.effort_limit)}  damping {_num(float(robot.damping[i]))}"
                )
            lines.append(desc)
            walk(child, indent + "   ")

    walk(robot.root_link, "")
    return lines


def describe(robot: RobotModel, source: str) -> str:
    """The full report printed by ``vi_inspect``."""
    static = sum(robot.masses.get(n, 0.0) for n in static_links(robot))
    out = [
        f"robot: {robot.name}",
        f"source: {source}",
        f"DOF: {robot.nq} ({len(robot.dynamic_joints)} dynamic, {len(robot.prescribed)} prescribed)"
        + ("  [floating base: 6 virtual joints]" if robot.floating_base else ""),
        f"root link: {robot.root_link}",
        f"gravity: {_vec(robot.gravity)}",
        "",
        "tree (joint (type) parent -> child  axis  limits  effort  damping):",
        *("  " + line for line in tree_lines(robot)),
        "",
        "link masses [kg]:",
        *(f"  {name:<24} {m:g}" for name, m in robot.masses.items()),
        f"  total {robot.total_mass:g} kg, moving {robot.total_mass - static:g} kg",
        "",
        f"inputs: {len(robot.actuated)} efforts + {len(robot.prescribed)} prescribed positions",
        f"actuated joints ({len(robot.actuated)}):",
        *(f"  {n:<24} effort limit {_num(float(e))}" for n, e in zip(robot.actuated, robot.effort_limits)),
        *([] if robot.actuated else ["  none"]),
        "prescribed (kinematic) joints: " + (", ".join(robot.prescribed) or "none"),
        f"constraints ({robot.n_constraints} equations):",
    ]
    for c in robot.constraints:
        if c.type == "plane":
            out.append(f"  plane: n·p = {c.offset:g}, p = {c.link_a}{_vec(c.point_a)}, n = {_vec(c.normal)}")
        elif c.type == "joints":
            terms = " + ".join(f"{k:g}·{n}" for n, k in zip(c.joints, c.coefficients))
            out.append(f"  joints: {terms} = {c.offset:g}")
        elif c.type == "distance":
            out.append(f"  distance: |{c.link_a}{_vec(c.point_a)} - {c.link_b}{_vec(c.point_b)}| = {c.distance:g}")
        else:
            axes = ",".join("xyz"[a] for a in c.axes)
            out.append(f"  coincident: {c.link_a}{_vec(c.point_a)} == {c.link_b}{_vec(c.point_b)} along {axes}")
    if not robot.constraints:
        out.append("  none")
    out.append(f"nonholonomic constraints ({robot.n_nonholonomic} equations A(q)q̇ = 0; integrator: gni):")
    for c in robot.nonholonomic:
        if c.type == "knife_edge":
            out.append(f"  knife edge: no velocity of {c.link}{_vec(c.point)} along {_vec(c.direction)} (link frame)")
        else:
            out.append(
                f"  rolling: disk r = {c.radius:g} about {_vec(c.axis)} at {c.link}{_vec(c.point)} on the "
                f"plane ⊥ {_vec(c.normal)}, {', '.join(c.components)}"
            )
    if not robot.nonholonomic:
        out.append("  none")
    out.append(f"model hash: {robot.hash}")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="vi_inspect", description=__doc__.split("\n")[0])
    parser.add_argument("model", help="URDF path, bundled model name, or erd:NAME (example-robot-data)")
    parser.add_argument("--system", help="system YAML (default: the bundled model's own, if any)")
    parser.add_argument("--floating-base", action="store_true", help="add 6 virtual joints world -> root")
    args = parser.parse_args(argv)
    try:
        spec = ModelSpec.parse(args.model, system=args.system, floating_base=True if args.floating_base else None)
        robot = spec.load()
        report = describe(robot, spec.describe())
    except ModelError as e:
        print(f"vi_inspect: error: {' '.join(str(e).split())}", file=sys.stderr)
        return 2
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
