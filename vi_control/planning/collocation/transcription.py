"""LG and LG2 pseudospectral transcriptions of an optimal control problem, solved by IPOPT through CasADi
(MorenoMartin2022).

Time t ∈ [0, t_f] is split into K equal intervals of length h = t_f/K (K = 1: one global polynomial as in the
paper; K > 1: the h-p variant the paper's conclusions call for); τ = −1 + 2(t − t_k)/h on each.

- **LG** (MorenoMartin2022, §III): state x = (q, v) on the nodes (−1, τ₁ … τ_N); the dynamics q̇ = v, v̇ = g(q, v, u)
  are imposed at the Gauss points, (2/h) D X = F(X^LG, U) (eq. 10); the interval's end state is its polynomial at
  τ = 1 (equal to LG's quadrature end-point rule, Gauss quadrature being exact there).
- **LG2** (MorenoMartin2022, §IV): only q on the N + 2 nodes (−1, τ₁ … τ_N, +1); q̇ = (2/h) D*Q, q̈ = (2/h)² D*²Q (eqs.
  14–15) and Q̈^LG = G(Q^LG, Q̇^LG, U) at the Gauss points (eq. 16). Between intervals q is shared and q̇ continuous.

Dynamics ``implicit`` (default: M q̈ + b − Bu − Dhᵀλ = 0, λ unknowns at the Gauss points with holonomic constraints)
or ``explicit`` (q̈ = M⁻¹(Bu − b), the paper's form; the bordered KKT solve with constraints). Both have the same
solutions; with the implicit rows IPOPT needs fewer iterations (cart-pole LG2 at N = 30: 10 instead of 27) and the
expressions stay small for many joints (docs/concepts/collocation.md). Rows that define derivatives from node values
(LG's
q̇ = v, lifted LG2's q̇ and q̈) are multiplied by (h/2)^r: polynomial in a free t_f (fewer IPOPT iterations). Decision
variables: node values Q (and V for LG), U and λ at the Gauss points, t_f if free. Boundary values are NLP
parameters, so one built transcription re-solves from new start states (the planner's re-plans).
"""

from __future__ import annotations

import ctypes
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import casadi as ca
import numpy as np

from ...mechanics.graph_lock import OwnsGraphs, builds_graph
from ...model.scalars import is_integer
from ..errors import PlanningError, ipopt_iterations
from .dynamics import SecondOrderDynamics
from .legendre import Interpolant, differentiation_matrix, gauss_points, interpolation_matrix, lg2_nodes, lg_nodes
from .size import MAX_WORK, check_size, variable_shapes
from .solution import CollocationSolution, Segment, input_interpolant

METHODS = ("lg", "lg2")
COSTS = ("time", "effort")
# Quiet and single-threaded (the casadi wheel's MUMPS runs sequentially); exact Hessians of the Lagrangian.
IPOPT_DEFAULTS = {"print_level": 0, "sb": "yes", "linear_solver": "mumps", "hessian_approximation": "exact"}


def _single_threaded_blas() -> None:
    """Limit the OpenBLAS that the casadi wheel's IPOPT/MUMPS load to one thread (it starts one per core): the
    solves are tiny, and on a shared 2-core machine a second BLAS thread only waits for a core."""
    for lib in Path(ca.__file__).parent.glob("libcasadi-tp-openblas.so*"):
        try:
            ctypes.CDLL(str(lib)).openblas_set_num_threads(1)
        except (OSError, AttributeError):  # another build of casadi: nothing to limit
            pass
        return


# (expression in the node's q, v, u) -> (expr, lower, upper); boundary: (q0, v0, qf, vf) -> (expr, lower, upper)
PathConstraint = Callable[[ca.SX, ca.SX, ca.SX], tuple]
BoundaryConstraint = Callable[[ca.SX, ca.SX, ca.SX, ca.SX], tuple]


