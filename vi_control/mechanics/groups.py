"""Matrix Lie groups SO(3), SE(2), SE(3) with the Cayley and exponential retractions of Jimenez2013, §5.

Conventions (Jimenez2013, §5, §6.1): an algebra element is a vector with the angular part first, ξ = (ω, v)
for SE(3) and ξ = (ω, v_x, v_y) for SE(2) (as ``mechanics.lie`` and Lee2016). A retraction τ: 𝔤 → G is a
local diffeomorphism with τ(ξ)τ(−ξ) = e. Its *right-trivialized* differential dτ_ξ and the inverse dτ⁻¹_ξ
are n×n matrices with (Definition 5.1)

    ∂_ξ τ(ξ)·η = (dτ_ξ η)^ τ(ξ),        ∂_ξ τ⁻¹(g)·η = dτ⁻¹_ξ(η τ(−ξ))   (g = τ(ξ)).

Two retractions: ``cay`` (e − ξ/2)⁻¹(e + ξ/2) (§5 b, eqs. 34–38) and ``exp`` (§5 a). SO(3) and SE(3) accept numpy
arrays and CasADi symbols alike. The SO(3) closed forms they are built from, ``RetractionDomainError`` (τ⁻¹ asked
for outside a retraction's domain) and the quaternion helpers live in ``mechanics.so3_maps`` and are re-exported.
"""

from __future__ import annotations

import math

import casadi as ca
import numpy as np

from . import lie
from .so3_maps import (
    CAYLEY_MARGIN,
    RetractionDomainError,
    a_inv,
    block_matrix,
    c_cos,
    c_cot,
    c_q2,
    c_q3,
    c_sin,
    c_sin3,
    dexp_singular,
    eye,
    hat3,
    is_sym,
    mat,
    quaternion_from_rotation,
    rotation_from_quaternion,
    so3_cay,
    so3_cay_inv,
    so3_dcay,
    so3_dcay_inv,
    so3_dexp,
    so3_dexp_inv,
    so3_exp,
    so3_log,
    sq,
    vcat,
    vee3,
    zeros,
)

__all__ = [
    "RetractionDomainError",
    "LieGroup",
    "SO3",
    "SE2",
    "SE3",
    "GROUPS",
    "Retraction",
    "RETRACTIONS",
    "check_retraction",
    "get_group",
    "quaternion_from_rotation",
    "rotation_from_quaternion",
]

RETRACTIONS = ("cayley", "exp")


def check_retraction(kind: str) -> str:
    """``kind`` if it names a retraction (``RETRACTIONS``), else ValueError. One name for the Cayley map everywhere
    ('cayley', in the RDP too and in the YAML): 'cay' is refused with the name to use."""
    if kind == "cay":
        raise ValueError("retraction 'cay': the Cayley retraction is named 'cayley' throughout vi_control")
    if kind not in RETRACTIONS:
        raise ValueError(f"retraction must be one of {RETRACTIONS}, got {kind!r}")
    return kind


