"""The MuJoCo plant's model (vi_control.ros.mujoco_model) is the robot the project's nodes load: MuJoCo's own URDF
compiler, checked against Pinocchio (the project's RobotModel) and against the pendulum's analytic period — no DDS."""

import numpy as np
import pinocchio as pin
import pytest

mujoco = pytest.importorskip("mujoco")

from vi_control.model import ModelSpec  # noqa: E402
from vi_control.ros.mujoco_model import TINY_INERTIA, mujoco_robot  # noqa: E402


def _symmetric(M: np.ndarray) -> np.ndarray:
    return np.triu(M) + np.triu(M, 1).T  # (crba fills the upper triangle)


@pytest.mark.parametrize("name", ["double_pendulum", "erd:panda", "pendulum"])
def test_mass_matrix_gravity_and_damping_equal_pinocchios(name):
    robot = ModelSpec.parse(name).load()
    mj = mujoco_robot(robot)
    rng = np.random.default_rng(11)
    lo, hi = (np.array([getattr(j, b) for j in robot.joints]) for b in ("lower", "upper"))
    lo, hi = np.where(np.isfinite(lo), lo, -np.pi), np.where(np.isfinite(hi), hi, np.pi)
    # (a point mass gets MuJoCo's TINY_INERTIA: the pendulum's M differs by that much, nothing else does)
    tol = 1e-10 if name != "pendulum" else 2 * TINY_INERTIA + 1e-14
    for _ in range(5):
        q = rng.uniform(lo, hi)
        v = rng.normal(0.0, 1.0, robot.nq)
        d = mj.data(q)
        M = _symmetric(pin.crba(robot.pin_model, robot.create_data(), q))
        g = pin.computeGeneralizedGravity(robot.pin_model, robot.create_data(), q)
        assert np.abs(mj.mass_matrix(d) - M).max() <= tol * max(1.0, np.abs(M).max())
        assert np.abs(d.qfrc_bias[mj.dadr] - g).max() <= 1e-10 * max(1.0, np.abs(g).max())
        d = mj.data(q, v)  # the passive force is the model's viscous damping −d·q̇ (panda: URDF 0.003)
        assert np.allclose(d.qfrc_passive[mj.dadr], -robot.damping * v, rtol=0, atol=1e-14)
    assert np.array_equal(mj.model.opt.gravity, robot.gravity)
    if name == "erd:panda":
        assert np.all(robot.damping == 0.003)


def test_pendulum_swings_with_the_analytic_period():
    """The bundled pendulum (1 kg at 1 m, g = 9.8) released at 0.1 rad: MuJoCo's RK4 at 1 ms swings with the period
    2π√(l/g)(1 + θ₀²/16 + 11θ₀⁴/3072) of the exact pendulum, to 1e-5 relative (the period is read from zero
    crossings interpolated between steps)."""
    robot = ModelSpec.parse("pendulum").load()
    mj = mujoco_robot(robot, dt=1e-3)
    m, d = mj.model, mj.data(np.array([0.1]))
    t, q = [0.0], [0.1]
    for _ in range(8000):
        mujoco.mj_step(m, d)
        t.append(d.time)
        q.append(d.qpos[0])
    t, q = np.array(t), np.array(q)
    i = np.nonzero((q[:-1] > 0) & (q[1:] <= 0))[0]  # downward zero crossings, one per period
    crossings = t[i] + q[i] / (q[i] - q[i + 1]) * (t[i + 1] - t[i])
    period = np.diff(crossings).mean()
    g, length, a = 9.8, 1.0, 0.1
    exact = 2 * np.pi * np.sqrt(length / g) * (1 + a**2 / 16 + 11 * a**4 / 3072)
    assert len(crossings) >= 3
    assert period == pytest.approx(exact, rel=1e-5)
    assert abs(period - 2 * np.pi * np.sqrt(length / g)) > 1e-4  # (the amplitude's correction is resolved)


def test_double_pendulum_free_fall_conserves_pinocchios_energy():
    """Chaotic free fall of the undamped double pendulum for 5 s: the energy Pinocchio computes from MuJoCo's states
    stays within 1e-6 of its start (RK4 at 1 ms), while the motion exchanges tens of percent of it."""
    robot = ModelSpec.parse("double_pendulum").load()
    mj = mujoco_robot(robot, dt=1e-3)
    m, d = mj.model, mj.data(np.array([2.0, -1.0]))
    data = robot.create_data()

    def energy() -> tuple[float, float]:
        q, v = d.qpos[mj.qadr], d.qvel[mj.dadr]
        kinetic = pin.computeKineticEnergy(robot.pin_model, data, q, v)
        return kinetic + pin.computePotentialEnergy(robot.pin_model, data, q), kinetic

    e0, _ = energy()
    es, ks = [], []
    for _ in range(5000):
        mujoco.mj_step(m, d)
        e, k = energy()
        es.append(e)
        ks.append(k)
    assert max(ks) > 5.0  # (it moved: kinetic energy of several J)
    assert np.abs(np.array(es) - e0).max() < 1e-6 * max(1.0, abs(e0)) + 1e-6


@pytest.mark.parametrize("name, why", [("fourbar", "holonomic constraints"), ("marionette", "prescribed joints")])
def test_models_the_plant_cannot_be_are_refused(name, why):
    with pytest.raises(ValueError, match=why):
        mujoco_robot(ModelSpec.parse(name).load())


def test_joint_limits_and_gravity_switch_off():
    robot = ModelSpec.parse("erd:panda").load()
    on, off = mujoco_robot(robot), mujoco_robot(robot, gravity=False, joint_limits=False)
    assert on.model.jnt_limited.all() and not off.model.jnt_limited.any()
    assert np.array_equal(off.model.opt.gravity, np.zeros(3))
    assert np.abs(off.data(np.full(7, 0.3)).qfrc_bias).max() == 0.0
