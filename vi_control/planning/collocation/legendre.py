"""Legendre–Gauss nodes, quadrature weights, barycentric interpolation and differentiation matrices
(MorenoMartin2022, §III–IV).

All polynomials are Lagrange interpolants on a node set τ ⊂ [−1, 1] in barycentric form (Berrut & Trefethen 2004):
the weights ωⱼ = 1/∏ₖ≠ⱼ(τⱼ − τₖ) give stable evaluation anywhere and the differentiation matrix
Dᵢⱼ = L̇ⱼ(τᵢ) = (ωⱼ/ωᵢ)/(τᵢ − τⱼ) (i ≠ j), Dᵢᵢ = −Σⱼ≠ᵢ Dᵢⱼ, which is exact on polynomials of the interpolant's degree.

- LG (MorenoMartin2022, eqs. 5–10): nodes τ₀ = −1 and the N Gauss points; the N × (N+1) matrix ``D`` of eq. 8 is
  ``lg_differentiation(N)``.
- LG2 (MorenoMartin2022, eqs. 11–16): nodes τ₀ = −1, the N Gauss points and τ_{N+1} = +1 (B = N + 2); the square
  matrix D* of eq. 13 is ``lg2_differentiation(N)``, and Q̈ = (2/t_f)² D*² Q (eq. 15).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ...model.scalars import is_integer


@lru_cache(maxsize=64)
def gauss_points(N: int) -> tuple[np.ndarray, np.ndarray]:
    """The N Legendre–Gauss points (roots of P_N, increasing, interior to [−1, 1]) and quadrature weights.

    The rule integrates polynomials of degree ≤ 2N − 1 exactly on [−1, 1]. Read-only arrays (cached).
    """
    if not is_integer(N) or N < 1:
        raise ValueError(f"the number of Gauss points must be a positive integer, got {N!r}")
    tau, w = np.polynomial.legendre.leggauss(int(N))
    tau.flags.writeable = w.flags.writeable = False
    return tau, w


def lg_nodes(N: int) -> np.ndarray:
    """LG node points: τ₀ = −1 followed by the N Gauss points (B = N + 1, MorenoMartin2022, eq. 5)."""
    return np.concatenate([[-1.0], gauss_points(N)[0]])


def lg2_nodes(N: int) -> np.ndarray:
    """LG2 node points: −1, the N Gauss points, +1 (B = N + 2, MorenoMartin2022, §IV)."""
    return np.concatenate([[-1.0], gauss_points(N)[0], [1.0]])


def barycentric_weights(nodes: np.ndarray) -> np.ndarray:
    """ωⱼ = 1/∏ₖ≠ⱼ(τⱼ − τₖ), scaled to max |ω| = 1 (the scale cancels in every formula)."""
    x = np.asarray(nodes, float)
    diff = x[:, None] - x[None, :]
    np.fill_diagonal(diff, 1.0)
    if np.any(diff == 0.0):
        raise ValueError("interpolation nodes must be distinct")
    # Products of many factors over/underflow for large sets: accumulate logarithms and signs instead.
    log_abs = -np.log(np.abs(diff)).sum(axis=1)
    sign = np.prod(np.sign(diff), axis=1)
    return sign * np.exp(log_abs - log_abs.max())


def differentiation_matrix(nodes: np.ndarray) -> np.ndarray:
    """Square D with (D y)ᵢ = p′(τᵢ) for the interpolant p of values y on ``nodes`` (exact for degree ≤ B − 1)."""
    x = np.asarray(nodes, float)
    w = barycentric_weights(x)
    diff = x[:, None] - x[None, :]
    np.fill_diagonal(diff, 1.0)
    D = (w[None, :] / w[:, None]) / diff
    np.fill_diagonal(D, 0.0)
    np.fill_diagonal(D, -D.sum(axis=1))  # rows of D annihilate constants
    return D


def interpolation_matrix(nodes: np.ndarray, t: np.ndarray) -> np.ndarray:
    """E (len(t), B) with (E y)ᵢ = p(tᵢ): the second barycentric formula; exact at the nodes themselves."""
    x = np.asarray(nodes, float)
    t = np.atleast_1d(np.asarray(t, float))
    w = barycentric_weights(x)
    diff = t[:, None] - x[None, :]
    hit = diff == 0.0
    diff[hit] = 1.0
    E = w[None, :] / diff
    E /= E.sum(axis=1, keepdims=True)
    rows = hit.any(axis=1)
    E[rows] = hit[rows].astype(float)
    return E


@lru_cache(maxsize=64)
def _lg_matrices(N: int) -> tuple[np.ndarray, np.ndarray]:
    D1 = differentiation_matrix(lg_nodes(N))
    D2 = differentiation_matrix(lg2_nodes(N))
    D1.flags.writeable = D2.flags.writeable = False
    return D1, D2


def lg_differentiation(N: int) -> np.ndarray:
    """The N × (N+1) Gauss pseudospectral differentiation matrix D of MorenoMartin2022, eq. 8 (rows: collocation
    points)."""
    return _lg_matrices(N)[0][1:]


def lg2_differentiation(N: int) -> np.ndarray:
    """The (N+2) × (N+2) matrix D* of MorenoMartin2022, eq. 13 on the LG2 nodes (−1, Gauss points, +1)."""
    return _lg_matrices(N)[1]


class Interpolant:
    """The Lagrange interpolant through values Y (B, n) on ``nodes`` mapped affinely to [t0, t1].

    ``__call__(t, order)`` evaluates the polynomial (order 0) or its time derivatives (order 1, 2, …) exactly:
    derivatives are interpolants of D·Y on the same nodes (a polynomial's derivative has lower degree).
    Outside [t0, t1] the polynomial is extrapolated.
    """

    def __init__(self, nodes: np.ndarray, Y: np.ndarray, t0: float, t1: float):
        self.nodes = np.asarray(nodes, float)
        Y = np.asarray(Y, float)
        self.Y = Y.reshape(len(self.nodes), -1)
        self.t0, self.t1 = float(t0), float(t1)
        self._D = differentiation_matrix(self.nodes)
        self._derivs = [self.Y]

    def values(self, order: int = 0) -> np.ndarray:
        """Node values of the order-th time derivative (B, n)."""
        scale = 2.0 / (self.t1 - self.t0)
        while len(self._derivs) <= order:
            self._derivs.append(scale * (self._D @ self._derivs[-1]))
        return self._derivs[order]

    def tau(self, t: np.ndarray) -> np.ndarray:
        return -1.0 + 2.0 * (np.asarray(t, float) - self.t0) / (self.t1 - self.t0)

    def __call__(self, t: np.ndarray, order: int = 0) -> np.ndarray:
        return interpolation_matrix(self.nodes, self.tau(t)) @ self.values(order)