# ---- the group objects ----------------------------------------------------------------------------------
class LieGroup:
    """A matrix Lie group: ``dim`` algebra dimensions, ``size`` × ``size`` matrices, ``nq`` stored coordinates.

    Immutable structure (like Pinocchio's model); all methods are free of state. ``to_coordinates``/
    ``from_coordinates`` give the flat representation a discrete state stores (rotation entries row by row,
    then the translation).
    """

    name: str
    dim: int
    size: int
    nq: int
    rot: int  # rotation block size (3 for SO(3)/SE(3), 2 for SE(2))

    def __repr__(self) -> str:
        return self.name

    # structure
    def identity(self) -> np.ndarray:
        return np.eye(self.size)

    def inverse(self, g):
        if self.size == self.rot:  # SO(3)
            return g.T
        k = self.rot
        R, p = g[:k, :k], g[:k, k]
        if is_sym(g):
            return ca.vertcat(ca.horzcat(R.T, -(R.T @ p)), ca.horzcat(ca.SX.zeros(1, k), 1))
        out = np.eye(k + 1)
        out[:k, :k], out[:k, k] = R.T, -(R.T @ p)
        return out

    def compose(self, a, b):
        return a @ b

    def to_coordinates(self, g):
        sym = is_sym(g)
        k = self.rot
        if not sym:
            g = np.asarray(g, float)
            return np.concatenate([g[:k, :k].ravel(), g[:k, k]]) if self.size > k else g.ravel().copy()
        parts = [g[i, j] for i in range(k) for j in range(k)] + [g[i, k] for i in range(k) if self.size > k]
        return vcat(parts, sym)

    def from_coordinates(self, q):
        sym = is_sym(q)
        k = self.rot
        if not sym:
            q = np.asarray(q, float)
            if q.shape != (self.nq,):
                raise ValueError(f"{self.name}: {q.shape[-1]} coordinates, expected {self.nq}")
            g = np.eye(self.size)
            g[:k, :k] = q[: k * k].reshape(k, k)
            g[:k, k:] = q[k * k :, None] if self.size > k else g[:k, k:]
            return g
        R = mat([[q[k * i + j] for j in range(k)] for i in range(k)], sym)
        if self.size == k:
            return R
        p = vcat([q[k * k + i] for i in range(k)], sym)
        return block_matrix([[R, p if sym else p[:, None]], [mat([[0] * k], sym), mat([[1]], sym)]], sym)

    def distance_from_group(self, g, coordinates: bool = False) -> float:
        """max(‖RᵀR − I‖_max, |det R − 1|) and the last row's deviation from (0, …, 0, 1): how far a matrix (or,
        with ``coordinates``, a coordinate vector) is off the group."""
        k = self.rot
        if coordinates:
            R = np.asarray(g, float)[: k * k].reshape(k, k)
        else:
            g = np.asarray(g, float)
            R = g[:k, :k]
        err = float(np.abs(R.T @ R - np.eye(k)).max())
        det = R[0, 0] * R[1, 1] - R[0, 1] * R[1, 0] if k == 2 else float(np.linalg.det(R))
        err = max(err, abs(det - 1.0))
        if not coordinates and self.size > k:
            last = np.zeros(self.size)
            last[-1] = 1.0
            err = max(err, float(np.abs(g[-1] - last).max()))
        return err

    # algebra
    def hat(self, xi):
        raise NotImplementedError

    def vee(self, X):
        raise NotImplementedError

    def Ad(self, g):
        raise NotImplementedError

    def ad(self, xi):
        raise NotImplementedError

    # retractions (each: τ, τ⁻¹, dτ, dτ⁻¹)
    def cay(self, xi):
        raise NotImplementedError

    def cay_inv(self, g):
        raise NotImplementedError

    def dcay(self, xi):
        raise NotImplementedError

    def dcay_inv(self, xi):
        raise NotImplementedError

    def exp(self, xi):
        raise NotImplementedError

    def log(self, g):
        raise NotImplementedError

    def dexp(self, xi):
        raise NotImplementedError

    def dexp_inv(self, xi):
        raise NotImplementedError


def _bind(fn):
    """A group method from a backend-neutral formula f(x, sym)."""
    return lambda self, x: fn(x, is_sym(x))


class _SO3(LieGroup):
    name, dim, size, nq, rot = "SO3", 3, 3, 9, 3

    def Ad(self, R):
        return R

    hat = ad = staticmethod(hat3)
    vee = staticmethod(vee3)
    cay, cay_inv, dcay, dcay_inv = _bind(so3_cay), _bind(so3_cay_inv), _bind(so3_dcay), _bind(so3_dcay_inv)
    exp, log, dexp, dexp_inv = _bind(so3_exp), _bind(so3_log), _bind(so3_dexp), _bind(so3_dexp_inv)


