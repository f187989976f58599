"""The discrete optimal control problem of ``planning.dmoc`` as a nonlinear program for IPOPT (CasADi).

Same discretization, same cost, same boundary conditions as Algorithm 5.2, with the inputs explicit:
variables ξ_k, ν_1…ν_{N−1}, g_1…g_{N−1}, u_k^± (``inputs='hold'``: one u_k), constraints W_k^± − B u_k^± = 0
(the forced discrete Euler–Poincaré equations 26–27 with W of ``dmoc``), g_{k+1} = g_kτ(hξ_k) and
τ⁻¹(g(T)⁻¹g_N) = 0. Three uses:

- ``cost='l2'``: the identical problem handed to IPOPT (the peer check of the Newton solver, and its fallback when
  Newton fails from the guess: IPOPT's point, polished by Newton on conditions (31));
- ``bounds``: u_min ≤ u ≤ u_max; IPOPT's infeasibility verdict is how a goal unreachable under the thruster or
  torque limits is told apart from a hard solve;
- ``cost='l1'``: Jimenez2013, §6.2, ∫‖u‖₁ dt ≈ (h/2)Σ(‖u_k⁻‖₁ + ‖u_k⁺‖₁) with u = u_pos − u_neg, u_pos, u_neg ≥ 0
  (a smooth program whose optimum switches inside a step: bang-off-bang).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import cache

import casadi as ca
import numpy as np

from ..mechanics.euler_poincare import momenta
from ..mechanics.graph_lock import OwnsGraphs, builds_graph
from ..mechanics.groups import Retraction, get_group
from ..model.errors import renamed_keyword
from .dmoc_problem import DMOCProblem, check_dmoc_options, check_guess, geodesic_guess, input_split
from .errors import ipopt_iterations
from .result import SolverResult

__all__ = [
    "IpoptResult",
    "solve_ipopt",
    "solve_l1",
    "multipliers_for_newton",
    "Transcription",
    "transcription",
    "nlp_parameters",
    "nlp_point",
]


@dataclass
class IpoptResult(SolverResult):
    """What ``solve_ipopt`` and ``solve_l1`` return: the discrete trajectory (ξ_k, ν_k), the inputs u_k⁻, u_k⁺ and
    their multipliers y_k⁻, y_k⁺ (Jimenez2013, Alg. 5.2 written as an NLP), the cost, IPOPT's iterations and
    status, and the CPU seconds of the solve and of building the problem."""

    xi: np.ndarray  # (N, n)
    nu: np.ndarray  # (N+1, n)
    u_minus: np.ndarray  # (N, m)
    u_plus: np.ndarray  # (N, m)
    y_minus: np.ndarray  # (N, n) multipliers of W_k⁻ − B u_k⁻ = 0
    y_plus: np.ndarray  # (N, n) multipliers of W_k⁺ − B u_k⁺ = 0
    cost: float
    iterations: int
    status: str
    success: bool
    solve_time: float  # CPU seconds of IPOPT (building the problem excluded)
    build_time: float

    @property
    def converged(self) -> bool:
        """IPOPT's ``success`` (``SolverResult``)."""
        return self.success

    @property
    def infeasible(self) -> bool:
        return self.status in ("Infeasible_Problem_Detected", "Restoration_Failed")


@dataclass(frozen=True, eq=False)  # hashed by identity: one object per structure (``transcription``)
class Transcription(OwnsGraphs):
    """The discrete problem as a parametric NLP: min f(w; p) s.t. g(w; p) = 0 (module docstring), one per structure
    (group, retraction, N, m, inputs, cost) and cached; the body, boundary states and h are the parameters p
    (``nlp_parameters``). Variables w = (ξ_0…ξ_{N−1}, ν_1…ν_{N−1}, g_1…g_{N−1} as coordinates, inputs)."""

    w: ca.SX
    p: ca.SX
    f: ca.SX
    g: ca.SX
    N: int
    n: int
    m: int
    nq: int
    n_u: int  # inputs per step: 2 (u⁻, u⁺) or 1 (held)
    cost: str

    @property
    def nz(self) -> int:
        """Offset of the inputs in w."""
        return self.n * self.N + self.n * (self.N - 1) + self.nq * (self.N - 1)

    def function(self, name: str) -> ca.Function:
        """``'kkt'``: (w, y, p) → (∇f, ∂g/∂w, ∇²_w(f + yᵀg)), the first- and second-order terms of the Lagrangian
        (``dmoc_check``); built on first use and kept."""
        return _functions(self)[name]


