"""Nonholonomic integrators (Kobilarov2010): speed, energy, accuracy, and SymPy + SciPy side by side.

1. Step speed: one compiled GNI step (sleigh, differential drive) against one evaluation of the continuous
   Lagrange–d'Alembert right-hand side (Pinocchio crba + rnea + KKT solve, what one Runge–Kutta stage costs);
   the snakeboard's 128 steps (T = 10 s) by GNI, RDP (exp, cay) and RK2. Interleaved rounds, process CPU time.
2. Sleigh energy: relative energy error and eq. 5b over 10⁵ GNI steps.
3. Side by side on the sleigh: sympy.physics.mechanics (KanesMethod with the skate's nonholonomic constraint,
   body-frame speeds, lambdified mass matrix and forcing, as its users run it) + SciPy RK45 at several
   tolerances, against the GNI at several steps: CPU time, error at T = 2 s against DOP853 (rtol 1e-12) and the
   energy drift over 100 s.
4. Plots: the sleigh's skate-point "heart", energies, snakeboard paths at N = 128 and 512, the parking manoeuvre.

SymPy is pinned in benchmarks/requirements-bench-nonholonomic.txt and installed into the venv on first use.
Usage: .venv/bin/python benchmarks/bench_nonholonomic.py [--rounds 5] [--energy-steps 100000] [--no-sympy]
Writes benchmarks/results/nonholonomic.md and nonholonomic_*.png.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from scipy.integrate import solve_ivp

from vi_control.integrators import make_integrator
from vi_control.integrators.rdp import (
    SNAKEBOARD,
    SNAKEBOARD_START,
    ReducedDAlembertPontryagin,
    sleigh_system,
    snakeboard_configuration,
    snakeboard_inputs,
    snakeboard_start,
    snakeboard_system,
)
from vi_control.mechanics.lagrange_dalembert import NonholonomicODE, rk2_midpoint
from vi_control.mechanics.se2 import spatial_to_body
from vi_control.model.bundled import load_bundled

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "test" / "support"))
from rdp_oracle import NumpyRDP  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
SLEIGH = dict(I=0.2, m=1.0, a=0.5)  # urdf/sleigh.urdf
SLEIGH_Q0, SLEIGH_QD0 = np.zeros(3), np.array([-1.0, 1.0, 2.0])  # backing up at 1 m/s, turning at 2 rad/s
SLEIGH_HEART = np.array([-3.0, 1.0, 2.0])  # backing up faster: the skate point's two cusps draw the "heart"


def load_average() -> str:
    return "load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def cpu(fn, repeat: int) -> float:
    t = time.process_time()
    for _ in range(repeat):
        fn()
    return (time.process_time() - t) / repeat


def interleaved(fns: dict, rounds: int, repeat: dict) -> dict:
    """Median and min CPU seconds per call of each function, rounds interleaved."""
    times = {k: [] for k in fns}
    for _ in range(rounds):
        for k, fn in fns.items():
            times[k].append(cpu(fn, repeat[k]))
    return {k: (float(np.median(v)), float(np.min(v))) for k, v in times.items()}


# ---- 1. speed -------------------------------------------------------------------------------------
def step_speed(rounds: int, steps: int = 2000) -> list[dict]:
    """CPU per GNI step through the Python API (``step``) and of the compiled driver call alone (the whole
    Newton solve in C, what a C++ caller would pay), against one continuous right-hand side evaluation."""
    return [_step_speed_row(name, rounds, steps) for name in ("sleigh", "diffdrive")]


def _step_speed_row(name: str, rounds: int, steps: int) -> dict:
    robot = load_bundled(name)
    gni = make_integrator("gni", robot, 0.01)
    ode = NonholonomicODE(robot)
    rng = np.random.default_rng(0)
    q0 = rng.uniform(-1, 1, robot.nq)
    x0 = gni.state_from_velocity(q0, gni.projector(q0) @ rng.normal(size=robot.nq))  # coasting, u = 0
    s0 = np.concatenate([q0, gni.velocity(x0)])
    u = np.zeros(gni.nu)
    drv, st = gni._newton, gni.settings  # the compiled whole-step driver (mechanics.discrete.NewtonStepC)

    def run_gni():
        x = x0
        for _ in range(steps):
            x = gni.step(x, u)

    def run_driver():
        drv.z[: gni.nx], drv.z[gni.nx :] = x0, u
        for _ in range(steps):
            drv(st.max_iterations, st.tol, st.rcond_min, True, True, 0.25)
            drv.z[: gni.nx] = drv.xn

    res = interleaved(
        {"gni": run_gni, "driver": run_driver, "rhs": lambda: ode.rhs(0.0, s0)},
        rounds,
        {"gni": 1, "driver": 1, "rhs": 2000},
    )
    g, d, r = res["gni"][0] / steps, res["driver"][0] / steps, res["rhs"][0]
    return dict(
        what=f"GNI step, {name}: Python step / compiled driver call",
        us=g * 1e6,
        us_min=res["gni"][1] / steps * 1e6,
        driver_us=d * 1e6,
        driver_min=res["driver"][1] / steps * 1e6,
        baseline="Lagrange–d'Alembert rhs (Pinocchio + KKT), one evaluation",
        base_us=r * 1e6,
        ratio=g / r,
    )


def snakeboard_runs(N: int, ref=None) -> dict:
    robot = load_bundled("snakeboard")
    system = snakeboard_system(**SNAKEBOARD)
    start = snakeboard_start(system, **SNAKEBOARD_START)
    q0, qd0 = snakeboard_configuration(*start)
    h, T = 10.0 / N, 10.0
    U = snakeboard_inputs(np.arange(N) * h)
    gni = make_integrator("gni", robot, h)
    ode = NonholonomicODE(robot, torque=lambda t: snakeboard_inputs(t)[::-1])
    rdp = {ret: ReducedDAlembertPontryagin(system, h, ret) for ret in ("exp", "cayley")}
    loop = NumpyRDP(system, h, "exp")  # baseline: the tests' numpy oracle of the driver, compiled functions
    out = {
        "gni": lambda: gni.simulate(gni.state_from_velocity(q0, qd0, U[0, ::-1]), U[:, ::-1])[0][:, :2],
        "rdp exp": lambda: rdp["exp"].simulate(*start, forces=U).g[:, 1:],
        "rdp cayley": lambda: rdp["cayley"].simulate(*start, forces=U).g[:, 1:],
        "rdp exp, numpy Newton loop": lambda: loop.simulate(*start, forces=U).g[:, 1:],
        "rk2": lambda: rk2_midpoint(ode.rhs, np.concatenate([q0, qd0]), h, N)[:, :2],
    }
    if ref is None:
        ref = solve_ivp(
            ode.rhs, (0, T), np.concatenate([q0, qd0]), method="DOP853", rtol=1e-12, atol=1e-12, dense_output=True
        )
    return dict(fns=out, ref=ref, N=N)


def snakeboard_speed(rounds: int) -> tuple[list[dict], dict]:
    runs = snakeboard_runs(128)
    paths = {k: fn() for k, fn in runs["fns"].items()}
    res = interleaved(runs["fns"], rounds, {k: 1 for k in runs["fns"]})
    ref_end = runs["ref"].y[:2, -1]
    rows = [
        dict(
            what=f"snakeboard, 128 steps (T = 10 s), {k}",
            ms=res[k][0] * 1e3,
            ms_min=res[k][1] * 1e3,
            error=float(np.linalg.norm(paths[k][-1] - ref_end)),
        )
        for k in runs["fns"]
    ]
    fine = snakeboard_runs(512, runs["ref"])
    paths_fine = {k: fine["fns"][k]() for k in ("gni", "rdp exp", "rk2")}
    for k, p in paths_fine.items():
        rows.append(
            dict(
                what=f"snakeboard, 512 steps, {k}",
                ms=np.nan,
                ms_min=np.nan,
                error=float(np.linalg.norm(p[-1] - ref_end)),
            )
        )
    return rows, dict(paths=paths, paths_fine=paths_fine, ref=runs["ref"])


# ---- 2. sleigh energy -------------------------------------------------------------------------------
def sleigh_energy(steps: int, h: float = 0.01) -> dict:
    gni = make_integrator("gni", load_bundled("sleigh"), h)
    t = time.process_time()
    X, _ = gni.simulate(gni.state_from_velocity(SLEIGH_Q0, SLEIGH_QD0), steps=steps)
    cpu_s = time.process_time() - t
    E = np.array([gni.energy(x) for x in X])
    res = max(np.abs(gni.nonholonomic_residual(X[k], X[k + 1])).max() for k in range(steps))
    return dict(
        steps=steps,
        h=h,
        cpu=cpu_s,
        energy_rel=float(np.abs(E / E[0] - 1).max()),
        constraint=float(res),
        X=X[:: max(1, steps // 2000)],
    )


# ---- 3. SymPy + RK45 side by side ------------------------------------------------------------------------
def ensure_sympy():
    try:
        import sympy  # noqa: F401
    except ImportError:
        req = ROOT / "benchmarks" / "requirements-bench-nonholonomic.txt"
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "-r", str(req)], check=True)
    import sympy

    return sympy


def sympy_sleigh_rhs():
    """KanesMethod model of the sleigh (body speeds u1 forward, u2 sideways dependent, ω): rhs(t, s) on
    s = (x, y, θ, u1, ω, u2) by the lambdified full mass matrix and forcing, and its energy."""
    import sympy as sm
    import sympy.physics.mechanics as me

    x, y, th = me.dynamicsymbols("x y theta")
    u1, u2, w = me.dynamicsymbols("u1 u2 omega")
    m, Iz, a = sm.symbols("m I a")
    N = me.ReferenceFrame("N")
    B = N.orientnew("B", "Axis", [th, N.z])
    B.set_ang_vel(N, w * N.z)
    O = me.Point("O")
    O.set_vel(N, 0)
    G = O.locatenew("G", x * N.x + y * N.y)
    G.set_vel(N, u1 * B.x + u2 * B.y)
    S = G.locatenew("S", -a * B.x)
    S.v2pt_theory(G, N, B)
    body = me.RigidBody("body", G, B, m, (me.inertia(B, 0, 0, Iz), G))
    kd = [x.diff() - (u1 * sm.cos(th) - u2 * sm.sin(th)), y.diff() - (u1 * sm.sin(th) + u2 * sm.cos(th)), th.diff() - w]
    km = me.KanesMethod(
        N, q_ind=[x, y, th], u_ind=[u1, w], u_dependent=[u2], kd_eqs=kd, velocity_constraints=[S.vel(N).dot(B.y)]
    )
    km.kanes_equations([body], [])
    pars = {m: SLEIGH["m"], Iz: SLEIGH["I"], a: SLEIGH["a"]}
    states = list(km.q) + list(km.u)
    fM = sm.lambdify(states, km.mass_matrix_full.subs(pars), "numpy")
    fF = sm.lambdify(states, km.forcing_full.subs(pars), "numpy")
    fE = sm.lambdify(states, (body.kinetic_energy(N)).subs(pars), "numpy")

    def rhs(t, s):
        return np.linalg.solve(fM(*s), np.asarray(fF(*s), float).ravel())

    return rhs, lambda s: float(fE(*s))


def side_by_side(T: float = 2.0, T_energy: float = 100.0) -> list[dict]:
    ensure_sympy()
    robot = load_bundled("sleigh")
    ode = NonholonomicODE(robot)
    s0 = np.concatenate([SLEIGH_Q0, SLEIGH_QD0])
    ref = solve_ivp(ode.rhs, (0, T), s0, method="DOP853", rtol=1e-12, atol=1e-12).y[:3, -1]
    t = time.process_time()
    rhs, energy = sympy_sleigh_rhs()
    build = time.process_time() - t
    xi0 = spatial_to_body(np.array([SLEIGH_Q0[2], *SLEIGH_Q0[:2]]), np.array([SLEIGH_QD0[2], *SLEIGH_QD0[:2]]))
    z0 = np.array([*SLEIGH_Q0, xi0[1], xi0[0], xi0[2]])  # (x, y, θ, u1, ω, u2)
    rows = []
    for rtol in (1e-3, 1e-5, 1e-7, 1e-9):
        t = time.process_time()
        sol = solve_ivp(rhs, (0, T), z0, method="RK45", rtol=rtol, atol=rtol * 1e-2)
        cpu_s = time.process_time() - t
        long = solve_ivp(rhs, (0, T_energy), z0, method="RK45", rtol=rtol, atol=rtol * 1e-2)
        E = np.array([energy(s) for s in long.y.T])
        rows.append(
            dict(
                method=f"SymPy KanesMethod + RK45, rtol {rtol:g}",
                cpu=cpu_s,
                error=float(np.abs(sol.y[:3, -1] - ref).max()),
                drift=float(np.abs(E / E[0] - 1).max()),
                steps=sol.t.size - 1,
            )
        )
    for h in (0.04, 0.02, 0.01, 0.005):
        gni = make_integrator("gni", robot, h)
        x0 = gni.state_from_velocity(SLEIGH_Q0, SLEIGH_QD0)
        t = time.process_time()
        X, _ = gni.simulate(x0, steps=int(round(T / h)))
        cpu_s = time.process_time() - t
        XL, _ = gni.simulate(x0, steps=int(round(T_energy / h)))
        E = np.array([gni.energy(x) for x in XL])
        rows.append(
            dict(
                method=f"GNI, h = {h:g}",
                cpu=cpu_s,
                error=float(np.abs(X[-1, :3] - ref).max()),
                drift=float(np.abs(E / E[0] - 1).max()),
                steps=int(round(T / h)),
            )
        )
    rows.append(dict(method="(SymPy model build + lambdify, once)", cpu=build, error=np.nan, drift=np.nan, steps=0))
    return rows


# ---- 4. plots -------------------------------------------------------------------------------------
def plots(out: Path, energy: dict, snake: dict) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = []
    a, h = SLEIGH["a"], energy["h"]
    robot = load_bundled("sleigh")
    rdp = ReducedDAlembertPontryagin(sleigh_system(**SLEIGH), 0.05, "exp")
    fig, ax = plt.subplots(1, 2, figsize=(11, 4.5))
    for sign, style in ((1, "-"), (-1, "--")):  # the mirrored start closes the heart
        qd = SLEIGH_HEART * np.array([1, sign, sign])
        gni = make_integrator("gni", robot, 0.05)
        X, _ = gni.simulate(gni.state_from_velocity(SLEIGH_Q0, qd), steps=50)
        ax[0].plot(
            X[:, 0] - a * np.cos(X[:, 2]),
            X[:, 1] - a * np.sin(X[:, 2]),
            "b" + style,
            label="GNI, h = 0.05" if sign > 0 else None,
        )
        tr = rdp.simulate(
            np.zeros(3),
            np.zeros(0),
            np.zeros(0),
            spatial_to_body(np.zeros(3), np.array([qd[2], qd[0], qd[1]])),
            steps=50,
        )
        ax[0].plot(
            tr.g[:, 1] - a * np.cos(tr.g[:, 0]),
            tr.g[:, 2] - a * np.sin(tr.g[:, 0]),
            "r" + style,
            lw=0.8,
            label="RDP (exp), h = 0.05" if sign > 0 else None,
        )
        s = solve_ivp(
            NonholonomicODE(robot).rhs,
            (0, 2.5),
            np.concatenate([SLEIGH_Q0, qd]),
            method="DOP853",
            rtol=1e-12,
            atol=1e-12,
            max_step=0.02,
        ).y
        ax[0].plot(s[0] - a * np.cos(s[2]), s[1] - a * np.sin(s[2]), "k:", label="DOP853" if sign > 0 else None)
    ax[0].set_title("sleigh skate point, ±ω₀, 2.5 s (Kobilarov2010, Fig. 2)")
    ax[0].set_aspect("equal")
    ax[0].legend()
    gni = make_integrator("gni", robot, h)
    E = np.array([gni.energy(x) for x in energy["X"]])
    ax[1].semilogy(np.linspace(0, energy["steps"] * h, len(E)), np.abs(E / E[0] - 1) + 1e-17, "b.", ms=1)
    ax[1].set_title(f"GNI relative energy error, {energy['steps']} steps, h = {h}")
    ax[1].set_xlabel("t [s]")
    fig.tight_layout()
    files.append(out / "nonholonomic_sleigh.png")
    fig.savefig(files[-1], dpi=100)
    plt.close(fig)

    fig, ax = plt.subplots(1, 2, figsize=(11, 4.5))
    ref = snake["ref"].sol(np.linspace(0, 10, 1001))
    for i, (paths, N) in enumerate(((snake["paths"], 128), (snake["paths_fine"], 512))):
        ax[i].plot(ref[0], ref[1], "k-", lw=2, label="DOP853 (rtol 1e-12)")
        for k, p in paths.items():
            ax[i].plot(p[:, 0], p[:, 1], ".-", ms=2, lw=0.8, label=k)
        ax[i].set_title(f"snakeboard, N = {N}, T = 10 s (Kobilarov2010, Fig. 4)")
        ax[i].set_aspect("equal")
        ax[i].legend(fontsize=8)
    fig.tight_layout()
    files.append(out / "nonholonomic_snakeboard.png")
    fig.savefig(files[-1], dpi=100)
    plt.close(fig)
    return files


def markdown(speed: list, snake_rows: list, energy: dict, sbs: list) -> str:
    lines = [
        f"CPU times, {load_average()} (2 cores shared)",
        "",
        "| what | measured (median / min) | baseline (same process) | ratio |",
        "|---|---|---|---|",
    ]
    for r in speed:
        lines.append(
            f"| {r['what']} | {r['us']:.2f} / {r['us_min']:.2f} µs; driver {r['driver_us']:.2f} / "
            f"{r['driver_min']:.2f} µs | {r['baseline']}: {r['base_us']:.2f} µs | {r['ratio']:.2f} |"
        )
    lines += ["", "| snakeboard | CPU (median / min) | final position error vs DOP853 |", "|---|---|---|"]
    for r in snake_rows:
        t = "—" if np.isnan(r["ms"]) else f"{r['ms']:.2f} / {r['ms_min']:.2f} ms"
        lines.append(f"| {r['what']} | {t} | {r['error']:.3e} m |")
    lines += [
        "",
        f"Sleigh GNI, {energy['steps']} steps of {energy['h']} s ({energy['cpu']:.2f} s CPU): relative "
        f"energy error {energy['energy_rel']:.2e}, discrete constraint (eq. 5b) {energy['constraint']:.2e}.",
        "",
    ]
    if sbs:
        lines += [
            "| sleigh, T = 2 s | CPU | steps | max error vs DOP853 | energy drift over 100 s |",
            "|---|---|---|---|---|",
        ]
        for r in sbs:
            lines.append(
                f"| {r['method']} | {r['cpu'] * 1e3:.1f} ms | {r['steps']} | {r['error']:.2e} | {r['drift']:.2e} |"
            )
    return "\n".join(lines) + "\n"


def run(rounds: int, energy_steps: int, sympy: bool, out: Path, with_plots: bool = True) -> dict:
    speed = step_speed(rounds)
    snake_rows, snake = snakeboard_speed(rounds)
    energy = sleigh_energy(energy_steps)
    sbs = side_by_side() if sympy else []
    table = markdown(speed, snake_rows, energy, sbs)
    files = plots(out, energy, snake) if with_plots else []
    return dict(speed=speed, snake=snake_rows, energy=energy, side_by_side=sbs, table=table, files=files)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--energy-steps", type=int, default=100_000)
    ap.add_argument("--no-sympy", action="store_true")
    args = ap.parse_args(argv)
    RESULTS.mkdir(parents=True, exist_ok=True)
    result = run(args.rounds, args.energy_steps, not args.no_sympy, RESULTS)
    (RESULTS / "nonholonomic.md").write_text(result["table"])
    print(result["table"])


if __name__ == "__main__":
    main()
