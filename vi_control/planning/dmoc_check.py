"""Second-order check of a DMOC solution: is the point Newton found a strict local minimum, or only stationary?

Algorithm 5.2 of seed 002 (§5) solves the discrete *necessary* conditions (31) by Newton; saddle points of the
discrete problem satisfy them too (issue 35: a vehicle maneuver whose Newton point had 11 negative reduced
curvatures and a cost 34 % above a nearby minimum). The check works on the same discrete problem written as a
nonlinear program, ``dmoc_nlp.transcription`` (min f(w) s.t. c(w) = 0, w = (ξ, ν, g, u)): at Newton's point w*

- multipliers y from least squares on ∇f + (∂c/∂w)ᵀy = 0, whose residual re-checks first-order stationarity;
- Z, an orthonormal basis of the null space of ∂c/∂w (LICQ checked by the rank), and the reduced Hessian
  Zᵀ∇²_w(f + yᵀc)Z: w* is a strict local minimum iff all its eigenvalues are positive (second-order sufficient
  conditions, e.g. Nocedal & Wright Thm. 12.6). The inertia of the KKT matrix [[∇²L, Jᵀ], [J, 0]] follows by
  Gould's theorem, In(K) = In(ZᵀHZ) + (m, m, 0): a minimum has (dim w positive, m negative, 0 zero).

The eigenvector of the smallest eigenvalue, Zv, is a direction of negative curvature: where the check fails,
``planning.dmoc`` restarts along it (and from IPOPT) and checks again.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla

from .dmoc import DMOCProblem
from .dmoc_nlp import nlp_parameters, nlp_point, transcription

__all__ = ["SecondOrderCheck", "second_order_check", "EIGENVALUE_RTOL"]

# An eigenvalue of the reduced Hessian counts as zero below this fraction of the largest |eigenvalue| (round-off in
# a ~10³-dimensional dense eigenproblem is ~1e-13 of it; the vehicle's smallest positive curvatures are ~1e-3).
EIGENVALUE_RTOL = 1e-8


@dataclass(frozen=True)
class SecondOrderCheck:
    """The numbers of the check at one point (module docstring)."""

    min_eigenvalue: float  # smallest eigenvalue of the reduced Hessian Zᵀ∇²L Z (Z orthonormal)
    max_eigenvalue: float  # largest |eigenvalue| (the scale of ``EIGENVALUE_RTOL``)
    inertia: tuple[int, int, int]  # (positive, negative, zero) eigenvalues of the reduced Hessian
    kkt_inertia: tuple[int, int, int] | None  # (positive, negative, zero) of the KKT matrix (Gould; None: no LICQ)
    stationarity: float  # ‖∇f + Jᵀy‖∞ / max(1, ‖∇f‖∞) with the least-squares multipliers y
    rank_deficiency: int  # rows of the constraint Jacobian J minus its numerical rank (LICQ: 0)
    direction: np.ndarray  # Zv of the smallest eigenvalue, in the NLP's variables w (the descent of a saddle)

    @property
    def minimum(self) -> bool:
        """A strict local minimum: the reduced Hessian positive definite, LICQ, and stationary to 1e-6."""
        return self.inertia[1] == 0 and self.inertia[2] == 0 and self.rank_deficiency == 0 \
            and self.stationarity <= 1e-6

    def __str__(self) -> str:
        pos, neg, zero = self.inertia
        kind = "strict local minimum" if self.minimum else ("saddle" if neg else "not a strict minimum")
        return (f"{kind}: reduced Hessian {pos} positive, {neg} negative, {zero} zero eigenvalues (smallest "
                f"{self.min_eigenvalue:.3g}), KKT inertia {self.kkt_inertia}")


def second_order_check(prob: DMOCProblem, xi: np.ndarray, nu: np.ndarray, g: np.ndarray, u_minus: np.ndarray,
                       u_plus: np.ndarray) -> SecondOrderCheck:
    """The check (module docstring) at the trajectory ξ_k (N, n), ν_k (N+1, n), g_k (N+1, s, s), u_k^± (N, m) of
    ``prob`` (a ``DMOCResult``'s fields)."""
    tr = transcription(prob.body.group, prob.retraction, prob.horizon, prob.body.input_matrix.shape[1],
                       prob.inputs, "l2")
    w = nlp_point(prob, xi, nu, g, u_minus, u_plus)
    p = nlp_parameters(prob)
    kkt = tr.function("kkt")
    grad, J = kkt(w, 0.0, p)[:2]
    # In the units of a unit body (as Newton, ``dmoc_conditions.unit_scales``): momenta and inputs / p, the cost / p²,
    # so the eigenvalues and the zero test are the same at every mass scale (in SI units a 2⁻³⁰ spacecraft's
    # curvatures along ν and u were counted as zero).
    D, E = _scales(tr, prob.body.unit_momentum)
    pp = prob.body.unit_momentum ** 2
    grad = np.array(grad).ravel() * D / pp
    J = J.sparse().toarray() * D / E[:, None]  # (DM.full() of a sparse J: ~10× slower)
    m_c, n_w = J.shape
    # Jᵀ P = Q R: the rank from R's diagonal, the null space of J from Q's trailing columns, and the least-squares
    # multipliers from Jᵀy = Q R Pᵀy = −∇f
    Q, R, piv = sla.qr(J.T, pivoting=True)
    d = np.abs(np.diag(R))
    rank = int((d > 1e-10 * d.max()).sum())
    y = np.zeros(m_c)
    y[piv[:rank]] = sla.solve_triangular(R[:rank, :rank], -(Q[:, :rank].T @ grad))
    stat = float(np.abs(grad + J.T @ y).max() / max(1.0, np.abs(grad).max()))
    H = kkt(w, y * pp / E, p)[2].sparse().toarray() * np.outer(D, D) / pp
    Z = Q[:, rank:]
    ev, V = np.linalg.eigh(Z.T @ H @ Z)
    scale = float(np.abs(ev).max()) if ev.size else 0.0
    tiny = EIGENVALUE_RTOL * scale
    inertia = (int((ev > tiny).sum()), int((ev < -tiny).sum()), int((np.abs(ev) <= tiny).sum()))
    kkt_inertia = (inertia[0] + m_c, inertia[1] + m_c, inertia[2]) if rank == m_c else None
    return SecondOrderCheck(min_eigenvalue=float(ev[0]) if ev.size else np.inf, max_eigenvalue=scale,
                            inertia=inertia, kkt_inertia=kkt_inertia, stationarity=stat,
                            rank_deficiency=m_c - rank, direction=D * (Z @ V[:, 0]) if ev.size else np.zeros(n_w))


def _scales(tr, p: float) -> tuple[np.ndarray, np.ndarray]:
    """(variables, constraints): the size of each NLP variable and constraint (``Transcription``) on a body whose
    momentum at unit velocity is p: ξ and the poses 1, the momenta ν and the inputs p; the wrench rows W − Bu p, the
    pose rows 1."""
    N, n, nq = tr.N, tr.n, tr.nq
    D = np.concatenate([np.ones(N * n), np.full((N - 1) * n, p), np.ones(nq * (N - 1)),
                        np.full(tr.w.shape[0] - tr.nz, p)])
    step = np.concatenate([np.full(2 * n, p), np.ones(nq)])
    E = np.concatenate([np.tile(step, N - 1), np.full(2 * n, p), np.ones(n)])
    return D, E