def _mask(value, nq: int, key: str) -> np.ndarray:
    m = np.broadcast_to(np.asarray(value, bool), (nq,)).copy() if np.ndim(value) == 0 else np.asarray(value, bool)
    if m.shape != (nq,):
        raise ValueError(f"{key}: expected a bool or {nq} bools, got {value!r}")
    return m


@dataclass
class CollocationProblem:
    """What to solve. ``fix_*`` (bool or per-joint bools) say which boundary values are imposed (their values come
    with ``solve``); ``input_limits`` |u| bounds (None: the model's effort limits); ``joint_limits`` bounds every q
    node by the URDF limits; ``cost``: ``time`` (min t_f, needs ``free_time``) or ``effort`` (∫uᵀRu dt, R =
    ``effort_weight``); ``path_constraints`` hold at the Gauss points, ``boundary_constraints`` once; ``lifted``
    (LG2): q̇ and q̈ at the Gauss points are variables tied to Q by eqs. 14–15 (same solutions, sparser Hessian);
    ``lifted=None`` lifts when the dynamics depend on q̇ (Coriolis, damping, constraints); ``consistent_start`` (with
    holonomic constraints) adds h(q(0)) = 0 and Dh q̇(0) = 0 where the fixed boundary
    values do not imply them — off when ``boundary_constraints`` already do (a gait's impact map); ``size_limit``:
    the largest NLP ``Transcription`` builds (``size.MAX_WORK``: Gauss points × operations of a dynamics row; None:
    no bound), beyond it ``size.NLPSizeError``."""

    dynamics: SecondOrderDynamics
    method: str = "lg2"
    nodes: int = 20
    intervals: int = 1
    free_time: bool = False
    time_bounds: tuple[float, float] = (1e-2, 100.0)
    cost: str = "effort"
    effort_weight: float | np.ndarray = 1.0
    input_limits: np.ndarray | None = None
    joint_limits: bool = True
    fix_q0: bool | np.ndarray = True
    fix_v0: bool | np.ndarray = True
    fix_qf: bool | np.ndarray = True
    fix_vf: bool | np.ndarray = True
    path_constraints: tuple[PathConstraint, ...] = ()
    boundary_constraints: tuple[BoundaryConstraint, ...] = ()
    dynamics_form: str | None = None
    lifted: bool | None = None
    consistent_start: bool = True
    size_limit: int | None = MAX_WORK
    max_iterations: int = 3000
    tolerance: float = 1e-8
    ipopt: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"method: expected one of {METHODS}, got {self.method!r}")
        for key in ("nodes", "intervals", "max_iterations"):
            v = getattr(self, key)
            if not is_integer(v) or v < (3 if key == "nodes" else 1):
                raise ValueError(f"{key}: must be an integer ≥ {3 if key == 'nodes' else 1}, got {v!r}")
        if self.cost not in COSTS:
            raise ValueError(f"cost: expected one of {COSTS}, got {self.cost!r}")
        if self.cost == "time" and not self.free_time:
            raise ValueError("cost: minimum time needs a free final time")
        lo, hi = self.time_bounds
        if not 0 < lo < hi:
            raise ValueError(f"time_bounds: need 0 < lower < upper, got {self.time_bounds}")
        form = self.dynamics_form or "implicit"
        if form not in ("explicit", "implicit"):
            raise ValueError(f"dynamics_form: expected 'explicit' or 'implicit', got {form!r}")
        self.dynamics_form = form
        if self.lifted is None:  # lift where q̈'s equation involves q̇: its Hessian would couple every node
            self.lifted = bool(self.dynamics.nc) or self.dynamics.velocity_dependent
        nq = self.dynamics.nq
        for key in ("fix_q0", "fix_v0", "fix_qf", "fix_vf"):
            setattr(self, key, _mask(getattr(self, key), nq, key))


