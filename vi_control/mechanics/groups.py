"""Matrix Lie groups SO(3), SE(2), SE(3) with the Cayley and exponential retractions of seed 002 §5.

Conventions (seed 002 §5, §6.1): an algebra element is a vector with the angular part first, ξ = (ω, v)
for SE(3) and ξ = (ω, v_x, v_y) for SE(2) (as ``mechanics.lie`` and seed 001). A retraction τ: 𝔤 → G is a
local diffeomorphism with τ(ξ)τ(−ξ) = e. Its *right-trivialized* differential dτ_ξ and the inverse dτ⁻¹_ξ
are n×n matrices with (Definition 5.1)

    ∂_ξ τ(ξ)·η = (dτ_ξ η)^ τ(ξ),        ∂_ξ τ⁻¹(g)·η = dτ⁻¹_ξ(η τ(−ξ))   (g = τ(ξ)).

Two retractions: ``cay`` (e − ξ/2)⁻¹(e + ξ/2) (§5 b, eqs. 34–38; rational, no transcendental functions) and
``exp`` (§5 a; closed forms of Σ ad^j/(j+1)! and Σ B_j/j! ad^j). Every function works on numpy arrays and on
CasADi symbols (SX/MX column vectors and matrices), so the integrator and the optimal-control conditions
differentiate the very same formulas; numpy paths reuse ``mechanics.lie`` (hat, Ad, ad, Rodrigues).

Domain: the Cayley map's inverse is undefined at rotations by π (e + g singular), the exponential's
differential at |ω| = 2π. Asking for a τ⁻¹ there raises ``RetractionDomainError`` naming the rotation.
"""

from __future__ import annotations

import math

import casadi as ca
import numpy as np

from . import lie

__all__ = ["RetractionDomainError", "LieGroup", "SO3", "SE2", "SE3", "GROUPS", "Retraction", "RETRACTIONS",
           "get_group", "quaternion_from_rotation", "rotation_from_quaternion"]

RETRACTIONS = ("cayley", "exp")
# 1 + tr R below this (the Cayley coordinates tan(θ/2) above ~1e5): τ⁻¹ = cay⁻¹ is refused.
_CAYLEY_MARGIN = 1e-10
# Below this θ², transcendental coefficients are evaluated by their Taylor series (exact to ~1e-17).
_SMALL = 1e-4


class RetractionDomainError(ValueError):
    """τ⁻¹ (or dτ⁻¹) requested outside the retraction's domain (seed 002 §5: τ is only a local diffeomorphism)."""


def _is_sym(*xs) -> bool:
    return any(isinstance(x, (ca.SX, ca.MX)) for x in xs)


# ---- small backend-neutral helpers ------------------------------------------------------------------------
def _mat(rows, sym: bool):
    if sym:
        return ca.vertcat(*[ca.horzcat(*r) for r in rows])
    return np.array(rows, dtype=float)


def _eye(n: int, sym: bool):
    return ca.SX.eye(n) if sym else np.eye(n)


def _block(blocks, sym: bool):
    return ca.blockcat(blocks) if sym else np.vstack([np.hstack(row) for row in blocks])


def _vcat(parts, sym: bool):
    return ca.vertcat(*parts) if sym else np.concatenate([np.atleast_1d(p) for p in parts])


def _outer(a, b, sym: bool):
    return a @ b.T if sym else np.outer(a, b)


def _sq(w, sym: bool):
    return ca.dot(w, w) if sym else float(w @ w)


def hat3(w):
    """ŵ with ŵx = w × x (seed 002 eq. 33)."""
    if _is_sym(w):
        return _mat([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]], True)
    return lie.hat(np.asarray(w, float))


def vee3(W):
    return _vcat([W[2, 1], W[0, 2], W[1, 0]], _is_sym(W))


def _series_or(theta2, series, exact, sym: bool):
    """f(θ) from its Taylor series in θ² for small θ, else from the closed form ``exact(θ)`` (NaN-free AD)."""
    if sym:
        th = ca.sqrt(ca.if_else(theta2 < _SMALL, 1.0, theta2))
        return ca.if_else(theta2 < _SMALL, series(theta2), exact(th))
    return series(theta2) if theta2 < _SMALL else exact(math.sqrt(theta2))


