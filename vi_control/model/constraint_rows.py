"""Constraint Jacobians evaluated numerically with Pinocchio: the validation of the system YAML's constraints.

The integrators build every constraint row symbolically (``mechanics.symbolic``, exact derivatives); here the
same rows come from Pinocchio's frame Jacobians, an independent path that the model layer uses to reject a
rank-deficient set at load time (and tests use as a cross-check of the symbolic rows).

Rows: holonomic constraints Dh(q) (coincident: the chosen axes of J_a − J_b; distance: dᵀ(J_a − J_b) for
h = ½(|d|² − ℓ²); plane: nᵀJ_a; joints: the coefficient row) and nonholonomic A(q) (Kobilarov2010, §3, the μᵃ(q) of
eq. 4): knife edge (R d)ᵀJ_p; rolling: the contact material point's velocity along the rolling and lateral
directions of the plane.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from .errors import SystemConfigError
from .system_config import Constraint, NonholonomicConstraint


def _skew(a: np.ndarray) -> np.ndarray:
    return np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])


class _Frames:
    """World poses and LOCAL_WORLD_ALIGNED Jacobians of link frames at one configuration."""

    def __init__(self, model: pin.Model, q: np.ndarray):
        self.model, self.data = model, model.createData()
        pin.computeJointJacobians(model, self.data, q)
        pin.updateFramePlacements(model, self.data)

    def pose_jacobian(self, link: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(R, p, J (6, nv)) of a link's body frame; 'world' is fixed."""
        nv = self.model.nv
        if link == "world":
            return np.eye(3), np.zeros(3), np.zeros((6, nv))
        fid = self.model.getFrameId(link, pin.FrameType.BODY)
        M = self.data.oMf[fid]
        J = pin.getFrameJacobian(self.model, self.data, fid, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
        return M.rotation.copy(), M.translation.copy(), J

    def point(self, link: str, point) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(world position, velocity Jacobian (3, nv), R, angular Jacobian (3, nv)) of a point on a link."""
        R, p, J = self.pose_jacobian(link)
        r = R @ np.asarray(point, float)
        return p + r, J[:3] - _skew(r) @ J[3:], R, J[3:]


def holonomic_rows(
    model: pin.Model, joint_names: list[str], constraints: tuple[Constraint, ...], q: np.ndarray
) -> np.ndarray:
    """Dh(q) (n_h, nq) of the holonomic constraints, in the order of ``mechanics.symbolic.constraint_expr``."""
    f, rows = _Frames(model, q), []
    for c in constraints:
        if c.type == "joints":
            row = np.zeros(model.nv)
            for name, coef in zip(c.joints, c.coefficients):
                row[joint_names.index(name)] += coef
            rows.append(row)
            continue
        pa, Ja, _, _ = f.point(c.link_a, c.point_a)
        if c.type == "plane":
            rows.append(np.asarray(c.normal) @ Ja)
            continue
        pb, Jb, _, _ = f.point(c.link_b, c.point_b)
        if c.type == "coincident":
            rows.extend((Ja - Jb)[k] for k in c.axes)
        else:
            rows.append((pa - pb) @ (Ja - Jb))
    return np.array(rows).reshape(len(rows), model.nv)


def rolling_frame(R: np.ndarray, c: NonholonomicConstraint) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(contact offset r·d from the disk centre, rolling direction, lateral direction) in world axes.

    a = R·axis, n the plane normal: d = −(n − (n·a)a)/|n − (n·a)a| points from the centre to the lowest point of
    the disk; t_long = n × a/|n × a| is the rolling direction, t_lat = n × t_long (undefined for a disk lying flat).
    """
    a, n = R @ np.asarray(c.axis), np.asarray(c.normal)
    s = n - (n @ a) * a
    d = -s / np.linalg.norm(s)
    t_long = np.cross(n, a)
    t_long /= np.linalg.norm(t_long)
    return c.radius * d, t_long, np.cross(n, t_long)


def nonholonomic_rows(model: pin.Model, nonholonomic: tuple[NonholonomicConstraint, ...], q: np.ndarray) -> np.ndarray:
    """A(q) (m, nq) with A(q)q̇ the constrained velocities, in the order of ``mechanics.symbolic``."""
    f, rows = _Frames(model, q), []
    for c in nonholonomic:
        _, Jp, R, Jw = f.point(c.link, c.point)
        if c.type == "knife_edge":
            rows.append((R @ np.asarray(c.direction)) @ Jp)
            continue
        r, t_long, t_lat = rolling_frame(R, c)
        Jc = Jp - _skew(r) @ Jw  # material point at the contact: v_centre + ω × r
        rows.extend(t @ Jc for name, t in (("longitudinal", t_long), ("lateral", t_lat)) if name in c.components)
    return np.array(rows).reshape(len(rows), model.nv)


def check_constraint_rank(
    model: pin.Model,
    joint_names: list[str],
    constraints: tuple[Constraint, ...],
    nonholonomic: tuple[NonholonomicConstraint, ...],
) -> None:
    """SystemConfigError naming the first constraint row (holonomic, then nonholonomic) that depends on the rows
    before it at a generic q.

    [Dh(q); A(q)] must have full row rank (Johnson2015, §VII for Dh, Kobilarov2010, §4.2: "μ is full rank"), or the
    multipliers are not determined and every step fails as singular; configurations where it drops (the
    snakeboard's φ = ±π/2, a four-bar folded flat) are measure-zero and are reported by the integrator as a
    SingularityError at the step. A redundant row at a generic q is one at every q: a constraint stated twice, an
    axis along which a planar loop cannot move (the four-bar needs ``axes: [x, z]``), a link welded to the world.
    """
    if not constraints and not nonholonomic:
        return
    q = np.random.default_rng(1).uniform(-1.0, 1.0, model.nq)  # generic: avoids measure-zero singularities
    H = holonomic_rows(model, joint_names, constraints, q)
    A = nonholonomic_rows(model, nonholonomic, q) if nonholonomic else np.zeros((0, model.nv))
    n = first_dependent_row(np.vstack([H, A]))
    if n is not None:
        who = constraint_row_owners(constraints, nonholonomic)[n]
        of = "A(q)" if who.startswith("non") else "Dh(q)"
        raise SystemConfigError(
            f"{who}: its row of {of} is a combination of the constraint rows before it (rank {n} < {n + 1} at "
            f"a generic q; {model.nv} coordinates): the constraints are rank-deficient; remove the redundant "
            "one (two wheels on one axle need the lateral component only once; a planar loop closes with two "
            "axes; a link fixed to the world needs no constraint)"
        )


def constraint_row_owners(
    constraints: tuple[Constraint, ...], nonholonomic: tuple[NonholonomicConstraint, ...] = ()
) -> list[str]:
    """The YAML entry of each row of [Dh(q); A(q)]: ``constraints[i]`` (``(axis x)`` of a coincident one),
    ``nonholonomic[i]`` (``(component c)`` of a rolling one)."""
    owner = [
        f"constraints[{i}]" + (f" (axis {'xyz'[k]})" if c.type == "coincident" else "")
        for i, c in enumerate(constraints)
        for k in (c.axes if c.type == "coincident" else (0,))
    ]
    owner += [
        f"nonholonomic[{i}]" + (f" (component {comp})" if comp else "")
        for i, c in enumerate(nonholonomic)
        for comp in (c.components if c.type == "rolling" else ("",))
    ]
    return owner


def first_dependent_row(rows: np.ndarray, tol: float = 1e-9) -> int | None:
    """Index of the first row that is a combination of the rows before it (rank relative to the largest entry)."""
    scale = max(np.abs(rows).max(initial=0.0), 1e-300)
    for n in range(1, len(rows) + 1):
        if np.linalg.matrix_rank(rows[:n], tol=tol * scale) < n:
            return n - 1
    return None