class _SE3(LieGroup):
    """SE(3) ∋ g = [[R, x], [0, 1]], ξ = (ω, v) (Jimenez2013, §6.1)."""

    name, dim, size, nq, rot = "SE3", 6, 4, 12, 3

    def hat(self, xi):
        if is_sym(xi):
            return ca.vertcat(ca.horzcat(hat3(xi[:3]), xi[3:]), ca.SX.zeros(1, 4))
        xi = np.asarray(xi, float)
        return np.block([[hat3(xi[:3]), xi[3:, None]], [np.zeros((1, 4))]])

    def vee(self, X):
        return vcat([vee3(X[:3, :3]), X[:3, 3]], is_sym(X))

    def Ad(self, g):
        """[Ad_g] = [[R, 0], [x̂R, R]] (Lee2016, eq. 15)."""
        if is_sym(g):
            R, p = g[:3, :3], g[:3, 3]
            return block_matrix([[R, ca.SX.zeros(3, 3)], [hat3(p) @ R, R]], True)
        return lie.adjoint(g[:3, :3], g[:3, 3])

    def ad(self, xi):
        """[ad_ξ] = [[ω̂, 0], [v̂, ω̂]]."""
        if is_sym(xi):
            W = hat3(xi[:3])
            return block_matrix([[W, ca.SX.zeros(3, 3)], [hat3(xi[3:]), W]], True)
        return lie.ad(np.asarray(xi, float))

    def _pose(self, R, p, sym):
        return block_matrix([[R, p if sym else np.asarray(p)[:, None]], [mat([[0, 0, 0, 1]], sym)]], sym)

    # Cayley: the matrix Cayley (e − ξ̂/2)⁻¹(e + ξ̂/2) of §5 b. Its translation is (I − ω̂/2)⁻¹ v; eq. 34's
    # "dcay_ω v" with dcay from eq. 35 differs from it by (ω·v)ω/(4 + |ω|²) (docs/concepts/lie_groups.md), and eq. 38 is
    # the differential of the matrix Cayley, which is what we use.
    def cay(self, xi):
        sym = is_sym(xi)
        w, v = xi[:3], xi[3:]
        return self._pose(so3_cay(w, sym), a_inv(w, sym) @ v, sym)

    def cay_inv(self, g):
        sym = is_sym(g)
        w = so3_cay_inv(g[:3, :3], sym)
        return vcat([w, (eye(3, sym) - 0.5 * hat3(w)) @ g[:3, 3]], sym)

    def dcay(self, xi):
        """Inverse of eq. 38: [[dcay_ω, 0], [½ v̂ dcay_ω, (I − ω̂/2)⁻¹]]."""
        sym = is_sym(xi)
        w, v = xi[:3], xi[3:]
        D = so3_dcay(w, sym)
        return block_matrix([[D, zeros(3, sym)], [0.5 * hat3(v) @ D, a_inv(w, sym)]], sym)

    def dcay_inv(self, xi):
        """[[I − ω̂/2 + ωωᵀ/4, 0], [−½(I − ω̂/2)v̂, I − ω̂/2]]  (Jimenez2013, eq. 38)."""
        sym = is_sym(xi)
        w, v = xi[:3], xi[3:]
        A = eye(3, sym) - 0.5 * hat3(w)
        return block_matrix([[so3_dcay_inv(w, sym), zeros(3, sym)], [-0.5 * A @ hat3(v), A]], sym)

    def exp(self, xi):
        sym = is_sym(xi)
        w, v = xi[:3], xi[3:]
        return self._pose(so3_exp(w, sym), so3_dexp(w, sym) @ v, sym)

    def log(self, g):
        sym = is_sym(g)
        w = so3_log(g[:3, :3], sym)
        return vcat([w, so3_dexp_inv(w, sym) @ (g[:3, 3] if sym else np.asarray(g[:3, 3], float))], sym)

    def _q(self, w, v, sym):
        """Lower-left block of dexp (Barfoot's Q(ρ = v, φ = ω)): Σ_{j≥1} of the ad_ξ series' v̂ terms."""
        t = sq(w, sym)
        W, V = hat3(w), hat3(v)
        WV, VW = W @ V, V @ W
        WVW = WV @ W
        return (
            0.5 * V
            + c_sin3(t, sym) * (WV + VW + WVW)
            + c_q2(t, sym) * (W @ WV + VW @ W - 3.0 * WVW)
            + c_q3(t, sym) * (WVW @ W + W @ WVW)
        )

    def dexp(self, xi):
        """dexp_ξ = Σ ad_ξ^j/(j+1)! = [[J(ω), 0], [Q(ω, v), J(ω)]]  (Jimenez2013, §5 a)."""
        sym = is_sym(xi)
        w, v = xi[:3], xi[3:]
        J = so3_dexp(w, sym)
        return block_matrix([[J, zeros(3, sym)], [self._q(w, v, sym), J]], sym)

    def dexp_inv(self, xi):
        """dexp⁻¹_ξ = Σ B_j/j! ad_ξ^j = [[J⁻¹, 0], [−J⁻¹QJ⁻¹, J⁻¹]]."""
        sym = is_sym(xi)
        w, v = xi[:3], xi[3:]
        Ji = so3_dexp_inv(w, sym)
        return block_matrix([[Ji, zeros(3, sym)], [-Ji @ self._q(w, v, sym) @ Ji, Ji]], sym)


