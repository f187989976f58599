"""Bad input -> a specific error naming the file, joint, link or key (DESIGN principle 7), case by case."""

import numpy as np
import pinocchio as pin
import pytest

from vi_control.model import ModelError, SystemConfigError, URDFError, load_robot
from vi_control.model.bundled import bundled_config, bundled_urdf
from vi_control.model.generate import planar_chain_urdf

CHAIN = planar_chain_urdf(3)  # base -> link1 -> link2 -> link3, joints joint1..3 about y


def inertial(mass, ixx=0.1, iyy=0.1, izz=0.01):
    return (
        f'<inertial><origin xyz="0 0 -0.5"/><mass value="{mass}"/>'
        f'<inertia ixx="{ixx}" ixy="0" ixz="0" iyy="{iyy}" iyz="0" izz="{izz}"/></inertial>'
    )


def robot(*links, joints=()):
    """A small URDF: links given as (name, inertial xml or ''), joints as raw XML."""
    body = "".join(f'<link name="{n}">{i}</link>' for n, i in links)
    return f'<robot name="t">{body}{"".join(joints)}</robot>'


def hinge(name, parent, child, jtype="continuous", extra='<limit effort="1" velocity="1"/>', z=0.0):
    return (
        f'<joint name="{name}" type="{jtype}"><parent link="{parent}"/><child link="{child}"/>'
        f'<origin xyz="0 0 {z}"/><axis xyz="0 1 0"/>{extra}</joint>'
    )


# --- URDF -------------------------------------------------------------------------------------------