@cache
@builds_graph
def _functions(tr: Transcription) -> dict[str, ca.Function]:
    y = ca.SX.sym("y", tr.g.shape[0])
    lag = tr.f + ca.dot(y, tr.g)
    return {
        "kkt": ca.Function(
            "dmoc_kkt", [tr.w, y, tr.p], [ca.gradient(tr.f, tr.w), ca.jacobian(tr.g, tr.w), ca.hessian(lag, tr.w)[0]]
        )
    }


@cache
@builds_graph
def transcription(group_name: str, kind: str, N: int, m: int, inputs: str, cost: str = "l2") -> Transcription:
    """The NLP of every problem with this structure (``Transcription``)."""
    G = get_group(group_name)
    ret = Retraction(G, kind)
    n, nq = G.dim, G.nq
    hold = inputs == "hold"
    n_u = 1 if hold else 2
    sizes = [n * n, n * m, n * n, 1, nq, nq, n, n]
    P = ca.SX.sym("p", sum(sizes))
    parts, i = [], 0
    for s_ in sizes:
        parts.append(P[i : i + s_])
        i += s_
    I, B, H = ca.reshape(parts[0], n, n), ca.reshape(parts[1], n, m), ca.reshape(parts[2], n, n)
    h, g0, gT_inv, nu0, nuN = parts[3], G.from_coordinates(parts[4]), G.from_coordinates(parts[5]), parts[6], parts[7]
    XI = ca.SX.sym("xi", n, N)
    NU = ca.SX.sym("nu", n, N - 1)
    nu = [nu0] + [NU[:, k] for k in range(N - 1)] + [nuN]
    if cost == "l1":  # u = pos − neg, both ≥ 0
        POS, NEG = ca.SX.sym("pos", m, n_u * N), ca.SX.sym("neg", m, n_u * N)
        U = POS - NEG
        u_vars = [ca.vec(POS), ca.vec(NEG)]
    else:
        U = ca.SX.sym("u", m, n_u * N)
        u_vars = [ca.vec(U)]
    # Poses as variables with g_{k+1} = g_k τ(hξ_k) as constraints: the same feasible set as the reconstruction of
    # Alg. 5.2 step 5, but with local (sparse) second derivatives instead of a dense chain through all N steps.
    POSE = ca.SX.sym("g", nq, N - 1)
    g_eq = []
    gk = g0
    for k in range(N):
        xi = XI[:, k]
        mu, mup = momenta(ret, I, h, xi)
        Wm = (2.0 / h) * (mu - nu[k]) - H @ xi
        Wp = (2.0 / h) * (nu[k + 1] - mup) - H @ xi
        um, up = (U[:, k], U[:, k]) if hold else (U[:, 2 * k], U[:, 2 * k + 1])
        g_eq += [Wm - B @ um, Wp - B @ up]
        g_next = gk @ ret.tau(h * xi)
        if k < N - 1:
            g_eq.append(G.to_coordinates(g_next) - POSE[:, k])
            gk = G.from_coordinates(POSE[:, k])
        else:
            gk = g_next
    if cost == "l1":
        f = (h if hold else 0.5 * h) * ca.sum1(ca.vec(POS + NEG))  # ‖u‖₁ at the optimum (pos·neg = 0)
    else:
        f = (0.5 * h if hold else 0.25 * h) * ca.sumsqr(U)
    g_eq.append(ret.tau_inv(gT_inv @ gk))
    w = ca.vertcat(ca.vec(XI), ca.vec(NU), ca.vec(POSE), *u_vars)
    return Transcription(w=w, p=P, f=f, g=ca.vertcat(*g_eq), N=N, n=n, m=m, nq=nq, n_u=n_u, cost=cost)


def _transcription_of(prob: DMOCProblem, cost: str) -> Transcription:
    return transcription(
        prob.body.group, prob.retraction, prob.horizon, prob.body.input_matrix.shape[1], prob.inputs, cost
    )