class _SE2(LieGroup):
    """SE(2) ∋ g = [[R(θ), x], [0, 1]], ξ = (ω, v_x, v_y). Numpy only (no integrator runs on SE(2) yet)."""

    name, dim, size, nq, rot = "SE2", 3, 3, 6, 2
    _J = np.array([[0.0, -1.0], [1.0, 0.0]])

    def hat(self, xi):
        w, vx, vy = (float(a) for a in xi)
        return np.array([[0.0, -w, vx], [w, 0.0, vy], [0.0, 0.0, 0.0]])

    def vee(self, X):
        return np.array([X[1, 0], X[0, 2], X[1, 2]], float)

    def Ad(self, g):
        """Ad_g ξ = (ω, R v − ω J x): [[1, 0], [(x_y, −x_x)ᵀ, R]]."""
        A = np.eye(3)
        A[1:, 1:] = g[:2, :2]
        A[1, 0], A[2, 0] = g[1, 2], -g[0, 2]
        return A

    def ad(self, xi):
        w, vx, vy = (float(a) for a in xi)
        return np.array([[0.0, 0.0, 0.0], [vy, 0.0, -w], [-vx, w, 0.0]])

    def _pose(self, c, s, p):
        return np.array([[c, -s, p[0]], [s, c, p[1]], [0.0, 0.0, 1.0]])

    def cay(self, xi):
        """(e − ξ̂/2)⁻¹(e + ξ̂/2): rotation by 2 atan(ω/2), translation (I + ωJ/2)v/(1 + ω²/4)."""
        w, v = float(xi[0]), np.asarray(xi[1:], float)
        d = 1.0 + 0.25 * w * w
        return self._pose((1.0 - 0.25 * w * w) / d, w / d, (v + 0.5 * w * (self._J @ v)) / d)

    def cay_inv(self, g):
        c1 = 1.0 + g[0, 0]
        if not c1 > CAYLEY_MARGIN:
            raise RetractionDomainError(
                f"Cayley retraction: τ⁻¹ = cay⁻¹ is undefined for a rotation by π (1 + cos θ = {c1:.2e})"
            )
        w = 2.0 * g[1, 0] / c1
        return np.concatenate([[w], (np.eye(2) - 0.5 * w * self._J) @ g[:2, 2]])

    def _cay_affine(self, xi):
        """(e − ξ̂/2) and its inverse (3×3): the factors of the right-trivialized Cayley differential."""
        X = 0.5 * self.hat(xi)
        return np.eye(3) - X, np.eye(3) + X

    def dcay(self, xi):
        """dcay_ξ η = vee((e − ξ̂/2)⁻¹ η̂ (e + ξ̂/2)⁻¹) (Jimenez2013, §5 b), column by column."""
        Am, Ap = self._cay_affine(xi)
        Ami, Api = np.linalg.inv(Am), np.linalg.inv(Ap)
        return np.column_stack([self.vee(Ami @ self.hat(e) @ Api) for e in np.eye(3)])

    def dcay_inv(self, xi):
        """dcay⁻¹_ξ η = vee((e − ξ̂/2) η̂ (e + ξ̂/2)) (Jimenez2013, §5 b)."""
        Am, Ap = self._cay_affine(xi)
        return np.column_stack([self.vee(Am @ self.hat(e) @ Ap) for e in np.eye(3)])

    def exp(self, xi):
        w, v = float(xi[0]), np.asarray(xi[1:], float)
        t = w * w
        s, c = c_sin(t, False), c_cos(t, False)
        V = np.array([[s, -c * w], [c * w, s]])
        return self._pose(math.cos(w), math.sin(w), V @ v)

    def log(self, g):
        w = math.atan2(g[1, 0], g[0, 0])
        t = w * w
        s, c = c_sin(t, False), c_cos(t, False)
        V = np.array([[s, -c * w], [c * w, s]])
        return np.concatenate([[w], np.linalg.solve(V, g[:2, 2])])

    # ad³ = −ω² ad (characteristic polynomial s(s² + ω²)): the SO(3) coefficients apply to ad.
    def dexp(self, xi):
        A, t = self.ad(xi), float(xi[0]) ** 2
        return np.eye(3) + c_cos(t, False) * A + c_sin3(t, False) * (A @ A)

    def dexp_inv(self, xi):
        A, t = self.ad(xi), float(xi[0]) ** 2
        if t >= (2 * math.pi - 1e-6) ** 2:
            raise dexp_singular(t)
        return np.eye(3) - 0.5 * A + c_cot(t, False) * (A @ A)


SO3, SE3, SE2 = _SO3(), _SE3(), _SE2()
GROUPS = {"SO3": SO3, "SE2": SE2, "SE3": SE3}


def get_group(name: str) -> LieGroup:
    key = name.upper().replace("(", "").replace(")", "")
    if key not in GROUPS:
        raise ValueError(f"unknown Lie group {name!r}; choose one of {sorted(GROUPS)}")
    return GROUPS[key]


class Retraction:
    """τ with τ⁻¹, dτ, dτ⁻¹ on one group: ``Retraction(SE3, 'cayley')`` (Jimenez2013, §5, Definition 5.1)."""

    def __init__(self, group: LieGroup, kind: str = "cayley"):
        self.group, self.kind = group, check_retraction(kind)
        if kind == "cayley":
            self.tau, self.tau_inv, self.dtau, self.dtau_inv = group.cay, group.cay_inv, group.dcay, group.dcay_inv
        else:
            self.tau, self.tau_inv, self.dtau, self.dtau_inv = group.exp, group.log, group.dexp, group.dexp_inv

    def __repr__(self) -> str:
        return f"Retraction({self.group.name}, {self.kind!r})"
