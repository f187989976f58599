"""The DMOC problem of Jimenez2013, §5 (Algorithm 5.2) and its discrete necessary conditions (31), shared by every
solver of it: Newton/LM (``dmoc_newton``, driven by ``dmoc.solve_dmoc``), its warm starts (``dmoc_continuation``),
IPOPT (``dmoc_nlp``) and the second-order check (``dmoc_check``). The equations are in ``dmoc``'s docstring."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..mechanics import lie
from ..mechanics.groups import Retraction, get_group
from ..model.limits import MAX_DMOC_HORIZON, PLAN_DT_RANGE, Bound
from ..model.rigid_body import RigidBodyModel
from ..model.scalars import is_real
from .dmoc_conditions import constraint_size, csc_structure, jacobian_pattern, step_conditions, unit_scales

__all__ = [
    "DMOCProblem",
    "DMOCError",
    "DMOCConditions",
    "geodesic_guess",
    "initial_point",
    "input_split",
    "unactuated_wrench",
    "INPUT_MODES",
]

INPUT_MODES = ("split", "hold")

# The stated ranges of a DMOC problem and its solver (docs/reliability.md), what ``DMOCProblem`` and ``solve_dmoc``
# check and test_boundaries_tables.py tries at both ends of each:
# - horizon: the second-order check (``dmoc_check``) is dense in the N·m inputs — S is (24N × mN), the reduced
#   Hessian (mN)² with a generalized eigenproblem — so its cost grows as N³: N = 256 took 33 s of CPU for the check
#   and 71 s for the whole solve of the vehicle here, 512 over two minutes; 20 000 steps would need ~400 GB;
# - positions [m] of g(0), g(T): Newton's residual is absolute in a unit body's units and its pose rows carry
#   |p|·eps of rounding; at 1e3 m that is 2e-13, below the default tol, at 1e6 m (2e-10) Newton cannot stop and
#   every warm start and the IPOPT fallback ran to their ends;
# - velocities ξ(0), ξ(T) [rad/s, m/s]: as fast as anything the integrator's rotation check lets through;
# - tolerance: the rounding floor of the conditions (a few eps of order-one numbers) to the loosest tolerance at which a
#   plan is still the integrator's step to 1e-6;
# - max_iterations: Newton converges in 5–40 iterations where it converges at all; 0 or −1 reported "converged".
DMOC_BOUNDS: dict[str, Bound] = {
    "horizon": Bound(2, MAX_DMOC_HORIZON, integer=True),
    "position[]": Bound(-1.0e3, 1.0e3),
    "velocity[]": Bound(-1.0e3, 1.0e3),
    "tolerance": Bound(1.0e-14, 1.0e-6),
    "max_iterations": Bound(1, 1000, integer=True),
}


def check_dmoc_options(tolerance, max_iterations) -> None:
    """ValueError naming ``tolerance`` or ``max_iterations`` outside ``DMOC_BOUNDS`` (solve_dmoc, solve_ipopt)."""
    for key, v in (("tolerance", tolerance), ("max_iterations", max_iterations)):
        msg = DMOC_BOUNDS[key].refusal(key, v)
        if msg is not None:
            raise ValueError(msg)


def _check_entries(a: np.ndarray, key: str, table: str) -> None:
    b = DMOC_BOUNDS[table]
    bad = [i for i, x in enumerate(np.ravel(a).tolist()) if not b.contains(x)]
    if bad:
        raise ValueError(
            f"{key}: entry {bad[0]} = {np.ravel(a)[bad[0]]:g} must be {b.describe()} (the range "
            "DMOC's arithmetic carries)"
        )


class DMOCError(RuntimeError):
    """The discrete optimal control problem cannot be solved as posed; the message names the cause."""


def input_split(B: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(B⁺, N_B): the pseudo-inverse giving u from a body wrench, and an orthonormal basis of the wrenches no
    input can produce (null space of Bᵀ; the unactuated directions e_σ of Jimenez2013, §4.2)."""
    U, s, _ = np.linalg.svd(B)
    rank = int((s > 1e-12 * max(1.0, s.max(initial=0.0))).sum())
    return np.linalg.pinv(B), U[:, rank:]


