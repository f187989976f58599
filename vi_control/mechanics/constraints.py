"""Consistent initial configurations of constrained systems: project a guess onto h(q) = 0 (Johnson2015, eq. 28b)."""

from __future__ import annotations

import numpy as np

from ..model.robot import RobotModel
from .symbolic import ContinuousDynamics


def consistent_state(
    robot: RobotModel,
    q_guess: np.ndarray,
    weights: np.ndarray | None = None,
    tol: float = 1e-13,
    max_iterations: int = 50,
) -> np.ndarray:
    """A state x = (q, 0) at rest with h(q) = 0, from ``q_guess`` (prescribed coordinates are kept).

    Weighted minimum-norm Gauss–Newton on h over the dynamic coordinates: Δq_d = −W Dh_d(W)⁺ h with
    W = diag(``weights``) (per dynamic coordinate, default 1), so small weights make a coordinate stiff.
    Raises RuntimeError if |h|∞ does not fall below ``tol`` within ``max_iterations``.
    """
    dyn = ContinuousDynamics(robot)
    idx_d = np.array([robot.joint_index(n) for n in robot.dynamic_joints], dtype=int)
    w = np.ones(len(idx_d)) if weights is None else np.asarray(weights, float)
    if w.shape != idx_d.shape:
        raise ValueError(f"weights has shape {w.shape}, expected ({len(idx_d)},) (one per dynamic coordinate)")
    q = np.array(q_guess, float)
    h = dyn.constraint(q)
    for _ in range(max_iterations):
        if np.abs(h).max(initial=0.0) <= tol:
            return np.concatenate([q, np.zeros(robot.nq)])
        J = dyn.constraint_jacobian(q)[:, idx_d] * w
        q[idx_d] -= w * np.linalg.lstsq(J, h, rcond=None)[0]
        h = dyn.constraint(q)
    if np.abs(h).max(initial=0.0) <= tol:
        return np.concatenate([q, np.zeros(robot.nq)])
    raise RuntimeError(f"consistent_state: h(q) did not converge (|h| = {np.abs(h).max():.2e})")
