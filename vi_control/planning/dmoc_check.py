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

With input bounds |u_i| ≤ b_i (the bounded re-solve of ``vehicle.plan_maneuver``), an input at its bound (within
``ACTIVE_RTOL``) is an active constraint: it is held fixed (its column leaves S and G), the multipliers y come from
the free inputs alone, and the residual of ∇f + Jᵀy at the active inputs is the bound's multiplier, whose sign must
push against the bound (at +b: ∇f + Jᵀy ≤ 0; at −b: ≥ 0; Nocedal & Wright Thm. 12.1). An active input whose
multiplier is zero to round-off (weakly active) is kept free: positive curvature on that larger subspace is
sufficient for the critical cone (Thm. 12.6).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from scipy.sparse.linalg import splu

from .dmoc_nlp import nlp_parameters, nlp_point, transcription
from .dmoc_problem import DMOCProblem

__all__ = ["SecondOrderCheck", "second_order_check", "EIGENVALUE_RTOL", "ACTIVE_RTOL"]

# An eigenvalue of the reduced Hessian counts as zero below this fraction of the largest |eigenvalue| (round-off in
# a ~10²–10³-dimensional dense eigenproblem is ~1e-13 of it; the vehicle's smallest positive curvatures are ~1e-3).
EIGENVALUE_RTOL = 1e-8
# An input counts as at its bound within this fraction of the bound (IPOPT's interior point stops ~1e-9 inside it).
ACTIVE_RTOL = 1e-6


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
    active_bounds: int = 0  # inputs held at a bound (strictly active: multiplier not zero)
    wrong_sign_bounds: int = 0  # active inputs whose multiplier pulls away from the bound (the cost falls inside)

    @property
    def minimum(self) -> bool:
        """A strict local minimum: the reduced Hessian positive definite, LICQ, stationary to 1e-6, and every
        active bound's multiplier of the right sign."""
        return (
            self.inertia[1] == 0
            and self.inertia[2] == 0
            and self.rank_deficiency == 0
            and self.stationarity <= 1e-6
            and self.wrong_sign_bounds == 0
        )

    def __str__(self) -> str:
        pos, neg, zero = self.inertia
        kind = "strict local minimum" if self.minimum else ("saddle" if neg else "not a strict minimum")
        bounds = (
            (
                f", {self.active_bounds} inputs at their bounds ({self.wrong_sign_bounds} with a multiplier of the "
                "wrong sign)"
            )
            if self.active_bounds or self.wrong_sign_bounds
            else ""
        )
        return (
            f"{kind}: reduced Hessian {pos} positive, {neg} negative, {zero} zero eigenvalues (smallest "
            f"{self.min_eigenvalue:.3g}), KKT inertia {self.kkt_inertia}{bounds}"
        )