@dataclass(frozen=True)
class DMOCProblem:
    """Rest-to-rest (or any boundary twists) minimum-effort maneuver of ``body`` in N steps over T seconds."""

    body: RigidBodyModel
    g0: np.ndarray
    gT: np.ndarray
    horizon: int = 32
    duration: float = 8.0
    retraction: str = "cayley"
    inputs: str = "split"
    xi0: np.ndarray | None = None
    xiT: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.inputs not in INPUT_MODES:
            raise ValueError(f"inputs must be one of {INPUT_MODES}, got {self.inputs!r}")
        msg = DMOC_BOUNDS["horizon"].refusal("horizon", self.horizon)
        if msg is not None:
            raise ValueError(msg)
        if not (is_real(self.duration) and math.isfinite(self.duration) and self.duration > 0):
            raise ValueError(f"duration must be positive and finite, got {self.duration!r}")
        if not PLAN_DT_RANGE[0] <= self.duration / self.horizon <= PLAN_DT_RANGE[1]:
            raise ValueError(
                f"duration / horizon = {self.duration / self.horizon:g} s must be in "
                f"[{PLAN_DT_RANGE[0]:g}, {PLAN_DT_RANGE[1]:g}] s (a plan's step)"
            )
        if self.body.has_restoring_wrench:
            raise DMOCError(
                "dmoc: the body feels a configuration-dependent wrench (net weight, or buoyancy off the "
                "centre of mass); Algorithm 5.2's conditions (31) assume forces f(ξ, u) only (Jimenez2013 "
                "§5.2 would add g_k-terms): trim the body (buoyancy = weight at the centre of mass)"
            )
        G = get_group(self.body.group)
        for name in ("g0", "gT"):
            g = np.asarray(getattr(self, name), float)
            if g.shape != (G.size, G.size) or not np.all(np.isfinite(g)) or G.distance_from_group(g) > 1e-9:
                raise ValueError(f"{name}: not an element of {G.name} (shape {g.shape})")
            if G.size == 4:
                _check_entries(g[:3, 3], f"{name} position", "position[]")
        n = _DIMS_OF[self.body.group]
        for name in ("xi0", "xiT"):
            v = getattr(self, name)
            if v is None:
                continue
            a = np.asarray(v)
            if a.shape != (n,) or a.dtype.kind not in "iuf" or not np.all(np.isfinite(a)):
                raise ValueError(f"{name}: expected {n} finite velocities, got {v!r}")
            _check_entries(a, name, "velocity[]")

    @property
    def dt(self) -> float:
        return self.duration / self.horizon

    @property
    def group(self):
        return get_group(self.body.group)


