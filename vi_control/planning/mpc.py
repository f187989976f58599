"""Receding-horizon control (MPC) on the exact VI model: the task re-planned every ``period`` from the latest state,
warm-started from the plan being executed, each new plan with its TV-LQR gains (Johnson2015, eq. 36) for the time until
the next one.

A cycle plans the task's window that starts where the executing plan has got to: the task's reference from its
elapsed step s on (``receding``: the next N steps, the last reference point repeated past the task's end; ``shrinking``:
the steps left to the task's end, at least ``min_horizon``), with the task's weights and terminal cost, from the state
at the cycle's stated start t_start (the caller predicts it: the hand-over's solve-time lead). Its initial guess is the
executing plan receded to t_start under its gains (``plan_task``'s ``warm_start``), and the optimizer's iteration cap
is the cycle's ``max_iterations``: a cycle that stops there has still improved on the executing plan's continuation,
and is accepted when its cost is finite and its merit no higher than that continuation's (``Cycle.accepted``);
otherwise the executing plan goes on. The merit is what the optimizer set out to decrease from the continuation
(``OptimizerResult.merits``): the cost, or with a terminal constraint the augmented Lagrangian of the cycle's first
multiplier estimate and penalty — the cost alone rises where the plan meets the constraint better (a cart-pole cycle
capped at 3 iterations: 8 of 14 cost more than the continuation, none has a higher merit).

A cycle that continues an executing plan keeps that plan's law for its own first step (``cycle``): the command does
not jump when the controller switches to the new plan, and the optimizer plans from the state one step on.

``RecedingHorizon`` holds what the cycles share — the task's whole reference from its start, the per-cycle task, the
compiled solver (planning.compiled, cached per model) — so a cycle compiles nothing.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..control.plan import Plan
from ..control.tracking import tracking_law
from ..integrators.base import Linearizable
from .pipeline import input_limits, plan_task, reference_trajectory, start_state
from .shooting import OptimizerResult
from .task import Task
from .task_values import TaskError

LogFn = Callable[[str], None] | None


@dataclass(frozen=True)
class MPCSettings:
    """A task's ``mpc:`` section (planning.task validates it): re-plan every ``period`` [s] over ``horizon`` steps
    (None: the task's), ``shrinking`` toward the task's end (at least ``min_horizon`` steps), at most
    ``max_iterations`` optimizer iterations per cycle to ``tolerance`` (None: the task's)."""

    period: float
    horizon: int | None = None
    shrinking: bool = False
    min_horizon: int = 10
    max_iterations: int = 10
    tolerance: float | None = None


def mpc_settings(task: Task) -> MPCSettings:
    """The task's ``mpc:`` section as settings; the defaults (period 0.1 s, the task's horizon, 10 iterations a
    cycle) where it has none."""
    m = task.mpc or {}
    return MPCSettings(
        period=m.get("period", max(0.1, task.dt)),
        horizon=m.get("horizon"),
        shrinking=m.get("shrinking", False),
        min_horizon=m.get("min_horizon", 10),
        max_iterations=m.get("max_iterations", 10),
        tolerance=m.get("tolerance"),
    )


@dataclass
class Cycle:
    """One MPC cycle: the plan (times from its start), the optimizer's result, the task step it starts at, the merit of
    the executing plan's continuation over the same window (``OptimizerResult.merits``: its cost, or with a
    terminal constraint the augmented Lagrangian; inf without one) and whether the plan is accepted
    (``cycle_accepted``)."""

    plan: Plan
    result: OptimizerResult
    step: int
    warm_cost: float
    accepted: bool


def cycle_accepted(cost: float, converged: bool, warm_merit: float, merit: float) -> bool:
    """Whether a cycle's plan replaces the executing one: its cost finite, and converged or its merit no higher than
    the executing plan's continuation's (``warm_merit``, inf without one; ``Cycle``)."""
    return bool(np.isfinite(cost)) and (bool(converged) or bool(merit <= warm_merit))


class RecedingHorizon:
    """MPC over ``task`` on the discrete system ``vi`` (module docstring). ``start(x0, t0)`` makes the first plan
    (cold, the task's own iteration budget) and fixes the task's time origin t0; ``cycle(t_start, x_start,
    executing)`` re-plans from the state at t_start; ``follow(result, t0)`` makes the cycles continue a plan made
    outside the loop (a request's) instead of the task."""

    def __init__(self, vi: Linearizable, task: Task, settings: MPCSettings | None = None, log: LogFn = None):
        self.vi, self.task, self.log = vi, task, log
        self.settings = settings or mpc_settings(task)
        s = self.settings
        if s.period < vi.dt - 1e-12:
            raise TaskError(f"mpc.period: {s.period} s is shorter than the task's dt = {vi.dt} s")
        self.N = int(s.horizon or task.horizon)
        self.t0: float | None = None
        self.X_ref = self.U_ref = None
        self.followed = False  # the cycles continue a request's plan (``follow``), not the task's own
        self._cycle_task = self._capped(task)
        self._limits = input_limits(task, vi)

    def _capped(self, task: Task) -> Task:
        """``task`` as a cycle solves it: the cycle's iteration cap and tolerance, no weight continuation."""
        s = self.settings
        return dataclasses.replace(
            task, max_iterations=int(s.max_iterations), tolerance=float(s.tolerance or task.tolerance), continuation={}
        )

    @property
    def steps_per_cycle(self) -> int:
        return max(1, int(round(self.settings.period / self.vi.dt)))

    def window(self, step: int) -> tuple[np.ndarray, np.ndarray]:
        """(X_ref, U_ref) of the cycle that starts at the task's step ``step``: the task's reference from there, the
        last point (and input) repeated past the task's end; N steps receding, or to the task's end shrinking."""
        n_task = len(self.U_ref)
        N = self.N
        if self.settings.shrinking:
            N = max(min(N, n_task - step), min(self.settings.min_horizon, N))
        idx = np.minimum(step + np.arange(N + 1), n_task)
        return self.X_ref[idx], self.U_ref[np.minimum(idx[:-1], n_task - 1)]

    def start(self, x0: np.ndarray | None = None, t0: float = 0.0) -> Cycle:
        """The first plan: the task's window 0 from ``x0`` (default the task's start), solved to the task's own
        tolerance (a cold start needs its full budget); the task's time origin becomes ``t0``."""
        vi, task = self.vi, self.task
        x0 = start_state(task, vi) if x0 is None else np.asarray(x0, float)
        self.X_ref, self.U_ref = reference_trajectory(task, vi, x0)
        self.t0, self.followed = float(t0), False
        self._cycle_task = self._capped(task)  # (the task's own weights again, after a ``follow``)
        X, U = self.window(0)
        plan, res = plan_task(vi, dataclasses.replace(task, horizon=len(U)), x0=x0, log=self.log, reference=(X, U))
        return Cycle(plan.shifted(self.t0), res, 0, math.inf, bool(res.converged))

    def follow(self, result: OptimizerResult, t0: float) -> None:
        """From now on the cycles continue a plan made outside the loop — a goal or trajectory request (the planner
        node's ``~/goal``, ``~/joint_trajectory``) — instead of the task: they window that plan's reference
        (``result.reference``, its step 0 at ``t0``) with the weights it was planned with (``result.task``: a
        request's path tracks with the ``lqr`` weights, planning.requests.path_task), its last point held past its end,
        until ``start`` begins the task again. Without this the next cycle pulled the robot back toward the task's
        own goal. ValueError for a result that does not say what it planned against (not from ``plan_task``) or whose
        reference does not fit this system."""
        if result.reference is None or not isinstance(result.task, Task):
            raise ValueError("follow: the result does not say what it planned against (a plan_task result needed)")
        X, U = (np.asarray(a, float) for a in result.reference)
        if X.ndim != 2 or X.shape[1] != self.vi.nx or U.shape != (len(X) - 1, self.vi.nu) or len(U) < 1:
            raise ValueError(f"follow: a reference X {X.shape}, U {U.shape} for nx = {self.vi.nx}, nu = {self.vi.nu}")
        if abs(result.task.dt - self.vi.dt) > 1e-12:
            raise ValueError(f"follow: a plan at dt = {result.task.dt} s for a loop at dt = {self.vi.dt} s")
        self.X_ref, self.U_ref, self.t0, self.followed = X, U, float(t0), True
        self._cycle_task = self._capped(result.task)

    def step_at(self, t: float) -> int:
        """The task's step at time ``t`` (the clock of ``start``'s t0)."""
        if self.t0 is None:
            raise RuntimeError("RecedingHorizon: start() first")
        return max(0, int(round((t - self.t0) / self.vi.dt)))

    def ended(self, t: float) -> bool:
        """Whether the reference's last step (the task's end, its deadline) is at or before ``t``."""
        return self.t0 is not None and self.step_at(t) >= len(self.U_ref)

    def cycle(self, t_start: float, x_start: np.ndarray, executing: Plan | None) -> Cycle:
        """Re-plan from the state ``x_start`` at ``t_start`` (on the clock of ``start``), warm-started from
        ``executing`` receded to t_start (cold if it does not reach it).

        Seamless switch: where ``executing`` runs at t_start (its step k there, t_start on its grid to ¼ Δt), the new
        plan's step 0 is the executing law's own step k — X_0 = x_start, U_0 = its command there (clamped to the
        limits the task plans under), K_0 = K_k, so U_0 + K_0 (X_0 − x) = U_k + K_k (X_k − x) for every state x
        near x_start: the command does not jump at the switch, whatever the state the robot turns out to be in. The
        optimizer plans the rest, from X_1 = f(x_start, U_0) over the window from step s+1 on. The cost of that
        continuity is one step of delay in the reaction to the re-plan (the controller was committed to the
        executing law until t_start anyway: the solve-time lead)."""
        step = self.step_at(t_start)
        law, k = None, -1
        if executing is not None and abs(executing.dt - self.vi.dt) < 1e-12:
            k = int(round((t_start - executing.times[0]) / executing.dt))
            if k >= 0 and abs(t_start - executing.times[0] - k * executing.dt) <= 0.25 * executing.dt:
                law = tracking_law(executing, self.vi)
        x_start = np.asarray(x_start, float)
        if law is None:
            return self._solve(t_start, step, x_start, None)
        u0, _ = law.feedback(k, x_start)
        if self._limits is not None:
            u0 = np.clip(u0, -self._limits, self._limits)
        K0 = law.reference(k)[2]
        x1 = self.vi.step(x_start, u0)
        warm = executing.receded(k + 1).fitted(self._horizon(step + 1)) if k + 1 < executing.horizon else None
        tail = self._solve(t_start + self.vi.dt, step + 1, x1, warm)
        p = tail.plan
        plan = dataclasses.replace(
            p,
            times=t_start + np.arange(p.horizon + 2) * p.dt,
            X=np.vstack([x_start, p.X]),
            U=np.vstack([u0, p.U]),
            K=np.concatenate([K0[None], p.K]),
        )
        return dataclasses.replace(tail, plan=plan, step=step)

    def _horizon(self, step: int) -> int:
        return len(self.window(step)[1])

    def _solve(self, t_start: float, step: int, x_start: np.ndarray, warm: Plan | None) -> Cycle:
        """The window from task step ``step`` planned from ``x_start`` at ``t_start``, warm from ``warm``."""
        X_ref, U_ref = self.window(step)
        N = len(U_ref)
        task = dataclasses.replace(self._cycle_task, horizon=N)  # (sharing the task's parsed weights: Task._resolved)
        plan, res = plan_task(self.vi, task, x0=x_start, log=self.log, reference=(X_ref, U_ref), warm_start=warm)
        start, end = res.merits
        warm_cost = float(start) if res.warm_started else math.inf  # (no continuation: none, or not followable)
        accepted = cycle_accepted(res.cost, res.converged, warm_cost, end)
        plan = plan.shifted(t_start)
        plan.converged = bool(accepted)  # (the copy's own flag)
        return Cycle(plan, res, step, warm_cost, accepted)