# Coefficients of the exponential's closed forms, each with its series (θ² = t):
def _c_sin(t, sym):  # sin θ / θ
    return _series_or(t, lambda t: 1 - t / 6 + t**2 / 120 - t**3 / 5040, lambda th: _f(sym).sin(th) / th, sym)


def _c_cos(t, sym):  # (1 − cos θ)/θ²
    return _series_or(t, lambda t: 0.5 - t / 24 + t**2 / 720 - t**3 / 40320,
                      lambda th: (1 - _f(sym).cos(th)) / th**2, sym)


def _c_sin3(t, sym):  # (θ − sin θ)/θ³
    return _series_or(t, lambda t: 1 / 6 - t / 120 + t**2 / 5040 - t**3 / 362880,
                      lambda th: (th - _f(sym).sin(th)) / th**3, sym)


def _c_cot(t, sym):  # (1 − (θ/2)cot(θ/2))/θ²  (dexp⁻¹)
    return _series_or(t, lambda t: 1 / 12 + t / 720 + t**2 / 30240 + t**3 / 1209600,
                      lambda th: (1 - 0.5 * th / _f(sym).tan(0.5 * th)) / th**2, sym)


def _c_q2(t, sym):  # (θ² + 2cos θ − 2)/(2θ⁴)  (SE(3) dexp, Barfoot's Q)
    return _series_or(t, lambda t: 1 / 24 - t / 720 + t**2 / 40320 - t**3 / 3628800,
                      lambda th: (th**2 + 2 * _f(sym).cos(th) - 2) / (2 * th**4), sym)


def _c_q3(t, sym):  # (2θ − 3 sin θ + θ cos θ)/(2θ⁵)
    return _series_or(t, lambda t: 1 / 120 - t / 2520 + t**2 / 120960 - t**3 / 9979200,
                      lambda th: (2 * th - 3 * _f(sym).sin(th) + th * _f(sym).cos(th)) / (2 * th**5), sym)


def _f(sym: bool):
    return ca if sym else math


# ---- SO(3) ------------------------------------------------------------------------------------------------
def _so3_cay(w, sym):
    """cay(ŵ) = I + 4/(4 + |ω|²)(ŵ + ŵ²/2)  (seed 002 eq. 34)."""
    W = hat3(w)
    return _eye(3, sym) + 4.0 / (4.0 + _sq(w, sym)) * (W + 0.5 * (W @ W))


def _so3_cay_inv(R, sym):
    """ω = 2 vee(R − Rᵀ)/(1 + tr R) (Gibbs vector ×2); undefined at rotations by π."""
    tr1 = 1.0 + R[0, 0] + R[1, 1] + R[2, 2]
    if not sym and not tr1 > _CAYLEY_MARGIN:
        raise RetractionDomainError(
            f"Cayley retraction: τ⁻¹ = cay⁻¹ is undefined for a relative rotation by π (1 + tr R = {tr1:.2e}): "
            "the two attitudes are half a turn apart (seed 002 §5: τ is a local diffeomorphism); use smaller "
            "steps or the exponential retraction")
    return 2.0 * vee3(R - R.T) / tr1


def _so3_dcay(w, sym):
    """dcay_ω = 2/(4 + |ω|²)(2I + ŵ)  (seed 002 eq. 35)."""
    return 2.0 / (4.0 + _sq(w, sym)) * (2.0 * _eye(3, sym) + hat3(w))


def _so3_dcay_inv(w, sym):
    """dcay⁻¹_ω = I − ŵ/2 + ωωᵀ/4  (seed 002 eq. 38, upper-left block)."""
    return _eye(3, sym) - 0.5 * hat3(w) + 0.25 * _outer(w, w, sym)


def _so3_exp(w, sym):
    if not sym:
        return lie.exp_so3(np.asarray(w, float))
    t = _sq(w, True)
    W = hat3(w)
    return _eye(3, True) + _c_sin(t, True) * W + _c_cos(t, True) * (W @ W)


