"""Joint-space mass matrix without a ``pinocchio.Data``.

``pinocchio.Data`` holds nv³-sized tensors (second-order RNEA derivatives): ≈ 0.5 GB at 200 joints and
≈ 2 GB at 400, allocated on construction. Validating a long chain's URDF only needs M(q) once, so this is
the composite-rigid-body algorithm (Featherstone, *Rigid Body Dynamics Algorithms*, §6.2) over Pinocchio's
model in plain numpy, with per-joint data only (O(n·depth) 6-vector operations, O(n²) memory).
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin


def mass_matrix(model: pin.Model, q: np.ndarray) -> np.ndarray:
    """M(q), symmetric, equal to ``pin.crba`` (which fills the upper triangle only); Pinocchio's (v, ω) order."""
    q = np.asarray(q, float)
    n = model.njoints
    # Per joint: placement in the parent frame ^λ X_i and motion subspace S_i (6 × nv_i) in frame i.
    X, S, Ic = [None] * n, [None] * n, [None] * n
    for i in range(1, n):
        jm = model.joints[i]
        jd = jm.createData()
        jm.calc(jd, q)
        X[i] = model.jointPlacements[i] * jd.M
        S[i] = np.asarray(jd.S).reshape(6, jm.nv)
        Ic[i] = model.inertias[i].matrix()
    M = np.zeros((model.nv, model.nv))
    for i in range(n - 1, 0, -1):
        jm, lam = model.joints[i], model.parents[i]
        vi = slice(jm.idx_v, jm.idx_v + jm.nv)
        F = Ic[i] @ S[i]  # composite inertia of subtree(i) times S_i, as forces in frame i
        M[vi, vi] = S[i].T @ F
        j = i
        while model.parents[j] > 0:  # carry the forces up to every ancestor's frame
            F = X[j].toDualActionMatrix() @ F
            j = model.parents[j]
            jv = slice(model.joints[j].idx_v, model.joints[j].idx_v + model.joints[j].nv)
            M[jv, vi] = S[j].T @ F
            M[vi, jv] = M[jv, vi].T
        if lam > 0:
            Xf = X[i].toDualActionMatrix()
            Ic[lam] = Ic[lam] + Xf @ Ic[i] @ Xf.T
    return M


def articulated_pivots(
    model: pin.Model, q: np.ndarray, locked: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Pivots D_i = S_iᵀ I^A_i S_i of the articulated-body recursion and the rigid ones S_iᵀ I^c_i S_i = M_ii.

    The articulated-body algorithm (Featherstone, *Rigid Body Dynamics Algorithms*, §7.3) eliminates the
    joints from the leaves up: its pivots are those of a symmetric Gaussian elimination of M(q) in that order,
    so M(q) is positive definite exactly when every pivot is positive — an O(n) test where forming M(q) is
    O(n·depth) (a 1600-link chain took 112 s to validate that way). ``locked`` (per joint, 1-DOF joints only)
    marks joints held rigid, which restricts M to the other coordinates (the prescribed joints of Johnson2015
    §VIII-B). Returns (D, M_ii) per velocity index; locked joints get NaN.
    """
    q = np.asarray(q, float)
    n = model.njoints
    locked = np.zeros(model.nv, bool) if locked is None else np.asarray(locked, bool)
    IA = [model.inertias[i].matrix() for i in range(n)]
    IC = [a.copy() for a in IA]
    D, Mii = np.full(model.nv, np.nan), np.full(model.nv, np.nan)
    for i in range(n - 1, 0, -1):
        jm = model.joints[i]
        if jm.nv != 1:
            raise ValueError(f"articulated_pivots: joint {model.names[i]!r} has {jm.nv} DOF (1-DOF joints only)")
        jd = jm.createData()
        jm.calc(jd, q)
        S = np.asarray(jd.S).reshape(6)
        Ia = IA[i]
        if not locked[jm.idx_v]:
            U = Ia @ S
            D[jm.idx_v], Mii[jm.idx_v] = S @ U, S @ IC[i] @ S
            if D[jm.idx_v] > 0:
                Ia = Ia - np.outer(U, U) / D[jm.idx_v]
        Xf = (model.jointPlacements[i] * jd.M).toDualActionMatrix()
        lam = model.parents[i]
        IA[lam] = IA[lam] + Xf @ Ia @ Xf.T
        IC[lam] = IC[lam] + Xf @ IC[i] @ Xf.T
    return D, Mii