URDF_CASES = {
    "missing file": ("/nonexistent/robot.urdf", r"URDF file not found: '/nonexistent/robot.urdf'"),
    "malformed XML": ("<robot name='x'><link name='a'></robot>", r"malformed URDF XML: mismatched tag"),
    "not a robot": ("<sdf><link name='a'/></sdf>", r"root element must be <robot>, got <sdf>"),
    "no link": ("<robot name='x'/>", r"URDF has no <link>"),
    "parent missing": (
        robot(("a", ""), ("b", inertial(1)), joints=[hinge("j1", "nowhere", "b")]),
        r"joint 'j1': parent link 'nowhere' does not exist",
    ),
    "child missing": (
        robot(("a", ""), joints=[hinge("j1", "a", "ghost")]),
        r"joint 'j1': child link 'ghost' does not exist",
    ),
    "two parents": (
        robot(
            ("a", ""),
            ("b", inertial(1)),
            ("c", inertial(1)),
            joints=[hinge("j1", "a", "b"), hinge("j2", "a", "c"), hinge("j3", "b", "c")],
        ),
        r"joint 'j3': link 'c' already has parent 'a' — the URDF is not a tree",
    ),
    "loop": (
        robot(("a", ""), ("b", inertial(1)), ("c", inertial(1)), joints=[hinge("j1", "b", "c"), hinge("j2", "c", "b")]),
        r"URDF joints form a loop among links \['b', 'c'\]",
    ),
    "loop without root": (
        robot(("b", inertial(1)), ("c", inertial(1)), joints=[hinge("j1", "b", "c"), hinge("j2", "c", "b")]),
        r"loop \(no root link\) among links \['b', 'c'\]",
    ),
    "two roots": (
        robot(("a", ""), ("b", inertial(1)), ("z", ""), joints=[hinge("j1", "a", "b")]),
        r"URDF is not one tree: several root links \['a', 'z'\]",
    ),
    "duplicate link": (robot(("a", ""), ("a", "")), r"link 'a' is defined twice"),
    "duplicate joint": (
        robot(("a", ""), ("b", inertial(1)), ("c", inertial(1)), joints=[hinge("j1", "a", "b"), hinge("j1", "b", "c")]),
        r"joint 'j1' is defined twice",
    ),
    "zero mass leaf": (
        robot(("a", ""), ("b", inertial(1)), ("c", ""), joints=[hinge("j1", "a", "b"), hinge("j2", "b", "c", z=-1)]),
        r"link 'c' \(child of moving joint 'j2'\) has zero mass and nothing massive follows it",
    ),
    "zero mass on a fixed-welded leaf": (
        robot(
            ("a", ""),
            ("b", inertial(1)),
            ("c", inertial(0, 0, 0, 0)),
            ("d", ""),
            joints=[
                hinge("j1", "a", "b"),
                hinge("j2", "b", "c"),
                '<joint name="w" type="fixed"><parent link="c"/><child link="d"/></joint>',
            ],
        ),
        r"link 'c' \(child of moving joint 'j2'\) has zero mass",
    ),
    # Two hinges about the same axis through the same point with a massless link between: redundant.
    "coincident axes": (
        robot(("a", ""), ("b", ""), ("c", inertial(1)), joints=[hinge("j1", "a", "b"), hinge("j2", "b", "c")]),
        r"joint 'j[12]': the mass matrix is singular",
    ),
    "negative mass": (
        CHAIN.replace('<mass value="1.0"/>', '<mass value="-1.0"/>', 1),
        r"link 'link1': mass must be non-negative and finite, got -1.0",
    ),
    "mass without inertia": (
        robot(("a", ""), ("b", '<inertial><mass value="1"/></inertial>'), joints=[hinge("j1", "a", "b")]),
        r"link 'b': <inertial> has a mass but no <inertia>",
    ),
    "zero mass, non-zero inertia": (
        robot(
            ("a", ""),
            ("b", inertial(0)),
            ("c", inertial(1)),
            joints=[hinge("j1", "a", "b"), hinge("j2", "b", "c", z=-1)],
        ),
        r"link 'b': zero mass but non-zero rotational inertia",
    ),
    "negative eigenvalue": (
        robot(("a", ""), ("b", inertial(1, ixx=-0.1)), joints=[hinge("j1", "a", "b")]),
        r"link 'b': inertia matrix is not positive \(semi-\)definite",
    ),
    "triangle inequality": (
        robot(("a", ""), ("b", inertial(1, 0.1, 0.1, 0.3)), joints=[hinge("j1", "a", "b")]),
        r"link 'b': principal moments .* violate the triangle inequality",
    ),
    "non-numeric mass": (
        robot(("a", ""), ("b", inertial("heavy")), joints=[hinge("j1", "a", "b")]),
        r"link 'b' <mass>: attribute value='heavy' is not a number",
    ),
    "planar joint": (
        robot(("a", ""), ("b", inertial(1)), joints=[hinge("slide", "a", "b", jtype="planar")]),
        r"joint 'slide' has unsupported type 'planar'",
    ),
    "floating joint": (
        robot(("a", ""), ("b", inertial(1)), joints=[hinge("free", "a", "b", jtype="floating")]),
        r"joint 'free' has unsupported type 'floating'.*floating_base: true",
    ),
    "mimic": (
        robot(
            ("a", ""),
            ("b", inertial(1)),
            ("c", inertial(1)),
            joints=[
                hinge("j1", "a", "b"),
                hinge("j2", "b", "c", extra='<limit effort="1" velocity="1"/><mimic joint="nope"/>'),
            ],
        ),
        r"joint 'j2' <mimic>: joint 'nope' is not a joint of this URDF",
    ),
    "revolute without limit": (
        robot(("a", ""), ("b", inertial(1)), joints=[hinge("j1", "a", "b", jtype="revolute", extra="")]),
        r"joint 'j1' \(revolute\) needs a <limit> element",
    ),
    "limits reversed": (
        robot(
            ("a", ""),
            ("b", inertial(1)),
            joints=[
                hinge("j1", "a", "b", jtype="revolute", extra='<limit lower="1" upper="-1" effort="1" velocity="1"/>')
            ],
        ),
        r"joint 'j1': lower limit 1.0 > upper limit -1.0",
    ),
    "zero axis": (
        robot(("a", ""), ("b", inertial(1)), joints=[hinge("j1", "a", "b").replace('xyz="0 1 0"', 'xyz="0 0 0"')]),
        r"joint 'j1': axis is zero",
    ),
    "negative damping": (
        robot(
            ("a", ""),
            ("b", inertial(1)),
            joints=[hinge("j1", "a", "b", extra='<limit effort="1" velocity="1"/><dynamics damping="-1"/>')],
        ),
        r"joint 'j1': damping and friction must be non-negative",
    ),
}


