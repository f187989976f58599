"""Quadratic tracking cost of a (possibly infeasible) reference (Johnson2015, §VIII-A).

J = Σ_{k<N} ½‖x_k − x_ref,k‖²_Q + ½‖u_k − u_ref,k‖²_R + ½‖x_N − x_ref,N‖²_Qf.

The role of Crocoddyl's cost model: ``calc`` gives values, ``calc_diff`` the derivatives a
Riccati-type backward pass needs (l_x, l_u, l_xx, l_uu, l_ux). Differences are taken plainly, not
modulo 2π: the cost stays smooth, and a swing-up reference decides which way round to go.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def weight_matrix(w: np.ndarray | float | list, n: int, name: str = "weight") -> np.ndarray:
    """Scalar → w·I, vector → diag(w), matrix as is; checks size and positive semidefiniteness."""
    W = np.asarray(w, float)
    if W.ndim == 0:
        W = float(W) * np.eye(n)
    elif W.ndim == 1:
        if W.size != n:
            raise ValueError(f"{name}: expected {n} diagonal entries, got {W.size}")
        W = np.diag(W)
    elif W.shape != (n, n):
        raise ValueError(f"{name}: expected a ({n}, {n}) matrix, got shape {W.shape}")
    if n:  # the usual weight, diagonal, finite and ≥ 0: the result below is W itself (~20 µs of checks less per weight)
        d = W.diagonal()
        if np.isfinite(d).all() and np.count_nonzero(W) == np.count_nonzero(d) and d.min() >= 0.0:
            return W.copy()
    if not np.all(np.isfinite(W)):
        raise ValueError(f"{name}: entries must be finite")
    Ws = 0.5 * (W + W.T)
    diagonal = not np.any(Ws - np.diag(np.diagonal(Ws)))  # its eigenvalues are its diagonal: no eigvalsh (~50 µs)
    # round-off slack relative to the weight (a floor of 1e-12 let Q = [1, −1e-3] × 2⁻⁴⁰ through)
    if (np.diagonal(Ws) if diagonal else np.linalg.eigvalsh(Ws)).min() < -1e-12 * np.abs(W).max():
        raise ValueError(f"{name}: weight must be positive semidefinite")
    return Ws


@dataclass
class CostDerivatives:
    lx: np.ndarray
    lu: np.ndarray
    lxx: np.ndarray
    luu: np.ndarray
    lux: np.ndarray


class QuadraticTrackingCost:
    """Running state/input error plus terminal state error against X_ref (N+1, nx), U_ref (N, nu)."""

    def __init__(self, X_ref: np.ndarray, U_ref: np.ndarray, Q, R, Qf):
        self.X_ref = np.asarray(X_ref, float)
        self.U_ref = np.asarray(U_ref, float)
        if self.X_ref.ndim != 2 or self.U_ref.ndim != 2 or len(self.X_ref) != len(self.U_ref) + 1:
            raise ValueError(f"reference shapes disagree: X_ref {self.X_ref.shape}, U_ref {self.U_ref.shape}")
        self.N = len(self.U_ref)
        self.nx, self.nu = self.X_ref.shape[1], self.U_ref.shape[1]
        self.Q = weight_matrix(Q, self.nx, "Q")
        self.R = weight_matrix(R, self.nu, "R")
        self.Qf = weight_matrix(Qf, self.nx, "Qf")

    def running(self, k: int, x: np.ndarray, u: np.ndarray) -> float:
        dx, du = x - self.X_ref[k], u - self.U_ref[k]
        return 0.5 * float(dx @ self.Q @ dx + du @ self.R @ du)

    def terminal(self, x: np.ndarray) -> float:
        dx = x - self.X_ref[self.N]
        return 0.5 * float(dx @ self.Qf @ dx)

    def calc(self, X: np.ndarray, U: np.ndarray) -> float:
        """Total cost J of a trajectory (vectorized)."""
        dX, dU = X[:-1] - self.X_ref[:-1], U - self.U_ref
        run = 0.5 * (np.vdot(dX @ self.Q, dX) + np.vdot(dU @ self.R, dU))  # (a 3-operand einsum: 5× the time)
        return float(run) + self.terminal(X[-1])

    def calc_diff(self, k: int, x: np.ndarray, u: np.ndarray) -> CostDerivatives:
        return CostDerivatives(
            lx=self.Q @ (x - self.X_ref[k]),
            lu=self.R @ (u - self.U_ref[k]),
            lxx=self.Q,
            luu=self.R,
            lux=np.zeros((self.nu, self.nx)),
        )

    def calc_diff_all(self, X: np.ndarray, U: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(l_x, l_u) of every running stage at once, rows k = 0 … N−1 (Q, R symmetric)."""
        return (X[:-1] - self.X_ref[:-1]) @ self.Q, (U - self.U_ref) @ self.R

    def calc_diff_terminal(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.Qf @ (x - self.X_ref[self.N]), self.Qf
