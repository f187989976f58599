"""The robot model as a MuJoCo model: the independent plant of ``mujoco_plant`` (no rclpy here).

The URDF the other nodes load (``RobotModel.urdf_xml``: after the project's inertia repairs and locked joints) goes
through MuJoCo's own URDF compiler — not through the project's parser — so the plant is a second implementation of
the same physical system: visual/collision elements are stripped (MuJoCo cannot load meshes offline and needs none
without contacts), a body whose URDF inertia vanishes (a point mass) gets ``TINY_INERTIA`` (MuJoCo refuses a moving
body without rotational inertia; the mass matrix changes by that much), and what the project's model takes from its
system YAML is set explicitly: gravity, each joint's viscous damping (``RobotModel.damping``: the URDF
``<dynamics damping>`` unless the YAML overrides it). Coulomb friction, armature and contacts are zero, as in the
project's mechanics (which ignore URDF friction). Joint position limits stay MuJoCo's (soft) limit constraints
unless ``joint_limits`` is false.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..model.robot import RobotModel

TINY_INERTIA = 1e-12  # [kg·m²] added to the principal moments of a body whose URDF inertia vanishes
INTEGRATORS = ("RK4", "implicitfast", "Euler")


def strip_geometry(urdf: str) -> str:
    """URDF text without ``<visual>``/``<collision>`` elements (nor the XML declaration MuJoCo's parser refuses in a
    string): MuJoCo cannot load the meshes offline and needs none to step the dynamics."""
    xml = re.sub(r"<\?xml[^>]*\?>", "", urdf)
    xml = re.sub(r"<(visual|collision)\b.*?</\1>", "", xml, flags=re.S)
    return re.sub(r"<(visual|collision)\b[^>]*/>", "", xml)


@dataclass
class MujocoRobot:
    """A compiled MuJoCo model of a RobotModel and the maps between their orders: ``qpos[qadr[i]]`` and
    ``qvel[dadr[i]]`` are joint i of ``robot.joint_names``; ``act_dof[j]`` is the dof of ``robot.actuated[j]``."""

    model: object  # mujoco.MjModel
    qadr: np.ndarray
    dadr: np.ndarray
    act_dof: np.ndarray

    def data(self, q: np.ndarray | None = None, v: np.ndarray | None = None):
        """A fresh ``mujoco.MjData`` at configuration q and velocity v (the model's joint order; default zeros),
        its derived quantities (mass matrix, bias forces) computed."""
        import mujoco

        d = mujoco.MjData(self.model)
        if q is not None:
            d.qpos[self.qadr] = q
        if v is not None:
            d.qvel[self.dadr] = v
        mujoco.mj_forward(self.model, d)
        return d

    def mass_matrix(self, d) -> np.ndarray:
        """M(q) of ``d``'s configuration in the robot's joint order."""
        import mujoco

        full = np.zeros((self.model.nv, self.model.nv))
        mujoco.mj_fullM(self.model, d, full)
        return full[np.ix_(self.dadr, self.dadr)]


def mujoco_robot(
    robot: RobotModel, dt: float = 1e-3, integrator: str = "RK4", gravity: bool = True, joint_limits: bool = True
) -> MujocoRobot:
    """Compile ``robot``'s URDF with MuJoCo (module docstring): time step ``dt`` [s], ``integrator`` one of
    INTEGRATORS, the robot's gravity (or none), its URDF position limits as joint-limit constraints (or none).
    ValueError for a model the plant cannot be: a floating base, closed loops (constraints), nonholonomic or
    prescribed joints, or a joint MuJoCo did not make a single-dof hinge or slide."""
    import mujoco

    why = [
        what
        for what, bad in (
            ("a floating base", robot.floating_base),
            ("holonomic constraints", robot.constraints),
            ("nonholonomic constraints", robot.nonholonomic),
            ("prescribed joints", robot.prescribed),
        )
        if bad
    ]
    if why:
        raise ValueError(
            f"{robot.name}: the MuJoCo plant takes a tree of actuated or passive joints, not {' and '.join(why)}"
        )
    if integrator not in INTEGRATORS:
        raise ValueError(f"integrator {integrator!r} not one of {list(INTEGRATORS)}")
    spec = mujoco.MjSpec.from_string(strip_geometry(robot.urdf_xml))
    for body in spec.bodies[1:]:  # (0: the world)
        if body.mass <= 0.0:
            continue
        full = np.asarray(body.fullinertia, float)
        if np.isfinite(full[0]):  # a full URDF inertia: its eigenvalues
            moments = np.linalg.eigvalsh(
                np.array([[full[0], full[3], full[4]], [full[3], full[1], full[5]], [full[4], full[5], full[2]]])
            )
            if moments.min() < TINY_INERTIA:
                body.fullinertia = full + np.r_[np.full(3, TINY_INERTIA), np.zeros(3)]
        elif np.min(body.inertia) < TINY_INERTIA:
            body.inertia = np.asarray(body.inertia, float) + TINY_INERTIA
    for joint in spec.joints:
        if not joint_limits:
            joint.limited = mujoco.mjtLimited.mjLIMITED_FALSE
    m = spec.compile()
    m.opt.timestep = float(dt)
    m.opt.integrator = {
        "RK4": mujoco.mjtIntegrator.mjINT_RK4,
        "Euler": mujoco.mjtIntegrator.mjINT_EULER,
        "implicitfast": mujoco.mjtIntegrator.mjINT_IMPLICITFAST,
    }[integrator]
    m.opt.gravity[:] = robot.gravity if gravity else 0.0
    hinge_or_slide = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))
    qadr, dadr = [], []
    for name in robot.joint_names:
        j = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, name)
        if j < 0 or int(m.jnt_type[j]) not in hinge_or_slide:
            raise ValueError(f"{robot.name}: joint {name!r} is not a hinge or slide joint in MuJoCo's model")
        qadr.append(int(m.jnt_qposadr[j]))
        dadr.append(int(m.jnt_dofadr[j]))
    if m.nv != robot.nq:
        raise ValueError(f"{robot.name}: MuJoCo's model has {m.nv} dofs, the robot {robot.nq}")
    dadr_arr = np.array(dadr, int)
    m.dof_damping[dadr_arr] = robot.damping
    m.dof_frictionloss[:] = 0.0
    m.dof_armature[:] = 0.0
    act = np.array([dadr[robot.joint_index(n)] for n in robot.actuated], int)
    return MujocoRobot(m, np.array(qadr, int), dadr_arr, act)
