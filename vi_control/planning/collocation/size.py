"""How large a collocation NLP is before it is built, and the bound the planner keeps it under.

Building a transcription (CasADi SX of every Gauss point's dynamics row, then IPOPT's exact Hessian of the
Lagrangian and its sparsity) costs time and memory in proportion to the operations of the rows, not to the
number of variables: at the same nq and node count the panda's row has 3.4× the operations of the ur5's and
builds 3.5× slower (benchmarks/bench_collocation_size.py). So the bound is on ``work``: Gauss points × operations of
one dynamics row (CasADi instructions) — what the planner refuses beyond ``MAX_WORK`` — with the variables reported
beside it.
"""

from __future__ import annotations

from dataclasses import dataclass

import casadi as ca

from .dynamics import SecondOrderDynamics

# Operations of all dynamics rows together (Gauss points × one row's CasADi instructions). Measured here
# (bench_collocation_size, README): about 30 s of CPU and 2 GB of memory to build at this size.
MAX_WORK = 1_000_000


def variable_shapes(dyn: SecondOrderDynamics, method: str, nodes: int, intervals: int, lifted: bool,
                    implicit: bool, free_time: bool) -> dict[str, tuple[int, int]]:
    """Shapes of the NLP's decision variables, in ``Transcription``'s order (its docstring): Q, V, Vc, Ac, U, λ,
    t_f. Nodes: K(N + 1) + 1 (LG2 shares the interval ends; LG has N + 1 per interval and the end)."""
    nq, N, K = dyn.nq, nodes, intervals
    lg2 = method == "lg2"
    n_nodes = K * (N + 1) + 1
    return {"Q": (nq, n_nodes), "V": (nq, n_nodes) if not lg2 else (nq, 0),
            "Vc": (nq, K * N if lifted else 0), "Ac": (nq, K * N if lifted else 0),
            "U": (dyn.nu, K * N), "lam": (dyn.nc if implicit else 0, K * N), "tf": (1 if free_time else 0, 1)}


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

    @property
    def work(self) -> int:
        return self.points * self.row_operations


class NLPSizeError(ValueError):
    """The NLP would exceed the size bound (``CollocationProblem.size_limit``); carries its ``NLPSize``."""

    def __init__(self, message: str, size: NLPSize, limit: int):
        super().__init__(message)
        self.size, self.limit = size, limit


def nlp_size(problem) -> NLPSize:
    """The size of ``problem``'s NLP (a ``CollocationProblem``), without building it."""
    shapes = variable_shapes(problem.dynamics, problem.method, problem.nodes, problem.intervals,
                             problem.method == "lg2" and bool(problem.lifted), problem.dynamics_form == "implicit",
                             problem.free_time)
    return NLPSize(variables=sum(a * b for a, b in shapes.values()), points=problem.nodes * problem.intervals,
                   row_operations=row_operations(problem.dynamics, problem.dynamics_form == "implicit"))


def check_size(problem) -> NLPSize:
    """``nlp_size(problem)``; NLPSizeError naming the node count, the model and the largest count that fits if its
    work exceeds ``problem.size_limit`` (None: no bound)."""
    size = nlp_size(problem)
    limit = problem.size_limit
    if limit is not None and size.work > limit:
        robot = problem.dynamics.robot
        fits = limit // size.row_operations
        raise NLPSizeError(
            f"nodes × intervals: {problem.nodes} × {problem.intervals} = {size.points} Gauss points on "
            f"{robot.name!r} (nq = {robot.nq}) make an NLP of {size.variables} variables whose dynamics rows have "
            f"{size.work:,} operations ({size.row_operations:,} per point), more than the supported {limit:,} (about "
            f"30 s and 2 GB to build here): at most {fits} Gauss points for this model and method", size, limit)
    return size
