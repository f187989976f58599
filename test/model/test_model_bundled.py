"""Bundled models: registry, generated files, paper parameters and textbook equations of motion."""

from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from vi_control.mechanics.symbolic import ContinuousDynamics
from vi_control.model.bundled import BUNDLED, FOURBAR_LENGTHS, GENERATED, bundled_models, load_bundled
from vi_control.model.generate import planar_chain_urdf

G = 9.81


def test_registry_points_at_existing_files():
    models = bundled_models()
    assert (
        set(models)
        == set(BUNDLED)
        >= {"double_pendulum", "acrobot", "cartpole", "chain10", "biped5", "arm7", "fourbar"}
    )
    for name, (urdf, cfg) in models.items():
        assert Path(urdf).is_file(), name
        assert cfg is None or Path(cfg).is_file(), name
    assert models["acrobot"][0] == models["double_pendulum"][0]


@pytest.mark.parametrize("name", sorted(GENERATED))
def test_generated_urdf_file_equals_generator_output(name):
    urdf, _ = bundled_models()[name]
    assert Path(urdf).read_text() == planar_chain_urdf(**GENERATED[name]) + "\n"


def test_chain10_shape():
    robot = load_bundled("chain10")
    assert robot.nq == 10 and all(j.continuous for j in robot.joints) and len(robot.actuated) == 10


def test_acrobot_matches_textbook_double_pendulum(rng):
    """Spong's acrobot equations with uniform rods (l = 1, m = 1, l_c = ½, I_c = m(3r² + l²)/12, r = 0.02)."""
    acro, both = load_bundled("acrobot"), load_bundled("double_pendulum")
    assert acro.actuated == ("elbow",) and both.actuated == ("shoulder", "elbow")
    assert acro.joint_names == both.joint_names == ["shoulder", "elbow"]
    dyn = ContinuousDynamics(acro)
    m, l, lc, Ic = 1.0, 1.0, 0.5, (3 * 0.02**2 + 1.0) / 12
    for q in rng.uniform(-4, 4, (4, 2)):
        c2 = np.cos(q[1])
        M11 = 2 * Ic + m * lc**2 + m * (l**2 + lc**2 + 2 * l * lc * c2)
        M12 = Ic + m * (lc**2 + l * lc * c2)
        M22 = Ic + m * lc**2
        assert np.allclose(dyn.mass_matrix(q), [[M11, M12], [M12, M22]], rtol=0, atol=1e-13)
        # V = −m g l_c cos q1 − m g (l cos q1 + l_c cos(q1 + q2)), θ = 0 hanging down.
        g1 = m * G * lc * np.sin(q[0]) + m * G * (l * np.sin(q[0]) + lc * np.sin(q[0] + q[1]))
        g2 = m * G * lc * np.sin(q[0] + q[1])
        assert np.allclose(dyn.gravity_torque(q), [g1, g2], rtol=0, atol=1e-13)


def test_cartpole_matches_textbook_equations(rng):
    """MorenoMartin2022, ref. [11] cart-pole: cart m1 = 1, point-mass pole m2 = 0.3 at l = 0.5; tip at
    (x − l sin θ, −l cos θ) gives M = [[m1 + m2, −m2 l cos θ], [−m2 l cos θ, m2 l²]], ∂V/∂θ = m2 g l sin θ."""
    robot = load_bundled("cartpole")
    assert robot.joint_names == ["slider", "hinge"] and robot.actuated == ("slider",)
    assert robot.effort_limits.tolist() == [20.0]
    slider = robot.joints[0]
    assert (slider.type, slider.lower, slider.upper) == ("prismatic", -2.0, 2.0)
    assert robot.joints[1].continuous and robot.gravity.tolist() == [0, 0, -G]
    dyn = ContinuousDynamics(robot)
    m1, m2, l = 1.0, 0.3, 0.5
    for q in rng.uniform(-2, 2, (4, 2)):
        c, s = np.cos(q[1]), np.sin(q[1])
        assert np.allclose(dyn.mass_matrix(q), [[m1 + m2, -m2 * l * c], [-m2 * l * c, m2 * l**2]], atol=1e-14)
        assert np.allclose(dyn.gravity_torque(q), [0.0, m2 * G * l * s], atol=1e-14)
    _, tip = dyn.frame_placement("pole_tip", np.array([0.0, 0.0]))
    assert np.allclose(tip, [0, 0, -l])  # hangs down at q = 0
    _, tip = dyn.frame_placement("pole_tip", np.array([0.3, np.pi]))
    assert np.allclose(tip, [0.3, 0, l])  # inverted at θ = π


