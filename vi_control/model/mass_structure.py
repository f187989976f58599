"""Is the tree a mechanical system we can integrate? Every free coordinate must move inertia (M(q) regular).

A massless link is accepted between moving joints when a massive body follows it (virtual links of a
floating base, universal joints); a moving joint with nothing massive beyond it is rejected by name (unless
it is prescribed, seed 000 §VIII-B, or coupled by a mimic constraint: its motion is then not its own).
Degenerate combinations (a point mass on its own rotation axis, coincident parallel axes) make M(q) singular
at a generic q. Without mimic couplings the test is O(n): the articulated-body pivots of M(q) restricted to
the dynamic joints (crba.articulated_pivots) must all be positive, and the joint with the first vanishing
pivot (from the leaves) is named. With mimic couplings q_j = m·q_i + o (linear holonomic constraints) the
matrix that must be positive definite is the reduced one, PᵀM(q)P with P the map from the free coordinates to
all dynamic ones (Pinocchio's own mimic joints integrate exactly this), formed densely — robots with gears
have tens of joints, not thousands.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from .crba import articulated_pivots, mass_matrix
from .errors import SystemConfigError, URDFError
from .system_config import Constraint
from .urdf import ParsedURDF

_SINGULAR = ("the joint is redundant or moves no inertia (two joints moving the same bodies alike, or a point "
             "mass on its own axis)")


def mimic_map(order: list[str], prescribed: tuple[str, ...], constraints: tuple[Constraint, ...]
              ) -> tuple[list[str], np.ndarray]:
    """(free coordinates, P): dynamic coordinates q_d = P·q_free + const under the mimic constraints.

    Chains (a joint mimicking a mimic joint) are followed to their free end; a cycle, a joint coupled twice
    or a prescribed joint mimicking another is a SystemConfigError.
    """
    of = {}
    for c in constraints:
        if c.type == "mimic":
            if c.joint in of:
                raise SystemConfigError(f"joint {c.joint!r} mimics two joints ({of[c.joint][0]!r}, {c.mimics!r})")
            if c.joint in prescribed:
                raise SystemConfigError(f"joint {c.joint!r} is prescribed and cannot also mimic {c.mimics!r}")
            of[c.joint] = (c.mimics, c.multiplier)
    dynamic = [n for n in order if n not in prescribed]
    free = [n for n in dynamic if n not in of]
    col = {n: i for i, n in enumerate(free)}
    P = np.zeros((len(dynamic), len(free)))
    for r, name in enumerate(dynamic):
        factor, seen = 1.0, {name}
        while name in of:
            name, m = of[name]
            factor *= m
            if name in seen:
                raise SystemConfigError(f"mimic joints form a cycle through {sorted(seen)}")
            seen.add(name)
        if name in col:  # else the chain ends at a prescribed joint: no free coordinate moves this row
            P[r, col[name]] = factor
    return free, P


def check_mass_structure(parsed: ParsedURDF, model: pin.Model, prescribed: tuple[str, ...],
                         constraints: tuple[Constraint, ...] = ()) -> None:
    """URDFError naming the joint if a free coordinate moves no inertia (module docstring)."""
    order = [model.names[i] for i in range(1, model.njoints)]
    coupled = {n for c in constraints if c.type == "mimic" for n in (c.joint, c.mimics)}
    subtree = parsed.subtree_masses()
    for name in order:
        info = parsed.joints[name]
        if name not in prescribed and name not in coupled and subtree[info.child] <= 0.0:
            raise URDFError(f"link {info.child!r} (child of moving joint {name!r}) has zero mass and nothing "
                            "massive follows it: a moving body needs a positive <mass> (or declare the joint "
                            "prescribed in the system YAML if it is driven kinematically, e.g. a gripper)")
    locked = np.array([n in prescribed for n in order])
    if locked.all():
        return
    q = np.random.default_rng(0).uniform(-1.0, 1.0, model.nq)  # generic: avoids measure-zero singularities
    if not coupled:
        D, Mii = articulated_pivots(model, q, locked)
        bad = np.flatnonzero(~locked & ~(D > 1e-12 * Mii))
        if len(bad):
            i = int(bad[-1])  # the first pivot the elimination (leaves first) met
            raise URDFError(f"joint {order[i]!r}: the mass matrix is singular (articulated-body pivot "
                            f"{D[i]:.3g} of {Mii[i]:.3g}): {_SINGULAR}")
        return
    free, P = mimic_map(order, tuple(prescribed), constraints)
    if not free:
        return
    dyn = np.flatnonzero(~locked)
    Mr = P.T @ mass_matrix(model, q)[np.ix_(dyn, dyn)] @ P
    eig, vec = np.linalg.eigh(Mr)
    if not eig[0] > 1e-12 * max(eig[-1], 1e-300):
        worst = free[int(np.argmax(np.abs(vec[:, 0])))]
        raise URDFError(f"joint {worst!r}: the mass matrix reduced by the mimic couplings is singular "
                        f"(eigenvalues {eig[0]:.3g} .. {eig[-1]:.3g}): {_SINGULAR}")
