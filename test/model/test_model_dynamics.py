"""Continuous dynamics of every bundled model and of example-robot-data robots against Pinocchio's algorithms.

DESIGN principle 2: M(q), gravity torque, energies, frame placements and constraints from the symbolic tree
(ContinuousDynamics) must equal Pinocchio's crba / computeGeneralizedGravity / computeKineticEnergy /
computePotentialEnergy / framesForwardKinematics / computeFrameJacobian to round-off (1e-12 relative).
"""

import numpy as np
import pinocchio as pin
import pytest

from vi_control.mechanics.symbolic import ContinuousDynamics
from vi_control.model import load_robot
from vi_control.model.bundled import (
    BUNDLED,
    bundled_models,
    example_robot_urdf,
    fourbar_initial_configuration,
    load_bundled,
)

RTOL = 1e-12
ERD = ["panda", "ur5", "talos_arm", "double_pendulum"]
MODELS = [f"bundled:{n}" for n in BUNDLED] + [f"erd:{n}" for n in ERD]


def close(a, b, rtol: float = RTOL) -> bool:
    """|a - b| <= rtol * max(|b|, 1): relative to the size of the quantity (absolute near zero)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.max(np.abs(a - b), initial=0.0)) <= rtol * max(float(np.linalg.norm(b)), 1.0)


@pytest.fixture(scope="module", params=MODELS)
def model(request):
    kind, name = request.param.split(":")
    robot = load_bundled(name) if kind == "bundled" else load_robot(example_robot_urdf(name))
    return robot, ContinuousDynamics(robot)


def random_q(robot, rng, n: int = 3):
    # Finite joint limits bound the sample; unbounded (continuous) joints sample several turns.
    lo = np.array([max(j.lower, -7.0) for j in robot.joints])
    hi = np.array([min(j.upper, 7.0) for j in robot.joints])
    return [rng.uniform(lo, hi) for _ in range(n)]


def test_mass_matrix_and_gravity_match_pinocchio(model, rng):
    robot, dyn = model
    m, d = robot.pin_model, robot.create_data()
    for q in random_q(robot, rng):
        M = pin.crba(m, d, q)
        M = np.triu(M) + np.triu(M, 1).T  # crba fills the upper triangle only
        assert close(dyn.mass_matrix(q), M)
        assert close(dyn.gravity_torque(q), pin.computeGeneralizedGravity(m, d, q))
        assert np.all(np.linalg.eigvalsh(M) > 0)


def test_energies_match_pinocchio(model, rng):
    robot, dyn = model
    m, d = robot.pin_model, robot.create_data()
    for q in random_q(robot, rng):
        v = rng.normal(size=robot.nq)
        T = pin.computeKineticEnergy(m, d, q, v)
        V = pin.computePotentialEnergy(m, d, q)
        assert close(dyn.kinetic_energy(q, v), T)
        assert close(dyn.potential_energy(q), V)
        # T = ½ vᵀ M v ties the two checks together.
        assert close(dyn.kinetic_energy(q, v), 0.5 * v @ dyn.mass_matrix(q) @ v)


def test_every_frame_placement_matches_pinocchio(model, rng):
    robot, dyn = model
    m, d = robot.pin_model, robot.create_data()
    names = list(dict.fromkeys(f.name for f in m.frames))  # getFrameId resolves a repeated name to its first
    assert len(names) >= robot.nq + 1
    for q in random_q(robot, rng, 2):
        pin.framesForwardKinematics(m, d, q)
        for name in names:
            R, p = dyn.frame_placement(name, q)
            ref = d.oMf[m.getFrameId(name)]
            assert close(R, ref.rotation), name
            assert close(p, ref.translation), name


def _pin_point(m, d, link: str, point) -> tuple[np.ndarray, np.ndarray]:
    """World position and position Jacobian of a point fixed in a link, from Pinocchio alone."""
    point = np.asarray(point, float)
    if link == "world":
        return point, np.zeros((3, m.nv))
    fid = m.getFrameId(link, pin.FrameType.BODY)
    oMf = d.oMf[fid]
    J = pin.getFrameJacobian(m, d, fid, pin.LOCAL_WORLD_ALIGNED)
    r = oMf.rotation @ point
    # Velocity of the point = v_frame + ω × r = J_v q̇ − [r]× J_ω q̇.
    return oMf.translation + r, J[:3] - pin.skew(r) @ J[3:]


def _pin_constraint(robot, q) -> tuple[np.ndarray, np.ndarray]:
    """h(q) and Dh(q) rebuilt from Pinocchio's point positions and frame Jacobians (system YAML semantics)."""
    m, d = robot.pin_model, robot.create_data()
    pin.computeJointJacobians(m, d, q)
    pin.framesForwardKinematics(m, d, q)
    h, J = [], []
    for c in robot.constraints:
        pa, Ja = _pin_point(m, d, c.link_a, c.point_a)
        if c.type == "plane":
            n = np.asarray(c.normal)
            h.append([n @ pa - c.offset])
            J.append(n[None] @ Ja)
            continue
        pb, Jb = _pin_point(m, d, c.link_b, c.point_b)
        if c.type == "coincident":
            h.append((pa - pb)[list(c.axes)])
            J.append((Ja - Jb)[list(c.axes)])
        else:  # distance, squared: h = ½(|pa − pb|² − d²)
            h.append([0.5 * ((pa - pb) @ (pa - pb) - c.distance**2)])
            J.append((pa - pb)[None] @ (Ja - Jb))
    return np.concatenate(h), np.vstack(J)


