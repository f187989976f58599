"""SO(3) closed forms behind every group of ``mechanics.groups`` (Jimenez2013, §5 a/b) and unit quaternions.

For ω ∈ ℝ³ (ŵx = ω × x, Jimenez2013, eq. 33) this module gives τ(ω), τ⁻¹(R) and the *right-trivialized* differential
dτ_ω with its inverse dτ⁻¹_ω (3×3; Definition 5.1: ∂_ω τ(ω)·η = (dτ_ω η)^ τ(ω)) of two retractions:

- ``cay`` (§5 b, eqs. 34–38): cay(ŵ) = (I − ŵ/2)⁻¹(I + ŵ/2) = I + 4/(4 + |ω|²)(ŵ + ŵ²/2) (eq. 34),
  dcay_ω = 2/(4 + |ω|²)(2I + ŵ) (eq. 35), dcay⁻¹_ω = I − ŵ/2 + ωωᵀ/4 (eq. 38), and (I − ŵ/2)⁻¹ in closed form
  (the SE(3) Cayley translation); rational, no transcendental functions.
- ``exp`` (§5 a): Rodrigues; dexp = Σ ŵ^j/(j+1)! and dexp⁻¹ = Σ B_j/j! ŵ^j in closed form (ŵ³ = −θ²ŵ), with
  coefficients ``c_*`` (sin θ/θ, (1 − cos θ)/θ², ..., and those of Barfoot's Q for SE(3)) taken from their
  Taylor series below θ² = 10⁻⁴.

Every function works on numpy arrays and on CasADi symbols (SX/MX column vectors and matrices), so the integrator
and the optimal-control conditions differentiate the very same formulas (``if_else`` on θ² keeps the AD
derivatives NaN-free at ω = 0); numpy paths reuse ``mechanics.lie`` (hat, Rodrigues). ``mechanics.groups``
assembles SO(3), SE(3) and SE(2) from these pieces and re-exports the public names.

Domain: the Cayley map's inverse is undefined at rotations by π (I + R singular), the exponential's differential
at |ω| = 2π. Asking for a τ⁻¹ there raises ``RetractionDomainError`` naming the rotation.

Unit quaternions (x, y, z, w) ↔ rotation matrices serve nav_msgs/geometry_msgs at the ROS edge and the RK4 peer.
"""

from __future__ import annotations

import math

import casadi as ca
import numpy as np

from . import lie

__all__ = ["RetractionDomainError", "hat3", "vee3", "quaternion_from_rotation", "rotation_from_quaternion"]

# 1 + tr R below this (the Cayley coordinates tan(θ/2) above ~1e5): τ⁻¹ = cay⁻¹ is refused.
CAYLEY_MARGIN = 1e-10
# Below this θ², transcendental coefficients are evaluated by their Taylor series (exact to ~1e-17).
_SMALL = 1e-4


class RetractionDomainError(ValueError):
    """τ⁻¹ (or dτ⁻¹) requested outside the retraction's domain (Jimenez2013, §5: τ is only a local diffeomorphism)."""


def is_sym(*xs) -> bool:
    return any(isinstance(x, (ca.SX, ca.MX)) for x in xs)


# ---- small backend-neutral helpers ------------------------------------------------------------------------
def mat(rows, sym: bool):
    if sym:
        return ca.vertcat(*[ca.horzcat(*r) for r in rows])
    return np.array(rows, dtype=float)


def eye(n: int, sym: bool):
    return ca.SX.eye(n) if sym else np.eye(n)


def zeros(n, sym):
    return ca.SX.zeros(n, n) if sym else np.zeros((n, n))


def block_matrix(blocks, sym: bool):
    return ca.blockcat(blocks) if sym else np.vstack([np.hstack(row) for row in blocks])


def vcat(parts, sym: bool):
    return ca.vertcat(*parts) if sym else np.concatenate([np.atleast_1d(p) for p in parts])


