"""Running a task: resolve it against a discrete system, optimize, then TV-LQR gains and a hold gain → Plan.

``plan_task(system, task)`` is the whole planner the ROS node wraps: the reference (possibly infeasible,
Johnson2015, eq. 35), the quadratic tracking cost, the optimizer chosen by the task (DDP with exact second-order
terms, iLQR, or the first-order projection method), TV-LQR gains along the optimal trajectory (Johnson2015
eq. 36) and the DLQR gain that holds the final configuration. The system may be any ``Linearizable``.
"""

from __future__ import annotations

import numpy as np

from ..control.hold import equilibrium_state, hold_gain, holding_input
from ..control.lqr import tv_lqr
from ..control.plan import Plan
from ..integrators import make_integrator, require_linearizable
from ..integrators.base import DiscreteSystem, Linearizable
from ..linearization import linearize_trajectory
from ..model.limits import MAX_CONFIGURATION, position_limit_violation
from .augmented import terminal_constrained_ddp
from .continuation import StageSolver, weight_continuation
from .cost import QuadraticTrackingCost
from .ddp import Rollout, ddp, feedback_rollout, reference_feedback_guess
from .gradient import projection_gradient
from .limits import plan_limit_violation
from .shooting import LogFn, OptimizerResult, rollout
from .task import COLLOCATION_METHODS, MAX_HORIZON, Task, TaskError, parse_vector

__all__ = [
    "make_system",
    "start_state",
    "check_joint_limits",
    "input_limits",
    "reference_trajectory",
    "trajectory_reference",
    "initial_inputs",
    "plan_task",
]


# Memory a plan may take (bytes): per stage the planner holds A_k, B_k, the gains, the Riccati cost-to-go and the step's
# implicit-function factors, about PLAN_MATRICES_PER_STAGE matrices of (ndx + nu)² doubles (measured on panda:
# 9 kB per stage against 14 kB estimated). MAX_HORIZON alone bounds the pendulum, not a 101-joint tiago_dual, whose
# 100 000 steps would need ~290 GB.
MAX_PLAN_BYTES = 4 * 2**30
PLAN_MATRICES_PER_STAGE = 4


def check_plan_memory(vi: DiscreteSystem, N: int) -> None:
    """TaskError naming the horizon if N stages of this system would need more than MAX_PLAN_BYTES."""
    per_stage = PLAN_MATRICES_PER_STAGE * 8 * (vi.state.ndx + vi.nu) ** 2
    if N * per_stage > MAX_PLAN_BYTES:
        raise TaskError(
            f"horizon: {N} steps of a system with {vi.state.ndx} state directions and {vi.nu} inputs "
            f"need about {N * per_stage / 2**30:.3g} GiB for the linearizations and gains along the plan "
            f"(limit {MAX_PLAN_BYTES / 2**30:g} GiB: at most {MAX_PLAN_BYTES // per_stage} steps); "
            "shorten the horizon or lengthen dt"
        )


# |h(goal)| a goal may leave (relative to 1 + |q|∞): hand-written goals carry a few digits, the step keeps h to 1e-12.
GOAL_CONSTRAINT_TOL = 1e-3


# Unbalanced gravity [N·m] on unactuated joints at the final configuration above which the planner warns that the
# hold gain cannot keep it, for a model whose momentum at unit velocity is at least 1 (scaled below: _p_unit).
HOLD_RESIDUAL = 1e-6


def _p_unit(vi) -> float:
    """The model's momentum at unit velocity, capped at 1 (the integrator's ``settings.p_unit``; 1 without one)."""
    settings = getattr(vi, "settings", None)
    return float(getattr(settings, "p_unit", 1.0))


def make_system(task: Task, integrator: str = "midpoint", **options) -> DiscreteSystem:
    """The task's model as a discrete system at the task's Δt (``options`` go to the integrator)."""
    return make_integrator(integrator, task.load_robot(), task.dt, **options)