# Every constraint type on a 3-D arm: plane, coincident (all axes), distance between two moving links.
ARM7_CONSTRAINTS = {
    "constraints": [
        {"type": "plane", "link": "flange", "point": [0.0, 0.05, 0.1], "normal": [0.3, -0.2, 1.0], "offset": 0.4},
        {
            "type": "coincident",
            "link_a": "link7",
            "point_a": [0.01, 0.0, 0.05],
            "link_b": "world",
            "point_b": [0.5, 0.1, 0.6],
        },
        {
            "type": "distance",
            "link_a": "link3",
            "point_a": [0.0, 0.05, 0.1],
            "link_b": "link6",
            "point_b": [0.02, 0.0, 0.0],
            "distance": 0.5,
        },
    ]
}


@pytest.mark.parametrize("name", ["fourbar", "cartesian_pendulum", "marionette", "arm7+constraints"])
def test_constraints_match_pinocchio_points(name, rng):
    robot = (
        load_robot(bundled_models()["arm7"][0], ARM7_CONSTRAINTS) if name == "arm7+constraints" else load_bundled(name)
    )
    assert robot.constraints
    dyn = ContinuousDynamics(robot)
    for q in random_q(robot, rng, 3):
        h, J = _pin_constraint(robot, q)
        assert close(dyn.constraint(q), h)
        assert close(dyn.constraint_jacobian(q), J)


@pytest.mark.parametrize("crank", [0.0, 1.1, -2.5])
def test_fourbar_loop_closes_at_initial_configuration(crank):
    robot = load_bundled("fourbar")
    dyn = ContinuousDynamics(robot)
    m, d = robot.pin_model, robot.create_data()
    q = fourbar_initial_configuration(crank)
    h, J = _pin_constraint(robot, q)
    assert np.allclose(h, 0.0, atol=1e-12) and close(dyn.constraint_jacobian(q), J)
    # The frame welded at the rocker tip sits on the ground pivot; the loop Jacobian has full rank 2.
    pin.framesForwardKinematics(m, d, q)
    assert np.allclose(d.oMf[m.getFrameId("rocker_tip")].translation, [1.0, 0.0, 0.0], atol=1e-12)
    J_tip = pin.computeFrameJacobian(m, d, q, m.getFrameId("rocker_tip"), pin.LOCAL_WORLD_ALIGNED)
    assert close(dyn.constraint_jacobian(q), J_tip[[0, 2]])  # translation rows x, z of that frame
    assert np.linalg.matrix_rank(J) == 2


def test_fourbar_is_grashof_crank_rocker():
    # The crank turns a full revolution: the loop closes at every crank angle.
    dyn = ContinuousDynamics(load_bundled("fourbar"))
    for crank in np.linspace(-np.pi, np.pi, 25):
        for up in (True, False):
            q = fourbar_initial_configuration(crank, elbow_up=up)
            assert np.allclose(dyn.constraint(q), 0.0, atol=1e-12)
            assert q[0] == pytest.approx((crank + np.pi) % (2 * np.pi) - np.pi)


@pytest.mark.parametrize("name", ["double_pendulum", "cartpole", "fourbar"])
def test_continuous_rewrite_matches_pinocchio_unit_complex_joints(name):
    """Rewriting continuous joints as unbounded revolute (one angle) leaves the dynamics unchanged:
    compare with Pinocchio's own model of the original URDF, where a continuous joint is (cos θ, sin θ)."""
    robot = load_bundled(name)
    ref = pin.buildModelFromXML(robot.urdf_xml)
    ref.gravity = robot.pin_model.gravity
    assert ref.nq > ref.nv == robot.nq
    dyn = ContinuousDynamics(robot)
    rng = np.random.default_rng(3)
    for _ in range(3):
        q = rng.uniform(-3, 3, robot.nq)
        q_ref = []
        for j, info in enumerate(robot.joints):
            q_ref += [np.cos(q[j]), np.sin(q[j])] if info.continuous else [q[j]]
        dr = ref.createData()
        M = pin.crba(ref, dr, np.array(q_ref))
        assert close(dyn.mass_matrix(q), np.triu(M) + np.triu(M, 1).T)
        assert close(dyn.gravity_torque(q), pin.computeGeneralizedGravity(ref, dr, np.array(q_ref)))
