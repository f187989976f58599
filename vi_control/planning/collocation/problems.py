"""MorenoMartin2022's test problems (§V) as CollocationProblems, with the settings the tests and the benchmark share.

- ``pendulum_min_time``: the bundled pendulum (m = l = 1, g = 9.8, |u| ≤ 5 N·m) from hanging at rest to upright at
  rest in minimum time (eq. 22). ``PENDULUM_GUESS_TIME``: the straight-line guess's t_f — from it LG and LG2 reach the
  same local optimum for N = 15 … 30 (other guesses lead to other optima; docs/concepts/collocation.md).
  ``pendulum_starts`` / ``best_of``: the same straight line over each of ``PENDULUM_START_TIMES``, and the lowest-t_f
  optimum reached from them — the comparison point of a minimum-time problem with several local optima per N (at
  N = 15 the 2 s line ends at t_f = 2.4185 s, the 3 s line at 2.4036 s, for both methods).
  ``bang_bang_min_time`` is an independent reference: the three-arc bang-bang control (−u, +u, −u) whose switching
  times are found by shooting with scipy's ODE solver, minimized over the first switch.
- ``cartpole_swingup``: Kelly 2017's cart-pole (bundled: cart 1 kg, pole 0.3 kg at 0.5 m, |u| ≤ 20 N, |x| ≤ 2 m)
  from hanging at x = 0 to upright at rest at x = d = 1 m in t_f = 2 s, cost ∫u² dt (eq. 23).
"""

from __future__ import annotations

import numpy as np

from .dynamics import SecondOrderDynamics
from .transcription import CollocationProblem, Guess, Transcription

PENDULUM_GUESS_TIME = 2.0
PENDULUM_START_TIMES = (2.0, 2.5, 3.0, 3.5, 4.0)
PENDULUM_TIME_BOUNDS = (0.1, 10.0)
CARTPOLE_DISTANCE, CARTPOLE_TIME = 1.0, 2.0


def pendulum_min_time(dynamics: SecondOrderDynamics, method: str, nodes: int, **options) -> CollocationProblem:
    return CollocationProblem(
        dynamics, method=method, nodes=nodes, free_time=True, cost="time", time_bounds=PENDULUM_TIME_BOUNDS, **options
    )


def pendulum_boundary() -> dict:
    """Boundary values of the swing-up: hanging at rest → upright at rest."""
    return dict(q0=[0.0], v0=[0.0], qf=[np.pi], vf=[0.0])


def pendulum_guess() -> Guess:
    return Guess.linear([0.0], [np.pi], PENDULUM_GUESS_TIME, 1)


def pendulum_starts() -> list[Guess]:
    """Straight lines to the top over each of PENDULUM_START_TIMES (the first is ``pendulum_guess``)."""
    return [Guess.linear([0.0], [np.pi], tg, 1) for tg in PENDULUM_START_TIMES]


def best_of(transcription: Transcription, starts: list[Guess], **boundary) -> tuple:
    """Solve from every start; (the successful solution of lowest objective or None, all solutions)."""
    sols = [transcription.solve(**boundary, guess=g, raise_on_failure=False) for g in starts]
    ok = [s for s in sols if s.success]
    return (min(ok, key=lambda s: s.objective) if ok else None), sols


def cartpole_swingup(dynamics: SecondOrderDynamics, method: str, nodes: int, **options) -> CollocationProblem:
    return CollocationProblem(dynamics, method=method, nodes=nodes, cost="effort", **options)


def cartpole_boundary() -> dict:
    return dict(q0=[0.0, 0.0], v0=[0.0, 0.0], qf=[CARTPOLE_DISTANCE, np.pi], vf=[0.0, 0.0], tf=CARTPOLE_TIME)


def bang_bang_min_time(g: float = 9.8, u_max: float = 5.0) -> tuple[float, float, float]:
    """(t₁, t₂, t_f) of the minimum-time three-arc bang-bang swing-up of q̈ = u − g sin q (m = l = 1)."""
    from scipy.integrate import solve_ivp
    from scipy.optimize import fsolve, minimize_scalar

    def end(t1: float, t2: float, tf: float) -> np.ndarray:
        x = np.zeros(2)
        for a, b, u in ((0.0, t1, -u_max), (t1, t2, u_max), (t2, tf, -u_max)):
            x = solve_ivp(lambda t, y, u=u: [y[1], u - g * np.sin(y[0])], (a, b), x, rtol=1e-10, atol=1e-10).y[:, -1]
        return x - [np.pi, 0.0]

    def switch(t1: float) -> np.ndarray:  # (t2, tf) reaching the top at rest for a first switch at t1
        return fsolve(lambda z: end(t1, *z), [t1 + 1.25, t1 + 1.65], xtol=1e-10)

    best = minimize_scalar(lambda t1: switch(t1)[1], bounds=(0.6, 0.9), method="bounded", options={"xatol": 1e-4})
    t2, tf = switch(best.x)
    return float(best.x), float(t2), float(tf)


def bang_bang_gravity_interpolation_error(
    nodes: int, g: float = 9.8, u_max: float = 5.0, samples: int = 100_001
) -> float:
    """∫₀^tf |I_N[a₀](t) − a₀(t)| dt for a₀(t) = −g sin q*(t) on the exact bang-bang motion q* (``bang_bang_min_time``)
    and I_N its interpolant through the N Gauss points of [0, t_f] (degree N − 1).

    On the pendulum LG2's ε^[2] is exactly this interpolation error, taken along the collocated q(t) instead of q*
    (the input polynomial cancels: docs/concepts/collocation.md), so this is the error LG2 makes when its trajectory is
    the true optimum — what a single polynomial of that degree can do for a motion whose q̈ jumps at the switches."""
    from scipy.integrate import solve_ivp

    from .legendre import Interpolant, gauss_points

    t1, t2, tf = bang_bang_min_time(g, u_max)
    tau = gauss_points(nodes)[0]
    tc = (tau + 1) * tf / 2
    ts = np.linspace(0.0, tf, samples)
    q_ts, q_tc, x = np.empty_like(ts), np.empty_like(tc), np.zeros(2)
    for a, b, u in ((0.0, t1, -u_max), (t1, t2, u_max), (t2, tf, -u_max)):
        arc = solve_ivp(
            lambda t, y, u=u: [y[1], u - g * np.sin(y[0])], (a, b), x, rtol=1e-12, atol=1e-12, dense_output=True
        )
        for t, q in ((ts, q_ts), (tc, q_tc)):
            m = (t >= a) & (t <= b)
            q[m] = arc.sol(t[m])[0]
        x = arc.y[:, -1]
    interp = Interpolant(tau, -g * np.sin(q_tc)[:, None], 0.0, tf)  # barycentric, degree N − 1
    return float(np.trapezoid(np.abs(interp(ts)[:, 0] + g * np.sin(q_ts)), ts))
