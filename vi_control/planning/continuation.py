"""Continuation in the running state weight: a chaotic swing-up solved through better-conditioned neighbours.

Single-shooting DDP on the acrobot is ill-conditioned early in a solve: one full step amplifies an input difference
1e3–4e5× (docs/benchmarks/planner.md), so round-off — or the Newton variant that solves each step — decides the
path, and the iteration count varies by tens. A heavier running state weight (Q × s, s ≫ 1, the task's own reference)
makes the backward pass's gains stabilize the closed-loop rollout, and the same iterations are well-conditioned. So
the problem is solved for a decreasing sequence of scales s₁ > s₂ > … > 1, each stage for a few iterations from the
previous stage's inputs (and, with a terminal constraint, the multiplier estimated there), the last stage being the
task itself. ``max_iterations`` bounds all stages together. A homotopy (continuation) method in the usual sense
(e.g. Allgower & Georg, *Numerical Continuation Methods*, 1990), here in the cost's weights.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

import numpy as np

from .cost import QuadraticTrackingCost
from .shooting import LogFn, OptimizerResult

# solve(cost, U0, max_iterations, warm) -> result; ``warm``: U0 comes from a previous stage
StageSolver = Callable[[QuadraticTrackingCost, np.ndarray, int, bool], OptimizerResult]


def weight_continuation(
    solve: StageSolver,
    cost: QuadraticTrackingCost,
    U0: np.ndarray,
    scales: tuple[float, ...],
    stage_iterations: int,
    max_iterations: int,
    log: LogFn = None,
) -> OptimizerResult:
    """Solve ``cost`` after stages with Q × scales[i] (module doc), each at most ``stage_iterations`` DDP
    iterations, the task's stage with what remains of ``max_iterations``. Returns the last stage's result with the
    iterations, histories and CPU time of all stages (``method`` gains "+continuation")."""
    if not scales or any(not (np.isfinite(s) and s > 0) for s in scales):
        raise ValueError(f"scales: expected positive finite numbers, got {scales!r}")
    if len(scales) * stage_iterations >= max_iterations:
        raise ValueError(
            f"{len(scales)} stages × {stage_iterations} iterations leave none of max_iterations = "
            f"{max_iterations} for the task itself"
        )
    t0, c0 = time.perf_counter(), time.process_time()
    U, total, parts = np.asarray(U0, float), 0, []
    for i, s in enumerate(scales):
        stage = QuadraticTrackingCost(cost.X_ref, cost.U_ref, s * cost.Q, cost.R, cost.Qf)
        r = solve(stage, U, stage_iterations, i > 0)
        total += r.iterations
        parts.append(r)
        U = r.U
        if log is not None:
            log(f"[continuation] Q × {s:g}: {r.iterations} iterations, cost {r.cost:.6g} ({r.stop_reason})")
    res = solve(cost, U, max_iterations - total, True)
    parts.append(res)
    return dataclasses.replace(
        res,
        iterations=total + res.iterations,
        method=res.method + "+continuation",
        cost_history=[J for r in parts for J in r.cost_history],
        decrement_history=[d for r in parts for d in r.decrement_history],
        regularization_history=[m for r in parts for m in r.regularization_history],
        step_history=[a for r in parts for a in r.step_history],
        step_kinds=[k for r in parts for k in r.step_kinds],
        outer_iterations=sum(r.outer_iterations for r in parts),
        merit=res.merits,  # (the task's own stage, from the earlier stages' result: the measures of the others differ)
        wall_time=time.perf_counter() - t0,
        cpu_time=time.process_time() - c0,
    )
