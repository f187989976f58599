"""Shared pieces of the shooting solvers: the result record, rollouts of a discrete system, box bounds.

The dynamics model is any ``Linearizable`` discrete system (x_{k+1} = f(x_k, u_k), e.g. the midpoint VI of
Johnson2015, eq. 2) with its exact derivatives from vi_control.linearization; the cost is a
QuadraticTrackingCost; solvers are separate (ddp.py, gradient.py) — the split of Crocoddyl (action model /
cost / solver).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..integrators.base import DiscreteSystem, Linearizable, StepError, StepResult
from ..linearization import linearize
from ..model.scalars import is_integer, is_real
from .errors import PlanningError
from .result import SolverResult


@dataclass
class OptimizerResult(SolverResult):
    """Outcome of a trajectory optimization.

    ``K`` (N, nu, ndx) are the solver's own feedback gains in the project convention
    u = U_k + K_k (X_k ⊖ x): DDP's and iLQR's from their backward pass, the projection method's from its LQ
    projection, zero for steepest descent (it has none); ``cost_history[i]`` is J after
    iteration i (index 0 = initial guess); ``decrement_history`` is the directional derivative of J
    along each descent direction (the seed's convergence measure, Fig. 3).
    """

    X: np.ndarray
    U: np.ndarray
    K: np.ndarray
    cost: float
    cost_history: list[float]
    decrement_history: list[float]
    iterations: int
    converged: bool
    stop_reason: str
    wall_time: float
    method: str
    regularization_history: list[float] = field(default_factory=list)
    step_history: list[float] = field(default_factory=list)
    step_kinds: list[str] = field(default_factory=list)  # DDP: "newton" or "gauss-newton" per iteration
    linearization: list | None = None  # Linearization (A_k, B_k, rcond) at the returned X, U if computed
    constraint_violation: float | None = None  # ‖x_N − goal‖∞ when the goal was a constraint (augmented.py)
    outer_iterations: int = 0  # augmented-Lagrangian multiplier updates (0: an unconstrained solve)
    compiled: bool = False  # DDP's stage passes ran in the compiled kernel (planning.compiled), not numpy
    cpu_time: float = 0.0  # process time of the optimization [s] (wall_time counts waits for a core too)
    collocation: object | None = None  # the collocation methods' CollocationSolution (before the VI polish)
    terminal_multiplier: np.ndarray | None = None  # λ of x_N = goal (augmented.py; a warm start's ``multiplier``)
    # (at the start, at the result) of what the solve set out to decrease: J, or with a terminal constraint the
    # augmented Lagrangian of its first multiplier and penalty (augmented.py); a weight continuation's last stage's
    # (its own measure); None: (cost_history[0], cost) (``merits``)
    merit: tuple[float, float] | None = None
    warm_started: bool = False  # plan_task followed its warm_start (False: none given, or it could not be followed)
    # (X_ref, U_ref) and the Task plan_task planned against (a request's path and weights): what an MPC loop
    # continues after a plan made outside it (planning.mpc.RecedingHorizon.follow); None from the optimizers alone
    reference: tuple[np.ndarray, np.ndarray] | None = None
    task: object | None = None

    @property
    def merits(self) -> tuple[float, float]:
        """(at the initial guess, at the result) of the function the solve decreases from its start — J itself, or for
        a terminal constraint the augmented Lagrangian at its first multiplier and penalty (its first subproblem's
        cost), which J alone is not: meeting the constraint may cost J. One measure for both, so that the two compare
        (planning.mpc accepts a capped cycle on it)."""
        return self.merit if self.merit is not None else (self.cost_history[0], self.cost)

    @property
    def solve_time(self) -> float:
        """CPU seconds of the optimization (``SolverResult``): ``cpu_time``."""
        return self.cpu_time

    def __str__(self) -> str:
        return (
            f"{self.method}: {'converged' if self.converged else 'not converged'} in {self.iterations} "
            f"iterations ({self.stop_reason}), cost {self.cost:.6g}, {self.wall_time * 1e3:.0f} ms"
        )


LogFn = Callable[[str], None] | None


def check_optimizer_options(max_iterations: int, tolerance: float, regularization: float = 0.0) -> None:
    """Every solver's options bound its loops: ValueError naming the argument otherwise.

    A NaN regularization never grows past its ceiling (``max(nan·10, …)`` stays NaN) and a NaN tolerance
    is never met, so without this check DDP's retry loop would never end.
    """
    if not is_integer(max_iterations) or not 1 <= max_iterations <= 100_000:
        raise ValueError(f"max_iterations: must be an integer in [1, 100000], got {max_iterations!r}")
    for name, v, ok in (
        ("tolerance", tolerance, lambda v: v > 0),
        ("regularization", regularization, lambda v: 0 <= v <= 1e10),
    ):
        if not is_real(v) or not np.isfinite(v) or not ok(v):
            raise ValueError(
                f"{name}: must be a finite number {'> 0' if name == 'tolerance' else 'in [0, 1e10]'}, got {v!r}"
            )


def check_problem(vi: DiscreteSystem, cost, x0: np.ndarray, U0: np.ndarray, X0: np.ndarray | None = None) -> None:
    """ValueError naming the argument whose size does not fit the system and the cost's horizon. A cost made for
    another state size, or a warm start X0 of another horizon, was read by the compiled DDP loop beyond the end
    of its arrays (and "converged"); a wrong U0 ended in numpy's reshape error."""
    N = cost.N
    if (cost.nx, cost.nu) != (vi.nx, vi.nu):
        raise ValueError(f"cost: made for nx = {cost.nx}, nu = {cost.nu}; the system has nx = {vi.nx}, nu = {vi.nu}")
    if vi.state.ndx != vi.nx:  # (the backward pass read the cost's (N, nx) derivatives as (N, ndx): other entries)
        raise ValueError(
            f"{type(vi).__name__}: its state has nx = {vi.nx} coordinates but ndx = {vi.state.ndx} tangent directions; "
            "the cost's derivatives are in the coordinates (x − x_ref) and the backward pass works in the tangent "
            "directions: the shooting methods need a vector state (ndx = nx); plan a Lie-group system with DMOC "
            "(planning.vehicle)"
        )
    if np.size(x0) != vi.nx:
        raise ValueError(f"x0 has {np.size(x0)} entries, expected nx = {vi.nx}")
    if np.size(U0) != N * vi.nu:
        raise ValueError(f"U0 has shape {np.shape(U0)}, expected ({N}, {vi.nu}): the cost's horizon and the inputs")
    if X0 is not None and np.shape(X0) != (N + 1, vi.nx):
        raise ValueError(f"X0 has shape {np.shape(X0)}, expected ({N + 1}, {vi.nx})")


def input_bounds(limits: np.ndarray | None, nu: int) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric box |u_i| ≤ limit_i from effort limits (inf = unbounded); (lo, hi)."""
    if limits is None:
        hi = np.full(nu, np.inf)
    else:
        hi = np.array(limits, float).reshape(-1)
        if hi.size not in (1, nu):
            raise ValueError(f"input limits: expected one bound or {nu} (one per input), got {hi.size}")
        if hi.size != nu:
            hi = np.full(nu, hi[0])
        if not (hi > 0).all():  # (NaN too)
            raise ValueError(f"input limits must be positive (inf for none), got {hi}")
    return -hi, hi


def _rollout_step(
    vi: DiscreteSystem,
    x: np.ndarray,
    u: np.ndarray,
    k: int,
    y0: np.ndarray | None = None,
    lam0: np.ndarray | None = None,
) -> StepResult | None:
    """Step k of a rollout, or None where it fails: no convergence, a singular step, or a state beyond 1e8 (NaN too)
    — a rejected trial for the line searches, not a crash."""
    try:
        r = vi.solve(x, u, step_index=k, y0=y0, lam0=lam0)
    except (StepError, ValueError):
        return None
    return r if np.abs(r.x).max() < 1e8 else None


def rollout(
    vi: DiscreteSystem,
    x0: np.ndarray,
    U: np.ndarray,
    X_guess: np.ndarray | None = None,
    lo: np.ndarray | None = None,
    hi: np.ndarray | None = None,
    X_nom: np.ndarray | None = None,
    K: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, list[StepResult]] | None:
    """Simulate u_k = clip(U_k + K_k (x_k ⊖ X_nom,k)) (DDP's forward pass; K=None: open loop).

    Newton is warm-started at X_guess's next state shifted by x_k ⊖ X_guess,k, and at the last multipliers.
    Returns (X, U_applied, step results),
    or None if a step fails (non-convergence or singular M_{k+1}): the caller treats that as a
    rejected step rather than a crash.
    """
    N = len(U)
    X = np.zeros((N + 1, vi.nx))
    Ua = np.array(U, float, copy=True)
    X[0] = x0
    results: list[StepResult] = []
    lam = np.zeros(vi.nc)
    bounded = lo is not None and bool(np.isfinite(lo).any() or np.isfinite(hi).any())
    for k in range(N):
        if K is not None:
            Ua[k] += K[k] @ vi.state.diff(X_nom[k], X[k])
        if bounded:
            np.clip(Ua[k], lo, hi, out=Ua[k])
        # The guessed step moved to where this rollout is: X_guess's next state shifted by the current offset
        # (a trial trajectory far from the nominal one must not start Newton at the nominal next pose).
        y0 = (
            None
            if X_guess is None
            else vi.warm_start(vi.state.integrate(X_guess[k + 1], vi.state.diff(X_guess[k], X[k])), lam)
        )
        r = _rollout_step(vi, X[k], Ua[k], k, y0, lam)
        if r is None:
            return None
        X[k + 1], lam = r.x, r.lam
        results.append(r)
    return X, Ua, results


def reference_jacobians(vi: Linearizable, X: np.ndarray, U: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(A (N, ndx, ndx), B (N, ndx, nu)): ``linearize(vi, X[k], U[k])`` of every stage of a reference (N+1 states, N
    inputs) that need not satisfy the dynamics, each step solved from X_k; None where one fails (StepError, a singular
    R_y among them)."""
    try:
        lins = [linearize(vi, X[k], U[k]) for k in range(len(U))]
    except StepError:
        return None
    return np.array([lin.A for lin in lins]), np.array([lin.B for lin in lins])


def _first_failing_step(vi: DiscreteSystem, x0: np.ndarray, U: np.ndarray) -> tuple[int, str]:
    """Index of the first step of the open-loop rollout from x0 that fails (len(U) if none does) and why (the step's
    own error: the joint that would turn too far, the residual Newton stopped at, ...)."""
    x = x0
    for k, u in enumerate(U):
        try:
            r = vi.solve(x, u, step_index=k)
        except (StepError, ValueError) as e:
            return k, str(e)
        if not np.abs(r.x).max() < 1e8:
            return k, f"the state reached |x| = {np.abs(r.x).max():.3g}, beyond 1e8"
        x = r.x
    return len(U), ""


def initial_rollout(
    vi: DiscreteSystem,
    x0: np.ndarray,
    U0: np.ndarray,
    N: int,
    input_limits: np.ndarray | None,
    X_guess: np.ndarray | None = None,
    simulate: Callable | None = None,
):
    """Clip the initial guess to the bounds and simulate it: (lo, hi, X, U, step results).

    ``X_guess``: the trajectory these inputs produced before (a warm start), whose states start Newton at each
    step, so a replay finds the same roots of the DEL equation rather than possibly others near the predictor.
    ``simulate(x0, U, X_guess)``: the rollout to use (default ``rollout``; DDP's compiled stages pass their own).
    """
    lo, hi = input_bounds(input_limits, vi.nu)
    U = np.clip(np.asarray(U0, float).reshape(N, vi.nu), lo, hi)
    x0 = np.asarray(x0, float)
    ro = rollout(vi, x0, U, X_guess) if simulate is None else simulate(x0, U, X_guess)
    if ro is None:  # name the step: the user's guess (or x0) is what to fix
        k, why = _first_failing_step(vi, x0, U)
        where = (
            f"step {k} of {N} failed ({why})"
            if k < N
            else "a step warm-started at X_guess failed (no convergence, a singular step or a state beyond 1e8)"
        )
        raise PlanningError(
            f"the initial guess cannot be simulated: {where}; try smaller initial inputs or a shorter Δt",
            solver="initial rollout",
        )
    X, U, results = ro
    return lo, hi, X, U, results


def local_model(cost, X: np.ndarray, U: np.ndarray, metric: tuple[np.ndarray, np.ndarray] | None = None):
    """What a DDP backward pass takes from a QuadraticTrackingCost along (X, U): (l_x, l_u) of every stage, V_x and
    V_xx at x_N, and the curvature (W_x, W_u) of the local model — the cost's own Q, R (Newton, Gauss–Newton) or a
    fixed metric (the first-order projection method, whose V_xx(N) is then W_x too)."""
    Vx, Vxx = cost.calc_diff_terminal(X[-1])
    Wx, Wu = (cost.Q, cost.R) if metric is None else metric
    if metric is not None:
        Vxx = Wx
    LX, LU = cost.calc_diff_all(X, U)
    return LX, LU, Vx, Vxx, Wx, Wu


def progress_line(method: str, it: int, cost: float, decrement: float, step: float, reg: float) -> str:
    return f"[{method}] iter {it:4d}  cost {cost:.6e}  dJ {decrement:+.3e}  step {step:.3g}  reg {reg:.1e}"
