"""Dynamic errors of a collocated trajectory between the collocation points (MorenoMartin2022, eqs. 17–21), and their
plots.

    ε^[1]_qi(t) = q̇ᵢ(t) − vᵢ(t)                        (eq. 17; zero by construction for LG2)
    ε^[2]_qi(t) = q̈ᵢ(t) − gᵢ(q(t), q̇(t), u(t))         (eq. 18; q, q̇, q̈ of the configuration polynomial)
    ε^[r](t)   = Σᵢ |ε^[r]_qi(t)|                       (eq. 19)
    E^[r]_qi   = ∫₀^tf |ε^[r]_qi| dt,  E^[r] = ∫₀^tf ε^[r] dt   (eqs. 20–21)

u(t) is the transcription's input polynomial (eq. 6). ``velocity='v'`` evaluates g at the velocity polynomial
instead of q̇ (the variant of the authors' code, q̈ − g(q, v, u)); for LG2 the two coincide.
The integrals use composite 3-point Gauss quadrature on ``subintervals`` equal pieces of every collocation
interval: |ε| has kinks where ε changes sign, so a fine composite rule, not one high-order rule.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .dynamics import SecondOrderDynamics
from .solution import CollocationSolution


@dataclass
class DynamicErrors:
    """Samples of ε^[1], ε^[2] (n, nq) at times t, and the integrals E^[1]_qi, E^[2]_qi (nq,), E^[1], E^[2]."""

    t: np.ndarray
    eps1: np.ndarray
    eps2: np.ndarray
    E1_q: np.ndarray
    E2_q: np.ndarray
    E1: float
    E2: float


def _coordinates(coordinates, nq: int) -> np.ndarray | None:
    """``coordinates`` as a finite (m, nq) matrix T (θ = T q), or None."""
    if coordinates is None:
        return None
    T = np.asarray(coordinates, float)
    if T.ndim != 2 or T.shape[1] != nq or not np.isfinite(T).all():
        raise ValueError(f"coordinates: a finite matrix T (m, {nq}) with θ = T q, got shape {T.shape}")
    return T


def _quadrature_grid(sol: CollocationSolution, subintervals: int) -> tuple[np.ndarray, np.ndarray]:
    x, w = np.polynomial.legendre.leggauss(3)
    ts, ws = [], []
    for seg in sol.segments:
        edges = np.linspace(seg.t0, seg.t1, subintervals + 1)
        half = 0.5 * np.diff(edges)
        mid = 0.5 * (edges[1:] + edges[:-1])
        ts.append((mid[:, None] + half[:, None] * x[None, :]).ravel())
        ws.append((half[:, None] * w[None, :]).ravel())
    return np.concatenate(ts), np.concatenate(ws)


def dynamic_error_samples(
    sol: CollocationSolution, dynamics: SecondOrderDynamics, t: np.ndarray, velocity: str = "qdot"
) -> tuple[np.ndarray, np.ndarray]:
    """(ε^[1](t), ε^[2](t)) per coordinate at times t: two (len(t), nq) arrays (eqs. 17–18)."""
    if velocity not in ("qdot", "v"):
        raise ValueError(f"velocity: expected 'qdot' (eq. 18) or 'v', got {velocity!r}")
    t = np.atleast_1d(np.asarray(t, float))
    q, qd, qdd = sol.q(t), sol.q(t, 1), sol.q(t, 2)
    v = sol.v(t)
    g = dynamics.acceleration(q, qd if velocity == "qdot" else v, sol.u(t))
    return qd - v, qdd - g


def dynamic_errors(
    sol: CollocationSolution,
    dynamics: SecondOrderDynamics,
    subintervals: int = 1000,
    velocity: str = "qdot",
    coordinates: np.ndarray | None = None,
) -> DynamicErrors:
    """ε^[1], ε^[2] and their integrals E (MorenoMartin2022, eqs. 17–21) of a solution.

    ``coordinates``: a constant matrix T (m, nq) to report the errors of θ = T q instead of q (e.g. the biped's
    absolute link angles from relative joint angles): ε is linear in q̇, q̈ and g, so ε_θ = T ε_q exactly.
    """
    T = _coordinates(coordinates, dynamics.nq)
    t, w = _quadrature_grid(sol, subintervals)
    e1, e2 = dynamic_error_samples(sol, dynamics, t, velocity)
    if T is not None:
        e1, e2 = e1 @ T.T, e2 @ T.T
    E1_q, E2_q = w @ np.abs(e1), w @ np.abs(e2)
    return DynamicErrors(t=t, eps1=e1, eps2=e2, E1_q=E1_q, E2_q=E2_q, E1=float(E1_q.sum()), E2=float(E2_q.sum()))


def error_split(
    sol: CollocationSolution,
    dynamics: SecondOrderDynamics,
    subintervals: int = 1000,
    coordinates: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """ε^[2] = (q̈ − v̇) + (v̇ − g(q, q̇, u)), integrated per coordinate: (∫|q̈ − v̇| dt, ∫|v̇ − g| dt), each (nq,)
    — or (m,) for θ = T q with ``coordinates`` T (m, nq), as in `dynamic_errors` (both parts are linear in q̈, v̇, g).

    The first part is LG's velocity inconsistency (MorenoMartin2022, §I: v ≠ q̇ between the Gauss points, so v̇ ≠ q̈
    even at them) — what LG2 removes by construction (zero for LG2); the second is the collocation residual of the
    first-order system, which both methods leave between the Gauss points. E^[2]_qi ≤ the sum of the two, and LG2's
    gain over LG on a coordinate is bounded by how much of LG's error the first part carries."""
    T = _coordinates(coordinates, dynamics.nq)
    t, w = _quadrature_grid(sol, subintervals)
    q, qd, qdd, vd = sol.q(t), sol.q(t, 1), sol.q(t, 2), sol.v(t, 1)
    g = dynamics.acceleration(q, qd, sol.u(t))
    a, b = qdd - vd, vd - g
    if T is not None:
        a, b = a @ T.T, b @ T.T
    return w @ np.abs(a), w @ np.abs(b)