@pytest.mark.parametrize("case", sorted(URDF_CASES))
def test_bad_urdf_raises_specific_error(case):
    xml, message = URDF_CASES[case]
    with pytest.raises(URDFError, match=message) as err:
        load_robot(xml)
    assert isinstance(err.value, ValueError) and isinstance(err.value, ModelError)
    assert "\n" not in str(err.value).strip() or case == "malformed XML"


def test_urdf_error_names_the_file(tmp_path):
    path = tmp_path / "bad.urdf"
    path.write_text(URDF_CASES["mimic"][0])
    with pytest.raises(URDFError, match=rf"{path}: joint 'j2' <mimic>: joint 'nope'"):
        load_robot(path)


def test_massless_intermediate_link_is_accepted():
    """A massless link between two moving joints is a virtual link (universal joint, planar base) when a
    massive body follows and the joints are independent: the mass matrix stays positive definite."""
    xml = robot(
        ("a", ""),
        ("b", ""),
        ("c", inertial(1)),
        joints=[hinge("j1", "a", "b").replace('xyz="0 1 0"', 'xyz="1 0 0"'), hinge("j2", "b", "c")],
    )
    r = load_robot(xml)
    assert r.nq == 2 and r.masses == {"a": 0.0, "b": 0.0, "c": 1.0}
    for q in np.random.default_rng(1).uniform(-3, 3, (5, 2)):
        assert np.all(np.linalg.eigvalsh(pin.crba(r.pin_model, r.create_data(), q)) > 1e-3)


def test_a_coupling_leaving_one_coordinate_that_moves_no_inertia_is_refused():
    """Two hinges about one axis through one point, a massless link between them, coupled by a joints constraint:
    q1 + q2 = 0 keeps the massive link still, so the one coordinate left moves nothing (M reduced by the coupling
    is 0: refused, naming a joint); q1 − q2 = 0 turns it at twice the rate (M = 4·I): accepted."""
    xml = robot(("a", ""), ("b", ""), ("c", inertial(1)), joints=[hinge("j1", "a", "b"), hinge("j2", "b", "c")])
    couple = {"constraints": [{"type": "joints", "joints": ["j1", "j2"], "coefficients": [1, 1]}]}
    with pytest.raises(URDFError, match=r"joint 'j[12]': the mass matrix reduced by the joint couplings is singular"):
        load_robot(xml, couple)
    couple["constraints"][0]["coefficients"] = [1, -1]
    r = load_robot(xml, couple)
    assert r.nq == 2


def test_massless_link_on_a_prescribed_joint_is_accepted():
    """Kinematic (prescribed) joints move no dynamics: their links may be massless (marionette strings)."""
    xml = CHAIN.replace(
        '<joint name="joint3"',
        '<link name="hook"/><joint name="hook_joint" type="prismatic">'
        '<parent link="link3"/><child link="hook"/><axis xyz="0 0 1"/>'
        '<limit lower="-1" upper="1" effort="1" velocity="1"/></joint><joint name="joint3"',
    )
    with pytest.raises(URDFError, match="link 'hook'"):
        load_robot(xml)
    r = load_robot(xml, {"prescribed": ["hook_joint"]})
    assert r.prescribed == ("hook_joint",)


# --- system YAML ------------------------------------------------------------------------------------

