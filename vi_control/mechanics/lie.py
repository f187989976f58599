"""Batched SE(3) / so(3) utilities for the per-body DEL equations of Lee2016, §2.2.

Conventions follow Lee2016: a twist is V = (w, v) (angular first, eq. 5), [Ad_T] = [[R, 0], [p̂R, R]]
(eq. 15), [ad_V] = [[ŵ, 0], [v̂, ŵ]] (eq. 13). Every function takes a leading batch axis of bodies,
so one call handles the whole tree (numpy vectorization instead of a Python loop over bodies).
"""

from __future__ import annotations

import numpy as np
from scipy.special import bernoulli

# dlog_ξ = Σ_j B_j/j! ad_ξ^j (Lee2016, eq. 12-13): B_0 = 1, B_1 = -1/2, odd j ≥ 3 vanish.
_MAX_TERMS = 12  # even powers up to ad^24; enough for |θ| ≤ 1.5 to ~1e-17
_BERNOULLI = bernoulli(2 * _MAX_TERMS)
C_EVEN = np.array([_BERNOULLI[2 * k] / np.prod(np.arange(1.0, 2 * k + 1)) for k in range(_MAX_TERMS + 1)])
C_EVEN[0] = 1.0


def mv(A: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Batched matrix-vector product A_n b_n (matmul is cheaper to call than einsum)."""
    return (A @ b[..., None])[..., 0]


def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Batched a × b over the last axis (np.cross costs several axis moves per call)."""
    out = np.empty(np.broadcast_shapes(a.shape, b.shape))
    out[..., 0] = a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1]
    out[..., 1] = a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2]
    out[..., 2] = a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
    return out


def hat(w: np.ndarray) -> np.ndarray:
    """(n, 3) → (n, 3, 3) skew matrices ŵ with ŵ x = w × x."""
    W = np.zeros(w.shape[:-1] + (3, 3))
    W[..., 0, 1], W[..., 0, 2] = -w[..., 2], w[..., 1]
    W[..., 1, 0], W[..., 1, 2] = w[..., 2], -w[..., 0]
    W[..., 2, 0], W[..., 2, 1] = -w[..., 1], w[..., 0]
    return W


def adjoint(R: np.ndarray, p: np.ndarray) -> np.ndarray:
    """[Ad_T] for T = (R, p), batched (Lee2016, eq. 15)."""
    A = np.zeros(R.shape[:-2] + (6, 6))
    A[..., :3, :3] = R
    A[..., 3:, 3:] = R
    A[..., 3:, :3] = hat(p) @ R
    return A


def adjoint_inv(R: np.ndarray, p: np.ndarray) -> np.ndarray:
    """[Ad_{T^{-1}}] = [[Rᵀ, 0], [-Rᵀp̂, Rᵀ]] without forming T^{-1}."""
    Rt = np.swapaxes(R, -1, -2)
    A = np.zeros(R.shape[:-2] + (6, 6))
    A[..., :3, :3] = Rt
    A[..., 3:, 3:] = Rt
    A[..., 3:, :3] = -Rt @ hat(p)
    return A


def ad(xi: np.ndarray) -> np.ndarray:
    """[ad_ξ] = [[ŵ, 0], [v̂, ŵ]] (Lee2016, eq. 13), batched over (n, 6)."""
    A = np.zeros(xi.shape[:-1] + (6, 6))
    W = hat(xi[..., :3])
    A[..., :3, :3] = W
    A[..., 3:, 3:] = W
    A[..., 3:, :3] = hat(xi[..., 3:])
    return A


def coad_bar(y: np.ndarray) -> np.ndarray:
    """Matrix B(y) with ad_δᵀ y = B(y) δ for every twist δ; y = (m, f) is a wrench."""
    B = np.zeros(y.shape[:-1] + (6, 6))
    M, F = hat(y[..., :3]), hat(y[..., 3:])
    B[..., :3, :3] = M
    B[..., :3, 3:] = F
    B[..., 3:, :3] = F
    return B


def exp_so3_minus_identity(w: np.ndarray) -> np.ndarray:
    """exp(ŵ) − I by Rodrigues' formula, batched; kept apart from I so small rotations keep their digits."""
    th = np.sqrt((w * w).sum(axis=-1))[..., None, None]
    W = hat(w)
    small = th < 1e-4
    ths = np.where(small, 1.0, th)
    a = np.where(small, 1.0 - th**2 / 6.0, np.sin(ths) / ths)
    b = np.where(small, 0.5 - th**2 / 24.0, 2.0 * (np.sin(0.5 * ths) / ths) ** 2)
    return a * W + b * (W @ W)


def exp_so3(w: np.ndarray) -> np.ndarray:
    """Rodrigues' formula, batched: (n, 3) → (n, 3, 3)."""
    return np.eye(3) + exp_so3_minus_identity(w)


