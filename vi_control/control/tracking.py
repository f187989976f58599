"""Plan tracking law u = U_k + K_k (X_k − x) (seed 000 §VIII, time-varying LQR about a trajectory).

This is the whole controller the ROS node wraps: the node only turns messages into a discrete state
x = (q, p) and the returned input into a command. Nothing here imports ROS.
"""

from __future__ import annotations

import numpy as np

from ..integrators.base import DiscreteSystem, State
from ..model.robot import wrap_angle
from .plan import Plan


class TrackingController:
    """Feedback about a Plan: u_k = U_k + K_k (X_k ⊖ x); after the horizon U_final + K_final (X_N ⊖ x).

    ``state``: the discrete system's state manifold, whose ``diff`` gives X_k ⊖ x; ``continuous_mask``
    (nq,): joints whose measured angle is compared modulo 2π (default: the state's own mask, if it has
    one); ``effort_limits`` (n_torques,) clamp the torque part of u (the first ``n_torques`` entries;
    prescribed-joint positions are not clamped). ``system``: the discrete system the law runs on; if given,
    the plan must have been made for it (``Plan.check_compatible``: model hash, Δt, joints, sizes) unless
    ``allow_mismatch`` says the model differs on purpose.
    """

    def __init__(self, plan: Plan, state: State, effort_limits: np.ndarray | None = None,
                 n_torques: int | None = None, continuous_mask: np.ndarray | None = None,
                 system: DiscreteSystem | None = None, allow_mismatch: bool = False):
        if system is not None:
            plan.check_compatible(system, allow_mismatch=allow_mismatch)
        self.plan = plan
        self.state = state
        mask = getattr(state, "continuous_mask", None) if continuous_mask is None else continuous_mask
        self._wrap = None
        if mask is not None and np.any(mask):
            nq = len(mask)
            self._wrap = np.flatnonzero(np.concatenate([np.asarray(mask, bool),
                                                        np.zeros(state.ndx - nq, bool)]))
        nu = plan.U.shape[1]
        self.n_torques = nu if n_torques is None else int(n_torques)
        lim = np.full(self.n_torques, np.inf) if effort_limits is None else np.asarray(effort_limits, float)
        if lim.shape != (self.n_torques,):
            raise ValueError(f"effort_limits has shape {lim.shape}, expected ({self.n_torques},)")
        self.effort_limits = lim
        # Without an equilibrium gain the last time-varying gain is the best available hold law.
        self.K_final = plan.K[-1] if plan.K_final is None else np.asarray(plan.K_final, float)
        self.U_final = plan.U[-1] if plan.U_final is None else np.asarray(plan.U_final, float)

    @property
    def horizon(self) -> int:
        return self.plan.horizon

    def index(self, t: float) -> int:
        """Step index k of time t on the plan's grid (nearest sample; may exceed the horizon)."""
        return max(0, int(round((t - self.plan.times[0]) / self.plan.dt)))

    def reference(self, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(X_k, U_k, K_k); for k ≥ N the final state with the equilibrium gain."""
        if k >= self.horizon:
            return self.plan.X[-1], self.U_final, self.K_final
        return self.plan.X[k], self.plan.U[k], self.plan.K[k]

    def command(self, k: int, x: np.ndarray) -> tuple[np.ndarray, bool]:
        """Input u for step k at measured state x, and whether the torque part was clamped."""
        x_ref, u_ref, K = self.reference(k)
        e = self.state.diff(x, x_ref)
        if self._wrap is not None:  # a measured angle may be off by turns: compare modulo 2π
            e[self._wrap] = wrap_angle(e[self._wrap])
        u = u_ref + K @ e
        tau = u[: self.n_torques]
        clamped = np.clip(tau, -self.effort_limits, self.effort_limits)
        hit = bool(np.any(clamped != tau))
        u[: self.n_torques] = clamped
        return u, hit


def safe_command(mode: str, velocity: np.ndarray | None, damping: np.ndarray, effort_limits: np.ndarray) -> np.ndarray:
    """The fallback torque: zero, or viscous damping −d·q̇ on the actuated joints (clamped).

    ``velocity`` holds q̇ of the actuated joints; if it is unknown or not finite, damping falls back to zero.
    """
    n = len(effort_limits)
    if mode == "zero" or velocity is None or not np.all(np.isfinite(velocity)):
        return np.zeros(n)
    if mode != "damping":
        raise ValueError(f"unknown safe mode {mode!r} (zero|damping)")
    return np.clip(-np.asarray(damping, float) * np.asarray(velocity, float), -effort_limits, effort_limits)


class StateEstimator:
    """Discrete state x_k = (q_k, p_k) from measured joint states (seed 000 eq. 1b, DESIGN principle 3).

    ``mode='configurations'``: p_k = D₂L_d(q_{k−1}, q_k) from the last two samples when they are one
    Δt apart (±``tolerance``·Δt); otherwise, or with ``mode='velocities'``, p_k = D₂L_d(q − Δt q̇, q) from the
    measured velocity (the discrete state a plan's X_k would have: a held configuration is exact). Continuous
    joints are unwrapped between samples so a ±π wrap is not a huge p.
    """

    def __init__(self, vi: DiscreteSystem, mode: str = "configurations", tolerance: float = 0.25):
        if mode not in ("configurations", "velocities"):
            raise ValueError(f"unknown state estimate {mode!r} (configurations|velocities)")
        self.vi, self.mode, self.tolerance = vi, mode, tolerance
        self.mask = vi.robot.continuous_mask
        self._prev: tuple[float, np.ndarray] | None = None

    def reset(self) -> None:
        self._prev = None

    def update(self, t: float, q: np.ndarray, qdot: np.ndarray | None) -> np.ndarray | None:
        """x for the sample (t, q, q̇), or None if neither a previous sample nor a velocity is usable."""
        prev, self._prev = self._prev, (t, np.array(q, float))
        if self.mode == "configurations" and prev is not None:
            t_prev, q_prev = prev
            if abs((t - t_prev) - self.vi.dt) <= self.tolerance * self.vi.dt:
                dq = q - q_prev
                dq[self.mask] = wrap_angle(dq[self.mask])
                return self.vi.state_from_configurations(q - dq, q)
        if qdot is not None:  # the discrete state of the pair (q − Δt q̇, q), as the plan's X_k are
            return self.vi.state_from_configurations(q - self.vi.dt * np.asarray(qdot, float), q)
        return None