def start_state(task: Task, vi: DiscreteSystem) -> np.ndarray:
    """x₀ = (q₀, D₂L_d(q₀ − Δt·q̇₀, q₀)): the discrete state of the configuration pair a sampled
    trajectory would show (Johnson2015, eq. 1b). At rest (q̇₀ = 0) this is the held state, whose
    momentum under gravity is −(Δt/2)∇V — p = M q̇ = 0 would instead kick the robot by that impulse.
    """
    q0 = np.zeros(vi.nq) if task.q0 is None else parse_vector(list(task.q0), "start.q", vi.nq)
    if task.q0 is not None:
        check_joint_limits(vi, q0, "start.q")
    qd = np.zeros(vi.nq) if task.qdot0 is None else parse_vector(list(task.qdot0), "start.qdot", vi.nq)
    why = vi.configuration_violation(q0) if hasattr(vi, "configuration_violation") else None
    if why:
        raise TaskError(f"start.q {why}")
    return vi.state_from_configurations(q0 - vi.dt * qd, q0)


def check_joint_limits(vi: DiscreteSystem, q: np.ndarray, key: str, entries: list[int] | None = None) -> None:
    """TaskError naming the joint if a configuration the task states lies beyond the URDF's position limits: the
    integrator does not enforce them, so a plan would lead the robot through its end stops (DDP) or be infeasible
    (collocation bounds q by them). ``entries``: the configuration indices ``q`` holds (default all nq)."""
    if len(vi.robot.joints) != vi.nq:  # a floating base: its coordinates are no joints of the URDF
        return
    why = position_limit_violation(vi.robot.joints, q, key, entries)
    if why is not None:
        raise TaskError(why)


def check_goal(vi: DiscreteSystem, goal: np.ndarray) -> None:
    """TaskError naming the joint or the constraint if ``goal`` (nq) cannot be a plan's final configuration: beyond
    the URDF position limits, or off the holonomic constraints beyond GOAL_CONSTRAINT_TOL (a mimic finger set on its
    own, a four-bar not closed: the plan "converged" a violation's width away from it)."""
    check_joint_limits(vi, goal, "goal.q")
    why = vi.configuration_violation(goal, GOAL_CONSTRAINT_TOL) if hasattr(vi, "configuration_violation") else None
    if why:
        raise TaskError(f"goal.q {why}")


def input_limits(task: Task, vi: DiscreteSystem) -> np.ndarray | None:
    """|u| bounds per input (prescribed-joint inputs are positions: unbounded); None = no bounds."""
    if isinstance(task.input_limits, str):
        if task.input_limits == "none":
            return None
        lim = np.asarray(vi.robot.effort_limits, float)
    else:
        lim = parse_vector(list(task.input_limits), "input_limits", vi.n_torques)
    return np.concatenate([lim, np.full(vi.nk, np.inf)])