def log_se3(Rm: np.ndarray, p: np.ndarray) -> np.ndarray:
    """ξ = log(T) ∈ se(3) as (w, v) for T = (I + Rm, p), batched; Lee2016, eq. 10 takes V^k = log(ΔT^k)/Δt.

    The rotation enters as Rm = R − I: one step's displacement is close to the identity, and
    forming R first would round its small part to the absolute precision of 1.

    The angle uses atan2(|axial(R)|, (tr R − 1)/2), accurate for the small relative rotations of
    one time step (arccos would lose half the digits). Rotations near π are rejected: the log is
    not unique there and the step is far too large for the discrete Lagrangian anyway.
    """
    axial = 0.5 * np.stack(
        [Rm[..., 2, 1] - Rm[..., 1, 2], Rm[..., 0, 2] - Rm[..., 2, 0], Rm[..., 1, 0] - Rm[..., 0, 1]], axis=-1
    )
    s = np.sqrt((axial * axial).sum(axis=-1))
    c = 1.0 + 0.5 * np.trace(Rm, axis1=-2, axis2=-1)
    th = np.arctan2(s, c)
    if np.any(th > 3.0):
        raise ValueError(f"relative rotation of {th.max():.3f} rad in one step: reduce dt (log map near π)")
    small = th < 1e-2
    ths = np.where(small, 1.0, th)
    ss = np.where(small, 1.0, s)
    k = np.where(small, 1.0 + th**2 / 6.0 + 7.0 * th**4 / 360.0, ths / ss)
    w = k[..., None] * axial
    # V(w)^{-1} = I − ŵ/2 + β ŵ² with β = (1 − (θ/2)cot(θ/2))/θ²
    beta = np.where(small, 1.0 / 12.0 + th**2 / 720.0 + th**4 / 30240.0, (1.0 - 0.5 * ths / np.tan(0.5 * ths)) / ths**2)
    W = hat(w)
    Wp = mv(W, p)
    v = p - 0.5 * Wp + beta[..., None] * mv(W, Wp)
    return np.concatenate([w, v], axis=-1)


def n_series_terms(xi: np.ndarray) -> int:
    """Even Bernoulli terms needed so that the dlog series is exact to ~1e-17 (ratio |θ|/2π per power)."""
    th = float(np.abs(xi[..., :3]).max(initial=0.0)) * np.sqrt(3.0) + 1e-300
    if th >= 1.5:
        return _MAX_TERMS
    k = int(np.ceil(np.log(1e-18) / (2.0 * np.log(th / (2 * np.pi)))))
    return int(min(max(k, 1), _MAX_TERMS))


def dlog_transpose_apply(xi: np.ndarray, y: np.ndarray, terms: int | None = None) -> np.ndarray:
    """[dlog_ξ]ᵀ y = Σ_j B_j/j! (ad_ξᵀ)^j y (Lee2016, eq. 12-13), batched, Horner in ad_ξᵀ²."""
    K = n_series_terms(xi) if terms is None else terms
    At = np.swapaxes(ad(xi), -1, -2)
    A2 = At @ At
    acc = C_EVEN[K] * y
    for k in range(K - 1, -1, -1):
        acc = C_EVEN[k] * y + mv(A2, acc)
    return acc - 0.5 * mv(At, y)


def dlog_matrix(xi: np.ndarray, terms: int | None = None) -> np.ndarray:
    """[dlog_ξ] = Σ_j B_j/j! ad_ξ^j as (n, 6, 6) matrices."""
    K = n_series_terms(xi) if terms is None else terms
    A = ad(xi)
    A2 = A @ A
    acc = C_EVEN[K] * np.eye(6)
    for k in range(K - 1, -1, -1):
        acc = C_EVEN[k] * np.eye(6) + A2 @ acc
    return acc - 0.5 * A


def momentum_and_derivative(xi: np.ndarray, G: np.ndarray, terms: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """m(ξ) = [dlog_ξ]ᵀ G ξ and ∂m/∂ξ, batched (Lee2016, eq. 21b times Δt; used by Alg. 4).

    Horner's rule y_j = c_j Gξ + ad_ξᵀ y_{j+1} is differentiated along: since ad_ξᵀ y is linear in ξ
    with ∂(ad_ξᵀ y)/∂ξ = B(y) (``coad_bar``), D_j = c_j G + ad_ξᵀ D_{j+1} + B(y_{j+1}).
    """
    K = n_series_terms(xi) if terms is None else terms
    coeffs = np.zeros(2 * K + 1)
    coeffs[0::2] = C_EVEN[: K + 1]
    coeffs[1] = -0.5
    At = np.swapaxes(ad(xi), -1, -2)
    b = mv(G, xi)
    y = coeffs[-1] * b
    D = coeffs[-1] * G
    for c in coeffs[-2::-1]:
        D = c * G + At @ D + coad_bar(y)
        y = c * b + mv(At, y)
    return y, D
