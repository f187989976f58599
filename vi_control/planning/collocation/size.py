"""How large a collocation NLP is before it is built, and the bound the planner keeps it under.

Building a transcription (CasADi SX of every Gauss point's dynamics row, then IPOPT's exact Hessian of the
Lagrangian and its sparsity) costs time and memory in proportion to the operations of those rows, not to the
number of variables: at the same nq and node count the panda's dynamics row has 3.4× the operations of the ur5's and
builds 3.4× slower, and per variable the measured CPU time spans 0.6 ms (a pendulum) to 32 ms (the panda by LG)
(benchmarks/bench_collocation_size.py). ``NLPSize.work`` counts, per Gauss point, the row's operations plus
terms fitted to those measurements: the rows besides the dynamics (~nq² operations' worth) and, where the dynamics
row reads every node of its interval (LG's v̇ = D·V, LG2 without lifting), a per-node share of both. One unit of
work took 27 µs of CPU here (measured/predicted 0.46–1.29: the cheap coupled cases are overestimated, on the safe
side); ``Transcription`` and the planner refuse beyond ``MAX_WORK``.
"""

from __future__ import annotations

from dataclasses import dataclass

import casadi as ca

from ...mechanics.graph_lock import builds_graph
from .dynamics import SecondOrderDynamics

# Work model, in operations of the dynamics row per Gauss point (fitted on pendulum, cart-pole, ur5 and panda, LG and
# LG2, N = 5…200): ops + NQ2·nq² + coupled·N·(COUPLED_NQ2·nq² + COUPLED_OPS·ops).
NQ2, COUPLED_NQ2, COUPLED_OPS = 18.0, 1.7, 0.14
SECONDS_PER_WORK = 2.7e-5  # CPU seconds per unit (fitted; measured/predicted 0.46–1.29 over 29 builds, median 0.83)
BYTES_PER_WORK = 2100  # peak memory per unit (the largest measured: the panda by LG2, 2.06 KB; median 0.9 KB)
# The largest NLP built: about 27 s of CPU (measured at the bound on the panda: 21.6 s by LG2, 23.0 s by LG) and at
# most ~2 GB of memory here.
MAX_WORK = 1_000_000


def variable_shapes(
    dyn: SecondOrderDynamics, method: str, nodes: int, intervals: int, lifted: bool, implicit: bool, free_time: bool
) -> dict[str, tuple[int, int]]:
    """Shapes of the NLP's decision variables, in ``Transcription``'s order (its docstring): Q, V, Vc, Ac, U, λ,
    t_f. Nodes: K(N + 1) + 1 (LG2 shares the interval ends; LG has N + 1 per interval and the end)."""
    nq, N, K = dyn.nq, nodes, intervals
    lg2 = method == "lg2"
    n_nodes = K * (N + 1) + 1
    return {
        "Q": (nq, n_nodes),
        "V": (nq, n_nodes) if not lg2 else (nq, 0),
        "Vc": (nq, K * N if lifted else 0),
        "Ac": (nq, K * N if lifted else 0),
        "U": (dyn.nu, K * N),
        "lam": (dyn.nc if implicit else 0, K * N),
        "tf": (1 if free_time else 0, 1),
    }


@builds_graph
def row_operations(dyn: SecondOrderDynamics, implicit: bool) -> int:
    """CasADi instructions of one Gauss point's dynamics row (implicit M a + b − Bu − Dhᵀλ, or a − g(q, v, u))."""
    q, v, a = (ca.SX.sym(n, dyn.nq) for n in "qva")
    u, lam = ca.SX.sym("u", dyn.nu), ca.SX.sym("lam", dyn.nc)
    row = dyn.implicit(q, v, a, u, lam) if implicit else a - dyn.explicit(q, v, u)
    return int(ca.Function("row", [q, v, a, u, lam], [row]).n_instructions())


@dataclass(frozen=True)
class NLPSize:
    variables: int
    points: int  # Gauss points, K·N
    row_operations: int  # one point's dynamics row
    nq: int
    coupled_nodes: int  # nodes every dynamics row reads (LG, LG2 without lifting: the interval's), else 0

    @property
    def work_per_point(self) -> float:
        ops, nq2 = self.row_operations, self.nq**2
        return ops + NQ2 * nq2 + self.coupled_nodes * (COUPLED_NQ2 * nq2 + COUPLED_OPS * ops)

    @property
    def work(self) -> int:
        """Build cost in operations of the dynamics row (module docstring)."""
        return int(self.points * self.work_per_point)


class NLPSizeError(ValueError):
    """The NLP would exceed the size bound (``CollocationProblem.size_limit``); carries its ``NLPSize``."""

    def __init__(self, detail: str, size: NLPSize, limit: int):
        super().__init__(f"nodes × intervals: {detail}")
        self.detail, self.size, self.limit = detail, size, limit


def nlp_size(problem) -> NLPSize:
    """The size of ``problem``'s NLP (a ``CollocationProblem``), without building it."""
    shapes = variable_shapes(
        problem.dynamics,
        problem.method,
        problem.nodes,
        problem.intervals,
        problem.method == "lg2" and bool(problem.lifted),
        problem.dynamics_form == "implicit",
        problem.free_time,
    )
    lifted = problem.method == "lg2" and bool(problem.lifted)
    return NLPSize(
        variables=sum(a * b for a, b in shapes.values()),
        points=problem.nodes * problem.intervals,
        row_operations=row_operations(problem.dynamics, problem.dynamics_form == "implicit"),
        nq=problem.dynamics.nq,
        coupled_nodes=0 if lifted else problem.nodes,
    )


def check_size(problem) -> NLPSize:
    """``nlp_size(problem)``; NLPSizeError naming the node count, the model and the largest count that fits if its
    work exceeds ``problem.size_limit`` (None: no bound)."""
    size = nlp_size(problem)
    limit = problem.size_limit
    if limit is not None and size.work > limit:
        robot = problem.dynamics.robot
        per_interval = problem.nodes * size.work_per_point
        k_max = int(limit // per_interval) + 1
        while k_max and int(k_max * per_interval) > limit:  # (the work of k intervals, rounded as ``work``)
            k_max -= 1
        fits = (
            f"at most {k_max} interval(s) of {problem.nodes} nodes"
            if k_max
            else f"not even one interval of {problem.nodes} nodes fits: fewer nodes"
        )
        raise NLPSizeError(
            f"{problem.nodes} × {problem.intervals} = {size.points} Gauss points of "
            f"{problem.method.upper()} on {robot.name!r} (nq = {robot.nq}, {size.row_operations:,} operations per "
            f"dynamics row) make an NLP of {size.variables:,} variables and build work {size.work:,} (about "
            f"{size.work * SECONDS_PER_WORK:.0f} s of CPU and {size.work * BYTES_PER_WORK / 2**30:.1f} GB to build "
            f"here), more than the supported {limit:,} (~{limit * SECONDS_PER_WORK:.0f} s): {fits} for this model "
            "and method",
            size,
            limit,
        )
    return size
