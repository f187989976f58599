"""Symbolic (CasADi SX) kinematic tree: forward kinematics, T(q, v), V(q), constraints h(q) and A(q).

One forward recursion over the Pinocchio model's joints (placements and inertias are read
from Pinocchio, so fixed joints are already merged). Spatial velocities are propagated in body
frames; every later derivative (M = ∂²T/∂v², D₁L_d, D₂L_d and their derivatives, Johnson2015
§IV–V) is exact automatic differentiation of these expressions.
"""

from __future__ import annotations

from dataclasses import dataclass

import casadi as ca
import numpy as np
import pinocchio as pin

from ..model.robot import RobotModel
from .graph_lock import OwnsGraphs, builds_graph


def _skew(a: np.ndarray) -> np.ndarray:
    return np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])


def _rodrigues(axis: np.ndarray, angle: ca.SX) -> ca.SX:
    k = ca.DM(_skew(axis))
    return ca.DM.eye(3) + ca.sin(angle) * k + (1 - ca.cos(angle)) * (k @ k)


@dataclass
class SymbolicTree(OwnsGraphs):
    """Symbols and expressions of one robot. ``q`` and ``v`` are SX column vectors (nq)."""

    q: ca.SX
    v: ca.SX
    rotations: list  # world rotation of each joint frame (index 0: universe)
    positions: list  # world position of each joint frame origin
    kinetic: ca.SX
    potential: ca.SX
    omegas: list = None  # body-frame angular velocity of each joint frame (index 0: universe)
    velocities: list = None  # body-frame linear velocity of each joint frame origin

    def frame_pose(self, model: pin.Model, frame_id: int) -> tuple[ca.SX, ca.SX]:
        f = model.frames[frame_id]
        R, p = self.rotations[f.parentJoint], self.positions[f.parentJoint]
        return R @ ca.DM(f.placement.rotation), p + R @ ca.DM(f.placement.translation)

    def point_position(self, model: pin.Model, link: str, point) -> ca.SX:
        """World position of a point given in a link's frame ('world' for fixed points)."""
        pt = ca.DM(np.asarray(point, float))
        if link == "world":
            return pt
        fid = model.getFrameId(link, pin.FrameType.BODY)
        if fid >= len(model.frames):
            raise KeyError(f"link {link!r} is not a body frame of the model")
        R, p = self.frame_pose(model, fid)
        return p + R @ pt

    def point_velocity(self, model: pin.Model, link: str, point) -> tuple[ca.SX, ca.SX, ca.SX]:
        """(world velocity of a point fixed in a link, world angular velocity, link rotation), linear in ``v``."""
        f = model.frames[model.getFrameId(link, pin.FrameType.BODY)]
        j = f.parentJoint
        Rj, w, vel = self.rotations[j], self.omegas[j], self.velocities[j]
        Rf = ca.DM(f.placement.rotation)
        r_local = ca.DM(f.placement.translation) + Rf @ ca.DM(np.asarray(point, float))
        return Rj @ (vel + ca.cross(w, r_local)), Rj @ w, Rj @ Rf


@builds_graph
def build_tree(robot: RobotModel) -> SymbolicTree:
    """Forward recursion over the tree: world poses, body-frame twists, energies."""
    model = robot.pin_model
    n = model.nq
    q, v = ca.SX.sym("q", n), ca.SX.sym("v", n)
    g = ca.DM(robot.gravity)
    rot = [ca.SX(ca.DM.eye(3))]
    pos = [ca.SX.zeros(3)]
    omega = [ca.SX.zeros(3)]
    vel = [ca.SX.zeros(3)]
    kinetic, potential = ca.SX(0), ca.SX(0)
    for i in range(1, model.njoints):
        info = robot.joints[i - 1]
        iq = model.joints[i].idx_q
        parent = model.parents[i]
        X = model.jointPlacements[i]
        Rpl, ppl = ca.DM(X.rotation), ca.DM(X.translation)
        axis = info.axis
        if info.type == "prismatic":
            Rl, pl = ca.SX(Rpl), ppl + Rpl @ ca.DM(axis) * q[iq]
            s_w, s_v = np.zeros(3), axis
        else:
            Rl, pl = Rpl @ _rodrigues(axis, q[iq]), ca.SX(ppl)
            s_w, s_v = axis, np.zeros(3)
        rot.append(rot[parent] @ Rl)
        pos.append(pos[parent] + rot[parent] @ pl)
        w = Rl.T @ omega[parent] + ca.DM(s_w) * v[iq]
        lin = Rl.T @ (vel[parent] + ca.cross(omega[parent], pl)) + ca.DM(s_v) * v[iq]
        omega.append(w)
        vel.append(lin)
        inertia = model.inertias[i]
        m, c, Ic = inertia.mass, ca.DM(inertia.lever), ca.DM(inertia.inertia)
        if m > 0:
            vc = lin + ca.cross(w, c)
            kinetic += 0.5 * m * ca.dot(vc, vc) + 0.5 * ca.dot(w, Ic @ w)
            potential += -m * ca.dot(g, pos[i] + rot[i] @ c)
    return SymbolicTree(
        q=q, v=v, rotations=rot, positions=pos, kinetic=kinetic, potential=potential, omegas=omega, velocities=vel
    )


