"""Second-order check of a DMOC solution: is the point Newton found a strict local minimum, or only stationary?

Algorithm 5.2 of Jimenez2013 (§5) solves the discrete *necessary* conditions (31) by Newton; saddle points of the
discrete problem satisfy them too (e.g. a vehicle maneuver whose Newton point had 11 negative reduced
curvatures and a cost 34 % above a nearby minimum). The check works on the same discrete problem written as a
nonlinear program, ``dmoc_nlp.transcription`` (min f(w) s.t. c(w) = 0, w = (ξ, ν, g, u)): at Newton's point w*

- Z, a basis of the null space of J = ∂c/∂w, from the problem's structure: the dynamics rows determine the
  trajectory y = (ξ, ν, g) from the inputs u (a square, sparse, block-triangular Jacobian: the integrator's steps),
  dy = S du, and the 2n terminal rows leave G du = 0 (LICQ: G has full rank); Z = [S Z_u; Z_u];
- multipliers y of ∇f + Jᵀy = 0 by the same partition, whose residual re-checks first-order stationarity;
- the eigenvalues of the reduced Hessian Zᵀ∇²_w(f + yᵀc)Z in the metric ZᵀZ (i.e. in an orthonormal basis of the
  null space): w* is a strict local minimum iff all are positive (second-order sufficient conditions, e.g. Nocedal
  & Wright Thm. 12.6). The inertia of the KKT matrix [[∇²L, Jᵀ], [J, 0]] follows by
  Gould's theorem, In(K) = In(ZᵀHZ) + (m, m, 0): a minimum has (dim w positive, m negative, 0 zero).

The eigenvector of the smallest eigenvalue, Zv, is a direction of negative curvature: where the check fails,
``planning.dmoc`` restarts along it (and from IPOPT) and checks again.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from scipy.sparse.linalg import splu

from .dmoc_nlp import nlp_parameters, nlp_point, transcription
from .dmoc_problem import DMOCProblem

__all__ = ["SecondOrderCheck", "second_order_check", "EIGENVALUE_RTOL"]

# An eigenvalue of the reduced Hessian counts as zero below this fraction of the largest |eigenvalue| (round-off in
# a ~10²–10³-dimensional dense eigenproblem is ~1e-13 of it; the vehicle's smallest positive curvatures are ~1e-3).
EIGENVALUE_RTOL = 1e-8


@dataclass(frozen=True)
class SecondOrderCheck:
    """The numbers of the check at one point (module docstring)."""

    min_eigenvalue: float  # smallest eigenvalue of the reduced Hessian Zᵀ∇²L Z (Z orthonormal)
    max_eigenvalue: float  # largest |eigenvalue| (the scale of ``EIGENVALUE_RTOL``)
    inertia: tuple[int, int, int]  # (positive, negative, zero) eigenvalues of the reduced Hessian
    kkt_inertia: tuple[int, int, int] | None  # (positive, negative, zero) of the KKT matrix (Gould; None: no LICQ)
    stationarity: float  # ‖∇f + Jᵀy‖∞ / max(1, ‖∇f‖∞) with the least-squares multipliers y
    rank_deficiency: int  # 2n minus the rank of the terminal block G (LICQ: 0; all rows if the steps are singular)
    direction: np.ndarray  # Zv of the smallest eigenvalue in the NLP's variables w, max-norm 1 (a saddle's descent)

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
    J = (sp.diags(1.0 / E) @ J.sparse() @ sp.diags(D)).tocsr()
    m_c, n_w = J.shape
    nz, n2 = tr.nz, 2 * tr.n
    # The dynamics rows (every W_k^±, pose row, but W_{N−1}⁺) determine y = (ξ, ν, g) from the inputs u: their
    # Jacobian in y is square and block-triangular in time (the integrator's steps), so dy = S du with
    # S = −J_yᴰ⁻¹J_uᴰ (sparse LU); the 2n terminal rows T (W_{N−1}⁺ with ν_N fixed, the pose) leave G du = 0 with
    # G = J_yᵀS + J_uᵀ (2n × dim u). Null space of J: Z = [S Z_u; Z_u], Z_u that of G (SVD).
    last = (tr.N - 1) * (n2 + tr.nq)
    T = np.r_[last + tr.n:last + n2, m_c - tr.n:m_c]
    Drows = np.setdiff1d(np.arange(m_c), T)
    JD, JT = J[Drows], J[T]
    try:
        lu = splu(JD[:, :nz].tocsc())
    except RuntimeError:  # singular step Jacobian: no LICQ by this partition
        return SecondOrderCheck(np.nan, np.nan, (0, 0, 0), None, np.inf, m_c, np.zeros(n_w))
    S = -lu.solve(JD[:, nz:].toarray())
    G = JT[:, :nz] @ S + JT[:, nz:].toarray()
    _, sv, Vt = np.linalg.svd(G)
    rank_G = int((sv > 1e-10 * sv.max()).sum())
    Zu = Vt[rank_G:].T
    # multipliers: Jᵀy = −∇f by the same partition (yᵀ from least squares on Gᵀ, yᴰ by one transposed solve)
    g_red = grad[nz:] + S.T @ grad[:nz]
    y = np.zeros(m_c)
    y[T] = np.linalg.lstsq(G.T, -g_red, rcond=None)[0]
    y[Drows] = -lu.solve(grad[:nz] + JT[:, :nz].T @ y[T], trans="T")
    stat = float(np.abs(grad + J.T @ y).max() / max(1.0, np.abs(grad).max()))
    H = sp.diags(D) @ kkt(w, y * pp / E, p)[2].sparse() @ sp.diags(D) / pp
    Z = np.vstack([S @ Zu, Zu])
    # eigenvalues of the reduced Hessian in an orthonormal basis of the null space: Zᵀ H Z v = λ ZᵀZ v (the same
    # as QᵀHQ for Z = QR)
    ev, V = sla.eigh(Z.T @ (H @ Z), Z.T @ Z)
    scale = float(np.abs(ev).max()) if ev.size else 0.0
    tiny = EIGENVALUE_RTOL * scale
    inertia = (int((ev > tiny).sum()), int((ev < -tiny).sum()), int((np.abs(ev) <= tiny).sum()))
    rank_deficiency = n2 - rank_G
    kkt_inertia = (inertia[0] + m_c, inertia[1] + m_c, inertia[2]) if rank_deficiency == 0 else None
    direction = D * (Z @ V[:, 0]) if ev.size else np.zeros(n_w)
    return SecondOrderCheck(min_eigenvalue=float(ev[0]) if ev.size else np.inf, max_eigenvalue=scale,
                            inertia=inertia, kkt_inertia=kkt_inertia, stationarity=stat,
                            rank_deficiency=rank_deficiency, direction=direction / np.abs(direction).max())


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