def _so3_log(R, sym):
    """ω with exp(ω̂) = R, |ω| ≤ π (robust near 0 and near π)."""
    if sym:
        # θ/sin θ as a function of s² = sin²θ (smooth at the identity, where AD of |axial| would give NaN).
        axial = 0.5 * vee3(R - R.T)
        s2 = ca.dot(axial, axial)
        c = 0.5 * (R[0, 0] + R[1, 1] + R[2, 2] - 1.0)
        s = ca.sqrt(ca.if_else(s2 < _SMALL, 1.0, s2))
        f = ca.if_else(ca.logic_and(s2 < _SMALL, c > 0), 1 + s2 / 6 + 3 * s2**2 / 40 + 5 * s2**3 / 112,
                       ca.atan2(s, c) / s)
        return f * axial
    R = np.asarray(R, float)
    axial = 0.5 * vee3(R - R.T)
    s = float(np.linalg.norm(axial))
    c = 0.5 * (R[0, 0] + R[1, 1] + R[2, 2] - 1.0)
    th = math.atan2(s, c)
    if th < 1e-2:
        return (1.0 + th**2 / 6.0 + 7.0 * th**4 / 360.0) * axial
    if th < math.pi - 1e-3:
        return th / s * axial
    # Near π: the axis from the symmetric part R + Rᵀ = 2 cos θ I + 2(1 − cos θ) aaᵀ, sign from the axial part.
    M = 0.5 * (R + R.T) - c * np.eye(3)
    i = int(np.argmax(np.diag(M)))
    a = M[i] / math.sqrt(max(M[i, i], 1e-300))
    a /= np.linalg.norm(a)
    if axial @ a < 0:
        a = -a
    return th * a


def _so3_dexp(w, sym):
    """dexp_ω = Σ ŵ^j/(j+1)! = I + (1 − cos θ)/θ² ŵ + (θ − sin θ)/θ³ ŵ²  (seed 002 §5 a)."""
    t, W = _sq(w, sym), hat3(w)
    return _eye(3, sym) + _c_cos(t, sym) * W + _c_sin3(t, sym) * (W @ W)


def _dexp_singular(t: float) -> RetractionDomainError:
    return RetractionDomainError(f"exponential retraction: dexp⁻¹ is singular at |ω| = 2π (|ω| = {math.sqrt(t):.6g})")


def _so3_dexp_inv(w, sym):
    """dexp⁻¹_ω = Σ B_j/j! ŵ^j = I − ŵ/2 + (1 − (θ/2)cot(θ/2))/θ² ŵ²; singular at θ = 2π."""
    t, W = _sq(w, sym), hat3(w)
    if not sym and t >= (2 * math.pi - 1e-6) ** 2:
        raise _dexp_singular(t)
    return _eye(3, sym) - 0.5 * W + _c_cot(t, sym) * (W @ W)


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
        if _is_sym(g):
            return ca.vertcat(ca.horzcat(R.T, -(R.T @ p)), ca.horzcat(ca.SX.zeros(1, k), 1))
        out = np.eye(k + 1)
        out[:k, :k], out[:k, k] = R.T, -(R.T @ p)
        return out

    def compose(self, a, b):
        return a @ b

    def to_coordinates(self, g):
        sym = _is_sym(g)
        k = self.rot
        if not sym:
            g = np.asarray(g, float)
            return np.concatenate([g[:k, :k].ravel(), g[:k, k]]) if self.size > k else g.ravel().copy()
        parts = [g[i, j] for i in range(k) for j in range(k)] + [g[i, k] for i in range(k) if self.size > k]
        return _vcat(parts, sym)

    def from_coordinates(self, q):
        sym = _is_sym(q)
        k = self.rot
        if not sym:
            q = np.asarray(q, float)
            if q.shape != (self.nq,):
                raise ValueError(f"{self.name}: {q.shape[-1]} coordinates, expected {self.nq}")
            g = np.eye(self.size)
            g[:k, :k] = q[: k * k].reshape(k, k)
            g[:k, k:] = q[k * k:, None] if self.size > k else g[:k, k:]
            return g
        R = _mat([[q[k * i + j] for j in range(k)] for i in range(k)], sym)
        if self.size == k:
            return R
        p = _vcat([q[k * k + i] for i in range(k)], sym)
        return _block([[R, p if sym else p[:, None]], [_mat([[0] * k], sym), _mat([[1]], sym)]], sym)

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
    return lambda self, x: fn(x, _is_sym(x))


