"""Mimic joints as holonomic couplings: the constrained midpoint VI is the reduced system.

A URDF ``<mimic joint="j2" multiplier="m" offset="o"/>`` on j3 becomes h(q) = q3 − m·q2 − o = 0 (Johnson2015
eq. 28). The constraint is linear, so the midpoint of two configurations on it lies on it and the constrained
discrete Lagrangian is the reduced one: the trajectory must converge at second order to the ODE of the
eliminated coordinates, M_r(q_r) q̈_r = −Pᵀ·rnea(q, q̇, 0), built here from Pinocchio's rnea/crba on the full
tree — an implementation independent of our symbolic tree and constraint code.
"""

import numpy as np
import pinocchio as pin
from test_integrator_forcing import assert_second_order, ode_positions

from vi_control.integrators.midpoint import MidpointVI
from vi_control.model import load_robot
from vi_control.model.generate import planar_chain_urdf

M_, O_ = -0.5, 0.2  # joint3 = -0.5 joint2 + 0.2


def _mimic_chain():
    xml = planar_chain_urdf(3).replace(
        '<joint name="joint3" type="continuous">',
        '<joint name="joint3" type="continuous"><mimic joint="joint2" multiplier="-0.5" offset="0.2"/>',
    )
    assert "<mimic" in xml
    return load_robot(xml, {"gravity": [0, 0, -9.81], "actuated": []})


def test_mimic_joint_follows_and_converges_to_the_reduced_dynamics():
    robot = _mimic_chain()
    (c,) = robot.constraints
    assert (c.type, c.joints, c.coefficients, c.offset) == ("joints", ("joint3", "joint2"), (1.0, -M_), O_)
    model, data = robot.pin_model, robot.create_data()
    P = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, M_]])
    off = np.array([0.0, 0.0, O_])

    def rhs(t, s):
        q, v = P @ s[:2] + off, P @ s[2:]
        M = pin.crba(model, data, q)
        M = np.triu(M) + np.triu(M, 1).T
        return np.concatenate([s[2:], np.linalg.solve(P.T @ M @ P, -P.T @ pin.rnea(model, data, q, v, np.zeros(3)))])

    qr0, vr0, T = np.array([0.7, -0.4]), np.array([0.0, 1.0]), 1.5
    errors = []
    for n in (150, 300, 600):
        vi = MidpointVI(robot, T / n)
        X, lam = vi.simulate(vi.state_from_velocity(P @ qr0 + off, P @ vr0), steps=n)
        h = X[:, 2] - M_ * X[:, 1] - O_
        assert np.abs(h).max() < 1e-10  # the gear holds at every step
        assert np.abs(lam).max() > 0  # and it carries a force
        errors.append(np.abs(X[:, :2] - ode_positions(rhs, np.concatenate([qr0, vr0]), T, n, 2)).max())
    assert_second_order(errors, 5e-3)


def test_mimic_joint_is_not_actuated_by_default_and_the_yaml_can_override():
    xml = planar_chain_urdf(3).replace(
        '<joint name="joint3" type="continuous">', '<joint name="joint3" type="continuous"><mimic joint="joint2"/>'
    )
    assert load_robot(xml).actuated == ("joint1", "joint2")
    robot = load_robot(
        xml, {"constraints": [{"type": "joints", "joints": ["joint3", "joint1"], "coefficients": [1.0, -2.0]}]}
    )
    (c,) = robot.constraints  # the YAML's coupling replaces the URDF's
    assert (c.joints, c.coefficients, c.offset) == (("joint3", "joint1"), (1.0, -2.0), 0.0)
