"""Errors of the planning layer that are not task-file errors (those are ``task.TaskError``)."""

from __future__ import annotations


class PlanningError(RuntimeError):
    """The optimizer could not produce a plan: infeasible problem, solver failure, restoration failure.

    ``status`` is the solver's own return status (IPOPT's, e.g. ``Infeasible_Problem_Detected``), ``iterations``
    the iterations it ran, ``solver`` its name; the plan in use (if any) stays in force.
    """

    def __init__(self, message: str, status: str = "", iterations: int | None = None, solver: str = ""):
        self.status, self.iterations, self.solver = status, iterations, solver
        detail = ", ".join(
            s
            for s in (
                f"status {status}" if status else "",
                f"{iterations} iterations" if iterations is not None else "",
            )
            if s
        )
        super().__init__(f"{solver + ': ' if solver else ''}{message}" + (f" ({detail})" if detail else ""))


def ipopt_iterations(stats: dict, max_iterations: int) -> int:
    """IPOPT's iteration count from CasADi's solver stats. When IPOPT stops before its first iteration (e.g.
    ``Not_Enough_Degrees_Of_Freedom``: more equality constraints than variables) CasADi reports an uninitialized
    count (−1305018176 was seen): anything outside [0, max_iterations] ran no iteration."""
    n = int(stats.get("iter_count", 0))
    return n if 0 <= n <= max_iterations else 0


class PlanLimitsError(PlanningError):
    """A plan the controller would refuse (planning.limits.check_plan_limits): one of its states moves a joint faster
    than the controller accepts, or one of its inputs exceeds an effort limit. The message names the joint, the time,
    the value against its limit (by how much) and what to do; ``joint``, ``time`` [s], ``value``, ``limit`` and
    ``quantity`` ('velocity', 'effort' or 'position': a knot past a URDF position limit) say the same for a program;
    ``ratio`` = |value| / limit (> 1)."""

    def __init__(self, message: str, joint: str, time: float, value: float, limit: float, quantity: str):
        self.joint, self.time, self.value, self.limit, self.quantity = joint, time, value, limit, quantity
        self.ratio = abs(value) / abs(limit) if limit else float("inf")
        super().__init__(message, solver="plan limits")