def reference_trajectory(task: Task, vi: DiscreteSystem, x0: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(X_ref (N+1, nx), U_ref (N, nu)) of the task's reference; may be dynamically infeasible.

    ``x0``: where the plan starts (a measured state when re-planning; default the task's start). A step
    reference without ``q_before`` starts from x0's configuration, so a re-plan from the goal holds it.
    """
    N, nq, ref = task.horizon, vi.nq, task.reference
    x0 = start_state(task, vi) if x0 is None else np.asarray(x0, float)
    goal = task.goal_q if task.goal_q is not None else x0[:nq]
    goal = parse_vector(list(goal), "goal.q", nq)
    if task.goal_q is not None:
        check_goal(vi, goal)
    kind = ref.get("type", "goal")
    if kind == "step":  # Johnson2015, eq. 35: q jumps at step_index, p_ref = 0, u_ref = 0
        qa = parse_vector(ref.get("q_before", list(x0[:nq])), "reference.q_before", nq, MAX_CONFIGURATION)
        qb = parse_vector(ref.get("q_after", list(goal)), "reference.q_after", nq, MAX_CONFIGURATION)
        for key in ("q_before", "q_after"):
            if key in ref:
                check_joint_limits(vi, qa if key == "q_before" else qb, f"reference.{key}")
        ks = int(ref.get("step_index", N // 2))
        if not 0 <= ks <= N:
            raise TaskError(f"reference.step_index: must be in [0, {N}], got {ks}")
        Q = np.where(np.arange(N + 1)[:, None] < ks, qa, qb)
        X = np.hstack([Q, np.zeros((N + 1, nq))])
    elif kind == "goal":  # hold the goal from the start: the optimizer finds the way there
        X = np.tile(equilibrium_state(vi, goal), (N + 1, 1))
    else:
        raise TaskError(f"reference.type: expected 'step' or 'goal', got {kind!r}")
    u_kind = ref.get("u", "zero" if kind == "step" else "hold")
    if u_kind == "zero":
        U = np.zeros((N, vi.nu))
        U[:, vi.n_torques :] = X[1:, :nq][:, vi.idx_k]
    elif u_kind == "hold" and kind == "goal":  # one configuration throughout
        U = np.tile(holding_input(vi, goal)[0], (N, 1))
    elif u_kind == "hold":  # one holding input per distinct configuration (a step reference has two)
        Qd, row = np.unique(X[1:, :nq], axis=0, return_inverse=True)
        U = np.array([holding_input(vi, q)[0] for q in Qd])[row.ravel()]
    else:
        raise TaskError(f"reference.u: expected 'zero' or 'hold', got {u_kind!r}")
    return X, U


def trajectory_reference(
    vi: DiscreteSystem,
    x0: np.ndarray,
    times: np.ndarray,
    positions: np.ndarray,
    joints: list[int] | None = None,
    settle: float = 0.5,
) -> tuple[np.ndarray, np.ndarray]:
    """(X_ref, U_ref) from trajectory points (a trajectory_msgs/JointTrajectory, as MoveIt or a script sends
    a joint_trajectory_controller) resampled onto the integrator's grid t_k = k·Δt.

    ``times`` (m,) > 0, increasing, relative to the plan's start; ``positions`` (m, len(joints)) of the
    configuration entries ``joints`` (default all nq); other entries stay at x0's. As the JTC does, the
    motion starts from where the robot is: q(0) = x0's configuration, linear interpolation between points,
    then the last point held for ``settle`` seconds (the JTC holds it too), so the plan ends at rest, where
    the hold gain K_final applies: N = ceil((t_m + settle) / Δt) steps. X_ref,k = (q_k, D₂L_d(q_{k−1}, q_k))
    (Johnson2015, eq. 1b: the momenta of the sampled path) and U_ref,k the input that holds q_{k+1}: a reference
    for the cost, made feasible by the optimizer.
    """
    x0 = np.asarray(x0, float)
    nq = vi.nq
    times = np.asarray(times, float).ravel()
    joints = list(range(nq)) if joints is None else list(joints)
    positions = np.asarray(positions, float).reshape(len(times), len(joints))
    if len(times) == 0 or not np.all(np.isfinite(times)) or times[0] <= 0 or np.any(np.diff(times) <= 0):
        raise TaskError(f"trajectory: point times must be positive and increasing, got {times.tolist()}")
    if not np.all(np.isfinite(positions)):
        raise TaskError("trajectory: positions must be finite")
    for k, q in enumerate(positions):
        check_joint_limits(vi, q, f"trajectory point {k}: positions", joints)
    N = int(np.ceil((times[-1] + max(settle, 0.0)) / vi.dt - 1e-9))
    if N > MAX_HORIZON:  # (X, U, K and a linearization per step are held in memory)
        raise TaskError(
            f"trajectory: its last point at {times[-1]:g} s needs {N} steps of {vi.dt:g} s, more than "
            f"the supported horizon of {MAX_HORIZON}"
        )
    grid = np.arange(N + 1) * vi.dt
    Q = np.tile(x0[:nq], (N + 1, 1))
    for i, j in enumerate(joints):
        Q[:, j] = np.interp(grid, np.concatenate([[0.0], times]), np.concatenate([[x0[j]], positions[:, i]]))
    X = np.array([x0] + [vi.state_from_configurations(Q[k - 1], Q[k]) for k in range(1, N + 1)])
    U = np.array([holding_input(vi, Q[k + 1])[0] for k in range(N)])
    return X, U


def initial_inputs(task: Task, vi: Linearizable, x0: np.ndarray, X_ref: np.ndarray, U_ref: np.ndarray) -> np.ndarray:
    """The optimizer's initial inputs (N, nu) by the task's ``initial_guess`` rule."""
    return _initial_guess(task, vi, x0, X_ref, U_ref)[0]


def _initial_guess(
    task: Task, vi: Linearizable, x0: np.ndarray, X_ref: np.ndarray, U_ref: np.ndarray
) -> tuple[np.ndarray, Rollout | None]:
    """(``initial_inputs``, their rollout from x0 where the rule computed it: the feedback guess's, which the
    optimizer then starts from instead of replaying it)."""
    if task.initial_guess in ("reference", "auto"):  # "auto": plan_task compares it with "feedback"
        return U_ref.copy(), None
    if task.initial_guess == "feedback":  # where the reference's gains cannot hold x0, the start held
        W, limits = lqr_weights(task, vi), input_limits(task, vi)
        ro = feedback_rollout(vi, x0, X_ref, U_ref, weights=W, input_limits=limits)
        return (hold_start_guess(task, vi, x0, len(U_ref)), None) if ro is None else (ro.U, ro)
    if task.initial_guess == "hold_start":
        return hold_start_guess(task, vi, x0, len(U_ref)), None
    return np.zeros_like(U_ref), None  # "zero"


def lqr_weights(task: Task, vi: Linearizable) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The task's TV-LQR weights (Q, R, Qf) as matrices for this system (``lqr``, else the cost's ``weights``)."""
    W = task.weight_table(vi.nx, vi.nu, vi.nq)
    return W["lqr", "Q"], W["lqr", "R"], W["lqr", "Qf"]


def hold_start_guess(task: Task, vi: Linearizable, x0: np.ndarray, N: int) -> np.ndarray:
    """``initial_guess: hold_start``: the inputs (N, nu) of x0's configuration held from x0 — gravity compensation
    u_eq(q_0) plus its DLQR hold gain (the task's ``hold`` weights, Johnson2015, eq. 36 at the fixed point) in a
    closed-loop rollout, inputs within the task's limits. From rest that is u_eq(q_0) at every step; from a moving
    start (a re-plan, an MPC cycle, an arm sagging under a hold) the open-loop u_eq(q_0) lets the arm fall away over
    the horizon (the panda reach: a joint turning > π in a step, or a local optimum at 15 rad/s) where the held
    rollout brakes it. The constant u_eq(q_0) where no hold gain exists at q_0 (a singular pose) or the rollout
    fails."""
    q0 = x0[: vi.nq]
    u_eq, _ = holding_input(vi, q0)
    nq = vi.nq
    x_eq = equilibrium_state(vi, q0)
    if np.abs(vi.state.diff(x0, x_eq)).max() <= 1e-12 * max(1.0, float(np.abs(x0).max())):
        return np.tile(u_eq, (N, 1))  # at rest: the held rollout stays there (and costs a linearization)
    try:
        K, x_eq, u_eq = hold_gain(
            vi, q0, task.weight("Q", "hold", vi.nx, nq), task.weight("R", "hold", vi.nu, nq), u_eq=u_eq
        )
        limits = input_limits(task, vi)
        U, x = np.empty((N, vi.nu)), np.asarray(x0, float)
        for k in range(N):
            u = u_eq + K @ vi.state.diff(x, x_eq)
            U[k] = u if limits is None else np.clip(u, -limits, limits)
            x = vi.step(x, U[k])
        return U
    except (np.linalg.LinAlgError, ValueError, ArithmeticError, RuntimeError):
        return np.tile(u_eq, (N, 1))


def _shooting_solver(
    vi: Linearizable, task: Task, x0: np.ndarray, x_goal: np.ndarray, limits: np.ndarray | None, log: LogFn
) -> StageSolver:
    """The task's shooting method as solve(cost, U0, max_iterations, warm, initial): the augmented Lagrangian around
    DDP with a terminal constraint (``warm``: its first multiplier estimated at U0), else DDP, iLQR or the projection
    method (``initial``: U0's rollout, ``ddp``'s, which DDP and iLQR start from)."""

    def solve(
        cost: QuadraticTrackingCost, U0: np.ndarray, max_iterations: int, warm: bool, initial: Rollout | None = None
    ) -> OptimizerResult:
        if task.terminal_constraint:  # the reference's final state as an equality constraint (augmented.py)
            return terminal_constrained_ddp(
                vi,
                cost,
                x0,
                U0,
                x_goal,
                input_limits=limits,
                second_order=task.method == "ddp",
                max_iterations=max_iterations,
                tolerance=task.tolerance,
                regularization=task.regularization,
                constraint_tolerance=task.constraint_tolerance,
                penalty=task.penalty,
                log=log,
                multiplier="estimate" if warm else None,
            )
        if task.method == "gradient":
            return projection_gradient(
                vi, cost, x0, U0, input_limits=limits, max_iterations=max_iterations, tolerance=task.tolerance, log=log
            )
        return ddp(
            vi,
            cost,
            x0,
            U0,
            input_limits=limits,
            second_order=task.method == "ddp",
            max_iterations=max_iterations,
            tolerance=task.tolerance,
            regularization=task.regularization,
            log=log,
            initial=initial,
        )

    return solve


def velocity_limit_excess(vi: DiscreteSystem, X: np.ndarray) -> str | None:
    """Where a trajectory's velocities q̇_k = M(q_k)⁻¹p_k exceed the URDF ``<limit velocity>``, or None.

    The optimizer does not know velocity limits; the controller node refuses joint states (and plans) faster than
    ``velocity_limit_factor`` (1.5) × the limit, so plan_task warns at the limit itself (a light wrist with a small R
    turns tens of rad/s); a request's plan is refused beyond the factor (planning.limits.check_plan_limits)."""
    err = plan_limit_violation(
        vi, X, velocity_limit_factor=1.0, advice="lengthen the horizon or weight p (Q) or the inputs (R) more"
    )
    return None if err is None else str(err)


def plan_task(
    vi: Linearizable,
    task: Task,
    x0: np.ndarray | None = None,
    log: LogFn = None,
    U0: np.ndarray | None = None,
    reference: tuple[np.ndarray, np.ndarray] | None = None,
    warm_start: Plan | None = None,
) -> tuple[Plan, OptimizerResult]:
    """Optimize the task from x0 (measured state; default the task's start), then TV-LQR gains along the
    optimal trajectory (Johnson2015, eq. 36) and the DLQR hold gain K_final about the final configuration
    with U_final its holding input (gravity compensation). Returns (Plan, OptimizerResult); the plan's
    ``converged`` says whether the optimizer met its tolerance. ``U0`` (N, nu): initial inputs instead of the
    task's ``initial_guess`` rule (e.g. a previous plan's, to warm-start a re-plan; shooting methods). The
    collocation methods (LG/LG2, MorenoMartin2022) may end before the horizon (free final time) and raise PlanningError
    when IPOPT fails. ``reference``: (X_ref, U_ref) in place of the task's own (e.g. ``trajectory_reference``);
    its length sets the horizon, the task the weights. ``warm_start``: a previous plan of the same horizon (a
    re-plan from a nearby start): the initial inputs follow it from x0 under its gains (``ddp.feedback_initial_guess``)
    and, with a terminal constraint, the first multiplier is estimated there (``augmented.terminal_multiplier``) — the
    re-plan then starts near its optimum instead of redoing the multiplier updates (shooting methods). A task with
    ``optimizer.continuation`` solves a cold start through its heavier-weighted stages first (planning.continuation).
    """
    require_linearizable(vi, "plan_task")
    if vi.nu == 0 or vi.nd == 0:  # (numpy's "zero-size array to reduction" or LAPACK's DGETRF complaint before)
        raise TaskError(
            f"model: {vi.robot.name!r} has "
            + (
                "no inputs (no actuated or prescribed joint): nothing to plan"
                if vi.nu == 0
                else "no dynamic coordinates (every joint prescribed): its motion is the input itself, nothing to plan"
            )
        )
    if abs(vi.dt - task.dt) > 1e-12:
        raise TaskError(f"dt: the task has dt = {task.dt} but the integrator uses {vi.dt}")
    nx, nu, nq = vi.nx, vi.nu, vi.nq
    x0 = start_state(task, vi) if x0 is None else np.asarray(x0, float).ravel()
    if x0.size != nx:
        raise ValueError(f"x0 has size {x0.size}, expected {nx}")
    X_ref, U_ref = (
        reference_trajectory(task, vi, x0)
        if reference is None
        else (np.asarray(reference[0], float), np.asarray(reference[1], float))
    )
    if X_ref.shape != (len(U_ref) + 1, nx) or U_ref.shape[1:] != (nu,):
        raise ValueError(f"reference: X_ref {X_ref.shape} and U_ref {U_ref.shape} do not fit nx={nx}, nu={nu}")
    check_plan_memory(vi, len(U_ref))
    W = task.weight_table(nx, nu, nq)  # (every weight of the plan, parsed once per task)
    Q, R, Qf = W["weights", "Q"], W["weights", "R"], W["weights", "Qf"]
    cost = QuadraticTrackingCost(X_ref, U_ref, Q, R, Qf)
    limits = input_limits(task, vi)
    guess = None  # (the initial inputs' rollout, where computed: the optimizer starts from it)
    if warm_start is not None:
        if U0 is not None:
            raise ValueError("warm_start and U0: give one initial guess, not both")
        if task.method in COLLOCATION_METHODS:
            raise TaskError(f"warm_start: only for the shooting methods, not optimizer.method {task.method}")
        K_shape = (len(U_ref), nu, vi.state.ndx)  # (a Plan takes gains of any width up to nx; the rollout reads these)
        if warm_start.U.shape != U_ref.shape or warm_start.X.shape != X_ref.shape or warm_start.K.shape != K_shape:
            raise ValueError(
                f"warm_start: a plan with U {warm_start.U.shape}, X {warm_start.X.shape} and K {warm_start.K.shape}, "
                f"expected {U_ref.shape}, {X_ref.shape} and {K_shape} (the same horizon and model)"
            )
        guess = feedback_rollout(vi, x0, warm_start.X, warm_start.U, K=warm_start.K, input_limits=limits)
        U0 = None if guess is None else guess.U
        if U0 is None:
            warm_start = None
            if log is not None:
                log("warm start: the previous plan cannot be followed from x0 (a step failed); planning cold")
    if U0 is not None:
        U0 = np.asarray(U0, float)
        if U0.shape != U_ref.shape:
            raise ValueError(f"U0 has shape {U0.shape}, expected {U_ref.shape} (horizon, inputs)")
    elif task.initial_guess == "auto" and task.method not in COLLOCATION_METHODS:
        # the feedback guess only if its rollout costs less than half as much (shooting methods)
        U0 = initial_inputs(task, vi, x0, X_ref, U_ref)
        U_fb = reference_feedback_guess(vi, x0, X_ref, U_ref, lqr_weights(task, vi), limits)
        J = []
        for U in (U0, U_fb):
            ro = rollout(vi, x0, U, lo=-limits if limits is not None else None, hi=limits)
            J.append(np.inf if ro is None else cost.calc(ro[0], ro[1]))
        U0 = U_fb if J[1] < 0.5 * J[0] else U0
    else:
        U0, guess = _initial_guess(task, vi, x0, X_ref, U_ref)
    if task.method in COLLOCATION_METHODS:  # LG/LG2 (MorenoMartin2022), resampled and polished on the VI
        from .collocation.planner import collocate_task

        res, _ = collocate_task(vi, task, x0, limits, (Q, R, Qf), log=log)
    else:
        if task.terminal_constraint and task.method == "gradient":
            raise TaskError("optimizer.terminal_constraint: needs method ddp or ilqr")
        solve = _shooting_solver(vi, task, x0, X_ref[-1], limits, log)
        if task.continuation and warm_start is None:  # a cold start of a chaotic task (planning.continuation)
            res = weight_continuation(
                solve,
                cost,
                U0,
                task.continuation["Q_scale"],
                task.continuation["iterations"],
                task.max_iterations,
                log=log,
            )
        else:
            res = solve(cost, U0, task.max_iterations, warm_start is not None, guess)
        res.warm_started = warm_start is not None  # (None here too where the previous plan could not be followed)
    res.reference, res.task = (X_ref, U_ref), task
    if log is not None:
        log(f"[{res.method}] {res}")
    if res.linearization is not None:  # the optimizer's last A_k, B_k are at the returned trajectory
        lins = res.linearization  # (compiled.StageLinearizations carries them stacked)
        A, B, rcond = (
            np.asarray(getattr(lins, n)) if hasattr(lins, n) else np.array([getattr(lin, n) for lin in lins])
            for n in ("A", "B", "rcond")
        )
        near = np.flatnonzero(rcond < 1e-8)
    else:
        tl = linearize_trajectory(vi, res.X, res.U)
        A, B, near = tl.A, tl.B, tl.near_singular
    if len(near) and log is not None:
        log(f"warning: M_k+1 near singular at steps {near.tolist()} (Johnson2015, §VII)")
    if log is not None:  # a warning only: its M(q_k) per state cost ~5 % of a panda plan, for nobody without a log
        too_fast = velocity_limit_excess(vi, res.X)
        if too_fast:
            log(f"warning: {too_fast}")
    K, _ = tv_lqr(A, B, W["lqr", "Q"], W["lqr", "R"], W["lqr", "Qf"])
    qN = res.X[-1, :nq]
    K_final = U_final = None
    u_hold, residual = holding_input(vi, qN)
    # 1e-6 N·m per unit of the model's momentum at unit velocity (capped at 1, NewtonSettings.p_unit): an absolute
    # 1e-6 let the acrobot 1 mrad off upright with masses × 2⁻²⁰ (residual 1.9e-8) pass for an equilibrium
    if vi.nc == 0 and residual > HOLD_RESIDUAL * _p_unit(vi) and log is not None:  # (constraint forces may hold it)
        log(
            f"warning: the final configuration is no equilibrium (unbalanced gravity {residual:.2e} on "
            "unactuated joints): the hold gain cannot keep it"
        )
    try:
        K_final, _, U_final = hold_gain(vi, qN, W["hold", "Q"], W["hold", "R"], u_eq=u_hold)
    except (np.linalg.LinAlgError, ValueError) as e:
        if log is not None:
            log(f"warning: no hold gain about the final state ({e})")
    weights = {
        g: {w: np.diag(W[g, w]).tolist() for w in ("Q", "R", "Qf") if not (g == "hold" and w == "Qf")}
        for g in ("weights", "lqr", "hold")
    }
    weights["task"] = task.name
    weights["method"] = res.method
    robot = vi.robot
    plan = Plan(
        times=np.arange(len(res.U) + 1) * vi.dt,
        X=res.X,
        U=res.U,
        K=K,
        dt=vi.dt,
        model_name=task.model_name,
        model_hash=robot.hash,
        joint_names=robot.joint_names,
        input_names=list(robot.actuated) + list(robot.prescribed),
        weights=weights,
        K_final=K_final,
        U_final=U_final,
        converged=res.converged,
    )
    return plan, res