class _SO3(LieGroup):
    name, dim, size, nq, rot = "SO3", 3, 3, 9, 3

    def Ad(self, R):
        return R

    hat = ad = staticmethod(hat3)
    vee = staticmethod(vee3)
    cay, cay_inv, dcay, dcay_inv = _bind(_so3_cay), _bind(_so3_cay_inv), _bind(_so3_dcay), _bind(_so3_dcay_inv)
    exp, log, dexp, dexp_inv = _bind(_so3_exp), _bind(_so3_log), _bind(_so3_dexp), _bind(_so3_dexp_inv)


class _SE3(LieGroup):
    """SE(3) ∋ g = [[R, x], [0, 1]], ξ = (ω, v) (seed 002 §6.1)."""

    name, dim, size, nq, rot = "SE3", 6, 4, 12, 3

    def hat(self, xi):
        if _is_sym(xi):
            return ca.vertcat(ca.horzcat(hat3(xi[:3]), xi[3:]), ca.SX.zeros(1, 4))
        xi = np.asarray(xi, float)
        return np.block([[hat3(xi[:3]), xi[3:, None]], [np.zeros((1, 4))]])

    def vee(self, X):
        return _vcat([vee3(X[:3, :3]), X[:3, 3]], _is_sym(X))

    def Ad(self, g):
        """[Ad_g] = [[R, 0], [x̂R, R]] (seed 001 eq. 15)."""
        if _is_sym(g):
            R, p = g[:3, :3], g[:3, 3]
            return _block([[R, ca.SX.zeros(3, 3)], [hat3(p) @ R, R]], True)
        return lie.adjoint(g[:3, :3], g[:3, 3])

    def ad(self, xi):
        """[ad_ξ] = [[ω̂, 0], [v̂, ω̂]]."""
        if _is_sym(xi):
            W = hat3(xi[:3])
            return _block([[W, ca.SX.zeros(3, 3)], [hat3(xi[3:]), W]], True)
        return lie.ad(np.asarray(xi, float))

    def _pose(self, R, p, sym):
        return _block([[R, p if sym else np.asarray(p)[:, None]], [_mat([[0, 0, 0, 1]], sym)]], sym)

    # Cayley: the matrix Cayley (e − ξ̂/2)⁻¹(e + ξ̂/2) of §5 b. Its translation is (I − ω̂/2)⁻¹ v; eq. 34's
    # "dcay_ω v" with dcay from eq. 35 differs from it by (ω·v)ω/(4 + |ω|²) (docs/lie_groups.md), and eq. 38 is
    # the differential of the matrix Cayley, which is what we use.
    def cay(self, xi):
        sym = _is_sym(xi)
        w, v = xi[:3], xi[3:]
        return self._pose(_so3_cay(w, sym), _a_inv(w, sym) @ v, sym)

    def cay_inv(self, g):
        sym = _is_sym(g)
        w = _so3_cay_inv(g[:3, :3], sym)
        return _vcat([w, (_eye(3, sym) - 0.5 * hat3(w)) @ g[:3, 3]], sym)

    def dcay(self, xi):
        """Inverse of eq. 38: [[dcay_ω, 0], [½ v̂ dcay_ω, (I − ω̂/2)⁻¹]]."""
        sym = _is_sym(xi)
        w, v = xi[:3], xi[3:]
        D = _so3_dcay(w, sym)
        return _block([[D, _zeros(3, sym)], [0.5 * hat3(v) @ D, _a_inv(w, sym)]], sym)

    def dcay_inv(self, xi):
        """[[I − ω̂/2 + ωωᵀ/4, 0], [−½(I − ω̂/2)v̂, I − ω̂/2]]  (seed 002 eq. 38)."""
        sym = _is_sym(xi)
        w, v = xi[:3], xi[3:]
        A = _eye(3, sym) - 0.5 * hat3(w)
        return _block([[_so3_dcay_inv(w, sym), _zeros(3, sym)], [-0.5 * A @ hat3(v), A]], sym)

    def exp(self, xi):
        sym = _is_sym(xi)
        w, v = xi[:3], xi[3:]
        return self._pose(_so3_exp(w, sym), _so3_dexp(w, sym) @ v, sym)

    def log(self, g):
        sym = _is_sym(g)
        w = _so3_log(g[:3, :3], sym)
        return _vcat([w, _so3_dexp_inv(w, sym) @ (g[:3, 3] if sym else np.asarray(g[:3, 3], float))], sym)

    def _q(self, w, v, sym):
        """Lower-left block of dexp (Barfoot's Q(ρ = v, φ = ω)): Σ_{j≥1} of the ad_ξ series' v̂ terms."""
        t = _sq(w, sym)
        W, V = hat3(w), hat3(v)
        WV, VW = W @ V, V @ W
        WVW = WV @ W
        return (0.5 * V + _c_sin3(t, sym) * (WV + VW + WVW)
                + _c_q2(t, sym) * (W @ WV + VW @ W - 3.0 * WVW)
                + _c_q3(t, sym) * (WVW @ W + W @ WVW))

    def dexp(self, xi):
        """dexp_ξ = Σ ad_ξ^j/(j+1)! = [[J(ω), 0], [Q(ω, v), J(ω)]]  (seed 002 §5 a)."""
        sym = _is_sym(xi)
        w, v = xi[:3], xi[3:]
        J = _so3_dexp(w, sym)
        return _block([[J, _zeros(3, sym)], [self._q(w, v, sym), J]], sym)

    def dexp_inv(self, xi):
        """dexp⁻¹_ξ = Σ B_j/j! ad_ξ^j = [[J⁻¹, 0], [−J⁻¹QJ⁻¹, J⁻¹]]."""
        sym = _is_sym(xi)
        w, v = xi[:3], xi[3:]
        Ji = _so3_dexp_inv(w, sym)
        return _block([[Ji, _zeros(3, sym)], [-Ji @ self._q(w, v, sym) @ Ji, Ji]], sym)


