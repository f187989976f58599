"""Continuous nonholonomic equations of motion (Lagrange–d'Alembert, Kobilarov2010, eq. 4), independent of the GNI.

    M(q) q̈ + b(q, q̇) = S τ − c ⊙ q̇ + C(q)ᵀλ,   C(q) q̈ + Ċ(q, q̇) q̇ = 0

with M and the bias b (Coriolis, centrifugal, gravity) from Pinocchio's ``crba`` and ``rnea`` and the
constraint rows C(q) (velocity form of every constraint) and their drift Ċq̇ given in closed form. This is
the reference that tests and benchmarks integrate with SciPy (DOP853, RK45) or with explicit Runge–Kutta
methods; nothing here touches the symbolic tree or the system YAML, so it checks them.

``CLOSED_FORM`` holds C(q) and Ċq̇ of the bundled nonholonomic systems, written from the papers' equations
(sleigh: Kobilarov2010, §6.1; snakeboard: eq. 34 and the coupled axles; rolling disk and differential drive: the
textbook rolling conditions, e.g. Bloch, Nonholonomic Mechanics and Control, §1.4).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pinocchio as pin

from ..model.robot import RobotModel

__all__ = ["NonholonomicODE", "CLOSED_FORM", "rk2_midpoint"]

Rows = Callable[[np.ndarray], np.ndarray]
Drift = Callable[[np.ndarray, np.ndarray], np.ndarray]


def _sleigh(a: float) -> tuple[Rows, Drift]:
    """q = (x, y, θ): a θ̇ + sin θ ẋ − cos θ ẏ = 0 (skate at distance a behind the centre of mass)."""

    def C(q):
        return np.array([[np.sin(q[2]), -np.cos(q[2]), a]])

    def drift(q, v):
        return np.array([(np.cos(q[2]) * v[0] + np.sin(q[2]) * v[1]) * v[2]])

    return C, drift


def _snakeboard(l: float) -> tuple[Rows, Drift]:
    """q = (x, y, θ, φ, φ_front, ψ): eq. 34 (back axle along θ + φ, front along θ − φ) and φ − φ_front = 0."""

    def C(q):
        th, ph = q[2], q[3]
        return np.array(
            [
                [-np.sin(th + ph), np.cos(th + ph), -l * np.cos(ph), 0, 0, 0],
                [-np.sin(th - ph), np.cos(th - ph), l * np.cos(ph), 0, 0, 0],
                [0, 0, 0, 1.0, -1.0, 0],
            ]
        )

    def drift(q, v):
        th, ph = q[2], q[3]
        xd, yd, thd, phd = v[:4]
        return np.array(
            [
                -(np.cos(th + ph) * xd + np.sin(th + ph) * yd) * (thd + phd) + l * np.sin(ph) * phd * thd,
                -(np.cos(th - ph) * xd + np.sin(th - ph) * yd) * (thd - phd) - l * np.sin(ph) * phd * thd,
                0.0,
            ]
        )

    return C, drift


def _rolling_disk(r: float) -> tuple[Rows, Drift]:
    """q = (x, y, heading φ, spin θ): ẋ cos φ + ẏ sin φ = r θ̇, ẋ sin φ − ẏ cos φ = 0."""

    def C(q):
        c, s = np.cos(q[2]), np.sin(q[2])
        return np.array([[c, s, 0, -r], [s, -c, 0, 0]])

    def drift(q, v):
        c, s = np.cos(q[2]), np.sin(q[2])
        return np.array([(-s * v[0] + c * v[1]) * v[2], (c * v[0] + s * v[1]) * v[2]])

    return C, drift


def _diffdrive(r: float, b: float) -> tuple[Rows, Drift]:
    """q = (x, y, ψ, left, right): each wheel rolls (ẋ cos ψ + ẏ sin ψ ∓ b ψ̇ = r ω), the axle cannot slip sideways."""

    def C(q):
        c, s = np.cos(q[2]), np.sin(q[2])
        return np.array([[c, s, -b, -r, 0], [-s, c, 0, 0, 0], [c, s, b, 0, -r]])

    def drift(q, v):
        c, s = np.cos(q[2]), np.sin(q[2])
        along, across = (-s * v[0] + c * v[1]) * v[2], (-c * v[0] - s * v[1]) * v[2]
        return np.array([along, across, along])

    return C, drift


# Bundled system -> (C(q), Ċ(q, q̇)q̇), with the parameters of urdf/*.urdf and config/*.yaml.
CLOSED_FORM: dict[str, tuple[Rows, Drift]] = {
    "sleigh": _sleigh(0.5),
    "snakeboard": _snakeboard(1.0),
    "rolling_disk": _rolling_disk(0.5),
    "diffdrive": _diffdrive(0.05, 0.12),
}


class NonholonomicODE:
    """First-order form s = (q, q̇) of the Lagrange–d'Alembert equations for a RobotModel.

    ``rows``/``drift``: C(q) and Ċq̇ (default: ``CLOSED_FORM[robot name]``); ``torque(t)``: the actuated
    joints' torques at time t (default zero). ``rhs(t, s)`` is what scipy.integrate.solve_ivp takes;
    ``multipliers(t, s)`` the constraint forces λ.
    """

    def __init__(
        self,
        robot: RobotModel,
        rows: Rows | None = None,
        drift: Drift | None = None,
        torque: Callable[[float], np.ndarray] | None = None,
    ):
        if rows is None or drift is None:
            rows, drift = CLOSED_FORM[robot.name]
        self.robot, self.rows, self.drift, self.torque = robot, rows, drift, torque
        self.model, self.data = robot.pin_model, robot.pin_model.createData()
        self.idx_act = np.array([robot.joint_index(n) for n in robot.actuated], dtype=int)
        self.n = robot.nq

    def _solve(self, t: float, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        q, v = s[: self.n], s[self.n :]
        M = pin.crba(self.model, self.data, q)
        M = np.triu(M) + np.triu(M, 1).T
        b = pin.rnea(self.model, self.data, q, v, np.zeros(self.n))
        f = -b - self.robot.damping * v
        if self.torque is not None:
            f[self.idx_act] += self.torque(t)
        C = self.rows(q)
        m = len(C)
        K = np.block([[M, -C.T], [C, np.zeros((m, m))]])
        sol = np.linalg.solve(K, np.concatenate([f, -self.drift(q, v)]))
        return sol[: self.n], sol[self.n :]

    def rhs(self, t: float, s: np.ndarray) -> np.ndarray:
        return np.concatenate([s[self.n :], self._solve(t, s)[0]])

    def multipliers(self, t: float, s: np.ndarray) -> np.ndarray:
        return self._solve(t, s)[1]

    def energy(self, s: np.ndarray) -> float:
        q, v = s[: self.n], s[self.n :]
        return float(
            pin.computeKineticEnergy(self.model, self.data, q, v) + pin.computePotentialEnergy(self.model, self.data, q)
        )


def rk2_midpoint(rhs: Callable[[float, np.ndarray], np.ndarray], s0: np.ndarray, h: float, steps: int) -> np.ndarray:
    """The explicit midpoint rule (second-order Runge–Kutta) with ``steps`` steps of ``h``: (steps + 1, n)."""
    S = np.zeros((steps + 1, len(s0)))
    S[0] = s0
    for k in range(steps):
        t = k * h
        s_half = S[k] + 0.5 * h * rhs(t, S[k])
        S[k + 1] = S[k] + h * rhs(t + 0.5 * h, s_half)
    return S