def nlp_parameters(prob: DMOCProblem) -> np.ndarray:
    """p of ``Transcription`` for ``prob``: (𝕀, B, H, h, g(0), g(T)⁻¹, ν_0, ν_N), matrices column-major."""
    body, G = prob.body, prob.group
    I = body.spatial_inertia
    zero = np.zeros(G.dim)
    nu0 = I @ (zero if prob.xi0 is None else np.asarray(prob.xi0, float))
    nuN = I @ (zero if prob.xiT is None else np.asarray(prob.xiT, float))
    return np.concatenate(
        [
            I.ravel(order="F"),
            body.input_matrix.ravel(order="F"),
            body.drag_matrix.ravel(order="F"),
            [prob.dt],
            G.to_coordinates(np.asarray(prob.g0, float)),
            G.to_coordinates(G.inverse(np.asarray(prob.gT, float))),
            nu0,
            nuN,
        ]
    )


def nlp_point(
    prob: DMOCProblem, xi: np.ndarray, nu: np.ndarray, g: np.ndarray, u_minus: np.ndarray, u_plus: np.ndarray
) -> np.ndarray:
    """w of the ``'l2'`` transcription at a trajectory: ξ_k (N, n), ν_k (N+1, n), g_k (N+1, s, s), u_k^± (N, m)."""
    G = prob.group
    U = u_minus if prob.inputs == "hold" else np.stack([u_minus, u_plus], axis=1).reshape(-1, u_minus.shape[1])
    return np.concatenate(
        [np.ravel(xi), np.ravel(nu[1:-1]), np.concatenate([G.to_coordinates(gk) for gk in g[1:-1]]), np.ravel(U)]
    )


@cache
@builds_graph
def _solver(tr: Transcription, tol: float, max_iterations: int, print_level: int) -> ca.Function:
    opts = {
        "ipopt.print_level": print_level,
        "print_time": 0,
        "ipopt.sb": "yes",
        "ipopt.tol": tol,
        "ipopt.max_iter": max_iterations,
        "ipopt.bound_relax_factor": 0.0,
    }
    return ca.nlpsol("dmoc_ipopt", "ipopt", {"x": tr.w, "p": tr.p, "f": tr.f, "g": tr.g}, opts)


