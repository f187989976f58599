"""What every solver's result shows, whatever the solver: ``OptimizerResult`` (ddp, ilqr, gradient, projection,
collocation, augmented Lagrangian), ``DMOCResult`` (Newton on Jimenez2013's conditions) and ``IpoptResult`` share it."""

from __future__ import annotations

__all__ = ["SolverResult"]


class SolverResult:
    """The common base of the planners' results: ``converged`` (the solver's own verdict), ``iterations`` (its
    main iterations), ``cost`` (the objective at the answer) and ``solve_time`` (CPU seconds of the solve). Each
    result stores these as fields or derives them from its own (``OptimizerResult.solve_time`` is its
    ``cpu_time``, ``IpoptResult.converged`` its ``success``)."""

    converged: bool
    iterations: int
    cost: float
    solve_time: float