def constraint_expr(robot: RobotModel, tree: SymbolicTree) -> ca.SX:
    """Stacked holonomic constraints h(q) (system YAML), in configuration symbols ``tree.q``."""
    model = robot.pin_model
    rows = []
    for c in robot.constraints:
        if c.type == "joints":  # a linear relation of joint coordinates (coupled joints)
            idx = [robot.joint_index(n) for n in c.joints]
            rows.append(sum(k * tree.q[i] for k, i in zip(c.coefficients, idx)) - c.offset)
            continue
        pa = tree.point_position(model, c.link_a, c.point_a)
        if c.type == "plane":
            rows.append(ca.dot(ca.DM(c.normal), pa) - c.offset)
            continue
        pb = tree.point_position(model, c.link_b, c.point_b)
        d = pa - pb
        if c.type == "coincident":
            rows.extend(d[k] for k in c.axes)
        else:  # distance, squared so that h is smooth everywhere
            rows.append(0.5 * (ca.dot(d, d) - c.distance**2))
    return ca.vertcat(*rows) if rows else ca.SX.zeros(0)


def nonholonomic_expr(robot: RobotModel, tree: SymbolicTree) -> ca.SX:
    """A(q) (m, nq) of the system YAML's nonholonomic constraints A(q)q̇ = 0 (Kobilarov2010, §3, rows μᵃ(q)).

    Each row is the exact Jacobian, with respect to ``tree.v``, of a constrained velocity: knife edge, the
    velocity of a link point along a link-fixed direction; rolling, the velocity of the disk's material point at
    the contact, v_centre + ω × r·d with d = −(n − (n·a)a)/|n − (n·a)a|, along t_long = n × a/|n × a| and
    t_lat = n × t_long (model.constraint_rows computes the same rows with Pinocchio).
    """
    model, rows = robot.pin_model, []
    for c in robot.nonholonomic:
        vp, w, R = tree.point_velocity(model, c.link, c.point)
        if c.type == "knife_edge":
            rows.append(ca.dot(R @ ca.DM(c.direction), vp))
            continue
        a, n = R @ ca.DM(c.axis), ca.DM(c.normal)
        s = n - ca.dot(n, a) * a
        d = -s / ca.norm_2(s)
        t_long = ca.cross(n, a)
        t_long = t_long / ca.norm_2(t_long)
        vc = vp + ca.cross(w, c.radius * d)
        for name, t in (("longitudinal", t_long), ("lateral", ca.cross(n, t_long))):
            if name in c.components:
                rows.append(ca.dot(t, vc))
    if not rows:
        return ca.SX.zeros(0, robot.nq)
    return ca.jacobian(ca.vertcat(*rows), tree.v)


class ContinuousDynamics(OwnsGraphs):
    """Compiled-to-SX-VM continuous quantities of the tree: M(q), g(q), T, V, FK, h, Dh.

    These are what the discrete Lagrangian is built from; tests hold them equal to Pinocchio's
    crba / computeGeneralizedGravity / energies / frame placements to 1e-12.
    """

    @builds_graph
    def __init__(self, robot: RobotModel, tree: SymbolicTree | None = None):
        self.robot = robot
        self.tree = tree or build_tree(robot)
        t = self.tree
        q, v = t.q, t.v
        h = constraint_expr(robot, t)
        self._M = ca.Function("M", [q], [ca.hessian(t.kinetic, v)[0]])
        self._grav = ca.Function("g", [q], [ca.gradient(t.potential, q)])
        self._T = ca.Function("T", [q, v], [t.kinetic])
        self._V = ca.Function("V", [q], [t.potential])
        self._h = ca.Function("h", [q], [h])
        self._Dh = ca.Function("Dh", [q], [ca.jacobian(h, q)])
        self._A = ca.Function("A", [q], [nonholonomic_expr(robot, t)])
        self._frames: dict[str, ca.Function] = {}

    def mass_matrix(self, q: np.ndarray) -> np.ndarray:
        return np.array(self._M(q))

    def gravity_torque(self, q: np.ndarray) -> np.ndarray:
        """∂V/∂q: the generalized gravity torque (Pinocchio's computeGeneralizedGravity)."""
        return np.array(self._grav(q)).ravel()

    def kinetic_energy(self, q: np.ndarray, v: np.ndarray) -> float:
        return float(self._T(q, v))

    def potential_energy(self, q: np.ndarray) -> float:
        return float(self._V(q))

    def energy(self, q: np.ndarray, v: np.ndarray) -> float:
        return self.kinetic_energy(q, v) + self.potential_energy(q)

    def frame_placement(self, frame: str, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(rotation, translation) of a named Pinocchio frame (link, joint or fixed-joint frame)."""
        if frame not in self._frames:
            model = self.robot.pin_model
            if not model.existFrame(frame):
                raise KeyError(f"frame {frame!r} does not exist")
            self._frames[frame] = self._frame_function(model.getFrameId(frame))
        R, p = self._frames[frame](q)
        return np.array(R), np.array(p).ravel()

    @builds_graph
    def _frame_function(self, frame_id: int) -> ca.Function:
        R, p = self.tree.frame_pose(self.robot.pin_model, frame_id)
        return ca.Function("fk", [self.tree.q], [R, p])

    def constraint(self, q: np.ndarray) -> np.ndarray:
        return np.array(self._h(q)).ravel()

    def constraint_jacobian(self, q: np.ndarray) -> np.ndarray:
        return np.array(self._Dh(q)).reshape(self.robot.n_constraints, self.robot.nq)

    def nonholonomic_matrix(self, q: np.ndarray) -> np.ndarray:
        """A(q) (m, nq): the nonholonomic constraints are A(q)q̇ = 0."""
        return np.array(self._A(q)).reshape(self.robot.n_nonholonomic, self.robot.nq)
