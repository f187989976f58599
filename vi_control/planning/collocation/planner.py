"""Collocation as a planner method: task → LG/LG2 solution → the VI's Δt grid → DDP polish on the VI.

``collocate_task(vi, task, x0)`` is what ``plan_task`` runs for ``optimizer.method: collocation_lg | collocation_lg2``:

1. the continuous problem from the task: start (q₀, q̇₀) = (q of x₀, M⁻¹p of x₀), goal (goal.q, q̇ = 0), final time
   fixed (horizon·Δt) or free in [t_min, horizon·Δt], cost ∫uᵀu or t_f, the task's input limits, URDF joint limits;
2. IPOPT on the LG or LG2 transcription (built once per robot and options, then re-solved: re-plans are cheap);
3. resampling onto the VI grid t_k = kΔt, k ≤ ⌈t_f/Δt⌉: q_k = q(t_k) (held at the goal after t_f), the discrete state
   x_k = (q_k, D₂L_d(q(t_k − Δt), q_k)) (Johnson2015, eq. 1b) and u_k = u(t_k + Δt/2) (the midpoint of the step);
4. DDP on the VI, tracking the resampled states with the task's weights, from the inputs of a rollout that follows
   the resampled trajectory under TV-LQR feedback (the open-loop inputs would fall off an unstable swing-up): every
   state of the result is a VI rollout, so the plan is exactly VI-feasible, and TV-LQR gains follow in
   ``plan_task`` as for DDP.
"""

from __future__ import annotations

import math
from collections import OrderedDict

import numpy as np

from ...control.hold import equilibrium_state, holding_input
from ...integrators.base import Linearizable
from ..cost import QuadraticTrackingCost
from ..ddp import ddp, reference_feedback_guess
from ..shooting import LogFn, OptimizerResult
from ..task import Task, TaskError
from .dynamics import SecondOrderDynamics
from .size import NLPSizeError
from .solution import CollocationSolution
from .transcription import CollocationProblem, Guess, Transcription

_CACHE: OrderedDict = OrderedDict()  # (robot hash, options) -> Transcription; a few, most recent last
_CACHE_SIZE = 4


def transcription_for(vi: Linearizable, task: Task, limits: np.ndarray | None) -> Transcription:
    """The task's transcription for this robot, built once and cached (a planner node re-solves it)."""
    c, robot = task.collocation, vi.robot
    horizon_time = task.horizon * task.dt
    key = (
        robot.hash,
        task.method,
        task.dt,
        task.horizon,
        task.max_iterations,
        task.tolerance,
        None if limits is None else tuple(limits),
        tuple(sorted((k, str(v)) for k, v in c.items())),
    )
    if key in _CACHE:
        _CACHE.move_to_end(key)
        return _CACHE[key]
    try:
        dyn = SecondOrderDynamics(robot)
    except ValueError as e:
        raise TaskError(f"optimizer.method: {task.method}: {e}") from None
    free = c["final_time"] == "free"
    t_min = c["t_min"] if c["t_min"] is not None else 2 * task.dt
    if free and not t_min < horizon_time:
        raise TaskError(f"collocation.t_min: must be below horizon·dt = {horizon_time:g} s, got {t_min:g}")
    problem = CollocationProblem(
        dyn,
        method=task.method.removeprefix("collocation_"),
        nodes=c["nodes"],
        intervals=c["intervals"],
        free_time=free,
        time_bounds=(t_min, horizon_time) if free else (1e-2, 100.0),
        cost=c["cost"],
        effort_weight=c["effort_weight"],
        input_limits=np.full(dyn.nu, np.inf) if limits is None else limits,
        joint_limits=c["joint_limits"],
        dynamics_form=c["dynamics"],
        max_iterations=task.max_iterations,
        tolerance=task.tolerance,
    )
    try:
        tr = Transcription(problem)  # (its size checked before anything is built)
    except NLPSizeError as e:
        raise TaskError(f"collocation.nodes × collocation.intervals: {e.detail}") from None
    _CACHE[key] = tr
    while len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return tr


