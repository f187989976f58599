"""Physical rigid-body inertias: the check, the ``repair`` policy's projection, and the Pinocchio cross-check.

A rotational inertia about the centre of mass is physical when its principal moments satisfy the triangle
inequalities λᵢ + λⱼ ≥ λₖ (the moments of a real mass distribution ∫ρ(r² − x²); they imply λ ≥ 0, so a
point mass, λ = 0, and a thin rod, λ = (0, a, a), are admitted). Real URDFs often miss them by rounding
(CAD exports with three significant digits: anymal's base has moments (0, 0, 3)), and a massless link may
carry a leftover inertia. Policy ``strict`` (the default) refuses them by name; ``repair`` replaces the
matrix by the nearest physical one in the Frobenius norm — the same eigenvectors, the eigenvalues projected
onto the polyhedral cone of the triangle inequalities (convex and permutation-invariant, so the projection of
a symmetric matrix keeps its eigenvectors; Lewis 1996) — and logs every change. A massless link's nearest
physical inertia is zero. Negative masses are refused under both policies: there is no nearest body.

``check_against_pinocchio`` compares what Pinocchio built with what the URDF states, body by body (each
moving joint carries its child link and everything welded to it by fixed joints), so an element the URDF
parser dropped can never go unnoticed.
"""

from __future__ import annotations

import itertools
import logging

import numpy as np
import pinocchio as pin

from .errors import URDFError

log = logging.getLogger("vi_control.model")

# Rows of A: λ ∈ C ⟺ Aλ ≥ 0 (the three triangle inequalities).
_TRIANGLE = np.array([[1.0, 1.0, -1.0], [1.0, -1.0, 1.0], [-1.0, 1.0, 1.0]])


def inertia_problem(mass: float, inertia: np.ndarray) -> str | None:
    """Why (mass, inertia about the CoM) is not a physical body, or None if it is: round-off of 1e-12 relative to the
    largest moment or to the mass's moment at 1 m, m·(1 m)², whichever is larger. (The floor scales with the mass:
    an absolute 1e-12 kg·m² let a 1 mg link with moments (1, 1, 5)·1e-13 kg·m² through, refused at 1 kg; over the
    1856 links with mass of example-robot-data and urdf/ the two rules decide alike — icub's point masses with
    moments ~1e-20 stay admitted.)"""
    if mass < 0.0:
        return f"mass must be non-negative and finite, got {mass}"
    if mass == 0.0:
        return None if not np.any(inertia) else f"zero mass but non-zero rotational inertia {np.diag(inertia).tolist()}"
    eig = np.linalg.eigvalsh(inertia)
    tol = 1e-12 * max(mass, float(np.max(np.abs(eig))))
    if eig[0] < -tol:
        return f"inertia matrix is not positive (semi-)definite (eigenvalues {np.array2string(eig, precision=4)})"
    if eig[0] + eig[1] < eig[2] - tol:
        return f"principal moments {eig} violate the triangle inequality"
    return None


def _project_moments(lam: np.ndarray) -> np.ndarray:
    """Euclidean projection of λ ∈ R³ onto {Aλ ≥ 0}: the closest feasible projection onto a face's span."""
    best, best_d = np.zeros(3), float(lam @ lam)
    for k in (1, 2):
        for rows in itertools.combinations(range(3), k):
            A = _TRIANGLE[list(rows)]
            cand = lam - A.T @ np.linalg.solve(A @ A.T, A @ lam)
            d = float((cand - lam) @ (cand - lam))
            if d < best_d and np.all(_TRIANGLE @ cand >= -1e-14 * max(1.0, np.abs(cand).max())):
                best, best_d = cand, d
    if np.all(_TRIANGLE @ lam >= 0):
        return lam
    return best


def nearest_physical_inertia(mass: float, inertia: np.ndarray) -> np.ndarray:
    """The physical rotational inertia closest to ``inertia`` in the Frobenius norm (module docstring)."""
    if mass == 0.0:
        return np.zeros((3, 3))
    sym = 0.5 * (inertia + inertia.T)
    lam, vec = np.linalg.eigh(sym)
    out = vec @ np.diag(_project_moments(lam)) @ vec.T
    return 0.5 * (out + out.T)