def _outer(a, b, sym: bool):
    return a @ b.T if sym else np.outer(a, b)


def sq(w, sym: bool):
    return ca.dot(w, w) if sym else float(w @ w)


def hat3(w):
    """ŵ with ŵx = w × x (Jimenez2013, eq. 33)."""
    if is_sym(w):
        return mat([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]], True)
    return lie.hat(np.asarray(w, float))


def vee3(W):
    return vcat([W[2, 1], W[0, 2], W[1, 0]], is_sym(W))


def _series_or(theta2, series, exact, sym: bool):
    """f(θ) from its Taylor series in θ² for small θ, else from the closed form ``exact(θ)`` (NaN-free AD)."""
    if sym:
        th = ca.sqrt(ca.if_else(theta2 < _SMALL, 1.0, theta2))
        return ca.if_else(theta2 < _SMALL, series(theta2), exact(th))
    return series(theta2) if theta2 < _SMALL else exact(math.sqrt(theta2))


# Coefficients of the exponential's closed forms, each with its series (θ² = t):
def c_sin(t, sym):  # sin θ / θ
    return _series_or(t, lambda t: 1 - t / 6 + t**2 / 120 - t**3 / 5040, lambda th: _f(sym).sin(th) / th, sym)


def c_cos(t, sym):  # (1 − cos θ)/θ²
    return _series_or(
        t, lambda t: 0.5 - t / 24 + t**2 / 720 - t**3 / 40320, lambda th: (1 - _f(sym).cos(th)) / th**2, sym
    )


def c_sin3(t, sym):  # (θ − sin θ)/θ³
    return _series_or(
        t, lambda t: 1 / 6 - t / 120 + t**2 / 5040 - t**3 / 362880, lambda th: (th - _f(sym).sin(th)) / th**3, sym
    )


def c_cot(t, sym):  # (1 − (θ/2)cot(θ/2))/θ²  (dexp⁻¹)
    return _series_or(
        t,
        lambda t: 1 / 12 + t / 720 + t**2 / 30240 + t**3 / 1209600,
        lambda th: (1 - 0.5 * th / _f(sym).tan(0.5 * th)) / th**2,
        sym,
    )


def c_q2(t, sym):  # (θ² + 2cos θ − 2)/(2θ⁴)  (SE(3) dexp, Barfoot's Q)
    return _series_or(
        t,
        lambda t: 1 / 24 - t / 720 + t**2 / 40320 - t**3 / 3628800,
        lambda th: (th**2 + 2 * _f(sym).cos(th) - 2) / (2 * th**4),
        sym,
    )


def c_q3(t, sym):  # (2θ − 3 sin θ + θ cos θ)/(2θ⁵)
    return _series_or(
        t,
        lambda t: 1 / 120 - t / 2520 + t**2 / 120960 - t**3 / 9979200,
        lambda th: (2 * th - 3 * _f(sym).sin(th) + th * _f(sym).cos(th)) / (2 * th**5),
        sym,
    )


def _f(sym: bool):
    return ca if sym else math


# ---- SO(3) ------------------------------------------------------------------------------------------------
def so3_cay(w, sym):
    """cay(ŵ) = I + 4/(4 + |ω|²)(ŵ + ŵ²/2)  (Jimenez2013, eq. 34)."""
    W = hat3(w)
    return eye(3, sym) + 4.0 / (4.0 + sq(w, sym)) * (W + 0.5 * (W @ W))


def so3_cay_inv(R, sym):
    """ω = 2 vee(R − Rᵀ)/(1 + tr R) (Gibbs vector ×2); undefined at rotations by π."""
    tr1 = 1.0 + R[0, 0] + R[1, 1] + R[2, 2]
    if not sym and not tr1 > CAYLEY_MARGIN:
        raise RetractionDomainError(
            f"Cayley retraction: τ⁻¹ = cay⁻¹ is undefined for a relative rotation by π (1 + tr R = {tr1:.2e}): "
            "the two attitudes are half a turn apart (Jimenez2013, §5: τ is a local diffeomorphism); use smaller "
            "steps or the exponential retraction"
        )
    return 2.0 * vee3(R - R.T) / tr1


