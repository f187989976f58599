"""A plan is data: times, states, inputs, gains, model identity, Δt, cost weights — saved as .npz."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np


@dataclass
class Plan:
    """Reference trajectory with time-varying feedback gains.

    ``X``: (N+1, nx) states x_k = (q_k, p_k); ``U``: (N, nu) inputs; ``K``: (N, nu, nx) gains of
    u_k = U_k + K_k (X_k − x_k) (the controller's sign convention); ``times``: (N+1,) seconds;
    ``K_final`` (nu, nx): equilibrium (infinite-horizon) gain to hold X_N after the plan ends.
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

    def __post_init__(self) -> None:
        self.X, self.U, self.K = (np.asarray(a, float) for a in (self.X, self.U, self.K))
        self.times = np.asarray(self.times, float)
        n = len(self.U)
        if self.X.shape[0] != n + 1 or self.times.shape[0] != n + 1:
            raise ValueError(f"plan shapes disagree: X {self.X.shape}, U {self.U.shape}, times {self.times.shape}")
        if self.K.shape != (n, self.U.shape[1], self.X.shape[1]):
            raise ValueError(f"gains K must have shape {(n, self.U.shape[1], self.X.shape[1])}, got {self.K.shape}")

    @property
    def horizon(self) -> int:
        return len(self.U)

    def save(self, path: str) -> None:
        meta = dict(dt=self.dt, model_name=self.model_name, model_hash=self.model_hash,
                    joint_names=self.joint_names, input_names=self.input_names, weights=self.weights)
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
