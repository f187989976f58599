"""Floating base "only when asked for": six virtual joints world -> URDF root (system YAML floating_base: true)."""

import numpy as np
import pinocchio as pin
import pytest

from vi_control.integrators.midpoint import MidpointVI
from vi_control.mechanics.symbolic import ContinuousDynamics
from vi_control.model import URDFError, load_robot
from vi_control.model.bundled import bundled_urdf

G = 9.81

# One rigid body with an off-centre CoM and a full (non-diagonal) inertia tensor.
BODY = """<robot name="brick"><link name="brick"><inertial><origin xyz="0.05 -0.02 0.1" rpy="0.3 0.2 0.1"/>
<mass value="2.5"/><inertia ixx="0.12" ixy="0.01" ixz="-0.02" iyy="0.2" iyz="0.015" izz="0.25"/></inertial>
</link></robot>"""
BASE = [
    "floating_base_x",
    "floating_base_y",
    "floating_base_z",
    "floating_base_rz",
    "floating_base_ry",
    "floating_base_rx",
]


@pytest.fixture(scope="module")
def brick():
    return load_robot(BODY, {"floating_base": True, "gravity": [0, 0, -G]})


def test_floating_base_adds_six_unactuated_virtual_joints(brick):
    assert load_robot(BODY).nq == 0  # only when asked for
    assert brick.nq == 6 and brick.joint_names == BASE
    assert brick.floating_base and brick.actuated == ()
    assert [j.type for j in brick.joints] == ["prismatic"] * 3 + ["continuous"] * 3
    assert brick.root_link == "world" and "brick" in brick.links
    # Same result from the load_robot keyword, and a different model hash from the fixed-base URDF.
    assert load_robot(BODY, {"gravity": [0, 0, -G]}, floating_base=True).hash == brick.hash
    assert load_robot(BODY).hash != brick.hash


def test_floating_base_dynamics_match_pinocchio(brick, rng):
    dyn = ContinuousDynamics(brick)
    m, d = brick.pin_model, brick.create_data()
    for _ in range(3):
        q, v = rng.uniform(-1.2, 1.2, 6), rng.normal(size=6)
        M = pin.crba(m, d, q)
        assert np.allclose(dyn.mass_matrix(q), np.triu(M) + np.triu(M, 1).T, rtol=0, atol=1e-12 * np.linalg.norm(M))
        assert np.allclose(dyn.gravity_torque(q), pin.computeGeneralizedGravity(m, d, q), rtol=0, atol=1e-12 * G * 2.5)
        assert dyn.kinetic_energy(q, v) == pytest.approx(pin.computeKineticEnergy(m, d, q, v), rel=1e-12)
        assert dyn.potential_energy(q) == pytest.approx(pin.computePotentialEnergy(m, d, q), rel=1e-12, abs=1e-12)


def test_virtual_joints_equal_pinocchio_free_flyer(brick, rng):
    """Independent model: Pinocchio's own free-flyer joint on the same URDF. The body's pose and twist
    from the virtual joints, fed to the free flyer, give the same kinetic and potential energy."""
    ff = pin.buildModelFromXML(BODY, pin.JointModelFreeFlyer())
    ff.gravity = brick.pin_model.gravity
    dff = ff.createData()
    m, d = brick.pin_model, brick.create_data()
    fid = m.getFrameId("brick", pin.FrameType.BODY)
    for _ in range(3):
        q, v = rng.uniform(-1.2, 1.2, 6), rng.normal(size=6)
        pin.forwardKinematics(m, d, q, v)
        pin.updateFramePlacements(m, d)
        pose = d.oMf[fid]
        twist = pin.getFrameVelocity(m, d, fid, pin.LOCAL)
        # ZYX Euler angles: R = Rz(rz) Ry(ry) Rx(rx).
        R = pin.rpy.rpyToMatrix(q[5], q[4], q[3])
        assert np.allclose(pose.rotation, R, atol=1e-12) and np.allclose(pose.translation, q[:3], atol=1e-12)
        q_ff = pin.SE3ToXYZQUAT(pose)
        T = pin.computeKineticEnergy(ff, dff, q_ff, twist.vector)
        assert ContinuousDynamics(brick).kinetic_energy(q, v) == pytest.approx(T, rel=1e-12)
        assert pin.computePotentialEnergy(m, d, q) == pytest.approx(
            pin.computePotentialEnergy(ff, dff, q_ff), rel=1e-12, abs=1e-12
        )


def test_free_body_falls_with_g_t2_over_2(brick):
    """MidpointVI on the floating brick: z(t) = z0 − g t²/2 and x(t) = x0 + vx t (the midpoint rule is exact
    for quadratic trajectories), while the attitude stays put (no torque about the CoM in uniform gravity)."""
    dt, n = 0.01, 50
    vi = MidpointVI(brick, dt)
    q0 = np.array([0.3, -0.2, 1.0, 0.4, -0.3, 0.2])
    qdot0 = np.array([0.5, 0.0, 0.0, 0.0, 0.0, 0.0])
    x = vi.state_from_velocity(q0, qdot0)
    for _ in range(n):
        x = vi.step(x, np.zeros(vi.nu))
    t = n * dt
    q = x[:6]
    assert q[2] == pytest.approx(1.0 - G * t**2 / 2, abs=1e-9)
    assert q[0] == pytest.approx(0.3 + 0.5 * t, abs=1e-9)
    assert np.allclose(q[[1, 3, 4, 5]], q0[[1, 3, 4, 5]], atol=1e-9)


def test_floating_base_on_an_articulated_robot():
    robot = load_robot(bundled_urdf("arm7"), {"floating_base": True})  # a flying arm: massive base_link
    assert robot.nq == 13 and robot.joint_names[:6] == BASE and robot.joint_names[6] == "a1"
    assert robot.actuated == tuple(f"a{i}" for i in range(1, 8))  # the base is unactuated unless listed
    thrust = load_robot(bundled_urdf("arm7"), {"floating_base": True, "actuated": ["floating_base_z", "a1"]})
    assert thrust.actuated == ("floating_base_z", "a1")


@pytest.mark.parametrize("name", ["pendulum", "double_pendulum"])
def test_floating_base_redundant_with_massless_root_is_rejected(name):
    """A floating base on a massless root followed by a hinge is redundant (the base pitch and the hinge
    turn the same bodies about the same axis); a single point mass cannot use three rotations."""
    with pytest.raises(URDFError, match="the mass matrix is singular"):
        load_robot(bundled_urdf(name), {"floating_base": True})


def test_floating_base_errors():
    with pytest.raises(URDFError, match="already has a link named 'world'"):
        load_robot(bundled_urdf("biped5"), {"floating_base": True})
    point = BODY.replace(
        'ixx="0.12" ixy="0.01" ixz="-0.02" iyy="0.2" iyz="0.015" izz="0.25"',
        'ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"',
    )
    # A point mass has no rotational inertia: the three Euler-angle joints move nothing.
    with pytest.raises(URDFError, match=r"joint 'floating_base_r[xyz]': the mass matrix is singular"):
        load_robot(point, {"floating_base": True})
