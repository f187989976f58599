"""Scaling benchmark of the linear-time VI (Lee2016, §4.3-4.4, REFERENCE.md §4).

Serial chains of N bodies (vi_control.model.generate.planar_chain_urdf) at Δt = 1 ms, passive, released
from rest with the first joint at 0.5 rad. For each N: time per step and iterations per step of
DRNEA+RIQN and DRNEA+Newton with the exact Jacobian evaluated two ways — Lee2016, Alg. 4 as printed
(the paper's Newton baseline, C backend only) and our subtree-sum Jacobian — with the compiled C backend
(integrators.drnea_c; `simulate` runs a chunk of steps as one C call) and the numpy backend, all runs
interleaved in chunks of 250 steps; the midpoint VI with Newton (MidpointVI, a Python loop over steps);
the per-call cost of one DRNEA evaluation (vectorized, and Alg. 2 as a Python loop over bodies), of
one ABA pass (RIQN's M⁻¹e), of the exact Jacobian in the numpy backend and of both compiled Jacobians.
MidpointVI's symbolic build/compile runs in a child process capped by --midpoint-cap seconds; what happened is reported.

    .venv/bin/python benchmarks/bench_linear_time.py               # 10k steps per run (paper setting)
    .venv/bin/python benchmarks/bench_linear_time.py --steps 500   # quick run

Prints a markdown table and writes benchmarks/results/linear_time.{md,json,png}.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one core per process: the machine is shared
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from vi_control.integrators import drnea_c  # noqa: E402
from vi_control.integrators.linear_time import ConvergenceError, LinearTimeVI  # noqa: E402
from vi_control.mechanics.drnea import drnea_recursive  # noqa: E402
from vi_control.model import load_robot  # noqa: E402
from vi_control.model.generate import planar_chain_urdf  # noqa: E402

# The numpy baseline is the tests' oracle of the compiled step (the C is the package's one path).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "test" / "support"))
from linear_time_oracle import NumpyLinearTimeVI, linear_time  # noqa: E402

DT = 1e-3
RESULTS = Path(__file__).resolve().parent / "results"
# CPU time of this process, not wall time: other jobs share the 2 cores and would inflate wall time.
clock = time.process_time


def initial_configuration(n: int) -> np.ndarray:
    q0 = np.zeros(n)
    q0[0] = 0.5
    return q0


def per_call(fn, min_time: float = 0.3) -> float:
    """Mean seconds per call of fn over at least min_time."""
    fn()
    count, t0 = 0, clock()
    while True:
        fn()
        count += 1
        elapsed = clock() - t0
        if elapsed >= min_time:
            return elapsed / count


# run name → LinearTimeVI options; "newton-alg4" is the paper's Newton (Jacobian by Lee2016, Alg. 4)
RUNS = {
    "riqn": dict(method="riqn"),
    "newton": dict(method="newton", jacobian="subtree"),
    "newton-alg4": dict(method="newton", jacobian="alg4"),
}


def run_linear_time(robot, method: str, steps: int, initial_guess: str = "IG3", backend: str = "c") -> dict:
    """One uninterrupted run (used for the initial-guess comparison)."""
    return run_interleaved(robot, steps, [(backend, method)], initial_guess=initial_guess)[(backend, method)]


def run_interleaved(
    robot, steps: int, configs: list[tuple[str, str]], chunk: int = 250, initial_guess: str = "IG3"
) -> dict:
    """Every (backend, run) integrates its own trajectory; the runs alternate in chunks of ``chunk`` steps,
    so a change of machine load during the benchmark hits all of them alike (the 2 cores are shared)."""
    n = robot.nq
    vis = {k: linear_time(robot, DT, backend=k[0], initial_guess=initial_guess, **RUNS[k[1]]) for k in configs}
    x0 = next(iter(vis.values())).state_from_velocity(initial_configuration(n), np.zeros(n))
    x = dict.fromkeys(configs, x0)
    cpu, its = dict.fromkeys(configs, 0.0), {k: [] for k in configs}
    done = 0
    failed = {}
    while done < steps:
        m = min(chunk, steps - done)
        for k, vi in vis.items():
            if k in failed:
                continue
            U = np.zeros((m, vi.nu))
            t0 = clock()
            try:
                X, _ = vi.simulate(x[k], U)
            except ConvergenceError as err:  # reported in the table instead of ending the benchmark
                failed[k] = f"failed at step {done + err.step}: {err}"
                continue
            cpu[k] += clock() - t0
            x[k] = X[-1]
            its[k] += vi.iteration_history
        done += m
    out, ref = {}, next(iter(vis.values()))  # one integrator evaluates every energy (its pinocchio.Data is n³)
    for k, why in failed.items():
        print(f"{k}: {why}", flush=True)
    for k in (k for k in vis if k not in failed):
        it = np.array(its[k])
        out[k] = dict(
            step_s=cpu[k] / steps,
            iters_mean=float(it.mean()),
            iters_std=float(it.std()),
            iters_max=int(it.max()),
            q_final=x[k][:n].tolist(),
            energy_change=ref.energy(x[k]) - ref.energy(x0),
        )
    return out


def component_costs(robot) -> dict:
    n = robot.nq
    vi = NumpyLinearTimeVI(robot, DT)
    rng = np.random.default_rng(0)
    q_prev = initial_configuration(n) + 0.01 * rng.normal(size=n)
    q = q_prev + DT * rng.normal(size=n)
    q_next = q + DT * rng.normal(size=n)
    x = vi.state_from_configurations(q_prev, q)
    u = np.zeros(vi.nu)
    return dict(
        drnea_s=per_call(lambda: vi.residual(x, u, q_next)),
        drnea_alg2_loop_s=per_call(lambda: drnea_recursive(vi.tree, q_prev, q, q_next, DT), 0.2),
        aba_s=per_call(lambda: vi.mass_solve(q, q_next)),
        jacobian_s=per_call(lambda: vi.jacobian(x, q_next)),
        **(compiled_jacobian_costs(robot, q, q_next) if drnea_c.available() else {}),
    )


def compiled_jacobian_costs(robot, q: np.ndarray, q_next: np.ndarray) -> dict:
    """Per call of the compiled exact Jacobian (forward kinematics + DRNEA at q_{k+1} + the Jacobian)."""
    step = LinearTimeVI(robot, DT, method="newton", backend="c")._compiled
    return dict(
        c_jacobian_alg4_s=per_call(lambda: step.jacobian(q, q_next, alg4=True), 0.2),
        c_jacobian_subtree_s=per_call(lambda: step.jacobian(q, q_next, alg4=False), 0.2),
    )


def midpoint_worker(n: int, steps: int) -> None:
    """Child process: build MidpointVI for the N-chain, simulate, print one JSON line."""
    from vi_control.integrators.midpoint import ConvergenceError, MidpointVI
    from vi_control.mechanics import codegen

    robot = load_robot(planar_chain_urdf(n))

    def step(vi, x, k):
        # MidpointVI accepts a residual ≤ max(tol·(1+|p|), 1e-9); long chains from rest have a rounding
        # floor above that (docs/concepts/linear_time.md), so tol is relaxed ×10 when a step fails only by that.
        while True:
            try:
                return vi.step(x, np.zeros(vi.nu), step_index=k)
            except ConvergenceError as err:
                if err.residual > 1e-6 or vi.tol >= 1e-6:
                    raise
                vi.tol *= 10.0

    t0, w0 = clock(), time.perf_counter()
    vi = MidpointVI(robot, DT)
    x = vi.state_from_velocity(initial_configuration(n), np.zeros(n))
    build, build_wall = clock() - t0, time.perf_counter() - w0
    print(json.dumps(dict(build_s=build_wall, build_cpu_s=build)), flush=True)
    step(vi, x, None)  # any lazy compile happens before the timed loop
    its = []
    t0 = clock()
    for k in range(steps):
        r = vi.solve(x, None, k)
        x = r.x
        its.append(r.iterations)
    elapsed = clock() - t0
    print(
        json.dumps(
            dict(
                build_s=build_wall,
                build_cpu_s=build,
                step_s=elapsed / steps,
                iters_mean=float(np.mean(its)),
                steps=steps,
                q_final=x[:n].tolist(),
                compiled=codegen.build_stats,
                tol=vi.settings.tol,
            )
        )
    )


def run_midpoint(n: int, steps: int, cap: float, cache: str | None) -> dict:
    cmd = [sys.executable, __file__, "--midpoint-worker", str(n), "--steps", str(steps)]
    env = dict(os.environ, **({"VI_CONTROL_CACHE": cache} if cache else {}))
    t0 = time.perf_counter()
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=cap, env=env)
    except subprocess.TimeoutExpired:
        return dict(status=f"build+run exceeded the {cap:.0f} s cap", wall_s=time.perf_counter() - t0)
    lines = out.stdout.strip().splitlines()
    if out.returncode != 0:
        built = json.loads(lines[0]) if lines else {}
        return dict(status="failed: " + out.stderr.strip().splitlines()[-1][:200], **built)
    return dict(status="ok", **json.loads(lines[-1]))


def fmt_ms(s) -> str:
    return "—" if s is None else f"{1e3 * s:.3f}"


def _ratio(r: dict, backend: str, newton: str = "newton") -> float | None:
    run = r["runs"].get(f"{backend}-{newton}")
    return None if run is None else run["step_s"] / r["runs"][f"{backend}-riqn"]["step_s"]


def fmt_ratio(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}×"


def make_table(rows: list[dict], steps: int, mp_steps: int, backends: list[str]) -> str:
    lines = [
        f"Serial chains, Δt = 1 ms, {steps} steps per run (MidpointVI: {mp_steps} steps), runs interleaved in chunks "
        f"of 250 steps, initial guess IG3, tol 1e-12; CPU time per step of one process through "
        f"`LinearTimeVI.simulate` (C backend: one C call per chunk; load average at the end "
        f"{os.getloadavg()[0]:.1f}, {os.cpu_count()} cores); MidpointVI: a Python loop over `step`, build is wall "
        "time (symbolic build + gcc). Newton (Alg. 4): the Jacobian by Lee2016, Alg. 4 as printed, the paper's "
        "baseline; Newton (subtree): our cheaper evaluation of the same Jacobian.",
        "",
    ]
    head, rule = "| N |", "|---|"
    for b in backends:
        head += f" {b} RIQN ms/step | iters |"
        rule += "---|---|"
        if b == "c":
            head += " c Newton (Alg. 4) ms/step | iters | **Newton (Alg. 4)/RIQN** |"
            rule += "---|---|---|"
        head += f" {b} Newton (subtree) ms/step | iters | {b} Newton (subtree)/RIQN |"
        rule += "---|---|---|"
    head += (
        " MidpointVI ms/step | iters | MidpointVI build s | numpy DRNEA eval ms (Alg. 2 loop) | numpy ABA ms "
        "| C Jacobian ms, Alg. 4 / subtree |"
    )
    lines += [head, rule + "---|---|---|---|---|---|"]
    for r in rows:
        mp, c = r["midpoint"], r["costs"]
        cells = f"| {r['n']} |"
        for b in backends:
            ri = r["runs"][f"{b}-riqn"]
            cells += f" {fmt_ms(ri['step_s'])} | {ri['iters_mean']:.2f} ± {ri['iters_std']:.2f} |"
            names = ["newton-alg4", "newton"] if b == "c" else ["newton"]
            for name in names:
                ne = r["runs"].get(f"{b}-{name}")
                cells += (
                    " — | — | — |"
                    if ne is None
                    else f" {fmt_ms(ne['step_s'])} | {ne['iters_mean']:.2f} | {fmt_ratio(_ratio(r, b, name))} |"
                )
        if mp.get("status") == "ok":
            cells += f" {fmt_ms(mp['step_s'])} | {mp['iters_mean']:.2f} | {mp['build_s']:.1f} |"
        else:
            cells += f" — | — | {mp.get('status', '—')} |"
        cj = (
            f"{fmt_ms(c['c_jacobian_alg4_s'])} / {fmt_ms(c['c_jacobian_subtree_s'])}"
            if "c_jacobian_alg4_s" in c
            else "—"
        )
        cells += f" {fmt_ms(c['drnea_s'])} ({fmt_ms(c['drnea_alg2_loop_s'])}) | {fmt_ms(c['aba_s'])} | {cj} |"
        lines.append(cells)
    first, last = rows[0], rows[-1]
    lines.append("")
    paper = {10: " (paper 3.8×)", 100: " (paper 53×)"}  # Lee2016, REFERENCE §4
    for b in backends:
        g = last["runs"][f"{b}-riqn"]["step_s"] / first["runs"][f"{b}-riqn"]["step_s"]
        line = (
            f"{b}: DRNEA+RIQN time per step grows {g:.2f}× from N = {first['n']} to N = {last['n']}"
            f"{' (target ≤ 15×)' if (first['n'], last['n']) == (10, 100) else ''}"
        )
        for name, label in (("newton-alg4", "Newton (Alg. 4)"), ("newton", "Newton (subtree)")):
            if f"{b}-{name}" in first["runs"] or f"{b}-{name}" in last["runs"]:
                line += (
                    f"; {label}/RIQN = {fmt_ratio(_ratio(first, b, name))} at N = {first['n']}"
                    f"{paper.get(first['n'], '')} and {fmt_ratio(_ratio(last, b, name))} at N = {last['n']}"
                    f"{paper.get(last['n'], '')}"
                )
        lines.append(line + ".")
    if "c" in backends and "numpy" in backends:
        lines.append(
            "C backend speed-up over numpy (RIQN, Newton subtree): "
            + ", ".join(
                f"N = {r['n']}: {r['runs']['numpy-riqn']['step_s'] / r['runs']['c-riqn']['step_s']:.0f}×, "
                f"{r['runs']['numpy-newton']['step_s'] / r['runs']['c-newton']['step_s']:.0f}×"
                for r in rows
            )
            + "."
        )
    return "\n".join(lines)


def plot(rows: list[dict], path: Path, backends: list[str]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ns = [r["n"] for r in rows]
    fig, ax = plt.subplots(figsize=(6.5, 4.8))
    for b in backends:
        ax.loglog(ns, [1e3 * r["runs"][f"{b}-riqn"]["step_s"] for r in rows], "o-", label=f"DRNEA + RIQN ({b})")
        for name, mark, label in (
            ("newton-alg4", "D-", "Newton, Jacobian by Alg. 4"),
            ("newton", "s-", "Newton, subtree Jacobian"),
        ):
            pts = [(r["n"], 1e3 * r["runs"][f"{b}-{name}"]["step_s"]) for r in rows if f"{b}-{name}" in r["runs"]]
            if pts:
                ax.loglog(*zip(*pts), mark, label=f"DRNEA + {label} ({b})")
    mp = [(r["n"], 1e3 * r["midpoint"]["step_s"]) for r in rows if r["midpoint"].get("status") == "ok"]
    if mp:
        ax.loglog(*zip(*mp), "^-", label="MidpointVI (Newton, generated code)")
    ax.loglog(ns, [1e3 * r["costs"]["drnea_s"] for r in rows], "k--", lw=1, label="one DRNEA evaluation (numpy)")
    ref = 1e3 * rows[0]["runs"][f"{backends[0]}-riqn"]["step_s"]
    ax.loglog(ns, [ref * n / ns[0] for n in ns], ":", color="gray", label="O(N) reference")
    ax.set_xlabel("bodies N (DOF)")
    ax.set_ylabel("ms per step (Δt = 1 ms)")
    ax.set_title("Linear-time VI scaling (Lee2016, Fig. 3)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=10_000)
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 20, 50, 100])
    ap.add_argument("--midpoint-steps", type=int, default=None, help="default: --steps")
    ap.add_argument("--midpoint-cap", type=float, default=900.0, help="seconds for MidpointVI build + run")
    ap.add_argument("--no-midpoint", action="store_true", help="skip MidpointVI (e.g. for N beyond 100)")
    ap.add_argument(
        "--warm-cache",
        action="store_true",
        help="let MidpointVI reuse compiled code from ~/.cache (default: cold build in a fresh cache)",
    )
    ap.add_argument("--backends", nargs="+", default=["c", "numpy"], choices=["c", "numpy"])
    ap.add_argument("--alg4-max", type=int, default=200, help="largest N for Newton with the Alg. 4 Jacobian")
    ap.add_argument("--name", default="linear_time", help="basename of the files in benchmarks/results/")
    ap.add_argument("--midpoint-worker", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.midpoint_worker is not None:
        midpoint_worker(args.midpoint_worker, args.steps)
        return
    mp_steps = args.midpoint_steps or args.steps
    cache = None if args.warm_cache else tempfile.mkdtemp(prefix="vi_control_bench_cache_")
    rows = []
    for n in args.sizes:
        robot = load_robot(planar_chain_urdf(n))
        row = dict(n=n, costs=component_costs(robot))
        configs = [(b, m) for b in args.backends for m in ("riqn", "newton")]
        if "c" in args.backends and n <= args.alg4_max:  # Alg. 4 in Python would take hours: C only
            configs.insert(1, ("c", "newton-alg4"))
        runs = run_interleaved(robot, args.steps, configs)
        row["runs"] = {f"{b}-{m}": v for (b, m), v in runs.items()}
        main_run = row["runs"][f"{args.backends[0]}-riqn"]
        row["midpoint"] = (
            dict(status="not run") if args.no_midpoint else run_midpoint(n, mp_steps, args.midpoint_cap, cache)
        )
        row["ig_iterations"] = {
            ig: run_linear_time(robot, "riqn", min(args.steps, 500), ig, args.backends[0])["iters_mean"]
            for ig in ("IG1", "IG2", "IG3")
        }
        if row["midpoint"].get("status") == "ok" and mp_steps == args.steps:
            row["midpoint_vs_lt_final_q"] = float(
                np.abs(np.array(row["midpoint"]["q_final"]) - np.array(main_run["q_final"])).max()
            )
        rows.append(row)
        print(
            f"N={n}: "
            + ", ".join(f"{k} {fmt_ms(v['step_s'])} ms/step" for k, v in row["runs"].items())
            + f", midpoint {row['midpoint']}",
            flush=True,
        )
    if cache:
        shutil.rmtree(cache, ignore_errors=True)
    table = make_table(rows, args.steps, mp_steps, args.backends)
    ig = "\n".join(
        [
            "",
            "RIQN mean iterations per step by initial guess (first 500 steps):",
            "",
            "| N | IG1 | IG2 | IG3 |",
            "|---|---|---|---|",
        ]
        + [
            f"| {r['n']} | " + " | ".join(f"{r['ig_iterations'][k]:.2f}" for k in ("IG1", "IG2", "IG3")) + " |"
            for r in rows
        ]
    )
    print(table + "\n" + ig)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.name}.md").write_text(table + "\n" + ig + "\n")
    for r in rows:
        for v in [*r["runs"].values(), r["midpoint"]]:
            v.pop("q_final", None)
    (RESULTS / f"{args.name}.json").write_text(
        json.dumps(dict(steps=args.steps, midpoint_steps=mp_steps, rows=rows), indent=1)
    )
    plot(rows, RESULTS / f"{args.name}.png", args.backends)


if __name__ == "__main__":
    main()
