"""Which plan a controller runs when, as a planner predicts it (the hand-over rule of control.runner): each plan from
its start (step 0 from t₀ − Δt/2, ``plan_step``) until the next one's, a plan published later replacing every one
that starts no earlier than it (``replaces``). The planner node predicts the state at a new plan's start under the
plans that run until then, and an MPC cycle continues the plan that runs at its start (planning.mpc) — not merely
the latest published, which may not have started yet."""

from __future__ import annotations

import math

import numpy as np

from ..integrators.base import DiscreteSystem
from .plan import Plan
from .tracking import plan_step, replaces, tracking_law


class PlanSchedule:
    """The plans published with a stated start, as the controller will run them (``plans``: by start)."""

    def __init__(self):
        self.plans: list[Plan] = []

    def add(self, plan: Plan) -> None:
        """``plan`` published: it replaces the plans that start no earlier."""
        self.plans = self.remaining(float(plan.times[0])) + [plan]

    def prune(self, t: float) -> None:
        """Forget the plans that a later one has taken over from by ``t`` (they run no more)."""
        running = self.in_force(self.plans, t)
        if running is not None:
            self.plans = self.plans[next(i for i, p in enumerate(self.plans) if p is running) :]

    def clear(self) -> None:
        """No plan with a stated start (one that starts on receipt: its start is the controller's)."""
        self.plans = []

    def remaining(self, t_start: float) -> list[Plan]:
        """The plans that still run once a plan starting at ``t_start`` is published."""
        return [p for p in self.plans if not replaces(t_start, float(p.times[0]), p.dt)]

    @staticmethod
    def cycle_start(plans: list[Plan], t: float, dt: float) -> float:
        """The start of an MPC cycle wanted at ``t`` (``plans`` not empty): on the grid of the plan that runs then (the
        cycle's step 0 is that plan's law at its own step, planning.mpc), at or after ``t`` and at or after that plan's
        start — and never at the step a plan of ``plans`` starts at: which plan runs just before it would depend on
        whether the controller has entered that one when the cycle's arrives, so the cycle follows it by a step."""
        grid = PlanSchedule.in_force(plans, t) or plans[0]
        t0 = float(grid.times[0])
        n = max(0, math.ceil((t - t0) / dt - 1e-9))
        while any(plan_step(t0 + n * dt, float(p.times[0]), dt) == 0 for p in plans):
            n += 1
        return t0 + n * dt

    @staticmethod
    def in_force(plans: list[Plan], t: float) -> Plan | None:
        """The plan of ``plans`` (by start) that runs at ``t``: the last one started by then, or None."""
        for p in reversed(plans):
            if plan_step(t, float(p.times[0]), p.dt) >= 0:
                return p
        return None

    def predict(self, vi: DiscreteSystem, t: float, x: np.ndarray, steps: int, t_start: float) -> np.ndarray:
        """The state ``steps`` Δt after ``x`` measured at ``t``, each step under the law of the plan that runs then
        once a plan starting at ``t_start`` is published; where none runs, or the one that runs has ended (its law
        holds X_N), the robot stays where it was measured (held, or at rest)."""
        plans, laws = self.remaining(t_start), {}
        for i in range(steps):
            ti = t + i * vi.dt
            p = self.in_force(plans, ti)
            if p is None or ti >= p.times[-1]:
                continue
            law = laws.setdefault(id(p), tracking_law(p, vi))
            x = vi.step(x, law.command(law.index(ti), x)[0])
        return x
