"""A collocated trajectory as the transcription's polynomials: q(t), v(t), q̈(t), u(t) anywhere in [0, t_f].

LG (MorenoMartin2022, eqs. 5–6): per interval, q and v are separate degree-N interpolants on (−1, Gauss points), and u
the degree-(N−1) interpolant through the Gauss points. LG2 (eqs. 11–12): q is the degree-(N+1) interpolant on
(−1, Gauss points, +1), its velocity is q̇ itself, u as in LG. With several intervals (h-p), each interval has its
own polynomials; a time on a boundary belongs to the later interval.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .legendre import Interpolant, gauss_points


@dataclass
class Segment:
    """One interval's polynomials: q (and v for LG) on ``nodes``, u through the Gauss points."""

    t0: float
    t1: float
    q: Interpolant
    u: Interpolant | None
    v: Interpolant | None = None  # LG only: the separate velocity polynomial

    def velocity(self, t: np.ndarray, order: int = 0) -> np.ndarray:
        """v(t) of the transcription: LG's own polynomial, LG2's q̇ (MorenoMartin2022, §IV)."""
        return self.v(t, order) if self.v is not None else self.q(t, order + 1)


@dataclass
class CollocationSolution:
    """Result of ``Transcription.solve``: the polynomials, node values and IPOPT's report.

    ``t_nodes``/``Q``/``V``: node times and values (LG2: V = q̇ at the nodes); ``t_colloc``/``U``/``lam``: the
    collocation points, inputs and constraint multipliers there; ``success``, ``status``, ``iterations``,
    ``solve_time`` (CPU seconds inside IPOPT's call), ``objective``.
    """

    method: str
    nodes: int
    intervals: int
    tf: float
    segments: list[Segment]
    t_nodes: np.ndarray
    Q: np.ndarray
    V: np.ndarray
    t_colloc: np.ndarray
    U: np.ndarray
    lam: np.ndarray
    objective: float
    success: bool
    status: str
    iterations: int
    solve_time: float
    wall_time: float
    w: np.ndarray = field(repr=False, default=None)  # the NLP's primal solution (warm starts)

    def _segment_index(self, t: np.ndarray) -> np.ndarray:
        edges = np.array([s.t0 for s in self.segments[1:]])
        return np.searchsorted(edges, t, side="right")

    def _eval(self, t, fn) -> np.ndarray:
        t = np.atleast_1d(np.asarray(t, float))
        idx = self._segment_index(t)
        rows = [None] * len(t)
        for k in np.unique(idx):
            sel = np.flatnonzero(idx == k)
            vals = fn(self.segments[k], t[sel])
            for j, i in enumerate(sel):
                rows[i] = vals[j]
        return np.array(rows)

    def q(self, t, order: int = 0) -> np.ndarray:
        """Configuration polynomial (order 1: q̇, order 2: q̈) at times t: (len(t), nq)."""
        return self._eval(t, lambda s, tt: s.q(tt, order))

    def v(self, t, order: int = 0) -> np.ndarray:
        """The transcription's velocity polynomial (LG: v, independent of q; LG2: q̇)."""
        return self._eval(t, lambda s, tt: s.velocity(tt, order))

    def u(self, t) -> np.ndarray:
        """Input polynomial through the collocation points (MorenoMartin2022, eq. 6), extrapolated to the interval
        ends."""
        return self._eval(t, lambda s, tt: s.u(tt))


def input_interpolant(N: int, U: np.ndarray, t0: float, t1: float) -> Interpolant:
    """u's Lagrange polynomial on the N Gauss points of [t0, t1] (MorenoMartin2022, eq. 6)."""
    return Interpolant(np.asarray(gauss_points(N)[0]), U, t0, t1)