def second_order_check(
    prob: DMOCProblem,
    xi: np.ndarray,
    nu: np.ndarray,
    g: np.ndarray,
    u_minus: np.ndarray,
    u_plus: np.ndarray,
    bounds: np.ndarray | None = None,
) -> SecondOrderCheck:
    """The check (module docstring) at the trajectory ξ_k (N, n), ν_k (N+1, n), g_k (N+1, s, s), u_k^± (N, m) of
    ``prob`` (a ``DMOCResult``'s fields); ``bounds`` (m,): the input bounds |u_i| ≤ b_i the point was solved
    under (None: unbounded)."""
    tr = transcription(
        prob.body.group, prob.retraction, prob.horizon, prob.body.input_matrix.shape[1], prob.inputs, "l2"
    )
    w = nlp_point(prob, xi, nu, g, u_minus, u_plus)
    p = nlp_parameters(prob)
    kkt = tr.function("kkt")
    grad, J = kkt(w, 0.0, p)[:2]
    # In the units of a unit body (as Newton, ``dmoc_conditions.unit_scales``): momenta and inputs / p, the cost / p²,
    # so the eigenvalues and the zero test are the same at every mass scale (in SI units a 2⁻³⁰ spacecraft's
    # curvatures along ν and u were counted as zero).
    D, E = _scales(tr, prob.body.unit_momentum)
    pp = prob.body.unit_momentum**2
    grad = np.array(grad).ravel() * D / pp
    J = (sp.diags(1.0 / E) @ J.sparse() @ sp.diags(D)).tocsr()
    m_c, n_w = J.shape
    nz, n2 = tr.nz, 2 * tr.n
    # The dynamics rows (every W_k^±, pose row, but W_{N−1}⁺) determine y = (ξ, ν, g) from the inputs u: their
    # Jacobian in y is square and block-triangular in time (the integrator's steps), so dy = S du with
    # S = −J_yᴰ⁻¹J_uᴰ (sparse LU); the 2n terminal rows T (W_{N−1}⁺ with ν_N fixed, the pose) leave G du = 0 with
    # G = J_yᵀS + J_uᵀ (2n × dim u). Null space of J: Z = [S Z_u; Z_u], Z_u that of G (SVD).
    last = (tr.N - 1) * (n2 + tr.nq)
    T = np.r_[last + tr.n : last + n2, m_c - tr.n : m_c]
    Drows = np.setdiff1d(np.arange(m_c), T)
    JD, JT = J[Drows], J[T]
    try:
        lu = splu(JD[:, :nz].tocsc())
    except RuntimeError:  # singular step Jacobian: no LICQ by this partition
        return SecondOrderCheck(np.nan, np.nan, (0, 0, 0), None, np.inf, m_c, np.zeros(n_w))
    S_all = -lu.solve(JD[:, nz:].toarray())
    G_all = JT[:, :nz] @ S_all + JT[:, nz:].toarray()
    n_u = n_w - nz
    free = np.ones(n_u, bool)
    at_upper = np.zeros(n_u, bool)
    if bounds is not None:  # the inputs at a bound (w's inputs: one row of m per held step or per u_k^±)
        b = np.tile(np.asarray(bounds, float), n_u // len(bounds))
        u = w[nz:]
        at_upper = u >= b * (1 - ACTIVE_RTOL)
        free = ~(at_upper | (u <= -b * (1 - ACTIVE_RTOL)))
    # every input at a bound held, then again with the weakly active ones freed until none is left (each pass frees
    # at least one input, so this ends; without bounds it is one pass)
    while True:
        S, G = S_all[:, free], G_all[:, free]
        _, sv, Vt = np.linalg.svd(G)
        rank_G = int((sv > 1e-10 * sv.max()).sum()) if sv.size else 0
        Zu = Vt[rank_G:].T
        # multipliers: Jᵀy = −∇f by the same partition on the free inputs (yᵀ from least squares on Gᵀ, yᴰ by one
        # transposed solve); at the held inputs, ∇f + Jᵀy is the bound's multiplier
        g_red = grad[nz:][free] + S.T @ grad[:nz]
        y = np.zeros(m_c)
        y[T] = np.linalg.lstsq(G.T, -g_red, rcond=None)[0]
        y[Drows] = -lu.solve(grad[:nz] + JT[:, :nz].T @ y[T], trans="T")
        r = grad + J.T @ y
        held = ~free
        z = r[nz:][held]
        weak = np.abs(z) <= 1e-8 * max(1.0, np.abs(grad).max())
        if not weak.any():
            break
        free[np.flatnonzero(held)[weak]] = True
    active_bounds = int((~free).sum())
    wrong_sign = int(np.sum(np.where(at_upper[~free], z > 0, z < 0))) if active_bounds else 0
    stat = float(np.abs(np.r_[r[:nz], r[nz:][free]]).max() / max(1.0, np.abs(grad).max()))
    H = sp.diags(D) @ kkt(w, y * pp / E, p)[2].sparse() @ sp.diags(D) / pp
    Zfull = np.zeros((n_u, Zu.shape[1]))
    Zfull[free] = Zu
    Z = np.vstack([S @ Zu, Zfull])
    # eigenvalues of the reduced Hessian in an orthonormal basis of the null space: Zᵀ H Z v = λ ZᵀZ v (the same
    # as QᵀHQ for Z = QR)
    ev, V = sla.eigh(Z.T @ (H @ Z), Z.T @ Z)
    scale = float(np.abs(ev).max()) if ev.size else 0.0
    tiny = EIGENVALUE_RTOL * scale
    inertia = (int((ev > tiny).sum()), int((ev < -tiny).sum()), int((np.abs(ev) <= tiny).sum()))
    rank_deficiency = n2 - rank_G
    m_active = m_c + active_bounds  # the bounds held are constraints of the KKT matrix too
    kkt_inertia = (inertia[0] + m_active, inertia[1] + m_active, inertia[2]) if rank_deficiency == 0 else None
    direction = D * (Z @ V[:, 0]) if ev.size else np.zeros(n_w)
    return SecondOrderCheck(
        min_eigenvalue=float(ev[0]) if ev.size else np.inf,
        max_eigenvalue=scale,
        inertia=inertia,
        kkt_inertia=kkt_inertia,
        stationarity=stat,
        rank_deficiency=rank_deficiency,
        direction=direction / max(float(np.abs(direction).max()), 1e-300),
        active_bounds=active_bounds,
        wrong_sign_bounds=wrong_sign,
    )


def _scales(tr, p: float) -> tuple[np.ndarray, np.ndarray]:
    """(variables, constraints): the size of each NLP variable and constraint (``Transcription``) on a body whose
    momentum at unit velocity is p: ξ and the poses 1, the momenta ν and the inputs p; the wrench rows W − Bu p, the
    pose rows 1."""
    N, n, nq = tr.N, tr.n, tr.nq
    D = np.concatenate(
        [np.ones(N * n), np.full((N - 1) * n, p), np.ones(nq * (N - 1)), np.full(tr.w.shape[0] - tr.nz, p)]
    )
    step = np.concatenate([np.full(2 * n, p), np.ones(nq)])
    E = np.concatenate([np.tile(step, N - 1), np.full(2 * n, p), np.ones(n)])
    return D, E
