"""Energy behaviour of the midpoint VI against explicit integrators on Pinocchio's ABA (Lee2016, §4.2).

A passive planar 10-link chain (vi_control.model.generate.planar_chain_urdf: 1 m, 1 kg rods, no
damping, gravity 9.81) is released from rest, bent, and integrated for --steps steps at --dt with
  - MidpointVI (Johnson2015, Newton on the DEL equations, energy from q_k and q̇ = M(q_k)⁻¹p_k),
  - LinearTimeVI (Lee2016: DRNEA + RIQN, the compiled rollout; the paper's own §4.2 experiment),
  - semi-implicit Euler on velocities, q̇ += Δt·aba(q, q̇, 0); q += Δt·q̇ (Lee2016, §4.2's baseline),
  - classical RK4 on (q, q̇) with aba, at the same Δt and at a smaller Δt chosen so that its wall
    time matches the VI's (same simulated time T).
Every energy is E = T + V from Pinocchio (computeKineticEnergy + computePotentialEnergy). Reported:
max |E − E0| over every step, drift = slope of a least-squares line through E − E0 against t, wall
time of the integration loop only (energies are evaluated afterwards). Timings are from this
process on a shared 2-core machine: ratios, not absolutes, are the claim.

    .venv/bin/python benchmarks/bench_energy.py                 # 1e5 steps at 5 ms (500 s simulated)
    .venv/bin/python benchmarks/bench_energy.py --steps 2000    # quick look

Prints a markdown table; writes benchmarks/results/energy.png and energy.md.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pinocchio as pin

from vi_control.integrators.linear_time import LinearTimeVI
from vi_control.integrators.midpoint import MidpointVI
from vi_control.model import load_robot
from vi_control.model.generate import planar_chain_urdf
from vi_control.model.robot import RobotModel

RESULTS = Path(__file__).resolve().parent / "results"


def chain(n_links: int = 10) -> RobotModel:
    return load_robot(planar_chain_urdf(n_links), {"gravity": [0.0, 0.0, -9.81]})


def initial_configuration(n: int, kind: str = "bent") -> np.ndarray:
    """Released at rest. 'bent': first joint 1 rad, the others alternating ±0.3 rad (violent, chaotic
    whipping); 'gentle': first joint 0.5 rad, the others 0 (as benchmarks/bench_linear_time.py)."""
    if kind == "gentle":
        q0 = np.zeros(n)
        q0[0] = 0.5
        return q0
    if kind != "bent":
        raise ValueError(f"unknown initial configuration {kind!r}")
    q0 = 0.3 * (-1.0) ** np.arange(n)
    q0[0] = 1.0
    return q0


def energies(model: pin.Model, Q: np.ndarray, V: np.ndarray) -> np.ndarray:
    data = model.createData()
    return np.array(
        [pin.computeKineticEnergy(model, data, q, v) + pin.computePotentialEnergy(model, data, q) for q, v in zip(Q, V)]
    )


def _mass(model: pin.Model, data: pin.Data, q: np.ndarray) -> np.ndarray:
    M = pin.crba(model, data, q)
    return np.triu(M) + np.triu(M, 1).T  # crba guarantees the upper triangle only


def run_midpoint(robot: RobotModel, q0: np.ndarray, dt: float, steps: int) -> dict:
    """MidpointVI rollout; velocities q̇_k = M(q_k)⁻¹ p_k (the continuous Legendre transform inverted)."""
    vi = MidpointVI(robot, dt)  # build/compile outside the timed loop
    x = vi.state_from_velocity(q0, np.zeros_like(q0))
    X = np.empty((steps + 1, vi.nx))
    X[0] = x
    u = np.zeros(vi.nu)
    iterations = 0
    t0 = time.perf_counter()
    for k in range(steps):
        r = vi.solve(X[k], u, step_index=k)
        X[k + 1] = r.x
        iterations += r.iterations
    wall = time.perf_counter() - t0
    model, data, nq = robot.pin_model, robot.create_data(), vi.nq
    V = np.array([np.linalg.solve(_mass(model, data, x[:nq]), x[nq:]) for x in X])
    return dict(Q=X[:, :nq], V=V, wall=wall, iterations=iterations / max(steps, 1))


def run_linear_time(robot: RobotModel, q0: np.ndarray, dt: float, steps: int) -> dict:
    """LinearTimeVI (DRNEA + RIQN) rollout, one C call; q̇_k = M(q_k)⁻¹ p_k by ABA."""
    vi = LinearTimeVI(robot, dt)
    x = vi.state_from_velocity(q0, np.zeros_like(q0))
    t0 = time.perf_counter()
    X, _ = vi.simulate(x, np.zeros((steps, vi.nu)))
    wall = time.perf_counter() - t0
    V = np.array([vi.velocity(x) for x in X])
    return dict(Q=X[:, : vi.nq], V=V, wall=wall, iterations=float(np.mean(vi.iteration_history)))


def run_explicit(model: pin.Model, q0: np.ndarray, dt: float, steps: int, method: str) -> dict:
    """Semi-implicit Euler or RK4 on q̈ = aba(q, q̇, 0) (passive, no damping)."""
    data = model.createData()
    tau = np.zeros(model.nv)

    def acc(q, v):
        return pin.aba(model, data, q, v, tau)

    step: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]
    if method == "euler":

        def step(q, v):
            v = v + dt * acc(q, v)
            return q + dt * v, v
    else:

        def step(q, v):
            a1 = acc(q, v)
            q2, v2 = q + 0.5 * dt * v, v + 0.5 * dt * a1
            a2 = acc(q2, v2)
            q3, v3 = q + 0.5 * dt * v2, v + 0.5 * dt * a2
            a3 = acc(q3, v3)
            q4, v4 = q + dt * v3, v + dt * a3
            a4 = acc(q4, v4)
            return (q + dt / 6 * (v + 2 * v2 + 2 * v3 + v4), v + dt / 6 * (a1 + 2 * a2 + 2 * a3 + a4))

    Q = np.empty((steps + 1, model.nq))
    V = np.empty((steps + 1, model.nv))
    Q[0], V[0] = q0, 0.0
    t0 = time.perf_counter()
    for k in range(steps):
        Q[k + 1], V[k + 1] = step(Q[k], V[k])
    return dict(Q=Q, V=V, wall=time.perf_counter() - t0)


def summarize(name: str, run: dict, model: pin.Model, dt: float) -> dict:
    E = energies(model, run["Q"], run["V"])
    t = dt * np.arange(len(E))
    err = E - E[0]
    finite = np.all(np.isfinite(err))
    drift = float(np.polyfit(t, err, 1)[0]) if finite and len(t) > 1 else float("nan")
    return dict(
        name=name,
        dt=dt,
        steps=len(E) - 1,
        t=t,
        error=err,
        E0=float(E[0]),
        max_abs=float(np.abs(err).max()) if finite else float("inf"),
        drift=drift,
        wall=run["wall"],
        us_per_step=1e6 * run["wall"] / max(len(E) - 1, 1),
        peak_speed=float(np.abs(run["V"]).max()) if finite else float("inf"),
        iterations=run.get("iterations"),
    )


def run_benchmark(steps: int = 100_000, dt: float = 5e-3, n_links: int = 10, q0_kind: str = "bent") -> dict:
    """All five runs; returns {'rows': [...], 'E0', 'T', 'n_links', 'q0'} (rows carry t and E − E0)."""
    robot = chain(n_links)
    model = robot.pin_model
    q0 = initial_configuration(n_links, q0_kind)
    rows = [summarize("midpoint VI", run_midpoint(robot, q0, dt, steps), model, dt)]
    rows.append(summarize("semi-implicit Euler", run_explicit(model, q0, dt, steps, "euler"), model, dt))
    rows.append(summarize("RK4, same Δt", run_explicit(model, q0, dt, steps, "rk4"), model, dt))
    # Equal wall time: RK4 gets the VI's wall time for the same simulated time T.
    ratio = rows[2]["us_per_step"] / rows[0]["us_per_step"]
    n_eq = max(1, int(round(steps / ratio)))
    dt_eq = steps * dt / n_eq
    rows.append(summarize("RK4, equal wall time", run_explicit(model, q0, dt_eq, n_eq, "rk4"), model, dt_eq))
    rows.append(summarize("linear-time VI (DRNEA + RIQN)", run_linear_time(robot, q0, dt, steps), model, dt))
    return dict(rows=rows, E0=rows[0]["E0"], T=steps * dt, n_links=n_links, q0=q0_kind)


def markdown_table(result: dict) -> str:
    lines = [
        f"Passive {result['n_links']}-link chain ({result['q0']} start), E0 = {result['E0']:.4f} J, "
        f"T = {result['T']:g} s simulated.",
        "",
        "| integrator | Δt (ms) | steps | max \\|E−E0\\| (J) | drift (J/s) | peak \\|q̇\\| (rad/s) | wall (s) "
        "| µs/step | Newton it./step |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        it = f"{r['iterations']:.2f}" if r["iterations"] is not None else "–"
        lines.append(
            f"| {r['name']} | {1e3 * r['dt']:.3g} | {r['steps']} | {r['max_abs']:.3e} | {r['drift']:+.2e} "
            f"| {r['peak_speed']:.3g} | {r['wall']:.2f} | {r['us_per_step']:.1f} | {it} |"
        )
    return "\n".join(lines)


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    for r in result["rows"]:
        t, err = r["t"], np.abs(r["error"])
        block = max(1, len(t) // 2000)  # envelope: max over blocks keeps the plot readable
        m = len(t) // block * block
        if m == 0:
            continue
        ax.semilogy(
            t[:m:block],
            np.maximum(err[:m].reshape(-1, block).max(axis=1), 1e-16),
            label=f"{r['name']} (Δt {1e3 * r['dt']:.3g} ms)",
        )
    ax.set_xlabel("t (s)")
    ax.set_ylabel("|E − E0| (J), block maximum")
    ax.set_title(f"Passive {result['n_links']}-link chain, {result['q0']} start, E0 = {result['E0']:.2f} J")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=float, default=1e5, help="steps per run (default 1e5)")
    ap.add_argument("--dt", type=float, default=5e-3, help="time step in s (default 5e-3)")
    ap.add_argument("--links", type=int, default=10)
    ap.add_argument("--q0", choices=["bent", "gentle"], default="bent", help="initial configuration")
    ap.add_argument("--name", default="energy", help="output stem under benchmarks/results/")
    args = ap.parse_args()
    result = run_benchmark(int(args.steps), args.dt, args.links, args.q0)
    table = markdown_table(result)
    print(table)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{args.name}.md").write_text(table + "\n")
    plot(result, RESULTS / f"{args.name}.png")
    print(f"\nplot: {RESULTS / args.name}.png")


if __name__ == "__main__":
    main()