YAML_CASES = {
    "unknown actuated joint": ({"actuated": ["knee"]}, r"actuated: joint 'knee' does not exist"),
    "unknown damping joint": ({"damping": {"knee": 0.1}}, r"damping: joint 'knee' does not exist"),
    "unknown prescribed joint": ({"prescribed": ["knee"]}, r"prescribed: joint 'knee' does not exist"),
    "fixed joint actuated": ("actuated: [tip_joint]", r"actuated: joint 'tip_joint' is a fixed joint"),
    "unknown constraint link": (
        {"constraints": [{"type": "coincident", "link_a": "hand", "point_a": [0, 0, 0]}]},
        r"constraints\[0\]: link 'hand' does not exist",
    ),
    "gravity two numbers": ("gravity: [0, -9.81]", r"gravity: expected a list of 3 numbers, got \[0, -9.81\]"),
    "gravity a string": ("gravity: down", r"gravity: expected a list of 3 numbers, got 'down'"),
    "gravity a bool": ("gravity: [0, 0, true]", r"gravity: expected finite numbers"),
    "effort_limit a string": (
        "actuated:\n  - {joint: shoulder, effort_limit: '5'}",
        r"actuated\[0\]\.effort_limit: expected a finite number, got '5'",
    ),
    "effort_limit negative": (
        "actuated:\n  - {joint: shoulder, effort_limit: -5}",
        r"actuated\[0\]\.effort_limit: must be positive",
    ),
    "actuated twice": ("actuated: [shoulder, shoulder]", r"actuated\[1\]: joint 'shoulder' is listed twice"),
    "actuated and prescribed": (
        "actuated: [elbow]\nprescribed: [elbow]",
        r"actuated: joint\(s\) \['elbow'\] are also prescribed",
    ),
    "damping negative": ("damping: {elbow: -0.1}", r"damping\.elbow: must be non-negative"),
    "unknown top-level key": ("gravty: [0, 0, -9.81]", r"unknown key\(s\) \['gravty'\]"),
    "floating_base not a bool": ("floating_base: 1", r"floating_base: expected true or false, got 1"),
    "unknown constraint type": (
        "constraints:\n  - {type: weld, link_a: tip}",
        r"constraints\[0\]\.type: must be one of "
        r"\['coincident', 'distance', 'joints', 'plane'\]",
    ),
    "constraint missing link": (
        "constraints:\n  - {type: coincident, point_a: [0, 0, 0]}",
        r"constraints\[0\]\.link_a: required",
    ),
    "constraint link a number": (
        "constraints:\n  - {type: coincident, link_a: 5, point_a: [0, 0, 0]}",
        r"constraints\[0\]\.link_a: expected a name \(string\), got 5",
    ),
    "constraint link empty": (
        "constraints:\n  - {type: coincident, link_a: '', point_a: [0, 0, 0]}",
        r"constraints\[0\]\.link_a: expected a name \(string\), got ''",
    ),
    "constraint missing distance": (
        "constraints:\n  - {type: distance, link_a: tip}",
        r"constraints\[0\]\.distance: required for a distance constraint",
    ),
    "constraint unknown field": (
        "constraints:\n  - {type: plane, link: tip, axes: [x]}",
        r"constraints\[0\]: unknown key\(s\) \['axes'\] for a plane constraint",
    ),
    "constraint bad axes": (
        "constraints:\n  - {type: coincident, link_a: tip, axes: [x, w]}",
        r"constraints\[0\]\.axes: expected distinct names from \[x, y, z\]",
    ),
    "constraint zero normal": (
        "constraints:\n  - {type: plane, link: tip, normal: [0, 0, 0]}",
        r"constraints\[0\]\.normal: must be non-zero",
    ),
    "constraints not a list": ("constraints: {type: plane}", r"constraints: expected a list, got dict"),
    "not a mapping": ("- shoulder\n- elbow\n", r"must be a mapping at top level, got list"),
    "scalar document": ("just some words", r"must be a mapping at top level, got str"),
    "invalid syntax": ("gravity: [0, 0, -9.81\nactuated: [", r"system YAML is not valid YAML"),
    "missing file": ("/nonexistent/system.yaml", r"system YAML file not found: '/nonexistent/system.yaml'"),
}


@pytest.mark.parametrize("case", sorted(YAML_CASES))
def test_bad_system_yaml_raises_specific_error(case):
    system, message = YAML_CASES[case]
    with pytest.raises(SystemConfigError, match=message):
        load_robot(bundled_urdf("double_pendulum"), system)


def test_a_plane_constraints_defaults_are_the_origin_the_z_normal_and_offset_zero():
    """``{type: plane, link: tip}``: the link's origin kept on the plane z = 0 (point, normal and offset as the
    system YAML's reference states), and each default replaced by what the YAML gives."""
    from vi_control.model.system_config import load_system_config

    (c,) = load_system_config({"constraints": [{"type": "plane", "link": "tip"}]}).constraints
    assert (c.link_a, c.point_a, c.normal, c.offset) == ("tip", (0.0, 0.0, 0.0), (0.0, 0.0, 1.0), 0.0)
    given = {"type": "plane", "link": "tip", "point": [0.1, 0.2, 0.3], "normal": [0, 2, 0], "offset": 0.5}
    (c,) = load_system_config({"constraints": [given]}).constraints
    assert (c.point_a, c.normal, c.offset) == ((0.1, 0.2, 0.3), (0.0, 1.0, 0.0), 0.5)