def solve_ipopt(
    prob: DMOCProblem,
    cost: str = "l2",
    bounds: np.ndarray | None = None,
    xi_guess: np.ndarray | None = None,
    tolerance: float = 1e-12,
    max_iterations: int = 500,
    print_level: int = 0,
    *,
    tol: float | None = None,
) -> IpoptResult:
    """IPOPT on the discrete problem of ``prob`` (module docstring). ``bounds``: |u_i| ≤ bounds_i (or None);
    ``tolerance`` IPOPT's (``tol``: its deprecated name)."""
    tol = renamed_keyword("solve_ipopt", "tol", tol, "tolerance", tolerance)
    if cost not in ("l2", "l1"):
        raise ValueError(f"cost must be 'l2' or 'l1', got {cost!r}")
    check_dmoc_options(tol, max_iterations)
    t_build = time.process_time()
    body, G, N, h = prob.body, prob.group, prob.horizon, prob.dt
    ret = Retraction(G, prob.retraction)
    tr = _transcription_of(prob, cost)
    n, m, n_u, nz = tr.n, tr.m, tr.n_u, tr.nz
    B, I, H = body.input_matrix, body.spatial_inertia, body.drag_matrix
    pv = nlp_parameters(prob)
    nu0, nuN = pv[-2 * n : -n], pv[-n:]
    hold = n_u == 1
    # the guess: the geodesic's ξ, ν from eq. 32, u from its W (least squares)
    xi0 = geodesic_guess(prob) if xi_guess is None else check_guess(prob, xi_guess)
    mus = [momenta(ret, I, h, x) for x in xi0]
    nus = [nu0] + [0.5 * (mus[k][0] + mus[k - 1][1]) for k in range(1, N)] + [nuN]
    Bp = input_split(B)[0]
    Us = []
    for k in range(N):
        um = Bp @ ((2 / h) * (mus[k][0] - nus[k]) - H @ xi0[k])
        up = Bp @ ((2 / h) * (nus[k + 1] - mus[k][1]) - H @ xi0[k])
        Us += [0.5 * (um + up)] if hold else [um, up]
    Us = np.array(Us).T  # (m, n_u N)
    poses = [np.asarray(prob.g0, float)]
    for x in xi0[:-1]:
        poses.append(poses[-1] @ ret.tau(h * x))
    pose0 = np.concatenate([G.to_coordinates(gp) for gp in poses[1:]])
    size = tr.w.shape[0]
    lbw, ubw = np.full(size, -np.inf), np.full(size, np.inf)
    if cost == "l1":
        guess_u = np.concatenate([np.maximum(Us, 0).ravel(order="F"), np.maximum(-Us, 0).ravel(order="F")])
        lbw[nz:] = 0.0
        if bounds is not None:
            lim = np.tile(np.asarray(bounds, float), n_u * N)
            ubw[nz : nz + lim.size], ubw[nz + lim.size :] = lim, lim
    else:
        guess_u = Us.ravel(order="F")
        if bounds is not None:
            lim = np.tile(np.asarray(bounds, float), n_u * N)
            lbw[nz:], ubw[nz:] = -lim, lim
            guess_u = np.clip(guess_u, -lim, lim)
    w0 = np.concatenate([xi0.ravel(), np.concatenate(nus[1:-1]), pose0, guess_u])
    solver = _solver(tr, float(tol), int(max_iterations), int(print_level))
    t_build = time.process_time() - t_build
    t0 = time.process_time()
    sol = solver(x0=w0, p=pv, lbx=lbw, ubx=ubw, lbg=0.0, ubg=0.0)
    t_solve = time.process_time() - t0
    st = solver.stats()
    wv, lam_g = np.array(sol["x"]).ravel(), np.array(sol["lam_g"]).ravel()
    xi = wv[: n * N].reshape(N, n)
    nu_v = np.vstack([nu0, wv[n * N : n * N + n * (N - 1)].reshape(N - 1, n), nuN])
    if cost == "l1":
        uu = (wv[nz : nz + m * n_u * N] - wv[nz + m * n_u * N :]).reshape(n_u * N, m)
    else:
        uu = wv[nz:].reshape(n_u * N, m)
    u_minus, u_plus = (uu, uu) if hold else (uu[0::2], uu[1::2])
    per = 2 * n + G.nq  # constraints per step k < N − 1: W⁻, W⁺, pose
    y = np.array([lam_g[k * per : k * per + 2 * n] for k in range(N)]).reshape(N, 2, n)
    return IpoptResult(
        xi=xi,
        nu=nu_v,
        u_minus=u_minus.copy(),
        u_plus=u_plus.copy(),
        y_minus=y[:, 0].copy(),
        y_plus=y[:, 1].copy(),
        cost=float(sol["f"]),
        iterations=ipopt_iterations(st, max_iterations),
        status=str(st["return_status"]),
        success=bool(st["success"]),
        solve_time=t_solve,
        build_time=t_build,
    )


def solve_l1(
    prob: DMOCProblem,
    bounds: np.ndarray | None = None,
    xi_guess: np.ndarray | None = None,
    tolerance: float = 1e-10,
    max_iterations: int = 500,
    *,
    tol: float | None = None,
) -> IpoptResult:
    """L1 control (Jimenez2013, §6.2, Fig. 3): minimum ∫‖u‖₁ dt over the discrete problem of ``prob`` with |u_i| ≤
    ``bounds_i`` (default the body's effort limits; an infinite limit leaves u_i free), u_k⁻ and u_k⁺
    separate with ``inputs='split'`` so the control can switch inside a step: ``solve_ipopt(prob, cost='l1')``."""
    tolerance = renamed_keyword("solve_l1", "tol", tol, "tolerance", tolerance)
    lim = prob.body.effort_limits if bounds is None else np.asarray(bounds, float)
    return solve_ipopt(
        prob, cost="l1", bounds=lim, xi_guess=xi_guess, tolerance=tolerance, max_iterations=max_iterations
    )


def multipliers_for_newton(prob: DMOCProblem, res: IpoptResult) -> np.ndarray:
    """λ_k of conditions (31) from IPOPT's multipliers y_k^± of W_k^± − B u_k^± = 0 (both Lagrangians f + λᵀc):
    split λ_k = (N_Bᵀy_k⁻, N_Bᵀy_k⁺); hold λ_k = (N_Bᵀ(y_k⁻ + y_k⁺), (h/2)B⁺ᵀu_k − y_k⁺). (N, c) array."""
    Bp, NB = input_split(prob.body.input_matrix)
    if prob.inputs == "split":
        return np.hstack([res.y_minus @ NB, res.y_plus @ NB])
    h = prob.dt
    return np.hstack([(res.y_minus + res.y_plus) @ NB, 0.5 * h * res.u_minus @ Bp - res.y_plus])