def repair_inertia(link: str, mass: float, inertia: np.ndarray) -> np.ndarray:
    """The repaired inertia of a non-physical link, logged as a warning with the size of the change."""
    fixed = nearest_physical_inertia(mass, inertia)
    change = np.linalg.norm(fixed - inertia)
    scale = max(np.linalg.norm(inertia), 1e-300)
    log.warning(
        "link %r: non-physical inertia repaired (inertia_policy: repair): principal moments %s -> %s, "
        "change %.3g kg·m² (%.2g of its norm)",
        link,
        np.array2string(np.linalg.eigvalsh(inertia), precision=4),
        np.array2string(np.linalg.eigvalsh(fixed), precision=4),
        change,
        change / scale,
    )
    return fixed


class Body:
    """A rigid body's mass, centre of mass and rotational inertia about it, in some frame (plain numpy).

    Plain arrays rather than ``pin.Inertia``, whose constructor refuses inertias a URDF may state within
    round-off of physical (icub's r_hip_2: diagonal −5e-20), which Pinocchio's own parser accepts.
    """

    def __init__(self, mass: float = 0.0, com: np.ndarray | None = None, inertia: np.ndarray | None = None):
        self.mass = float(mass)
        self.com = np.zeros(3) if com is None else np.asarray(com, float)
        self.inertia = np.zeros((3, 3)) if inertia is None else np.asarray(inertia, float)

    def placed(self, R: np.ndarray, p: np.ndarray) -> Body:
        """The same body seen from the parent frame of the placement (R, p)."""
        return Body(self.mass, R @ self.com + p, R @ self.inertia @ R.T)

    def __add__(self, other: Body) -> Body:
        m = self.mass + other.mass
        if m == 0.0:
            return Body(0.0, np.zeros(3), self.inertia + other.inertia)
        c = (self.mass * self.com + other.mass * other.com) / m
        inertia = np.zeros((3, 3))
        for b in (self, other):  # parallel-axis theorem about the common centre of mass
            d = b.com - c
            inertia += b.inertia + b.mass * (d @ d * np.eye(3) - np.outer(d, d))
        return Body(m, c, inertia)


def link_inertia(mass: float, inertia: np.ndarray, xyz: np.ndarray, rpy: np.ndarray) -> Body:
    """A URDF <inertial> in its link's frame (origin rotation R = Rz·Ry·Rx of rpy)."""
    R = pin.rpy.rpyToMatrix(*rpy)
    return Body(mass, xyz, R @ inertia @ R.T)


def composite_inertias(
    bodies: dict[str, Body], order: list[str], welded: dict[str, list[tuple[str, np.ndarray, np.ndarray]]]
) -> dict[str, tuple[Body, list]]:
    """link → (its body plus everything welded to it by fixed joints, in its frame; the links included).

    ``order`` lists links parents first (a pre-order of the tree); ``welded``: link → [(child, R, p)].
    """
    out: dict[str, tuple[Body, list[str]]] = {}
    for link in reversed(order):
        total, names = bodies.get(link, Body()), [link]
        for child, R, p in welded.get(link, []):
            sub, sub_names = out[child]
            total, names = total + sub.placed(R, p), names + sub_names
        out[link] = (total, names)
    return out


def check_against_pinocchio(
    model: pin.Model, composites: dict[str, tuple[Body, list[str]]], root: str, child_of_joint: dict[str, str]
) -> None:
    """Every body of Pinocchio's model equals the URDF's: mass, centre of mass and rotational inertia.

    ``composites`` from ``composite_inertias``; ``child_of_joint``: moving joint → child link. Joint 0 (the
    universe) carries the root link and what is welded to it. URDFError naming the links on any difference.
    """
    for j in range(model.njoints):
        expected, names = composites[root if j == 0 else child_of_joint[model.names[j]]]
        got = model.inertias[j]
        lever_scale = max(1.0, float(np.abs(expected.com).max()))
        inertia_scale = max(float(np.abs(expected.inertia).max()), 1e-12)
        if (
            abs(got.mass - expected.mass) > 1e-9 * max(expected.mass, 1.0)
            or (expected.mass > 0 and np.abs(got.lever - expected.com).max() > 1e-9 * lever_scale)
            or np.abs(got.inertia - expected.inertia).max() > 1e-9 * inertia_scale
        ):
            what = "the root" if j == 0 else f"joint {model.names[j]!r}"
            raise URDFError(
                f"links {names} (moved by {what}): Pinocchio's model carries mass {got.mass:.6g} kg at "
                f"{np.round(got.lever, 6).tolist()} where the URDF states {expected.mass:.6g} kg at "
                f"{np.round(expected.com, 6).tolist()} (an element the URDF parser dropped)"
            )
