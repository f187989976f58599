"""Is the tree a mechanical system we can integrate? Every free coordinate must move inertia (M(q) regular).

A massless link is accepted between moving joints when a massive body follows it (virtual links of a
floating base, universal joints); a moving joint with nothing massive beyond it is rejected by name (unless
it is prescribed, Johnson2015, §VIII-B, or coupled to others by a ``joints`` constraint — a URDF mimic, a gear:
its motion is then not its own). Degenerate combinations (a point mass on its own rotation axis, coincident
parallel axes) make M(q) singular at a generic q. Without couplings the test is O(n): the articulated-body
pivots of M(q) restricted to the dynamic joints (crba.articulated_pivots) must all be positive, and the joint
with the first vanishing pivot (from the leaves) is named. With linear couplings C·q = c (``joints``
constraints) the matrix that must be positive definite is the reduced one, PᵀM(q)P with P a basis of the null
space of C on the dynamic coordinates (the motions the couplings allow; for a mimic joint Pinocchio's own
mimic model integrates exactly this), formed densely — robots with gears have tens of joints, not thousands.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
from scipy.linalg import null_space

from .crba import articulated_pivots, mass_matrix
from .errors import SystemConfigError, URDFError
from .system_config import Constraint
from .urdf import ParsedURDF

_SINGULAR = (
    "the joint is redundant or moves no inertia (two joints moving the same bodies alike, or a point "
    "mass on its own axis)"
)


def coupling_basis(order: list[str], prescribed: tuple[str, ...], constraints: tuple[Constraint, ...]) -> np.ndarray:
    """P (nd, nd − m): a basis of the dynamic-coordinate motions the m ``joints`` couplings allow.

    SystemConfigError naming the constraint if one couples prescribed joints only (nothing left for it to
    constrain) or repeats the others (its multiplier would be undetermined).
    """
    dyn = [i for i, n in enumerate(order) if n not in prescribed]
    col = {order[i]: k for k, i in enumerate(dyn)}
    rows, which = [], []
    for i, c in enumerate(constraints):
        if c.type != "joints":
            continue
        row = np.zeros(len(dyn))
        for name, coef in zip(c.joints, c.coefficients):
            if name in col:
                row[col[name]] += coef
        if not np.any(row):
            raise SystemConfigError(
                f"constraints[{i}]: couples prescribed joints only ({list(c.joints)}): "
                "their motion is an input, nothing is left to constrain"
            )
        rows.append(row)
        which.append(i)
        C = np.array(rows)
        if np.linalg.matrix_rank(C, tol=1e-12 * np.abs(C).max()) < len(rows):
            raise SystemConfigError(
                f"constraints[{i}]: this coupling of {list(c.joints)} follows from the ones "
                "before it (the couplings are redundant or form a cycle)"
            )
    if not rows:
        return np.eye(len(dyn))
    return null_space(np.array(rows))


def check_mass_structure(
    parsed: ParsedURDF, model: pin.Model, prescribed: tuple[str, ...], constraints: tuple[Constraint, ...] = ()
) -> None:
    """URDFError naming the joint if a free coordinate moves no inertia (module docstring)."""
    order = [model.names[i] for i in range(1, model.njoints)]
    coupled = {n for c in constraints if c.type == "joints" for n in c.joints}
    subtree = parsed.subtree_masses()
    for name in order:
        info = parsed.joints[name]
        if name not in prescribed and name not in coupled and subtree[info.child] <= 0.0:
            raise URDFError(
                f"link {info.child!r} (child of moving joint {name!r}) has zero mass and nothing "
                "massive follows it: a moving body needs a positive <mass> (or declare the joint "
                "prescribed in the system YAML if it is driven kinematically, e.g. a gripper)"
            )
    locked = np.array([n in prescribed for n in order])
    if locked.all():
        return
    q = np.random.default_rng(0).uniform(-1.0, 1.0, model.nq)  # generic: avoids measure-zero singularities
    if not coupled:
        D, Mii = articulated_pivots(model, q, locked)
        bad = np.flatnonzero(~locked & ~(D > 1e-12 * Mii))
        if len(bad):
            i = int(bad[-1])  # the first pivot the elimination (leaves first) met
            raise URDFError(
                f"joint {order[i]!r}: the mass matrix is singular (articulated-body pivot "
                f"{D[i]:.3g} of {Mii[i]:.3g}): {_SINGULAR}"
            )
        return
    P = coupling_basis(order, tuple(prescribed), constraints)
    if P.shape[1] == 0:
        return
    dyn = np.flatnonzero(~locked)
    M = mass_matrix(model, q)[np.ix_(dyn, dyn)]
    Mr = P.T @ M @ P  # (P's columns are orthonormal: Mr's eigenvalues are on M's scale)
    eig, vec = np.linalg.eigh(Mr)
    # relative to M's largest diagonal entry, not to Mr's own largest eigenvalue: with one coordinate left those are
    # the same number and a reduced mass of 1e-33 passed
    if not eig[0] > 1e-12 * max(float(np.diag(M).max()), 1e-300):
        worst = order[dyn[int(np.argmax(np.abs(P @ vec[:, 0])))]]
        raise URDFError(
            f"joint {worst!r}: the mass matrix reduced by the joint couplings is singular "
            f"(eigenvalues {eig[0]:.3g} .. {eig[-1]:.3g}): {_SINGULAR}"
        )


def unit_momentum(robot) -> float:
    """The momentum of the model at unit velocity: the largest diagonal entry of M(q) over the dynamic joints at the
    neutral configuration [kg·m² or kg]. The scale of the integrators' momentum residual (NewtonSettings.for_model):
    a model's whose links weigh grams has momenta a million times a robot arm's, and a residual tolerance in
    absolute units stopped its Newton iterations at a relative error of 1e-6 per step."""
    model = robot.pin_model
    diag = np.diag(mass_matrix(model, pin.neutral(model)))
    dynamic = np.array([j.name not in robot.prescribed for j in robot.joints], bool)
    values = diag[dynamic] if dynamic.shape == diag.shape else diag
    return float(values.max(initial=0.0))


def spin_invariant_joints(robot) -> set[str]:
    """Revolute joints whose angle the step's equations do not see: a wheel spinning on its axle.

    The joint moves one rigid body (no moving joint below it; links welded to it included) whose centre of mass
    lies on the joint axis and whose inertia is axisymmetric about it, and no holonomic point constraint or
    knife edge acts on that body (a rolling disk's constraint is spin-invariant when its axis is the joint's).
    Then T, V and the constraints are unchanged when the joint turns, its DEL equation is linear in its angle
    and has one root however far it turns per step: the per-step rotation limit (integrators.base) exempts it.
    """
    model = robot.pin_model
    has_child = {int(p) for p in model.parents[1:]}
    body_of = {f.name: f.parentJoint for f in model.frames if f.type == pin.FrameType.BODY}
    out = set()
    for i in range(1, model.njoints):
        info = robot.joints[i - 1]
        if info.type not in ("revolute", "continuous") or i in has_child:
            continue
        a = np.asarray(info.axis, float)
        body = model.inertias[i]
        c, inertia = np.asarray(body.lever), np.asarray(body.inertia)
        scale = max(float(np.abs(inertia).max()), 1e-300)
        lam = float(a @ inertia @ a)
        transverse = inertia - lam * np.outer(a, a)
        mu = 0.5 * float(np.trace(transverse))
        if (
            np.linalg.norm(c - (c @ a) * a) > 1e-9 * (1.0 + np.linalg.norm(c))
            or np.linalg.norm(inertia @ a - lam * a) > 1e-9 * scale
            or np.linalg.norm(transverse - mu * (np.eye(3) - np.outer(a, a))) > 1e-9 * scale
        ):
            continue
        links = {n for n, j in body_of.items() if j == i}
        if any(c.type != "joints" and ({c.link_a, c.link_b} & links) for c in robot.constraints):
            continue
        ok = True
        for nh in getattr(robot, "nonholonomic", ()):
            if nh.link in links:
                axis = model.frames[model.getFrameId(nh.link, pin.FrameType.BODY)].placement.rotation @ np.asarray(
                    getattr(nh, "axis", (0.0, 0.0, 0.0)), float
                )
                ok &= nh.type == "rolling" and abs(abs(axis @ a) - np.linalg.norm(axis)) <= 1e-9
        if ok:
            out.add(info.name)
    return out
