"""Discrete recursive Newton-Euler algorithm (DRNEA, Lee2016, §3.1, Alg. 2) and its derivative (Alg. 4).

Every body i of the kinematic tree carries the trapezoidal discrete Lagrangian of Lee2016, eq. 9,
L_d^i(T_i^k, T_i^{k+1}) = Δt/2 (L(T^k, V^k) + L(T^{k+1}, V^k)) with V^k = log(ΔT^k)/Δt (eq. 10), and the
multibody L_d(q_k, q_{k+1}) = Σ_i L_d^i. With body variations η_i = J_i(q) δq its partial derivatives are

    D₁L_d(q_k, q_{k+1}) = −Σ_i J_i(q_k)ᵀ (μ_i^k + Δt/2 ∂P_i(T_i^k))                 (eq. 16c, sign of §2.1)
    D₂L_d(q_k, q_{k+1}) =  Σ_i J_i(q_{k+1})ᵀ (Ad_{ΔT_i}ᵀ μ_i^k − Δt/2 ∂P_i(T_i^{k+1}))  (eq. 16b)
    μ_i^k = [dlog_{ΔtV_i^k}]ᵀ G_i V_i^k                                                 (eq. 21b)

and the residual of Alg. 2 is f(q_{k+1}) = −(D₂L_d(q_{k−1}, q_k) + D₁L_d(q_k, q_{k+1})) − Q_k (eq. 22).

Two evaluations of the same sums:
- ``drnea_recursive``: Alg. 2 literally, body-frame forward pass (eq. 19) and backward pass (eq. 21a), a
  Python loop over bodies; the reference the tests hold the fast path to.
- ``BodyTree`` methods: the same recursion with every body's impulse moved to the world frame
  (Ad_{T_i^{-1}}ᵀ, as Featherstone does for RNEA), so the backward pass is a subtree sum and the rest is
  vectorized over bodies; the forward kinematics is Pinocchio's (the recursion of eq. 18).

Two evaluations of the exact Jacobian ∂f/∂q_{k+1} (Newton's baseline):
- ``drnea_derivative_recursive``: Alg. 4 as printed, one column per forward/backward pass (O(n) each, O(n²)).
- ``BodyTree.momentum_jacobian``: ours, per-body 6×6 maps summed over subtrees, then O(n²) dot products.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

from ..model.robot import RobotModel
from . import lie


class Frames:
    """World placements T_i = (R_i, p_i) of every body at one configuration (lazy derived quantities)."""

    def __init__(self, R: np.ndarray, p: np.ndarray, S: np.ndarray):
        self.R, self.p, self._S = R, p, S  # (n, 3, 3), (n, 3), joint twists in {i}

    @cached_property
    def Sw(self) -> np.ndarray:
        """(n, 6) joint twists in the world frame, Ad_{T_i} S_i."""
        w = lie.mv(self.R, self._S[:, :3])
        return np.concatenate([w, lie.cross(self.p, w) + lie.mv(self.R, self._S[:, 3:])], axis=1)

    @cached_property
    def axis_points(self) -> np.ndarray:
        """ω × v of each world joint twist: the point of a revolute axis closest to the origin."""
        return lie.cross(self.Sw[:, :3], self.Sw[:, 3:])

    @cached_property
    def Ad_inv(self) -> np.ndarray:
        """(n, 6, 6) [Ad_{T_i^{-1}}]."""
        return lie.adjoint_inv(self.R, self.p)


class BodyTree:
    """Kinematic tree of a RobotModel read from Pinocchio (parents, joint placements, inertias)."""

    def __init__(self, robot: RobotModel):
        model = robot.pin_model
        n = model.njoints - 1
        if model.nq != n or model.nv != n:
            raise ValueError("DRNEA handles one-DOF joints only (revolute, continuous, prismatic)")
        self.robot, self.model, self.n = robot, model, n  # no pinocchio.Data: it grows like n³
        self.parents = np.array([model.parents[i] - 1 for i in range(1, n + 1)], dtype=int)
        if not all(model.joints[i].idx_q == i - 1 for i in range(1, n + 1)):
            raise ValueError("unexpected joint ordering in the Pinocchio model")
        self.S = np.zeros((n, 6))  # joint Jacobian S_i in {i}, Lee2016 notation
        for i, j in enumerate(robot.joints):
            axis = np.asarray(j.axis, float) / np.linalg.norm(j.axis)
            if j.type == "prismatic":
                self.S[i, 3:] = axis
            elif j.type in ("revolute", "continuous"):
                self.S[i, :3] = axis
            else:
                raise ValueError(f"joint {j.name!r} of type {j.type!r} is not supported by DRNEA")
        self.mass = np.array([model.inertias[i].mass for i in range(1, n + 1)])
        self.com = np.array([model.inertias[i].lever for i in range(1, n + 1)])
        self.G = np.zeros((n, 6, 6))  # spatial inertia about the body origin, (w, v) order (eq. 7)
        for i in range(n):
            C = lie.hat(self.com[i])
            m = self.mass[i]
            self.G[i, :3, :3] = model.inertias[i + 1].inertia - m * C @ C
            self.G[i, :3, 3:] = m * C
            self.G[i, 3:, :3] = -m * C
            self.G[i, 3:, 3:] = m * np.eye(3)
        self.gravity = np.asarray(robot.gravity, float)
        self.placements = [
            (model.jointPlacements[i].rotation.copy(), model.jointPlacements[i].translation.copy())
            for i in range(1, n + 1)
        ]
        self.XR = np.array([pl[0] for pl in self.placements])
        self.Xp = np.array([pl[1] for pl in self.placements])
        self.revolute = np.abs(self.S[:, :3]).sum(axis=1) > 0
        self.is_chain = bool(np.all(self.parents == np.arange(n) - 1))
        # anc[i, j]: body i lies in the subtree of joint j (i = j included).
        anc = np.eye(n, dtype=bool)
        for i in range(n):
            j = self.parents[i]
            while j >= 0:
                anc[i, j] = True
                j = self.parents[j]
        self.anc = anc
        # Pointer-jumping schedule (bodies still below an ancestor, that ancestor) for each round.
        self._rounds = []
        jump = self.parents.copy()
        while np.any(jump >= 0):
            live = np.flatnonzero(jump >= 0)
            self._rounds.append((live, jump[live].copy()))
            jump[live] = jump[jump[live]]
        self._desc = np.where(anc.T, np.arange(n)[None, :], np.where(anc, np.arange(n)[:, None], 0))
        self._related = anc | anc.T

    # ---- kinematics (forward pass) --------------------------------------------------------------
    def frames(self, q: np.ndarray) -> Frames:
        """Forward kinematics T_i = T_{λ(i)} X_i exp([S_i] q_i) (eq. 18), vectorized over bodies.

        The products along the tree are taken by pointer jumping: each round composes every body's
        partial product with its current ancestor's, so ⌈log₂ depth⌉ batched rounds replace the
        sequential loop (O(n log n) flops, but no Python loop over bodies).
        """
        q = np.asarray(q, float)
        E = lie.exp_so3(self.S[:, :3] * q[:, None])
        R = self.XR @ E
        p = self.Xp + lie.mv(self.XR, self.S[:, 3:] * q[:, None])
        for live, a in self._rounds:
            p[live] = p[a] + lie.mv(R[a], p[live])
            R[live] = R[a] @ R[live]
        return Frames(R, p, self.S)

    # ---- backward pass ---------------------------------------------------------------------------
    def subtree_sum(self, w: np.ndarray) -> np.ndarray:
        """W_j = Σ_{i in subtree(j)} w_i: the backward recursion of eq. 21a in a common frame."""
        if self.is_chain:
            return np.cumsum(w[::-1], axis=0)[::-1]
        W = w.copy()
        for i in range(self.n - 1, -1, -1):
            if self.parents[i] >= 0:
                W[self.parents[i]] += W[i]
        return W

    def project(self, fr: Frames, w_world: np.ndarray) -> np.ndarray:
        """Σ_i J_i(q)ᵀ w_i for world-frame body impulses w_i (eq. 22 without Q)."""
        return np.einsum("ni,ni->n", fr.Sw, self.subtree_sum(w_world))

    def to_world(self, fr: Frames, w_body: np.ndarray) -> np.ndarray:
        return lie.mv(np.swapaxes(fr.Ad_inv, 1, 2), w_body)

    def com_positions(self, fr: Frames) -> np.ndarray:
        """(n, 3) world centres of mass x_{c,i}."""
        return fr.p + lie.mv(fr.R, self.com)

    def potential_energy(self, fr: Frames) -> float:
        """V = Σ_i P_i = −Σ_i m_i gᵀ x_{c,i} (Pinocchio's computePotentialEnergy)."""
        return float(-(self.mass * (self.com_positions(fr) @ self.gravity)).sum())

    def gravity_wrenches(self, fr: Frames) -> np.ndarray:
        """World-frame ∂P_i for P_i = −m_i gᵀ x_{c,i}: (−m x_c × g, −m g)."""
        xc = self.com_positions(fr)
        mg = self.mass[:, None] * self.gravity[None, :]
        return np.concatenate([-lie.cross(xc, mg), -mg], axis=1)

    def gravity_torque(self, fr: Frames) -> np.ndarray:
        """∂V/∂q at the configuration of ``fr`` (= Pinocchio's generalized gravity)."""
        return self.project(fr, self.gravity_wrenches(fr))

    # ---- per-body discrete momenta ---------------------------------------------------------------
    def displacement(self, fk: Frames, dq: np.ndarray) -> tuple[np.ndarray, Frames]:
        """ξ_i = log(ΔT_i^k) = Δt V_i^k (eqs. 10, 19) for q_{k+1} = q_k + Δq, and the frames at q_{k+1}.

        Eq. 19 unrolled in the world frame: W_i = T_i^{k+1} (T_i^k)^{-1} = Π_{j: root→i} exp([Sw_j^k] Δq_j),
        taken by pointer jumping like ``frames``. Every factor is carried as (R − I, t), so the result
        keeps its digits relative to Δq instead of to the size of the world coordinates, which
        matters because V = ξ/Δt amplifies any rounding by 1/Δt.
        """
        dq = np.asarray(dq, float)
        Sw = fk.Sw
        Rm = lie.exp_so3_minus_identity(Sw[:, :3] * dq[:, None])
        # revolute: rotation about the axis through point c = ω × v, t = (I − R) c; prismatic: t = v Δq
        t = np.where(self.revolute[:, None], -lie.mv(Rm, fk.axis_points), Sw[:, 3:] * dq[:, None])
        for live, a in self._rounds:
            t[live] = t[a] + t[live] + lie.mv(Rm[a], t[live])
            Rm[live] = Rm[a] + Rm[live] + Rm[a] @ Rm[live]
        RmR = Rm @ fk.R
        tw = lie.mv(Rm, fk.p) + t  # ΔT_i = (T_i^k)^{-1} W_i T_i^k
        Rt = np.swapaxes(fk.R, 1, 2)
        xi = lie.log_se3(Rt @ RmR, lie.mv(Rt, tw))
        return xi, Frames(fk.R + RmR, fk.p + tw, self.S)

    def world_momenta(self, fk: Frames, xi: np.ndarray, dt: float) -> np.ndarray:
        """Ad_{(T_i^k)^{-1}}ᵀ μ_i^k: body momenta (eq. 21b) in the world frame.

        Also equals Ad_{(T_i^{k+1})^{-1}}ᵀ Ad_{ΔT_i}ᵀ μ_i^k, the term D₂L_d needs at q_{k+1}.
        """
        mu = lie.dlog_transpose_apply(xi, lie.mv(self.G, xi)) / dt
        return self.to_world(fk, mu)

    def momentum_jacobian(self, fk: Frames, fk1: Frames, xi: np.ndarray, dt: float) -> np.ndarray:
        """∂/∂q_{k+1} of Σ_i J_i(q_k)ᵀ Ad_{(T_i^k)^{-1}}ᵀ μ_i^k: the O(n²) derivative of DRNEA (Alg. 4).

        With ζ_i = J_i(q_{k+1}) δq_{k+1} the body perturbation of T_i^{k+1}, δξ_i = dlog_{−ξ_i} ζ_i and
        δμ_i = (1/Δt) ∂m/∂ξ δξ_i. Two bodies' columns couple only through the common subtree.
        """
        _, dm = lie.momentum_and_derivative(xi, self.G)
        N = dm @ lie.dlog_matrix(-xi) / dt
        Nw = np.swapaxes(fk.Ad_inv, 1, 2) @ N @ fk1.Ad_inv
        C = self.subtree_sum(Nw)
        return np.einsum("ja,jlab,lb->jl", fk.Sw, C[self._desc], fk1.Sw) * self._related


def _exp_joint(S: np.ndarray, qi: float) -> tuple[np.ndarray, np.ndarray]:
    R = lie.exp_so3((S[:3] * qi)[None])[0]
    return R, S[3:] * qi  # revolute about an axis through the joint origin, or prismatic


def _homogeneous(R: np.ndarray, p: np.ndarray) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = R, p
    return T


def drnea_recursive(
    tree: BodyTree, q_prev: np.ndarray, q: np.ndarray, q_next: np.ndarray, dt: float, Q: np.ndarray | None = None
) -> np.ndarray:
    """Lee2016, Alg. 2 as written: residual impulse f(q^{k+1}) = Sᵢᵀ F_i^k − Q_i^k (eq. 22).

    Forward pass: T_{λ(i),i} = X_i exp([S_i] q_i), ΔT_i = T_{λ(i),i}^{-1} ΔT_{λ(i)} T'_{λ(i),i} (eq. 19) for
    the intervals (k−1, k) and (k, k+1). Backward pass: F_i^k = μ_i^k − Ad_{exp(ΔtV_i^{k−1})}ᵀ μ_i^{k−1}
    + Δt ∂P_i(T_i^k) + Σ_c Ad_{T_{i,c}^{-1}}ᵀ F_c^k (eq. 21a, gravity as the potential of eq. 16b-c).
    """
    n = tree.n
    qs = [np.asarray(a, float) for a in (q_prev, q, q_next)]
    local = [_local_transforms(tree, qq) for qq in qs]  # T_{λ(i),i} at k−1, k, k+1
    world = [[None] * n for _ in range(3)]
    dT = [[None] * n for _ in range(2)]
    for i in range(n):
        lam = tree.parents[i]
        for t in range(3):
            world[t][i] = local[t][i] if lam < 0 else world[t][lam] @ local[t][i]
        for t in range(2):
            parent_dT = np.eye(4) if lam < 0 else dT[t][lam]
            dT[t][i] = np.linalg.inv(local[t][i]) @ parent_dT @ local[t + 1][i]
    F = np.zeros((n, 6))
    f = np.zeros(n)
    children = [[c for c in range(n) if tree.parents[c] == i] for i in range(n)]
    for i in range(n - 1, -1, -1):
        xi_prev = lie.log_se3(dT[0][i][None, :3, :3] - np.eye(3), dT[0][i][None, :3, 3])
        xi = lie.log_se3(dT[1][i][None, :3, :3] - np.eye(3), dT[1][i][None, :3, 3])
        mu_prev = lie.dlog_transpose_apply(xi_prev, (tree.G[i] @ xi_prev[0])[None])[0] / dt
        mu = lie.dlog_transpose_apply(xi, (tree.G[i] @ xi[0])[None])[0] / dt
        Ad_dT = lie.adjoint(dT[0][i][None, :3, :3], dT[0][i][None, :3, 3])[0]
        Rk = world[1][i][:3, :3]
        g_b = Rk.T @ tree.gravity
        m, c = tree.mass[i], tree.com[i]
        dP = np.concatenate([-m * lie.cross(c, g_b), -m * g_b])
        F[i] = mu - Ad_dT.T @ mu_prev + dt * dP
        for ch in children[i]:
            Tic = local[1][ch]
            F[i] += lie.adjoint_inv(Tic[None, :3, :3], Tic[None, :3, 3])[0].T @ F[ch]
        f[i] = tree.S[i] @ F[i]
    return f if Q is None else f - Q


def _local_transforms(tree: BodyTree, q: np.ndarray) -> list[np.ndarray]:
    return [_homogeneous(*pl) @ _homogeneous(*_exp_joint(tree.S[i], q[i])) for i, pl in enumerate(tree.placements)]


def _vee(X: np.ndarray) -> np.ndarray:
    """se(3) matrix → twist (w, v)."""
    return np.array([X[2, 1], X[0, 2], X[1, 0], X[0, 3], X[1, 3], X[2, 3]])


def drnea_derivative_recursive(tree: BodyTree, q: np.ndarray, q_next: np.ndarray, dt: float) -> np.ndarray:
    """Lee2016, Alg. 4 as written: ∂f(q^{k+1})/∂q^{k+1} column by column (without the damping term).

    For each column j a forward pass (lines 3–5)
        ∂ΔT_i = T_{λ(i),i}^{k −1} ∂ΔT_{λ(i)} T_{λ(i),i}^{k+1} + ΔT_i [S_i] δ_ij,
        ∂ξ_i = Δt ∂V_i = dlog_{ξ_i}(∂ΔT_i ΔT_i^{-1})   (ξ_i = log ΔT_i^k, right-trivialized)
    and a backward pass (lines 8–10)
        ∂μ_i = (1/Δt) ∂m/∂ξ ∂ξ_i   (m(ξ) = dlog_ξᵀ G ξ: both terms of line 8),
        ∂F_i = ∂μ_i + Σ_c Ad_{T_{i,c}^{k −1}}ᵀ ∂F_c,  J[i, j] = S_iᵀ ∂F_i.
    Gravity is evaluated at T^k and the previous interval's momentum does not depend on q^{k+1}.
    """
    n = tree.n
    q, q_next = np.asarray(q, float), np.asarray(q_next, float)
    loc0, loc1 = _local_transforms(tree, q), _local_transforms(tree, q_next)
    loc0_inv = [np.linalg.inv(L) for L in loc0]
    dT = [None] * n
    for i in range(n):
        lam = tree.parents[i]
        dT[i] = loc0_inv[i] @ (np.eye(4) if lam < 0 else dT[lam]) @ loc1[i]
    dT_inv = [np.linalg.inv(d) for d in dT]
    xi = np.stack([lie.log_se3(d[None, :3, :3] - np.eye(3), d[None, :3, 3])[0] for d in dT])
    _, dm = lie.momentum_and_derivative(xi, tree.G)
    dlog = lie.dlog_matrix(xi)
    Ad_child = [np.swapaxes(lie.adjoint_inv(L[None, :3, :3], L[None, :3, 3])[0], 0, 1) for L in loc0]
    S_hat = [_se3_hat(s) for s in tree.S]
    J = np.zeros((n, n))
    for j in range(n):
        d_dT = [np.zeros((4, 4)) for _ in range(n)]
        dF = np.zeros((n, 6))
        for i in range(n):
            lam = tree.parents[i]
            if lam >= 0:
                d_dT[i] = loc0_inv[i] @ d_dT[lam] @ loc1[i]
            if i == j:
                d_dT[i] = d_dT[i] + dT[i] @ S_hat[i]
            dxi = dlog[i] @ _vee(d_dT[i] @ dT_inv[i])
            dF[i] = dm[i] @ dxi / dt
        for i in range(n - 1, -1, -1):
            J[i, j] = tree.S[i] @ dF[i]
            if tree.parents[i] >= 0:
                dF[tree.parents[i]] += Ad_child[i] @ dF[i]
    return J


def _se3_hat(s: np.ndarray) -> np.ndarray:
    X = np.zeros((4, 4))
    X[:3, :3] = lie.hat(s[:3])
    X[:3, 3] = s[3:]
    return X