def _zeros(n, sym):
    return ca.SX.zeros(n, n) if sym else np.zeros((n, n))


def _a_inv(w, sym):
    """(I − ŵ/2)⁻¹ = (I + ŵ/2 + wwᵀ/4)/(1 + |w|²/4) (closed form, no solve)."""
    return (_eye(3, sym) + 0.5 * hat3(w) + 0.25 * _outer(w, w, sym)) / (1.0 + 0.25 * _sq(w, sym))


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
        if not c1 > _CAYLEY_MARGIN:
            raise RetractionDomainError(f"Cayley retraction: τ⁻¹ = cay⁻¹ is undefined for a rotation by π "
                                        f"(1 + cos θ = {c1:.2e})")
        w = 2.0 * g[1, 0] / c1
        return np.concatenate([[w], (np.eye(2) - 0.5 * w * self._J) @ g[:2, 2]])

    def _cay_affine(self, xi):
        """(e − ξ̂/2) and its inverse (3×3): the factors of the right-trivialized Cayley differential."""
        X = 0.5 * self.hat(xi)
        return np.eye(3) - X, np.eye(3) + X

    def dcay(self, xi):
        """dcay_ξ η = vee((e − ξ̂/2)⁻¹ η̂ (e + ξ̂/2)⁻¹) (seed 002 §5 b), column by column."""
        Am, Ap = self._cay_affine(xi)
        Ami, Api = np.linalg.inv(Am), np.linalg.inv(Ap)
        return np.column_stack([self.vee(Ami @ self.hat(e) @ Api) for e in np.eye(3)])

    def dcay_inv(self, xi):
        """dcay⁻¹_ξ η = vee((e − ξ̂/2) η̂ (e + ξ̂/2)) (seed 002 §5 b)."""
        Am, Ap = self._cay_affine(xi)
        return np.column_stack([self.vee(Am @ self.hat(e) @ Ap) for e in np.eye(3)])

    def exp(self, xi):
        w, v = float(xi[0]), np.asarray(xi[1:], float)
        t = w * w
        s, c = _c_sin(t, False), _c_cos(t, False)
        V = np.array([[s, -c * w], [c * w, s]])
        return self._pose(math.cos(w), math.sin(w), V @ v)

    def log(self, g):
        w = math.atan2(g[1, 0], g[0, 0])
        t = w * w
        s, c = _c_sin(t, False), _c_cos(t, False)
        V = np.array([[s, -c * w], [c * w, s]])
        return np.concatenate([[w], np.linalg.solve(V, g[:2, 2])])

    # ad³ = −ω² ad (characteristic polynomial s(s² + ω²)): the SO(3) coefficients apply to ad.
    def dexp(self, xi):
        A, t = self.ad(xi), float(xi[0]) ** 2
        return np.eye(3) + _c_cos(t, False) * A + _c_sin3(t, False) * (A @ A)

    def dexp_inv(self, xi):
        A, t = self.ad(xi), float(xi[0]) ** 2
        if t >= (2 * math.pi - 1e-6) ** 2:
            raise _dexp_singular(t)
        return np.eye(3) - 0.5 * A + _c_cot(t, False) * (A @ A)