def plot_dynamic_error(
    ax,
    sol: CollocationSolution,
    dynamics: SecondOrderDynamics,
    coordinate: int | None = None,
    order: int = 2,
    label: str | None = None,
    color=None,
    samples: int = 2000,
) -> None:
    """ε^[order](t) over [0, t_f] with the collocation points marked (the style of MorenoMartin2022's error figures).

    ``coordinate``: one q_i (signed ε_qi), or None for the joint error ε^[order] = Σ|ε_qi| (eq. 19).
    """
    t = np.linspace(0.0, sol.tf, samples)
    e1, e2 = dynamic_error_samples(sol, dynamics, t)
    e = e2 if order == 2 else e1
    y = np.abs(e).sum(axis=1) if coordinate is None else e[:, coordinate]
    yc = (
        np.abs(dynamic_error_samples(sol, dynamics, sol.t_colloc)[order - 1]).sum(axis=1)
        if coordinate is None
        else dynamic_error_samples(sol, dynamics, sol.t_colloc)[order - 1][:, coordinate]
    )
    label = label or f"{sol.method.upper()} N = {sol.nodes}"
    (line,) = ax.plot(t, y, color=color, label=label)
    ax.plot(sol.t_colloc, yc, "o", ms=3, color=line.get_color())
    for seg in sol.segments[1:]:
        ax.axvline(seg.t0, color="0.8", lw=0.8)
    ax.set_xlabel("t [s]")
    name = f"ε^{{[{order}]}}" + ("" if coordinate is None else f"_{{q_{coordinate + 1}}}")
    ax.set_ylabel(f"${name}$")


def plot_error_sweep(
    ax_error, ax_time, Ns, results: dict[str, tuple[list[float], list[float]]], title: str = ""
) -> None:
    """MorenoMartin2022, Fig. 2: E^[2] (log scale) and solve time against N, one curve per method.

    ``results``: method label → (E^[2] per N, solve time [s] per N); NaN entries (failed or different optimum)
    are left out.
    """
    for (label, (E, T)), marker in zip(results.items(), "os^dv<>", strict=False):
        ax_error.semilogy(Ns, E, marker + "-", label=label)
        ax_time.plot(Ns, np.asarray(T) * 1e3, marker + "-", label=label)
    ax_error.set_xlabel("N")
    ax_error.set_ylabel("$E^{[2]}$")
    ax_time.set_xlabel("N")
    ax_time.set_ylabel("solve time [ms]")
    for ax in (ax_error, ax_time):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    if title:
        ax_error.set_title(title)
