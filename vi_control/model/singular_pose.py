"""Why a configuration is singular for the step: which joint or constraint, in words a user can act on.

The midpoint step's Newton matrix at a configuration held still is M(q)/Δt plus O(Δt) force terms, bordered by
Dh(q) with holonomic constraints (Johnson2015, eq. 28, §VII). It is singular where (a) the constraint rows Dh(q)
become dependent (a loop at a lock-up pose, a plane the constrained point cannot leave), or (b) M(q), restricted
to the motions the constraints allow, loses rank: a direction of the coordinates that moves no inertia at this
pose — a coordinate singularity of the model (the azimuth of a spherical pendulum hanging straight down, Euler
angles at gimbal lock, an axis through every mass it carries). ``singular_direction`` finds which, from
Pinocchio's model (an independent path to the one the step took: numpy CRBA and frame Jacobians).
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import null_space

from .constraint_rows import constraint_row_owners, first_dependent_row, holonomic_rows
from .crba import mass_matrix
from .robot import RobotModel

# Relative size below which a pivot or eigenvalue counts as lost (the step refuses rcond < 1e-13).
RANK_TOL = 1e-9
PROBE = 0.01  # rad or m: how far ``singular_direction`` moves one joint to see whether that lifts the singularity


def singular_direction(robot: RobotModel, q: np.ndarray) -> str | None:
    """What makes the step singular at ``q`` (module docstring), or None if M(q) and Dh(q) are regular here.

    Names the first constraint row that depends on the ones before it, else the joints of M(q)'s null direction
    (restricted to the dynamic joints and to the motions the constraints allow) with its eigenvalue.
    """
    model = robot.pin_model
    if model.nq != model.nv:  # (every joint vi_control builds is 1-DOF: nq = nv)
        return None
    q = np.asarray(q, float)
    names = robot.joint_names
    dyn = [i for i, n in enumerate(names) if n not in robot.prescribed]
    H = holonomic_rows(model, names, robot.constraints, q)[:, dyn] if robot.constraints else np.zeros((0, len(dyn)))
    n = first_dependent_row(H, RANK_TOL)
    if n is not None:
        row = "vanishes" if n == 0 else f"is a combination of the rows before it (rank {n} < {n + 1})"
        return (
            f"{constraint_row_owners(robot.constraints)[n]}: its row of Dh(q) {row} at this pose: no motion of "
            "the joints moves the constrained point the way that row measures (a loop at a lock-up or change "
            "point, a point at the limit of its reach); hold a pose away from it"
        )
    P = null_space(H) if len(H) else np.eye(len(dyn))
    if P.shape[1] == 0:
        return None

    def weakest(qq: np.ndarray) -> tuple[float, float, np.ndarray]:
        eig, vec = np.linalg.eigh(P.T @ mass_matrix(model, qq)[np.ix_(dyn, dyn)] @ P)
        return eig[0], eig[-1], P @ vec[:, 0]

    low, high, direction = weakest(q)
    if low > RANK_TOL * max(high, 1e-300):
        return None
    weight = np.abs(direction) / np.abs(direction).max()
    joints = [names[dyn[i]] for i in np.flatnonzero(weight > 0.1)]
    text = (
        f"M(q) is singular here: moving {_names(joints)} moves no inertia at this pose (eigenvalue {low:.3g} of "
        f"{high:.3g}) — a coordinate singularity of the model, such as an axis through every mass it carries or "
        "two aligned axes"
    )
    if len(H):  # (a configuration off the constraints is no pose to suggest)
        return text + "; hold a pose away from it"
    # Which single joint, moved by PROBE, gives M(q) its rank back: what the user can change.
    cures = []
    for i in dyn:
        qq = q.copy()
        qq[i] += PROBE
        lo, hi, _ = weakest(qq)
        if lo > 1e3 * RANK_TOL * max(hi, 1e-300):
            cures.append(names[i])
    return text + (
        f"; moving {_names(cures)} by {PROBE:g} makes it regular: hold a pose away from it"
        if cures
        else f"; no single joint moved by {PROBE:g} makes it regular: hold a pose well away from it"
    )


def _names(joints: list[str]) -> str:
    return ("joint " if len(joints) == 1 else "joints ") + ", ".join(repr(j) for j in joints)