class DMOCConditions:
    """F(w) and its sparse Jacobian for w = (ξ_0…ξ_{N−1}, ν_1…ν_{N−1}, λ_0…λ_{N−1})."""

    def __init__(self, prob: DMOCProblem, B: np.ndarray | None = None):
        body, G = prob.body, prob.group
        self.prob, self.G = prob, G
        self.ret = Retraction(G, prob.retraction)
        self.n, self.N, self.h = G.dim, prob.horizon, prob.dt
        B = body.input_matrix if B is None else B
        self.m = B.shape[1]
        Bp, NB = input_split(B)
        self.r = NB.shape[1]
        self.c = constraint_size(self.n, self.r, prob.inputs)
        self.fn = step_conditions(G.name, prob.retraction, self.m, self.r, prob.inputs)["step"]
        I = body.spatial_inertia
        self.p = np.concatenate([a.ravel(order="F") for a in (I, Bp, NB, body.drag_matrix, np.array([self.h]))])
        zero = np.zeros(self.n)
        self.nu0 = I @ (zero if prob.xi0 is None else np.asarray(prob.xi0, float))
        self.nuN = I @ (zero if prob.xiT is None else np.asarray(prob.xiT, float))
        self.g0, self.gT = np.asarray(prob.g0, float), np.asarray(prob.gT, float)
        self.gT_inv = G.inverse(self.gT)
        n, N, c = self.n, self.N, self.c
        self.off_nu, self.off_lam = N * n, N * n + (N - 1) * n
        self.size = self.off_lam + N * c
        self._pattern()

    @property
    def scales(self) -> tuple[np.ndarray | None, np.ndarray | None]:
        """``unit_scales`` of this body (p = its largest spatial inertia)."""
        return unit_scales(self.N, self.n, self.c, self.prob.body.unit_momentum)

    def _pattern(self) -> None:
        self.rows, self.cols, self.local, self.sign = jacobian_pattern(self.N, self.n, self.c)
        n, N, c = self.n, self.N, self.c
        self.rT = np.arange((N - 1) * n, N * n)  # the terminal rows T (the row layout: jacobian_pattern)
        # the terminal block: rows T, columns ξ_0 … ξ_{N−1}, dense (row-major over the (n, N·n) block)
        self.structure = csc_structure(N, n, c)  # the Jacobian's CSC layout (dmoc_newton scales its data)

    def unpack(self, w: np.ndarray):
        n, N, c = self.n, self.N, self.c
        xi = w[: N * n].reshape(N, n)
        nu = np.vstack([self.nu0, w[self.off_nu : self.off_lam].reshape(N - 1, n), self.nuN])
        lam = w[self.off_lam :].reshape(N, c)
        return xi, nu, lam

    def poses(self, xi: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
        """g_0 … g_N (Alg. 5.2 step 5) and the retractions τ(hξ_k)."""
        taus = [self.ret.tau(self.h * x) for x in xi]
        g = [self.g0]
        for t in taus:
            g.append(g[-1] @ t)
        return np.array(g), taus

    def steps(self, xi: np.ndarray, nu: np.ndarray, lam: np.ndarray) -> dict:
        """Every step's outputs (one compiled call per step), split by name (arrays with a leading step axis)."""
        n, c, m, N, sz = self.n, self.c, self.m, self.N, self.G.size
        A = np.concatenate([nu[:-1], xi, nu[1:], lam], axis=1)
        col = np.empty((len(A), self.fn.f.size1_out(0)))
        for k, a in enumerate(A):
            col[k] = self.fn(a, self.p)[0][:, 0]  # copied out: the call reuses its output buffer
        out, i = {}, 0
        for name, shape in (
            ("out", (4 * n + c,)),
            ("J", (3 * n + c, 4 * n + c)),
            ("S0", ()),
            ("um", (m,)),
            ("up", (m,)),
            ("Wm", (n,)),
            ("Wp", (n,)),
            ("mu", (n,)),
            ("mup", (n,)),
            ("tau", (sz, sz)),
            ("dtau", (n, n)),
        ):
            size = int(np.prod(shape))
            block = col[:, i : i + size].reshape((N,) + shape)
            out[name] = block.transpose(0, 2, 1) if len(shape) == 2 else block  # column-major vec → matrix
            i += size
        return out

    def evaluate(self, w: np.ndarray, jacobian: bool = True):
        """F(w), and with ``jacobian`` its sparse Jacobian; plus the per-step outputs (``steps``) and poses g_k."""
        n, N, G = self.n, self.N, self.G
        xi, nu, lam = self.unpack(w)
        st = self.steps(xi, nu, lam)
        outs = st["out"]
        g = np.empty((N + 1, G.size, G.size))
        g[0] = self.g0
        for k in range(N):
            g[k + 1] = g[k] @ st["tau"][k]
        F = np.empty(self.size)
        F[: (N - 1) * n] = (outs[:-1, :n] - outs[1:, n : 2 * n]).ravel()  # E_k = L_{k−1} − R_k
        F[N * n : (2 * N - 1) * n] = (outs[1:, 2 * n : 3 * n] + outs[:-1, 3 * n : 4 * n]).ravel()  # V_k
        F[(2 * N - 1) * n :] = outs[:, 4 * n :].ravel()  # Φ_k
        T = self.ret.tau_inv(self.gT_inv @ g[-1])
        F[self.rT] = T
        parts = dict(st, xi=xi, nu=nu, lam=lam, g=g, T=T)
        if not jacobian:
            return F, parts
        return F, self.jacobian(parts), parts

    def jacobian(self, parts: dict) -> sp.csc_matrix:
        """Sparse J from the per-step Jacobians and the terminal block
        ∂T/∂ξ_j = dτ⁻¹_T Ad_{g(T)⁻¹ g_j} h dτ_{hξ_j} (right-trivialized chain rule through g_N = g_j τ(hξ_j) ⋯)."""
        N, G = self.N, self.G
        A = self.gT_inv @ parts["g"][:N]
        Ad = A if G.name == "SO3" else lie.adjoint(A[:, :3, :3], A[:, :3, 3])
        blocks = self.ret.dtau_inv(parts["T"]) @ Ad @ parts["dtau"]  # (N, n, n)
        data = np.concatenate([self.sign * parts["J"].ravel()[self.local], blocks.transpose(1, 0, 2).ravel()])
        inverse, indices, indptr = self.structure
        return sp.csc_matrix(
            (np.bincount(inverse, weights=data, minlength=len(indices)), indices, indptr), shape=(self.size, self.size)
        )


def geodesic_guess(prob: DMOCProblem) -> np.ndarray:
    """ξ_k along the one-parameter subgroup from g(0) to g(T) with a sin² speed profile (rest to rest), so the
    guess meets the terminal pose exactly; ν_k = ½(μ_k + μ⁺_{k−1}) (eq. 32); multipliers zero. (N, n) array."""
    G, N = prob.group, prob.horizon
    zeta = G.log(G.inverse(np.asarray(prob.g0, float)) @ np.asarray(prob.gT, float))
    k = np.arange(N + 1)
    s = k / N - np.sin(2 * np.pi * k / N) / (2 * np.pi)  # ∫ (2/T) sin²(πt/T) dt from 0 to t_k, in [0, 1]
    c = np.diff(s)
    if prob.retraction == "exp":
        return np.outer(c, zeta) / prob.dt
    return _cayley_of_exp(zeta, c, G.dim) / prob.dt


def _cayley_of_exp(zeta: np.ndarray, c: np.ndarray, dim: int) -> np.ndarray:
    """cay⁻¹(exp(c_k ζ)) for all k at once: every exp(c_kζ) rotates about the same axis a by θ_k = c_k|ω|, so
    the Cayley coordinates are 2 tan(θ_k/2)a and, on SE(3), (I − tan(θ_k/2)â)J(c_kω)c_kv with J = dexp."""
    w = zeta[:3]
    th = np.linalg.norm(w)
    a = w / th if th > 0 else np.zeros(3)
    t = c * th
    tan_half = np.tan(0.5 * t)
    out = np.outer(2.0 * tan_half, a)
    if dim == 3:
        return out
    A = lie.hat(a)
    small = t < 1e-4
    ts = np.where(small, 1.0, t)
    c1 = np.where(small, 0.5 * t, (1 - np.cos(ts)) / ts)  # (1 − cos θ)/θ² · θ
    c2 = np.where(small, t / 6.0, (ts - np.sin(ts)) / ts)  # (θ − sin θ)/θ³ · θ²
    v = np.outer(c, zeta[3:])
    p = v + c1[:, None] * (v @ A.T) + c2[:, None] * (v @ (A @ A).T)  # J(c_kω)(c_kv) row by row
    return np.hstack([out, p - tan_half[:, None] * (p @ A.T)])


def initial_point(cond: DMOCConditions, xi: np.ndarray) -> np.ndarray:
    """w from velocities ξ_k: ν_k = ½(μ_k + μ⁺_{k−1}) (eq. 32), multipliers zero."""
    N, n = cond.N, cond.n
    st = cond.steps(xi, np.zeros((N + 1, n)), np.zeros((N, cond.c)))
    nu = 0.5 * (st["mu"][1:] + st["mup"][:-1])
    return np.concatenate([xi.ravel(), nu.ravel(), np.zeros(N * cond.c)])


def unactuated_wrench(cond: DMOCConditions, parts: dict) -> float:
    """max_k |N_Bᵀ(W_k^± … )|: the part of the required body wrench no input can produce (Φ of eq. 23)."""
    if cond.r == 0:
        return 0.0
    NB = input_split(cond.prob.body.input_matrix)[1]
    return float(max(np.abs(parts["Wm"] @ NB).max(), np.abs(parts["Wp"] @ NB).max()))


_DIMS_OF = {"SO3": 3, "SE3": 6}


def check_guess(prob: DMOCProblem, xi_guess) -> np.ndarray:
    """``xi_guess`` as an (N, n) array of finite velocities within ``DMOC_BOUNDS``; ValueError naming it."""
    N, n = prob.horizon, _DIMS_OF[prob.body.group]
    a = np.asarray(xi_guess)
    if a.dtype.kind not in "iuf" or a.size != N * n:
        raise ValueError(f"xi_guess: expected ({N}, {n}) velocities, got {a.dtype} array of shape {a.shape}")
    a = a.astype(float).reshape(N, n)
    if not np.all(np.isfinite(a)):
        k = int(np.argwhere(~np.isfinite(a))[0, 0])
        raise ValueError(f"xi_guess: velocity of step {k} is not finite ({a[k].tolist()})")
    _check_entries(a, "xi_guess", "velocity[]")
    return a
