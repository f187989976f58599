"""Free rigid body: the Lie-group VI (Jimenez2013, §4) against classical RK4 on unit quaternions, same Δt.

A torque-free asymmetric body (inertia diag(1, 2, 3) kg m²) spins near its unstable intermediate axis (it flips
periodically: the Dzhanibekov effect), integrated for --steps steps of --dt by
  - LieGroupVI on SO(3) with the Cayley retraction (state: rotation matrix + body momentum),
  - RK4 on (q, ω) with q̇ = ½ q ⊗ (0, ω), Jω̇ = Jω × ω (quaternion never renormalized, as its users run it
    when they do not add a projection; a renormalized variant is reported too).
Reported: max relative energy error and its drift (least-squares slope), max spatial-momentum error ‖Rν − π₀‖,
the rotation's distance from SO(3) (‖RᵀR − I‖, or | |q| − 1 |), CPU time per step, measured in this process
(interleaved: one VI run, one RK4 run). Prints a markdown table; writes benchmarks/results/lie_energy.png and .md.

    .venv/bin/python benchmarks/bench_lie_energy.py                  # 10⁵ steps at 0.5 s (50 000 s)
    .venv/bin/python benchmarks/bench_lie_energy.py --steps 2000     # quick look
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from vi_control.integrators import make_integrator
from vi_control.mechanics.groups import SO3, quaternion_from_rotation, rotation_from_quaternion
from vi_control.model.rigid_body import load_rigid_body

RESULTS = Path(__file__).resolve().parent / "results"
INERTIA = np.diag([1.0, 2.0, 3.0])
OMEGA0 = np.array([0.01, 1.0, 0.02])  # near the intermediate axis


def _qmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product of (x, y, z, w) quaternions."""
    av, aw, bv, bw = a[:3], a[3], b[:3], b[3]
    return np.concatenate([aw * bv + bw * av + np.cross(av, bv), [aw * bw - av @ bv]])


def _rhs(s: np.ndarray) -> np.ndarray:
    q, w = s[:4], s[4:]
    return np.concatenate(
        [0.5 * _qmul(q, np.concatenate([w, [0.0]])), np.linalg.solve(INERTIA, np.cross(INERTIA @ w, w))]
    )


def rk4(s0: np.ndarray, dt: float, steps: int, renormalize: bool = False) -> np.ndarray:
    S = np.empty((steps + 1, 7))
    S[0] = s = s0
    for k in range(steps):
        k1 = _rhs(s)
        k2 = _rhs(s + 0.5 * dt * k1)
        k3 = _rhs(s + 0.5 * dt * k2)
        k4 = _rhs(s + dt * k3)
        s = s + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
        if renormalize:
            s[:4] /= np.linalg.norm(s[:4])
        S[k + 1] = s
    return S


def _stats(E: np.ndarray, pi: np.ndarray, off: np.ndarray, t: np.ndarray, cpu: float, steps: int) -> dict:
    rel = (E - E[0]) / E[0]
    return dict(
        energy=rel,
        t=t,
        max_energy=float(np.abs(rel).max()),
        drift=float(np.polyfit(t, rel, 1)[0]),
        momentum=float(np.abs(pi - pi[0]).max()),
        off_group=float(np.abs(off).max()),
        us_per_step=1e6 * cpu / steps,
    )


def run_benchmark(steps: int = 100_000, dt: float = 0.5) -> dict:
    body = load_rigid_body(dict(name="tumbler", group="SO3", inertia=np.diag(INERTIA).tolist()))
    vi = make_integrator("lie_group", body, dt)
    x0 = vi.state_from_pose(np.eye(3), OMEGA0)
    s0 = np.concatenate([quaternion_from_rotation(np.eye(3)), OMEGA0])
    t = dt * np.arange(steps + 1)
    c0 = time.process_time()
    X, _ = vi.simulate(x0, steps=steps)
    c_vi = time.process_time() - c0
    c0 = time.process_time()
    S = rk4(s0, dt, steps)
    c_rk = time.process_time() - c0
    c0 = time.process_time()
    Sn = rk4(s0, dt, steps, renormalize=True)
    c_rkn = time.process_time() - c0

    def vi_rows():
        E = np.array([vi.energy(x) for x in X])
        pi = np.array([vi.spatial_momentum(x) for x in X])
        off = np.array([SO3.distance_from_group(vi.pose(x)) for x in X])
        return _stats(E, pi, off, t, c_vi, steps)

    def rk_rows(S, cpu):
        w = S[:, 4:]
        E = 0.5 * np.einsum("ki,ij,kj->k", w, INERTIA, w)
        R = np.array([rotation_from_quaternion(q, normalize_tol=None) for q in S[:, :4]])  # attitude of q/|q|
        pi = np.einsum("kij,kj->ki", R, w @ INERTIA)  # spatial angular momentum R J ω
        off = np.abs(np.linalg.norm(S[:, :4], axis=1) - 1.0)
        return _stats(E, pi, off, t, cpu, steps)

    rows = [
        dict(name="Lie-group VI (Cayley, SO(3))", **vi_rows(), iterations=float(np.mean(vi.iteration_history))),
        dict(name="RK4 on quaternions", **rk_rows(S, c_rk)),
        dict(name="RK4 on quaternions, renormalized each step", **rk_rows(Sn, c_rkn)),
    ]
    return dict(steps=steps, dt=dt, rows=rows, load=os.getloadavg())


def _table(res: dict) -> str:
    lines = [
        f"{res['steps']} steps at Δt = {res['dt']} s ({res['steps'] * res['dt']:g} s simulated); machine load "
        f"{res['load'][0]:.1f}",
        "",
        "| integrator | max \\|ΔE\\|/E₀ | drift [1/s] | max ‖π − π₀‖ | off the group | CPU µs/step |",
        "|---|---|---|---|---|---|",
    ]
    for r in res["rows"]:
        lines.append(
            f"| {r['name']} | {r['max_energy']:.2e} | {r['drift']:+.1e} | {r['momentum']:.1e} | "
            f"{r['off_group']:.1e} | {r['us_per_step']:.1f} |"
        )
    return "\n".join(lines)


def _plot(res: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 2, figsize=(11, 3.8))
    for r, c in zip(res["rows"], ("C0", "C3", "C1")):
        ax[0].plot(r["t"], r["energy"], color=c, lw=0.8, label=r["name"])
    ax[0].set(xlabel="t [s]", ylabel="(E − E₀)/E₀", title=f"free rigid body, Δt = {res['dt']} s")
    ax[0].legend(fontsize=7)
    vi = res["rows"][0]
    ax[1].semilogy(vi["t"], np.abs(vi["energy"]) + 1e-17, color="C0", lw=0.6, label=vi["name"])
    ax[1].semilogy(
        res["rows"][1]["t"], np.abs(res["rows"][1]["energy"]) + 1e-17, color="C3", lw=0.6, label=res["rows"][1]["name"]
    )
    ax[1].set(xlabel="t [s]", ylabel="|ΔE|/E₀", title="bounded (VI) vs drifting (RK4)")
    ax[1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=100_000)
    ap.add_argument("--dt", type=float, default=0.5)
    ap.add_argument("--out", default=str(RESULTS))
    a = ap.parse_args()
    res = run_benchmark(a.steps, a.dt)
    table = _table(res)
    print(table)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "lie_energy.md").write_text(table + "\n")
    _plot(res, out / "lie_energy.png")


if __name__ == "__main__":
    main()
