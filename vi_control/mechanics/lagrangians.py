"""Discrete Lagrangians L_d(q_k, q_{k+1}) over the symbolic tree, for the generalized-coordinate DEL machinery.

- ``midpoint``: Johnson2015, eq. 3a, L_d = Δt·L((q_k + q_{k+1})/2, (q_{k+1} − q_k)/Δt).
- ``trapezoidal_se3``: Lee2016, eq. 9 summed over the bodies, L_d = Σ_i ξ_iᵀG_iξ_i/(2Δt) − Δt/2 (V(q_k) + V(q_{k+1}))
  with ξ_i = log(T_i(q_k)⁻¹ T_i(q_{k+1})) ∈ se(3) in (ω, v) order and G_i the spatial inertia about body i's frame
  — the discrete Lagrangian LinearTimeVI's DRNEA differentiates. Written symbolically here, its exact first and
  second derivatives come from automatic differentiation like the midpoint rule's (the linearization of the
  seed-001 step).

The SE(3) logarithm is smooth in the relative pose: θ/sin θ and the coefficient of ŵ² in J⁻¹(ω) are evaluated
as power series below a small angle and in closed form above, so AD never meets 0/0.
"""

from __future__ import annotations

from collections.abc import Callable

import casadi as ca
import numpy as np

from ..model.robot import RobotModel
from .graph_lock import builds_graph
from .symbolic import SymbolicTree

LAGRANGIANS = ("midpoint", "trapezoidal_se3")

# Below these squared magnitudes the series are used: truncation ~1e-42 (σ²) and ~1e-26 (θ²), far below rounding.
_SERIES_SIN2 = 1e-6
_SERIES_THETA2 = 1e-4
# asin(σ)/σ = Σ (2n)! / (4ⁿ (n!)² (2n+1)) σ²ⁿ: θ/sin θ as a series in σ² = sin²θ (θ < π/2)
_ASIN_OVER_X = [1.0, 1.0 / 6.0, 3.0 / 40.0, 5.0 / 112.0, 35.0 / 1152.0, 63.0 / 2816.0, 231.0 / 13312.0]
# β(θ) = (1 − θ sin θ / (2(1 − cos θ)))/θ² = 1/12 + θ²/720 + θ⁴/30240 + θ⁶/1209600 + …
_BETA = [1.0 / 12.0, 1.0 / 720.0, 1.0 / 30240.0, 1.0 / 1209600.0, 1.0 / 47900160.0]


def _series(coeffs: list[float], t: ca.SX) -> ca.SX:
    out = ca.SX(coeffs[-1])
    for c in reversed(coeffs[:-1]):
        out = c + t * out
    return out


def _vee(S: ca.SX) -> ca.SX:
    return ca.vertcat(S[2, 1], S[0, 2], S[1, 0])


def _hat(w: ca.SX) -> ca.SX:
    return ca.vertcat(ca.horzcat(0, -w[2], w[1]), ca.horzcat(w[2], 0, -w[0]), ca.horzcat(-w[1], w[0], 0))


def se3_log(R: ca.SX, p: ca.SX) -> ca.SX:
    """ξ = (ω, v) with exp(ξ) = (R, p): ω = θ/sin θ · vee(R − Rᵀ)/2, v = J(ω)⁻¹ p (Lee2016, eq. 10).

    Defined for rotation angles θ < π; smooth, with exact AD derivatives, down to θ = 0.
    """
    s = _vee(R - R.T) / 2  # sin θ · axis
    c = (R[0, 0] + R[1, 1] + R[2, 2] - 1) / 2  # cos θ
    s2 = ca.dot(s, s)
    sigma = ca.sqrt(ca.if_else(s2 < _SERIES_SIN2, 1.0, s2))  # guarded: never 0 on the closed-form branch
    ratio = ca.if_else(s2 < _SERIES_SIN2, _series(_ASIN_OVER_X, s2), ca.atan2(sigma, c) / sigma)
    w = ratio * s
    t = ca.dot(w, w)  # θ²
    th = ca.sqrt(ca.if_else(t < _SERIES_THETA2, 1.0, t))
    closed = (1 - th * ca.sin(th) / (2 * (1 - ca.cos(th)))) / ca.if_else(t < _SERIES_THETA2, 1.0, t)
    beta = ca.if_else(t < _SERIES_THETA2, _series(_BETA, t), closed)
    W = _hat(w)
    v = p - 0.5 * (W @ p) + beta * (W @ (W @ p))
    return ca.vertcat(w, v)


def body_spatial_inertias(robot: RobotModel) -> list[np.ndarray]:
    """G_i (6×6, (ω, v) order) about each joint frame i = 1 … njoints−1 (Lee2016, eq. 7 off the centre of mass)."""
    out = []
    for i in range(1, robot.pin_model.njoints):
        I = robot.pin_model.inertias[i]
        m, C = (
            I.mass,
            np.array([[0.0, -I.lever[2], I.lever[1]], [I.lever[2], 0.0, -I.lever[0]], [-I.lever[1], I.lever[0], 0.0]]),
        )
        G = np.zeros((6, 6))
        G[:3, :3] = I.inertia - m * C @ C
        G[:3, 3:] = m * C
        G[3:, :3] = -m * C
        G[3:, 3:] = m * np.eye(3)
        out.append(G)
    return out


@builds_graph
def discrete_lagrangian(kind: str, robot: RobotModel, tree: SymbolicTree, dt: float) -> Callable[[ca.SX, ca.SX], ca.SX]:
    """L_d(q0, q1) as a CasADi function of two configuration vectors (``kind`` in LAGRANGIANS)."""
    q, v = tree.q, tree.v
    if kind == "midpoint":
        L = ca.Function("L", [q, v], [tree.kinetic - tree.potential])
        return lambda q0, q1: dt * L((q0 + q1) / 2, (q1 - q0) / dt)
    if kind == "trapezoidal_se3":
        V = ca.Function("V", [q], [tree.potential])
        q0s, q1s = ca.SX.sym("q0", robot.nq), ca.SX.sym("q1", robot.nq)
        frames = ca.Function("frames", [q], [ca.horzcat(*tree.rotations[1:]), ca.horzcat(*tree.positions[1:])])
        R0, P0 = frames(q0s)
        R1, P1 = frames(q1s)
        kinetic = 0
        for i, G in enumerate(body_spatial_inertias(robot)):
            Ra, Rb = R0[:, 3 * i : 3 * i + 3], R1[:, 3 * i : 3 * i + 3]
            xi = se3_log(Ra.T @ Rb, Ra.T @ (P1[:, i] - P0[:, i]))
            kinetic += ca.dot(xi, ca.DM(G) @ xi)
        Ld = ca.Function("Ld", [q0s, q1s], [kinetic / (2 * dt) - dt / 2 * (V(q0s) + V(q1s))])
        return lambda q0, q1: Ld(q0, q1)
    raise ValueError(f"unknown discrete Lagrangian {kind!r}; choose one of {LAGRANGIANS}")