def so3_dcay(w, sym):
    """dcay_ω = 2/(4 + |ω|²)(2I + ŵ)  (Jimenez2013, eq. 35)."""
    return 2.0 / (4.0 + sq(w, sym)) * (2.0 * eye(3, sym) + hat3(w))


def so3_dcay_inv(w, sym):
    """dcay⁻¹_ω = I − ŵ/2 + ωωᵀ/4  (Jimenez2013, eq. 38, upper-left block)."""
    return eye(3, sym) - 0.5 * hat3(w) + 0.25 * _outer(w, w, sym)


def a_inv(w, sym):
    """(I − ŵ/2)⁻¹ = (I + ŵ/2 + wwᵀ/4)/(1 + |w|²/4) (closed form, no solve)."""
    return (eye(3, sym) + 0.5 * hat3(w) + 0.25 * _outer(w, w, sym)) / (1.0 + 0.25 * sq(w, sym))


def so3_exp(w, sym):
    if not sym:
        return lie.exp_so3(np.asarray(w, float))
    t = sq(w, True)
    W = hat3(w)
    return eye(3, True) + c_sin(t, True) * W + c_cos(t, True) * (W @ W)


def so3_log(R, sym):
    """ω with exp(ω̂) = R, |ω| ≤ π (robust near 0 and near π)."""
    if sym:
        # θ/sin θ as a function of s² = sin²θ (smooth at the identity, where AD of |axial| would give NaN).
        axial = 0.5 * vee3(R - R.T)
        s2 = ca.dot(axial, axial)
        c = 0.5 * (R[0, 0] + R[1, 1] + R[2, 2] - 1.0)
        s = ca.sqrt(ca.if_else(s2 < _SMALL, 1.0, s2))
        f = ca.if_else(
            ca.logic_and(s2 < _SMALL, c > 0), 1 + s2 / 6 + 3 * s2**2 / 40 + 5 * s2**3 / 112, ca.atan2(s, c) / s
        )
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


def so3_dexp(w, sym):
    """dexp_ω = Σ ŵ^j/(j+1)! = I + (1 − cos θ)/θ² ŵ + (θ − sin θ)/θ³ ŵ²  (Jimenez2013, §5 a)."""
    t, W = sq(w, sym), hat3(w)
    return eye(3, sym) + c_cos(t, sym) * W + c_sin3(t, sym) * (W @ W)


def dexp_singular(t: float) -> RetractionDomainError:
    return RetractionDomainError(f"exponential retraction: dexp⁻¹ is singular at |ω| = 2π (|ω| = {math.sqrt(t):.6g})")


def so3_dexp_inv(w, sym):
    """dexp⁻¹_ω = Σ B_j/j! ŵ^j = I − ŵ/2 + (1 − (θ/2)cot(θ/2))/θ² ŵ²; singular at θ = 2π."""
    t, W = sq(w, sym), hat3(w)
    if not sym and t >= (2 * math.pi - 1e-6) ** 2:
        raise dexp_singular(t)
    return eye(3, sym) - 0.5 * W + c_cot(t, sym) * (W @ W)


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
    if is_sym(q):
        x, y, z, w = q[0], q[1], q[2], q[3]
    else:
        q = np.asarray(q, float)
        if q.shape != (4,) or not np.all(np.isfinite(q)):
            raise ValueError(f"quaternion must be 4 finite numbers (x, y, z, w), got {q}")
        n = float(np.linalg.norm(q))
        if normalize_tol is not None and abs(n - 1.0) > normalize_tol:
            raise ValueError(f"quaternion is not unit length (|q| = {n:.9g}, tolerance {normalize_tol:g})")
        x, y, z, w = q / n
    return mat(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ],
        is_sym(q),
    )