@dataclass
class Guess:
    """An initial guess as functions of time on [0, tf]: q(t), v(t) → (len(t), nq), u(t) → (len(t), nu)."""

    tf: float
    q: Callable[[np.ndarray], np.ndarray]
    v: Callable[[np.ndarray], np.ndarray]
    u: Callable[[np.ndarray], np.ndarray]

    @classmethod
    def from_solution(cls, sol: CollocationSolution) -> Guess:
        return cls(tf=sol.tf, q=sol.q, v=sol.v, u=sol.u)

    @classmethod
    def linear(cls, q0: np.ndarray, qf: np.ndarray, tf: float, nu: int) -> Guess:
        """Straight line from q0 to qf at constant velocity, zero inputs (the usual simple guess)."""
        q0, qf = np.asarray(q0, float), np.asarray(qf, float)
        return cls(
            tf=tf,
            q=lambda t: q0 + np.outer(np.asarray(t) / tf, qf - q0),
            v=lambda t: np.tile((qf - q0) / tf, (len(np.atleast_1d(t)), 1)),
            u=lambda t: np.zeros((len(np.atleast_1d(t)), nu)),
        )


class Transcription(OwnsGraphs):
    """The NLP of one CollocationProblem, built once (symbolic, CasADi SX) and solved with new boundary values.

    Decision variables, in order: Q (node values, node-major), V (LG: velocity node values), Vc and Ac (lifted
    LG2: q̇ and q̈ at the Gauss points, tied to Q by the linear maps of eqs. 14–15), U and λ at the Gauss points,
    and t_f if free.
    """

    @builds_graph
    def __init__(self, problem: CollocationProblem):
        self.problem = p = problem
        dyn = p.dynamics
        self.size = check_size(p)
        self.nq, self.nu, self.nc = nq, nu, nc = dyn.nq, dyn.nu, dyn.nc
        N, K = self.N, self.K = p.nodes, p.intervals
        lg2 = self.lg2 = p.method == "lg2"
        self.lifted = lg2 and p.lifted
        self.tau = lg2_nodes(N) if lg2 else lg_nodes(N)
        Dn = differentiation_matrix(self.tau)
        self._D, self._D2c = Dn, (Dn @ Dn)[1 : N + 1]  # D2c: rows of D*² at the Gauss points (LG2)
        D, D2c = ca.DM(Dn), ca.DM(self._D2c)
        self.n_nodes = K * (N + 1) + 1  # LG2: shared interval ends; LG: N + 1 per interval + the end
        implicit = p.dynamics_form == "implicit"
        sizes = variable_shapes(dyn, p.method, N, K, self.lifted, implicit, p.free_time)
        X = {name: ca.SX.sym(name, *shape) for name, shape in sizes.items()}
        self._sizes = {name: int(np.prod(shape)) for name, shape in sizes.items()}
        Q, V, U, Lam = X["Q"], X["V"], X["U"], X["lam"]
        P = ca.SX.sym("p", 4 * nq + 1)
        q0p, v0p, qfp, vfp, tfp = ca.vertsplit(P, [0, nq, 2 * nq, 3 * nq, 4 * nq, 4 * nq + 1])
        tf = X["tf"] if p.free_time else tfp
        h = tf / K
        g, lbg, ubg = [], [], []

        def add(expr, lo=0.0, hi=0.0):
            expr = ca.vec(expr)
            g.append(expr)
            lbg.append(np.broadcast_to(np.asarray(lo, float), (expr.numel(),)))
            ubg.append(np.broadcast_to(np.asarray(hi, float), (expr.numel(),)))

        def dynamics(q, v, a, u, lam):
            return dyn.implicit(q, v, a, u, lam) if implicit else a - dyn.explicit(q, v, u)

        w_gauss = gauss_points(N)[1]
        E1 = ca.DM(interpolation_matrix(lg_nodes(N), [1.0]))  # LG: the polynomial at τ = +1
        R = ca.DM(np.broadcast_to(np.asarray(p.effort_weight, float), (nu,)).copy())
        cost = ca.SX(0)
        v_start = v_end = None  # q̇ at t = 0 and t = t_f
        for k in range(K):
            cols, cc = slice(k * (N + 1), k * (N + 1) + N + 2), slice(k * N, (k + 1) * N)
            if lg2:
                Qk = Q[:, cols]
                Qd = (2 / h) * ca.mtimes(Qk, D.T)  # q̇ at every node (eq. 14)
                qc, vc = Qk[:, 1 : N + 1], Qd[:, 1 : N + 1]
                ac = (2 / h) ** 2 * ca.mtimes(Qk, D2c.T)  # q̈ at the Gauss points (eq. 15), D*² precomputed
                if self.lifted:  # the same equations with q̇, q̈ named: the nonlinear rows stay node-local; written
                    vc, ac = X["Vc"][:, cc], X["Ac"][:, cc]  # times (h/2)^r, they are polynomial in a free t_f
                    add((h / 2) * vc - ca.mtimes(Qk, D[1 : N + 1, :].T))
                    add((h / 2) ** 2 * ac - ca.mtimes(Qk, D2c.T))
                if k == 0:
                    v_start = Qd[:, 0]
                else:
                    add(v_end - Qd[:, 0])  # q̇ continuous across the interval boundary
                v_end = Qd[:, N + 1]
            else:
                Qn, Vn = Q[:, cols][:, : N + 1], V[:, cols][:, : N + 1]
                qc, vc, ac = Qn[:, 1:], Vn[:, 1:], (2 / h) * ca.mtimes(Vn, D[1:, :].T)
                add(ca.mtimes(Qn, D[1:, :].T) - (h / 2) * vc)  # q̇ = v at the Gauss points (eqs. 3a, 10), × h/2
                end = (k + 1) * (N + 1)
                add(Q[:, end] - ca.mtimes(Qn, E1.T))
                add(V[:, end] - ca.mtimes(Vn, E1.T))
            for i in range(N):
                j = k * N + i
                add(dynamics(qc[:, i], vc[:, i], ac[:, i], U[:, j], Lam[:, j]))  # eqs. 10 (v rows) and 16
                for pc in p.path_constraints:
                    add(*pc(qc[:, i], vc[:, i], U[:, j]))
            if p.cost == "effort":
                Uk = U[:, cc]
                cost += (h / 2) * ca.mtimes(ca.mtimes(R.T, Uk * Uk), ca.DM(w_gauss))  # Gauss quadrature
        if not lg2:
            v_start, v_end = V[:, 0], V[:, -1]
        q_start, q_end = Q[:, 0], Q[:, -1]
        for val, par, mask in (
            (q_start, q0p, p.fix_q0),
            (v_start, v0p, p.fix_v0),
            (q_end, qfp, p.fix_qf),
            (v_end, vfp, p.fix_vf),
        ):
            idx = np.flatnonzero(mask).tolist()
            if idx:
                add(val[idx] - par[idx])
        # Consistent start: index-1 dynamics keep h = 0 only if h and its derivative vanish at t = 0.
        if nc and p.consistent_start:
            if not p.fix_q0.all():
                add(dyn.constraint(q_start))
            if not (p.fix_q0.all() and p.fix_v0.all()):
                add(ca.mtimes(dyn.constraint_jacobian(q_start), v_start))
        for bc in p.boundary_constraints:
            add(*bc(q_start, v_start, q_end, v_end))
        if p.cost == "time":
            cost = tf
        self._w = ca.vertcat(*[ca.vec(x) for x in X.values()])
        self._lbg, self._ubg = np.concatenate(lbg), np.concatenate(ubg)
        self._lbx, self._ubx = self._bounds()
        opts = {
            "ipopt": {**IPOPT_DEFAULTS, "max_iter": int(p.max_iterations), "tol": float(p.tolerance), **p.ipopt},
            "print_time": False,
        }
        t0 = time.process_time()
        self.solver = ca.nlpsol(
            f"collocation_{p.method}", "ipopt", {"x": self._w, "p": P, "f": cost, "g": ca.vertcat(*g)}, opts
        )
        self.build_time = time.process_time() - t0
        _single_threaded_blas()  # loaded by the IPOPT plugin just now
        self.n_variables, self.n_constraints = self._w.numel(), len(self._lbg)

    def _bounds(self) -> tuple[np.ndarray, np.ndarray]:
        p, nq, nu = self.problem, self.nq, self.nu
        qlo, qhi = np.full(nq, -np.inf), np.full(nq, np.inf)
        if p.joint_limits:
            qlo = np.array([j.lower for j in p.dynamics.robot.joints])
            qhi = np.array([j.upper for j in p.dynamics.robot.joints])
        lim = p.dynamics.robot.effort_limits if p.input_limits is None else p.input_limits
        ulim = np.broadcast_to(np.asarray(lim, float), (nu,))
        lo = {name: np.full(n, -np.inf) for name, n in self._sizes.items()}
        hi = {name: np.full(n, np.inf) for name, n in self._sizes.items()}
        lo["Q"], hi["Q"] = np.tile(qlo, self.n_nodes), np.tile(qhi, self.n_nodes)
        lo["U"], hi["U"] = np.tile(-ulim, self.K * self.N), np.tile(ulim, self.K * self.N)
        if p.free_time:
            lo["tf"], hi["tf"] = np.array([p.time_bounds[0]]), np.array([p.time_bounds[1]])
        return np.concatenate(list(lo.values())), np.concatenate(list(hi.values()))

    # ---- layout ------------------------------------------------------------------------------------
    def node_times(self, tf: float) -> np.ndarray:
        h = tf / self.K
        t = [k * h + (self.tau[: self.N + 1] + 1) * h / 2 for k in range(self.K)]
        return np.concatenate(t + [[tf]])

    def colloc_times(self, tf: float) -> np.ndarray:
        h, tau = tf / self.K, gauss_points(self.N)[0]
        return np.concatenate([k * h + (tau + 1) * h / 2 for k in range(self.K)])

    def _split(self, w: np.ndarray) -> dict[str, np.ndarray]:
        parts = np.split(np.asarray(w, float).ravel(), np.cumsum(list(self._sizes.values()))[:-1])
        return dict(zip(self._sizes, parts, strict=True))

    def _lg2_derivatives(self, Q: np.ndarray, tf: float) -> tuple[np.ndarray, np.ndarray]:
        """q̇ and q̈ at the Gauss points (K·N, nq) of node values Q (eqs. 14–15)."""
        h, N = tf / self.K, self.N
        rows = [Q[k * (N + 1) : k * (N + 1) + N + 2] for k in range(self.K)]
        Vc = np.concatenate([(2 / h) * self._D[1 : N + 1] @ Qk for Qk in rows])
        Ac = np.concatenate([(2 / h) ** 2 * self._D2c @ Qk for Qk in rows])
        return Vc, Ac

    def pack_guess(self, guess: Guess) -> np.ndarray:
        """The NLP's start point from ``guess`` sampled at the nodes, clipped into the bounds."""
        tn, tc = self.node_times(guess.tf), self.colloc_times(guess.tf)
        Q = np.asarray(guess.q(tn), float).reshape(len(tn), self.nq)
        parts = {name: np.zeros(n) for name, n in self._sizes.items()}
        parts["Q"] = Q.ravel()
        if not self.lg2:
            parts["V"] = np.asarray(guess.v(tn), float).reshape(len(tn), self.nq).ravel()
        if self.lifted:  # consistent with Q: the lifted and the plain LG2 start from the same point
            Vc, Ac = self._lg2_derivatives(Q, guess.tf)
            parts["Vc"], parts["Ac"] = Vc.ravel(), Ac.ravel()
        parts["U"] = np.asarray(guess.u(tc), float).reshape(len(tc), self.nu).ravel()
        if self.problem.free_time:
            parts["tf"] = np.array([guess.tf])
        return np.clip(np.concatenate(list(parts.values())), self._lbx, self._ubx)

    # ---- solve -------------------------------------------------------------------------------------
    def solve(
        self,
        q0=None,
        v0=None,
        qf=None,
        vf=None,
        tf: float | None = None,
        guess: Guess | None = None,
        raise_on_failure: bool = True,
    ) -> CollocationSolution:
        """Solve with these boundary values (entries the problem leaves free are ignored) from ``guess``
        (default: a straight line q0 → qf over tf). Raises PlanningError with IPOPT's status unless it succeeds
        (``raise_on_failure=False`` returns the failed solution instead)."""
        nq, p = self.nq, self.problem
        vals = [np.zeros(nq) if a is None else np.asarray(a, float).ravel() for a in (q0, v0, qf, vf)]
        for name, a in zip(("q0", "v0", "qf", "vf"), vals, strict=True):
            if a.shape != (nq,) or not np.all(np.isfinite(a)):
                raise ValueError(f"{name}: expected {nq} finite numbers, got {a}")
        if not p.free_time and not (tf is not None and tf > 0):
            raise ValueError(f"tf: a fixed final time must be positive, got {tf!r}")
        tf_guess = tf if tf is not None else float(np.mean(p.time_bounds))
        guess = guess or Guess.linear(vals[0], vals[2], tf_guess, self.nu)
        par = np.concatenate(vals + [[tf if tf is not None else 0.0]])
        x0 = self.pack_guess(guess)
        c0, t0 = time.process_time(), time.perf_counter()
        res = self.solver(x0=x0, lbx=self._lbx, ubx=self._ubx, lbg=self._lbg, ubg=self._ubg, p=par)
        cpu, wall = time.process_time() - c0, time.perf_counter() - t0
        st = self.solver.stats()
        sol = self._solution(np.array(res["x"]).ravel(), float(res["f"]), st, cpu, wall, tf)
        if raise_on_failure and not sol.success:
            raise PlanningError(
                f"collocation ({p.method}, N = {self.N}, {self.K} interval(s)) failed",
                status=sol.status,
                iterations=sol.iterations,
                solver="ipopt",
            )
        return sol

    def _solution(self, w, objective, st, cpu, wall, tf_fixed) -> CollocationSolution:
        nq, nu, N, K = self.nq, self.nu, self.N, self.K
        parts = self._split(w)
        Q = parts["Q"].reshape(-1, nq)
        V = None if self.lg2 else parts["V"].reshape(-1, nq)
        U = parts["U"].reshape(-1, nu)
        lam = parts["lam"].reshape(K * N, -1)
        tf = float(parts["tf"][0]) if self.problem.free_time else float(tf_fixed)
        h = tf / K
        segs, Vn = [], np.zeros_like(Q)
        for k in range(K):
            t0, t1 = k * h, (k + 1) * h
            rows = slice(k * (N + 1), k * (N + 1) + N + 2)
            u_poly = input_interpolant(N, U[k * N : (k + 1) * N], t0, t1)
            if self.lg2:
                seg = Segment(t0, t1, Interpolant(self.tau, Q[rows], t0, t1), u_poly)
                Vn[rows] = seg.q.values(1)
            else:
                n = slice(k * (N + 1), k * (N + 1) + N + 1)
                seg = Segment(t0, t1, Interpolant(self.tau, Q[n], t0, t1), u_poly, Interpolant(self.tau, V[n], t0, t1))
            segs.append(seg)
        if not self.lg2:
            Vn = V
        return CollocationSolution(
            method=self.problem.method,
            nodes=N,
            intervals=K,
            tf=tf,
            segments=segs,
            t_nodes=self.node_times(tf),
            Q=Q,
            V=Vn,
            t_colloc=self.colloc_times(tf),
            U=U,
            lam=lam,
            objective=objective,
            success=bool(st.get("success", False)),
            status=str(st.get("return_status", "unknown")),
            iterations=ipopt_iterations(st, self.problem.max_iterations),
            solve_time=cpu,
            wall_time=wall,
            w=w,
        )