SO3, SE3, SE2 = _SO3(), _SE3(), _SE2()
GROUPS = {"SO3": SO3, "SE2": SE2, "SE3": SE3}


def get_group(name: str) -> LieGroup:
    key = name.upper().replace("(", "").replace(")", "")
    if key not in GROUPS:
        raise ValueError(f"unknown Lie group {name!r}; choose one of {sorted(GROUPS)}")
    return GROUPS[key]


class Retraction:
    """τ with τ⁻¹, dτ, dτ⁻¹ on one group: ``Retraction(SE3, 'cayley')`` (seed 002 §5, Definition 5.1)."""

    def __init__(self, group: LieGroup, kind: str = "cayley"):
        if kind not in RETRACTIONS:
            raise ValueError(f"retraction must be one of {RETRACTIONS}, got {kind!r}")
        self.group, self.kind = group, kind
        if kind == "cayley":
            self.tau, self.tau_inv, self.dtau, self.dtau_inv = group.cay, group.cay_inv, group.dcay, group.dcay_inv
        else:
            self.tau, self.tau_inv, self.dtau, self.dtau_inv = group.exp, group.log, group.dexp, group.dexp_inv

    def __repr__(self) -> str:
        return f"Retraction({self.group.name}, {self.kind!r})"


# ---- unit quaternions (for nav_msgs/geometry_msgs at the ROS edge and the RK4 peer) ------------------------
def quaternion_from_rotation(R: np.ndarray) -> np.ndarray:
    """(x, y, z, w) with w ≥ 0 from a rotation matrix (Shepperd's method: the largest of the four squares)."""
    R = np.asarray(R, float)
    tr = R[0, 0] + R[1, 1] + R[2, 2]
    cand = np.array([1 + 2 * R[0, 0] - tr, 1 + 2 * R[1, 1] - tr, 1 + 2 * R[2, 2] - tr, 1 + tr])
    i = int(np.argmax(cand))
    q = np.empty(4)
    s = 0.5 * math.sqrt(max(cand[i], 0.0))
    q[i] = s
    f = 0.25 / s
    if i == 3:
        q[0], q[1], q[2] = (R[2, 1] - R[1, 2]) * f, (R[0, 2] - R[2, 0]) * f, (R[1, 0] - R[0, 1]) * f
    elif i == 0:
        q[1], q[2], q[3] = (R[0, 1] + R[1, 0]) * f, (R[0, 2] + R[2, 0]) * f, (R[2, 1] - R[1, 2]) * f
    elif i == 1:
        q[0], q[2], q[3] = (R[0, 1] + R[1, 0]) * f, (R[1, 2] + R[2, 1]) * f, (R[0, 2] - R[2, 0]) * f
    else:
        q[0], q[1], q[3] = (R[0, 2] + R[2, 0]) * f, (R[1, 2] + R[2, 1]) * f, (R[1, 0] - R[0, 1]) * f
    return -q if q[3] < 0 else q


def rotation_from_quaternion(q, normalize_tol: float | None = 1e-6):
    """R from (x, y, z, w). numpy: ValueError if |q| is off 1 by more than ``normalize_tol`` (None: no check),
    else normalized. CasADi: the polynomial formula for a unit quaternion (no normalization)."""
    if _is_sym(q):
        x, y, z, w = q[0], q[1], q[2], q[3]
    else:
        q = np.asarray(q, float)
        if q.shape != (4,) or not np.all(np.isfinite(q)):
            raise ValueError(f"quaternion must be 4 finite numbers (x, y, z, w), got {q}")
        n = float(np.linalg.norm(q))
        if normalize_tol is not None and abs(n - 1.0) > normalize_tol:
            raise ValueError(f"quaternion is not unit length (|q| = {n:.9g}, tolerance {normalize_tol:g})")
        x, y, z, w = q / n
    return _mat([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                 [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                 [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]], _is_sym(q))