def test_yaml_error_names_the_file(tmp_path):
    path = tmp_path / "system.yaml"
    path.write_text("actuated:\n  - {joint: shoulder, effort_limit: lots}\n")
    with pytest.raises(SystemConfigError, match=rf"{path}: actuated\[0\]\.effort_limit"):
        load_robot(bundled_urdf("double_pendulum"), str(path))
    with pytest.raises(SystemConfigError, match=rf"{path}: actuated\[0\]\.effort_limit"):
        load_robot(bundled_urdf("double_pendulum"), path)


def test_good_yaml_overrides_urdf():
    r = load_robot(
        bundled_urdf("double_pendulum"),
        "actuated:\n  - {joint: elbow, effort_limit: 3.5}\n"
        "damping: {shoulder: 0.25}\nname: acro\ngravity: [0, 0, -1.62]",
    )
    assert r.name == "acro" and r.actuated == ("elbow",)
    assert r.effort_limits.tolist() == [3.5] and r.damping.tolist() == [0.25, 0.0]
    assert r.gravity.tolist() == [0, 0, -1.62] and r.pin_model.gravity.linear.tolist() == [0, 0, -1.62]
    assert load_robot(bundled_urdf("pendulum"), bundled_config("pendulum")).gravity[2] == -9.8


def test_a_deep_chain_loads_without_overflowing_the_parsers_stack(tmp_path):
    """Pinocchio's URDF parser recurses once per link: a 4000-link chain overflowed the main thread's stack (SIGSEGV,
    below the documented bound MAX_LINKS = 10 000). Parsed in a thread with its own large stack it loads; checked in a
    child process, where a crash would show as a signal, not take the test run down."""
    import subprocess
    import sys

    n = 4500
    links = "".join(
        f'<link name="l{i}"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" '
        f'ixz="0" iyz="0"/></inertial></link>'
        for i in range(n)
    )
    joints = "".join(
        f'<joint name="j{i}" type="revolute"><parent link="l{i}"/><child link="l{i + 1}"/>'
        f'<axis xyz="0 0 1"/><limit effort="1" velocity="1" lower="-1" upper="1"/></joint>'
        for i in range(n - 1)
    )
    urdf = tmp_path / "chain.urdf"
    urdf.write_text(f'<robot name="chain">{links}{joints}</robot>')
    out = subprocess.run(
        [sys.executable, "-c", f"import vi_control as vc; print(vc.load_robot({str(urdf)!r}).nq)"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])
    assert out.stdout.strip().splitlines()[-1] == str(n - 1)


def test_mass_scale_and_time_step_at_the_bounds_the_arithmetic_carries():
    """mass_scale in [1e-12, 1e6] (1e-300 overflowed in the planner's regularization), Δt in [1e-12, 1e3] s (1e300 was
    accepted with a warning): each bound accepted, the next double beyond it refused with the range named."""
    import warnings

    import vi_control as vc
    from vi_control.model.errors import ModelError, SystemConfigError
    from vi_control.model.limits import DT_BOUNDS, MASS_SCALE_RANGE

    lo, hi = MASS_SCALE_RANGE
    for ok in (lo, hi):
        assert vc.load_robot("pendulum", mass_scale=ok).mass_scale == ok
    for bad in (np.nextafter(lo, 0.0), np.nextafter(hi, np.inf), 1e-300):
        with pytest.raises((ModelError, SystemConfigError), match=r"mass_scale: must be a number in \[1e-12, 1e\+06\]"):
            vc.load_robot("pendulum", mass_scale=float(bad))
    robot = vc.load_robot("pendulum")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # (outside DT_RANGE: warned, not refused)
        for ok in DT_BOUNDS:
            assert vc.MidpointVI(robot, ok).dt == ok
    for bad in (np.nextafter(DT_BOUNDS[0], 0.0), np.nextafter(DT_BOUNDS[1], np.inf), 1e300):
        with pytest.raises(ValueError, match=r"outside \[1e-12, 1000\] s"):
            vc.MidpointVI(robot, float(bad))
