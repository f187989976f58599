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
