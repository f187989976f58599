"""Nonholonomic constraints in the system YAML: schema errors naming the key, unknown links and joints,
rank-deficient A(q) rejected at load, the symbolic A(q) against Pinocchio's frame Jacobians and against the
papers' closed forms, and the joint-coupling holonomic constraint."""

import numpy as np
import pytest
from scipy.linalg import subspace_angles

from vi_control.mechanics.lagrange_dalembert import CLOSED_FORM
from vi_control.mechanics.symbolic import ContinuousDynamics
from vi_control.model import SystemConfigError, load_robot
from vi_control.model.bundled import bundled_urdf, load_bundled
from vi_control.model.constraint_rows import holonomic_rows, nonholonomic_rows

DIFFDRIVE = bundled_urdf("diffdrive")
WHEEL = {"type": "rolling", "link": "left_wheel", "radius": 0.05, "axis": [0, 1, 0]}

CASES = {
    "not a list": ({"nonholonomic": {"type": "rolling"}}, r"nonholonomic: expected a list, got dict"),
    "unknown type": (
        {"nonholonomic": [{"type": "skid", "link": "base_link"}]},
        r"nonholonomic\[0\]\.type: must be one of \['knife_edge', 'rolling'\], got 'skid'",
    ),
    "unknown key": ({"nonholonomic": [dict(WHEEL, mass=1)]}, r"nonholonomic\[0\]: unknown key\(s\) \['mass'\]"),
    "missing link": ({"nonholonomic": [{"type": "knife_edge"}]}, r"nonholonomic\[0\]\.link: required"),
    "unknown link": ({"nonholonomic": [dict(WHEEL, link="tyre")]}, r"nonholonomic\[0\]: link 'tyre' does not exist"),
    "missing radius": (
        {"nonholonomic": [{"type": "rolling", "link": "left_wheel"}]},
        r"nonholonomic\[0\]\.radius: required",
    ),
    "negative radius": (
        {"nonholonomic": [dict(WHEEL, radius=-0.1)]},
        r"nonholonomic\[0\]\.radius: must be non-negative",
    ),
    "zero axis": ({"nonholonomic": [dict(WHEEL, axis=[0, 0, 0])]}, r"nonholonomic\[0\]\.axis: must be non-zero"),
    "bad component": (
        {"nonholonomic": [dict(WHEEL, components=["sideways"])]},
        r"nonholonomic\[0\]\.components: expected distinct names",
    ),
    "bad direction": (
        {"nonholonomic": [{"type": "knife_edge", "link": "base_link", "direction": [1, 0]}]},
        r"nonholonomic\[0\]\.direction: expected a list of 3 numbers",
    ),
    "rank-deficient (both wheels' lateral)": (
        {"nonholonomic": [WHEEL, dict(WHEEL, link="right_wheel")]},
        r"nonholonomic\[1\] \(component lateral\): its row of A\(q\) is a combination of the constraint rows "
        r"before it .*rank-deficient",
    ),
    "rank-deficient (same knife edge twice)": (
        {"nonholonomic": [{"type": "knife_edge", "link": "base_link"}, {"type": "knife_edge", "link": "base_link"}]},
        r"nonholonomic\[1\]: its row of A\(q\) is a combination",
    ),
    "joints: unknown joint": (
        {"constraints": [{"type": "joints", "joints": ["left_wheel_joint", "rear"], "coefficients": [1, -1]}]},
        r"constraints\[0\]: joint 'rear' does not exist",
    ),
    "joints: fixed joint": (
        {"constraints": [{"type": "joints", "joints": ["caster_joint"], "coefficients": [1]}]},
        r"constraints\[0\]: joint 'caster_joint' is a fixed joint",
    ),
    "joints: coefficient count": (
        {"constraints": [{"type": "joints", "joints": ["left_wheel_joint"], "coefficients": [1, 2]}]},
        r"constraints\[0\]\.coefficients: expected a list of 1 numbers",
    ),
    "joints: all zero": (
        {"constraints": [{"type": "joints", "joints": ["left_wheel_joint"], "coefficients": [0]}]},
        r"constraints\[0\]\.coefficients: must not all be zero",
    ),
    "holonomic makes it rank-deficient": (
        {
            "constraints": [
                {"type": "joints", "joints": ["left_wheel_joint", "right_wheel_joint"], "coefficients": [1, -1]}
            ],
            "nonholonomic": [
                WHEEL,
                dict(WHEEL, link="right_wheel", components=["longitudinal"]),
                {"type": "knife_edge", "link": "base_link", "point": [0.1, 0, 0]},
            ],
        },
        r"nonholonomic\[2\]: its row of A\(q\) is a combination",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_nonholonomic_yaml_names_the_key(case):
    system, message = CASES[case]
    with pytest.raises(SystemConfigError, match=message):
        load_robot(DIFFDRIVE, system)


@pytest.mark.parametrize("name", ["sleigh", "snakeboard", "rolling_disk", "diffdrive"])
def test_symbolic_rows_equal_pinocchio_and_span_the_papers(name):
    """A(q) from the CasADi tree = Pinocchio's frame Jacobians to 1e-14; [Dh; A] spans the same rows as the
    papers' closed forms (Kobilarov2010, §6.1, eq. 34; rolling conditions) at random configurations."""
    robot = load_bundled(name)
    dyn = ContinuousDynamics(robot)
    rows, _ = CLOSED_FORM[name]
    rng = np.random.default_rng(7)
    for _ in range(5):
        q = rng.uniform(-3.0, 3.0, robot.nq)
        if name == "snakeboard":
            q[4] = q[3]  # on the holonomic constraint φ = φ_front
        A = dyn.nonholonomic_matrix(q)
        assert np.abs(A - nonholonomic_rows(robot.pin_model, robot.nonholonomic, q)).max() < 1e-14
        C = np.vstack([dyn.constraint_jacobian(q), A])
        assert (
            np.abs(
                C[: robot.n_constraints] - holonomic_rows(robot.pin_model, robot.joint_names, robot.constraints, q)
            ).max(initial=0)
            < 1e-14
        )
        assert np.degrees(subspace_angles(C.T, rows(q).T)).max() < 1e-9


def test_yaml_counts_and_hash():
    dd = load_bundled("diffdrive")
    assert dd.n_nonholonomic == 3 and dd.n_constraints == 0 and dd.actuated == ("left_wheel_joint", "right_wheel_joint")
    sb = load_bundled("snakeboard")
    assert sb.n_nonholonomic == 2 and sb.n_constraints == 1
    other = load_robot(
        DIFFDRIVE, {"nonholonomic": [dict(WHEEL, components=["longitudinal"]), dict(WHEEL, link="right_wheel")]}
    )
    assert other.n_nonholonomic == 3
    assert other.hash != dd.hash  # the constraints are part of the model's identity (saved plans)
