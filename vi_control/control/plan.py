"""A plan is data: times, states, inputs, gains, model identity, Δt, cost weights — saved as .npz.

This module is a leaf of the control layer: planners produce Plans, controllers and nodes consume them,
and nothing here depends on how a plan was made. ``state_error`` is the one definition of "reference minus
measured state" that planner and controller share.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field

import numpy as np

from ..model.robot import wrap_angle


def state_error(x_ref: np.ndarray, x: np.ndarray, continuous_mask: np.ndarray | None = None) -> np.ndarray:
    """x_ref − x with the configuration part of continuous joints taken modulo 2π, in [−π, π).

    Only q of continuous (unbounded revolute) joints is wrapped: p is a momentum, never an angle.
    Works on single states (nx,), on configurations alone (nq,), and on stacks (..., nx) / (..., nq).
    """
    e = np.asarray(x_ref, float) - np.asarray(x, float)
    if continuous_mask is None or not np.any(continuous_mask):
        return e
    mask = np.asarray(continuous_mask, bool)
    nq = mask.size
    if e.shape[-1] not in (nq, 2 * nq):
        raise ValueError(f"size {e.shape[-1]} is neither nq = {nq} nor 2·nq = {2 * nq} of the continuous mask")
    e = e.copy()
    eq = e[..., :nq]
    eq[..., mask] = wrap_angle(eq[..., mask])
    return e


@dataclass
class Plan:
    """Reference trajectory with time-varying feedback gains.

    ``X``: (N+1, nx) states x_k = (q_k, p_k); ``U``: (N, nu) inputs; ``K``: (N, nu, ndx) gains of
    u_k = U_k + K_k (X_k ⊖ x_k) (the controller's sign convention), acting on tangent vectors of the state
    manifold (ndx = nx for (q, p) states; 2·dim for a Lie-group state of ``integrators.lie_group``, whose nx
    stores a rotation matrix); ``times``: (N+1,) seconds;
    ``K_final`` (nu, ndx): equilibrium (infinite-horizon) gain to hold X_N after the plan ends, with
    ``U_final`` its input; ``converged``: False for a best-effort plan whose optimizer stopped early.
    """

    times: np.ndarray
    X: np.ndarray
    U: np.ndarray
    K: np.ndarray
    dt: float
    model_name: str
    model_hash: str
    joint_names: list[str]
    input_names: list[str]
    weights: dict = field(default_factory=dict)
    K_final: np.ndarray | None = None
    U_final: np.ndarray | None = None
    converged: bool = True

    def __post_init__(self) -> None:
        self.X, self.U, self.K = (np.asarray(a, float) for a in (self.X, self.U, self.K))
        self.times = np.asarray(self.times, float)
        n = len(self.U)
        if self.X.shape[0] != n + 1 or self.times.shape[0] != n + 1:
            raise ValueError(f"plan shapes disagree: X {self.X.shape}, U {self.U.shape}, times {self.times.shape}")
        if self.K.ndim != 3 or self.K.shape[:2] != (n, self.U.shape[1]) or not 1 <= self.K.shape[2] <= self.X.shape[1]:
            raise ValueError(f"gains K must have shape ({n}, {self.U.shape[1]}, ndx) with 1 ≤ ndx ≤ nx = "
                             f"{self.X.shape[1]}, got {self.K.shape}")

    @property
    def horizon(self) -> int:
        return len(self.U)

    def shifted(self, t0: float) -> Plan:
        """The same plan starting at time ``t0`` (a copy; times keep their spacing)."""
        return dataclasses.replace(self, times=self.times - self.times[0] + float(t0))

    def save(self, path: str) -> None:
        meta = dict(dt=self.dt, model_name=self.model_name, model_hash=self.model_hash,
                    joint_names=self.joint_names, input_names=self.input_names, weights=self.weights,
                    converged=bool(self.converged))
        extra = {}
        if self.K_final is not None:
            extra["K_final"] = self.K_final
        if self.U_final is not None:
            extra["U_final"] = self.U_final
        np.savez(path, times=self.times, X=self.X, U=self.U, K=self.K, meta=json.dumps(meta), **extra)

    @classmethod
    def load(cls, path: str) -> Plan:
        with np.load(path, allow_pickle=False) as d:
            meta = json.loads(str(d["meta"]))
            return cls(times=d["times"], X=d["X"], U=d["U"], K=d["K"],
                       K_final=d["K_final"] if "K_final" in d else None,
                       U_final=d["U_final"] if "U_final" in d else None, **meta)