def resample(
    vi: Linearizable,
    sol: CollocationSolution,
    x0: np.ndarray,
    steps: int,
    limits: np.ndarray | None,
    q_goal: np.ndarray,
    rest_at_end: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """(X_ref (steps+1, nx), U_ref (steps, nu)) of a collocated trajectory on the VI's grid (see module doc).

    X_ref[0] is x₀ itself (the plan starts where the robot is); after t_f the goal is held with its holding input,
    and with ``rest_at_end`` (a plan that ends at rest) already at t_f.
    """
    dt, tf = vi.dt, sol.tf
    t = np.arange(steps + 1) * dt
    q = np.where((t <= tf)[:, None], sol.q(np.minimum(t, tf)), q_goal)
    q_prev = np.where((t - dt <= tf)[:, None], sol.q(np.clip(t - dt, 0.0, tf)), q_goal)
    X = np.array([vi.state_from_configurations(a, b) for a, b in zip(q_prev, q, strict=True)])
    X[0] = x0
    # From t_f on: the goal held still, whose discrete momentum is D₂L_d(q, q) (the state the hold gain keeps).
    # At t_f itself p_N = D₂L_d(q(t_f − Δt), q_f) ≈ M q̇ − (Δt/2)·u would still carry the braking input.
    X[t >= tf - 1e-9 if rest_at_end else t > tf] = equilibrium_state(vi, q_goal)
    tm = t[:-1] + 0.5 * dt
    U = sol.u(np.minimum(tm, tf)).reshape(steps, vi.n_torques)
    U[tm > tf] = holding_input(vi, q_goal)[0]
    if limits is not None:
        U = np.clip(U, -limits, limits)
    return X, U


def start_velocity(vi: Linearizable, x0: np.ndarray, dynamics: SecondOrderDynamics) -> np.ndarray:
    """q̇ at a discrete state x = (q, p): M(q)⁻¹(p + (Δt/2)∇V(q)), the midpoint rule's velocity (exact for a held
    configuration, whose momentum is −(Δt/2)∇V), projected M-orthogonally onto Dh(q) q̇ = 0 with constraints."""
    q, p = x0[: vi.nq], x0[vi.nq :]
    M = np.array(dynamics.mass(q))
    v = np.linalg.solve(M, p + 0.5 * vi.dt * vi.potential_gradient(q))
    if dynamics.nc:
        J = np.array(dynamics.constraint_jacobian(q)).reshape(dynamics.nc, vi.nq)
        MiJt = np.linalg.solve(M, J.T)
        v -= MiJt @ np.linalg.solve(J @ MiJt, J @ v)
    return v


def collocate_task(
    vi: Linearizable, task: Task, x0: np.ndarray, limits: np.ndarray | None, weights: tuple, log: LogFn = None
) -> tuple[OptimizerResult, CollocationSolution]:
    """Solve the task by LG/LG2 collocation and polish it on the VI (module doc). Raises PlanningError if IPOPT
    fails. Returns the DDP result (method ``collocation_lg[2]``; ``converged``: IPOPT succeeded and the polish met
    its tolerance within ``polish_iterations``) and the collocation solution."""
    if vi.nk:
        raise TaskError(f"optimizer.method: {task.method} does not support prescribed joints")
    c, nq = task.collocation, vi.nq
    tr = transcription_for(vi, task, None if limits is None else limits[: vi.n_torques])
    q0, v0 = x0[:nq], start_velocity(vi, x0, tr.problem.dynamics)
    q_goal = task.goal_q
    if q_goal.size != nq:
        raise TaskError(f"goal.q: expected {nq} entries, got {q_goal.size}")
    horizon_time = task.horizon * task.dt
    free = c["final_time"] == "free"
    t_guess = c["t_guess"] if c["t_guess"] is not None else horizon_time
    guess = Guess.linear(q0, q_goal, t_guess if free else horizon_time, vi.n_torques)
    sol = tr.solve(q0=q0, v0=v0, qf=q_goal, vf=np.zeros(nq), tf=None if free else horizon_time, guess=guess)
    if log is not None:
        log(
            f"[{task.method}] IPOPT {sol.status} in {sol.iterations} iterations, t_f = {sol.tf:.6g} s, "
            f"objective {sol.objective:.6g}, {sol.solve_time * 1e3:.0f} ms CPU"
        )
    steps = task.horizon if not free else min(task.horizon, max(1, math.ceil(sol.tf / vi.dt - 1e-9)))
    X_ref, U_ref = resample(vi, sol, x0, steps, None if limits is None else limits[: vi.n_torques], q_goal)
    Q, R, Qf = weights
    cost = QuadraticTrackingCost(X_ref, U_ref, Q, R, Qf)
    # From a TV-LQR-stabilized rollout about the resampled trajectory: open loop, a swing-up falls away from it.
    U0 = reference_feedback_guess(vi, x0, X_ref, U_ref, (Q, R, Qf), limits)
    res = ddp(
        vi,
        cost,
        x0,
        U0,
        input_limits=limits,
        max_iterations=c["polish_iterations"],
        tolerance=c["polish_tolerance"],
        regularization=task.regularization,
        log=log,
        method=task.method,
    )
    res.converged = sol.success and res.converged  # a plan off the collocated one by the polish's limit is not
    res.stop_reason = f"IPOPT {sol.status}; VI polish: {res.stop_reason}"
    res.collocation = sol
    return res, sol