def test_biped5_has_rabbit_parameters():
    """MorenoMartin2022, §V-C uses ref. [11]'s five-link biped with RABBIT parameters: tibia 3.2 kg / 0.4 m / CoM 0.128
    m / I 0.93; femur 6.8 / 0.4 / 0.163 / 1.08; torso 20 / 0.625 / 0.2 / 2.22 (I about the CoM, pitch axis)."""
    robot = load_bundled("biped5")
    m = robot.pin_model
    assert robot.joint_names == ["base_x", "base_z", "base_pitch", "left_hip", "left_knee", "right_hip", "right_knee"]
    assert robot.actuated == ("left_hip", "left_knee", "right_hip", "right_knee")
    assert [j.type for j in robot.joints[:3]] == ["prismatic", "prismatic", "revolute"]
    expect = {
        "base_pitch": (20.0, [0, 0, 0.2], 2.22),
        "left_hip": (6.8, [0, 0, -0.163], 1.08),
        "right_hip": (6.8, [0, 0, -0.163], 1.08),
        "left_knee": (3.2, [0, 0, -0.128], 0.93),
        "right_knee": (3.2, [0, 0, -0.128], 0.93),
    }
    for joint, (mass, com, Iyy) in expect.items():
        inertia = m.inertias[m.getJointId(joint)]
        assert inertia.mass == pytest.approx(mass)
        assert np.allclose(inertia.lever, com)
        assert inertia.inertia[1, 1] == pytest.approx(Iyy)  # pin stores the inertia about the CoM
    assert pin.computeTotalMass(m) == pytest.approx(20 + 2 * 6.8 + 2 * 3.2)
    # Standing: base_z = 0.8 puts both feet on the ground and the torso top 0.625 m above the hips.
    q = np.zeros(robot.nq)
    q[1] = 0.8
    d = robot.create_data()
    pin.framesForwardKinematics(m, d, q)
    for foot in ("left_foot", "right_foot"):
        assert d.oMf[m.getFrameId(foot)].translation[[0, 2]] == pytest.approx([0.0, 0.0], abs=1e-15)
    assert d.oMf[m.getFrameId("torso_top")].translation[2] == pytest.approx(0.8 + 0.625)
    # Planar: every hinge is about y.
    assert all(np.allclose(j.axis, [0, 1, 0]) for j in robot.joints[2:])


def test_arm7_is_fully_actuated_with_damping():
    robot = load_bundled("arm7")
    assert robot.nq == 7 and robot.actuated == tuple(f"a{i}" for i in range(1, 8))
    assert robot.effort_limits.tolist() == [176, 176, 110, 110, 110, 40, 40]
    assert robot.damping.tolist() == [0.5, 0.5, 0.3, 0.3, 0.2, 0.1, 0.1]
    assert all(j.type == "revolute" and -3.1 < j.lower < 0 < j.upper < 3.1 for j in robot.joints)
    assert pin.computeTotalMass(robot.pin_model) == pytest.approx(17.5)
    # iiwa-like: shoulder 0.36 m, two 0.40 m links, 0.126 m wrist to flange: 1.286 m stretched out.
    d = robot.create_data()
    pin.framesForwardKinematics(robot.pin_model, d, np.zeros(7))
    assert d.oMf[robot.pin_model.getFrameId("flange")].translation == pytest.approx([0, 0, 1.286])


def test_fourbar_lengths_satisfy_grashof():
    robot = load_bundled("fourbar")
    m = robot.pin_model
    (c,) = robot.constraints
    crank = np.linalg.norm(m.jointPlacements[m.getJointId("coupler_joint")].translation)
    coupler = np.linalg.norm(m.jointPlacements[m.getJointId("rocker_joint")].translation)
    rocker, ground = np.linalg.norm(c.point_a), np.linalg.norm(c.point_b)
    assert (crank, coupler, rocker, ground) == pytest.approx(FOURBAR_LENGTHS)
    s, *mid, l_ = sorted(FOURBAR_LENGTHS)
    assert s + l_ <= sum(mid) and s == crank  # Grashof, shortest link is the crank: it turns fully
    assert c.axes == (0, 2) and c.link_b == "world" and robot.actuated == ("crank_joint",)
