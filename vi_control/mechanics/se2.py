"""SE(2) in the coordinates of Kobilarov2010 App. B: the retractions τ = exp, cay (named 'cayley') and their inverse
right-trivialized tangents dτ⁻¹ (eqs. 36–37, 41–44), in CasADi SX so the reduced integrator's residual has exact
derivatives.

An element is g = (θ, x, y); an algebra element v = (v¹, v², v³) = (angular, translation), v̂ as in App. B.
"""

from __future__ import annotations

import casadi as ca
import numpy as np

from .groups import RETRACTIONS, check_retraction  # noqa: F401 (se2.RETRACTIONS: the names RDP takes)

_SMALL = 1e-4  # below |v¹| this, the series of sin v/v, (1 − cos v)/v and (v/2)cot(v/2) are exact to ~1e-17


def _series(w: ca.SX, exact, series) -> ca.SX:
    """exact(w) away from 0, its series near 0, without evaluating 0/0 (if_else evaluates both branches)."""
    small = ca.fabs(w) < _SMALL
    ws = ca.if_else(small, 1.0, w)
    return ca.if_else(small, series(w), exact(ws))


def ad_matrix(v: ca.SX) -> ca.SX:
    """[ad_v] of App. B (ad_v w = [v̂, ŵ])."""
    return ca.vertcat(ca.horzcat(0, 0, 0), ca.horzcat(v[2], 0, -v[0]), ca.horzcat(-v[1], v[0], 0))


def exp(v: ca.SX) -> ca.SX:
    """τ = exp as (θ, x, y) (App. B)."""
    w = v[0]
    s = _series(w, lambda a: ca.sin(a) / a, lambda a: 1 - a**2 / 6 + a**4 / 120)
    c = _series(w, lambda a: (1 - ca.cos(a)) / a, lambda a: a / 2 - a**3 / 24 + a**5 / 720)
    return ca.vertcat(w, v[1] * s - v[2] * c, v[1] * c + v[2] * s)


def cay(v: ca.SX) -> ca.SX:
    """τ = cay as (θ, x, y) (App. B): rotation angle 2·atan(v¹/2)."""
    w = v[0]
    d = 4 + w**2
    return ca.vertcat(2 * ca.atan(w / 2), (-2 * w * v[2] + 4 * v[1]) / d, (2 * w * v[1] + 4 * v[2]) / d)


def dexp_inv(v: ca.SX) -> ca.SX:
    """[dexp⁻¹_v] exactly: ψ(ad_v) with ψ(z) = z/(eᶻ − 1) (eq. 36), in closed form on SE(2).

    ad_v = [[0, 0], [w, v¹J]] with w = (v³, −v²) and J the rotation by π/2, so ψ(ad_v) =
    [[1, 0], [G w, αI + βJ]] with α = (v¹/2)cot(v¹/2), β = −v¹/2, G = ((1 − α)/v¹)J − I/2; eq. 42 is its
    truncation at ad².
    """
    w = v[0]
    alpha = _series(w, lambda a: (a / 2) / ca.tan(a / 2), lambda a: 1 - a**2 / 12 - a**4 / 720)
    gam = _series(w, lambda a: (1 - (a / 2) / ca.tan(a / 2)) / a, lambda a: a / 12 + a**3 / 720)
    beta = -w / 2
    wv = ca.vertcat(v[2], -v[1])
    Gw = ca.vertcat(-gam * wv[1], gam * wv[0]) - 0.5 * wv
    return ca.vertcat(ca.horzcat(1, 0, 0), ca.horzcat(Gw[0], alpha, -beta), ca.horzcat(Gw[1], beta, alpha))


def dcay_inv(v: ca.SX) -> ca.SX:
    """[dcay⁻¹_v] = I − ½[ad_v] + ¼[v¹v, 0₃ₓ₂] (eq. 44, exact)."""
    M = ca.SX.eye(3) - 0.5 * ad_matrix(v)
    M[:, 0] = M[:, 0] + 0.25 * v[0] * v
    return M


def retraction(name: str):
    """(τ, dτ⁻¹) for 'exp' or 'cayley' (``RETRACTIONS``; 'cay' is refused naming 'cayley')."""
    return (exp, dexp_inv) if check_retraction(name) == "exp" else (cay, dcay_inv)


def compose(g: ca.SX, h: ca.SX) -> ca.SX:
    """g·h for g, h = (θ, x, y)."""
    c, s = ca.cos(g[0]), ca.sin(g[0])
    return ca.vertcat(g[0] + h[0], g[1] + c * h[1] - s * h[2], g[2] + s * h[1] + c * h[2])


def body_to_spatial(g: np.ndarray, xi: np.ndarray) -> np.ndarray:
    """(θ̇, ẋ, ẏ) of a body velocity ξ = g⁻¹ġ = (ω, v_x, v_y) at g = (θ, x, y)."""
    c, s = np.cos(g[0]), np.sin(g[0])
    return np.array([xi[0], c * xi[1] - s * xi[2], s * xi[1] + c * xi[2]])


def spatial_to_body(g: np.ndarray, gdot: np.ndarray) -> np.ndarray:
    """ξ = g⁻¹ġ of (θ̇, ẋ, ẏ) at g."""
    c, s = np.cos(g[0]), np.sin(g[0])
    return np.array([gdot[0], c * gdot[1] + s * gdot[2], -s * gdot[1] + c * gdot[2]])
