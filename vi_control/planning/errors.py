"""Errors of the planning layer that are not task-file errors (those are ``task.TaskError``)."""

from __future__ import annotations


class PlanningError(RuntimeError):
    """The optimizer could not produce a plan: infeasible problem, solver failure, restoration failure.

    ``status`` is the solver's own return status (IPOPT's, e.g. ``Infeasible_Problem_Detected``), ``iterations``
    the iterations it ran, ``solver`` its name; the plan in use (if any) stays in force.
    """

    def __init__(self, message: str, status: str = "", iterations: int | None = None, solver: str = ""):
        self.status, self.iterations, self.solver = status, iterations, solver
        detail = ", ".join(s for s in (f"status {status}" if status else "",
                                       f"{iterations} iterations" if iterations is not None else "") if s)
        super().__init__(f"{solver + ': ' if solver else ''}{message}" + (f" ({detail})" if detail else ""))
